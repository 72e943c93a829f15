"""`kvplan serve`: the HTTP API and the calculator page (kvplan/serve/, docs/serve.md). Needs kvplan[serve]."""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli.options import whole_number

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def register(app) -> None:
    from kvplan.cli.edge import guarded

    app.command(name="serve")(guarded(serve))


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on. The default answers this machine only; "
                                                     "another address (0.0.0.0) lets anyone who reaches the port use it: "
                                                     "there is no authentication.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.", parser=whole_number)] = 8000,
    workers: Annotated[int, typer.Option("--workers", help="Calls computed at once (each in a thread); the others "
                                                           "wait their turn.", parser=whole_number)] = 4,
):
    """Serve the calculator page and the JSON API (POST /api/estimate, /api/check, /api/plan, /api/explain,
    /api/calibrate; GET /api/models, /api/gpus, /api/openapi.json) until Ctrl-C."""
    import sys

    from kvplan.core.errors import InputError

    if not 0 < port < 65536:
        raise InputError(f"must be from 1 to 65535, got {port}", where="--port")
    if not 1 <= workers <= 64:
        raise InputError(f"must be from 1 to 64, got {workers}", where="--workers")
    try:
        import uvicorn

        from kvplan.serve import app
    except ImportError as err:
        raise InputError(f"needs the serve extra ({err.name} is not installed)", where="kvplan serve",
                         hint="pip install 'kvplan[serve]'") from None
    if host not in LOOPBACK:
        print(f"warning: listening on {host}: anyone who can reach port {port} can use this server (no authentication); "
              "use the default --host 127.0.0.1 unless that is what you want", file=sys.stderr)
    shown = f"[{host}]" if ":" in host else host
    print(f"kvplan serve: http://{shown}:{port}/ (the calculator), http://{shown}:{port}/api/openapi.json (the API); "
          "Ctrl-C stops it", file=sys.stderr)
    uvicorn.run(app.build(app.Limits(workers=workers)), host=host, port=port, log_level="warning",
                timeout_keep_alive=5, limit_concurrency=256)
