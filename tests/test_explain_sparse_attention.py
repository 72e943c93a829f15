"""`kvplan explain` names the attention a model has, layer kind by layer kind (each layer says it: LayerSpec.
attention_label), and offers the what-ifs that apply to it: DeepSeek-V4's compressed attention and GLM-5's MLA with
DeepSeek Sparse Attention's index keys were labelled "as configured (GQA)" with no what-if at all. The figures are
checked against hand arithmetic from the models' config.json (tests/data/hf_configs_2026)."""

import json

import pytest

SEQ = 8192


def _explain(cli, model: str) -> dict:
    code, out, err = cli("explain", model, "--seq", str(SEQ), "--json")
    assert code == 0, err
    return json.loads(out)


def _what_ifs(doc: dict) -> dict:
    return {w["name"]: w for w in doc["what_ifs"]}


def test_glm_5_is_mla_with_dsa_index_keys_and_gets_the_kv_dtype_what_ifs(cli):
    # zai-org/GLM-5 config.json: 78 layers, kv_lora_rank 512, qk_rope_head_dim 64, index_head_dim 128; transformers
    # keeps the latent and the indexer key per token in the cache dtype: (512 + 64 + 128) x 2 B x 78 layers
    doc = _explain(cli, "glm-5")
    first = doc["what_ifs"][0]
    assert first["name"] == "as configured (MLA + DSA index keys)"
    per_token = 78 * (512 + 64 + 128) * 2
    assert first["kv_bytes_per_token"] == per_token == 109_824
    assert first["cache_bytes"] == per_token * SEQ
    w = _what_ifs(doc)
    assert w["KV fp8_e4m3"]["kv_bytes_per_token"] == 78 * 704 * 1
    assert w["KV int4"]["kv_bytes_per_token"] == 78 * 704 // 2
    assert w["KV fp8_e4m3"]["cache_bytes"] == 78 * 704 * SEQ
    # the KV-head what-ifs do not apply to a latent with an indexer beside it: not offered
    assert not {"MHA", "MQA", "MLA"} & set(w)


def _v4_cache_elements(seq: int) -> int:
    """DeepSeek-V4-Flash (sgl-project/DeepSeek-V4-Flash-FP8 config.json): head_dim 512, sliding_window 128,
    index_head_dim 128, compress_ratios [0, 0, then 4 and 128 alternating]: 2 window-only layers, 21 CSA (ratio 4,
    indexed), 20 HCA (ratio 128). transformers 5.24's V4 caches keep window - 1 tokens' K and V, one entry per ratio
    tokens (CSA: with its index key), the open window's remainder, and CSA's overlap of 2 x ratio once full."""
    d, index, window = 512, 128, 128
    kept = 2 * min(seq, window - 1) * d
    hca = kept + (seq // 128) * d + 2 * (seq % 128) * d
    csa = kept + (seq // 4) * (d + index) + 4 * (seq % 4) * (d + index) + 2 * 4 * (d + index)
    return 2 * kept + 20 * hca + 21 * csa


def test_deepseek_v4_names_its_compressed_attention_and_gets_the_kv_dtype_what_ifs(cli):
    doc = _explain(cli, "deepseek-v4-flash-fp8")
    first = doc["what_ifs"][0]
    assert first["name"] == "as configured (sliding window, CSA 1/4 + index keys, HCA 1/128)"
    assert "GQA" not in first["name"]
    # what each token adds at first: the window's K and V, 2 x 512 x 2 B, in each of the 43 layers
    assert first["kv_bytes_per_token"] == 43 * 2 * 512 * 2 == 88_064
    assert first["cache_bytes"] == _v4_cache_elements(SEQ) * 2 == 67_760_128
    w = _what_ifs(doc)
    assert w["KV fp8_e4m3"]["cache_bytes"] == _v4_cache_elements(SEQ)
    assert w["KV fp8_e4m3"]["kv_bytes_per_token"] == 43 * 2 * 512
    assert not {"MHA", "MQA", "MLA"} & set(w)


@pytest.mark.parametrize("model, label", [
    ("llama-3.1-8b", "GQA"),  # 8 KV heads for 32 query heads
    ("deepseek-v3", "MLA"),
    # MiniMax-M3: 3 plain full-attention layers and 57 with the lightning indexer's key (4 KV heads for 64 queries)
    ("minimax-m3", "GQA, GQA + index keys"),
])
def test_the_other_attention_kinds_keep_their_names(cli, model, label):
    assert _explain(cli, model)["what_ifs"][0]["name"] == f"as configured ({label})"
