"""Hugging Face config.json -> ModelSpec, following the conventions real config files use (docs/configs.md).

Each rule names the models it was seen in. What kvplan cannot interpret is refused with
UnsupportedError (exit 3) naming the fields, never guessed.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Mapping

from kvplan.core.dtypes import dtype as lookup_dtype
from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.model.config_keys import refuse_unread, text_config
from kvplan.model.params import count_params, moe_summary, mtp_layer_params, routed_expert_params
from kvplan.core.spec import (CHUNKED, COMPRESSED, COMPRESSED_INDEXED, FULL, INDEXED_FULL, INDEXED_MLA, MAX_DIM, MAX_HEADS,
                              MAX_LAYERS, MLA, NONE, SLIDING, STATE, WINDOWED_KINDS, ModelSpec, spec_from_mapping)
from kvplan.core.layers import KINDS
from kvplan.core.text import visible
from kvplan.core.units import shown
from kvplan.core import yamlio
from kvplan.model.weights import check_plausible, checkpoint_weight_bytes, modelopt_quant_config, NotModelled, quantized_weight_bytes
from kvplan.core.files import check_regular

# vLLM downcasts a float32 (or dtype-less) config to the platform's preferred 16-bit dtype: bf16 on every GPU
# from Ampere on (vllm/config/model.py _resolve_auto_dtype: supported_dtypes[0]; CudaPlatform lists bf16
# first where compute capability >= 8.0). kvplan does the same; on T4/V100 pass --kv-dtype fp16.
# model types whose real configs the test suite reads (tests/data); others are read by the common conventions,
# with a note saying so
TESTED_MODEL_TYPES = frozenset({
    "deepseek_v3", "falcon", "falcon_mamba", "gemma", "gemma2", "gemma3", "gemma3_text", "gpt2", "gpt_oss", "granite",
    "jamba", "kimi_vl", "llama", "llama4", "llama4_text", "llava_next", "mistral", "mistral3", "mixtral", "nemotron-nas",
    "nemotron_h", "phi", "phi3", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next",
    # 2025-2026, against transformers 5.24 (tests/test_models_2026.py)
    "qwen3_5_text", "qwen3_5_moe_text", "qwen3_vl_text", "qwen3_vl_moe_text", "minimax_m2", "ministral3", "olmo3",
    "laguna", "muse_glimmer_text", "smollm3", "glm4_moe", "glm4_moe_lite", "deepseek_v4", "deepseek_ref",
    "minimax_m3", "minimax_m3_vl", "gemma4_text", "glm_moe_dsa", "deepseek_v32", "hunyuan",
})
# model types with no attention at all: a fixed recurrent state per sequence
_PURE_MAMBA = {"mamba", "falcon_mamba", "mamba2"}
# families kvplan does not model; refusing beats a wrong number
_REFUSED_MODEL_TYPES = {"rwkv", "rwkv5", "rwkv6", "rwkv7", "retnet", "xlstm", "mllama", "whisper", "t5", "bart", "encoder-decoder"}
# fields whose presence changes the cache in ways kvplan does not (yet) model
_REFUSED_FIELDS = {
    "cross_attention_layers": "cross-attention layers over image tokens (Llama 3.2 Vision)",
    "kv_sharing_fraction": "KV sharing across layers",
    "num_kv_shared_layers": "KV sharing across layers (Gemma 3n)",
}


def _first(cfg: Mapping, *keys: str, default: Any = None) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return default


def _serving_dtype(cfg: Mapping, model_type: str, where: str) -> tuple[str, str | None]:
    raw = _first(cfg, "torch_dtype", "dtype")
    if raw is None:
        return "bf16", "config.json names no dtype; served in bf16 as vLLM does for a float32 default on Ampere or newer"
    try:
        name = lookup_dtype(str(raw), what="dtype").name
    except InputError as err:
        key = "torch_dtype" if cfg.get("torch_dtype") is not None else "dtype"
        raise err.located(f"{where}: {key}") from None
    if name == "fp32":
        return "bf16", "config.json says float32; served in bf16 as vLLM does on Ampere or newer (--kv-dtype fp32 for the file's dtype)"
    return name, None


def _kv_heads(cfg: Mapping, heads: int) -> int:
    if cfg.get("multi_query") and not cfg.get("new_decoder_architecture"):
        return 1  # Falcon-7B style MQA: HF still fills num_kv_heads
    return int(_first(cfg, "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num",
                      "num_attention_groups", default=heads))


def _head_dim(cfg: Mapping, hidden: int, heads: int, where: str) -> int:
    explicit = _first(cfg, "head_dim", "attention_head_dim")
    if isinstance(explicit, int) and explicit > 0:
        return explicit
    if hidden % heads:
        raise UnsupportedError(f"hidden_size {hidden} is not divisible by num_attention_heads {heads} and there is no head_dim",
                               where=where)
    return hidden // heads


def _sliding_kinds(cfg: Mapping, model_type: str, layers: int) -> list[str] | None:
    """Per-layer full/sliding kinds from the sliding-window conventions, or None when all are full."""
    window = cfg.get("sliding_window")
    if not window or cfg.get("use_sliding_window") is False:
        return None  # Qwen2/2.5 carry sliding_window with use_sliding_window: false
    max_pos = cfg.get("max_position_embeddings")
    if isinstance(max_pos, int) and window >= max_pos:
        return None  # a window as long as the context never slides (Phi-3.5: 262144 > 131072)
    if model_type == "gemma2":
        return [SLIDING if i % 2 == 0 else FULL for i in range(layers)]  # even layers slide (transformers Gemma2)
    pattern = _first(cfg, "sliding_window_pattern", "_sliding_window_pattern")
    if isinstance(pattern, int) and pattern > 1:
        return [FULL if (i + 1) % pattern == 0 else SLIDING for i in range(layers)]  # Gemma-3: 5 local, 1 global
    if cfg.get("use_sliding_window") and isinstance(cfg.get("max_window_layers"), int):
        first = cfg["max_window_layers"]  # Qwen2 with sliding enabled: layers from max_window_layers on slide
        return [SLIDING if i >= first else FULL for i in range(layers)]
    return [SLIDING] * layers  # Mistral v0.1, Phi-3: every layer


# an MLA config's attention layers keep the latent (a layer the config leaves unnamed is full attention), and a DSA
# model's MLA layers that run the lightning indexer keep its key beside it: what each kind becomes, by table
_AS_LATENT: dict[str | None, str] = {FULL: MLA, None: MLA}
_WITH_INDEXER = {MLA: INDEXED_MLA}


# DeepSeek Sparse Attention models: MLA whose layers run the lightning indexer where indexer_types (or the
# index_topk_pattern / index_topk_freq schedule) says "full" (vLLM 0.33 models/deepseek_v2.py, transformers
# GlmMoeDsaConfig)
_DSA_MODEL_TYPES = frozenset({"deepseek_v32", "glm_moe_dsa"})

_LAYER_TYPE_KINDS = {
    "full_attention": FULL, "attention": FULL, "global": FULL,
    # GLM-5.2 names its layers so; every one is MLA, the indexer pattern says which keep index keys (_dsa_kinds)
    "deepseek_sparse_attention": FULL, "indexed_attention": FULL,
    "sliding_attention": SLIDING, "local": SLIDING, "chunked_attention": CHUNKED,
    "linear_attention": STATE, "mamba": STATE, "mamba2": STATE,
}


def _layer_types(values: list, where: str) -> list[str]:
    kinds = []
    for value in values:
        kind = _LAYER_TYPE_KINDS.get(str(value).lower())
        if kind is None:
            raise UnsupportedError(f"layer type {value!r} is not modelled", where=where,
                                   hint="kvplan knows " + ", ".join(k for k, v in _LAYER_TYPE_KINDS.items() if v))
        kinds.append(kind)
    return kinds


# DeepSeek-V4: transformers DeepseekV4Config (5.24) names its attention layers by type; the legacy per-layer
# compress_ratios map 0 / 4 / 128 to them, and compress_rates gives each compressed type its ratio
COMPRESSED_MODEL_TYPES = frozenset({"deepseek_v4", "deepseek_ref"})
_V4_CSA, _V4_HCA, _V4_SWA = "compressed_sparse_attention", "heavily_compressed_attention", "sliding_attention"
_V4_TYPE_OF_RATIO = {0: _V4_SWA, 4: _V4_CSA, 128: _V4_HCA}


def _compressed_kinds(cfg: Mapping, layers: int, spec: dict, layout: dict, where: str) -> list[str]:
    """DeepSeek-V4's layers as transformers 5.24 DeepseekV4Config.__post_init__ types them: layer_types when listed,
    else the legacy compress_ratios (one per layer, the MTP layers' after them, as vLLM 0.33
    transformers_utils/deepseek_v4_utils.py get_compress_ratios reads them), else two heavily compressed layers then
    CSA / HCA in turn. Each compressed type's ratio comes from compress_rates (4 and 128 by default; the legacy
    compress_rate_csa / compress_rate_hca override). Sets the window, the ratios and the indexer's key width."""
    rates = {_V4_CSA: 4, _V4_HCA: 128}
    given = cfg.get("compress_rates")
    if given is not None:
        if not isinstance(given, Mapping) or set(given) - {_V4_CSA, _V4_HCA}:
            raise UnsupportedError(f"compress_rates keys other than {_V4_CSA} and {_V4_HCA} are not modelled",
                                   where=f"{where}: compress_rates")
        rates.update(given)
    for key, kind in (("compress_rate_csa", _V4_CSA), ("compress_rate_hca", _V4_HCA)):
        if cfg.get(key) is not None:
            rates[kind] = cfg[key]
    for kind, rate in rates.items():
        if not isinstance(rate, int) or isinstance(rate, bool) or not 1 <= rate <= MAX_DIM:
            raise InputError(f"the {kind} rate must be a whole number of at least 1, got {rate!r}",
                             where=f"{where}: compress_rates")
    types = cfg.get("layer_types")
    ratios = cfg.get("compress_ratios")
    if types is None and ratios is not None:
        mtp = int(cfg.get("num_nextn_predict_layers") or 0)
        if not isinstance(ratios, list) or len(ratios) not in (layers, layers + mtp):
            raise InputError(f"must list one ratio for each of the {layers} layers (and the {mtp} MTP layers after them)",
                             where=f"{where}: compress_ratios")
        unknown = sorted({repr(r) for r in ratios} - {repr(r) for r in _V4_TYPE_OF_RATIO})
        if unknown:
            raise UnsupportedError(f"compression ratio {unknown[0]} is not modelled (transformers maps 0, 4 and 128)",
                                   where=f"{where}: compress_ratios")
        types = [_V4_TYPE_OF_RATIO[r] for r in ratios[:layers]]
    elif types is None:
        types = [_V4_HCA] * min(layers, 2) + [_V4_CSA if i % 2 else _V4_HCA for i in range(max(layers - 2, 0))]
    if not isinstance(types, list) or len(types) != layers or set(map(str, types)) - {_V4_CSA, _V4_HCA, _V4_SWA}:
        raise UnsupportedError(f"layer_types must give {_V4_CSA}, {_V4_HCA} or {_V4_SWA} for each of the {layers} "
                               "layers", where=f"{where}: layer_types")
    window = cfg.get("sliding_window", 128)  # DeepseekV4Config's default
    index_dim = cfg.get("index_head_dim", 128)
    for key, value in (("sliding_window", window), ("index_head_dim", index_dim)):
        if not isinstance(value, int) or isinstance(value, bool) or not 2 <= value <= MAX_DIM:
            raise InputError(f"must be a whole number of at least 2, got {value!r}", where=f"{where}: {key}")
    if spec["kv_heads"] != 1:
        raise UnsupportedError(f"DeepSeek-V4 attention of {spec['kv_heads']} KV heads is not modelled (it keeps one)",
                               where=f"{where}: num_key_value_heads")
    spec["sliding_window"] = window
    spec["index_head_dim"] = index_dim
    layout["compress_ratios"] = [rates.get(t, 0) for t in types]
    return [COMPRESSED_INDEXED if t == _V4_CSA else COMPRESSED for t in types]


def _hunyuan_fields(cfg: dict, where: str) -> None:
    """Hunyuan-A13B's file (model_type hunyuan, remote code) in the spelling the readers below share. Its MoE settings
    are per layer (moe_intermediate_size, moe_topk, num_shared_expert: vLLM 0.33 models/hunyuan_v1.py indexes them
    by layer); one value on every layer is read as that value, different ones are refused naming the key. The shared
    MLP (use_mixed_mlp_moe) is intermediate_size x num_shared_expert wide (vLLM; transformers' HunYuanMoEV1Moe:
    intermediate_size), read as DeepSeek's shared experts of n x moe_intermediate_size where the two agree.
    Cross-layer KV sharing (use_cla) and MLA (use_mla) change the cache and are refused when on."""
    for key in ("use_cla", "use_mla"):
        if cfg.get(key):
            raise UnsupportedError(f"{key} is not modelled for Hunyuan", where=f"{where}: {key}",
                                   hint="kvplan refuses rather than guesses the cache")
    layers = cfg.get("num_hidden_layers")
    for key in ("moe_intermediate_size", "moe_topk", "num_shared_expert"):
        value = cfg.get(key)
        if isinstance(value, list):
            if len(value) != layers or len(set(map(repr, value))) != 1:
                raise UnsupportedError(f"{key} differing by layer is not modelled (one value on every layer is)",
                                       where=f"{where}: {key}")
            cfg[key] = value[0]
    cfg.setdefault("num_experts_per_tok", cfg.get("moe_topk"))
    if cfg.get("use_mixed_mlp_moe") and cfg.get("num_experts"):
        if cfg.get("moe_intermediate_size") != cfg.get("intermediate_size"):
            raise UnsupportedError("a shared MLP whose width differs from the experts' is not modelled",
                                   where=f"{where}: moe_intermediate_size")
        cfg["n_shared_experts"] = int(cfg.get("num_shared_expert") or 1)


MINIMAX_SPARSE_MODEL_TYPES = frozenset({"minimax_m3", "minimax_m3_vl"})
# sparse_attention_config keys that change no cache: the indexer's query heads, how many blocks of how many tokens it
# selects and how it scores them (transformers 5.24 MiniMaxM3VLTextConfig, vLLM 0.33 models/minimax_m3)
_MINIMAX_SPARSE_COMPUTE = {"sparse_num_index_heads", "sparse_topk_blocks", "sparse_block_size", "sparse_init_block",
                           "sparse_local_block", "sparse_score_type"}


def _minimax_sparse_kinds(cfg: Mapping, layers: int, spec: dict, where: str) -> list[str]:
    """MiniMax-M3's layers: full attention, plus the lightning indexer's key (index_head_dim = sparse_index_dim) on
    the layers sparse_attention_freq marks, as transformers 5.24 MiniMaxM3VLTextConfig.__post_init__ types them
    (layer_types "minimax_m3_sparse") and vLLM 0.33 models/minimax_m3 builds them. Every sparse layer must disable
    the index value (vLLM then builds no index value projection): an index value cache is not modelled."""
    section = cfg.get("sparse_attention_config") or {}
    here = f"{where}: sparse_attention_config"
    if not isinstance(section, Mapping):
        raise InputError("must be a mapping", where=here)
    unknown = sorted(set(section) - _MINIMAX_SPARSE_COMPUTE - {"sparse_attention_freq", "sparse_index_dim",
                                                              "use_sparse_attention", "sparse_disable_index_value"})
    if unknown:
        raise UnsupportedError(f"sparse_attention_config.{unknown[0]} is not read", where=f"{here}.{unknown[0]}",
                               hint="kvplan refuses rather than guesses the cache")
    if section.get("use_sparse_attention") is False:
        raise UnsupportedError("use_sparse_attention false is not modelled (transformers builds the sparse layers "
                               "anyway)", where=f"{here}.use_sparse_attention")
    types = cfg.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers or set(map(str, types)) - {"full_attention",
                                                                                          "minimax_m3_sparse"}:
            raise UnsupportedError(f"layer_types must give full_attention or minimax_m3_sparse for each of the "
                                   f"{layers} layers", where=f"{where}: layer_types")
        sparse = [t == "minimax_m3_sparse" for t in types]
    else:
        freq = section.get("sparse_attention_freq")
        if freq is None:
            sparse = [False] * layers  # MiniMaxM3VLTextConfig: every layer full_attention
        elif not isinstance(freq, list) or len(freq) != layers or set(freq) - {0, 1}:
            raise InputError(f"must give 0 or 1 for each of the {layers} layers", where=f"{here}.sparse_attention_freq")
        else:
            sparse = [bool(f) for f in freq]
    disabled = section.get("sparse_disable_index_value")
    if any(sparse) and (not isinstance(disabled, list) or len(disabled) != layers
                        or any(s and d != 1 for s, d in zip(sparse, disabled))):
        raise UnsupportedError("a sparse layer that keeps its index value is not modelled",
                               where=f"{here}.sparse_disable_index_value")
    dim = section.get("sparse_index_dim", 128)  # MiniMaxM3VLTextConfig.index_head_dim
    if not isinstance(dim, int) or isinstance(dim, bool) or not 1 <= dim <= MAX_DIM:
        raise InputError(f"must be a whole number of at least 1, got {dim!r}", where=f"{here}.sparse_index_dim")
    if any(sparse):
        spec["index_head_dim"] = dim
    return [INDEXED_FULL if s else FULL for s in sparse]


def _indexer_layers(cfg: Mapping, layers: int, where: str) -> list[bool]:
    """Which layers run their own lightning indexer (and so keep index keys); the others reuse the previous one's
    top-k. transformers GlmMoeDsaConfig.__post_init__ and vLLM 0.33 models/deepseek_v2.py agree: indexer_types
    ("full" / "shared") when listed, else index_topk_pattern (F / S per layer), else layer i runs it when
    max(i - index_skip_topk_offset + 1, 0) % index_topk_freq == 0 (offset 2, freq 1 by default: every layer)."""
    types = cfg.get("indexer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers or set(map(str, types)) - {"full", "shared"}:
            raise UnsupportedError(f"indexer_types must list 'full' or 'shared' for each of the {layers} layers",
                                   where=f"{where}: indexer_types")
        return [t == "full" for t in types]
    pattern = cfg.get("index_topk_pattern")
    if pattern is not None:
        if len(pattern) != layers or set(pattern) - {"F", "S"}:
            raise UnsupportedError(f"index_topk_pattern must give F or S for each of the {layers} layers",
                                   where=f"{where}: index_topk_pattern")
        return [c == "F" for c in pattern]
    freq = max(int(cfg.get("index_topk_freq") or 1), 1)
    offset = cfg.get("index_skip_topk_offset")
    offset = 2 if offset is None else int(offset)
    return [max(i - offset + 1, 0) % freq == 0 for i in range(layers)]


def _mamba_state(cfg: Mapping, hidden: int, model_type: str) -> dict:
    """Per-sequence state shapes as vLLM allocates them (MambaStateShapeCalculator): conv keeps d_conv - 1 columns."""
    d_conv = int(_first(cfg, "mamba_d_conv", "conv_kernel", "d_conv", default=4))
    d_state = int(_first(cfg, "mamba_d_state", "ssm_state_size", "state_size", "d_state", default=16))
    n_heads = _first(cfg, "mamba_num_heads")
    if n_heads is not None or model_type == "mamba2":  # Mamba2 (Nemotron-H): grouped B/C, per-head state
        head_dim = int(_first(cfg, "mamba_head_dim", "head_dim", default=64))
        n_heads = int(n_heads if n_heads is not None else _first(cfg, "num_heads"))
        groups = int(_first(cfg, "n_groups", "mamba_n_groups", default=1))
        inner = n_heads * head_dim
        return {"conv_shape": [inner + 2 * groups * d_state, d_conv - 1], "recurrent_shape": [n_heads, head_dim, d_state]}
    # Mamba1 (Jamba, Falcon-Mamba): one state row per inner channel
    inner = int(_first(cfg, "mamba_expand", "expand", default=2)) * hidden
    if model_type in _PURE_MAMBA and isinstance(cfg.get("intermediate_size"), int):
        inner = cfg["intermediate_size"]  # Falcon-Mamba states intermediate_size outright
    return {"conv_shape": [inner, d_conv - 1], "recurrent_shape": [inner, d_state]}


def _linear_attention_state(cfg: Mapping) -> dict:
    """Gated DeltaNet (Qwen3-Next): conv over q, k, v channels; one k x v matrix per value head."""
    k_heads, k_dim = int(cfg["linear_num_key_heads"]), int(cfg["linear_key_head_dim"])
    v_heads, v_dim = int(cfg["linear_num_value_heads"]), int(cfg["linear_value_head_dim"])
    kernel = int(cfg.get("linear_conv_kernel_dim", 4))
    return {"conv_shape": [2 * k_heads * k_dim + v_heads * v_dim, kernel - 1], "recurrent_shape": [v_heads, k_dim, v_dim]}


# ---------------------------------------------------------------- every value kvplan reads, validated first

# (keys, least value, greatest value): whole numbers kvplan reads from a config.json. A value of the wrong type or
# out of range is the file's error (exit 2, naming the key and the value), never a silent fallback or a figure
# computed from it: `intermediate_size: -1` gave 2.4 bn parameters for an 8B model, `head_dim: 0` fell back to
# hidden / heads, an astronomically large layer count overflowed. The bounds are far beyond any published model.
_WHOLE = (
    (("num_hidden_layers", "n_layer", "num_layers", "n_layers"), 1, MAX_LAYERS),
    (("hidden_size", "n_embd", "d_model"), 1, MAX_DIM),
    (("num_attention_heads", "n_head", "num_heads"), 1, MAX_HEADS),
    (("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num", "num_attention_groups"), 1, MAX_HEADS),
    (("head_dim", "attention_head_dim", "mamba_head_dim"), 1, MAX_DIM),
    (("intermediate_size", "ffn_hidden_size", "intermediate_size_mlp", "moe_intermediate_size"), 1, MAX_DIM),
    # 0: no shared expert (Qwen3-Coder-30B-A3B-Instruct's own config.json says so; params.py counts none)
    (("moe_shared_expert_intermediate_size", "shared_expert_intermediate_size"), 0, MAX_DIM),
    (("vocab_size",), 1, 1 << 30),
    (("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length",
      "original_max_position_embeddings"), 1, 1 << 40),
    (("sliding_window", "attention_chunk_size"), 0, 1 << 40),
    (("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"), 0, MAX_DIM),
    (("num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok", "experts_per_token"), 1, 1 << 20),
    (("n_shared_experts", "first_k_dense_replace", "num_nextn_predict_layers", "expert_layer_offset",
      "attn_layer_offset", "max_window_layers"), 0, MAX_LAYERS),
    (("moe_layer_freq", "expert_layer_period", "interleave_moe_layer_step", "decoder_sparse_step", "attn_layer_period",
      "full_attention_interval", "sliding_window_pattern", "_sliding_window_pattern", "no_rope_layer_interval",
      "num_ln_in_parallel_attn"), 1, MAX_LAYERS),
    (("mamba_d_conv", "conv_kernel", "d_conv", "linear_conv_kernel_dim"), 1, 1 << 10),
    (("mamba_d_state", "ssm_state_size", "state_size", "d_state", "mamba_num_heads", "n_groups", "mamba_n_groups",
      "mamba_expand", "expand", "linear_num_key_heads", "linear_key_head_dim", "linear_num_value_heads",
      "linear_value_head_dim", "mamba_dt_rank", "time_step_rank"), 1, MAX_DIM),
)
_PER_LAYER_LISTS = frozenset({"moe_layer_freq"})
# The containers and flags kvplan reads, by the JSON type transformers' config classes give them (issue 26: a
# `block_configs: 5`, `text_config: 3` or `layer_types: "x"` reached code that iterated or indexed it). Null means
# absent, as transformers reads it; an empty per-layer list is no list of layers.
_MAPPINGS = ("text_config", "language_config", "llm_config", "vision_config", "audio_config", "rope_scaling",
             "rope_parameters", "quantization_config", "compression_config")
_LISTS = ("layer_types", "block_configs", "layers_block_type", "hybrid_override_pattern_list", "no_rope_layers",
          "mlp_only_layers", "swa_layers", "attention_layer_indices", "full_attn_idxs")
_NON_EMPTY_LISTS = ("layer_types", "block_configs", "layers_block_type")
_FLAGS = ("tie_word_embeddings", "use_sliding_window", "multi_query", "new_decoder_architecture", "use_mla",
          "parallel_attn", "is_encoder_decoder")
_STRINGS = ("model_type", "torch_dtype", "dtype", "hidden_act", "kv_cache_dtype", "quant_method")
_JSON_TYPE = {Mapping: "an object", list: "a list", bool: "true or false", str: "a string"}


def _typed(cfg: Mapping, where: str, prefix: str = "") -> None:
    """Each container and flag kvplan reads has the JSON type it must have (see the table above)."""
    for keys, wanted in ((_MAPPINGS, Mapping), (_LISTS, list), (_FLAGS, bool), (_STRINGS, str)):
        for key in keys:
            value = cfg.get(key)
            if value is None:
                continue
            if not isinstance(value, wanted) or (wanted is list and key in _NON_EMPTY_LISTS and not value):
                got = "an empty list" if isinstance(value, list) else shown(value)
                raise InputError(f"must be {_JSON_TYPE[wanted]}{' with one entry per layer' if key in _NON_EMPTY_LISTS else ''}"
                                 f", got {got}", where=f"{where}: {prefix}{key}",
                                 hint="the file is damaged or not a Hugging Face config.json")
    for key in ("block_configs",):
        for i, block in enumerate(cfg.get(key) or []):
            if not isinstance(block, Mapping):
                raise InputError(f"must be an object, got {shown(block)}", where=f"{where}: {prefix}{key}[{i}]",
                                 hint="the file is damaged or not a Hugging Face config.json")
            for part in ("attention", "ffn"):
                if block.get(part) is not None and not isinstance(block[part], Mapping):
                    raise InputError(f"must be an object, got {shown(block[part])}",
                                     where=f"{where}: {prefix}{key}[{i}].{part}")
    for key in ("text_config", "language_config", "llm_config", "vision_config", "audio_config"):
        if isinstance(cfg.get(key), Mapping) and not prefix:
            _typed(cfg[key], where, prefix=f"{key}.")
_VISION_WHOLE = ("hidden_size", "intermediate_size", "num_hidden_layers", "patch_size", "num_channels", "image_size",
                 "projector_input_dim", "projector_output_dim", "vision_output_dim", "spatial_merge_size")


def _whole(value: Any, *, key: str, low: int, high: int, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"must be a whole number from {low:,} to {high:,}, got {shown(value)}", where=f"{where}: {key}",
                         hint="the file is damaged or not a Hugging Face config.json")
    if not low <= value <= high:
        raise InputError(f"must be from {low:,} to {high:,}, got {shown(value)}", where=f"{where}: {key}",
                         hint="the file is damaged or not a Hugging Face config.json")


def _positive_number(value: Any, *, key: str, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"must be a positive finite number, got {shown(value)}", where=f"{where}: {key}")


def validate_config(raw: Mapping, cfg: Mapping, where: str) -> None:
    """Every value kvplan reads from a config.json, checked before any is used (InputError naming key and value).
    Keys kvplan does not read are not looked at; null means absent, as transformers reads it."""
    _typed(raw, where)
    for keys, low, high in _WHOLE:
        for key in keys:
            value = cfg.get(key)
            if isinstance(value, list) and key in _PER_LAYER_LISTS:  # MiMo-V2: moe_layer_freq as one flag per layer
                for i, item in enumerate(value):
                    _whole(item, key=f"{key}[{i}]", low=0, high=1, where=where)
            elif isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                # one value per layer (Hunyuan-A13B's intermediate_size): a real spelling kvplan does not read, not a
                # damaged file
                raise UnsupportedError(f"one value per layer ({len(value)} of them) is not modelled for this key",
                                       where=f"{where}: {key}", hint="describe the model in a spec YAML")
            elif value is not None:
                _whole(value, key=key, low=low, high=high, where=where)
    vision = raw.get("vision_config")
    if isinstance(vision, Mapping):
        for key in _VISION_WHOLE:
            if vision.get(key) is not None:
                _whole(vision[key], key=f"vision_config.{key}", low=1, high=MAX_DIM, where=where)
    for key in ("rope_scaling", "rope_parameters"):
        rope = cfg.get(key)
        groups = (list(rope.values()) if rope and all(isinstance(v, Mapping) for v in rope.values()) else [rope]) \
            if isinstance(rope, Mapping) else []
        for group in groups:
            if group.get("factor") is not None:
                _positive_number(group["factor"], key=f"{key}.factor", where=where)
            if group.get("original_max_position_embeddings") is not None:
                _whole(group["original_max_position_embeddings"], key=f"{key}.original_max_position_embeddings",
                       low=1, high=1 << 40, where=where)
    for i, block in enumerate(cfg.get("block_configs") or []):
        ffn = (block or {}).get("ffn") if isinstance(block, Mapping) else None
        if isinstance(ffn, Mapping) and ffn.get("ffn_mult") is not None:
            _positive_number(ffn["ffn_mult"], key=f"block_configs[{i}].ffn.ffn_mult", where=where)
    quant = raw.get("quantization_config") or cfg.get("quantization_config")
    if isinstance(quant, Mapping) and quant.get("weight_block_size") is not None:
        block = quant["weight_block_size"]
        if not (isinstance(block, list) and len(block) == 2
                and all(isinstance(b, int) and not isinstance(b, bool) and 1 <= b <= MAX_DIM for b in block)):
            raise InputError(f"must be two positive whole numbers, got {shown(block)}",
                             where=f"{where}: quantization_config.weight_block_size", hint="e.g. [128, 128]")


def spec_mapping_from_config(raw: Mapping, *, name: str, where: str) -> dict:
    """A spec mapping (see spec.py) from a config.json's contents."""
    if not isinstance(raw, Mapping):
        raise InputError("config.json must hold a JSON object", where=where)
    cfg = text_config(raw)
    model_type = str(cfg.get("model_type") or raw.get("model_type") or "")
    if model_type == "nemotron_h" and isinstance(cfg.get("layers_block_type"), list):
        # transformers NemotronHConfig: the list's length is the number of layers (num_hidden_layers is ignored;
        # Nemotron-3 Ultra's file has none)
        cfg["num_hidden_layers"] = len(cfg["layers_block_type"])
    if model_type == "hunyuan":  # its per-layer MoE lists, before validate_config refuses a list where a number goes
        _hunyuan_fields(cfg, where)
    validate_config(raw, cfg, where)
    if model_type in _REFUSED_MODEL_TYPES:
        raise UnsupportedError(f"model_type {model_type!r} is not modelled", where=f"{where}: model_type",
                               hint="kvplan models decoder-only transformers, MLA, sliding windows and Mamba/linear-attention hybrids")
    for key, what in _REFUSED_FIELDS.items():
        if cfg.get(key):
            hint = "kvplan refuses rather than guesses; describe the model in a spec YAML if you know its cache"
            raise UnsupportedError(f"{what} is not modelled yet", where=f"{where}: {key}", hint=hint)
    refuse_unread(cfg, model_type, where)
    if model_type == "gemma2" and cfg.get("sliding_window_size") not in (None, cfg.get("sliding_window")):
        raise UnsupportedError(f"sliding_window_size {cfg['sliding_window_size']} differs from sliding_window "
                               f"{cfg.get('sliding_window')}; transformers reads sliding_window, other readers may not",
                               where=f"{where}: sliding_window_size", hint="make the two agree")

    layers = _first(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    hidden = _first(cfg, "hidden_size", "n_embd", "d_model")
    if not isinstance(layers, int) or layers < 1:
        raise UnsupportedError("cannot find the number of layers", where=f"{where}: num_hidden_layers",
                               hint="looked for num_hidden_layers, n_layer, num_layers")
    if not isinstance(hidden, int) or hidden < 1:
        raise UnsupportedError("cannot find the hidden size", where=f"{where}: hidden_size", hint="looked for hidden_size, n_embd, d_model")
    dtype, dtype_note = _serving_dtype(cfg, model_type, where)
    notes = [n for n in [dtype_note] if n]
    if model_type not in TESTED_MODEL_TYPES:
        notes.append(f"model_type {model_type!r} is not one kvplan is tested on: read with the common config.json "
                     "conventions (check the layout with `kvplan show`)")

    # both come from file and folder names nobody validated: escaped, never refused (kvplan.core.text)
    archs = raw.get("architectures")
    architecture = visible(archs[0] if isinstance(archs, list) and archs else model_type)
    spec: dict[str, Any] = {"name": visible(name), "architecture": architecture or None, "layers": layers,
                            "hidden_size": hidden, "dtype": dtype}
    if isinstance(cfg.get("vocab_size"), int):
        spec["vocab_size"] = cfg["vocab_size"]
    max_pos = _first(cfg, "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
    if isinstance(max_pos, int) and max_pos > 0:
        spec["max_context"] = max_pos
    elif model_type not in _PURE_MAMBA:
        # vLLM assumes 2048 when no key gives the length (vllm/config/model.py _get_and_verify_max_len);
        # Falcon-7B's file has none (FalconConfig's own default is 2048 too)
        spec["max_context"] = 2048
        notes.append("config.json gives no maximum length; 2048 assumed, as vLLM does")

    if model_type in _PURE_MAMBA:
        # no attention: nominal heads keep the spec well-formed; every layer is a state layer
        spec.update(attention_heads=1, kv_heads=1, head_dim=1, layout={"default": STATE},
                    state=_mamba_state(cfg, hidden, model_type))
    else:
        _attention_fields(cfg, model_type, layers, hidden, spec, where)
        _rotary_fields(cfg, spec, where)

    if spec.get("state"):
        # vLLM's state dtypes (model_executor/layers/mamba/mamba_utils.py MambaStateDtypeCalculator): the conv state
        # in the model dtype, the recurrent (SSM) state in mamba_ssm_cache_dtype, which `auto` makes the model
        # dtype too -- except Nemotron-H, whose config hook (model_executor/models/config.py
        # NemotronHForCausalLMConfig) takes config.json's mamba_ssm_cache_dtype, float32 when absent
        recurrent, why = dtype, "the model dtype (vLLM mamba_ssm_cache_dtype=auto)"
        if model_type == "nemotron_h":
            recurrent = str(cfg.get("mamba_ssm_cache_dtype") or "float32")
            why = (f"{recurrent}, config.json's mamba_ssm_cache_dtype" if cfg.get("mamba_ssm_cache_dtype")
                   else "float32, vLLM's Nemotron-H default")
        elif model_type in ("qwen3_5_text", "qwen3_5_moe_text") and cfg.get("mamba_ssm_dtype"):
            # vLLM 0.33 model_executor/models/config.py Qwen3_5ForConditionalGenerationConfig: an `auto`
            # mamba_ssm_cache_dtype becomes the text config's mamba_ssm_dtype (float32 in the Qwen3.5/3.6 files);
            # transformers keeps the gated-delta-net recurrent state in float32 as well
            recurrent = str(cfg["mamba_ssm_dtype"])
            why = f"{recurrent}, config.json's mamba_ssm_dtype (vLLM's Qwen3.5 config hook)"
        spec["state"].setdefault("conv_dtype", dtype)
        spec["state"].setdefault("recurrent_dtype", recurrent)
        notes.append(f"state as vLLM keeps it: conv state of d_conv - 1 columns in {dtype}, recurrent state in {why}")

    try:
        counted = count_params(raw, cfg, spec)
        moe = moe_summary(cfg, model_type, layers)
    except KvplanError as err:
        raise err.located(where) from None
    if moe:
        # the spec file writes only what differs from the defaults (gated, no shared experts)
        spec["moe"] = {k: v for k, v in moe.items()
                       if not (k == "gated" and v) and not (k in ("shared_intermediate_size", "dense_intermediate_size")
                                                            and not v)}
        # what expert parallelism spreads over the GPUs (0: the inventory does not split the experts out)
        spec["moe"]["expert_params"] = routed_expert_params(counted.tensors)
    spec["params"] = counted.total
    if counted.tied is not None:
        spec["tie_word_embeddings"] = counted.tied
    if counted.active != counted.total:
        spec["active_params"] = counted.active
    if counted.vision:
        spec["vision_params"] = counted.vision
    if counted.unknown:
        spec["weights_unknown"] = counted.unknown
        notes.append(f"{counted.unknown}: the weights are unknown (params count the text model only); the KV cache "
                     "is the text model's and is exact (give --kv-cache-memory, or the checkpoint's safetensors)")
    notes.extend(counted.notes)
    dense_mlp = _first(cfg, "intermediate_size", "n_inner", "ffn_hidden_size")
    if isinstance(dense_mlp, int) and dense_mlp > 0 and model_type not in _PURE_MAMBA:
        spec["intermediate_size"] = dense_mlp
    mtp_blocks = cfg.get("mtp_hybrid_override_pattern") or cfg.get("mtp_layers_block_type") or []
    if set(mtp_blocks) - {"*", "E", "-", "attention", "full_attention", "moe", "mlp"}:
        # the MTP layer kvplan sizes (mtp_layer_params, speculative decoding) is one attention layer with its MLP
        raise UnsupportedError(f"a multi-token-prediction layer of {mtp_blocks!r} is not modelled",
                               where=f"{where}: mtp_hybrid_override_pattern", hint="kvplan models an attention MTP layer")
    mtp = int(_first(cfg, "num_nextn_predict_layers", "mtp_num_hidden_layers") or 0)
    if mtp and model_type in COMPRESSED_MODEL_TYPES:
        # mtp_layer_params builds a DeepSeek-V3 layer; V4's MTP layer (hyper-connections, compressed attention) is
        # not read from any source here, so it stays out rather than sized wrong
        notes.append(f"the checkpoint also holds {mtp} multi-token-prediction layer(s), which kvplan does not size "
                     "for DeepSeek-V4 (not counted in params)")
    elif mtp:
        try:
            spec["mtp"] = {"layers": mtp, "params": mtp * mtp_layer_params(cfg, spec)}
        except KvplanError as err:
            raise err.located(where) from None
        notes.append(f"the checkpoint also holds {mtp} multi-token-prediction layer(s) (num_nextn_predict_layers), "
                     "loaded only for speculative decoding and not counted in params (the mtp section has them)")
    quant = raw.get("quantization_config") or cfg.get("quantization_config")
    if isinstance(quant, Mapping) and counted.unknown:
        # the inventory lacks the tower: a quantized figure of the text model alone would pass for the checkpoint's
        notes.append("the checkpoint is quantized; its weight bytes stay unknown with the tower")
    elif isinstance(quant, Mapping):
        expert_dtype = cfg.get("expert_dtype") or raw.get("expert_dtype")
        if model_type in COMPRESSED_MODEL_TYPES and expert_dtype and str(quant.get("quant_method")).lower() == "fp8":
            # DeepSeek-V4 says its routed experts' format beside the block (expert_dtype fp4: MXFP4 experts; vLLM 0.34
            # models/deepseek_v4/quant_config.py); NVIDIA's -NVFP4 files keep this fp8 block and add moe_quant_algo
            # NVFP4. vLLM takes a missing expert_dtype for fp4; SGLang's FP8 repack (deepseek_ref) has none and FP8
            # experts, so only a stated one is applied
            quant = {**quant, "expert_dtype": str(expert_dtype)}
        try:
            counted_bytes = quantized_weight_bytes(quant, counted.tensors, lookup_dtype(dtype).bits, layers,
                                                   (moe or {}).get("experts"))
        except (ValueError, TypeError, KeyError, ZeroDivisionError, AttributeError):
            # a setting of the wrong type or zero (bits: "x", group_size: 0, a block_structure of one number)
            raise InputError("holds a setting kvplan cannot read as a number (bits, group_size, block sizes)",
                             where=f"{where}: quantization_config", hint="the file is damaged") from None
        except NotModelled as err:
            notes.append(f"{err}; weight bytes are params x {dtype}, more than the quantized checkpoint holds (try --dtype)")
        else:
            spec["weights_bytes"] = counted_bytes.bytes
            spec["weights_source"] = counted_bytes.source
            if counted_bytes.tp_whole:
                spec["tp_whole_bytes"] = counted_bytes.tp_whole
            spec["quant_method"] = str(quant.get("quant_method")).lower()
            fmt = _QUANT_WEIGHT_DTYPE.get(str(quant.get("quant_method") or "").lower())
            if quant.get("quant_algo") and not quant.get("quant_method"):
                spec["quant_method"] = "modelopt"
            if spec["quant_method"] == "modelopt" and str(quant.get("quant_algo") or "").upper() == "FP8":
                fmt = "fp8_e4m3"
            if fmt:
                spec["weight_dtype"] = fmt
    if notes:
        spec["notes"] = "; ".join(notes)
    return spec


# the weight dtype a quantized checkpoint's linear layers are stored in, where kvplan has a name for it
_QUANT_WEIGHT_DTYPE = {"fp8": "fp8_e4m3", "awq": "int4", "gptq": "int4"}


# the names vLLM reads for the share of a head rotary embedding turns (0.19.0 transformers_utils/config.py
# patch_rope_parameters), at the top level or in a flat rope_parameters (transformers 5)
_PARTIAL_ROTARY_KEYS = ("partial_rotary_factor", "rotary_pct", "rotary_emb_fraction")


def _rotary_fields(cfg: Mapping, spec: dict, where: str) -> None:
    """rotary_dim where rotary embedding turns part of each head: vLLM's get_rope takes int(head_size x
    partial_rotary_factor) (0.19.0 model_executor/layers/rotary_embedding/__init__.py). A rope_parameters keyed by
    layer type (Gemma-4) is left at the whole head; MLA's rotary part is its qk_rope_head_dim already."""
    if spec.get("mla"):
        return
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling")
    flat = rope if isinstance(rope, Mapping) and not any(isinstance(v, Mapping) for v in rope.values()) else {}
    if flat.get("mrope_section") is not None and flat.get("rope_type", flat.get("type", "default")) == "default":
        spec["mrope"] = True  # get_rope builds MRotaryEmbedding, whose cache has 4 x max_position rows
    key, factor = next(((k, src[k]) for src in (cfg, flat) for k in _PARTIAL_ROTARY_KEYS if src.get(k) is not None),
                       (None, None))
    if factor is None:
        return
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
        # vLLM raises "partial_rotary_factor=... must be between 0.0 and 1.0" at start
        raise InputError(f"must be above 0 and at most 1, got {factor!r}", where=f"{where}: {key}")
    rotary = int(spec["head_dim"] * factor)
    if rotary < spec["head_dim"]:
        spec["rotary_dim"] = rotary


def _attention_fields(cfg: Mapping, model_type: str, layers: int, hidden: int, spec: dict, where: str) -> None:
    heads = _first(cfg, "num_attention_heads", "n_head", "num_heads")
    if not isinstance(heads, int) or heads < 1:
        raise UnsupportedError("cannot find the number of attention heads", where=f"{where}: num_attention_heads",
                               hint="looked for num_attention_heads, n_head, num_heads")
    if cfg.get("kv_lora_rank") and cfg.get("qk_nope_head_dim") is not None and cfg.get("qk_rope_head_dim") is not None:
        # MLA: a head is qk_nope_head_dim + qk_rope_head_dim wide whatever hidden / heads gives (GLM-4.7-Flash and
        # Kimi-K3 have no head_dim and a hidden size their heads do not divide); the cache keeps the latent anyway
        head_dim = int(cfg["qk_nope_head_dim"]) + int(cfg["qk_rope_head_dim"])
    else:
        head_dim = _head_dim(cfg, hidden, heads, where)
    spec.update(attention_heads=heads, head_dim=head_dim)
    kinds: list[str] | None = None
    layout: dict[str, Any] = {}

    if isinstance(cfg.get("block_configs"), list):  # Nemotron-Super (DeciLM): per-layer attention
        kinds, kv_list = [], []
        for i, block in enumerate(cfg["block_configs"]):
            attn = (block or {}).get("attention") or {}
            if attn.get("no_op") or attn.get("replace_with_linear"):
                kinds.append(NONE)
                kv_list.append(0)
                continue
            if attn.get("window_length") or attn.get("num_sink_tokens") or attn.get("sparsify"):
                raise UnsupportedError("windowed/sink/sparse attention in block_configs is not modelled",
                                       where=f"{where}: block_configs[{i}].attention")
            group = attn.get("n_heads_in_group")
            if not isinstance(group, int) or group < 1 or heads % group:
                raise InputError(f"n_heads_in_group {group!r} does not divide {heads} heads",
                                 where=f"{where}: block_configs[{i}].attention.n_heads_in_group")
            kinds.append(FULL)
            kv_list.append(heads // group)
        if len(kinds) != layers:
            raise InputError(f"{len(kinds)} block_configs for {layers} layers", where=f"{where}: block_configs")
        attention_kv = [k for k in kv_list if k]
        spec["kv_heads"] = max(set(attention_kv), key=attention_kv.count) if attention_kv else heads
        layout["kv_heads"] = kv_list
    else:
        spec["kv_heads"] = _kv_heads(cfg, heads)
        if spec["kv_heads"] < 1 or heads % spec["kv_heads"]:
            key = next((k for k in ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num",
                                    "num_attention_groups") if cfg.get(k) is not None), "num_key_value_heads")
            raise InputError(f"{heads} attention heads are not a multiple of {spec['kv_heads']} KV heads",
                             where=f"{where}: {key}", hint="each KV head serves a whole group of query heads; the file is inconsistent")

    if model_type == "nemotron_h" and isinstance(cfg.get("layers_block_type"), list):
        # Nemotron-3 Ultra / 3.5 spell the pattern as a list (transformers NemotronHConfig._pattern_to_list: M mamba,
        # * attention, - mlp, E moe); params.py reads the pattern, so the list becomes it
        names = {"mamba": "M", "attention": "*", "full_attention": "*", "mlp": "-", "moe": "E"}
        values = cfg["layers_block_type"]
        unknown = sorted({str(v) for v in values} - set(names))
        if unknown:
            raise UnsupportedError(f"layers_block_type {unknown[0]!r} is not modelled", where=f"{where}: layers_block_type",
                                   hint="kvplan knows " + ", ".join(names))
        cfg["hybrid_override_pattern"] = "".join(names[str(v)] for v in values)
    if model_type in COMPRESSED_MODEL_TYPES:
        kinds = _compressed_kinds(cfg, layers, spec, layout, where)
    elif model_type in MINIMAX_SPARSE_MODEL_TYPES:
        kinds = _minimax_sparse_kinds(cfg, layers, spec, where)
    elif isinstance(cfg.get("hybrid_override_pattern"), str):  # Nemotron-H: M = Mamba2, * = attention, -/E = MLP/MoE
        pattern = cfg["hybrid_override_pattern"]
        table = {"M": STATE, "*": FULL, "-": NONE, "E": NONE}
        if len(pattern) != layers:
            raise InputError(f"hybrid_override_pattern has {len(pattern)} entries for {layers} layers",
                             where=f"{where}: hybrid_override_pattern", hint="one character per layer; check num_hidden_layers")
        if set(pattern) - set(table):
            raise UnsupportedError(f"hybrid_override_pattern uses {''.join(sorted(set(pattern) - set(table)))!r}, not modelled",
                                   where=f"{where}: hybrid_override_pattern", hint="kvplan knows M (Mamba2), * (attention), - (MLP), E (MoE)")
        kinds = [table[c] for c in pattern]
        spec["state"] = _mamba_state(cfg, hidden, model_type)
    elif isinstance(cfg.get("attn_layer_period"), int):  # Jamba: attention every period-th layer at offset
        period, offset = cfg["attn_layer_period"], int(cfg.get("attn_layer_offset", 0))
        if period < 1 or not 0 <= offset < period:
            raise InputError(f"attn_layer_offset {offset} does not lie in attn_layer_period {period}",
                             where=f"{where}: attn_layer_offset")
        kinds = [FULL if i % period == offset else STATE for i in range(layers)]
        spec["state"] = _mamba_state(cfg, hidden, model_type)
    elif isinstance(cfg.get("layer_types"), list) or isinstance(cfg.get("layers_block_type"), list):
        values = cfg.get("layer_types") or cfg.get("layers_block_type")
        if len(values) != layers:
            raise InputError(f"layer_types has {len(values)} entries for {layers} layers", where=f"{where}: layer_types")
        kinds = _layer_types(values, f"{where}: layer_types")
    elif isinstance(cfg.get("full_attention_interval"), int):  # Qwen3-Next: every interval-th layer is full
        interval = cfg["full_attention_interval"]
        if interval < 1:
            raise InputError(f"must be at least 1, got {interval}", where=f"{where}: full_attention_interval")
        kinds = [FULL if (i + 1) % interval == 0 else STATE for i in range(layers)]

    if kinds is not None and any(KINDS[k].recurrent for k in kinds) and "state" not in spec:
        if "linear_num_value_heads" in cfg:
            spec["state"] = _linear_attention_state(cfg)
        elif _first(cfg, "mamba_d_state", "ssm_state_size", "mamba_num_heads") is not None:
            spec["state"] = _mamba_state(cfg, hidden, model_type)
        else:
            raise UnsupportedError("linear-attention/SSM layers without state sizes kvplan can read", where=f"{where}: layer_types",
                                   hint="expected linear_num_value_heads/... or mamba_d_state/...")

    if kinds is None and cfg.get("attention_chunk_size"):
        kinds = _chunked_kinds(cfg, model_type, layers, where)
    sliding = _sliding_kinds(cfg, model_type, layers)
    if kinds is None:  # an explicit pattern wins; a stray sliding_window beside it is ignored (Nemotron-H sets null)
        kinds = sliding
    # windowed layers (sliding windows, local chunks) read their length from the key the kind names, spelled alike in
    # config.json and in a spec (LayerSpec.window_from)
    for windowed in WINDOWED_KINDS:
        key = KINDS[windowed].window_from
        if kinds is not None and windowed in kinds:
            if not cfg.get(key):
                raise InputError(f"layers are {windowed} but {key} is not set", where=f"{where}: {key}")
            spec[key] = int(cfg[key])

    if model_type == "gemma4_text" and kinds is not None:
        # Gemma 4: full-attention layers have their own head width and KV heads (transformers Gemma4TextConfig
        # per_layer_config, vLLM 0.33 models/gemma4.py layer_config); attention_k_eq_v gives them no v_proj but the
        # cache still keeps V (value_states = key_states, both stored: measured on meta, and vLLM loads K into both)
        full_dim = int(cfg.get("global_head_dim") or head_dim)
        full_kv = int(cfg.get("num_global_key_value_heads") or spec["kv_heads"])
        if heads % full_kv:
            raise InputError(f"{heads} attention heads are not a multiple of {full_kv} global KV heads",
                             where=f"{where}: num_global_key_value_heads")
        layout["kv_heads"] = [spec["kv_heads"] if KINDS[k].windowed else full_kv for k in kinds]
        layout["head_dims"] = [head_dim if KINDS[k].windowed else full_dim for k in kinds]
    if cfg.get("kv_lora_rank"):  # MLA (DeepSeek-V2/V3, Kimi-K2): every attention layer keeps the latent
        spec["mla"] = {"kv_lora_rank": int(cfg["kv_lora_rank"]), "qk_rope_head_dim": int(cfg.get("qk_rope_head_dim") or 0)}
        if cfg.get("q_lora_rank"):
            spec["mla"]["q_lora_rank"] = int(cfg["q_lora_rank"])
        kinds = [_AS_LATENT.get(k, k) for k in (kinds or [FULL] * layers)]
        spec["head_dim"] = int(cfg.get("qk_nope_head_dim", 0) or 0) + int(cfg.get("qk_rope_head_dim", 0) or 0) or head_dim
        if cfg.get("v_head_dim"):
            spec["v_head_dim"] = int(cfg["v_head_dim"])
        if cfg.get("qk_head_dim") not in (None, spec["head_dim"]):
            # GLM-5 writes the sum out; transformers recomputes it (GlmMoeDsaConfig: qk_nope_head_dim + qk_rope_head_dim)
            raise UnsupportedError(f"qk_head_dim {cfg['qk_head_dim']} is not qk_nope_head_dim + qk_rope_head_dim "
                                   f"({spec['head_dim']})", where=f"{where}: qk_head_dim")
        if model_type in _DSA_MODEL_TYPES:
            if not isinstance(cfg.get("index_head_dim"), int) or cfg["index_head_dim"] < 1:
                raise UnsupportedError("a sparse-attention (DSA) model without index_head_dim", where=f"{where}: index_head_dim")
            spec["mla"]["index_head_dim"] = int(cfg["index_head_dim"])
            kinds = [_WITH_INDEXER.get(k, k) if indexed else k
                     for k, indexed in zip(kinds, _indexer_layers(cfg, layers, where))]
    if model_type not in _DSA_MODEL_TYPES and any(str(v) in ("deepseek_sparse_attention", "indexed_attention")
                                                  for v in cfg.get("layer_types") or []):
        raise UnsupportedError(f"sparse-attention layer types in a {model_type!r} config are not modelled",
                               where=f"{where}: layer_types", hint="kvplan reads them for deepseek_v32 and glm_moe_dsa")

    if kinds is not None:
        distinct = set(kinds)
        if len(distinct) == 1:
            layout["default"] = kinds[0]
        else:
            # a pattern only when it really repeats (at least twice); else the explicit per-layer list reads better
            period = _smallest_period(kinds)
            if 2 * period <= layers:
                layout["pattern"] = kinds[:period]
            else:
                layout["per_layer"] = kinds
    if layout:
        spec["layout"] = layout


def _chunked_kinds(cfg: Mapping, model_type: str, layers: int, where: str) -> list[str]:
    """Llama 4's chunked local attention without an explicit layer_types: the layers that use RoPE attend within
    chunks of attention_chunk_size tokens, the NoPE layers (every no_rope_layer_interval-th, 4 by default) see
    everything. transformers Llama4TextConfig.__post_init__: no_rope_layers[i] = int((i + 1) % interval != 0)
    unless the file lists them (an empty list counts as absent), and layer i is "chunked_attention" when
    no_rope_layers[i] is 1; vLLM's Llama4Attention picks ChunkedLocalAttention by the same test
    (model_executor/models/llama4.py: `use_chunked_local_attn = not self.nope and config.attention_chunk_size`)."""
    if model_type not in ("llama4_text", "llama4"):
        # transformers' generic fallback (cache_utils.get_layer_types_and_kwargs) would make every layer chunked, but
        # whether a model's attention honours the field is its modelling code's business: refuse rather than guess
        raise UnsupportedError(f"attention_chunk_size in a {model_type or 'model'!r} config without layer_types",
                               where=f"{where}: attention_chunk_size",
                               hint="kvplan reads Llama 4's rule; write a spec YAML with `chunked` layers if you know which")
    rope = cfg.get("no_rope_layers")
    if rope:
        if not isinstance(rope, list) or len(rope) < layers or any(v not in (0, 1) for v in rope[:layers]):
            raise InputError(f"must list 0 or 1 for each of the {layers} layers", where=f"{where}: no_rope_layers")
        uses_rope = [bool(v) for v in rope[:layers]]
    else:
        interval = cfg.get("no_rope_layer_interval") or 4
        if not isinstance(interval, int) or interval < 1:
            raise InputError(f"must be a whole number of at least 1, got {interval!r}", where=f"{where}: no_rope_layer_interval")
        uses_rope = [(i + 1) % interval != 0 for i in range(layers)]
    return [CHUNKED if r else FULL for r in uses_rope]


def _smallest_period(items: list) -> int:
    """Length of the shortest prefix that, repeated, gives the whole list (len(items) if none)."""
    n = len(items)
    for p in range(1, n):
        if all(items[i] == items[i % p] for i in range(n)):
            return p
    return n


def find_config_json(path: Path) -> Path | None:
    """A config.json path, or a folder holding one (a Hugging Face snapshot), or None."""
    if path.is_dir():
        candidate = path / "config.json"
        if candidate.is_symlink() or candidate.exists():
            check_regular(candidate)  # a config.json that is a FIFO or a link to a device is refused, not skipped
            return candidate
        return None
    if path.suffix == ".json":
        return path
    return None


def load_draft_config(ref: str, *, base_dir: Path | None, where: str, what: str, hint: str) -> Mapping:
    """The config.json of a draft checkpoint a launch names (an EAGLE head, an SGLang draft model): a path, relative
    to `base_dir` (the launch file's folder) when not absolute, to the file or its folder. Not found is exit 3: the
    launch is fine, kvplan just cannot size what it does not have offline."""
    path = Path(ref).expanduser()
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    config = find_config_json(path) if path.exists() else None
    if config is None:
        raise UnsupportedError(f"{what} {ref!r} cannot be found offline", where=where, hint=hint)
    return yamlio.load_json(config)


def spec_from_config_file(path: Path, raw: Mapping, *, name: str | None = None, weights=None) -> ModelSpec:
    """The spec of a config.json; weight bytes from the checkpoint beside it when its metadata is there, else
    `weights` (a WeightBytes read elsewhere: a safetensors header fetched from the Hub)."""
    default_name = name or (path.parent.name if path.name == "config.json" else path.stem)
    modelopt = path.parent / "hf_quant_config.json"
    if path.name == "config.json" and modelopt.is_file() and not text_config(raw).get("quantization_config"):
        # NVIDIA ModelOpt checkpoints (Llama-3.1-70B-Instruct-FP8, Nemotron-3 NVFP4) say their format in this file,
        # not in config.json; vLLM reads it the same way (quantization/modelopt.py, hf_quant_config.json)
        hf_quant = yamlio.load_json(modelopt)
        if not isinstance(hf_quant, Mapping):
            raise InputError("must hold a JSON object", where=str(modelopt))
        raw = {**raw, "quantization_config": modelopt_quant_config(hf_quant)}
    mapping = spec_mapping_from_config(raw, name=default_name, where=str(path))
    found = checkpoint_weight_bytes(path.parent) or weights
    if found is not None:
        check_plausible(found, int(mapping.get("params") or 0) + int(mapping.get("vision_params") or 0), where=str(path))
        mapping["weights_bytes"] = found.bytes
        mapping["weights_source"] = found.source
        mtp = int(text_config(raw).get("num_nextn_predict_layers") or 0)
        if mtp:  # the files hold the MTP layer(s) that plain serving does not load (DeepSeek-V3: 685B vs 671B)
            mapping["weights_source"] += f"; includes the {mtp} multi-token-prediction layer(s) in the files"
    return dataclasses.replace(spec_from_mapping(mapping, source=str(path)), source=str(path))
