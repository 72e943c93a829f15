"""vLLM's memory budget for the KV cache, modelled term by term. Pure: integers of bytes out.

vLLM (v1/worker/gpu_worker.py Worker.determine_available_memory) gives the KV cache

    available = ceil(total x gpu_memory_utilization)              "worker requested memory"
                - weights                                          "Model loading took X GiB"
                - activation peak of one profiling forward         "torch peak memory increase"
                - non-torch memory that appeared while profiling   "non-torch forward increase memory"
                - CUDA-graph estimate (0.33 only; 0.19 logs it but subtracts it only when
                  VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1, default 0)

per worker (one GPU). vLLM measures the last three on the GPU; kvplan has to predict them from the
architecture and the launch flags. Each term below says how, and which part is a constant measured on
the 42 real vLLM 0.19.0 start-up logs in tests/data/vllm_logs (H100 80GB). The constants are global
(one value for every model), never one per log; docs/engines/calibration.md lists the residual of
every log. Terms measured on other GPUs or vLLM builds may differ by tenths of a GiB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from kvplan.core.cache import pp_layer_counts
from kvplan.core.dtypes import DType, WeightFormat, weight_bytes
from kvplan.core.errors import UnsupportedError
from kvplan.core.spec import MLA, NONE, STATE, ModelSpec
from kvplan.engines.vllm.releases import Release

GIB = 2**30
MIB = 2**20

# -- constants measured on the 42 logs (vLLM 0.19.0, H100 80GB); see docs/engines/calibration.md ---------
# The sampler warm-up (gpu_model_runner.py _dummy_sampler_run) turns [R, vocab] logits into float32 and
# runs temperature, top-k/top-p (a sort: values and int64 indices) and sampling on them. Least squares over
# the 30 dense text-only logs gives 12.36 bytes of float32 work per logit on top of the logits themselves
# (in the model dtype) and a fixed 80 MiB, with residuals of -0.03..+0.04 GiB.
SAMPLER_BYTES_PER_LOGIT = Fraction(1236, 100)
PROFILE_BASE_BYTES = 80 * MIB
# Multimodal models first run the vision encoder on a dummy batch and keep its outputs in the encoder
# cache during the text profile (gpu_model_runner.py profile_run). The 5 multimodal logs sit +0.02..+0.24
# GiB above the text-only model; their mean is charged, not an architecture-derived figure.
MULTIMODAL_PROFILE_BYTES = 150 * MIB
# Memory outside torch that appears during the profile run: cuBLAS/cuDNN workspaces and kernel images
# (0.24-0.26 GiB on one GPU; 0.46 for the Granite-3.x text models, unexplained); at TP >= 2 the
# communication buffers (NCCL, custom all-reduce) are created after the init snapshot: 2.06-2.11 GiB at
# TP 2, 2.13-2.21 at TP 4. Under PP (TP 1) NCCL initialises before the snapshot and only 0.07 GiB appears.
NON_TORCH_ONE_GPU = 256 * MIB
NON_TORCH_TP2 = 2136 * MIB  # 2.086 GiB, mean of the 5 TP-2 logs
NON_TORCH_PER_EXTRA_RANK = 37 * MIB  # TP 4: 2.157 GiB, mean of the 3 TP-4 logs
NON_TORCH_PP = 72 * MIB
# CUDA context (and NCCL communicators at TP/PP >= 2) already in use at the init snapshot: vLLM refuses to
# start when the free memory then is below the requested memory (v1/worker/utils.py request_memory).
CUDA_CONTEXT_ONE_GPU = 522 * MIB  # "non_torch_memory=0.51GiB" in every one-GPU log
CUDA_CONTEXT_MULTI_GPU = 1546 * MIB  # 1.48-1.53 GiB with TP or PP
# CUDA-graph estimate (gpu_model_runner.py profile_cudagraph_memory): grows with the layers captured;
# least squares over the 38 logs: 0.17 GiB + 0.0192 GiB per layer on the rank (mean error 0.12 GiB).
CUDA_GRAPH_BASE = 174 * MIB
CUDA_GRAPH_PER_LAYER = 20 * MIB
# v1/worker/gpu_model_runner.py: RotaryEmbedding keeps a [max_position, rotary_dim] cos/sin cache in the
# model dtype on every rank ("Model loading took" includes it: Llama-3.1-8B 14.99 GiB = 14.96 + 0.03).


@dataclass(frozen=True)
class VllmBudget:
    """One worker's (one GPU's) KV-cache budget, each term as vLLM would log it."""

    stage: int  # pipeline stage of this worker
    layers: int  # decoder layers on this worker
    total_bytes: int  # torch.cuda.mem_get_info() total
    gpu_memory_utilization: str
    requested_bytes: int  # ceil(total x utilization)
    weights_bytes: int
    activation_peak_bytes: int
    non_torch_bytes: int
    cuda_graph_bytes: int  # the profiled estimate
    cuda_graph_subtracted: bool  # 0.33 subtracts it; 0.19 only logs it
    context_bytes: int  # CUDA context (+ NCCL) at the init snapshot, outside the budget
    available_bytes: int  # what the KV cache gets

    @property
    def non_kv_bytes(self) -> int:
        """vLLM's "Total non KV cache memory"."""
        return self.weights_bytes + self.activation_peak_bytes + self.non_torch_bytes

    @property
    def starts(self) -> bool:
        """vLLM refuses to start when the free memory at the snapshot is below the requested memory."""
        return self.total_bytes - self.context_bytes >= self.requested_bytes


def default_batch_limits(capacity_bytes: int | None, gpu_name: str | None, release: Release) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) that `vllm serve` picks when not told
    (engine/arg_utils.py EngineArgs.get_batch_defaults): 8192/1024 on GPUs of >= 70 GiB that are not an A100
    ("a100" in the device name), else 2048/256; 0.33 adds 16384/1024 at >= 160 GiB."""
    if capacity_bytes is None:
        return 8192, 1024
    big = capacity_bytes >= 70 * GIB and "a100" not in (gpu_name or "").lower()
    if release.large_gpu_batch_defaults and capacity_bytes >= 160 * GIB:
        return 16384, 1024
    return (8192, 1024) if big else (2048, 256)


def resolve_batch_limits(mnbt: int | None, max_num_seqs: int | None, max_model_len: int,
                         capacity_bytes: int | None, gpu_name: str | None, release: Release) -> tuple[int, int]:
    """The scheduler limits after vLLM's defaulting (engine/arg_utils.py
    _set_default_max_num_seqs_and_batched_tokens_args): defaults fill what the user left out,
    max_num_batched_tokens is capped at max_num_seqs x max_model_len (chunked prefill on, the v1 default),
    and max_num_seqs at max_num_batched_tokens."""
    d_tokens, d_seqs = default_batch_limits(capacity_bytes, gpu_name, release)
    seqs = max_num_seqs if max_num_seqs is not None else d_seqs
    tokens = mnbt if mnbt is not None else min(d_tokens, seqs * max_model_len)
    return tokens, min(seqs, tokens)


# ------------------------------------------------------------------------------------------ terms

def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _require(spec: ModelSpec, *fields: str) -> None:
    missing = [f for f in fields if getattr(spec, f) is None]
    if missing:
        raise UnsupportedError(f"vLLM's memory budget needs {', '.join(missing)} of the model, which the spec does not give",
                               where=f"{spec.source or spec.name}: {missing[0]}",
                               hint="add it to the spec, or give --kv-cache-memory SIZE to skip the budget model")


def _attention_params(spec: ModelSpec) -> int:
    """Q, K, V and O projection parameters of one attention layer (for the MLP-width estimate)."""
    h = spec.hidden_size
    heads = spec.attention_heads * spec.head_dim
    kv = spec.kv_heads * (spec.head_dim + (spec.v_head_dim or spec.head_dim))
    return h * heads * 2 + h * kv


def stage_weight_bytes(spec: ModelSpec, weight_fmt: WeightFormat | None, model_dtype: DType, tp: int,
                       pp: int) -> list[int]:
    """Weights one GPU of each pipeline stage holds after loading ("Model loading took").

    The whole model's bytes come from the spec (its checkpoint size when known) or from the parameter count
    in the requested format. Quantization (--dtype fp8/int8/int4, vLLM's --quantization) applies to the
    linear layers only: vLLM's quantization methods leave the embeddings, the output head and the vision
    tower in the model dtype. Tensor
    parallelism shards all of it (VocabParallelEmbedding, column/row-parallel linears); pipeline stage 0
    holds the embedding and vision tower, the last stage the output head, each stage its own decoder layers
    (distributed/utils.py get_pp_indices). Every rank also keeps the rotary cos/sin cache.
    """
    _require(spec, "hidden_size", "vocab_size")
    act_bits = model_dtype.bits
    embed_params = spec.vocab_size * spec.hidden_size
    # a tied output head is the embedding itself (counted once in params, stored once in the checkpoint);
    # with PP the last stage still builds its own copy (vLLM ties only within one rank's modules)
    tied = spec.tie_word_embeddings is True
    vision = spec.vision_params or 0
    if weight_fmt is None and spec.weights_bytes is not None:
        total = spec.weights_bytes
        edge = _cdiv(embed_params * act_bits, 8)  # embed and head: their share of the checkpoint
        embed_b = head_b = min(edge, total // 4)
        vision_b = _cdiv(vision * act_bits, 8)
    elif weight_fmt is not None and weight_fmt.bits_per_param < 16:
        embed_b = head_b = _cdiv(embed_params * act_bits, 8)
        vision_b = _cdiv(vision * act_bits, 8)
        linear = max(spec.params - (1 if tied else 2) * embed_params - vision, 0)
        total = weight_bytes(linear, weight_fmt) + embed_b + (0 if tied else head_b) + vision_b
    else:
        bits = weight_fmt.bits_per_param if weight_fmt is not None else act_bits
        per = Fraction(bits, 8)
        total = math.ceil(spec.params * per)
        embed_b = head_b = math.ceil(embed_params * per)
        vision_b = math.ceil(vision * per)
    layers_b = max(total - embed_b - (0 if tied else head_b) - vision_b, 0)
    rotary = (spec.max_context or 0) * spec.head_dim * model_dtype.bits // 8
    counts = pp_layer_counts(spec.layers, pp)
    out = []
    for stage, n in enumerate(counts):
        b = layers_b * n // spec.layers
        if stage == 0:
            b += embed_b + vision_b
        if stage == pp - 1 and (not tied or pp > 1):
            b += head_b
        out.append(_cdiv(b, tp) + rotary)
    return out


def activation_peak_bytes(spec: ModelSpec, model_dtype: DType, *, stage: int, pp: int, tp: int,
                          max_num_batched_tokens: int, max_num_seqs: int) -> int:
    """Torch peak memory increase of vLLM's profile run on one GPU (gpu_model_runner.py profile_run).

    Two phases, the larger one sets the peak:
    - the forward of `max_num_batched_tokens` (T) dummy tokens: at the widest point of a decoder layer the
      MLP holds its gate/up output and activation next to the hidden states and residual:
      T x (2 x hidden + MLP width) x dtype bytes, the MLP width estimated as the per-layer MLP parameters
      (routed experts counted at their active share) over hidden size, on one TP rank;
    - the sampler warm-up on the last pipeline stage: R = min(max_num_seqs, T) requests of [R, vocab]
      logits in the model dtype plus SAMPLER_BYTES_PER_LOGIT of float32 work per logit, while the
      forward's [T, hidden] output is still held. Logits are gathered to the full vocabulary, so this does
      not shrink with TP (Qwen2.5-7B: 2.21 GiB at TP 1, 2 and 4).
    A non-first pipeline stage also holds the [T, hidden] hidden states and residual it received.
    Multimodal models add the encoder profile (MULTIMODAL_PROFILE_BYTES).
    """
    _require(spec, "hidden_size", "vocab_size")
    b = model_dtype.bits // 8 or 1
    h, T = spec.hidden_size, max_num_batched_tokens
    R = min(max_num_seqs, T)
    params = spec.active_params or spec.params
    attn_layers = sum(1 for layer in spec.layer_specs if layer.kind not in (NONE, STATE, MLA))
    edges = (1 if spec.tie_word_embeddings is True else 2) * spec.vocab_size * h  # embedding (+ untied head)
    layer_params = max(params - (spec.vision_params or 0) - edges, 0) // max(spec.layers, 1)
    mlp_params = max(layer_params - (_attention_params(spec) if attn_layers else 0), 0)
    forward = T * (2 * h + _cdiv(mlp_params, h * tp)) * b
    hidden_out = T * h * b
    received = 2 * T * h * b if stage > 0 else 0
    peak = forward + received
    if stage == pp - 1:
        sampler = math.ceil(R * spec.vocab_size * (b + SAMPLER_BYTES_PER_LOGIT))
        peak = max(peak, sampler + hidden_out + received)
    if spec.vision_params and stage == 0:
        peak += MULTIMODAL_PROFILE_BYTES
    return peak + PROFILE_BASE_BYTES


def non_torch_bytes(tp: int, pp: int) -> int:
    """Non-torch memory that appears during the profile run on one GPU (see the constants above)."""
    if tp >= 2:
        return NON_TORCH_TP2 + NON_TORCH_PER_EXTRA_RANK * (tp - 2)
    if pp >= 2:
        return NON_TORCH_PP
    return NON_TORCH_ONE_GPU


def cuda_graph_bytes(layers_on_rank: int) -> int:
    """vLLM's profiled CUDA-graph estimate for one GPU (a fit, see CUDA_GRAPH_BASE)."""
    return CUDA_GRAPH_BASE + CUDA_GRAPH_PER_LAYER * layers_on_rank


def requested_bytes(total: int, util: Fraction) -> int:
    """ceil(total x utilization) in vLLM's own float arithmetic (v1/worker/utils.py request_memory): the
    float product can differ from the exact one by a byte, and vLLM uses the float."""
    return math.ceil(total * float(util))


def vllm_budgets(spec: ModelSpec, *, weight_fmt: WeightFormat | None, model_dtype: DType, tp: int, pp: int,
                 total_bytes: int, util: Fraction, max_num_batched_tokens: int, max_num_seqs: int,
                 release: Release) -> tuple[VllmBudget, ...]:
    """The budget of one GPU per pipeline stage (the TP ranks of a stage are alike)."""
    requested = requested_bytes(total_bytes, util)
    weights = stage_weight_bytes(spec, weight_fmt, model_dtype, tp, pp)
    counts = pp_layer_counts(spec.layers, pp)
    context = CUDA_CONTEXT_ONE_GPU if tp * pp == 1 else CUDA_CONTEXT_MULTI_GPU
    out = []
    for stage in range(pp):
        peak = activation_peak_bytes(spec, model_dtype, stage=stage, pp=pp, tp=tp,
                                     max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs)
        nt = non_torch_bytes(tp, pp)
        graphs = cuda_graph_bytes(counts[stage])
        subtract = release.cuda_graph_subtracted
        available = requested - weights[stage] - peak - nt - (graphs if subtract else 0)
        out.append(VllmBudget(stage=stage, layers=counts[stage], total_bytes=total_bytes,
                              gpu_memory_utilization=_fraction_text(util), requested_bytes=requested,
                              weights_bytes=weights[stage], activation_peak_bytes=peak, non_torch_bytes=nt,
                              cuda_graph_bytes=graphs, cuda_graph_subtracted=subtract, context_bytes=context,
                              available_bytes=available))
    return tuple(out)


def _fraction_text(f: Fraction) -> str:
    """0.9 rather than 9/10: the utilization as a user writes it."""
    if f.denominator == 1:
        return str(f.numerator)
    for digits in range(1, 12):
        scaled = f * 10**digits
        if scaled.denominator == 1:
            return f"{f.numerator / f.denominator:.{digits}f}"
    return f"{float(f):.6f}"
