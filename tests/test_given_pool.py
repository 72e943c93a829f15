"""Issue 15, the worst bug a CI gate can have, a wrong "yes": `estimate llama-3.1-8b --engine vllm --gpu h100
--kv-cache-memory 79GiB --seq 8K` said fits with usable bytes above the card's capacity, and a deployment with
`kv_cache_memory_bytes: 1000TiB` passed check.

Hand arithmetic, independent of every modelled term: the bf16 weights of Llama-3.1-8B are 8,030,261,248 params x 2
= 16,060,522,496 B; the H100 SXM's capacity is 85,029,158,912 B (kvplan gpus); 79 GiB = 84,825,604,096 B. Weights
plus that pool are 100,886,126,592 B > 85,029,158,912 B: no engine can hold it, whatever its overheads."""

from __future__ import annotations

import json

import pytest

from engine_requests import engine_request

WEIGHTS = 8_030_261_248 * 2
H100 = 85_029_158_912
POOL_79G = 79 * 2**30
assert WEIGHTS + POOL_79G > H100  # the premise, in figures


def test_vllm_refuses_a_pool_the_gpu_cannot_hold():
    from kvplan.engines.vllm.engine import estimate

    r = estimate(engine_request("llama-3.1-8b", gpu="h100", mem=POOL_79G))
    assert r.fits is False and r.starts is False and r.max_batch == 0
    assert r.per_gpu.usable_bytes <= H100 and r.per_gpu.free_bytes < 0
    assert r.pool_view().problem is not None and "cannot hold a KV cache" in r.refusal


def test_vllm_keeps_a_pool_that_fits():
    # 40 GiB + 16 GB of weights is far below 79 GiB: the given pool is used as given
    from kvplan.engines.vllm.engine import estimate

    r = estimate(engine_request("llama-3.1-8b", gpu="h100", mem=40 * 2**30))
    assert r.fits is True and r.available_kv_bytes == 40 * 2**30
    assert r.per_gpu.usable_bytes <= H100 and r.per_gpu.free_bytes >= 0


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_sglang_and_trtllm_take_the_smaller_of_the_given_and_the_profiled_pool(engine):
    # SGLang: "max_total_tokens=... is larger than the profiled value ... Use the profiled value instead";
    # TensorRT-LLM: max_gpu_total_bytes beside free_gpu_memory_fraction, the smaller wins
    import importlib

    estimate = importlib.import_module(f"kvplan.engines.{engine}.engine").estimate
    given = estimate(engine_request("llama-3.1-8b", gpu="h100", mem=POOL_79G))
    profiled = estimate(engine_request("llama-3.1-8b", gpu="h100"))
    assert given.available_kv_bytes == profiled.available_kv_bytes < H100 - WEIGHTS
    assert any("is more than the" in n for n in given.notes)
    small = estimate(engine_request("llama-3.1-8b", gpu="h100", mem=2**30))
    assert small.available_kv_bytes == 2**30  # below the profiled pool the given one is used


def test_static_refuses_a_cache_the_gpu_cannot_hold_beside_the_weights():
    from kvplan.engines.static import estimate

    r = estimate(engine_request("llama-3.1-8b", gpu="h100", mem=POOL_79G))
    assert r.fits is False and r.max_batch == 0
    assert r.per_gpu.free_bytes == H100 - WEIGHTS - POOL_79G


def test_estimate_exits_1_and_says_why(cli):
    code, out, err = cli("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "h100", "--kv-cache-memory", "79GiB",
                         "--seq", "8K", "--json")
    data = json.loads(out)
    assert code == 1 and data["fits"] is False and data["per_gpu"]["usable_bytes"] <= data["per_gpu"]["capacity_bytes"]


@pytest.mark.parametrize("engine, status", [("vllm", "fail"), ("static", "fail"), ("sglang", "pass"), ("trtllm", "pass")])
def test_check_of_a_1000_tib_pool(tmp_path, engine, status):
    from kvplan.check.run import run_check

    d = tmp_path / "big.yaml"
    d.write_text(f"name: big\nengine: {engine}\nmodel: llama-3.1-8b\ngpu: h100\nmax_model_len: 8192\n"
                 "kv_cache_memory_bytes: 1000TiB\n")
    (v,) = run_check([str(d)]).verdicts
    assert v.status == status, v.reason
    if status == "pass":  # the engine's own pool, never more than the card holds
        assert v.figures.available_kv_bytes < H100 - WEIGHTS
