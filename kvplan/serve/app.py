"""`kvplan serve`: the API's calls as JSON endpoints, their OpenAPI document, and the calculator page, on Starlette
(an ASGI toolkit: routing, requests and responses, nothing else) served by uvicorn.

    POST /api/{estimate,explain,plan,check,calibrate}   a JSON object of the call's arguments (GET /api/openapi.json)
    GET  /api/models, /api/gpus                          the catalogs
    GET  /                                               the calculator (page/)

Every answer is JSON: a result is the object the command's --json prints, with the command's exit code in the
X-Kvplan-Exit-Code header; an error is {"error": {"where", "what", "hint"}, "exit_code"} (docs/json.md) with an HTTP
status that says the same (400 bad input, 413 too large, 408 too slow, 422 cannot judge, 404, 405, 503 busy). A body
is read up to `max_body` bytes and for at most `body_seconds`; a call runs in a worker thread (at most `workers` at
once) for at most `call_seconds`, so one slow or large request cannot starve the others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kvplan.core.errors import EXIT_INPUT, KvplanError
from kvplan.serve import calls
from kvplan import __version__

PAGE = Path(__file__).with_name("page")
_PAGE_FILES = {"": ("index.html", "text/html; charset=utf-8"), "page.js": ("page.js", "text/javascript; charset=utf-8"),
               "page.css": ("page.css", "text/css; charset=utf-8")}
# an exit code -> the HTTP status of an error that carries it
_STATUS = {1: 422, 2: 400, 3: 422}


@dataclass(frozen=True)
class Limits:
    max_body: int = 4 * 1024 * 1024  # bytes: a long start-up log or a folder's deployment files fit
    body_seconds: float = 10.0
    call_seconds: float = 60.0
    workers: int = 4


class _Refused(Exception):
    def __init__(self, status: int, error: KvplanError):
        super().__init__(error.what)
        self.status, self.error = status, error


def _error_response(status: int, error: KvplanError) -> JSONResponse:
    return JSONResponse(error.to_dict(), status_code=status, headers={"X-Kvplan-Exit-Code": str(error.exit_code)})


def _bad(what: str, *, where: str = "body", hint: str | None = None, status: int = 400) -> _Refused:
    return _Refused(status, KvplanError(what, where=where, hint=hint))


async def _read_json(request: Request, limits: Limits):
    """The body as JSON, read up to max_body bytes and within body_seconds; an empty body is {}."""
    length = request.headers.get("content-length")
    if length is not None:
        if not length.isascii() or not length.isdigit():
            raise _bad(f"Content-Length {length[:40]!r} is not a number")
        if int(length) > limits.max_body:
            raise _bad(f"is {int(length):,} bytes, more than {limits.max_body:,}", status=413,
                       hint="send less (a model's config.json, a few deployment files or logs)")
    chunks, size = [], 0
    try:
        with anyio.fail_after(limits.body_seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limits.max_body:
                    raise _bad(f"is more than {limits.max_body:,} bytes", status=413)
                chunks.append(chunk)
    except TimeoutError:
        raise _bad(f"was not received within {limits.body_seconds:g} s", status=408) from None
    raw = b"".join(chunks)
    if not raw.strip():
        return {}
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise _bad(f"is not JSON: {str(err)[:200]}", hint='send a JSON object, e.g. {"model": "llama-3.1-8b"}') from None
    except RecursionError:
        raise _bad("is nested too deeply to read") from None


def build(limits: Limits = Limits()) -> Starlette:
    limiter = anyio.CapacityLimiter(limits.workers)

    async def call(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in calls.CALLS:
            raise HTTPException(404)
        try:
            if request.method == "GET" and request.query_params:
                raise _bad("takes no query parameters", where="query",
                           hint=f"POST the arguments as a JSON object to /api/{name}")
            arguments = await _read_json(request, limits) if request.method == "POST" else {}
            try:
                with anyio.fail_after(limits.call_seconds):
                    data, code = await anyio.to_thread.run_sync(calls.run, name, arguments, limiter=limiter,
                                                                abandon_on_cancel=True)
            except TimeoutError:
                raise _bad(f"took more than {limits.call_seconds:g} s", where=name, status=503,
                           hint="ask for less (a shorter search), or try again when the server is less busy") from None
        except _Refused as refused:
            return _error_response(refused.status, refused.error)
        except KvplanError as err:
            return _error_response(_STATUS.get(err.exit_code, 400), err)
        except RecursionError:
            return _error_response(400, KvplanError("input is nested too deeply to read", where="body"))
        return JSONResponse(data, headers={"X-Kvplan-Exit-Code": str(code)})

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document())

    async def page(request: Request) -> Response:
        name, media = _PAGE_FILES.get(request.path_params.get("file", ""), (None, None))
        if name is None:
            raise HTTPException(404)
        return Response((PAGE / name).read_bytes(), media_type=media,
                        headers={"Content-Security-Policy": "default-src 'self'; img-src 'self' data:",
                                 "X-Content-Type-Options": "nosniff"})

    async def http_error(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        what = {404: "no such endpoint", 405: "method not allowed"}.get(status, "request refused")
        return _error_response(status, KvplanError(what, where=f"{request.method} {request.url.path}"[:200],
                                                   hint="see GET /api/openapi.json"))

    async def crash(request: Request, exc: Exception) -> Response:  # a bug: said as JSON, the server keeps serving
        error = KvplanError(f"internal error: {type(exc).__name__}", where=request.url.path[:200],
                            hint="please report it with the request")
        error.exit_code = EXIT_INPUT
        return _error_response(500, error)

    routes = [
        Route("/api/openapi.json", openapi, methods=["GET"]),
        Route("/api/{name}", call, methods=["GET", "POST"]),
        Route("/", page, methods=["GET"]),
        Route("/{file}", page, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: crash})


def openapi_document() -> dict:
    """OpenAPI 3.1 (whose schemas are JSON Schema) of every call: its arguments' schema, read from the API function."""
    error = {"description": "an error: where, what, hint, and the command's exit code",
             "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    paths = {}
    for name, c in calls.CALLS.items():
        operation = {"summary": c.summary, "operationId": name,
                     "requestBody": {"required": False, "content": {"application/json": {"schema": c.arguments_schema()}}},
                     "responses": {"200": {"description": f"the object `kvplan {name} --json` prints; the command's "
                                                          "exit code in the X-Kvplan-Exit-Code header",
                                           "content": {"application/json": {"schema": {"type": "object"}}}},
                                   "400": error, "408": error, "413": error, "422": error, "503": error}}
        paths[f"/api/{name}"] = {"post": operation}
        if not c.arguments_schema()["properties"]:
            paths[f"/api/{name}"]["get"] = {k: v for k, v in operation.items() if k != "requestBody"} | {
                "operationId": f"{name}_get"}
    return {"openapi": "3.1.0",
            "info": {"title": "kvplan", "version": __version__,
                     "description": "KV-cache memory planning for LLM serving: the kvplan commands as JSON calls."},
            "paths": paths,
            "components": {"schemas": {"Error": {"type": "object", "required": ["error", "exit_code"], "properties": {
                "error": {"type": "object", "properties": {"where": {"type": ["string", "null"]},
                                                           "what": {"type": "string"},
                                                           "hint": {"type": ["string", "null"]}}},
                "exit_code": {"type": "integer"}}}}}}
