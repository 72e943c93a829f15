"""kvplan explain: the derivation adds up to estimate's cache_bytes; what-ifs against hand figures."""

import json

import pytest

from kvplan.model import catalog
from kvplan.analysis import explain as ex
from kvplan.core.cache import CacheModel
from kvplan.core.dtypes import dtype
from kvplan.engines import static
from kvplan.requests.build import build_request

from conftest import CONFIGS

ALL_CONFIGS = sorted(p.name for p in CONFIGS.glob("*.json"))


def _explain(name, *, seq="8K", batch=1, kv="auto", tp=None, pp=1, gpu=None):
    req = build_request(str(CONFIGS / name), seq=seq, batch=batch, kv_dtype=kv, dtype=None, gpu=gpu, gpu_mem=None, gpus=None, tp=tp, pp=pp)
    est = static.estimate(req)
    cache = CacheModel(req.spec, static.kv_dtype(req), req.tp, req.pp)
    room = est.per_gpu.usable_bytes - est.per_gpu.weights_bytes if est.per_gpu else None
    return ex.explain(req.spec, cache, seq=req.seq, batch=req.batch, room=room), est


@pytest.mark.parametrize("name", ALL_CONFIGS)
def test_totals_equal_estimate_for_every_config(name):
    result, est = _explain(name, seq="20000", batch=3)
    assert result.cache_bytes == est.cache_bytes
    assert result.kv_bytes == est.kv_bytes and result.state_bytes == est.state_bytes
    assert sum(g.total_bytes for g in result.groups) == est.cache_bytes
    assert result.kv_bytes_per_token == est.kv_bytes_per_token
    assert result.what_ifs[0].cache_bytes == est.cache_bytes and result.what_ifs[0].ratio == 1.0


@pytest.mark.parametrize("name, tp, pp, kv", [("gemma-3-27b.json", 2, 2, "fp8"), ("llama-3.1-70b.json", 16, 1, "auto"),
                                              ("deepseek-v3.json", 8, 2, "auto"), ("jamba-1.5-mini.json", 2, 3, "int4"),
                                              ("llama-3.3-nemotron-super-49b-v1.json", 4, 5, "bf16")])
def test_totals_equal_estimate_when_sharded(name, tp, pp, kv):
    result, est = _explain(name, seq="32K", batch=5, kv=kv, tp=tp, pp=pp)
    assert sum(g.total_bytes for g in result.groups) == result.cache_bytes == est.cache_bytes
    assert {g.stage for g in result.groups} == set(range(pp))


def test_llama_derivation_reads_like_the_textbook():
    result, _ = _explain("llama-3.1-8b.json", seq="8K", batch=4)
    (g,) = result.groups
    assert g.per_token_formula == "2 (K and V) x 8 KV heads x 128 head_dim x 2 B (bf16) = 4,096 B"
    assert g.total_formula == "4,096 B x 32 layers x 8,192 tokens x 4 seq x 1 GPU = 4,294,967,296 B"


def test_sliding_and_replicated_heads_are_spelled_out():
    result, _ = _explain("gemma-2-9b.json", seq="32K", tp=16)
    sliding = next(g for g in result.groups if g.kind == "sliding")
    assert "min(32,768, window 4,096) = 4,096 tokens" in sliding.total_formula and sliding.tokens == 4096
    assert "1 KV head per GPU: 8 heads replicated over TP 16" in sliding.per_token_formula


def test_mla_and_state_formulas():
    mla, _ = _explain("deepseek-v3.json")
    assert "(512 kv_lora_rank + 64 qk_rope_head_dim) latent x 2 B (bf16)" in mla.groups[0].per_token_formula
    jamba, _ = _explain("jamba-1.5-mini.json")
    state = next(g for g in jamba.groups if g.kind == "state")
    assert state.state_formula.startswith("conv [") and state.state_formula.endswith(f"= {state.state_bytes:,} B per sequence")


def test_what_ifs_for_a_gqa_model_by_hand():
    # Llama-3.1-8B: 32 layers, 32 query heads, 8 KV heads, head_dim 128, bf16: 131,072 B per token
    result, est = _explain("llama-3.1-8b.json", gpu="h100")
    w = {x.name: x for x in result.what_ifs}
    assert w["as configured (GQA)"].kv_bytes_per_token == 131_072
    assert w["as configured (GQA)"].max_batch == est.max_batch
    assert w["MHA"].kv_bytes_per_token == 4 * 131_072 and w["MHA"].ratio == 4.0
    assert w["MQA"].kv_bytes_per_token == 131_072 // 8
    # MLA with DeepSeek-V2 proportions: (4 x 128 + 64) x 2 B per layer, 32 layers
    assert w["MLA"].kv_bytes_per_token == 32 * 576 * 2 == 36_864
    assert w["KV fp8_e4m3"].ratio == 0.5 and w["KV int4"].ratio == 0.25
    # a 4,096 window on every layer at 8K tokens halves the cache; on alternate layers, three quarters
    assert w["window 4,096"].ratio == 0.5 and w["window 4,096, alternate"].ratio == 0.75
    assert w["MHA"].max_batch < est.max_batch < w["KV fp8_e4m3"].max_batch


def test_what_ifs_for_windowed_and_mla_models():
    gemma, _ = _explain("gemma-2-9b.json", seq="32K")
    names = [x.name for x in gemma.what_ifs]
    assert "no window" in names and not any(n.startswith("window") for n in names)
    no_window = next(x for x in gemma.what_ifs if x.name == "no window")
    assert no_window.ratio == pytest.approx(2 * 32768 / (32768 + 4096))
    ds, _ = _explain("deepseek-v3.json")
    names = [x.name for x in ds.what_ifs]
    assert names[0] == "as configured (MLA)" and "MLA" not in names[1:] and not any(n.startswith("window") for n in names)
    mha = next(x for x in ds.what_ifs if x.name == "MHA")
    # 128 heads x (192 + 128) x 2 B = 81,920 B per layer against a 1,152 B latent
    assert mha.kv_bytes_per_token == 61 * 81_920 and ds.kv_bytes_per_token == 61 * 1_152


def test_variants_leave_the_original_alone():
    spec = catalog.resolve_model(str(CONFIGS / "llama-3.1-8b.json"))
    before = CacheModel(spec, dtype("bf16")).kv_bytes_per_token
    for variant in (ex.variant_mha(spec), ex.variant_mqa(spec), ex.variant_mla(spec), ex.variant_window(spec, 1024)):
        assert variant.name != spec.name and variant.params == spec.params
    assert CacheModel(spec, dtype("bf16")).kv_bytes_per_token == before


def test_cli_json_totals_equal_estimate(cli):
    model = CONFIGS / "gemma-3-27b.json"
    code, out, err = cli("explain", model, "--seq", "16K", "--batch", "2", "--tp", "2", "--json")
    assert code == 0, err
    result = json.loads(out)
    code, est_out, _ = cli("estimate", model, "--seq", "16K", "--batch", "2", "--tp", "2", "--json")
    # by hand: Gemma-3-27B has 52 sliding layers (window 1024) and 10 full ones, 16 KV heads x (128 + 128) x 2 bytes
    # = 8,192 B a token a layer (TP 2 halves the heads on each of two ranks: the same whole-model total)
    by_hand = 2 * (52 * 8192 * 1024 + 10 * 8192 * 16384)
    assert result["cache_bytes"] == json.loads(est_out)["cache_bytes"] == by_hand == 3_556_769_792
    assert sum(g["total_bytes"] for g in result["groups"]) == by_hand
    assert result["latency"] is None


@pytest.mark.parametrize("name", ["llama-3.1-8b.json", "deepseek-v3.json", "jamba-1.5-mini.json", "gemma-3-27b.json"])
def test_cli_text(cli, name):
    code, out, err = cli("explain", CONFIGS / name, "--seq", "8K", "--gpu", "h200", "--tp", "8" if name.startswith("deepseek") else "1")
    assert code == 0, err
    assert "layer group by layer group" in out and "what-ifs" in out and "lower bounds" in out
    assert "estimate's cache_bytes" in out


def test_cli_errors(cli):
    code, _, err = cli("explain", CONFIGS / "llama-3.1-8b.json", "--prompt", "1K")
    assert code == 2 and "need a GPU" in err
    code, _, err = cli("explain", CONFIGS / "llama-3.1-8b.json", "--window", "0")
    assert code == 2 and "--window" in err


def test_mla_what_changes_says_the_latent_not_the_query_heads():
    """An MLA layer caches one latent per token (kv_lora_rank + qk_rope_head_dim), not num_key_value_heads x head_dim:
    the "what changes" words say so. DeepSeek-V3 (config.json: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64,
    bf16): 61 x (512 + 64) x 2 B = 70,272 B a token."""
    ds, _ = _explain("deepseek-v3.json")
    configured = ds.what_ifs[0]
    assert configured.kv_bytes_per_token == 61 * (512 + 64) * 2 == 70_272
    assert "1 latent of 512 kv_lora_rank + 64 qk_rope_head_dim per token" in configured.description
    assert "KV heads" not in configured.description and "head_dim," not in configured.description
    # GLM-5 (zai-org/GLM-5 config.json: 78 layers, 512 + 64 latent, DSA index_head_dim 128, bf16): the indexer's key
    # beside the latent, 78 x (512 + 64 + 128) x 2 B = 109,824 B a token
    req = build_request(str(CONFIGS.parent / "hf_configs_2026" / "zai-org--GLM-5.json"), seq="8K", batch=1,
                        kv_dtype="auto", dtype=None, gpu=None, gpu_mem=None, gpus=None, tp=None, pp=1)
    glm = ex.explain(req.spec, CacheModel(req.spec, static.kv_dtype(req)), seq=req.seq, batch=1).what_ifs[0]
    assert glm.kv_bytes_per_token == 78 * (512 + 64 + 128) * 2 == 109_824
    assert "1 latent of 512 kv_lora_rank + 64 qk_rope_head_dim + a 128 index_head_dim index key" in glm.description
    assert "KV heads" not in glm.description
    # a state model stores no token: no heads are named; a GQA model keeps its heads
    mamba, _ = _explain("falcon-mamba-7b.json")
    assert mamba.what_ifs[0].description == "64 state, KV bf16"
    llama, _ = _explain("llama-3.1-8b.json")
    assert llama.what_ifs[0].description == "32 full, 8 KV heads x 128 head_dim, KV bf16"
