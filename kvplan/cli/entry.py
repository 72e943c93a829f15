"""The command line's entry point: the typer app, its commands (one module each in commands/), and the edge that
turns typer's own usage errors into the contract's one line (kvplan.cli.edge does the same for kvplan's).

Commands are registered lazily: the one about to run imports its own module only, `--help` imports them all,
so `kvplan estimate` starts without building every command's options (benchmarks/cold_start.py). Nothing here
imports torch.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer

# in the order `kvplan --help` lists them
COMMANDS = ("estimate", "models", "gpus", "show", "calibrate", "check", "explain", "plan", "plot", "probe", "simulate", "sweep")

app = typer.Typer(
    name="kvplan",
    help="KV-cache memory planner for LLM serving: exact cache bytes, engine-faithful budgets, CI checks, GPU probes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from kvplan import __version__

        print(f"kvplan {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", help="Print kvplan's version and exit.", callback=_version,
                                                is_eager=True)] = False) -> None:
    """KV-cache memory planner for LLM serving: exact cache bytes, engine-faithful budgets, CI checks, GPU probes."""


_registered: set[str] = set()


def register_commands(wanted: str | None = None) -> None:
    """Register `wanted` alone when it names a command, else every command (for --help and the tests)."""
    names = (wanted,) if wanted in COMMANDS else COMMANDS
    for name in names:
        if name not in _registered:
            importlib.import_module(f"kvplan.cli.commands.{name}").register(app)
            _registered.add(name)
    if wanted not in COMMANDS:
        # keep --help's order however the commands were registered before
        app.registered_commands.sort(key=lambda c: COMMANDS.index(c.name))


def main() -> None:
    """Entry point: runs the app and turns usage errors (unknown option, bad int...) into the contract's one line."""
    register_commands(sys.argv[1] if len(sys.argv) > 1 else None)
    try:
        code = app(standalone_mode=False)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # typer's own (vendored click) usage errors carry exit_code and format_message
        if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":
            print(exc.format_message(), file=sys.stderr)
            sys.exit(exc.exit_code)
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "kvplan"
        message = " ".join(str(exc.format_message()).split())
        print(f"error: {command} — {message} (see '{command} --help')", file=sys.stderr)
        sys.exit(exc.exit_code)
    if type(code).__name__ == "Abort" or code is None:
        sys.exit(0 if code is None else 1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
