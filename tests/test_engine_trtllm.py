"""kvplan's TensorRT-LLM engine against the rules and worked example of docs/engines/trtllm.md."""

from __future__ import annotations

import dataclasses

import json
from fractions import Fraction
from pathlib import Path

import pytest

from kvplan.core import dtypes
from kvplan.model.catalog import resolve_model
from kvplan.engines import EngineRequest, trtllm
from kvplan.core.errors import UnsupportedError

from engine_requests import engine_request, with_fixes

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
GIB = 2**30


def _req(name, seq=131072, **kw):
    return engine_request(CONFIGS / f"{name}.json", seq, **kw)


def test_worked_example_budget_arithmetic():
    """docs/engines/trtllm.md: H100, Llama-3.1-8B, the example's assumed weights/activations/non-torch. The fraction
    is a C++ float: 0.9 is 0.8999999761581421 (every TensorRT-LLM log prints it so: "fraction is set
    0.8999999761581421"), so (85,029,158,912 - 36,461,617,152 + 17,716,740,096) x 0.8999999761581421 =
    66,284,281,856 x 0.8999999761581421 = 59,655,852,090 B (1,580 B below the exact 0.9), still 455,138 tokens."""
    temp, budget, tokens = trtllm.pool_tokens(85_029_158_912, weights=16_060_522_496, peak=1_610_612_736,
                                              non_torch=1_073_741_824, temp_blocks=4224, bytes_per_token=131_072,
                                              estimator_bytes_per_token=131_072, tokens_per_block=32,
                                              fraction=Fraction(9, 10))
    assert temp == 17_716_740_096 and budget == 59_655_852_090 and tokens == 455_138
    assert tokens // 32 == 14_223


def test_blocks_and_concurrency_from_a_given_pool():
    est = trtllm.estimate(_req("llama-3.1-8b", seq=8192, mem=59_655_853_670))
    assert est.bytes_per_token == 131_072 and est.max_tokens == 455_138
    assert est.num_blocks == 14_223 and est.kv_cache_tokens == 14_223 * 32
    assert est.max_concurrency == 14_223 // 256 == 55 and est.fits


def test_t2_t3_when_tp_exceeds_kv_heads():
    est = trtllm.estimate(_req("qwen2.5-7b", seq=8192, tp=8, gpu="h100"))
    assert est.bytes_per_token == 2 * 28 * 1 * 128 * 2  # ceil(4 / 8) = 1 head per rank
    assert est.estimator_bytes_per_token == 2 * 28 * (128 * 4 // 8) * 2  # half a head
    assert any("(T3)" in n for n in est.notes)


def test_mla_latent_not_split():
    est = trtllm.estimate(_req("deepseek-v3", seq=8192, tp=8, mem=10 * GIB))
    assert est.bytes_per_token == 61 * 576 * 2


def test_short_pool_lowers_max_seq_len():
    est = with_fixes("trtllm", _req("llama-3.1-8b", seq=131072, mem=8 * GIB))
    assert est.fits is False and est.estimated_max_model_len == est.kv_cache_tokens < 131072
    assert any(s.startswith("--max_seq_len") for s in est.suggestions)


def test_vswa_splits_the_pool_per_window():
    est = trtllm.estimate(_req("gpt-oss-20b", seq=8192, mem=10 * GIB))
    windows = dict(est.window_blocks)
    assert set(windows) == {128, 8192}
    per = 12 * 8 * 128 * 2  # 12 layers of each kind, 8 heads x (64 + 64) x 2 B
    assert windows[8192] == int(Fraction(10 * GIB, 2) / per) // 32


def test_mamba_refused(cli):
    with pytest.raises(UnsupportedError):
        trtllm.estimate(_req("nemotron-h-56b-base-8k", seq=8192, mem=GIB))
    code, _, err = cli("estimate", CONFIGS / "qwen3-next-80b-a3b-thinking.json", "--engine", "trtllm", "--gpu", "h100")
    assert code == 3 and "not modelled" in err


def test_cli_trtllm_json(cli):
    code, out, _ = cli("estimate", CONFIGS / "llama-3.1-8b.json", "--engine", "trtllm", "--gpu", "h100", "--seq", "8K",
                       "--json")
    assert code == 0
    d = json.loads(out)
    assert d["engine"] == "trtllm" and d["tokens_per_block"] == 32 and d["num_blocks"] > 10_000
    assert d["kv_cache_tokens"] == d["num_blocks"] * 32


def test_chunked_local_layers_are_refused():
    """TensorRT-LLM applies attention_chunk_size in its attention kernel; its pool for those layers is not modelled."""
    from kvplan.core.spec import spec_from_mapping

    spec = spec_from_mapping(dict(name="scout-like", layers=48, attention_heads=40, kv_heads=8, head_dim=128,
                                  dtype="bf16", params=108_000_000_000, attention_chunk_size=8192,
                                  layout={"pattern": ["chunked*3", "full"]}, architecture="Llama4ForConditionalGeneration"))
    req = EngineRequest(spec=spec, seq=8192, batch=1, kv_dtype="auto",
                        weight_fmt=None, kv_cache_memory=GIB)
    with pytest.raises(UnsupportedError, match="chunked-local") as info:
        trtllm.estimate(req)
    assert info.value.exit_code == 3 and "--engine vllm" in info.value.hint


@pytest.mark.parametrize("name, seq, batch, gpu", [
    ("gemma-3-27b", 32768, 1, "h100-sxm-80gb"),  # was 32768 (the sliding share bounded by --seq itself)
    ("gemma-3-27b", 512, 64, "h100-sxm-80gb"),  # below the window the pool is one share; above it, per window
    ("llama-3.1-8b", 17, 3000, "h100-sxm-80gb"),  # batch beyond max_batch_size (2048): nothing fits
    ("llama-3.1-8b", 8192, 7, "l4-24gb"),
])
def test_max_seq_is_the_longest_max_seq_len_that_fits(name, seq, batch, gpu):
    """max_seq: the largest max_seq_len at which `fits` holds for `batch` requests, judged with the pool TensorRT-LLM
    builds at that length (the VSWA split per window appears only once max_seq_len passes a window)."""
    def at(s):
        return trtllm.estimate(_req(name, seq=s, gpu=gpu, batch=batch))

    est = at(seq)
    if est.max_seq:
        assert at(est.max_seq).fits is True
    else:
        assert at(1).fits is False
    if est.max_seq < resolve_model(str(CONFIGS / f"{name}.json")).max_context:
        assert at(est.max_seq + 1).fits is False
