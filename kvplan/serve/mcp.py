"""`kvplan mcp`: kvplan's questions as Model Context Protocol tools over stdio, so coding and ops agents size
deployments with kvplan instead of guessing. Built on the official SDK's low-level server (the kvplan[mcp] extra):
each tool's input schema is the one the HTTP API publishes (calls.py, schema.py), read from the API function's
signature, so an agent sees exactly kvplan.estimate's arguments.

A tool's answer is {"exit_code": N, "result": <the object the command's --json prints>}, as structured content and
as its JSON text; an error is {"error": {"where", "what", "hint"}, "exit_code": N} with isError set.
"""

from __future__ import annotations

import json

from kvplan.core.errors import KvplanError
from kvplan.serve import calls
from kvplan import __version__

TOOLS = ("estimate", "check", "plan", "explain", "models")
_ADVICE = {
    "estimate": " Give `gpu` (kvplan's catalog name, see the models/gpus tools) to learn whether it fits and how many "
                "sequences do; `engine` vllm, sglang or trtllm for that engine's own budget.",
    "check": " Pass the deployment files' text in `files` ({\"name.yaml\": \"...\"}) or vLLM command lines in `vllm_args`.",
    "plan": " Give the load as `concurrency` and `seq`, or `rate` with `prompt` and `output`.",
    "explain": "",
    "models": " Use the names it lists as `model` in the other tools.",
}


def build():
    """The MCP server (not yet running)."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=name, description=calls.CALLS[name].summary + "." + _ADVICE[name],
                       input_schema=calls.CALLS[name].arguments_schema())
            for name in TOOLS])

    async def call_tool(ctx, params) -> types.CallToolResult:
        try:
            if params.name not in TOOLS:
                raise KvplanError(f"no tool {params.name!r}", where="name", hint="one of " + ", ".join(TOOLS))
            data, code = await anyio.to_thread.run_sync(calls.run, params.name, params.arguments or {})
        except KvplanError as err:
            return _answer(err.to_dict(), error=True)
        return _answer({"exit_code": code, "result": data}, error=False)

    def _answer(payload: dict, *, error: bool) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(payload))],
                                    structured_content=payload, is_error=error)

    return Server("kvplan", version=__version__,
                  instructions="KV-cache memory planning for LLM serving: whether a model fits a GPU at a length and "
                               "batch, how many requests fit, what a deployment file gives, the cheapest deployment.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


def serve_stdio() -> None:
    """Serve until the client closes stdin."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build()

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
