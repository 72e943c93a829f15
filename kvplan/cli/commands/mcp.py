"""`kvplan mcp`: a Model Context Protocol server over stdio (kvplan/serve/mcp.py, docs/serve.md). Needs kvplan[mcp]."""

from __future__ import annotations


def register(app) -> None:
    from kvplan.cli.edge import guarded

    app.command(name="mcp")(guarded(mcp))


def mcp():
    """Serve kvplan's estimate, check, plan, explain and models as Model Context Protocol tools over stdin and stdout,
    for an agent (Claude Code, an IDE, an ops bot) to start as its MCP server."""
    from kvplan.core.errors import InputError

    try:
        from kvplan.serve import mcp as server
        import mcp as _sdk  # noqa: F401
    except ImportError as err:
        raise InputError(f"needs the mcp extra ({err.name} is not installed)", where="kvplan mcp",
                         hint="pip install 'kvplan[mcp]'") from None
    server.serve_stdio()
