"""Parameter counts from a config.json's architecture fields. Pure arithmetic on a mapping.

The count follows how transformers builds the model (what `sum(p.numel())` returns on the `meta`
device), which is what the parity suite checks: embeddings, each decoder layer (attention or mixer,
MLP or MoE, norms) and the output head unless it is tied to the embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from kvplan.spec import FULL, MLA, NONE, SLIDING, STATE

# families whose configs leave tie_word_embeddings out and mean True (their config classes' defaults)
_TIED_BY_DEFAULT = {"gpt2", "gemma", "gemma2", "gemma3", "gemma3_text", "mamba", "falcon_mamba", "mamba2", "phi"}
# families whose MLP has no gate projection (up/down only)
_UNGATED_MLP = {"gpt2", "phi", "falcon", "gpt_neox", "starcoder2", "gpt_bigcode", "nemotron", "nemotron_h"}


@dataclass(frozen=True)
class ParamCount:
    total: int
    active: int  # per token: MoE models route to a few experts
    vision: int  # multimodal: the vision tower and projector (part of total)


def _get(cfg: Mapping, *keys: str, default: Any = None) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return default


def count_params(raw: Mapping, cfg: Mapping, spec: Mapping) -> ParamCount:
    """Parameters of the model described by config `raw` (text part already merged into `cfg`)."""
    model_type = str(cfg.get("model_type") or "")
    hidden = spec["hidden_size"]
    vocab = int(cfg.get("vocab_size") or 0)
    layers = spec["layers"]
    kinds = _layer_kinds(spec, layers)

    tied = cfg.get("tie_word_embeddings", raw.get("tie_word_embeddings"))
    if tied is None:
        tied = model_type in _TIED_BY_DEFAULT
    embed = vocab * hidden
    total = embed + (0 if tied else vocab * hidden)
    active = total
    norm = hidden * (2 if model_type in _UNGATED_MLP and model_type != "nemotron_h" else 1)
    total += norm  # final norm
    active += norm
    if model_type == "gpt2":
        positions = int(_get(cfg, "n_positions", default=1024))
        total += positions * hidden
        active += positions * hidden

    kv_list = (spec.get("layout") or {}).get("kv_heads")
    for i, kind in enumerate(kinds):
        kv_heads = kv_list[i] if kv_list else spec["kv_heads"]
        mixer = _mixer_params(cfg, spec, kind, kv_heads, hidden)
        mlp_total, mlp_active = _mlp_params(cfg, model_type, i, hidden, kind)
        norms = 2 * norm if kind != NONE or mlp_total else 0
        total += mixer + mlp_total + norms
        active += mixer + mlp_active + norms
    vision = _vision_params(raw)
    return ParamCount(total=total + vision, active=active + vision, vision=vision)


def _layer_kinds(spec: Mapping, layers: int) -> list[str]:
    layout = spec.get("layout") or {}
    if layout.get("per_layer"):
        return list(layout["per_layer"])
    if layout.get("pattern"):
        pattern = layout["pattern"]
        return [pattern[i % len(pattern)] for i in range(layers)]
    return [layout.get("default", FULL)] * layers


def _mixer_params(cfg: Mapping, spec: Mapping, kind: str, kv_heads: int, hidden: int) -> int:
    heads, head_dim = spec["attention_heads"], spec["head_dim"]
    if kind in (FULL, SLIDING):
        q = hidden * heads * head_dim
        kv = 2 * hidden * kv_heads * head_dim
        o = heads * head_dim * hidden
        bias = 0
        if cfg.get("attention_bias") or cfg.get("qkv_bias") or cfg.get("model_type") in ("qwen2", "qwen2_moe"):
            bias = heads * head_dim + 2 * kv_heads * head_dim
            if cfg.get("attention_bias"):
                bias += hidden
        qk_norm = 2 * head_dim if cfg.get("model_type") in ("qwen3", "qwen3_moe", "gemma3", "gemma3_text", "qwen3_next") else 0
        return q + kv + o + bias + qk_norm
    if kind == MLA:
        rope, nope = int(cfg.get("qk_rope_head_dim") or 0), int(cfg.get("qk_nope_head_dim") or 0)
        v_dim, rank = int(cfg.get("v_head_dim") or nope), int(cfg["kv_lora_rank"])
        q_rank = cfg.get("q_lora_rank")
        q = hidden * heads * (nope + rope) if not q_rank else hidden * q_rank + q_rank + q_rank * heads * (nope + rope)
        return q + hidden * (rank + rope) + rank + rank * heads * (nope + v_dim) + heads * v_dim * hidden
    if kind == STATE:
        return _state_mixer_params(cfg, spec, hidden)
    return 0


def _state_mixer_params(cfg: Mapping, spec: Mapping, hidden: int) -> int:
    state = spec.get("state") or {}
    if "linear_num_value_heads" in cfg:  # Gated DeltaNet (Qwen3-Next)
        k_heads, k_dim = cfg["linear_num_key_heads"], cfg["linear_key_head_dim"]
        v_heads, v_dim = cfg["linear_num_value_heads"], cfg["linear_value_head_dim"]
        key_dim, value_dim = k_heads * k_dim, v_heads * v_dim
        conv_dim = 2 * key_dim + value_dim
        kernel = int(cfg.get("linear_conv_kernel_dim", 4))
        in_qkvz = hidden * (2 * key_dim + 2 * value_dim)
        in_ba = hidden * 2 * v_heads
        return in_qkvz + in_ba + conv_dim * kernel + 2 * v_heads + v_dim + value_dim * hidden
    conv_channels, kernel_minus_one = state["conv_shape"][0], state["conv_shape"][1]
    kernel = kernel_minus_one + 1
    rec = state["recurrent_shape"]
    conv_bias = conv_channels if cfg.get("use_conv_bias", cfg.get("mamba_conv_bias", True)) else 0
    if len(rec) == 3:  # Mamba2: in_proj -> [z, xBC, dt], conv over xBC, A/D/dt_bias per head, gated norm, out_proj
        n_heads, head_dim, _ = rec
        inner = n_heads * head_dim
        in_proj = hidden * (inner + conv_channels + n_heads)
        return in_proj + conv_channels * kernel + conv_bias + 3 * n_heads + inner + inner * hidden
    inner, d_state = rec  # Mamba1: in_proj -> [x, z], conv, x_proj -> [dt, B, C], dt_proj, A, D, out_proj
    dt_rank = cfg.get("mamba_dt_rank") or cfg.get("time_step_rank") or -(-hidden // 16)
    x_proj = inner * (int(dt_rank) + 2 * d_state)
    dt_proj = int(dt_rank) * inner + inner
    extra = 0
    if cfg.get("model_type") == "jamba":
        extra = int(dt_rank) + 2 * d_state  # dt/B/C layernorms
    return hidden * 2 * inner + inner * kernel + conv_bias + x_proj + dt_proj + inner * d_state + inner + inner * hidden + extra


def _mlp_params(cfg: Mapping, model_type: str, index: int, hidden: int, kind: str) -> tuple[int, int]:
    """(total, active) MLP/MoE parameters of layer `index`."""
    if model_type in ("mamba", "falcon_mamba", "mamba2"):
        return 0, 0
    if model_type == "nemotron_h":
        pattern = cfg.get("hybrid_override_pattern", "")
        if pattern[index] != "-":
            return 0, 0
        return 2 * hidden * int(cfg["intermediate_size"]), 2 * hidden * int(cfg["intermediate_size"])
    if isinstance(cfg.get("block_configs"), list):
        ffn = cfg["block_configs"][index].get("ffn") or {}
        if ffn.get("no_op"):
            return 0, 0
        inter = _decilm_intermediate(hidden, float(ffn.get("ffn_mult", 1)))
        return 3 * hidden * inter, 3 * hidden * inter
    gated = 2 if model_type in _UNGATED_MLP else 3
    experts = _get(cfg, "num_local_experts", "num_experts", "n_routed_experts")
    dense_first = int(cfg.get("first_k_dense_replace") or 0)
    is_moe_layer = bool(experts) and index >= dense_first
    if experts and model_type == "jamba":
        period, offset = int(cfg.get("expert_layer_period", 1)), int(cfg.get("expert_layer_offset", 0))
        is_moe_layer = index % period == offset
    if experts and "decoder_sparse_step" in cfg and model_type != "qwen3_next":
        step = int(cfg.get("decoder_sparse_step") or 1)
        is_moe_layer = (index + 1) % step == 0 and index not in (cfg.get("mlp_only_layers") or [])
    if not is_moe_layer:
        inter = int(_get(cfg, "intermediate_size", "n_inner", default=4 * hidden))
        return gated * hidden * inter, gated * hidden * inter
    experts = int(experts)
    top_k = int(_get(cfg, "num_experts_per_tok", "experts_per_token", default=1))
    inter = int(_get(cfg, "moe_intermediate_size", "intermediate_size"))
    per_expert = gated * hidden * inter
    if model_type == "gpt_oss":
        per_expert += 2 * inter + hidden  # gate_up and down biases
    router = hidden * experts + (experts if model_type == "gpt_oss" else 0)
    shared = 0
    if cfg.get("n_shared_experts"):
        shared = int(cfg["n_shared_experts"]) * gated * hidden * inter
    if cfg.get("shared_expert_intermediate_size"):
        shared = gated * hidden * int(cfg["shared_expert_intermediate_size"]) + hidden  # plus its sigmoid gate
    if model_type == "deepseek_v3":
        router += experts  # e_score_correction_bias
    return experts * per_expert + router + shared, top_k * per_expert + router + shared


def _decilm_intermediate(hidden: int, ffn_mult: float) -> int:
    """DeciLM's ffn_mult -> intermediate size: 2/3 of mult x hidden, rounded up to a multiple of 256."""
    inter = int(2 * ffn_mult * hidden / 3)
    return -(-inter // 256) * 256


def _vision_params(raw: Mapping) -> int:
    """Vision towers are counted only roughly here; parameters of a SigLIP/ViT encoder from its config."""
    vision = raw.get("vision_config")
    if not isinstance(vision, Mapping):
        return 0
    hidden = int(vision.get("hidden_size") or 0)
    inter = int(vision.get("intermediate_size") or 0)
    layers = int(vision.get("num_hidden_layers") or 0)
    patch = int(vision.get("patch_size") or 14)
    channels = int(vision.get("num_channels") or 3)
    image = int(vision.get("image_size") or 224)
    per_layer = 4 * hidden * hidden + 4 * hidden + 2 * hidden * inter + inter + hidden + 4 * hidden
    patches = (image // patch) ** 2
    embed = channels * patch * patch * hidden + hidden + patches * hidden
    return layers * per_layer + embed + 2 * hidden
