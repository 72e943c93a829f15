"""The command line (typer app, options, views, one module per command). The entry point is `main`; the process's
is `process.run` (python -m kvplan, the `kvplan` script). `app` and `main` load on first use (PEP 562), so the
process sets its collector policy (process.py) before typer loads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvplan.cli.entry import app, main


def __getattr__(name: str) -> Any:
    if name in ("app", "main"):
        from kvplan.cli import entry

        return getattr(entry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["app", "main"]
