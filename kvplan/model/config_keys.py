"""Which config.json keys shape attention, the KV cache or the recurrent state, and which of them kvplan reads for each
model_type: one table, one check. Pure.

A key shapes the cache when its name carries one of the stems below (index, compress, global, linear, sparse, window,
chunk, ssm, mamba, latent, lora, head_dim, layer / block types, hybrid patterns, KV sharing, sinks ...). For every
model_type kvplan knows, the table lists the ones hf_config.py reads and models for that family; any other such key
with a value (null, false, 0 and empty mean the feature is off, as transformers' config classes read them) makes the
model "cannot judge" (exit 3) naming the key. A model_type the table does not list is read by the common conventions
only when it carries none of them beyond the plain GQA keys (BASE); else it is refused the same way. This is what keeps
a new architecture from being estimated with a key silently ignored: DeepSeek-V4's `compress_ratios` read as 43
sliding layers, Kimi-Linear's `linear_attn_config` priced as MLA on every layer.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from kvplan.core.errors import UnsupportedError
from kvplan.core.regex import Pattern

# stems of the keys that shape attention, the cache or the state
_SHAPING = Pattern(
    r"index|compress|global|linear|sparse|window|chunk|ssm|mamba|latent|lora|head_dim|layer_type|block_type|"
    r"block_config|hybrid|swa|conv|state|kv_shar|shared_layer|kv_head|key_value|query_group|attn_layer|attention_"
    r"interval|k_eq_v|sink|nope|rope_layer|multi_query|kda|dsa|pattern|cross_attention", re.I)
# keys that carry a stem but shape no cache: token ids, rotary frequencies, generic PretrainedConfig attributes
_NEUTRAL = Pattern(r"_token_index$|_token_id$|^ignore_index$|^output_|^chunk_size_feed_forward$|rope_theta$|"
                      r"^rope_(scaling|parameters|type)$|_dropout$|_initializer_range$|^for_llm_compressor$|"
                      r"^(img|image|video|audio|vision)_|_vision_|^activation_", re.I)

# read for every model_type, known or not: grouped-query attention as every decoder has it (hf_config._kv_heads,
# _head_dim: an explicit head_dim wins over hidden / heads)
BASE = frozenset({"head_dim", "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num",
                  "num_attention_groups"})

# the families' rows, built from the groups of keys one reader in hf_config.py handles
_SLIDING_ALL = {"sliding_window"}  # no layer_types: every layer slides (Mistral v0.1, Phi-3, Mixtral)
_QWEN_WINDOW = {"sliding_window", "use_sliding_window", "max_window_layers"}  # Qwen2: layers >= max_window_layers
_LAYER_TYPES = {"layer_types", "sliding_window"}  # an explicit per-layer list (its values are checked one by one)
_MLA = {"kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
        "qk_head_dim"}  # the last: nope + rope written out (GLM-5), checked to agree
# DeepSeek Sparse Attention's lightning indexer: its key width and which layers run it (hf_config._indexer_layers);
# index_topk (tokens selected), index_n_heads (query heads) and indexer_rope_interleave change no cache;
# index_share_for_mtp_iteration concerns the MTP layer only
_DSA = {"index_head_dim", "index_n_heads", "index_topk", "index_topk_freq", "index_topk_pattern",
        "index_skip_topk_offset", "indexer_types", "indexer_rope_interleave", "index_share_for_mtp_iteration"}
_GATED_DELTANET = {"linear_conv_kernel_dim", "linear_key_head_dim", "linear_num_key_heads", "linear_num_value_heads",
                   "linear_value_head_dim", "full_attention_interval", "layer_types"}
_MAMBA1 = {"mamba_d_conv", "mamba_d_state", "mamba_dt_rank", "mamba_expand", "mamba_conv_bias", "mamba_proj_bias",
           "use_mamba_kernels", "state_size", "conv_kernel", "expand", "use_conv_bias", "time_step_rank",
           "use_mambapy"}
_NEMOTRON_H = {"hybrid_override_pattern", "attention_head_dim", "mamba_head_dim", "mamba_num_heads", "mamba_hidden_act",
               "mamba_proj_bias", "mamba_ssm_cache_dtype", "ssm_state_size", "conv_kernel", "n_groups", "use_conv_bias",
               "use_mamba_kernels", "mamba_d_conv", "mamba_d_state", "mamba_n_groups",
               # the SSD kernel's chunk length: how the scan is computed, not what is kept (vLLM mamba_mixer2.py)
               "chunk_size",
               # the pattern as a list (Nemotron-3 Ultra / 3.5); routed experts in a latent space (params.py)
               "layers_block_type", "moe_latent_size",
               # the multi-token-prediction layer: attention + MoE, read where hf_config checks it is that
               "mtp_hybrid_override_pattern", "mtp_layers_block_type"}

# DeepSeek-V4's compressed attention (hf_config._compressed_kinds): the per-layer ratios (or layer_types with
# compress_rates, and the legacy scalar rates), the window, the indexer's key width; the rest shapes no cache: the
# compressor's rotary (compress_rope_*), the indexer's query heads and top-k, the query / grouped-output low ranks
# and the mHC Sinkhorn iterations (params.py reads them), qk_nope / qk_rope (one 512-wide head: nope + rope)
_DEEPSEEK_V4 = {"compress_ratios", "compress_rates", "compress_rate_csa", "compress_rate_hca", "compress_rope_theta",
                "compress_rope_parameters", "layer_types", "mlp_layer_types", "sliding_window", "index_head_dim",
                "index_n_heads", "index_topk", "q_lora_rank", "o_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
                "hc_sinkhorn_iters"}

READ: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in {
    # dense and MoE decoders, full attention only
    "llama": set(), "gemma": set(), "granite": set(), "granitemoe": set(), "phi": set(), "gpt2": set(),
    "falcon": {"multi_query"}, "olmo": set(), "olmo2": set(), "internlm2": set(), "exaone": set(),
    "starcoder2": _SLIDING_ALL, "gpt_bigcode": {"multi_query"}, "gpt_neox": set(), "stablelm": set(),
    "nemotron-nas": {"block_configs"},  # per-block attention: no_op, replace_with_linear, n_heads_in_group
    "mistral": _SLIDING_ALL, "mixtral": _SLIDING_ALL, "phi3": _SLIDING_ALL, "phimoe": _SLIDING_ALL,
    "qwen2": _QWEN_WINDOW | {"layer_types"}, "qwen2_moe": _QWEN_WINDOW | {"decoder_sparse_step", "layer_types"},
    "qwen3": _QWEN_WINDOW | {"layer_types"}, "qwen3_moe": _QWEN_WINDOW | {"decoder_sparse_step", "layer_types"},
    "qwen3_vl_text": _QWEN_WINDOW | {"layer_types"},
    "qwen3_vl_moe_text": _QWEN_WINDOW | {"decoder_sparse_step", "layer_types"},
    # Gemma-2 alternates (even layers slide); its file also carries the window as sliding_window_size, an older
    # spelling transformers' Gemma2Config does not read (hf_config checks the two agree)
    "gemma2": {"sliding_window", "sliding_window_size"},
    "gemma3": _LAYER_TYPES | {"sliding_window_pattern", "_sliding_window_pattern"},
    "gemma3_text": _LAYER_TYPES | {"sliding_window_pattern", "_sliding_window_pattern"},
    "gpt_oss": _LAYER_TYPES,
    # Gemma 4: full layers of global_head_dim x num_global_key_value_heads; K = V in them changes no cache
    # (num_kv_shared_layers, when set, is refused: KV sharing across layers is not modelled)
    "gemma4_text": _LAYER_TYPES | {"global_head_dim", "num_global_key_value_heads", "attention_k_eq_v"},
    "llama4": {"attention_chunk_size", "no_rope_layers", "no_rope_layer_interval", "layer_types"},
    "llama4_text": {"attention_chunk_size", "no_rope_layers", "no_rope_layer_interval", "layer_types"},
    # MLA: one latent of kv_lora_rank + qk_rope_head_dim per token and layer
    "deepseek_v2": _MLA, "deepseek_v3": _MLA, "kimi_k2": _MLA,
    "deepseek_v32": _MLA | _DSA, "glm_moe_dsa": _MLA | _DSA | {"layer_types", "mlp_layer_types"},
    # hybrids with a fixed state per sequence
    "jamba": _MAMBA1 | {"attn_layer_period", "attn_layer_offset"},
    "falcon_mamba": _MAMBA1, "mamba": _MAMBA1, "mamba2": _MAMBA1 | {"n_groups", "head_dim", "num_heads", "chunk_size"},
    "nemotron_h": _NEMOTRON_H,
    # 2025-2026 decoders whose layer_types list full and sliding layers of one head shape (transformers'
    # Olmo3Config, Step3p7Config, LagunaConfig, MuseGlimmerTextConfig); mlp_layer_types (dense / sparse) is read by
    # params.py
    "olmo3": _LAYER_TYPES, "step3p7": _LAYER_TYPES | {"mlp_layer_types"}, "laguna": _LAYER_TYPES | {"mlp_layer_types", "decoder_sparse_step"},
    "muse_glimmer_text": _LAYER_TYPES,
    # SmolLM3: no_rope_layers only turns RoPE off in some layers (what they keep is unchanged); MiMo-7B is Qwen2's
    "smollm3": _QWEN_WINDOW | {"layer_types", "no_rope_layers", "no_rope_layer_interval"}, "mimo": _QWEN_WINDOW,
    "glm4_moe_lite": _MLA,  # GLM-4.7-Flash: DeepSeek-V3's MLA
    "qwen3_next": _GATED_DELTANET | _QWEN_WINDOW | {"decoder_sparse_step"},
    # Qwen3.5 / 3.6: Gated DeltaNet with its recurrent state in mamba_ssm_dtype (float32 in the published files)
    "qwen3_5_text": _GATED_DELTANET | {"mamba_ssm_dtype"},
    "qwen3_5_moe_text": _GATED_DELTANET | {"mamba_ssm_dtype"},
    # DeepSeek-V4 (transformers DeepseekV4Config); deepseek_ref is the same file as SGLang's checkpoints spell it
    "deepseek_v4": _DEEPSEEK_V4, "deepseek_ref": _DEEPSEEK_V4,
    # MiniMax-M3: full attention, with the lightning indexer's key on the layers sparse_attention_config lists
    # (hf_config._minimax_sparse_kinds reads the section key by key); mlp_layer_types / moe_layer_freq: params.py
    "minimax_m3": {"sparse_attention_config", "layer_types", "mlp_layer_types"},
    # Hunyuan-A13B as its own file spells it (remote code; transformers' native class is hunyuan_v1_moe): GQA of
    # attention_head_dim; cross-layer KV sharing (use_cla, cla_share_factor) and MLA (use_mla) are refused when on
    # (hf_config._hunyuan_fields)
    "hunyuan": {"attention_head_dim"},
    "minimax_m3_vl": {"sparse_attention_config", "layer_types", "mlp_layer_types"},
}.items()}


def shapes_cache(key: str) -> bool:
    """Whether a config.json key is one that shapes attention, the cache or the state."""
    return bool(_SHAPING.search(key)) and not _NEUTRAL.search(key)


def _set(value: Any) -> bool:
    """A value that switches a feature on: null, false, 0 and empty containers leave it off."""
    return value is not None and value is not False and value != 0 and value != "" and value != [] and value != {}


# every key some family reads: a key outside it is new to kvplan altogether, and is named first
_ANY_READ = frozenset().union(*READ.values())


def unread_keys(cfg: Mapping, model_type: str) -> list[str]:
    """The cache-shaping keys of `cfg` (the text config, merged) that kvplan does not read for `model_type`: the ones
    no family reads first, and among them a section or per-layer list (Kimi-K3's linear_attn_config before its MLA
    keys and its latent_moe_use_norm flag)."""
    known = BASE | READ.get(model_type, frozenset())
    keys = [k for k, v in cfg.items() if isinstance(k, str) and shapes_cache(k) and k not in known and _set(v)]
    return sorted(keys, key=lambda k: (k in _ANY_READ, not isinstance(cfg[k], (Mapping, list)), k))


def refuse_unread(cfg: Mapping, model_type: str, where: str) -> None:
    """UnsupportedError (exit 3) naming the cache-shaping keys kvplan would otherwise ignore."""
    keys = unread_keys(cfg, model_type)
    if not keys:
        return
    family = f"model_type {model_type!r}" if model_type in READ else \
        f"model_type {model_type or '(none)'!r}, which kvplan does not know,"
    shown = ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
    raise UnsupportedError(f"{family} carries cache-shaping key(s) kvplan does not read: {shown}",
                           where=f"{where}: {keys[0]}",
                           hint="kvplan refuses rather than guesses the cache; describe the model in a spec YAML "
                                "if you know its layers (docs/models.md lists what each family reads)")


def text_config(cfg: Mapping) -> dict:
    """Multimodal configs nest the language model under text_config (Gemma-3, Llama-3.2-Vision, Kimi-VL)."""
    text = cfg.get("text_config") or cfg.get("language_config") or cfg.get("llm_config")
    if isinstance(text, Mapping):
        merged = {k: v for k, v in cfg.items() if k not in ("text_config", "language_config", "llm_config", "vision_config")}
        merged.update(text)
        return merged
    return dict(cfg)
