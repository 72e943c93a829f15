"""Every config.json key that shapes attention, the cache or the state is read or refused by name
(kvplan/model/config_keys.py): real configs mutated with a key kvplan does not read for their model_type exit 3
naming it, and the families whose keys were read and silently wrong before are now refused or modelled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.core.errors import UnsupportedError
from kvplan.model.config_keys import BASE, READ, shapes_cache, unread_keys
from kvplan.model.hf_config import spec_mapping_from_config, text_config

DATA = Path(__file__).parent / "data"
PUBLIC = DATA / "public_models"
KNOWN = sorted([*(DATA / "hf_configs").glob("*.json"), *(DATA / "extra_configs").glob("*.json"),
                *(p / "config.json" for p in sorted(PUBLIC.iterdir()) if p.is_dir())])
# keys of 2025-2026 architectures, each of which changes what a layer keeps (the value is only there to be set)
NEW_KEYS = {
    "compress_ratios": [4, 128],  # DeepSeek-V4 compressed attention
    "index_head_dim": 128,  # DSA lightning indexer (DeepSeek-V3.2, GLM-5)
    "index_topk_pattern": "FSS",
    "linear_attn_config": {"kda_layers": [1, 2]},  # Kimi-Linear KDA
    "global_head_dim": 512,  # Gemma 4 global layers
    "num_global_key_value_heads": 2,
    "attention_k_eq_v": True,
    "swa_num_key_value_heads": 8,  # MiMo-V2 per-layer heads
    "num_kv_shared_layers": 4,
    "attention_sink_size": 4,
    "ssm_state_dtype": "float32",
}


def _raw(path: Path) -> dict:
    return json.loads(path.read_text())


def _mutated(raw: dict, key: str, value) -> dict:
    out = json.loads(json.dumps(raw))
    target = out.get("text_config") if isinstance(out.get("text_config"), dict) else out
    target[key] = value
    return out


def _readable(path: Path) -> bool:
    try:
        spec_mapping_from_config(_raw(path), name="m", where=str(path))
    except UnsupportedError:
        return False
    return True


READABLE = [p for p in KNOWN if _readable(p)]


def test_every_new_key_is_one_that_shapes_the_cache_and_plain_keys_are_not():
    assert all(shapes_cache(k) for k in NEW_KEYS)
    for plain in ("hidden_size", "vocab_size", "image_token_index", "rope_theta", "attention_dropout", "bos_token_id",
                  "output_hidden_states", "intermediate_size"):
        assert not shapes_cache(plain), plain


@pytest.mark.parametrize("path", READABLE, ids=[p.parent.name if p.name == "config.json" else p.name for p in READABLE])
def test_a_known_config_with_an_unread_cache_key_is_refused_naming_it(path):
    raw = _raw(path)
    model_type = str(text_config(raw).get("model_type") or raw.get("model_type"))
    tried = 0
    for key, value in NEW_KEYS.items():
        if key in BASE | READ.get(model_type, frozenset()):
            continue
        tried += 1
        with pytest.raises(UnsupportedError) as err:
            spec_mapping_from_config(_mutated(raw, key, value), name="m", where="cfg")
        assert key in err.value.one_line(), err.value.one_line()
        # off is not on: null, false and 0 leave the feature out, as transformers' config classes read them
        spec_mapping_from_config(_mutated(raw, key, None), name="m", where="cfg")
    assert tried >= 5


def test_the_cli_exits_3_naming_the_key(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_mutated(_raw(DATA / "hf_configs" / "llama-3.1-8b.json"), "compress_ratios", [4])))
    code, out, err = cli("estimate", path, "--seq", "8K", "--json")
    assert code == 3 and "compress_ratios" in json.loads(out)["error"]["where"]


def test_an_unknown_model_type_with_a_cache_key_is_refused_and_a_plain_one_is_read():
    plain = {"model_type": "foo_bar", "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
             "head_dim": 64, "hidden_size": 512, "intermediate_size": 1024, "vocab_size": 1000}
    assert spec_mapping_from_config(plain, name="m", where="cfg")["kv_heads"] == 2
    with pytest.raises(UnsupportedError) as err:
        spec_mapping_from_config(dict(plain, sliding_window=4096), name="m", where="cfg")
    assert "sliding_window" in err.value.one_line() and "does not know" in err.value.one_line()


def test_deepseek_v4_compressed_attention_is_read_not_as_sliding_layers():
    # before: 43 sliding-128 layers, about 20x too small at 32K (issue 25); now every layer is a compressed kind
    # with its ratio (tests/test_models_2026.py checks the bytes against transformers)
    for name in ("deepseek-ai--DeepSeek-V4-Flash", "deepseek-ai--DeepSeek-V4-Pro"):
        raw = _raw(PUBLIC / name / "config.json")
        assert unread_keys(text_config(raw), "deepseek_v4") == []
        spec = spec_mapping_from_config(raw, name="m", where="cfg")
        ratios = spec["layout"]["compress_ratios"]
        assert ratios == raw["compress_ratios"][:raw["num_hidden_layers"]]
        assert spec["layout"]["per_layer"] == ["compressed_indexed" if r == 4 else "compressed" for r in ratios]
    # the same keys on a model_type that does not read them are still refused by name
    raw = _raw(PUBLIC / "deepseek-ai--DeepSeek-V4-Flash" / "config.json")
    raw["model_type"] = "deepseek_v3"
    with pytest.raises(UnsupportedError) as err:
        spec_mapping_from_config(raw, name="m", where="cfg")
    assert "compress_ratios" in err.value.one_line()


def test_mla_without_head_dim_is_read_whatever_hidden_over_heads_gives():
    # GLM-4.7-Flash and Kimi-K3 carry no head_dim and heads that do not divide the hidden size; MLA needs neither
    raw = _raw(DATA / "hf_configs" / "deepseek-v3.json")
    raw.update(num_attention_heads=96, num_key_value_heads=96)
    assert 7168 % 96 and "head_dim" not in raw
    spec = spec_mapping_from_config(raw, name="m", where="cfg")
    assert spec["head_dim"] == 128 + 64 and spec["mla"] == {"kv_lora_rank": 512, "qk_rope_head_dim": 64,
                                                             "q_lora_rank": 1536}


def test_qwen3_6_recurrent_state_is_kept_in_its_mamba_ssm_dtype():
    # vLLM 0.33 (model_executor/models/config.py Qwen3_5ForConditionalGenerationConfig) keeps the gated-delta-net
    # state in the config's mamba_ssm_dtype, float32 here; transformers allocates the recurrent state
    # [1, 48, 128, 128] float32 per linear-attention layer for this file (hf_peer on meta): 3,145,728 B
    raw = _raw(PUBLIC / "nvidia--Qwen3.6-27B-NVFP4" / "config.json")
    assert raw["text_config"]["mamba_ssm_dtype"] == "float32"
    text = {k: v for k, v in raw.items() if k not in ("vision_config", "quantization_config")}
    spec = spec_mapping_from_config(text, name="m", where="cfg")
    assert spec["state"]["recurrent_shape"] == [48, 128, 128] and spec["state"]["recurrent_dtype"] == "float32"
    from kvplan.core.spec import spec_from_mapping

    state = next(layer for layer in spec_from_mapping(spec).layer_specs if layer.kind == "state")
    conv = 10240 * 3 * 2  # (2 x 16 x 128 + 48 x 128) channels, d_conv - 1 columns, bf16 (vLLM's conv state)
    assert state.state_bytes() == conv + 48 * 128 * 128 * 4
