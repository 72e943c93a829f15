"""The command line (typer app, options, views, one module per command). The entry point is `main`."""

from kvplan.cli.entry import app, main

__all__ = ["app", "main"]
