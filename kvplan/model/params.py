"""Parameters from a config.json's architecture fields, as an inventory of weight tensors. Pure arithmetic.

The inventory lists the weight tensors transformers builds for the model (names follow its modules,
shapes are per copy, `count` is how many copies the model holds), so that

- the parameter count is what `sum(p.numel() for p in model.parameters())` returns on the `meta`
  device (tied tensors once), which the parity suite checks for every shared config;
- the weight bytes of a quantized checkpoint can be counted per tensor class (weights.py): fp8, MXFP4,
  AWQ/GPTQ formats quantize the linear layers and keep embeddings, norms, biases and routers in 16 bits.

What is not a parameter in transformers is left out: rotary tables, DeepSeek-V3's
`e_score_correction_bias` (a buffer), and the multi-token-prediction layer of DeepSeek-V3
(`num_nextn_predict_layers`: its weights ship in the checkpoint, 685B on the Hub, but transformers and
plain serving load the 61 decoder layers only, 671B: what transformers builds).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, Mapping

from kvplan.core.errors import UnsupportedError
from kvplan.core.layers import KINDS
from kvplan.core.spec import FULL, MLA

# Tensor classes. `linear` weights are what quantization formats quantize; `expert` weights too (MoE
# experts, one [out, in] matrix per expert and layer); everything else stays in the model dtype.
EMBEDDING, LM_HEAD, LINEAR, EXPERT, ROUTER, NORM, BIAS, OTHER, VISION = (
    "embedding", "lm_head", "linear", "expert", "router", "norm", "bias", "other", "vision")


@dataclass(frozen=True)
class Tensor:
    """One weight tensor of the model, `count` times (once per layer, or per layer and expert)."""

    name: str  # the module path with the layer index left out, e.g. "self_attn.q_proj.weight"
    shape: tuple[int, ...]  # per copy; [out, in] for linear and expert weights
    count: int
    kind: str  # one of the classes above
    active: int | None = None  # copies used per token when fewer than count (routed experts)

    @property
    def numel(self) -> int:
        return prod(self.shape) * self.count

    @property
    def active_numel(self) -> int:
        return prod(self.shape) * (self.count if self.active is None else self.active)


@dataclass(frozen=True)
class ParamCount:
    total: int
    active: int  # per token: a MoE model routes each token to a few experts
    vision: int  # multimodal: vision tower and projector (part of total)
    tensors: tuple[Tensor, ...] = ()
    notes: tuple[str, ...] = ()
    tied: bool | None = None  # output head shared with the embeddings; None when neither file nor class default says
    # why the weights of the whole checkpoint are unknown (a vision / audio tower kvplan cannot size); the counts
    # above are then the text model's alone, which is all the KV cache depends on
    unknown: str | None = None


# Config classes' defaults for tie_word_embeddings when a file leaves it out (transformers
# models/<family>/configuration_<family>.py, 5.x): these families tie the output head to the embeddings.
_TIED_BY_DEFAULT = {"gpt2", "gemma", "gemma2", "gemma3", "gemma3_text", "gemma4_text", "falcon", "mamba", "mamba2", "phi",
                    "smollm3",
                    "mistral3", "starcoder2", "gpt_bigcode", "gpt_neox_japanese", "olmo"}
_UNTIED_BY_DEFAULT = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next",
                      "phi3", "granite", "granitemoe", "deepseek_v2", "deepseek_v3", "gpt_oss", "jamba", "nemotron_h",
                      "falcon_mamba", "nemotron-nas", "llama4_text", "olmo2", "internlm2", "exaone", "deepseek_v32",
                      "glm_moe_dsa"}
# LayerNorm with a bias (weight + bias per norm) rather than RMSNorm (weight only)
_LAYER_NORM = {"gpt2", "falcon", "phi", "gpt_neox", "starcoder2", "gpt_bigcode"}
# per-head RMSNorm on queries and keys (Qwen3, Gemma-3: q_norm / k_norm of head_dim each)
_QK_NORM = {"hunyuan", "qwen3", "qwen3_moe", "qwen3_next", "gemma3", "gemma3_text", "qwen3_5_text", "qwen3_5_moe_text",
            "qwen3_vl_text", "qwen3_vl_moe_text"}
# sandwich norms: input, post_attention, pre_feedforward, post_feedforward (Gemma-2/3)
_FOUR_NORMS = {"gemma2", "gemma3", "gemma3_text", "muse_glimmer_text"}
# one norm per layer: the layer is a single mixer (Mamba, Nemotron-H) or attention and MLP run in parallel
_ONE_NORM = {"mamba", "falcon_mamba", "mamba2", "nemotron_h", "phi"}
_PURE_MAMBA = {"mamba", "falcon_mamba", "mamba2"}
_MODELLED_VISION = {"siglip_vision_model", "pixtral", "llama4_vision_model", "moonvit"}
# Qwen3.5 / Qwen3.6's vision transformer: transformers 5.x names its config qwen3_5_vision / qwen3_5_moe_vision, files
# saved before that the same tower qwen3_5 / qwen3_5_moe (the vision_config of a qwen3_5 or qwen3_5_moe model)
_QWEN3_5_VISION = {"qwen3_5_vision", "qwen3_5_moe_vision", "qwen3_5", "qwen3_5_moe"}


def _get(cfg: Mapping, *keys: str, default: Any = None) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return default


class _Builder:
    def __init__(self) -> None:
        self.tensors: list[Tensor] = []

    def add(self, name: str, shape: tuple[int, ...], kind: str, count: int = 1, active: int | None = None) -> None:
        if count > 0 and all(d > 0 for d in shape):
            self.tensors.append(Tensor(name, tuple(int(d) for d in shape), int(count), kind, active))

    def linear(self, name: str, out: int, inp: int, *, bias: bool = False, count: int = 1, kind: str = LINEAR) -> None:
        self.add(f"{name}.weight", (out, inp), kind, count)
        if bias:
            self.add(f"{name}.bias", (out,), BIAS, count)

    def norm(self, name: str, width: int, *, bias: bool = False, count: int = 1) -> None:
        self.add(f"{name}.weight", (width,), NORM, count)
        if bias:
            self.add(f"{name}.bias", (width,), NORM, count)


def count_params(raw: Mapping, cfg: Mapping, spec: Mapping) -> ParamCount:
    """Parameters of the model described by config `raw` (its text part merged into `cfg`, see
    hf_config.text_config), with `spec` the spec mapping hf_config derived (layers, kinds, KV heads)."""
    model_type = str(cfg.get("model_type") or "")
    hidden = int(spec["hidden_size"])
    vocab = int(cfg.get("vocab_size") or 0)
    layers = int(spec["layers"])
    kinds = _layer_kinds(spec, layers)
    notes: list[str] = []
    b = _Builder()
    layer_norm = model_type in _LAYER_NORM

    tied = cfg.get("tie_word_embeddings", raw.get("tie_word_embeddings"))
    known = tied is not None or model_type in _TIED_BY_DEFAULT | _UNTIED_BY_DEFAULT
    if tied is None:
        tied = model_type in _TIED_BY_DEFAULT
        if not known:
            notes.append("config.json does not say whether the output head is tied to the embeddings; counted untied")
    b.add("embed_tokens.weight", (vocab, hidden), EMBEDDING)
    if not tied:
        b.add("lm_head.weight", (vocab, hidden), LM_HEAD)
    if model_type == "gpt2":  # learned absolute positions
        b.add("wpe.weight", (int(_get(cfg, "n_positions", default=1024)), hidden), EMBEDDING)
    b.norm("norm", hidden, bias=layer_norm)

    kv_list = (spec.get("layout") or {}).get("kv_heads")
    for i, kind in enumerate(kinds):
        kv_heads = int(kv_list[i] if kv_list else spec["kv_heads"])
        if isinstance(cfg.get("block_configs"), list):
            _decilm_layer(b, cfg, i, hidden, spec, kv_heads)
            continue
        if model_type == "nemotron_h":
            _nemotron_h_layer(b, cfg, i, hidden, spec, kv_heads)
            continue
        if model_type in _DEEPSEEK_V4:
            ratio = int(spec["layout"]["compress_ratios"][i])
            _deepseek_v4_layer(b, cfg, kind, ratio, hidden, spec)
            _ffn(b, cfg, model_type, i, hidden)
            continue
        if model_type == "gemma4_text":
            _gemma4_layer(b, cfg, kind, hidden, spec, kv_heads, int(((spec.get("layout") or {}).get("head_dims")
                                                                   or [spec["head_dim"]] * layers)[i]))
            continue
        norms = 4 if model_type in _FOUR_NORMS else 1 if model_type in _ONE_NORM else 2
        if model_type == "falcon":
            norms = _falcon_norms(cfg)
        b.norm("layer_norms", hidden, bias=layer_norm, count=norms)
        _mixer(b, cfg, model_type, kind, hidden, spec, kv_heads)
        if model_type not in _PURE_MAMBA:
            _ffn(b, cfg, model_type, i, hidden)

    if model_type in _DEEPSEEK_V4:  # the head's hyper-connection mix (transformers DeepseekV4Model.hc_head)
        mult = int(cfg.get("hc_mult") or 4)
        b.add("hc_head.hc_base", (mult,), OTHER)
        b.add("hc_head.hc_fn", (mult, mult * hidden), OTHER)
        b.add("hc_head.hc_scale", (1,), OTHER)
    unknown = None
    start = len(b.tensors)
    try:
        vision_tensors = _vision(b, raw, cfg, hidden)
    except UnsupportedError as err:  # the tower, not the text model: its weights are unknown, the cache is not
        del b.tensors[start:]
        vision_tensors, unknown = [], f"{err.what} (at {err.where})" if err.where else err.what
    tensors = tuple(b.tensors)
    total = sum(t.numel for t in tensors)
    active = sum(t.active_numel for t in tensors)
    vision = sum(t.numel for t in vision_tensors)
    return ParamCount(total=total, active=active, vision=vision, tensors=tensors, notes=tuple(notes),
                      tied=bool(tied) if known else None, unknown=unknown)


def routed_expert_params(tensors: tuple[Tensor, ...]) -> int:
    """The routed experts' weights, all MoE layers together (shared experts are ordinary MLPs, not counted): what
    expert parallelism spreads over the GPUs. 0 where the inventory has no expert tensors."""
    return sum(t.numel for t in tensors if t.kind == EXPERT)


def mtp_layer_params(cfg: Mapping, spec: Mapping) -> int:
    """Weights of one multi-token-prediction layer beyond the embedding and output head it shares with the model.

    DeepSeek-V3 (vLLM model_executor/models/deepseek_mtp.py DeepSeekMultiTokenPredictorLayer), GLM-4.5
    (glm4_moe_mtp.py) and Qwen3-Next (qwen3_next_mtp.py) build the same thing: the norms of the embedding and of
    the previous hidden state, a [hidden, 2 x hidden] projection of the two, one decoder layer (full attention, or
    MLA, with the MLP or MoE block of a layer at that index) and a final norm before the shared head."""
    model_type = str(cfg.get("model_type") or "")
    hidden = int(spec["hidden_size"])
    layers = int(spec["layers"])
    b = _Builder()
    b.norm("enorm", hidden)
    b.norm("hnorm", hidden)
    b.linear("eh_proj", hidden, 2 * hidden)
    b.norm("shared_head.norm", hidden)
    norms = 4 if model_type in _FOUR_NORMS else 2
    b.norm("layer_norms", hidden, count=norms)
    kind = MLA if spec.get("mla") else FULL
    _mixer(b, cfg, model_type, kind, hidden, spec, int(spec["kv_heads"]))
    _ffn(b, cfg, model_type, layers, hidden)
    return sum(t.numel for t in b.tensors)


def _layer_kinds(spec: Mapping, layers: int) -> list[str]:
    layout = spec.get("layout") or {}
    if layout.get("per_layer"):
        return list(layout["per_layer"])
    if layout.get("pattern"):
        pattern = layout["pattern"]
        return [pattern[i % len(pattern)] for i in range(layers)]
    return [layout.get("default", FULL)] * layers


# ------------------------------------------------------------------ mixers: attention, MLA, state

def _mixer(b: _Builder, cfg: Mapping, model_type: str, kind: str, hidden: int, spec: Mapping, kv_heads: int) -> None:
    """The layer's token mixer, by what its kind keeps: K/V heads (and an indexer), an MLA latent (and an indexer),
    or a recurrent state."""
    layer = KINDS[kind]
    if layer.headed:
        _attention(b, cfg, model_type, hidden, spec, kv_heads)
        if layer.indexed:  # MiniMax-M3's lightning indexer (transformers MiniMaxM3VLSparseIndexer)
            section = cfg.get("sparse_attention_config") or {}
            heads, dim = int(section.get("sparse_num_index_heads", 4)), int(spec["index_head_dim"])
            b.linear("self_attn.indexer.q_proj", heads * dim, hidden)
            b.linear("self_attn.indexer.k_proj", dim, hidden)
            b.norm("self_attn.indexer.q_norm", dim)
            b.norm("self_attn.indexer.k_norm", dim)
    elif layer.latent:
        _mla(b, cfg, hidden, int(spec["attention_heads"]))
        if layer.indexed:  # the lightning indexer (transformers DeepseekV32Indexer / GlmMoeDsaIndexer)
            heads, dim = int(cfg["index_n_heads"]), int(cfg["index_head_dim"])
            b.linear("self_attn.indexer.wq_b", heads * dim, int(cfg["q_lora_rank"]))
            b.linear("self_attn.indexer.wk", dim, hidden)
            b.norm("self_attn.indexer.k_norm", dim, bias=True)
            b.linear("self_attn.indexer.weights_proj", heads, hidden)
    elif layer.recurrent:
        if "linear_num_value_heads" in cfg:
            _gated_deltanet(b, cfg, hidden)
        elif len((spec.get("state") or {}).get("recurrent_shape", ())) == 3:
            _mamba2(b, cfg, hidden, spec["state"])
        else:
            _mamba1(b, cfg, model_type, hidden, spec["state"])


def _attention(b: _Builder, cfg: Mapping, model_type: str, hidden: int, spec: Mapping, kv_heads: int) -> None:
    heads, head_dim = int(spec["attention_heads"]), int(spec["head_dim"])
    q_out, kv_out = heads * head_dim, kv_heads * head_dim
    if model_type == "falcon":
        # one fused query_key_value projection; multi_query keeps a single K and V head
        b.linear("self_attention.query_key_value", q_out + 2 * kv_out, hidden, bias=bool(cfg.get("bias")))
        b.linear("self_attention.dense", hidden, q_out, bias=bool(cfg.get("bias")))
        return
    if model_type == "gpt2":  # Conv1D c_attn / c_proj, always with biases
        b.linear("attn.c_attn", q_out + 2 * kv_out, hidden, bias=True)
        b.linear("attn.c_proj", hidden, q_out, bias=True)
        return
    all_bias = bool(cfg.get("attention_bias"))
    qkv_bias = all_bias or model_type in ("qwen2", "qwen2_moe")  # Qwen2 keeps q/k/v biases, not o
    # Qwen3-Next gates the attention output with a second query-sized projection (q_proj is 2x wide)
    gated = model_type == "qwen3_next" or bool(cfg.get("attn_output_gate"))  # Qwen3.5 / 3.6 spell it out
    q_width = 2 * q_out if gated else q_out
    b.linear("self_attn.q_proj", q_width, hidden, bias=qkv_bias)
    b.linear("self_attn.k_proj", kv_out, hidden, bias=qkv_bias)
    b.linear("self_attn.v_proj", kv_out, hidden, bias=qkv_bias)
    b.linear("self_attn.o_proj", hidden, q_out, bias=all_bias)
    if model_type in _QK_NORM:
        b.norm("self_attn.q_norm", head_dim)
        b.norm("self_attn.k_norm", head_dim)
    if model_type == "muse_glimmer_text":  # an output gate of its own (transformers MuseGlimmerTextAttention.gate_proj)
        b.linear("self_attn.gate_proj", q_out, hidden)
    if model_type == "gpt_oss":  # learned attention sinks, one logit per head
        b.add("self_attn.sinks", (heads,), OTHER)


def _mla(b: _Builder, cfg: Mapping, hidden: int, heads: int) -> None:
    """DeepSeek-V2/V3 multi-head latent attention (transformers DeepseekV3Attention)."""
    rope, nope = int(cfg.get("qk_rope_head_dim") or 0), int(cfg.get("qk_nope_head_dim") or 0)
    v_dim, rank = int(cfg.get("v_head_dim") or nope), int(cfg["kv_lora_rank"])
    q_rank = cfg.get("q_lora_rank")
    bias = bool(cfg.get("attention_bias"))
    if q_rank:
        b.linear("self_attn.q_a_proj", int(q_rank), hidden, bias=bias)
        b.norm("self_attn.q_a_layernorm", int(q_rank))
        b.linear("self_attn.q_b_proj", heads * (nope + rope), int(q_rank))
    else:
        b.linear("self_attn.q_proj", heads * (nope + rope), hidden)
    b.linear("self_attn.kv_a_proj_with_mqa", rank + rope, hidden, bias=bias)
    b.norm("self_attn.kv_a_layernorm", rank)
    b.linear("self_attn.kv_b_proj", heads * (nope + v_dim), rank)
    b.linear("self_attn.o_proj", hidden, heads * v_dim, bias=bias)


def _mamba1(b: _Builder, cfg: Mapping, model_type: str, hidden: int, state: Mapping) -> None:
    """Mamba (Falcon-Mamba, Jamba): in_proj -> [x, z], depthwise conv, x_proj -> [dt, B, C], dt_proj, A, D."""
    inner, d_state = state["recurrent_shape"]
    kernel = state["conv_shape"][1] + 1  # the spec keeps d_conv - 1 columns (vLLM); the conv has d_conv taps
    dt_rank = int(_get(cfg, "mamba_dt_rank", "time_step_rank", default=-(-hidden // 16)))
    proj_bias = bool(_get(cfg, "use_bias", "mamba_proj_bias", default=False))
    conv_bias = bool(_get(cfg, "use_conv_bias", "mamba_conv_bias", default=True))
    b.linear("mamba.in_proj", 2 * inner, hidden, bias=proj_bias)
    b.add("mamba.conv1d.weight", (inner, 1, kernel), OTHER)
    if conv_bias:
        b.add("mamba.conv1d.bias", (inner,), BIAS)
    b.linear("mamba.x_proj", dt_rank + 2 * d_state, inner)
    b.linear("mamba.dt_proj", inner, dt_rank, bias=True)
    b.add("mamba.A_log", (inner, d_state), OTHER)
    b.add("mamba.D", (inner,), OTHER)
    b.linear("mamba.out_proj", hidden, inner, bias=proj_bias)
    if model_type == "jamba":  # RMSNorms on dt, B and C inside the mixer
        b.norm("mamba.dt_layernorm", dt_rank)
        b.norm("mamba.b_layernorm", d_state)
        b.norm("mamba.c_layernorm", d_state)


def _mamba2(b: _Builder, cfg: Mapping, hidden: int, state: Mapping) -> None:
    """Mamba2 (Nemotron-H): in_proj -> [z, xBC, dt], conv over xBC, per-head A/D/dt_bias, gated RMSNorm."""
    n_heads, head_dim, _ = state["recurrent_shape"]
    conv_dim, kernel = state["conv_shape"][0], state["conv_shape"][1] + 1
    inner = n_heads * head_dim
    proj_bias = bool(_get(cfg, "use_bias", "mamba_proj_bias", default=False))
    b.linear("mixer.in_proj", inner + conv_dim + n_heads, hidden, bias=proj_bias)
    b.add("mixer.conv1d.weight", (conv_dim, 1, kernel), OTHER)
    if _get(cfg, "use_conv_bias", "mamba_conv_bias", default=True):
        b.add("mixer.conv1d.bias", (conv_dim,), BIAS)
    b.add("mixer.A_log", (n_heads,), OTHER)
    b.add("mixer.D", (n_heads,), OTHER)
    b.add("mixer.dt_bias", (n_heads,), OTHER)
    b.norm("mixer.norm", inner)
    b.linear("mixer.out_proj", hidden, inner, bias=proj_bias)


def _gated_deltanet(b: _Builder, cfg: Mapping, hidden: int) -> None:
    """Gated DeltaNet (Qwen3-Next linear attention, transformers Qwen3NextGatedDeltaNet)."""
    k_heads, k_dim = int(cfg["linear_num_key_heads"]), int(cfg["linear_key_head_dim"])
    v_heads, v_dim = int(cfg["linear_num_value_heads"]), int(cfg["linear_value_head_dim"])
    key_dim, value_dim = k_heads * k_dim, v_heads * v_dim
    kernel = int(cfg.get("linear_conv_kernel_dim", 4))
    b.linear("linear_attn.in_proj_qkvz", 2 * key_dim + 2 * value_dim, hidden)
    b.linear("linear_attn.in_proj_ba", 2 * v_heads, hidden)
    b.add("linear_attn.conv1d.weight", (2 * key_dim + value_dim, 1, kernel), OTHER)
    b.add("linear_attn.dt_bias", (v_heads,), OTHER)
    b.add("linear_attn.A_log", (v_heads,), OTHER)
    b.norm("linear_attn.norm", v_dim)
    b.linear("linear_attn.out_proj", hidden, value_dim)


# ------------------------------------------------------------------ feed-forward: dense MLP and MoE

def _dense_mlp(b: _Builder, name: str, hidden: int, inter: int, *, gated: bool, bias: bool, count: int = 1) -> None:
    if gated:
        b.linear(f"{name}.gate_proj", inter, hidden, bias=bias, count=count)
    b.linear(f"{name}.up_proj", inter, hidden, bias=bias, count=count)
    b.linear(f"{name}.down_proj", hidden, inter, bias=bias, count=count)


def _is_moe_layer(cfg: Mapping, model_type: str, i: int) -> bool:
    experts = _get(cfg, "num_local_experts", "num_experts", "n_routed_experts")
    if not experts:
        return False
    kinds = cfg.get("mlp_layer_types")
    if isinstance(kinds, list) and i < len(kinds):
        # GLM-5.x, Laguna: an explicit "dense" / "sparse" per layer wins (transformers GlmMoeDsaConfig,
        # LagunaConfig: the MoE block is built where it says "sparse")
        if str(kinds[i]) not in ("dense", "sparse"):
            raise UnsupportedError(f"mlp_layer_types entry {kinds[i]!r} is not modelled", where="mlp_layer_types",
                                   hint="kvplan knows dense and sparse")
        return str(kinds[i]) == "sparse"
    # the dense-layer spellings hold for every family that carries them: Qwen's mlp_only_layers, DeepSeek's (and
    # GLM-4.5/4.7, Step-3.7, MiniMax-M3, Kimi) first_k_dense_replace and moe_layer_freq, MiMo-V2's per-layer flags
    if i in (cfg.get("mlp_only_layers") or []) or i < int(cfg.get("first_k_dense_replace") or 0):
        return False
    freq = cfg.get("moe_layer_freq")
    if isinstance(freq, list):
        return i < len(freq) and bool(freq[i])
    if model_type in ("deepseek_v2", "deepseek_v3", "kimi_k2") or cfg.get("first_k_dense_replace") is not None:
        return i % int(freq or 1) == 0
    if model_type == "jamba":
        return i % int(cfg.get("expert_layer_period", 1)) == int(cfg.get("expert_layer_offset", 0))
    if model_type == "llama4_text":  # Llama4TextConfig: moe_layers, else every interleave_moe_layer_step-th from step - 1
        if isinstance(cfg.get("moe_layers"), list):
            return i in cfg["moe_layers"]
        step = int(cfg.get("interleave_moe_layer_step") or 1)
        return step > 0 and i % step == step - 1
    if cfg.get("decoder_sparse_step") is not None:  # Qwen2/3-MoE, Qwen3-Next, Laguna: every step-th layer
        return (i + 1) % int(cfg.get("decoder_sparse_step") or 1) == 0
    if freq is not None:
        return i % int(freq) == 0
    return True  # Mixtral, gpt-oss, PhiMoE, OLMoE: every layer


def moe_summary(cfg: Mapping, model_type: str, layers: int) -> dict | None:
    """The routed-expert shape the serving engines size their fused-MoE workspaces by (vLLM
    model_executor/layers/fused_moe): experts, top-k, the per-expert width, how many layers are MoE layers, the
    shared experts' width (an ordinary MLP beside the fused kernel), the dense layers' MLP width (0: every layer is a
    MoE layer) and whether the experts are gated
    (gate and up fused, SiLU-and-multiply; Nemotron-H's squared-ReLU experts are not). None for a dense model."""
    if model_type == "nemotron_h":
        pattern = str(cfg.get("hybrid_override_pattern") or "")
        moe_layers = pattern.count("E")
        if not moe_layers or not cfg.get("n_routed_experts"):
            return None
        return {"experts": int(cfg["n_routed_experts"]), "experts_per_token": int(cfg.get("num_experts_per_tok") or 1),
                "intermediate_size": int(cfg["moe_intermediate_size"]), "layers": moe_layers,
                "shared_intermediate_size": int(cfg.get("moe_shared_expert_intermediate_size") or 0)
                * int(cfg.get("n_shared_experts") or 1),
                "dense_intermediate_size": int(cfg.get("intermediate_size") or 0) if "-" in pattern else 0, "gated": False}
    experts = _get(cfg, "num_local_experts", "num_experts", "n_routed_experts")
    if not experts:
        return None
    moe_layers = sum(1 for i in range(layers) if _is_moe_layer(cfg, model_type, i))
    if not moe_layers:
        return None
    inter = int(_get(cfg, "moe_intermediate_size", "intermediate_size"))
    dense = 0
    if moe_layers < layers:  # DeepSeek's first dense layers, Qwen's mlp_only_layers: an ordinary MLP of intermediate_size
        dense = int(_get(cfg, "intermediate_size_mlp" if model_type == "llama4_text" else "intermediate_size", default=0) or 0)
    shared = 0
    if cfg.get("n_shared_experts"):
        shared = int(cfg["n_shared_experts"]) * inter
    elif cfg.get("shared_expert_intermediate_size"):
        shared = int(cfg["shared_expert_intermediate_size"])
    elif model_type == "llama4_text":
        shared = int(cfg["intermediate_size"])
    return {"experts": int(experts), "experts_per_token": int(_get(cfg, "num_experts_per_tok", "experts_per_token", "top_k_experts", default=1)),
            "intermediate_size": inter, "layers": moe_layers, "shared_intermediate_size": shared,
            "dense_intermediate_size": dense, "gated": True}


# families whose config classes default the MLP width to 4 x hidden when the config leaves it out
_FOUR_X_HIDDEN_MLP = frozenset({"gpt2", "falcon", "gpt_bigcode", "gpt_neox"})


def _ffn(b: _Builder, cfg: Mapping, model_type: str, i: int, hidden: int) -> None:
    ungated = model_type in ("gpt2", "falcon", "phi", "gpt_neox", "starcoder2", "gpt_bigcode")
    mlp_bias = bool(cfg.get("mlp_bias")) or model_type == "gpt2" or (model_type == "falcon" and bool(cfg.get("bias")))
    llama4 = model_type == "llama4_text"
    ff = "feed_forward" if llama4 else "mlp"  # Llama 4's module name, which quantization ignore lists use
    if not _is_moe_layer(cfg, model_type, i):
        inter = _get(cfg, "intermediate_size", "n_inner", "ffn_hidden_size")
        if inter is None:
            if model_type not in _FOUR_X_HIDDEN_MLP:
                raise UnsupportedError("the MLP width is not given (intermediate_size)", where="intermediate_size",
                                       hint=f"kvplan knows the 4 x hidden default only for {', '.join(sorted(_FOUR_X_HIDDEN_MLP))}; "
                                            "write a spec YAML with `params`")
            inter = 4 * hidden  # GPT-2's n_inner: null and Falcon's ffn_hidden_size default
        inter = int(inter)
        if model_type == "falcon":
            inter = int(_get(cfg, "ffn_hidden_size", default=4 * hidden))
        if llama4:  # Llama4TextDecoderLayer: dense layers are Llama4TextMLP(intermediate_size=intermediate_size_mlp)
            inter = int(_get(cfg, "intermediate_size_mlp", default=16384))
        _dense_mlp(b, ff, hidden, inter, gated=not ungated, bias=mlp_bias)
        return
    experts = int(_get(cfg, "num_local_experts", "num_experts", "n_routed_experts"))
    top_k = int(_get(cfg, "num_experts_per_tok", "experts_per_token", default=1))
    inter = int(_get(cfg, "moe_intermediate_size", "intermediate_size"))
    # experts: transformers 5 fuses them ([E, 2 x inter, hidden] gate_up, [E, hidden, inter] down);
    # per expert that is the gate, up and down matrices of a gated MLP
    b.add(f"{ff}.experts.gate_proj", (inter, hidden), EXPERT, experts, top_k)
    b.add(f"{ff}.experts.up_proj", (inter, hidden), EXPERT, experts, top_k)
    b.add(f"{ff}.experts.down_proj", (hidden, inter), EXPERT, experts, top_k)
    if llama4:
        # Llama4TextMoe: a bias-free router (Llama4Router) and one shared expert, a Llama4TextMLP of intermediate_size
        b.add("feed_forward.router.weight", (experts, hidden), ROUTER)
        _dense_mlp(b, "feed_forward.shared_expert", hidden, int(cfg["intermediate_size"]), gated=True, bias=False)
        return
    if model_type == "gpt_oss":  # expert biases and a router bias
        b.add("mlp.experts.gate_up_proj_bias", (2 * inter,), BIAS, experts, top_k)
        b.add("mlp.experts.down_proj_bias", (hidden,), BIAS, experts, top_k)
        b.add("mlp.router.bias", (experts,), BIAS)
    b.add("mlp.gate.weight", (experts, hidden), ROUTER)
    if cfg.get("n_shared_experts"):  # DeepSeek: the shared experts form one MLP of n x moe_intermediate_size
        _dense_mlp(b, "mlp.shared_experts", hidden, int(cfg["n_shared_experts"]) * inter, gated=True, bias=False)
    if cfg.get("shared_expert_intermediate_size"):  # Qwen2-MoE / Qwen3-Next: one shared expert and its sigmoid gate
        _dense_mlp(b, "mlp.shared_expert", hidden, int(cfg["shared_expert_intermediate_size"]), gated=True, bias=False)
        b.add("mlp.shared_expert_gate.weight", (1, hidden), ROUTER)


def _falcon_norms(cfg: Mapping) -> int:
    """Falcon (transformers FalconDecoderLayer): the new decoder architecture has ln_attn and ln_mlp;
    the old one one input_layernorm, plus post_attention_layernorm when attention and MLP run in sequence."""
    if cfg.get("new_decoder_architecture"):
        return int(cfg.get("num_ln_in_parallel_attn") or 2)
    return 1 if cfg.get("parallel_attn", True) else 2


# ------------------------------------------------------------------ families with per-layer blocks

def _nemotron_h_layer(b: _Builder, cfg: Mapping, i: int, hidden: int, spec: Mapping, kv_heads: int) -> None:
    """Nemotron-H: each layer is one block of hybrid_override_pattern with one RMSNorm:
    M = Mamba2 mixer, * = attention, - = MLP (up/down, squared ReLU), E = MoE (routed + shared experts)."""
    char = cfg["hybrid_override_pattern"][i]
    b.norm("norm", hidden)
    mlp_bias = bool(cfg.get("mlp_bias"))
    if char == "M":
        _mamba2(b, cfg, hidden, spec["state"])
    elif char == "*":
        _attention(b, cfg, "nemotron_h", hidden, spec, kv_heads)
    elif char == "-":
        _dense_mlp(b, "mixer", hidden, int(cfg["intermediate_size"]), gated=False, bias=mlp_bias)
    elif char == "E":
        experts, top_k = int(cfg["n_routed_experts"]), int(cfg.get("num_experts_per_tok") or 1)
        inter = int(cfg["moe_intermediate_size"])
        # Nemotron-3 Super / Ultra: the routed experts work in a moe_latent_size space between two projections
        # (transformers NemotronHMoE fc1_latent_proj / fc2_latent_proj, NemotronHExperts input_dim)
        latent = int(cfg.get("moe_latent_size") or hidden)
        b.add("mixer.experts.up_proj", (inter, latent), EXPERT, experts, top_k)
        b.add("mixer.experts.down_proj", (latent, inter), EXPERT, experts, top_k)
        if cfg.get("moe_latent_size"):
            b.linear("mixer.fc1_latent_proj", latent, hidden, bias=mlp_bias)
            b.linear("mixer.fc2_latent_proj", hidden, latent, bias=mlp_bias)
        b.add("mixer.gate.weight", (experts, hidden), ROUTER)  # kept in float32 by transformers
        shared = int(cfg.get("moe_shared_expert_intermediate_size") or 0) * int(cfg.get("n_shared_experts") or 1)
        if shared:
            _dense_mlp(b, "mixer.shared_experts", hidden, shared, gated=False, bias=mlp_bias)


def _gemma4_layer(b: _Builder, cfg: Mapping, kind: str, hidden: int, spec: Mapping, kv_heads: int, head_dim: int) -> None:
    """Gemma 4 (transformers Gemma4TextDecoderLayer, 5.24): q/k/v/o of the layer's own head width with q_norm and k_norm
    (v_norm has no scale), no v_proj on full layers when attention_k_eq_v; four sandwich norms; a gated MLP of
    intermediate_size in every layer, and with enable_moe_block a router (proj, scale, per_expert_scale), fused
    experts of moe_intermediate_size and three more norms beside it. Per-layer inputs (hidden_size_per_layer_input,
    Gemma 4 E2B/E4B) and double-wide MLPs of KV-sharing layers are not modelled."""
    if cfg.get("hidden_size_per_layer_input") or cfg.get("num_kv_shared_layers"):
        raise UnsupportedError("Gemma 4's per-layer inputs and KV-sharing layers are not in the parameter count",
                               where="hidden_size_per_layer_input", hint="write a spec YAML with `params`")
    heads = int(spec["attention_heads"])
    bias = bool(cfg.get("attention_bias"))
    b.norm("layer_norms", hidden, count=4)
    b.linear("self_attn.q_proj", heads * head_dim, hidden, bias=bias)
    b.linear("self_attn.k_proj", kv_heads * head_dim, hidden, bias=bias)
    if not (cfg.get("attention_k_eq_v") and not KINDS[kind].windowed):  # the global (unwindowed) layers
        b.linear("self_attn.v_proj", kv_heads * head_dim, hidden, bias=bias)
    b.linear("self_attn.o_proj", hidden, heads * head_dim, bias=bias)
    b.norm("self_attn.q_norm", head_dim)
    b.norm("self_attn.k_norm", head_dim)
    _dense_mlp(b, "mlp", hidden, int(cfg["intermediate_size"]), gated=True, bias=False)
    if cfg.get("enable_moe_block"):
        experts, inter = int(cfg["num_experts"]), int(cfg["moe_intermediate_size"])
        top_k = int(cfg.get("top_k_experts") or 1)
        b.add("router.proj.weight", (experts, hidden), ROUTER)
        b.add("router.scale", (hidden,), ROUTER)
        b.add("router.per_expert_scale", (experts,), ROUTER)
        b.add("experts.gate_proj", (inter, hidden), EXPERT, experts, top_k)
        b.add("experts.up_proj", (inter, hidden), EXPERT, experts, top_k)
        b.add("experts.down_proj", (hidden, inter), EXPERT, experts, top_k)
        b.norm("moe_norms", hidden, count=3)


_DEEPSEEK_V4 = frozenset({"deepseek_v4", "deepseek_ref"})


def _deepseek_v4_layer(b: _Builder, cfg: Mapping, kind: str, ratio: int, hidden: int, spec: Mapping) -> None:
    """One DeepSeek-V4 decoder layer but its MoE block, as transformers 5.24 models/deepseek_v4 builds it: the
    mHC mixes around attention and MLP (DeepseekV4HyperConnection: base, fn, scale), a low-rank query, one shared
    K = V projection, the grouped output projection (o_groups x o_lora_rank), per-head sinks, and on compressed layers
    the compressor (two overlapping series on CSA layers) and, on CSA layers, the lightning indexer."""
    heads, dim = int(spec["attention_heads"]), int(spec["head_dim"])
    q_rank, groups, o_rank = int(cfg["q_lora_rank"]), int(cfg.get("o_groups") or 8), int(cfg.get("o_lora_rank") or 1024)
    mult = int(cfg.get("hc_mult") or 4)
    mix = mult * (2 + mult)
    for hc in ("attn_hc", "ffn_hc"):
        b.add(f"{hc}.base", (mix,), OTHER)
        b.add(f"{hc}.fn", (mix, mult * hidden), OTHER)
        b.add(f"{hc}.scale", (3,), OTHER)
    b.norm("input_layernorm", hidden)
    b.norm("post_attention_layernorm", hidden)
    b.linear("self_attn.q_a_proj", q_rank, hidden)
    b.norm("self_attn.q_a_norm", q_rank)
    b.linear("self_attn.q_b_proj", heads * dim, q_rank)
    b.linear("self_attn.kv_proj", dim, hidden)
    b.norm("self_attn.kv_norm", dim)
    b.linear("self_attn.o_a_proj", groups * o_rank, heads * dim // groups)
    b.linear("self_attn.o_b_proj", hidden, groups * o_rank)
    b.add("self_attn.sinks", (heads,), OTHER)
    if not ratio:
        return
    csa = KINDS[kind].indexed  # compressed sparse attention: the indexed kind
    width = 2 * dim if csa else dim  # CSA compresses two overlapping series
    b.linear("self_attn.compressor.kv_proj", width, hidden)
    b.linear("self_attn.compressor.gate_proj", width, hidden)
    b.norm("self_attn.compressor.kv_norm", dim)
    b.add("self_attn.compressor.position_bias", (ratio, width), OTHER)
    if csa:
        index_dim, index_heads = int(spec["index_head_dim"]), int(cfg.get("index_n_heads") or 64)
        b.linear("self_attn.compressor.indexer.kv_proj", 2 * index_dim, hidden)
        b.linear("self_attn.compressor.indexer.gate_proj", 2 * index_dim, hidden)
        b.norm("self_attn.compressor.indexer.kv_norm", index_dim)
        b.add("self_attn.compressor.indexer.position_bias", (ratio, 2 * index_dim), OTHER)
        b.linear("self_attn.compressor.indexer.q_b_proj", index_heads * index_dim, q_rank)
        b.linear("self_attn.compressor.indexer.scorer.weights_proj", index_heads, hidden)


def _decilm_intermediate(hidden: int, ffn_mult: float) -> int:
    """DeciLM's ffn_mult -> intermediate size: int(2 x mult x hidden / 3), rounded up to a multiple of 256
    (modeling_decilm.py _ffn_mult_to_intermediate_size; the same in vLLM's nemotron_nas.py)."""
    inter = int(2 * ffn_mult * hidden / 3)
    return -(-inter // 256) * 256


def _decilm_layer(b: _Builder, cfg: Mapping, i: int, hidden: int, spec: Mapping, kv_heads: int) -> None:
    """Nemotron-Super (DeciLM, remote code): per block, attention and FFN may each be a no-op (no module, no
    norm) or a single hidden x hidden linear; input_layernorm exists only with attention, post_attention_layernorm
    only with an FFN (modeling_decilm.py DeciLMDecoderLayer)."""
    block = cfg["block_configs"][i] or {}
    attn, ffn = block.get("attention") or {}, block.get("ffn") or {}
    if not attn.get("no_op"):
        b.norm("input_layernorm", hidden)
        if attn.get("replace_with_linear"):
            b.linear("self_attn.linear_attn", hidden, hidden, bias=bool(cfg.get("attention_bias")))
        else:
            _attention(b, cfg, "nemotron-nas", hidden, spec, kv_heads)
    if not ffn.get("no_op"):
        b.norm("post_attention_layernorm", hidden)
        if ffn.get("replace_with_linear"):
            b.linear("mlp.linear_mlp", hidden, hidden, bias=bool(cfg.get("mlp_bias")))
        else:
            inter = _decilm_intermediate(hidden, float(ffn.get("ffn_mult", 1)))
            _dense_mlp(b, "mlp", hidden, inter, gated=True, bias=bool(cfg.get("mlp_bias")))


# ------------------------------------------------------------------ vision towers

def _vision(b: _Builder, raw: Mapping, cfg: Mapping, text_hidden: int) -> list[Tensor]:
    """Vision tower and projector of a multimodal config; counted exactly for the towers kvplan knows,
    refused (exit 3) for the others rather than guessed."""
    vision = raw.get("vision_config")
    if not isinstance(vision, Mapping):
        return []
    vtype = str(vision.get("model_type") or "")
    if vtype in _QWEN3_5_VISION and str(raw.get("model_type")) in ("qwen3_5", "qwen3_5_moe"):
        start = len(b.tensors)
        _qwen3_5_vision(b, vision, text_hidden)
        return b.tensors[start:]
    if vtype not in _MODELLED_VISION:
        raise UnsupportedError(f"vision tower {vtype or '(no model_type)'!r} is not modelled, so its parameters are unknown",
                               where="vision_config.model_type",
                               hint="kvplan counts SigLIP (Gemma-3, LLaVA-NeXT), Pixtral, Llama 4, MoonViT and Qwen3.5 towers; "
                                    "write a spec YAML with `params` and `vision_params`")
    start = len(b.tensors)
    if vtype == "pixtral":
        _pixtral(b, raw, vision, text_hidden)
    elif vtype == "llama4_vision_model":
        _llama4_vision(b, vision, text_hidden)
    elif vtype == "moonvit":
        _moonvit(b, raw, vision, text_hidden)
    else:
        _siglip(b, raw, vision, text_hidden)
    return b.tensors[start:]


def _biased_blocks(b: _Builder, prefix: str, linears: tuple[tuple[str, tuple[int, int]], ...],
                   norms: tuple[str, ...], hidden: int, layers: int) -> None:
    """A ViT-style stack of `layers` blocks whose linears and LayerNorms all carry biases (SigLIP, Llama 4's vision
    model, MoonViT, Qwen3.5's tower): each linear's weight and bias, then each norm's weight and bias."""
    for name, shape in linears:
        b.add(f"{prefix}.{name}.weight", shape, VISION, layers)
        b.add(f"{prefix}.{name}.bias", (shape[0],), VISION, layers)
    for norm in norms:
        b.add(f"{prefix}.{norm}.weight", (hidden,), VISION, layers)
        b.add(f"{prefix}.{norm}.bias", (hidden,), VISION, layers)


def _siglip(b: _Builder, raw: Mapping, vision: Mapping, text_hidden: int) -> None:
    """SigLIP (transformers SiglipVisionModel): patch conv with bias, learned positions, pre-LN encoder layers
    with biased q/k/v/out and fc1/fc2, a final post_layernorm; Gemma-3's projector after it."""
    hidden = int(vision["hidden_size"])
    inter = int(vision["intermediate_size"])
    layers = int(vision["num_hidden_layers"])
    patch, channels = int(vision.get("patch_size") or 14), int(vision.get("num_channels") or 3)
    image = int(vision.get("image_size") or 224)
    b.add("vision_tower.embeddings.patch_embedding.weight", (hidden, channels, patch, patch), VISION)
    b.add("vision_tower.embeddings.patch_embedding.bias", (hidden,), VISION)
    b.add("vision_tower.embeddings.position_embedding.weight", ((image // patch) ** 2, hidden), VISION)
    linears = (("self_attn.q_proj", (hidden, hidden)), ("self_attn.k_proj", (hidden, hidden)),
               ("self_attn.v_proj", (hidden, hidden)), ("self_attn.out_proj", (hidden, hidden)),
               ("mlp.fc1", (inter, hidden)), ("mlp.fc2", (hidden, inter)))
    _biased_blocks(b, "vision_tower.layers", linears, ("layer_norm1", "layer_norm2"), hidden, layers)
    b.add("vision_tower.post_layernorm.weight", (hidden,), VISION)
    b.add("vision_tower.post_layernorm.bias", (hidden,), VISION)
    if vision.get("vision_use_head", True):
        # SiglipMultiheadAttentionPoolingHead, built whenever vision_use_head is true, which is SiglipVisionConfig's
        # default (transformers; vLLM's siglip.py reads the same attribute): a probe token, an nn.MultiheadAttention
        # (packed in_proj and out_proj, with biases), a LayerNorm and an MLP. Gemma-3 turns it off in its file
        b.add("vision_tower.head.probe", (1, 1, hidden), VISION)
        b.add("vision_tower.head.attention.in_proj_weight", (3 * hidden, hidden), VISION)
        b.add("vision_tower.head.attention.in_proj_bias", (3 * hidden,), VISION)
        b.add("vision_tower.head.attention.out_proj.weight", (hidden, hidden), VISION)
        b.add("vision_tower.head.attention.out_proj.bias", (hidden,), VISION)
        b.add("vision_tower.head.layernorm.weight", (hidden,), VISION)
        b.add("vision_tower.head.layernorm.bias", (hidden,), VISION)
        b.add("vision_tower.head.mlp.fc1.weight", (inter, hidden), VISION)
        b.add("vision_tower.head.mlp.fc1.bias", (inter,), VISION)
        b.add("vision_tower.head.mlp.fc2.weight", (hidden, inter), VISION)
        b.add("vision_tower.head.mlp.fc2.bias", (hidden,), VISION)
    model_type = str(raw.get("model_type"))
    if model_type == "gemma3":
        # Gemma3MultiModalProjector: a soft-embedding RMSNorm and one projection matrix
        b.add("multi_modal_projector.mm_input_projection_weight", (hidden, text_hidden), VISION)
        b.add("multi_modal_projector.mm_soft_emb_norm.weight", (hidden,), VISION)
    elif model_type in ("llava", "llava_next"):
        _llava_projector(b, raw, hidden, text_hidden)
    else:
        raise UnsupportedError(f"the projector of {model_type!r} is not modelled", where="model_type",
                               hint="write a spec YAML with `params` and `vision_params`")


def _llava_projector(b: _Builder, raw: Mapping, vision_hidden: int, text_hidden: int) -> None:
    """LlavaMultiModalProjector / LlavaNextMultiModalProjector (transformers): linear_1 from the vision features
    (one vision width per entry of vision_feature_layer, concatenated) to the text width, then linear_2, both
    biased unless multimodal_projector_bias is false; LLaVA-NeXT's model adds `image_newline`, one text-width
    vector put after each row of image features (LlavaNextModel.image_newline)."""
    layers = raw.get("vision_feature_layer", -2)
    n_features = len(layers) if isinstance(layers, list) else 1
    bias = raw.get("multimodal_projector_bias", True) is not False
    b.add("multi_modal_projector.linear_1.weight", (text_hidden, vision_hidden * n_features), VISION)
    b.add("multi_modal_projector.linear_2.weight", (text_hidden, text_hidden), VISION)
    if bias:
        b.add("multi_modal_projector.linear_1.bias", (text_hidden,), VISION)
        b.add("multi_modal_projector.linear_2.bias", (text_hidden,), VISION)
    if str(raw.get("model_type")) == "llava_next":
        b.add("image_newline", (text_hidden,), VISION)


def _llama4_vision(b: _Builder, vision: Mapping, text_hidden: int) -> None:
    """Llama 4's vision encoder (transformers Llama4VisionModel) and Llama4MultiModalProjector: an unfold-and-linear
    patch embedding without bias, a class embedding and learned positions for (image/patch)^2 + 1 tokens, LayerNorms
    (with biases) before and after, encoder layers of biased q/k/v/o and fc1/fc2 with two LayerNorms, then the pixel-
    shuffle adapter (two bias-free linears: intermediate_size -> projector_input_dim -> projector_output_dim) and
    one bias-free projection from vision_output_dim to the text width."""
    hidden = int(vision["hidden_size"])
    inter = int(vision["intermediate_size"])
    layers = int(vision["num_hidden_layers"])
    patch, channels = int(vision.get("patch_size") or 14), int(vision.get("num_channels") or 3)
    image = int(vision.get("image_size") or 448)
    proj_in, proj_out = int(vision.get("projector_input_dim") or 4096), int(vision.get("projector_output_dim") or 4096)
    b.add("vision_model.patch_embedding.linear.weight", (hidden, channels * patch * patch), VISION)
    b.add("vision_model.class_embedding", (hidden,), VISION)
    b.add("vision_model.positional_embedding_vlm", ((image // patch) ** 2 + 1, hidden), VISION)
    for norm in ("layernorm_pre", "layernorm_post"):
        b.add(f"vision_model.{norm}.weight", (hidden,), VISION)
        b.add(f"vision_model.{norm}.bias", (hidden,), VISION)
    linears = (("self_attn.q_proj", (hidden, hidden)), ("self_attn.k_proj", (hidden, hidden)),
               ("self_attn.v_proj", (hidden, hidden)), ("self_attn.o_proj", (hidden, hidden)),
               ("mlp.fc1", (inter, hidden)), ("mlp.fc2", (hidden, inter)))
    norms = ("input_layernorm", "post_attention_layernorm")
    _biased_blocks(b, "vision_model.model.layers", linears, norms, hidden, layers)
    b.add("vision_model.vision_adapter.mlp.fc1.weight", (proj_in, inter), VISION)
    b.add("vision_model.vision_adapter.mlp.fc2.weight", (proj_out, proj_out), VISION)
    b.add("multi_modal_projector.linear_1.weight", (text_hidden, int(vision.get("vision_output_dim") or 7680)), VISION)


def _moonvit(b: _Builder, raw: Mapping, vision: Mapping, text_hidden: int) -> None:
    """MoonViT and Kimi-VL's projector (remote code; vLLM model_executor/models/moonvit.py and kimi_vl.py). The
    tensors are those vLLM 0.19.0 logged as loaded for moonshotai/Kimi-VL-A3B-Instruct ("Loaded weight ... with
    shape", tests/data/vllm_logs/raw/moonshotai-kimi-vl-a3b-i--*.log): a biased patch conv, a learned 2-D position
    table of init_pos_emb_height x init_pos_emb_width, blocks of a fused biased wqkv, wo, two LayerNorms and a
    biased fc0/fc1 MLP, a final LayerNorm; then KimiVLMultiModalProjector: a LayerNorm over the vision width and
    two biased linears on merge_kernel_size patches concatenated (1152 x 2 x 2 = 4608 -> 4608 -> text width)."""
    if str(raw.get("model_type")) != "kimi_vl":
        raise UnsupportedError(f"the projector of {raw.get('model_type')!r} is not modelled", where="model_type",
                               hint="write a spec YAML with `params` and `vision_params`")
    hidden = int(vision["hidden_size"])
    inter = int(vision["intermediate_size"])
    layers = int(vision["num_hidden_layers"])
    patch, channels = int(vision.get("patch_size") or 14), int(vision.get("num_channels") or 3)
    pos_h, pos_w = int(vision.get("init_pos_emb_height") or 64), int(vision.get("init_pos_emb_width") or 64)
    merge = vision.get("merge_kernel_size") or [2, 2]
    merged = hidden * prod(int(m) for m in merge)
    b.add("vision_tower.patch_embed.proj.weight", (hidden, channels, patch, patch), VISION)
    b.add("vision_tower.patch_embed.proj.bias", (hidden,), VISION)
    b.add("vision_tower.patch_embed.pos_emb.weight", (pos_h, pos_w, hidden), VISION)
    linears = (("wqkv", (3 * hidden, hidden)), ("wo", (hidden, hidden)),
               ("mlp.fc0", (inter, hidden)), ("mlp.fc1", (hidden, inter)))
    _biased_blocks(b, "vision_tower.encoder.blocks", linears, ("norm0", "norm1"), hidden, layers)
    b.add("vision_tower.encoder.final_layernorm.weight", (hidden,), VISION)
    b.add("vision_tower.encoder.final_layernorm.bias", (hidden,), VISION)
    b.add("multi_modal_projector.pre_norm.weight", (hidden,), VISION)
    b.add("multi_modal_projector.pre_norm.bias", (hidden,), VISION)
    b.add("multi_modal_projector.linear_1.weight", (merged, merged), VISION)
    b.add("multi_modal_projector.linear_1.bias", (merged,), VISION)
    b.add("multi_modal_projector.linear_2.weight", (text_hidden, merged), VISION)
    b.add("multi_modal_projector.linear_2.bias", (text_hidden,), VISION)


def _qwen3_5_vision(b: _Builder, vision: Mapping, text_hidden: int) -> None:
    """Qwen3.5 / Qwen3.6's vision transformer and patch merger (transformers 5.24 modeling_qwen3_5.py
    Qwen3_5VisionModel; vLLM 0.34 qwen3_5.py builds it as qwen3_vl.py Qwen3_VisionTransformer): a biased Conv3d over
    temporal_patch_size x patch x patch pixels, a learned table of num_position_embeddings positions, `depth` blocks
    of two LayerNorms (with biases), a fused biased qkv, a biased proj and a biased linear_fc1/linear_fc2 MLP, then
    the merger: a LayerNorm over the vision width and two biased linears on spatial_merge_size^2 patches
    concatenated, into out_hidden_size (the text width). Deepstack mergers (Qwen3-VL) are refused: Qwen3.5 has none."""
    if vision.get("deepstack_visual_indexes"):
        raise UnsupportedError("a Qwen3.5 vision tower with deepstack mergers is not modelled",
                               where="vision_config.deepstack_visual_indexes",
                               hint="write a spec YAML with `params` and `vision_params`")
    hidden = int(vision["hidden_size"])
    inter = int(vision["intermediate_size"])
    layers = int(vision["depth"])
    patch, channels = int(vision.get("patch_size") or 16), int(vision.get("in_channels") or 3)
    temporal = int(vision.get("temporal_patch_size") or 2)
    merged = hidden * int(vision.get("spatial_merge_size") or 2) ** 2
    out = int(vision.get("out_hidden_size") or text_hidden)
    b.add("visual.patch_embed.proj.weight", (hidden, channels, temporal, patch, patch), VISION)
    b.add("visual.patch_embed.proj.bias", (hidden,), VISION)
    b.add("visual.pos_embed.weight", (int(vision["num_position_embeddings"]), hidden), VISION)
    linears = (("attn.qkv", (3 * hidden, hidden)), ("attn.proj", (hidden, hidden)),
               ("mlp.linear_fc1", (inter, hidden)), ("mlp.linear_fc2", (hidden, inter)))
    _biased_blocks(b, "visual.blocks", linears, ("norm1", "norm2"), hidden, layers)
    b.add("visual.merger.norm.weight", (hidden,), VISION)
    b.add("visual.merger.norm.bias", (hidden,), VISION)
    b.add("visual.merger.linear_fc1.weight", (merged, merged), VISION)
    b.add("visual.merger.linear_fc1.bias", (merged,), VISION)
    b.add("visual.merger.linear_fc2.weight", (out, merged), VISION)
    b.add("visual.merger.linear_fc2.bias", (out,), VISION)


def _pixtral(b: _Builder, raw: Mapping, vision: Mapping, text_hidden: int) -> None:
    """Pixtral (transformers PixtralVisionModel): bias-free patch conv, RMSNorm ln_pre, RoPE (no learned
    positions), layers of RMSNorm + q/k/v/o + RMSNorm + gated MLP; Mistral3MultiModalProjector after it:
    RMSNorm, a patch merger over spatial_merge_size^2 patches, and two linears into the text width."""
    hidden = int(vision["hidden_size"])
    inter = int(vision["intermediate_size"])
    layers = int(vision["num_hidden_layers"])
    heads = int(vision["num_attention_heads"])
    head_dim = int(vision.get("head_dim") or hidden // heads)
    patch, channels = int(vision.get("patch_size") or 16), int(vision.get("num_channels") or 3)
    b.add("vision_tower.patch_conv.weight", (hidden, channels, patch, patch), VISION)
    b.add("vision_tower.ln_pre.weight", (hidden,), VISION)
    for name, shape in (("attention.q_proj", (heads * head_dim, hidden)), ("attention.k_proj", (heads * head_dim, hidden)),
                        ("attention.v_proj", (heads * head_dim, hidden)), ("attention.o_proj", (hidden, heads * head_dim)),
                        ("feed_forward.gate_proj", (inter, hidden)), ("feed_forward.up_proj", (inter, hidden)),
                        ("feed_forward.down_proj", (hidden, inter))):
        b.add(f"vision_tower.layers.{name}.weight", shape, VISION, layers)
    b.add("vision_tower.layers.attention_norm.weight", (hidden,), VISION, layers)
    b.add("vision_tower.layers.ffn_norm.weight", (hidden,), VISION, layers)
    if str(raw.get("model_type")) != "mistral3":
        raise UnsupportedError(f"the projector of {raw.get('model_type')!r} is not modelled", where="model_type",
                               hint="write a spec YAML with `params` and `vision_params`")
    merge = int(raw.get("spatial_merge_size") or 2)
    feature_layers = raw.get("vision_feature_layer", -1)
    n_features = len(feature_layers) if isinstance(feature_layers, list) else 1
    bias = bool(raw.get("multimodal_projector_bias"))
    b.add("multi_modal_projector.norm.weight", (hidden,), VISION)
    b.add("multi_modal_projector.patch_merger.merging_layer.weight", (hidden, hidden * merge * merge), VISION)
    b.add("multi_modal_projector.linear_1.weight", (text_hidden, hidden * n_features), VISION)
    b.add("multi_modal_projector.linear_2.weight", (text_hidden, text_hidden), VISION)
    if bias:
        b.add("multi_modal_projector.linear_1.bias", (text_hidden,), VISION)
        b.add("multi_modal_projector.linear_2.bias", (text_hidden,), VISION)
