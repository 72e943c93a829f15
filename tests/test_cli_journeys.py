"""The tasks of issue 29, as an operator types them, end to end through the real entry point (the golden harness:
argv parsing, the error line, the exit code). Each asserts what the first lines must say: one verdict, the engine
that gave it, one longest figure, and the fixes in the order an operator tries them."""

from __future__ import annotations

import json

from golden import harness


def kvplan(line: str) -> tuple[int, str, str]:
    out = harness.run(line)
    return out["exit"], out["stdout"], out["stderr"]


def test_a_gpu_without_engine_is_judged_by_vllm():
    """Llama-3.1-70B at 32K on two H100s: the textbook fits (exit 0), vLLM does not start. Without --engine the
    answer is vLLM's: exit 1, vLLM named in the first line, and a note on stderr says why and how to get the
    textbook."""
    code, out, err = kvplan("estimate llama-3.1-70b --seq 32K --gpu h100 --tp 2")
    assert code == 1
    assert "vLLM 0.33" in out.splitlines()[0]
    assert "does NOT start" in out and "fits" not in out.split("verdict", 1)[1].split("\n", 1)[0]
    assert "the default engine with a GPU" in err and "--engine static" in err
    textbook_code, textbook, _ = kvplan("estimate llama-3.1-70b --seq 32K --gpu h100 --tp 2 --engine static")
    assert textbook_code == 0 and "engine static" in textbook.splitlines()[0]


def test_sweep_and_estimate_agree_on_the_verdict():
    code, out, _ = kvplan("sweep llama-3.1-70b --seq 32K --gpu h100 --tp 2,4 -f jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["engine"] for r in rows] == ["vllm", "vllm"]
    for row in rows:
        est_code, est, _ = kvplan(f"estimate llama-3.1-70b --seq 32K --gpu h100 --tp {row['tp']} --json")
        assert json.loads(est)["fits"] == row["fits"] and est_code == (0 if row["fits"] else 1)


def test_without_a_gpu_the_textbook_answers():
    code, out, err = kvplan("estimate llama-3.1-8b --seq 32K --json")
    assert code == 0 and json.loads(out)["engine"] == "static" and json.loads(out)["fits"] is None
