"""Parameter counts from config.json (kvplan/model/params.py): exact against transformers' own count for every
shared config (tests/data/transformers_truth.json, no torch needed), and the conventions behind them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.model import hf_config
from kvplan.model.catalog import resolve_model
from kvplan.core.errors import UnsupportedError
from kvplan.core.spec import spec_from_mapping
from kvplan.model.hf_config import spec_mapping_from_config
from kvplan.model.params import EMBEDDING, EXPERT, LM_HEAD, count_params

DATA = Path(__file__).parent / "data"
SHARED = sorted((DATA / "hf_configs").glob("*.json"))
TRUTH = json.loads((DATA / "transformers_truth.json").read_text())["configs"]
BUILT = [p for p in SHARED if TRUTH[p.name]["built"]]


def _count(raw: dict):
    mapping = hf_config.spec_mapping_from_config(raw, name="m", where="config.json")
    return count_params(raw, hf_config.text_config(raw), mapping)


def _raw(name: str, folder: str = "hf_configs") -> dict:
    return json.loads((DATA / folder / name).read_text())


@pytest.mark.parametrize("path", BUILT, ids=[p.name for p in BUILT])
def test_params_equal_transformers(path):
    expected = TRUTH[path.name]["params_total"]
    spec = resolve_model(str(path))
    # the issue asks for 0.5%; every shared config transformers builds is in fact exact
    assert spec.params == expected, f"{spec.params:,} vs {expected:,} ({(spec.params - expected) / expected:+.4%})"


@pytest.mark.parametrize("path", SHARED, ids=[p.name for p in SHARED])
def test_inventory_agrees_with_transformers_part_by_part(path):
    """The tensor inventory, against transformers' own build where it builds the model: the total, the output head
    present exactly when transformers does not tie it, the token embedding vocab x hidden by hand, and a dense
    model's every parameter active."""
    raw = _raw(path.name)
    counted = _count(raw)
    text = hf_config.text_config(raw)
    truth = TRUTH[path.name]
    if truth["built"]:
        assert counted.total == truth["params_total"]
        heads = [t for t in counted.tensors if t.kind == LM_HEAD]
        assert bool(heads) == (not truth["tied_embeddings"]), path.name
    vocab, hidden = text.get("vocab_size"), text.get("hidden_size") or text.get("n_embd") or text.get("d_model")
    embeds = [t for t in counted.tensors if t.kind == EMBEDDING and t.name.endswith(("embed_tokens.weight", "wte.weight"))
              or t.name == "embed_tokens.weight"]
    if vocab and hidden and embeds:
        assert embeds[0].shape == (vocab, hidden)
    if not any(t.kind == EXPERT for t in counted.tensors):
        assert counted.active == counted.total


def test_tied_embeddings_are_counted_once():
    # Gemma-2 and GPT-2 tie the output head (their config classes' default); Llama does not
    for name in ("gemma-2-9b.json", "gpt2.json"):
        counted = _count(_raw(name))
        assert not [t for t in counted.tensors if t.kind == LM_HEAD]
        assert TRUTH[name]["tied_embeddings"] is True
    llama = _count(_raw("llama-3.1-8b.json"))
    assert [t.shape for t in llama.tensors if t.kind == LM_HEAD] == [(128256, 4096)]
    # GPT-2: 50257 x 768 token embeddings + 1024 x 768 positions, once each
    gpt2 = _count(_raw("gpt2.json"))
    assert sum(t.numel for t in gpt2.tensors if t.kind == EMBEDDING) == 50257 * 768 + 1024 * 768


def test_moe_active_parameters():
    # DeepSeek-V3: "671B total, 37B activated" (the paper); Qwen3-235B-A22B and Qwen3-30B-A3B by their names
    ds = resolve_model(str(DATA / "hf_configs" / "deepseek-v3.json"))
    assert ds.params == 671_026_404_352 and abs(ds.active_params - 37.5e9) < 0.5e9
    qwen = resolve_model(str(DATA / "hf_configs" / "qwen3-235b-a22b.json"))
    assert abs(qwen.active_params - 22e9) < 0.5e9
    qwen_small = resolve_model(str(DATA / "extra_configs" / "qwen3-30b-a3b-instruct-2507.json"))
    assert abs(qwen_small.active_params - 3.3e9) < 0.1e9
    # Mixtral 8x7B, by hand: each token uses 2 of 8 experts, so 6 x (3 x 4096 x 14336) per layer sit idle
    mixtral = resolve_model(str(DATA / "hf_configs" / "mixtral-8x7b-v0.1.json"))
    assert mixtral.active_params == mixtral.params - 32 * 6 * 3 * 4096 * 14336 == 12_879_925_248


def test_deepseek_mtp_layer_is_not_counted():
    raw = _raw("deepseek-v3.json")
    assert raw["num_nextn_predict_layers"] == 1
    spec = resolve_model(str(DATA / "hf_configs" / "deepseek-v3.json"))
    assert spec.params == 671_026_404_352  # what transformers builds; the Hub's 685B includes the MTP layer
    assert "multi-token-prediction" in spec.notes


def test_nemotron_h_moe_layers_are_counted():
    """Nemotron-3-Nano: the 23 'E' layers of hybrid_override_pattern are MoE blocks (128 routed experts of
    up/down 2688 x 1856, a router, a shared expert of width 3712); leaving them out gave 1.7B, not 31.6B."""
    counted = _count(_raw("nemotron-3-nano-30b-a3b.json"))
    experts = [t for t in counted.tensors if t.kind == EXPERT]
    assert sum(t.numel for t in experts) == 23 * 128 * 2 * 2688 * 1856
    assert counted.total == TRUTH["nemotron-3-nano-30b-a3b.json"]["params_total"] == 31_577_937_344


def test_multimodal_parts_are_separate_and_in_the_total():
    spec = resolve_model(str(DATA / "hf_configs" / "gemma-3-27b.json"))
    entry = TRUTH["gemma-3-27b.json"]
    assert spec.vision_params == entry["params_vision"] + entry["params_projector"] == 423_060_336
    assert spec.params == entry["params_total"]  # text and vision together
    text_only = dict(_raw("gemma-3-27b.json"))
    del text_only["vision_config"]
    assert _count(text_only).total == spec.params - spec.vision_params


def test_an_unknown_vision_tower_leaves_the_weights_unknown_not_the_text_model():
    raw = _raw("gemma-3-27b.json")
    raw["vision_config"] = dict(raw["vision_config"], model_type="clip_vision_model")
    counted = _count(raw)
    assert "vision_config.model_type" in counted.unknown and "clip_vision_model" in counted.unknown
    text_only = {k: v for k, v in _raw("gemma-3-27b.json").items() if k != "vision_config"}
    assert counted.total == _count(text_only).total and counted.vision == 0
    # the whole model is refused where its weights are needed (a GPU), named; the cache is not
    spec = spec_from_mapping(spec_mapping_from_config(raw, name="g", where="cfg"))
    with pytest.raises(UnsupportedError) as err:
        spec.require_known_weights()
    assert "weights are unknown" in err.value.what and "clip_vision_model" in err.value.what


def test_untied_default_is_said_when_unknown():
    raw = {"model_type": "somenewlm", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
           "intermediate_size": 128, "vocab_size": 100}
    counted = _count(raw)
    assert any("tied" in n for n in counted.notes)
    assert counted.total == 2 * 100 * 64 + 64 + 2 * (2 * 64 + 4 * 64 * 64 + 3 * 64 * 128)


# ------------------------------------------------------------------ Llama 4 and the vision towers of the vLLM logs

EXTRA_TRUTH = json.loads((DATA / "extra_configs" / "truth" / "transformers_truth.json").read_text())["configs"]


@pytest.mark.parametrize("name,active", [
    # per token: attention and norms of all 48 layers, the shared expert and 1 of the routed experts of each MoE
    # layer (top-1), every dense MLP, embeddings, head, and the vision tower
    ("llama-4-scout-17b-16e-instruct.json", 18_044_827_136),
    ("llama-4-maverick-17b-128e-instruct.json", 18_056_623_616),
])
def test_llama4_params_equal_transformers(name, active):
    """Scout: MoE on every layer (16 experts of 8192, a shared expert, a router); Maverick: interleave_moe_layer_step
    2, so MoE (128 experts) on the odd layers and a dense MLP of intermediate_size_mlp (16384) on the even ones."""
    spec = resolve_model(str(DATA / "extra_configs" / name))
    entry = EXTRA_TRUTH[name]
    assert spec.params == entry["params_total"]  # transformers 5.24 on meta: 108,641,793,536 and 401,583,781,376
    assert spec.vision_params == entry["params_vision"] + entry["params_projector"] == 871_932_416
    assert spec.active_params == active
    counted = _count(_raw(name, "extra_configs"))
    moe_layers = sum(t.count for t in counted.tensors if t.name == "feed_forward.router.weight")
    assert moe_layers == (48 if "scout" in name else 24)


def test_llava_next_projector_and_siglip_head():
    """granite-vision-3.3-2b: SigLIP (27 layers, 1152) with its pooling head (vision_use_head is SiglipVisionConfig's
    default, true, and vLLM builds it too), LLaVA-NeXT's projector over 4 feature layers and image_newline.
    transformers 5.24 on meta counts 3,076,068,416: vision tower 428,225,600 + projector 13,635,584, and an untied
    lm_head of 49156 x 2048 because LlavaNextConfig's own tie_word_embeddings is false. The text config ties it
    (GraniteForCausalLM, tie_word_embeddings true), vLLM ties it, and vLLM's 'Model loading took 5.54 GiB' is the
    tied count in bf16 (2,975,396,928 x 2 B = 5.542 GiB; untied would be 5.730)."""
    spec = resolve_model(str(DATA / "vllm_models" / "ibm-granite--granite-vision-3.3-2b"))
    assert spec.params == 3_076_068_416 - 49156 * 2048 == 2_975_396_928
    assert spec.vision_params == 428_225_600 + 13_635_584 + 2048  # + image_newline, which the peer files as text
    assert spec.tie_word_embeddings is True
    assert round(spec.params * 2 / 2**30, 2) == 5.54


def test_moonvit_tensors_are_those_vllm_loaded():
    """Kimi-VL-A3B (MoonViT, remote code): vLLM 0.19.0 logs every vision weight it loads with its shape; their sum
    is kvplan's vision_params, tensor for tensor."""
    import math
    import re

    log = next((DATA / "vllm_logs" / "raw").glob("moonshotai-kimi-vl-a3b-i--*.log")).read_text()
    loaded = {m.group(1): tuple(int(x) for x in m.group(2).split(","))
              for m in re.finditer(r"Loaded weight (\S+) with shape torch\.Size\(\[([0-9, ]*)\]\)", log)}
    assert len(loaded) == 27 * 12 + 11
    counted = _count(_raw("moonshotai--Kimi-VL-A3B-Instruct/config.json", "vllm_models"))
    vision = {t.name: t for t in counted.tensors if t.kind == "vision"}
    for name, shape in loaded.items():
        key = re.sub(r"\.blocks\.\d+\.", ".blocks.", name)
        assert vision[key].shape == shape, name
    assert sum(math.prod(s) for s in loaded.values()) == counted.vision == 447_545_840
