"""The weights one GPU holds once an engine has loaded a model: engine-neutral arithmetic every engine's budget
shares (vLLM's, SGLang's and TensorRT-LLM's models count the same checkpoint the same way, each citing where its
engine loads differently). Pure: integers of bytes.
"""

from __future__ import annotations

import math
from fractions import Fraction

from kvplan.core.cache import pp_layer_counts
from kvplan.core.dtypes import DType, WeightFormat, weight_bytes, weight_format
from kvplan.core.errors import UnsupportedError
from kvplan.core.spec import LayerSpec, ModelSpec

GIB = 2**30


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    return cdiv(a, b) * b


def require_fields(spec: ModelSpec, *fields: str) -> None:
    missing = [f for f in fields if getattr(spec, f) is None]
    if missing:
        raise UnsupportedError(f"vLLM's memory budget needs {', '.join(missing)} of the model, which the spec does not give",
                               where=f"{spec.source or spec.name}: {missing[0]}",
                               hint="add it to the spec, or give --kv-cache-memory SIZE to skip the budget model")


def model_weights(spec: ModelSpec, fmt: WeightFormat | None) -> tuple[int, str]:
    """Weight bytes and where the figure came from."""
    if fmt is None and spec.weights_bytes is not None:
        return spec.weights_bytes, spec.weights_source or "weights_bytes in the spec"
    spec.require_known_weights()  # a tower kvplan cannot size: no figure from params
    fmt = fmt or weight_format(spec.weight_dtype or spec.dtype)
    return weight_bytes(spec.params, fmt), f"{spec.params:,} params x {fmt.name} ({fmt.note})"


def format_assumption(spec: ModelSpec, fmt: WeightFormat | None, *, linear_only: bool) -> str | None:
    """What a --dtype weight format assumes, said once (None when none was given or it is a plain 16/32-bit one):
    the quantized formats are a layout kvplan assumes, not the checkpoint's. `linear_only`: the engine keeps the
    embedding, head and vision tower in the model dtype (stage_weight_bytes), else every parameter is counted so."""
    if fmt is None or fmt.name in ("bf16", "fp16", "fp32"):
        return None
    bits = float(fmt.bits_per_param)
    where = ("the linear layers at {b:g} bits a parameter ({note}); the embedding, output head and vision tower in the "
             "model dtype" if linear_only else "every parameter at {b:g} bits ({note})").format(b=bits, note=fmt.note)
    return (f"weights as {fmt.name} (--dtype, or online quantization): {where}. A quantized checkpoint's own config.json and safetensors headers give its "
            "exact bytes (AWQ's zero points, GPTQ's g_idx, layers left unquantized)"
            + (f"; this spec's {spec.weights_bytes:,} B of checkpoint are not used" if spec.weights_bytes else ""))


def mxfp4_expert_bytes(spec: ModelSpec, tp: int, backend: str) -> tuple[int, int]:
    """(bytes of the MXFP4 experts in the checkpoint, whole model; bytes vLLM allocates for them on one TP rank).

    mxfp4.py Mxfp4MoEMethod.create_weights: per expert and layer a fused gate_up [2 x I_pad, H_pad / 2] uint8 with
    a uint8 scale per 32 weights and a bf16 bias [2 x I_pad], and down [H_pad, I_pad / 2] with its scales and bf16
    bias [H_pad], where I_pad is the per-rank width I / tp rounded up to the kernel's tile: Marlin 128 (and H to
    256: "the moe marlin kernel requires n % 256 == 0 and k % 128 == 0"), SM100 FlashInfer 256 / 256, triton_kernels
    64 (H unpadded); on ROCm I and H both to 256 or 128 ("rocm-256", "rocm-128") and the emulation backend to the
    32-wide MX block ("emulation"). The checkpoint stores I x H x 17 / 32 bytes per matrix (weights.py _mxfp4) and
    bf16 biases."""
    moe, h = spec.moe, spec.hidden_size
    e, i = moe.experts, moe.intermediate_size
    tile_i, tile_h = {"marlin": (128, 256), "flashinfer-sm100": (256, 256), "triton": (64, 1), "rocm-256": (256, 256),
                      "rocm-128": (128, 128), "emulation": (32, 32)}[backend]
    ip, hp = round_up(cdiv(i, tp), tile_i), round_up(h, tile_h)
    per_expert = (2 * ip * hp // 2 + 2 * ip * hp // 32 + 2 * ip * 2) + (hp * ip // 2 + hp * ip // 32 + hp * 2)
    loaded = moe.layers * e * per_expert
    checkpoint = moe.layers * e * ((2 * i * h + h * i) * 17 // 32 + (2 * i + h) * 2)
    return checkpoint, loaded


def stage_weight_bytes(spec: ModelSpec, weight_fmt: WeightFormat | None, model_dtype: DType, tp: int, pp: int, *,
                       mxfp4_kernel: str | None = None, fp8_moe_loading: int = 0,
                       notes: list[str] | None = None) -> list[int]:
    """Weights one GPU of each pipeline stage holds after loading ("Model loading took").

    The whole model's bytes come from the spec (its checkpoint size when known) or from the parameter count
    in the requested format. Quantization (--dtype fp8/int8/int4, vLLM's --quantization) applies to the
    linear layers only: vLLM's quantization methods leave the embeddings, the output head and the vision
    tower in the model dtype. Tensor parallelism shards all of it (VocabParallelEmbedding, column/row-parallel
    linears); pipeline stage 0 holds the embedding and vision tower, the last stage the output head, each stage its
    own decoder layers (distributed/utils.py get_pp_indices). Every rank also keeps the rotary cos/sin cache
    (_rotary_cache_bytes: Llama-3.1-8B's 14.99 GiB logged = 14.96 + 0.03).
    An MXFP4 checkpoint's experts are counted as vLLM allocates them for `mxfp4_kernel` (mxfp4_backend,
    mxfp4_expert_bytes); without one, as the checkpoint stores them. An FP8 MoE checkpoint's GPUs get
    `fp8_moe_loading` more (Constants.fp8_moe_loading_bytes).
    Multi-head latent attention keeps its a-projections whole on every TP rank: vLLM's
    fused_qkv_a_proj (disable_tp=True) or kv_a_proj_with_mqa (ReplicatedLinear), models/deepseek_v2.py
    DeepseekV2MLAAttention from 0.10 on; SGLang 0.5.23's fused_qkv_a_proj_with_mqa / kv_a_proj_with_mqa
    (ReplicatedLinear); TensorRT-LLM's PyTorch backend builds the same fused kv_a_proj_with_mqa as a Linear given no
    mapping, so one TP rank (_torch/modules/attention.py MLA). hidden x (q_lora_rank + kv_lora_rank +
    qk_rope_head_dim) per MLA layer: 0.92 G parameters for DeepSeek-V3, 0.81 GB more on each of 8 ranks in FP8 than
    an even split. So are GPTQ's act-order scales (_kept_whole).
    """
    require_fields(spec, "hidden_size", "vocab_size")
    spec.require_known_weights(budget=True)
    act_bits = model_dtype.bits
    embed_params = spec.vocab_size * spec.hidden_size
    # a tied output head is the embedding itself (counted once in params, stored once in the checkpoint);
    # with PP the last stage still builds its own copy (vLLM ties only within one rank's modules)
    tied = spec.tie_word_embeddings is True
    vision = spec.vision_params or 0
    expert_extra = 0  # per rank: loaded experts minus their checkpoint share
    if weight_fmt is None and spec.weights_bytes is not None:
        total = spec.weights_bytes
        edge = cdiv(embed_params * act_bits, 8)  # embed and head: their share of the checkpoint
        embed_b = head_b = min(edge, total // 4)
        vision_b = cdiv(vision * act_bits, 8)
        if spec.quant_method == "mxfp4" and spec.moe is not None and mxfp4_kernel is not None:
            backend = mxfp4_kernel
            checkpoint, loaded = mxfp4_expert_bytes(spec, tp, backend)
            expert_extra = loaded - cdiv(checkpoint, tp)
            if notes is not None:
                notes.append(f"MXFP4 experts loaded for vLLM's {backend} kernel: {loaded * tp / GIB:.2f} GiB over the "
                             f"TP group against {checkpoint / GIB:.2f} GiB in the checkpoint (padding to the kernel's "
                             "tiles, mxfp4.py create_weights)" + (
                                 "; triton_kernels' swizzled layout may add more (not sized)" if backend == "triton"
                                 else ""))
    elif weight_fmt is not None and weight_fmt.bits_per_param < 16:
        embed_b = head_b = cdiv(embed_params * act_bits, 8)
        vision_b = cdiv(vision * act_bits, 8)
        linear = max(spec.params - (1 if tied else 2) * embed_params - vision, 0)
        total = weight_bytes(linear, weight_fmt) + embed_b + (0 if tied else head_b) + vision_b
    else:
        bits = weight_fmt.bits_per_param if weight_fmt is not None else act_bits
        per = Fraction(bits, 8)
        total = math.ceil(spec.params * per)
        embed_b = head_b = math.ceil(embed_params * per)
        vision_b = math.ceil(vision * per)
    layers_b = max(total - embed_b - (0 if tied else head_b) - vision_b, 0)
    rotary = _rotary_cache_bytes(spec, model_dtype)
    counts = pp_layer_counts(spec.layers, pp)
    # the replicated a-projections of one MLA layer, at the decoder layers' own bytes per parameter (the
    # checkpoint's quantization, scales included)
    decoder_params = spec.params - (1 if tied else 2) * embed_params - vision
    a_params = _mla_a_params(spec) if tp > 1 else 0
    a_bytes = Fraction(a_params * layers_b, decoder_params) if a_params and decoder_params > 0 else Fraction(0)
    out = []
    first = 0
    for stage, n in enumerate(counts):
        b = layers_b * n // spec.layers
        if stage == 0:
            b += embed_b + vision_b
        if stage == pp - 1 and (not tied or pp > 1):
            b += head_b
        whole = _kept_whole(spec, spec.layer_specs[first:first + n], a_bytes, weight_fmt, tp)
        first += n
        out.append(cdiv(b - whole, tp) + whole + expert_extra * n // spec.layers + rotary)
    if fp8_moe_loading and spec.quant_method == "fp8" and spec.moe is not None and weight_fmt is None:
        out = [w + fp8_moe_loading for w in out]
    return out


def _rotary_cache_bytes(spec: ModelSpec, model_dtype: DType) -> int:
    """vLLM's cos/sin cache, [max_position, rotary_dim] cast to the model dtype (0.19.0 rotary_embedding/base.py
    RotaryEmbeddingBase). get_rope's rotary_dim is int(head_size x partial_rotary_factor), head_size being
    qk_rope_head_dim for MLA (models/deepseek_v2.py get_rope(qk_rope_head_dim, ...)); multimodal rotary keeps
    4 x max_position rows (rotary_embedding/mrope.py MRotaryEmbedding cache_max_position_num)."""
    width = spec.mla.qk_rope_head_dim if spec.mla is not None else spec.rotary_dim or spec.head_dim
    return (spec.max_context or 0) * (4 if spec.mrope else 1) * width * model_dtype.bits // 8


def _kept_whole(spec: ModelSpec, stage_layers: tuple[LayerSpec, ...], a_bytes: Fraction, weight_fmt: WeightFormat | None,
                tp: int) -> int:
    """Bytes of a pipeline stage's layers every TP rank loads whole rather than 1/tp of: the MLA a-projections
    (`a_bytes` a latent layer), and a GPTQ checkpoint's row-parallel scales and zero points under act-order or one
    group per column (spec.tp_whole_bytes, from model/weights.py _row_parallel, which cites vLLM's gptq.py /
    gptq_marlin.py): Genz-70B 4-bit group 32 holds 1.89 GB of them, 6.7 GB a GPU at TP 8 against 5.1 GB for an even
    split. A --dtype format replaces the checkpoint's, and its scales."""
    mla = math.ceil(a_bytes * sum(1 for layer in stage_layers if layer.latent))
    gptq = (spec.tp_whole_bytes or 0) if tp > 1 and weight_fmt is None else 0
    return mla + gptq * len(stage_layers) // spec.layers


def _mla_a_params(spec: ModelSpec) -> int:
    """Parameters of one MLA layer's a-projections (query and latent), which no engine splits over TP."""
    if spec.mla is None or spec.hidden_size is None:
        return 0
    m = spec.mla
    return spec.hidden_size * ((m.q_lora_rank or 0) + m.kv_lora_rank + m.qk_rope_head_dim)


def linear_bits(spec: ModelSpec, weight_fmt, act: DType) -> Fraction:
    """Bits per linear-layer parameter of the target as loaded: the requested format, else the checkpoint's
    (weights_bytes over the parameters outside the 16-bit embedding and head), else the model dtype."""
    if weight_fmt is not None:
        return Fraction(weight_fmt.bits_per_param)
    if spec.weights_bytes is not None and spec.vocab_size and spec.hidden_size:
        edge = (1 if spec.tie_word_embeddings else 2) * spec.vocab_size * spec.hidden_size
        vision = spec.vision_params or 0
        edge_bytes = Fraction((edge + vision) * act.bits, 8)
        linear = spec.params - edge - vision
        if linear > 0 and spec.weights_bytes > edge_bytes:
            return (Fraction(spec.weights_bytes) - edge_bytes) * 8 / linear
    return Fraction(act.bits)


def expert_bytes(spec: ModelSpec, weight_fmt, act: DType) -> int:
    """The routed experts' weights, whole model."""
    return math.ceil(spec.moe.expert_params * linear_bits(spec, weight_fmt, act) / 8)
