"""Cache arithmetic: published figures, hand-checked configs, and properties (hypothesis)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.model import catalog
from kvplan.core.cache import CacheModel, cached_tokens, kv_heads_per_rank, pp_layer_counts
from kvplan.core.dtypes import dtype
from kvplan.core.errors import InputError
from kvplan.core.spec import spec_from_mapping

GiB, MiB, KiB = 2**30, 2**20, 2**10


def model(path):
    return catalog.resolve_model(str(path))


# the figures the public explanations of the formula quote
@pytest.mark.parametrize("name,seq,want", [
    ("llama-2-7b", 4096, 2 * GiB), ("llama-2-7b", 32768, 16 * GiB), ("llama-2-7b", 131072, 64 * GiB),
    ("llama-2-70b", 4096, 1280 * MiB), ("llama-2-70b", 131072, 40 * GiB),
])
def test_published_llama_figures(configs, name, seq, want):
    cache = CacheModel(model(configs / f"{name}.json"), dtype("fp16"))
    assert cache.footprint(seq).kv_bytes == want


def test_llama_per_token_figures(configs):
    assert CacheModel(model(configs / "llama-2-7b.json"), dtype("fp16")).kv_bytes_per_token == 512 * KiB
    assert CacheModel(model(configs / "llama-2-70b.json"), dtype("fp16")).kv_bytes_per_token == 320 * KiB


# Hand-checked figures at 8192 tokens, batch 1, bf16 (2 bytes); the arithmetic is written out.
HAND = {
    # 32 layers x 8 KV heads x (128 + 128) x 2 B x 8192
    "llama-3.1-8b": 32 * 8 * 256 * 2 * 8192,
    "llama-3.1-70b": 80 * 8 * 256 * 2 * 8192,
    "llama-3.1-405b": 126 * 8 * 256 * 2 * 8192,
    # Qwen2.5-72B: GQA with 8 KV heads, not the 64 one article assumed (the published explanation's what-if)
    "qwen2.5-72b-instruct": 80 * 8 * 256 * 2 * 8192,
    "qwen2.5-7b": 28 * 4 * 256 * 2 * 8192,
    # Qwen3: explicit head_dim 128 (not hidden/heads)
    "qwen3-8b": 36 * 8 * 256 * 2 * 8192,
    "qwen3-235b-a22b": 94 * 4 * 256 * 2 * 8192,
    # MLA: one latent of 512 + 64 per token per layer, no factor 2, no heads
    "deepseek-v3": 61 * (512 + 64) * 2 * 8192,
    # Mistral v0.1: every layer slides with a 4096 window
    "mistral-7b-v0.1": 32 * 8 * 256 * 2 * 4096,
    # Gemma-2: 21 sliding layers (window 4096) + 21 full; head_dim 256
    "gemma-2-9b": 21 * 8 * 512 * 2 * 4096 + 21 * 8 * 512 * 2 * 8192,
    # Gemma-3-27B: 52 sliding (1024) + 10 full, 16 KV heads x 128
    "gemma-3-27b": 52 * 16 * 256 * 2 * 1024 + 10 * 16 * 256 * 2 * 8192,
    # gpt-oss: 12 sliding (128) + 12 full, 8 KV heads x 64; no dtype in config -> bf16
    "gpt-oss-20b": 12 * 8 * 128 * 2 * 128 + 12 * 8 * 128 * 2 * 8192,
    "gpt-oss-120b": 18 * 8 * 128 * 2 * 128 + 18 * 8 * 128 * 2 * 8192,
    # Phi-3-mini-4k: every layer slides, window 2047
    "phi-3-mini-4k-instruct": 32 * 32 * 192 * 2 * 2047,
    # Jamba: attention on 4 of 32 layers (period 8, offset 4)
    "jamba-1.5-mini": 4 * 8 * 256 * 2 * 8192,
    # Nemotron-H-56B: 10 attention layers of 118
    "nemotron-h-56b-base-8k": 10 * 8 * 256 * 2 * 8192,
    # Qwen3-Next: full attention every 4th of 48 layers, 2 KV heads x 256
    "qwen3-next-80b-a3b-thinking": 12 * 2 * 512 * 2 * 8192,
    # Nemotron-Super: 49 attention layers of 80, 8 KV heads each (64 heads / 8 per group)
    "llama-3.3-nemotron-super-49b-v1": 49 * 8 * 256 * 2 * 8192,
    # GPT-2: MHA, 12 layers x 12 heads x 64; fp32 config served in fp16
    "gpt2": 12 * 12 * 128 * 2 * 8192,
    # Falcon-Mamba: no attention at all
    "falcon-mamba-7b": 0,
    # MHA: 32 layers x 32 KV heads x 128
    "llama-2-7b": 32 * 32 * 256 * 2 * 8192,
    "llama-2-70b": 80 * 8 * 256 * 2 * 8192,
    "meta-llama-3-8b": 32 * 8 * 256 * 2 * 8192,
    # Mixtral: sliding_window null, so every layer is full despite Mistral's heritage
    "mixtral-8x7b-v0.1": 32 * 8 * 256 * 2 * 8192,
    # Phi-3.5: window 262144 exceeds max_position_embeddings 131072, so nothing slides; head_dim 3072/32 = 96
    "phi-3.5-mini-instruct": 32 * 32 * 192 * 2 * 8192,
    # Qwen2-72B: sliding_window 131072 set, but use_sliding_window false
    "qwen2-72b": 80 * 8 * 256 * 2 * 8192,
    # Nemotron-3-Nano: 6 attention layers ('*' in hybrid_override_pattern) of 52, 2 KV heads x 128
    "nemotron-3-nano-30b-a3b": 6 * 2 * 256 * 2 * 8192,
}


def test_every_shared_config_has_a_hand_checked_figure(configs):
    assert {p.stem for p in configs.glob("*.json")} == set(HAND)


@pytest.mark.parametrize("name", sorted(HAND))
def test_hand_checked_configs_at_8k(configs, name):
    spec = model(configs / f"{name}.json")
    assert CacheModel(spec, dtype("bf16")).footprint(8192).kv_bytes == HAND[name]


def test_pure_mamba_keeps_state_not_kv(configs):
    spec = model(configs / "falcon-mamba-7b.json")
    f = CacheModel(spec, dtype("bf16")).footprint(8192)
    # 64 layers x (conv 8192 x 3 + ssm 8192 x 16) x 2 bytes (vLLM's shapes: d_conv - 1 conv columns)
    assert f.state_bytes == 64 * (8192 * 3 + 8192 * 16) * 2


# ---------------------------------------------------------------- TP / PP rules

def test_kv_heads_per_rank_follows_vllm():
    assert kv_heads_per_rank(8, 2) == 4
    assert kv_heads_per_rank(8, 8) == 1
    assert kv_heads_per_rank(8, 16) == 1  # replicated
    with pytest.raises(InputError):
        kv_heads_per_rank(8, 3)
    with pytest.raises(InputError):
        kv_heads_per_rank(6, 4)


def test_pp_split_gives_the_remainder_to_stages_before_the_last():
    assert pp_layer_counts(10, 4) == [2, 3, 3, 2]
    assert pp_layer_counts(32, 4) == [8, 8, 8, 8]
    assert pp_layer_counts(61, 2) == [31, 30]
    with pytest.raises(InputError):
        pp_layer_counts(4, 8)


# ---------------------------------------------------------------- properties

def _spec(layers, heads_per_group, kv_heads, head_dim, kinds, window):
    kinds = [kinds[i % len(kinds)] for i in range(layers)]
    return spec_from_mapping({
        "name": "prop", "layers": layers, "attention_heads": kv_heads * heads_per_group, "kv_heads": kv_heads,
        "head_dim": head_dim, "dtype": "bf16", "params": 1000, "sliding_window": window, "attention_chunk_size": 2 * window,
        "layout": {"per_layer": kinds}, "mla": {"kv_lora_rank": 64, "qk_rope_head_dim": 16},
        "state": {"conv_shape": [32, 3], "recurrent_shape": [8, 16]},
    })


specs = st.builds(
    lambda layers, g, kv, hd, seed, window: _spec(layers, g, kv, hd, seed, window),
    layers=st.integers(1, 12), g=st.sampled_from([1, 2, 4]), kv=st.sampled_from([1, 2, 4, 8]),
    hd=st.sampled_from([32, 64, 128]),
    seed=st.lists(st.sampled_from(["full", "sliding", "chunked", "mla", "state", "none"]), min_size=1, max_size=4),
    window=st.integers(1, 512),
)
seqs = st.integers(1, 4096)


@given(specs, seqs, st.integers(1, 64))
def test_cache_is_linear_in_batch(spec, seq, batch):
    cache = CacheModel(spec, dtype("bf16"))
    one, many = cache.footprint(seq, 1), cache.footprint(seq, batch)
    assert many.kv_bytes == batch * one.kv_bytes and many.state_bytes == batch * one.state_bytes


@given(specs, seqs, seqs)
def test_cache_is_monotone_in_seq(spec, a, b):
    cache = CacheModel(spec, dtype("bf16"))
    lo, hi = sorted((a, b))
    assert cache.footprint(lo).cache_bytes <= cache.footprint(hi).cache_bytes


@given(st.integers(1, 8), st.integers(1, 256), st.integers(0, 4096))
def test_sliding_layers_are_constant_past_the_window(layers, window, extra):
    spec = _spec(layers, 2, 4, 64, ["sliding"], window)
    cache = CacheModel(spec, dtype("bf16"))
    assert cache.footprint(window + extra).kv_bytes == cache.footprint(window).kv_bytes


@given(specs, seqs)
def test_fp8_is_half_of_bf16_and_int4_a_quarter(spec, seq):
    bf16 = CacheModel(spec, dtype("bf16")).footprint(seq).kv_bytes
    assert CacheModel(spec, dtype("fp8")).footprint(seq).kv_bytes * 2 == bf16
    assert CacheModel(spec, dtype("int4")).footprint(seq).kv_bytes * 4 == bf16


@settings(max_examples=60)
@given(st.integers(1, 16), st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4, 8, 16]), st.integers(1, 4), seqs)
def test_rank_shards_add_up_to_the_whole(layers, kv, tp, pp, seq):
    if pp > layers:
        return
    spec = _spec(layers, 2, kv, 64, ["full", "mla", "state"], 64)
    cache = CacheModel(spec, dtype("bf16"), tp=tp, pp=pp)
    whole = cache.footprint(seq)
    shards = [cache.rank_footprint(s, seq) for s in range(pp) for _ in range(tp)]
    assert sum(f.kv_bytes for f in shards) == whole.kv_bytes
    # against the unsharded model: attention heads split exactly (plus replicas when tp > kv),
    # MLA latents are held whole by every TP rank
    single = CacheModel(spec, dtype("bf16"))
    full_layers = sum(1 for l in spec.layer_specs if l.kind == "full")
    mla_layers = sum(1 for l in spec.layer_specs if l.kind == "mla")
    replicas = max(1, tp // kv)
    expected_kv = (full_layers * kv * 128 * 2 * seq) * replicas + mla_layers * 80 * 2 * seq * tp
    assert whole.kv_bytes == expected_kv
    assert single.footprint(seq).kv_bytes == full_layers * kv * 128 * 2 * seq + mla_layers * 80 * 2 * seq


@given(st.integers(1, 8), st.integers(1, 256), st.integers(0, 4096))
def test_chunked_layers_are_constant_past_the_chunk(layers, window, extra):
    # the _spec helper gives chunked layers a chunk of 2 x window
    spec = _spec(layers, 2, 4, 64, ["chunked"], window)
    cache = CacheModel(spec, dtype("bf16"))
    chunk = 2 * window
    assert cache.footprint(chunk + extra).kv_bytes == cache.footprint(chunk).kv_bytes == layers * 4 * 128 * 2 * chunk


def test_llama4_scout_layout_as_transformers_allocates_it():
    """transformers 5.24 StaticCache for Llama-4-Scout (measured on `meta`, tests/test_parity.py): 36 chunked layers
    are StaticSlidingWindowLayer of [1, 8, min(8192, N), 128], 12 full (NoPE) layers StaticLayer of [1, 8, N, 128]."""
    spec = spec_from_mapping({"name": "scout", "layers": 48, "attention_heads": 40, "kv_heads": 8, "head_dim": 128,
                              "dtype": "bf16", "params": 1, "attention_chunk_size": 8192,
                              "layout": {"pattern": ["chunked*3", "full"]}})
    per_token_layer = 8 * 256 * 2  # K and V, 8 heads x 128, bf16
    for n in (1, 4096, 8192, 100_000):
        kv = CacheModel(spec, dtype("bf16")).footprint(n).kv_bytes
        assert kv == 36 * per_token_layer * min(n, 8192) + 12 * per_token_layer * n
    chunked = spec.layer_specs[0]
    assert chunked.kind == "chunked" and cached_tokens(chunked, 100_000) == 8192 and cached_tokens(chunked, 10) == 10


def test_consumers_of_layer_kinds_handle_chunked_or_refuse():
    """A chunked layer is never silently dropped or charged in full: the static estimate, explain's derivation and the
    probe's static tensors keep min(seq, chunk) tokens; the latency model, which has no chunk-local term, refuses."""
    from kvplan.analysis import explain, latency
    from kvplan.core.errors import UnsupportedError
    from kvplan.engines import static
    from kvplan.engines.api import EngineRequest
    from kvplan.probe.layout import rank_plan

    spec = spec_from_mapping({"name": "chunky", "layers": 8, "attention_heads": 8, "kv_heads": 2, "head_dim": 64,
                              "dtype": "bf16", "params": 10**9, "attention_chunk_size": 100,
                              "layout": {"pattern": ["chunked*3", "full"]}})
    bf16 = dtype("bf16")
    cache = CacheModel(spec, bf16)
    per_token_layer = 2 * 2 * 64 * 2
    want = 6 * per_token_layer * 100 + 2 * per_token_layer * 1000
    assert cache.footprint(1000).kv_bytes == want
    assert static.estimate(EngineRequest(spec=spec, seq=1000, batch=1, kv_dtype="bf16")).kv_bytes == want
    terms = explain.derivation(spec, cache, 1000, 1)
    assert sum(t.total_bytes for t in terms) == want and {t.kind for t in terms} == {"chunked", "full"}
    assert "chunk 100" in next(t.total_formula for t in terms if t.kind == "chunked")
    assert sum(g.estimated_bytes for g in rank_plan(cache, seq=1000, batch=1).groups) == want
    with pytest.raises(UnsupportedError, match="chunked"):
        latency.attention_terms(spec)
