"""The transformers peer (tests/peers/hf_peer.py) and the truth file it writes.

The peer builds models on the `meta` device, so every check here is exact and cheap (the slowest config,
DeepSeek-V3, builds in about 2 s on one core). Tests that need torch/transformers skip cleanly without them;
the truth-file checks need neither.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
CONFIGS = DATA / "hf_configs"
TRUTH = DATA / "transformers_truth.json"
GiB = 1024**3


@pytest.fixture(scope="module")
def peer():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from peers import hf_peer  # tests/ is on sys.path (rootdir conftest, no package)

    return hf_peer


def _run(peer, name: str, n: int, **kw):
    r = peer.run_peer(CONFIGS / name, n, **kw)
    assert r.built, r.reason
    return r


# --- published figures ---------------------------------------------------------------------------------


def test_llama2_7b_kv_is_2_gib_at_4k_fp16(peer):
    # the published LLaMA-7B arithmetic: 32 layers x 32 KV heads x 128 x 2 (K, V) x 2 bytes x 4096 tokens = 2 GiB
    r = _run(peer, "llama-2-7b.json", 4096)
    assert r.build_dtype == "float16"  # the config's torch_dtype, transformers' default for from_config
    assert r.cache_bytes == r.kv_bytes == 2 * GiB
    kv = [t for t in r.tensors if t.kind in ("key", "value")]
    assert len(kv) == 64
    assert {t.shape for t in kv} == {(1, 32, 4096, 128)}
    assert {t.dtype for t in kv} == {"float16"}


def test_llama2_7b_param_count(peer):
    r = _run(peer, "llama-2-7b.json", 16)
    assert r.params_total == 6738415616
    assert not r.tied_embeddings


def test_cache_is_linear_in_batch(peer):
    one = _run(peer, "llama-3.1-8b.json", 1024)
    two = _run(peer, "llama-3.1-8b.json", 1024, batch=2)
    assert two.cache_bytes == 2 * one.cache_bytes
    assert one.cache_bytes == 32 * 8 * 128 * 2 * 2 * 1024


# --- layouts that change the formula --------------------------------------------------------------------


def test_sliding_window_caps_at_window_and_at_n(peer):
    # Mistral-7B v0.1: sliding_window 4096 on every layer; StaticSlidingWindowLayer holds min(W, N) tokens
    long = _run(peer, "mistral-7b-v0.1.json", 8192, dtype="bfloat16")
    assert {t.shape for t in long.tensors if t.kind == "key"} == {(1, 8, 4096, 128)}
    short = _run(peer, "mistral-7b-v0.1.json", 1024, dtype="bfloat16")
    assert {t.shape for t in short.tensors if t.kind == "key"} == {(1, 8, 1024, 128)}


def test_gemma2_float32_config_and_tied_embeddings(peer):
    default = _run(peer, "gemma-2-9b.json", 8192)
    bf16 = _run(peer, "gemma-2-9b.json", 8192, dtype="bfloat16")
    assert default.config_dtype == default.build_dtype == "float32"
    assert default.cache_bytes == 2 * bf16.cache_bytes
    # 21 sliding (4096) + 21 full layers, head_dim 256 (not 3584/16), 8 KV heads, bf16
    assert bf16.cache_bytes == 21 * 2 * 8 * 256 * 2 * (4096 + 8192)
    assert bf16.tied_embeddings
    assert bf16.params_with_duplicates - bf16.params_total == 256000 * 3584


def test_deepseek_v3_caches_the_mla_latent(peer):
    # transformers 5.x DeepseekV3Attention caches kv_nope (512) and the rotary key (64) as one-head tensors
    r = _run(peer, "deepseek-v3.json", 1024, dtype="bfloat16")
    kinds = {(t.kind, t.shape) for t in r.tensors if t.kind != "counter"}
    assert kinds == {("latent", (1, 1, 1024, 512)), ("rope_key", (1, 1, 1024, 64))}
    assert r.cache_bytes == 61 * (512 + 64) * 2 * 1024
    assert r.params_total == 671026404352  # no MTP layer: num_nextn_predict_layers is not built


def test_jamba_states(peer):
    r = _run(peer, "jamba-1.5-mini.json", 8192, dtype="bfloat16")
    assert dict(r.layer_classes) == {"LinearAttentionLayer": 28, "StaticLayer": 4}
    conv = {(t.shape, t.dtype) for t in r.tensors if t.kind == "conv_state"}
    ssm = {(t.shape, t.dtype) for t in r.tensors if t.kind == "recurrent_state"}
    # conv state keeps d_conv = 4 columns (vLLM keeps d_conv - 1); the SSM state comes out of the scan in float32
    assert conv == {((1, 8192, 4), "bfloat16")}
    assert ssm == {((1, 8192, 16), "float32")}
    assert sorted({t.layer for t in r.tensors if t.kind == "key"}) == [4, 12, 20, 28]


def test_multimodal_gemma3_vision_params(peer):
    r = _run(peer, "gemma-3-27b.json", 1024, dtype="bfloat16")
    assert r.model_class == "Gemma3ForConditionalGeneration"
    assert r.params_vision > 0 and r.params_projector > 0
    assert dict(r.layer_classes) == {"StaticSlidingWindowLayer": 52, "StaticLayer": 10}


def test_gpt_oss_without_dtype_builds_in_float32(peer):
    # no torch_dtype in the file: from_config falls back to torch's float32; grouped_mm refuses float32 on
    # CPU/meta, so the peer retries the forward with batched_mm experts (the cache does not depend on it)
    r = _run(peer, "gpt-oss-20b.json", 8192)
    assert r.config_dtype is None and r.build_dtype == "float32"
    assert any("batched_mm" in n for n in r.notes)
    # 12 sliding (128) + 12 full layers, 8 KV heads x head_dim 64 (not 2880/64), fp32
    assert r.cache_bytes == 12 * 2 * 8 * 64 * 4 * (128 + 8192)


def test_remote_code_only_config_is_reported_not_built(peer):
    r = peer.run_peer(CONFIGS / "llama-3.3-nemotron-super-49b-v1.json", 1024)
    assert not r.built
    assert "nemotron-nas" in r.reason and "remote code" in r.reason


def test_quantized_kv_dtype_refused(peer):
    with pytest.raises(ValueError, match="StaticCache"):
        peer.run_peer(CONFIGS / "llama-2-7b.json", 16, dtype="float8_e4m3fn")


# --- the truth file ---------------------------------------------------------------------------------


def _truth() -> dict:
    return json.loads(TRUTH.read_text(encoding="utf-8"))


def test_truth_covers_every_config_and_is_consistent():
    truth = _truth()
    assert truth["n_tokens"] == 8192 and truth["batch"] == 1 and truth["dtype"] == "bfloat16"
    names = sorted(p.name for p in CONFIGS.glob("*.json"))
    assert sorted(truth["configs"]) == names
    for name, e in truth["configs"].items():
        if not e["built"]:
            assert e["cannot_build_reason"], name
            continue
        rows = e["cache"]
        assert sum(r["bytes_total"] for r in rows) == e["cache_bytes"] == e["kv_bytes"] + e["state_bytes"], name
        for r in rows:
            assert r["bytes_total"] == r["bytes_each"] * r["layers"], name
            assert all(isinstance(v, int) for v in (r["bytes_each"], r["bytes_total"])), name
        assert e["params_total"] <= e["params_with_duplicates"], name


def test_truth_matches_a_fresh_run(peer):
    truth = _truth()
    import transformers

    written, installed = truth["transformers_version"], transformers.__version__
    if installed != written:
        pytest.skip(f"truth written with transformers {written}, installed {installed}")
    for name in ("llama-3.1-8b.json", "gemma-2-9b.json", "qwen3-next-80b-a3b-thinking.json"):
        e = truth["configs"][name]
        r = _run(peer, name, truth["n_tokens"], batch=truth["batch"], dtype=truth["dtype"])
        assert r.cache_bytes == e["cache_bytes"], name
        assert r.params_total == e["params_total"], name
        assert r.layer_summary() == e["cache"], name


def test_config_transformers_rejects_is_reported(peer, tmp_path):
    d = json.loads((CONFIGS / "llama-3.1-8b.json").read_text(encoding="utf-8"))
    d["hidden_size"] = 4000  # head_dim 125: transformers' RoPE validation wants an even rotary dimension
    path = tmp_path / "config.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    r = peer.run_peer(path, 16)
    assert not r.built and "rejects the config" in r.reason and "\n" not in r.reason
