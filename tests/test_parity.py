"""Parity with transformers: every cache tensor and the parameter count, for every config we hold.

For each config in tests/data/hf_configs (the 27 shared ones) and tests/data/extra_configs, transformers
builds the model on the `meta` device and runs one token through a StaticCache of N = 8192 tokens
(tests/peers/hf_peer.py); every tensor the cache then holds is compared with what kvplan's spec says that
layer keeps, layer by layer and tensor class by tensor class, and `sum(p.numel())` with kvplan's count.

K/V (and MLA's latent + rotary key) must agree to the byte. Recurrent state follows a documented
convention that differs from transformers' on purpose (docs/spec-schema.md, `state`):

    kvplan (vLLM's shapes, MambaStateShapeCalculator):  conv  [channels, d_conv - 1]  in the model dtype
                                                        recurrent state              in vLLM's state dtype
    transformers 5 (cache_utils.LinearAttentionLayer):  conv  [channels, d_conv]      in the model dtype
                                                        recurrent state              in float32 (its PyTorch scans)

so per state layer transformers holds exactly channels x 1 x model_bytes more conv state, and
numel(recurrent) x (4 - state_bytes) more recurrent state; both are checked as that arithmetic.

The live tests need torch and transformers (the `test` extra) and skip cleanly without them; the truth-file
tests below them check the same against tests/data/transformers_truth.json and need neither. Where
transformers cannot build a model natively (Nemotron-Super is remote code only), the expected figures are
worked out by hand in the test. The whole file runs in about 20 s on 2 cores (peer builds are cached).
"""

from __future__ import annotations

import importlib.util
import json
import os
from functools import lru_cache
from pathlib import Path

import pytest

from kvplan.core.cache import CacheModel
from kvplan.model.catalog import resolve_model
from kvplan.core.dtypes import dtype
from kvplan.core.spec import CHUNKED, HEADED_KINDS, MLA, STATE

DATA = Path(__file__).parent / "data"
SHARED = sorted((DATA / "hf_configs").glob("*.json"))
EXTRA = sorted((DATA / "extra_configs").glob("*.json"))
TRUTH = json.loads((DATA / "transformers_truth.json").read_text())["configs"]
N = 8192
BF16 = dtype("bf16")

# configs transformers cannot build, each with the reason; their figures are hand-checked below
CANNOT_BUILD = {
    "llama-3.3-nemotron-super-49b-v1.json": "model_type nemotron-nas is remote code only",
}
# configs where kvplan's parameter count differs from transformers' on purpose, with the exact difference
PARAM_DIVERGENCE = {
    # transformers 5 ties Mistral3's output head by Mistral3Config's own default (the file names none); the
    # checkpoint has a separate lm_head (24.0B on the Hub) and the text config is `mistral`, untied: kvplan
    # counts it. The difference is exactly one vocab x hidden matrix.
    "mistral-small-3.1-24b-instruct-2503.json": 131072 * 5120,
}


def _ids(paths):
    return [p.name for p in paths]


def _peer_module():
    from peers import hf_peer  # imports torch and transformers only when it builds a model

    return hf_peer


def _table_module():
    spec = importlib.util.spec_from_file_location("kvplan_make_config_table",
                                                  Path(__file__).resolve().parent.parent / "scripts" / "make_config_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@lru_cache(maxsize=None)
def _peer(path: Path, n: int = N):
    # the table script's run_peer: the peer, with the text-model forward where transformers 5.24's multimodal Llama 4
    # forward fails after the cache is filled (scripts/make_config_table.py TEXT_FORWARD_FAILURE)
    return _table_module().run_peer(_peer_module(), path, n)


@pytest.fixture(scope="module")
def peer():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    return _peer


# ------------------------------------------------------------------ what kvplan expects transformers to hold

def transformers_layout(spec, n: int = N) -> dict[tuple[int, str], int]:
    """Bytes per (layer, tensor kind) that transformers' StaticCache holds for `spec` at n tokens, batch 1,
    in bf16: kvplan's layout translated into transformers' conventions (module docstring)."""
    out: dict[tuple[int, str], int] = {}
    for i, layer in enumerate(spec.layer_specs):
        if layer.kind in HEADED_KINDS:
            tokens = min(n, layer.window) if layer.window is not None else n
            out[(i, "key")] = layer.kv_heads * tokens * layer.head_dim * 2
            out[(i, "value")] = layer.kv_heads * tokens * layer.v_head_dim * 2
        elif layer.kind == MLA:
            out[(i, "latent")] = n * layer.mla.kv_lora_rank * 2
            out[(i, "rope_key")] = n * layer.mla.qk_rope_head_dim * 2
        elif layer.kind == STATE:
            channels, kept = layer.state.conv_shape
            out[(i, "conv_state")] = channels * (kept + 1) * dtype(layer.state.conv_dtype).bits // 8
            numel = 1
            for d in layer.state.recurrent_shape:
                numel *= d
            out[(i, "recurrent_state")] = numel * 4
    return out


def state_convention_gap(spec) -> int:
    """transformers' state bytes minus kvplan's, per sequence: one more conv column in the model dtype, and the
    recurrent state in float32 instead of kvplan's state dtype."""
    gap = 0
    for layer in spec.layer_specs:
        if layer.kind == STATE:
            channels = layer.state.conv_shape[0]
            numel = 1
            for d in layer.state.recurrent_shape:
                numel *= d
            gap += channels * dtype(layer.state.conv_dtype).bits // 8
            gap += numel * (32 - dtype(layer.state.recurrent_dtype).bits) // 8
    return gap


def _ranges(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def truth_layout(entry: dict) -> dict[tuple[int, str], int]:
    return {(i, row["kind"]): row["bytes_each"] for row in entry["cache"] for i in _ranges(row["layer_indices"])}


def _spec(path: Path):
    return resolve_model(str(path))


# ------------------------------------------------------------------ live: transformers on `meta`

# Live, transformers builds every config on `meta` (about 90 s of CPU for all of them). The recorded truth files
# (tests/data/transformers_truth.json and extra_configs/truth, written by the same peer) check every config on
# every run below, and test_peer_harness re-runs the peer against the recorded file; the live run covers one config
# per cache kind by default (full GQA, sliding, MLA, Mamba, gated delta net, sliding + sinks MoE) and all of them
# with KVPLAN_FULL_PARITY=1 (before a release, or after a transformers upgrade).
LIVE_KINDS = ("llama-3.1-8b.json", "gemma-2-9b.json", "deepseek-v3.json", "jamba-1.5-mini.json",
              "qwen3-next-80b-a3b-thinking.json", "gpt-oss-20b.json")
LIVE = SHARED + EXTRA if os.environ.get("KVPLAN_FULL_PARITY") else [p for p in SHARED + EXTRA if p.name in LIVE_KINDS]


@pytest.mark.parametrize("path", LIVE, ids=_ids(LIVE))
def test_cache_tensors_match_transformers(peer, path):
    result = peer(path)
    if not result.built:
        assert path.name in CANNOT_BUILD, f"transformers could not build {path.name}: {result.reason}"
        pytest.skip(f"transformers cannot build it ({CANNOT_BUILD[path.name]}); hand-checked below")
    assert path.name not in CANNOT_BUILD, "transformers builds it now: drop it from CANNOT_BUILD"
    spec = _spec(path)
    measured: dict[tuple[int, str], int] = {}
    for t in result.tensors:
        if t.kind != "counter":
            measured[(t.layer, t.kind)] = measured.get((t.layer, t.kind), 0) + t.nbytes
    assert measured == transformers_layout(spec)
    # and the totals as `kvplan estimate --seq 8192 --kv-dtype bf16` reports them
    foot = CacheModel(spec, BF16).footprint(N, 1)
    assert foot.kv_bytes == result.kv_bytes
    assert foot.state_bytes + state_convention_gap(spec) == result.state_bytes


@pytest.mark.parametrize("path", LIVE, ids=_ids(LIVE))
def test_params_match_transformers(peer, path):
    result = peer(path)
    if not result.built:
        pytest.skip(f"transformers cannot build it ({CANNOT_BUILD.get(path.name, result.reason)})")
    spec = _spec(path)
    expected = result.params_total + PARAM_DIVERGENCE.get(path.name, 0)
    assert spec.params == expected, f"{spec.params:,} vs {expected:,}"
    assert abs(spec.params - result.params_total) <= result.params_total * 5 // 1000 or path.name in PARAM_DIVERGENCE
    assert (spec.vision_params or 0) == result.params_vision + result.params_projector


def test_cli_estimate_equals_the_peer(peer, cli):
    """The same through the command line, for one config of each layout family."""
    for name in ("gemma-2-9b.json", "deepseek-v3.json", "jamba-1.5-mini.json", "gpt2.json"):
        path = DATA / "hf_configs" / name
        code, out, err = cli("estimate", path, "--seq", N, "--kv-dtype", "bf16", "--json")
        assert code == 0, err
        got = json.loads(out)
        result = peer(path)
        assert got["kv_bytes"] == result.kv_bytes
        assert got["state_bytes"] + state_convention_gap(_spec(path)) == result.state_bytes
        assert got["params"] == result.params_total


# ------------------------------------------------------------------ the truth file (no torch needed)

@pytest.mark.parametrize("path", SHARED, ids=_ids(SHARED))
def test_cache_tensors_match_the_truth_file(path):
    entry = TRUTH[path.name]
    if not entry["built"]:
        assert path.name in CANNOT_BUILD
        return
    assert entry["dtype"]["built"] == "bfloat16"
    spec = _spec(path)
    assert truth_layout(entry) == transformers_layout(spec)
    foot = CacheModel(spec, BF16).footprint(N, 1)
    assert foot.kv_bytes == entry["kv_bytes"]
    assert foot.state_bytes + state_convention_gap(spec) == entry["state_bytes"]
    assert spec.params == entry["params_total"]


def test_state_convention_worked_example():
    """Jamba-1.5-Mini, one Mamba layer, bf16: the arithmetic of the module docstring, written out."""
    spec = _spec(DATA / "hf_configs" / "jamba-1.5-mini.json")
    # mamba_expand 2 x hidden 4096 = 8192 channels, mamba_d_conv 4, mamba_d_state 16; 28 of 32 layers are Mamba
    kvplan_layer = 8192 * 3 * 2 + 8192 * 16 * 2  # conv [8192, 3] bf16 + ssm [8192, 16] bf16 (vLLM)
    transformers_layer = 8192 * 4 * 2 + 8192 * 16 * 4  # conv [1, 8192, 4] bf16 + ssm [1, 8192, 16] float32
    assert CacheModel(spec, BF16).footprint(N, 1).state_bytes == 28 * kvplan_layer == 8_716_288
    assert TRUTH["jamba-1.5-mini.json"]["state_bytes"] == 28 * transformers_layer == 16_515_072
    assert state_convention_gap(spec) == 28 * (transformers_layer - kvplan_layer)


def test_nemotron_h_recurrent_state_is_float32_like_vllm():
    # vLLM's NemotronHForCausalLMConfig hook: mamba_ssm_cache_dtype from config.json, float32 when absent
    for name in ("nemotron-h-56b-base-8k.json", "nemotron-3-nano-30b-a3b.json"):
        spec = _spec(DATA / "hf_configs" / name)
        assert {layer.state.recurrent_dtype for layer in spec.layer_specs if layer.kind == STATE} == {"fp32"}
        # so the only gap left to transformers is the extra conv column
        channels = spec.state.conv_shape[0]
        assert state_convention_gap(spec) == spec.count(STATE) * channels * 2


# ------------------------------------------------------------------ hand-checked: what transformers cannot build

def test_nemotron_super_by_hand():
    """Llama-3.3-Nemotron-Super-49B (DeciLM, remote code). From its block_configs: 49 blocks with attention
    (n_heads_in_group 8 -> 64 / 8 = 8 KV heads, head_dim 8192 / 64 = 128) and 31 with a no-op attention;
    every block has an FFN whose width is int(2 x ffn_mult x 8192 / 3) rounded up to a multiple of 256."""
    spec = _spec(DATA / "hf_configs" / "llama-3.3-nemotron-super-49b-v1.json")
    kv = 49 * 8 * 128 * 2 * 2 * N  # attention layers x KV heads x head_dim x (K, V) x bf16 bytes x tokens
    assert CacheModel(spec, BF16).footprint(N, 1).kv_bytes == kv == 1_644_167_168

    hidden, vocab = 8192, 128256
    ffn = {5.25: (49, 28672), 2.625: (6, 14336), 1.3125: (10, 7168), 1.0: (8, 5632), 0.5: (6, 2816), 3.28125: (1, 17920)}
    assert sum(n for n, _ in ffn.values()) == 80
    attention = hidden * hidden * 2 + 2 * hidden * 8 * 128 + hidden  # q, o + k, v + input_layernorm
    params = (
        2 * vocab * hidden  # embed_tokens and an untied lm_head
        + hidden  # final norm
        + 49 * attention
        + sum(n * (3 * hidden * inter + hidden) for n, inter in ffn.values())  # gate/up/down + post_attention_layernorm
    )
    # the Hub's safetensors metadata for nvidia/Llama-3_3-Nemotron-Super-49B-v1 reports 49,867,145,216 parameters
    assert spec.params == params == 49_867_145_216


LLAMA4 = [DATA / "extra_configs" / "llama-4-scout-17b-16e-instruct.json",
          DATA / "extra_configs" / "llama-4-maverick-17b-128e-instruct.json"]


@pytest.mark.parametrize("path", LLAMA4, ids=_ids(LLAMA4))
def test_llama4_chunked_layers_beyond_the_chunk_match_transformers(peer, path):
    """At 8192 tokens (the suite's N) a chunked layer holds as much as a full one; past attention_chunk_size (8192)
    transformers' StaticSlidingWindowLayer stops at the chunk: 36 layers [1, 8, 8192, 128], 12 [1, 8, n, 128]."""
    n = 20000
    result = peer(path, n)
    assert result.built, result.reason
    spec = _spec(path)
    assert spec.count(CHUNKED) == 36 and spec.attention_chunk_size == 8192
    shapes = {(t.layer_class, t.shape) for t in result.tensors if t.kind in ("key", "value")}
    assert shapes == {("StaticSlidingWindowLayer", (1, 8, 8192, 128)), ("StaticLayer", (1, 8, n, 128))}
    measured: dict[tuple[int, str], int] = {}
    for t in result.tensors:
        if t.kind != "counter":
            measured[(t.layer, t.kind)] = measured.get((t.layer, t.kind), 0) + t.nbytes
    assert measured == transformers_layout(spec, n)
    assert CacheModel(spec, BF16).footprint(n, 1).kv_bytes == result.kv_bytes == (36 * 8192 + 12 * n) * 8 * 128 * 2 * 2


EXTRA_TRUTH = json.loads((DATA / "extra_configs" / "truth" / "transformers_truth.json").read_text())["configs"]


@pytest.mark.parametrize("path", EXTRA, ids=_ids(EXTRA))
def test_extra_configs_match_their_truth_file(path):
    """The extra configs against the figures scripts/make_config_table.py --refresh-extra recorded."""
    entry = EXTRA_TRUTH[path.name]
    if not entry["built"]:
        assert path.name in CANNOT_BUILD
        return
    spec = _spec(path)
    foot = CacheModel(spec, BF16).footprint(N, 1)
    assert foot.kv_bytes == entry["kv_bytes"]
    assert foot.state_bytes + state_convention_gap(spec) == entry["state_bytes"]
    assert spec.params == entry["params_total"] + PARAM_DIVERGENCE.get(path.name, 0)


def test_config_table_is_current():
    mod = _table_module()
    text = mod.OUT.read_text(encoding="utf-8")
    assert text == mod.render(), "run: python scripts/make_config_table.py"
    # and what it prints agrees with the peer, not only with the code that wrote it: every shared config's
    # parameter count is transformers' (PARAM_DIVERGENCE aside, explained above)
    rows = {line.split("|")[1].strip(): line.split("|") for line in text.splitlines() if line.startswith("| ") and ".json" in line}
    truth = json.loads((DATA / "transformers_truth.json").read_text())["configs"]
    for name, entry in truth.items():
        if entry["built"] and name in rows:
            kvplan_count = int(rows[name][-3].strip().replace(",", ""))
            assert kvplan_count == entry["params_total"] + PARAM_DIVERGENCE.get(name, 0), name
