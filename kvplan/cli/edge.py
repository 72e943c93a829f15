"""The one place that turns kvplan's exceptions into the contract's one line on stderr and its exit code.

Commands raise KvplanError (and its subclasses, each carrying its exit code); `guarded` reports it as
`error: <where> — <what> (<hint>)`. Tracebacks only with KVPLAN_DEBUG=1.
"""

from __future__ import annotations

import functools
import os
import sys

import typer

from kvplan.core.errors import KvplanError


def guarded(command):
    """Map kvplan's exceptions to one stderr line and an exit code."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except KvplanError as err:
            if os.environ.get("KVPLAN_DEBUG") == "1":
                raise
            print(f"error: {err.one_line()}", file=sys.stderr)
            raise typer.Exit(err.exit_code) from None
        except RecursionError:
            if os.environ.get("KVPLAN_DEBUG") == "1":
                raise
            print("error: input is nested too deeply to read", file=sys.stderr)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:  # caught here: typer would turn it into a silent exit 130
            print("error: interrupted", file=sys.stderr)
            raise typer.Exit(130) from None

    return wrapper
