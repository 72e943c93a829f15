"""The API's functions as calls on JSON arguments, for the HTTP server (app.py) and the MCP server (mcp.py): one
table says which functions are offered, with which arguments, and what the answer's exit code is.

A server reads no file of its own on a caller's behalf: arguments that name server files (models_dir, calibration,
save, prices, allow_path, a file as workload, a model path) are not offered. What would be a file comes in the
request instead: a model's config.json as `config`, deployment files as `files` {name: text}, logs as `logs`
{name: text}; each is written to a temporary folder that lives as long as the call.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvplan.core.errors import InputError, did_you_mean
from kvplan.serve import schema
import kvplan
from kvplan.check.entry import check

# what a caller cannot set: files and folders of the server, and whether the server may ask the Hugging Face Hub
# (the server's own environment decides: HF_HUB_OFFLINE)
SERVER_FILES = frozenset({"models_dir", "calibration", "save", "prices", "allow_path", "workload", "offline"})

_TEXT_FILES = {"type": "object", "additionalProperties": {"type": "string"}}
_CONFIG = {"type": "object", "description": "A model's config.json (as on the Hugging Face Hub), instead of `model`."}
MAX_FILES = 64


@dataclass(frozen=True)
class Call:
    name: str
    summary: str
    load: Callable[[], Callable]  # the API function (imported on first use)
    exit_code: Callable[[Any], int]  # the command's exit code for a result
    leave_out: frozenset[str] = SERVER_FILES
    extra: dict = field(default_factory=dict)  # properties only the wire has (config, files, logs)
    model_optional: bool = False  # `model` may be replaced by `config`

    def function(self) -> Callable:
        return self.load()

    def arguments_schema(self) -> dict:
        out = schema.arguments_schema(self.function(), leave_out=self.leave_out, extra=self.extra)
        if self.model_optional:
            out["required"] = [n for n in out.get("required", []) if n != "model"]
            out["properties"]["model"]["description"] = ("A bundled model name or alias (GET /api/models) or a Hugging "
                                                         "Face id; or give `config`.")
        return out


def _api(name: str):
    def load():
        return getattr(kvplan, name)

    return load


def _check_function():
    return check


CALLS = {c.name: c for c in (
    Call("estimate", "KV cache, weights and fit of a model at a length and batch, in an engine's terms (kvplan estimate)",
         _api("estimate"), lambda r: 1 if r.fits is False else 0, extra={"config": _CONFIG}, model_optional=True),
    Call("explain", "The KV cache derived layer group by layer group, with what-ifs (kvplan explain)",
         _api("explain"), lambda r: 0, extra={"config": _CONFIG}, model_optional=True),
    Call("plan", "The cheapest deployments that hold a load, ranked (kvplan plan)",
         _api("plan"), lambda r: 0 if r.plans else 1, extra={"config": _CONFIG}, model_optional=True),
    Call("check", "Judge deployment files and vLLM command lines (kvplan check)", _check_function,
         lambda r: r.exit_code, leave_out=SERVER_FILES | {"configs"},
         extra={"files": {**_TEXT_FILES, "description": "Deployment files by name: {\"deploy.yaml\": \"...\"}."}}),
    Call("calibrate", "Compare kvplan with engine start-up logs (kvplan calibrate)", _api("calibrate"),
         lambda r: r.summary.exit_code, leave_out=SERVER_FILES | {"logs"},
         extra={"logs": {**_TEXT_FILES, "description": "Start-up logs by name: {\"server.log\": \"...\"}."}}),
    Call("models", "The bundled model specs (kvplan models)", _api("models"), lambda r: 0),
    Call("gpus", "The GPU catalog (kvplan gpus)", _api("gpus"), lambda r: 0),
)}


def run(name: str, arguments: Any) -> tuple[dict, int]:
    """The result's JSON object and the command's exit code; bad arguments raise InputError naming the key."""
    call = CALLS[name]
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InputError(f"the arguments must be a JSON object, got {type(arguments).__name__}", where="body",
                         hint='e.g. {"model": "llama-3.1-8b", "seq": "32K", "gpu": "h100"}')
    properties = call.arguments_schema()["properties"]
    for key, value in arguments.items():
        if key not in properties:
            raise InputError("is not an argument of " + name, where=str(key)[:100],
                             hint=did_you_mean(str(key), properties) or "see GET /api/openapi.json")
        if not schema.matches(value, properties[key]):
            raise InputError(f"has the wrong type ({type(value).__name__})", where=key,
                             hint=f"the schema allows {properties[key]['type']}")
    with tempfile.TemporaryDirectory(prefix="kvplan-serve-") as folder:
        given = _materialise(call, dict(arguments), Path(folder))
        result = call.function()(**given)
    return result.to_dict(), call.exit_code(result)


def _materialise(call: Call, arguments: dict, folder: Path) -> dict:
    """Turn the wire-only arguments into the files the API reads, inside `folder`."""
    config = arguments.pop("config", None)
    if "model" in arguments:
        arguments["model"] = _model_name(arguments["model"])
    if config is not None:
        if "model" in arguments:
            raise InputError("give `model` or `config`, not both", where="config")
        name = _safe_name(str(config.get("_name_or_path") or "pasted-model").rstrip("/").rpartition("/")[2])
        (folder / name).mkdir()
        (folder / name / "config.json").write_text(json.dumps(config), encoding="utf-8")
        arguments["model"] = str(folder / name)
    elif call.model_optional and "model" not in arguments:
        raise InputError("no model given", where="model", hint="a bundled model name, a Hugging Face id, or `config`")
    if "files" in arguments:
        arguments["configs"] = _write_all(arguments.pop("files"), folder / "files", where="files")
    if "logs" in arguments:
        arguments["logs"] = _write_all(arguments["logs"], folder / "logs", where="logs")
    elif call.name == "calibrate":
        raise InputError("no log given", where="logs", hint='{"logs": {"server.log": "<the start-up log>"}}')
    return arguments


def _model_name(value: str) -> str:
    """A model named over the wire is a bundled name or a Hub id, never a file of the server."""
    if value.startswith(("/", ".", "~")) or "\\" in value or value.endswith((".json", ".yaml", ".yml")) \
            or Path(value).exists():
        raise InputError("names a file, and the server reads none of its own", where="model",
                         hint="a bundled model name or a Hugging Face id (org/name), or send the config.json as `config`")
    return value


def _safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-")[:100]
    return cleaned or "file"


def _write_all(files: dict, folder: Path, *, where: str) -> list[str]:
    if not files:
        raise InputError("holds no file", where=where)
    if len(files) > MAX_FILES:
        raise InputError(f"holds {len(files)} files, more than {MAX_FILES}", where=where)
    folder.mkdir()
    paths = []
    for given, text in files.items():
        name = _safe_name(Path(given).name)
        path = folder / name
        if path.exists():
            raise InputError("names a file twice", where=f"{where}: {given}")
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    return paths
