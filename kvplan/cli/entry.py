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
COMMANDS = ("estimate", "models", "gpus", "show", "calibrate", "check", "explain", "plan", "plot", "probe", "simulate", "sweep", "serve", "mcp")

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
    """Entry point: runs the app and turns usage errors (unknown option, bad int...) into the contract's one line
    (and, with --json, the JSON error object; kvplan.cli.edge)."""
    from kvplan.cli import edge

    register_commands(sys.argv[1] if len(sys.argv) > 1 else None)
    edge.encode_anywhere()
    stdout = sys.stdout
    sys.stdout = edge.Sink(stdout)  # typer's own output (--help) is written through it too
    try:
        code = app(standalone_mode=False)
    except edge.OutputError as err:  # typer's own output (--help) to a full disk
        edge.report(err, as_json=False, stdout_used=True)
        edge.silence_stdout(stdout)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        edge.report(edge.Interrupted("interrupted"), as_json=_json_asked(sys.argv), stdout_used=False)
        sys.exit(edge.EXIT_INTERRUPTED)
    except edge.OutputClosed:  # typer's own output (--help) to a reader that went away
        edge.silence_stdout(stdout)
        sys.exit(edge.EXIT_PIPE_CLOSED)
    except Exception as exc:  # typer's own (vendored click) usage errors carry exit_code and format_message
        if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":
            print(exc.format_message(), file=sys.stderr)
            sys.exit(exc.exit_code)
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "kvplan"
        message = " ".join(str(exc.format_message()).split())
        error = edge.KvplanError(message, where=command, hint=f"see '{command} --help'")
        error.exit_code = exc.exit_code
        edge.report(error, as_json=_json_asked(sys.argv), stdout_used=False)
        sys.exit(exc.exit_code)
    finally:
        sys.stdout = stdout
    failed = edge.finish()  # what typer printed itself (--help, --version) may still sit in the buffer
    if failed is not None:
        sys.exit(failed)
    if type(code).__name__ == "Abort" or code is None:
        sys.exit(0 if code is None else 1)
    sys.exit(code if isinstance(code, int) else 0)


def _json_asked(argv: list[str]) -> bool:
    """--json (or check's --format json) on the command line, before any `--`."""
    words = argv[1:argv.index("--")] if "--" in argv else argv[1:]
    for i, word in enumerate(words):
        if word == "--json" or word in ("--format=json", "-fjson"):
            return True
        if word in ("--format", "-f") and i + 1 < len(words) and words[i + 1] == "json":
            return True
    return False


if __name__ == "__main__":  # pragma: no cover
    main()
