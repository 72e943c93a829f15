"""`kvplan mcp` as an agent meets it: the official SDK's client starts `python -m kvplan mcp` over stdio, lists the
tools (each with a valid JSON Schema of its arguments) and calls each; the answers are the Python API's."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="kvplan[mcp] is not installed")
anyio = pytest.importorskip("anyio")

import kvplan  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _session(work):
    """Run `work(client)` against a fresh `kvplan mcp` process; its return value."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "kvplan", "mcp"], cwd=str(ROOT),
                                   env={k: os.environ[k] for k in ("PYTHONPATH", "HF_HUB_OFFLINE", "HF_HUB_CACHE",
                                                                   "KVPLAN_CACHE_DIR", "PATH") if k in os.environ})

    async def main():
        async with Client(params, read_timeout_seconds=120) as client:
            return await work(client)

    return anyio.run(main)


def test_an_mcp_client_lists_the_tools_and_calls_each():
    jsonschema = pytest.importorskip("jsonschema")
    folder = ROOT / "examples/deploy/vllm"
    files = {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file()}
    calls = {
        "estimate": {"model": "llama-3.1-8b", "seq": "32K", "batch": 8, "gpu": "h100", "engine": "vllm"},
        "check": {"files": files, "gpu": "h100"},
        "plan": {"model": "llama-3.1-8b", "concurrency": 64, "seq": "8K", "gpu": "h100", "engine": "vllm"},
        "explain": {"model": "deepseek-v3", "seq": "32K"},
        "models": {},
    }

    async def work(client):
        tools = (await client.list_tools()).tools
        answers = {name: await client.call_tool(name, arguments) for name, arguments in calls.items()}
        bad = await client.call_tool("estimate", {"model": "llama-3.1-8b", "gpu": "h1000"})
        return tools, answers, bad

    tools, answers, bad = _session(work)
    assert sorted(t.name for t in tools) == sorted(calls)
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        jsonschema.validate(calls[tool.name], tool.input_schema)
        assert tool.description
    estimate_schema = next(t.input_schema for t in tools if t.name == "estimate")
    assert {"model", "seq", "batch", "gpu", "engine", "kv_dtype", "config"} <= set(estimate_schema["properties"])

    def result(name):
        answer = answers[name]
        assert not answer.is_error, answer.content
        assert json.loads(answer.content[0].text) == answer.structured_content
        return answer.structured_content

    est = result("estimate")
    assert est == {"exit_code": 0, "result": kvplan.estimate(**calls["estimate"]).to_dict()}
    want = kvplan.check(str(folder), gpu="h100")
    got = result("check")
    assert got["exit_code"] == want.exit_code
    assert sorted((v["name"], v["status"]) for v in got["result"]["verdicts"]) == \
        sorted((v.name, v.status) for v in want.verdicts)
    assert result("plan") == {"exit_code": 0, "result": kvplan.plan(**calls["plan"]).to_dict()}
    assert result("explain")["result"]["cache_bytes"] == kvplan.explain("deepseek-v3", seq="32K").cache_bytes
    assert result("models")["result"] == kvplan.models().to_dict()
    assert bad.is_error and bad.structured_content["exit_code"] == 2
    assert bad.structured_content["error"]["where"] == "--gpu"
