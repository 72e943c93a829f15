"""The layer kinds own their rules (kvplan/core/layers.py): hand arithmetic for each kind, and the one table."""

import dataclasses
from math import prod

import pytest

from kvplan.core.dtypes import dtype
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.layers import (CHUNKED, ENGINE_BASE_KINDS, FULL, HEADED_KINDS, INDEXED_MLA, KINDS, LAYER_KINDS, MLA,
                                NONE, SLIDING, STATE, WINDOWED_KINDS, CompressSpec, MlaSpec, StateSpec, as_kind, make_layer,
                                require_mapped_kinds)

BF16, FP8, INT4 = dtype("bf16"), dtype("fp8"), dtype("int4")


def test_full_attention_bytes_by_hand():
    # Llama-3.1-8B: 8 KV heads x (128 + 128) x 2 bytes = 4,096 B per token per layer
    layer = make_layer(FULL, kv_heads=8, head_dim=128, v_head_dim=128)
    assert layer.token_bytes(BF16) == 8 * 256 * 2 == 4096
    assert layer.token_bytes(FP8) == 2048 and layer.token_bytes(INT4) == 1024
    assert layer.token_bytes(BF16, tp=2) == 4 * 256 * 2  # 4 heads a rank
    assert layer.token_bytes(BF16, tp=8) == 1 * 256 * 2
    assert layer.token_bytes(BF16, tp=16) == 512 and layer.heads_per_rank(16) == 1  # one head replicated
    assert layer.tokens_kept(100_000) == 100_000 and layer.state_bytes() == 0
    with pytest.raises(InputError, match="does not divide"):
        layer.heads_per_rank(3)


def test_int4_rounds_a_row_up_to_a_whole_byte():
    # 1 head x (3 + 4) x 4 bits = 28 bits -> 4 bytes, not 3.5
    assert make_layer(FULL, kv_heads=1, head_dim=3, v_head_dim=4).token_bytes(INT4) == 4


def test_windows_keep_their_last_tokens_and_chunks_their_chunk():
    sliding = make_layer(SLIDING, kv_heads=8, head_dim=128, v_head_dim=128, window=4096)
    chunked = make_layer(CHUNKED, kv_heads=8, head_dim=128, v_head_dim=128, window=8192)
    assert [sliding.tokens_kept(n) for n in (100, 4096, 4097, 10**6)] == [100, 4096, 4096, 4096]
    assert [chunked.tokens_kept(n) for n in (100, 8192, 100_000)] == [100, 8192, 8192]
    assert sliding.token_bytes(BF16) == chunked.token_bytes(BF16) == 4096


def test_mla_is_one_latent_per_token_on_every_rank():
    # DeepSeek-V3: (512 + 64) x 2 bytes, no factor 2, not split by TP
    layer = make_layer(MLA, mla=MlaSpec(kv_lora_rank=512, qk_rope_head_dim=64))
    assert layer.token_bytes(BF16) == layer.token_bytes(BF16, tp=8) == 576 * 2 == 1152
    assert layer.heads_per_rank(8) == 0 and layer.tokens_kept(32768) == 32768


def test_state_is_per_sequence_and_tp_splits_its_first_dimension():
    # a Mamba-2-like state: conv [8192, 3] bf16, recurrent [64, 64, 128] fp32
    state = StateSpec(conv_shape=(8192, 3), recurrent_shape=(64, 64, 128), conv_dtype="bf16", recurrent_dtype="fp32")
    layer = make_layer(STATE, state=state)
    assert layer.state_bytes() == 8192 * 3 * 2 + 64 * 64 * 128 * 4
    assert layer.state_bytes(tp=2) == 4096 * 3 * 2 + 32 * 64 * 128 * 4
    assert layer.state_bytes(tp=3) == 2731 * 3 * 2 + 22 * 64 * 128 * 4  # ceil(8192/3), ceil(64/3)
    assert layer.token_bytes(BF16) == 0 and layer.tokens_kept(10**6) == 0


def test_no_cache_layer_keeps_nothing():
    layer = make_layer(NONE)
    assert (layer.token_bytes(BF16), layer.state_bytes(), layer.tokens_kept(10), layer.caches) == (0, 0, 0, False)


def test_one_table_of_kinds():
    assert LAYER_KINDS == (FULL, SLIDING, CHUNKED, MLA, INDEXED_MLA, "full_indexed", "compressed", "compressed_indexed",
                           STATE, NONE)
    assert HEADED_KINDS == (FULL, SLIDING, CHUNKED, "full_indexed") and WINDOWED_KINDS == (SLIDING, CHUNKED)
    assert all(KINDS[k].kind == k for k in LAYER_KINDS)


def test_as_kind_changes_the_rules_not_the_fields():
    full = make_layer(FULL, kv_heads=8, head_dim=128, v_head_dim=128)
    sliding = as_kind(full, SLIDING, window=1024)
    assert sliding.kind == SLIDING and sliding.tokens_kept(5000) == 1024 and sliding.kv_heads == 8
    assert as_kind(sliding, FULL, window=None) == full
    assert sliding != dataclasses.replace(full, window=1024)  # a window on a full layer is still a full layer


def test_an_indexed_latent_layer_adds_its_index_key_to_the_latent():
    # DeepSeek-V3.2: kv_lora_rank 512 + qk_rope_head_dim 64, index_head_dim 128; one copy on every TP rank
    layer = make_layer(INDEXED_MLA, mla=MlaSpec(512, 64, 1536, 128))
    assert layer.token_bytes(dtype("bf16")) == (512 + 64 + 128) * 2 == layer.token_bytes(dtype("bf16"), tp=8)
    assert layer.token_bytes(dtype("fp8")) == 512 + 64 + 128 and layer.tokens_kept(9000) == 9000
    with pytest.raises(UnsupportedError) as err:
        require_mapped_kinds([layer], ENGINE_BASE_KINDS, "vLLM", "m")
    assert "mla_indexed" in err.value.what



def _v4(kind: str, ratio: int):
    from kvplan.core.layers import CompressSpec

    index = 128 if kind == "compressed_indexed" else None
    return make_layer(kind, kv_heads=1, head_dim=512, v_head_dim=512, window=128, compress=CompressSpec(ratio, index))


def test_deepseek_v4_layers_keep_what_transformers_measured_one_layer_at_a_time():
    # one layer of each type, bf16, against the per-layer bytes transformers 5.24 held on `meta` after N tokens
    # (DeepseekV4CSACache / DeepseekV4HCACache; a 4-layer V4-Flash built by hand: sliding, CSA, HCA, sliding)
    measured = {1: (2048, 7168, 4096), 3: (6144, 21504, 12288), 4: (8192, 19712, 16384), 127: (260096, 325376, 520192),
                128: (260096, 311296, 261120), 129: (260096, 316416, 263168), 1000: (260096, 590336, 480256)}
    layers = (_v4("compressed", 0), _v4("compressed_indexed", 4), _v4("compressed", 128))
    for n, row in measured.items():
        assert tuple(layer.seq_bytes(BF16, 1, n) for layer in layers) == row, n


def test_deepseek_v4_peak_is_the_most_held_at_any_shorter_length():
    # the open window drains at each boundary, so the cache at 128 tokens is less than at 127; fitting asks the peak
    for layer in (_v4("compressed", 0), _v4("compressed_indexed", 4), _v4("compressed", 128)):
        running = 0
        for n in range(1, 700):
            running = max(running, layer.seq_bytes(BF16, 1, n))
            assert layer.peak_seq_bytes(BF16, 1, n) == running, (layer.kind, n)


def _one_of_each_kind():
    """A layer of every kind with the fields its kind reads (the published shapes the tests above use)."""
    mla = MlaSpec(kv_lora_rank=512, qk_rope_head_dim=64, index_head_dim=128)
    fields = {"kv_heads": 8, "head_dim": 128, "v_head_dim": 128, "window": 4096, "mla": mla, "index_head_dim": 128,
              "state": StateSpec(conv_shape=(8192, 3), recurrent_shape=(64, 64, 128), conv_dtype="bf16",
                                 recurrent_dtype="float32"),
              "compress": CompressSpec(ratio=4, index_head_dim=128)}
    return [make_layer(kind, **fields) for kind in LAYER_KINDS]


@pytest.mark.parametrize("tp", [1, 2, 16])
def test_the_tensors_a_layer_names_hold_its_bytes(tp):
    # the probe allocates LayerSpec.token_tensors and state_tensors (kvplan/probe/layout.py): at whole bytes per
    # element, their elements must come to the bytes the layer's own rules count, for every kind
    for layer in _one_of_each_kind():
        elements = sum(prod(shape) for _, shape in layer.token_tensors(tp))
        assert elements * 2 == layer.token_bytes(BF16, tp), layer.kind
        assert elements == layer.token_bytes(FP8, tp), layer.kind
        state = sum(prod(shape) * dtype(name).bits // 8 for _, shape, name in layer.state_tensors(tp))
        assert state == layer.state_bytes(tp), layer.kind


def test_kv_tensors_are_heads_then_width():
    layer = make_layer(FULL, kv_heads=8, head_dim=128, v_head_dim=64)
    assert layer.token_tensors(2) == (("k", (4, 128)), ("v", (4, 64)))
    assert make_layer(MLA, mla=MlaSpec(512, 64)).token_tensors(8) == (("latent", (576,)),)  # whole on every rank
    # Falcon-Mamba-7B's state at TP 2: ceil(8192 / 2) conv channels; the heads of the recurrent state split the same way
    state = make_layer(STATE, state=StateSpec((8192, 4), (8192, 16), "bf16", "bf16"))
    assert state.state_tensors(2) == (("conv", (4096, 4), "bf16"), ("recurrent", (4096, 16), "bf16"))


def test_what_the_spec_reader_asks_of_each_kind():
    # the spec reader (core/spec.py) and config reader (model/hf_config.py) require what the kind says it reads
    assert {k for k, c in KINDS.items() if c.window_from == "sliding_window"} == {SLIDING, "compressed", "compressed_indexed"}
    assert {k for k, c in KINDS.items() if c.window_from == "attention_chunk_size"} == {CHUNKED}
    assert {k for k, c in KINDS.items() if c.indexed} == {INDEXED_MLA, "full_indexed", "compressed_indexed"}
    assert {k for k, c in KINDS.items() if c.latency_gap} == {CHUNKED, INDEXED_MLA}
