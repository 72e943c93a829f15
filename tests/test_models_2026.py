"""The 2025-2026 corpus (tests/data/hf_configs_2026, verbatim config.json files with SOURCES.md): every file is either
read, with its KV cache exact against transformers on `meta` and its parameters within 1% where its weights are known,
or refused with exit 3 naming the key or the part kvplan cannot size. Never a figure with a cache key left unread.

The truth (tests/data/transformers_truth_2026.json) is transformers 5.24's StaticCache at 8192 tokens in bf16, written
by `python scripts/make_transformers_truth.py --configs tests/data/hf_configs_2026 --one-dtype
--out tests/data/transformers_truth_2026.json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.core.cache import CacheModel
from kvplan.core.dtypes import dtype
from kvplan.core.errors import UnsupportedError
from kvplan.model.catalog import resolve_model

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "hf_configs_2026"
CONFIGS = sorted(p for p in CORPUS.glob("*.json") if not p.name.endswith(".hf_quant_config.json"))
TRUTH = json.loads((DATA / "transformers_truth_2026.json").read_text())["configs"]


def _spec(path: Path):
    try:
        return resolve_model(str(path)), None
    except UnsupportedError as err:
        return None, err


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_each_config_is_exact_or_refused_by_name(path):
    spec, refused = _spec(path)
    if refused is not None:
        # the refusal names a key of the file (or the part kvplan cannot size), never just "unsupported"
        key = refused.where.rsplit(": ", 1)[-1]
        assert key and (key in path.read_text() or key.split(".")[0] in path.read_text()), refused.one_line()
        return
    truth = TRUTH.get(path.name)
    if truth is None or not truth["built"]:
        return  # remote code only (Kimi-K2, Step-3.7, MiMo): read by the rules its family shares, no peer to ask
    assert CacheModel(spec, dtype("bf16")).footprint(8192, 1).kv_bytes == truth["kv_bytes"]
    if spec.weights_unknown:
        assert truth["params_vision"], "only a tower kvplan cannot size may leave the weights unknown"
        # the text model's parameters are still right: transformers' total less its vision tower and projector
        text = truth["params_total"] - truth["params_vision"] - (truth["params_projector"] or 0)
        assert abs(spec.params / text - 1) <= 0.01, (spec.params, text)
    else:
        assert abs(spec.params / truth["params_total"] - 1) <= 0.01, (spec.params, truth["params_total"])


def test_the_corpus_is_mostly_read():
    read = [p for p in CONFIGS if _spec(p)[0] is not None]
    assert len(CONFIGS) >= 60 and len(read) >= 77, len(read)


def test_a_multimodal_config_gives_the_pool_with_its_weights_unknown(cli):
    kimi = CORPUS / "moonshotai--Kimi-K2.5.json"  # a MoonViT tower without a model_type, which kvplan does not size
    code, out, err = cli("estimate", kimi, "--kv-cache-memory", "40GiB", "--engine", "vllm", "--seq", "32K", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["num_gpu_blocks"] > 0 and d["weights_bytes"] is None and d["params"] is None
    # the text model's KV: 61 MLA layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 bytes (config.json text_config)
    assert d["kv_bytes_per_token"] == 61 * (512 + 64) * 2
    code, out, err = cli("estimate", kimi, "--gpu", "h100", "--engine", "vllm", "--seq", "32K")
    assert code == 3 and "weights are unknown" in err and "vision tower" in err  # a budget needs the weights
    code, out, err = cli("estimate", kimi, "--seq", "8K", "--json")
    assert code == 0 and json.loads(out)["kv_bytes"] == 8192 * 61 * (512 + 64) * 2


def test_nemotron_3_ultra_block_list_and_latent_experts_are_read():
    # layers_block_type (no num_hidden_layers in the file) and moe_latent_size: params within 1% above; here the
    # layout itself, from the list: 'attention' / 'mamba' / 'moe'
    raw = json.loads((CORPUS / "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.json").read_text())
    spec = resolve_model(str(CORPUS / "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.json"))
    blocks = raw["layers_block_type"]
    assert "num_hidden_layers" not in raw and spec.layers == len(blocks)
    assert spec.count("full") == blocks.count("attention") and spec.count("state") == blocks.count("mamba")


def test_dsa_indexer_keys_are_kept_on_the_layers_that_run_the_indexer():
    # GLM-5.2: indexer_types lists 21 "full" layers of 78 (index_topk_freq 4, offset 3: layers 0-2, 6, 10, ... 74);
    # each keeps the latent (512 + 64) and those 21 an index key of 128, bf16: 78 x 576 x 2 + 21 x 128 x 2 B a token
    # (transformers 5.24 StaticIndexedLayer on meta: indexer_keys [1, 8192, 128] on exactly those layers)
    spec = resolve_model(str(CORPUS / "zai-org--GLM-5.2.json"))
    assert spec.count("mla_indexed") == 21 and spec.count("mla") == 57
    assert CacheModel(spec, dtype("bf16")).kv_bytes_per_token == 78 * 576 * 2 + 21 * 128 * 2
    indexed = [i for i, layer in enumerate(spec.layer_specs) if layer.kind == "mla_indexed"]
    assert indexed == [0, 1, 2, *range(6, 78, 4)]
    v32 = resolve_model(str(CORPUS / "nvidia--DeepSeek-V3.2-NVFP4.json"))  # every layer runs it (freq 1)
    assert v32.count("mla_indexed") == 61


def test_engines_that_do_not_map_a_new_layer_kind_refuse_it_by_name(cli):
    glm = CORPUS / "zai-org--GLM-5.json"
    for engine in ("vllm", "sglang", "trtllm"):
        code, out, err = cli("estimate", glm, "--seq", "8K", "--engine", engine, "--kv-cache-memory", "40GiB")
        assert code == 3 and "mla_indexed" in err, (engine, err)
    code, out, err = cli("estimate", glm, "--seq", "8K", "--json")  # static: transformers' cache, exact
    assert code == 0 and json.loads(out)["kv_bytes"] == TRUTH[glm.name]["kv_bytes"]


def test_sparse_attention_layer_types_outside_a_dsa_family_are_refused():
    from kvplan.model.hf_config import spec_mapping_from_config

    raw = json.loads((DATA / "hf_configs" / "qwen3-8b.json").read_text())
    raw["layer_types"] = ["deepseek_sparse_attention"] * raw["num_hidden_layers"]
    with pytest.raises(UnsupportedError) as err:
        spec_mapping_from_config(raw, name="m", where="cfg")
    assert "layer_types" in err.value.where


def test_gemma4_global_layers_have_their_own_head_shape():
    # Gemma-4-31B: 50 sliding layers of 16 KV heads x 256 and 10 full ones of num_global_key_value_heads 4 x
    # global_head_dim 512, K and V both kept (attention_k_eq_v drops v_proj, not the value cache: transformers stores
    # value_states = key_states, vLLM 0.33 gemma4.py loads K into both slots): bf16 bytes a token
    spec = resolve_model(str(CORPUS / "nvidia--Gemma-4-31B-IT-NVFP4.json"))
    assert CacheModel(spec, dtype("bf16")).kv_bytes_per_token == 50 * 16 * 512 * 2 + 10 * 4 * 1024 * 2 == 901_120
    full = [layer for layer in spec.layer_specs if layer.kind == "full"]
    assert {(layer.kv_heads, layer.head_dim, layer.v_head_dim) for layer in full} == {(4, 512, 512)}



def test_an_unknown_tower_keeps_an_engine_budget_refused_even_with_the_checkpoints_bytes(cli, tmp_path):
    # the checkpoint's total gives the static engine its weights, but not what vLLM's budget needs of the tower (its
    # encoder profile, its split over the GPUs): with an index beside the config, vLLM still says cannot judge
    (tmp_path / "config.json").write_text((CORPUS / "nvidia--Gemma-4-31B-IT-NVFP4.json").read_text())
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 20 * 10**9}}))
    code, out, err = cli("estimate", tmp_path, "--gpu", "h100", "--engine", "static", "--seq", "8K", "--json")
    assert code == 0 and json.loads(out)["weights_bytes"] == 20 * 10**9
    code, out, err = cli("estimate", tmp_path, "--gpu", "h100", "--engine", "vllm", "--seq", "8K")
    assert code == 3 and "weights are unknown" in err and "gemma4_vision" in err


# DeepSeek-V4: transformers 5.24 keeps its compressed attention in a DynamicCache (no StaticCache for it), measured
# on `meta` after one prefill of N tokens by scripts/make_deepseek_v4_truth.py, at lengths around the window (128)
# and the compression boundaries (4, 128) and at 8K / 32K
V4_TRUTH = json.loads((DATA / "transformers_truth_deepseek_v4.json").read_text())["configs"]


@pytest.mark.parametrize("name", sorted(V4_TRUTH))
def test_deepseek_v4_compressed_cache_is_what_transformers_keeps_at_every_length(name):
    spec = resolve_model(str(CORPUS / name))
    truth = V4_TRUTH[name]
    cache = CacheModel(spec, dtype("bf16"))
    assert {n: cache.footprint(int(n), 1).kv_bytes for n in truth["cache_bytes_at_tokens"]} == \
        truth["cache_bytes_at_tokens"]
    assert spec.params == truth["params_total"]
    assert spec.count("compressed_indexed") == truth["layer_types"]["compressed_sparse_attention"]


def test_deepseek_v4_flash_by_hand_at_32k():
    # 43 layers, each a window of 127 tokens (DynamicSlidingWindowLayer keeps window - 1) of K and V, 512 wide; 21
    # CSA layers add 32768 / 4 entries of 512 + 128 (indexer key) and the overlap of 2 x 4 x 640; 20 HCA layers add
    # 32768 / 128 entries of 512; bf16. The same file as SGLang spells it (model_type deepseek_ref) reads the same
    expected = (43 * 2 * 127 * 512 + 21 * (8192 * 640 + 2 * 4 * 640) + 20 * 256 * 512) * 2
    for name in ("nvidia--DeepSeek-V4-Flash-NVFP4.json", "sgl-project--DeepSeek-V4-Flash-FP8.json"):
        spec = resolve_model(str(CORPUS / name))
        assert CacheModel(spec, dtype("bf16")).footprint(32768, 1).kv_bytes == expected == 236_843_008


def test_engines_refuse_deepseek_v4_compressed_layers_by_name(cli):
    v4 = CORPUS / "nvidia--DeepSeek-V4-Pro-NVFP4.json"
    for engine in ("vllm", "sglang", "trtllm"):
        code, out, err = cli("estimate", v4, "--seq", "8K", "--engine", engine, "--kv-cache-memory", "40GiB")
        assert code == 3 and "'compressed" in err, (engine, err)


@pytest.mark.parametrize("change, key", [
    ({"compress_ratios": [0, 0] + [8, 128] * 20 + [8, 0]}, "compress_ratios"),  # a ratio transformers does not map
    ({"compress_ratios": [0, 4, 128]}, "compress_ratios"),  # not one per layer
    ({"num_key_value_heads": 2, "num_attention_heads": 64}, "num_key_value_heads"),
    ({"compress_rates": {"compressed_sparse_attention": 4, "lightning": 2}}, "compress_rates"),
])
def test_deepseek_v4_spellings_kvplan_does_not_model_are_refused_by_key(change, key):
    from kvplan.core.errors import KvplanError
    from kvplan.model.hf_config import spec_mapping_from_config

    raw = json.loads((CORPUS / "nvidia--DeepSeek-V4-Flash-NVFP4.json").read_text())
    raw.update(change)
    with pytest.raises(KvplanError) as err:
        spec_mapping_from_config(raw, name="m", where="cfg")
    assert err.value.where.endswith(key), err.value.one_line()


def test_fitting_deepseek_v4_asks_for_the_most_it_holds_on_the_way():
    # at 128 tokens transformers holds less than at 127 (each HCA layer's open window of 127 tokens drained into one
    # entry): the static engine's fit and longest context use the peak, so a sequence is never admitted at a length
    # it could not have grown through
    spec = resolve_model(str(CORPUS / "nvidia--DeepSeek-V4-Flash-NVFP4.json"))
    cache = CacheModel(spec, dtype("bf16"))
    assert cache.footprint(128).kv_bytes < cache.footprint(127).kv_bytes
    assert cache.max_rank_footprint(128).kv_bytes == cache.footprint(127).kv_bytes
    assert cache.max_rank_footprint(32768).kv_bytes == cache.footprint(32767).kv_bytes > cache.footprint(32768).kv_bytes


def test_minimax_m3_index_keys_are_kept_on_its_sparse_layers():
    # 60 layers of 4 KV heads x (128 K + 128 V); the 57 that sparse_attention_freq marks also keep the lightning
    # indexer's key of sparse_index_dim 128 (transformers 5.24 MiniMaxM3VLSparseStaticCacheLayer idx_keys
    # [1, 1, 8192, 128] on layers 3-59), bf16. The file in MiniMax's own spelling (model_type minimax_m3) reads the same
    for name in ("nvidia--MiniMax-M3-NVFP4.json", "MiniMaxAI--MiniMax-M3.json"):
        spec = resolve_model(str(CORPUS / name))
        assert spec.count("full_indexed") == 57 and spec.count("full") == 3
        assert CacheModel(spec, dtype("bf16")).kv_bytes_per_token == 60 * 4 * 256 * 2 + 57 * 128 * 2 == 137_472
    assert 137_472 * 8192 == TRUTH["nvidia--MiniMax-M3-NVFP4.json"]["kv_bytes"]


@pytest.mark.parametrize("change, key", [
    ({"sparse_topk_tokens": 64}, "sparse_attention_config.sparse_topk_tokens"),  # a key kvplan does not read
    ({"use_sparse_attention": False}, "sparse_attention_config.use_sparse_attention"),
    ({"sparse_disable_index_value": [0] * 60}, "sparse_attention_config.sparse_disable_index_value"),
])
def test_minimax_m3_sparse_settings_kvplan_does_not_model_are_refused_by_key(change, key):
    from kvplan.model.hf_config import spec_mapping_from_config

    raw = json.loads((CORPUS / "MiniMaxAI--MiniMax-M3.json").read_text())
    raw["sparse_attention_config"].update(change)
    with pytest.raises(UnsupportedError) as err:
        spec_mapping_from_config(raw, name="m", where="cfg")
    assert err.value.where.endswith(key), err.value.one_line()


def test_engines_refuse_minimax_m3_index_keys_by_name(cli):
    m3 = CORPUS / "MiniMaxAI--MiniMax-M3.json"
    for engine in ("vllm", "sglang", "trtllm"):
        code, out, err = cli("estimate", m3, "--seq", "8K", "--engine", engine, "--kv-cache-memory", "40GiB")
        assert code == 3 and "full_indexed" in err, (engine, err)


def test_hunyuan_a13b_reads_its_per_layer_moe_lists():
    # moe_intermediate_size, moe_topk and num_shared_expert are lists, one equal value per layer. Truth: transformers
    # 5.24's native HunYuanMoEV1ForCausalLM built on `meta` from this file's fields (vocab, hidden, intermediate 3072,
    # 32 layers, 32 heads, 8 KV heads, head_dim 128, 64 experts, top-8, tied embeddings): 80,393,183,232 parameters;
    # its StaticCache at 8192 tokens in bf16: 1,073,741,824 B = 32 layers x 2 x 8 heads x 128 x 2 B x 8192
    spec = resolve_model(str(CORPUS / "tencent--Hunyuan-A13B.json"))
    assert spec.params == 80_393_183_232
    assert CacheModel(spec, dtype("bf16")).footprint(8192, 1).kv_bytes == 32 * 2 * 8 * 128 * 2 * 8192 == 1_073_741_824


@pytest.mark.parametrize("change, key", [
    ({"moe_intermediate_size": [3072] * 31 + [2048]}, "moe_intermediate_size"),  # differing by layer
    ({"use_cla": True}, "use_cla"),  # cross-layer KV sharing
])
def test_hunyuan_settings_kvplan_does_not_model_are_refused_by_key(change, key):
    from kvplan.model.hf_config import spec_mapping_from_config

    raw = json.loads((CORPUS / "tencent--Hunyuan-A13B.json").read_text())
    raw.update(change)
    with pytest.raises(UnsupportedError) as err:
        spec_mapping_from_config(raw, name="m", where="cfg")
    assert err.value.where.endswith(key), err.value.one_line()
