"""Latency lower bounds against hand calculations (docs/latency.md has the formulas)."""

import dataclasses

import pytest
from hypothesis import given, strategies as st

from kvplan.model import catalog
from kvplan.analysis import latency
from kvplan.engines.runtime.weights import model_weights
from kvplan.core.cache import CacheModel
from kvplan.core.dtypes import dtype
from kvplan.core.errors import UnsupportedError

from conftest import CONFIGS

# H100 SXM datasheet figures, written here so the hand calculations do not move with the catalog (the other
# fields come from the catalog entry, so a field added to Gpu does not break this file)
H100 = dataclasses.replace(catalog.find_gpu("h100-sxm-80gb"), name="h100", aliases=(), capacity_bytes=85029158912,
                           hbm_bandwidth_bytes_per_s=3_350_000_000_000, bf16_dense_flops=989_000_000_000_000,
                           fp8_dense_flops=1_979_000_000_000_000, source="datasheet")
LLAMA_8B_PARAMS = 8_030_261_248


def spec(name):
    return catalog.resolve_model(str(CONFIGS / f"{name}.json"))


def bounds(name, prompt, output, *, tp=1, kv="bf16", batch=None, weight_dtype="bf16", gpu=H100):
    s = spec(name)
    weights, _ = model_weights(s, None)
    return latency.bounds(s, CacheModel(s, dtype(kv), tp), gpu=gpu, weights_bytes=weights, weight_dtype=weight_dtype,
                          prompt=prompt, output=output, batch=batch)


# ------------------------------------------------------------------ the sums

@given(a=st.integers(1, 300), n=st.integers(0, 300), w=st.one_of(st.none(), st.integers(1, 400)))
def test_sum_min_is_the_sum(a, n, w):
    b = a + n - 1
    assert latency.sum_min(a, b, w) == sum(i if w is None else min(i, w) for i in range(a, b + 1))


@given(a=st.integers(1, 120), n=st.integers(0, 120), w=st.one_of(st.none(), st.integers(1, 150)))
def test_sum_prefix_min_is_the_double_sum(a, n, w):
    b = a + n - 1
    brute = sum(sum(i if w is None else min(i, w) for i in range(1, m + 1)) for m in range(a, b + 1))
    assert latency.sum_prefix_min(a, b, w) == brute


# ------------------------------------------------------------------ Llama-3.1-8B by hand

def test_prefill_flops_by_hand():
    # 2 x N x P + layers x 2 x heads x (d_k + d_v) x P(P+1)/2 ; 32 layers, 32 query heads, head_dim 128
    p = 1024
    linear = 2 * LLAMA_8B_PARAMS * p  # 16,445,975,035,904
    attention = 32 * (2 * 32 * 256) * (p * (p + 1) // 2)  # 524,288 x 524,800 = 275,146,342,400
    assert linear == 16_445_975_035_904 and attention == 275_146_342_400
    b = bounds("llama-3.1-8b", p, 1024)
    assert b.prefill.flops == linear + attention == 16_721_121_378_304
    assert b.prefill.compute_s == pytest.approx(16_721_121_378_304 / 989e12)  # 16.9 ms
    assert b.prefill.bound == "compute" and b.prefill.seconds == b.prefill.compute_s


def test_decode_bytes_and_time_by_hand():
    # one step at 2,047 cached tokens reads the bf16 weights once and the whole cache: 2 B x N + 131,072 B x 2,047
    b = bounds("llama-3.1-8b", 1024, 1024)
    weights = 2 * LLAMA_8B_PARAMS
    assert b.context == 2047 and b.active_weights_bytes == weights == 16_060_522_496
    assert b.decode.bytes == weights + 131_072 * 2047 == 16_328_826_880
    assert b.decode.memory_s == pytest.approx(16_328_826_880 / 3.35e12)  # 4.87 ms per token
    assert b.decode.flops == 2 * LLAMA_8B_PARAMS + 32 * 16_384 * 2048
    assert b.decode.bound == "memory"


def test_decode_at_a_batch_reads_weights_once():
    b = bounds("llama-3.1-8b", 1024, 1024, batch=100)
    weights = 2 * LLAMA_8B_PARAMS
    assert b.decode_batch.bytes == weights + 100 * 131_072 * 2047
    assert b.decode_batch.flops == 100 * b.decode.flops
    assert b.prefill_batch.flops == 100 * b.prefill.flops
    assert b.decode_batch_tokens_per_s == pytest.approx(100 / b.decode_batch.seconds)


def test_generation_with_and_without_a_cache():
    p, o = 512, 256
    s = spec("llama-3.1-8b")
    b = bounds("llama-3.1-8b", p, o)
    # with a cache: prefill(P) plus one decode step per further token is exactly prefill(P + O - 1)
    assert b.generate_cached.flops == latency.prefill_flops(s, p + o - 1)
    assert b.generate_cached.flops == latency.prefill_flops(s, p) + sum(latency.decode_flops(s, p + k - 1) for k in range(1, o))
    # without: O forward passes over P, P+1, ..., P+O-1 tokens
    assert b.generate_no_cache.flops == sum(latency.prefill_flops(s, p + k) for k in range(o))
    assert b.generate_no_cache.bytes == o * 2 * LLAMA_8B_PARAMS
    # decode steps read P .. P+O-2 cached tokens
    assert b.generate_cached.bytes == b.prefill.bytes + (o - 1) * 2 * LLAMA_8B_PARAMS + 131_072 * sum(range(p, p + o - 1))
    assert b.no_cache_flops_ratio > 100 and b.no_cache_time_ratio > 1


def test_kv_caching_speeds_generation_up_severalfold():
    # public explanations of the KV cache: caching typically speeds up generation ~5x over recomputing K/V
    b = bounds("llama-3.1-8b", 1024, 1024)
    assert 3 < b.no_cache_time_ratio < 10


def test_tp_halves_both_floors():
    one, two = bounds("llama-3.1-8b", 4096, 512), bounds("llama-3.1-8b", 4096, 512, tp=2)
    assert two.prefill.flops == one.prefill.flops and two.decode.bytes == one.decode.bytes
    assert two.prefill.seconds == pytest.approx(one.prefill.seconds / 2)
    assert two.decode.seconds == pytest.approx(one.decode.seconds / 2)


def test_fp8_kv_halves_the_cache_read():
    bf, fp = bounds("llama-3.1-8b", 8192, 8192), bounds("llama-3.1-8b", 8192, 8192, kv="fp8")
    weights = 2 * LLAMA_8B_PARAMS
    assert (bf.decode.bytes - weights) == 2 * (fp.decode.bytes - weights)


def test_fp8_weights_use_the_fp8_peak():
    assert bounds("llama-3.1-8b", 1024, 1, weight_dtype="fp8_e4m3").peak_flops_per_s == 1_979_000_000_000_000
    assert bounds("llama-3.1-8b", 1024, 1, weight_dtype="int4").peak_flops_per_s == 989_000_000_000_000


# ------------------------------------------------------------------ other layouts

def test_sliding_window_caps_the_attention_term():
    # Gemma-2-9B: 21 full + 21 sliding (4096) layers, 16 heads, head_dim 256: 2 x 16 x 512 = 16,384 FLOPs per pair per layer
    s = spec("gemma-2-9b")
    p = 8192
    full = 21 * 16_384 * (p * (p + 1) // 2)
    sliding = 21 * 16_384 * (4096 * 4097 // 2 + 4096 * (p - 4096))
    assert latency.prefill_flops(s, p) == 2 * s.params * p + full + sliding


def test_moe_reads_only_the_active_experts():
    # Mixtral-8x7B: 12,879,925,248 of 46,702,792,704 parameters active per token
    b = bounds("mixtral-8x7b-v0.1", 1024, 16)
    assert b.matmul_params == 12_879_925_248
    assert b.active_weights_bytes == 2 * 12_879_925_248
    assert b.prefill.flops == 2 * 12_879_925_248 * 1024 + 32 * (2 * 32 * 256) * (1024 * 1025 // 2)
    assert any("MoE" in n for n in b.notes)


def test_mla_uses_the_uncompressed_head_dims():
    # DeepSeek-V3: 128 heads, q/k 192 (128 nope + 64 rope), v 128: 2 x 128 x 320 FLOPs per pair per layer, 61 layers
    s = spec("deepseek-v3")
    (term,) = latency.attention_terms(s)
    assert (term.layers, term.pair_flops, term.window) == (61, 2 * 128 * 320, None)


def test_state_layers_add_no_attention_term():
    s = spec("jamba-1.5-mini")
    assert sum(t.layers for t in latency.attention_terms(s)) == s.count("full")


def test_a_gpu_without_figures_cannot_be_judged():
    bare = dataclasses.replace(H100, name="x", hbm_bandwidth_bytes_per_s=None, bf16_dense_flops=None, fp8_dense_flops=None)
    with pytest.raises(UnsupportedError):
        bounds("llama-3.1-8b", 10, 10, gpu=bare)


def test_explain_json_carries_the_bounds(cli):
    import json

    code, out, err = cli("explain", CONFIGS / "llama-3.1-8b.json", "--seq", "2K", "--gpu", "h100", "--prompt", "1K", "--output", "1K", "--json")
    assert code == 0, err
    b = json.loads(out)["latency"]
    assert b["prefill"]["flops"] == 16_721_121_378_304 and b["decode"]["bytes"] == 16_328_826_880
    assert b["batch"] > 0 and b["decode_batch"]["bytes"] == 2 * LLAMA_8B_PARAMS + b["batch"] * 131_072 * 2047
