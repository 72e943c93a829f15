"""vLLM's memory budget for the KV cache, modelled term by term, for every release line. Pure: integers of bytes.

vLLM (v1/worker/gpu_worker.py Worker.determine_available_memory) gives the KV cache, per worker (one GPU):

    available = requested                       "worker requested memory": total x gpu_memory_utilization
                - weights                       "Model loading took X GiB"
                - activation peak               "torch peak memory increase" of the profile run
                - non-torch memory              "non-torch forward increase memory"
                - CUDA-graph estimate           from 0.20 (0.18-0.19 log it, subtract it only with
                                                 VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1)

0.27+ write the same as requested - (free-memory drop + transient torch peak) - graph estimate: the drop holds the
weights, the non-torch memory and what torch keeps allocated after the profile (the modular fused-MoE workspace),
the transient peak the rest, so the terms below add up to the same figure. Which rule a release follows is its
releases.Release; this module asks it, never a version number.

What is derived from vLLM's source and what is a constant measured on logs:
- requested, weights (checkpoint bytes, quantization as vLLM loads it: MXFP4 experts padded to the kernel's
  tiles, embeddings / head / vision tower in the model dtype, TP and PP split, the rotary cache), the profile
  run's shape (max_num_batched_tokens tokens, min(max_num_seqs, tokens) sampled requests, the release's and the
  GPU's defaults) and the fused-MoE workspace are derived;
- fitted, each where the source cannot size it: the sampler's work bytes per logit (PyTorch's sort and the
  sampling kernels allocate them), a fixed part of the profile peak, the multimodal encoder profile, the
  non-torch memory (cuBLAS / NCCL / custom all-reduce buffers allocated by libraries) and the CUDA-graph
  estimate. Each says what it was fitted on; benchmarks/vllm_budget_error.py refits them leaving each log out
  and docs/engines/calibration.md has the errors. The band (`uncertainty_bytes`) is built from those errors.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from fractions import Fraction

from kvplan.core.cache import pp_layer_counts
from kvplan.core.dtypes import DType, WeightFormat, weight_bytes
from kvplan.core.errors import UnsupportedError
from kvplan.core.spec import MLA, NONE, STATE, ModelSpec
from kvplan.engines.vllm import releases
from kvplan.engines.vllm.releases import Release

GIB = 2**30
MIB = 2**20


# ------------------------------------------------------------------------------------------- fitted constants

@dataclass(frozen=True)
class Constants:
    """The budget's measured constants. FITTED holds the values fitted on all logs; the benchmark builds others
    (a log left out) and passes them in, so a constant fitted on a log never scores that log."""

    # Sampler warm-up (gpu_model_runner.py _dummy_sampler_run): bytes per logit of [R, vocab] beyond the logits
    # themselves (in the model dtype), by sampler implementation (releases.SAMPLER_*):
    # - triton: the float32 copy, the softmax and the exponential draw (12 B) plus the Triton top-k/top-p kernel's
    #   scratch; least squares (with profile_base_bytes) over the 34 dense text-only logs of tests/data/vllm_logs
    #   (0.19.0) whose peak is the sampler's: 12.36.
    # - sort: derived, not fitted. apply_top_k_top_p sorts the float32 copy (4 B) with torch.sort, whose CUDA path
    #   for rows this long is cub's segmented radix sort of (value, int64 index) pairs: the sorted values (4) and
    #   indices (8), the int64 index input (8) and cub's alternate key and value buffers (4 + 8) are live at once:
    #   36 B beyond the logits. The public 0.10/0.11 logs agree within 2 B (L40S x8 34, H200 x2 35.8, gpt-oss-120b
    #   on H100 36.1 and 36.6, from their logged peaks and budgets; tests/data/vllm_logs_public).
    # - flashinfer: top_k_top_p_sampling_from_logits on the float32 logits (the masked logits and their
    #   softmax): derived as 12, no log of a release that runs it by default (0.21+) holds the split.
    sampler_bytes_per_logit: tuple[tuple[str, Fraction], ...] = (
        (releases.SAMPLER_TRITON, Fraction(1236, 100)), (releases.SAMPLER_SORT, Fraction(36)),
        (releases.SAMPLER_FLASHINFER, Fraction(12)))
    # a fixed part of the profile peak (rand_like hidden states, embeddings' outputs, small buffers): least squares
    # with the Triton sampler constant on the same 34 logs (76.4 MiB)
    profile_base_bytes: int = 80_086_056
    # Multimodal models first run the vision encoder on a dummy batch and keep its outputs in the encoder cache
    # during the text profile (gpu_model_runner.py profile_run). The mean of the 6 multimodal 0.19 logs' peaks above
    # the text-only model (145 MiB): a constant, not derived from the encoder.
    multimodal_profile_bytes: int = 152_486_161
    # Memory outside torch that appears during the profile run, by setup (non_torch_setup below):
    # - "one": one GPU. cuBLAS / cuBLASLt workspaces and loaded kernel images. 0.10-0.17 ("one-0.10"): 0.07 GiB
    #   printed by two 0.10.2 H100 logs (tests/data/vllm_logs_public idx-80gb-llava, kolyangg); 0.18+ ("one"): 0.24-0.26 GiB in
    #   every one-GPU 0.19 log (0.46 for the Granite-3.x text models, unexplained) and 0.23 on a 0.26 B300.
    # - "nvlink": TP >= 2 over an NVLink/NVSwitch mesh, where NCCL sets up NVLink SHARP and P2P buffers at the
    #   first collective (inside the profile): 2.06-2.11 GiB at TP 2 and 2.13-2.21 at TP 4 on H100 (0.19), 1.38 GiB
    #   on H200 x2 (0.10.2, which also counts NCCL's init). Per further rank: +37 MiB (the TP-4 mean).
    # - "pcie": TP >= 2 over PCIe (custom all-reduce off beyond 2 GPUs): 0.21 GiB on L40S x8 (0.10.2). Without
    #   a log of the setup (the benchmark's leave-one-out), the one-GPU figure plus NCCL's PCIe buffers (two
    #   channels to two ring peers at NCCL_BUFFSIZE 4 MiB and the LL128 / LL buffers, ~64 MiB) stands in.
    # - "pp": pipeline stages at TP 1 (NCCL initialises before the snapshot): 0.07 GiB (0.19, PP 4).
    # Each the median of its logs (benchmarks/vllm_budget_error.py fit; the median because the Granite-3.x text
    # models' 0.46 GiB would pull a mean off every other log): one 0.25 GiB (34 logs), one-0.10 0.07 (2),
    # nvlink 2.07 at TP 2 (9), pcie 0.21 (1), pp 0.07 (1).
    non_torch_bytes: tuple[tuple[str, int], ...] = (
        ("one", 268_435_456), ("one-0.10", 75_161_928), ("nvlink", 2_222_645_576), ("pcie", 225_485_783),
        ("pp", 75_161_928))
    # NVLink only: the 0.19 TP-4 logs' mean over the TP-2 logs' (36 MiB a rank)
    non_torch_per_extra_rank: int = 37_938_878
    # FP8 block-quantized MoE checkpoints load more than their tensors on every GPU (not identified; the dense fp8
    # checkpoints of the 0.19 logs load within 0.02 GiB): +0.18 GiB on L40S x8 (0.10.2), +0.13 on RTX PRO 6000 x4
    # (0.27.1) after their rotary caches, the mean of the two (106 MiB)
    fp8_moe_loading_bytes: int = 111_335_570
    # CUDA-graph estimate (gpu_model_runner.py profile_cudagraph_memory: per capture mode, the largest graph plus
    # (n - 1) x the second one): a fixed part plus a part per layer and capture size. Least squares over the 42 0.19
    # logs (51 capture sizes each): 210 MiB + 0.379 MiB per layer and capture size (19.3 MiB per layer at 51).
    cuda_graph_base_bytes: int = 220_299_010
    cuda_graph_per_layer_size: Fraction = Fraction(397_267)

    def sampler(self, kind: str) -> Fraction:
        return dict(self.sampler_bytes_per_logit)[kind]

    def non_torch(self, setup: str) -> int:
        return dict(self.non_torch_bytes)[setup]


FITTED = Constants()
# the one-GPU and NVLink TP >= 2 figures, which the SGLang and TensorRT-LLM models borrow (their engines' logs do not
# split the non-torch term)
NON_TORCH_ONE_GPU = FITTED.non_torch("one")
NON_TORCH_TP2 = FITTED.non_torch("nvlink")
PROFILE_BASE_BYTES = FITTED.profile_base_bytes
# the release whose measured constants the other engines' models borrow (the 42 logs of tests/data/vllm_logs)
CALIBRATION_RELEASE = releases.release("0.19.0")

# CUDA context (and NCCL communicators at TP/PP >= 2) already in use at the init snapshot: vLLM refuses to start
# when the free memory then is below the requested memory (v1/worker/utils.py request_memory). From the 0.19 logs:
# "non_torch_memory=0.51GiB" at the snapshot of every one-GPU log, 1.48-1.53 GiB with TP or PP.
CUDA_CONTEXT_ONE_GPU = 522 * MIB
CUDA_CONTEXT_MULTI_GPU = 1546 * MIB

# The band: each term's measured leave-one-log-out error (benchmarks/vllm_budget_error.py prints them; see
# docs/engines/calibration.md). A modelled budget is `available +- the sum of its terms' bands`.
# Leave-one-log-out residuals (modelled - logged) where the logs print the term: weights -0.12..+0.06 GiB on 41 text
# models (|p90| 0.06), -0.55..+0.02 on 6 multimodal ones (Gemma-3's wrapper, unexplained); activation peak
# -0.07..+0.07 (|p90| 0.05) and -0.11..+0.16 multimodal; the sort sampler's implied bytes per logit 34-36.6 (+-5%);
# non-torch -0.20..+0.71 (Granite-3.x +0.21 on one GPU, H200 x2 under 0.10.2 0.71 below the NVLink mean).
BAND_WEIGHTS_FRACTION = Fraction(25, 10000)
BAND_WEIGHTS_BYTES = 64 * MIB
BAND_MULTIMODAL_WEIGHTS_BYTES = 576 * MIB
BAND_ACTIVATION_FRACTION = Fraction(2, 100)
BAND_ACTIVATION_SORT_FRACTION = Fraction(5, 100)
BAND_ACTIVATION_BYTES = 64 * MIB
BAND_MULTIMODAL_BYTES = 192 * MIB
BAND_NON_TORCH = {"one": 224 * MIB, "one-0.10": 224 * MIB, "nvlink": 768 * MIB, "pcie": 512 * MIB, "pp": 128 * MIB}
BAND_CUDA_GRAPH_FRACTION = Fraction(3, 10)  # the logged estimate vs the fit on the 0.19 logs, where subtracted
BAND_MXFP4_FRACTION = Fraction(3, 100)  # MXFP4 experts whose swizzled layout triton_kernels sizes, not vLLM


@dataclass(frozen=True)
class VllmBudget:
    """One worker's (one GPU's) KV-cache budget, each term as vLLM would log it."""

    stage: int  # pipeline stage of this worker
    layers: int  # decoder layers on this worker
    total_bytes: int  # torch.cuda.mem_get_info() total
    gpu_memory_utilization: str
    requested_bytes: int  # total x utilization as the release computes it
    weights_bytes: int
    activation_peak_bytes: int
    non_torch_bytes: int
    cuda_graph_bytes: int  # the profiled estimate (modelled)
    cuda_graph_subtracted: bool  # 0.20+ subtract it; before, it is only logged (0.18-0.19) or not estimated
    context_bytes: int  # CUDA context (+ NCCL) at the init snapshot, outside the budget
    available_bytes: int  # what the KV cache gets
    uncertainty_bytes: int = 0  # the band's half width: the terms' measured leave-out errors
    memory_in_use_bytes: int = 0  # taken before vLLM starts (a site profile's; drivers, other processes)
    moe_workspace_bytes: int = 0  # inside activation_peak_bytes: the fused-MoE workspace of one layer
    sampler_bytes: int = 0  # the sampler warm-up phase of the peak (logits and float32 work)
    non_torch_setup: str = "one"  # which fitted non-torch constant applies (Constants.non_torch_bytes)
    site_terms: tuple[str, ...] = field(default=())  # the terms a site profile replaced

    @property
    def non_kv_bytes(self) -> int:
        """vLLM's "Total non KV cache memory"."""
        return self.weights_bytes + self.activation_peak_bytes + self.non_torch_bytes

    @property
    def beside_pool_bytes(self) -> int:
        """What vLLM keeps beside the KV pool on this GPU: weights, activations, non-torch memory and graphs."""
        return self.non_kv_bytes + self.cuda_graph_bytes

    @property
    def starts(self) -> bool:
        """vLLM refuses to start when the free memory at the snapshot is below the requested memory."""
        return self.total_bytes - self.context_bytes - self.memory_in_use_bytes >= self.requested_bytes


# ------------------------------------------------------------------------------------------ scheduler defaults

def default_batch_limits(capacity_bytes: int | None, gpu_name: str | None, release: Release) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) that `vllm serve` picks when not told (engine/arg_utils.py
    get_batch_defaults, the release's tiers). vLLM tests the device name ("NVIDIA A100-SXM4-80GB" contains "a100");
    kvplan tests the catalog name and its aliases. Without a GPU the first tier of >= 70 GiB is assumed."""
    if capacity_bytes is None:
        tier = next(t for t in release.batch_tiers if t.min_total_gib == 70)
        return tier.max_num_batched_tokens, tier.max_num_seqs
    names = " ".join(_gpu_names(gpu_name)).lower()
    for tier in release.batch_tiers:
        if capacity_bytes >= tier.min_total_gib * GIB and not (tier.excludes and tier.excludes in names):
            return tier.max_num_batched_tokens, tier.max_num_seqs
    last = release.batch_tiers[-1]
    return last.max_num_batched_tokens, last.max_num_seqs


def _gpu_names(gpu_name: str | None) -> tuple[str, ...]:
    if not gpu_name:
        return ()
    from kvplan.model.catalog import find_gpu

    g = find_gpu(gpu_name)
    return (g.name,) + g.aliases


def resolve_batch_limits(mnbt: int | None, max_num_seqs: int | None, max_model_len: int,
                         capacity_bytes: int | None, gpu_name: str | None, release: Release) -> tuple[int, int]:
    """The scheduler limits after vLLM's defaulting (engine/arg_utils.py
    _set_default_max_num_seqs_and_batched_tokens_args): defaults fill what the user left out; a defaulted
    max_num_batched_tokens is capped at max_num_seqs x max_model_len (0.11.2+, chunked prefill on), a defaulted
    max_num_seqs at max_num_batched_tokens (0.10.1+)."""
    d_tokens, d_seqs = default_batch_limits(capacity_bytes, gpu_name, release)
    seqs = max_num_seqs if max_num_seqs is not None else d_seqs
    tokens = mnbt if mnbt is not None else d_tokens
    if mnbt is None and release.batched_tokens_capped_at_seqs_x_len:
        tokens = min(tokens, seqs * max_model_len)
    if max_num_seqs is None and release.max_num_seqs_capped_at_batched_tokens:
        seqs = min(seqs, tokens)
    return tokens, seqs


def cuda_graph_capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, release: Release,
                             sm10x: bool = False) -> int:
    """How many CUDA graphs vLLM captures per mode (config/vllm.py _set_cudagraph_sizes): [1, 2, 4], then every 8
    below 256, then every 16, up to min(2 x max_num_seqs, 512 (1024 on SM10x from 0.29), max_num_batched_tokens)."""
    ceiling = release.cuda_graph_ceiling_sm10x if sm10x else 512
    top = min(2 * max_num_seqs, ceiling, max_num_batched_tokens)
    sizes = sum(1 for s in (1, 2, 4) if s <= top)
    if top >= 8:
        sizes += len(range(8, min(top + 1, 256), 8))
    if top >= 256:
        sizes += len(range(256, top + 1, 16))
    return sizes


# ------------------------------------------------------------------------------------------------ terms

def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _cdiv(a, b) * b


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


# --- weights

def mxfp4_backend(release: Release, compute_capability: str | None) -> str:
    """Which MXFP4 MoE kernel vLLM loads the experts for (model_executor/layers/quantization/mxfp4.py
    get_mxfp4_backend, without the FlashInfer opt-in variables): SM10x FlashInfer (its BF16 path by default),
    Hopper the release's default (releases.Release.mxfp4_hopper_backend), everything older Marlin."""
    major = _sm_major(compute_capability)
    if major == 10:
        return "flashinfer-sm100"
    if major == 9:
        return release.mxfp4_hopper_backend
    return "marlin"


def _sm_major(compute_capability: str | None) -> int | None:
    if not compute_capability or compute_capability.startswith("gfx"):
        return None
    return int(compute_capability.split(".")[0])


def mxfp4_expert_bytes(spec: ModelSpec, tp: int, backend: str) -> tuple[int, int]:
    """(bytes of the MXFP4 experts in the checkpoint, whole model; bytes vLLM allocates for them on one TP rank).

    mxfp4.py Mxfp4MoEMethod.create_weights: per expert and layer a fused gate_up [2 x I_pad, H_pad / 2] uint8 with
    a uint8 scale per 32 weights and a bf16 bias [2 x I_pad], and down [H_pad, I_pad / 2] with its scales and bf16
    bias [H_pad], where I_pad is the per-rank width I / tp rounded up to the kernel's tile: Marlin 128 (and H to
    256: "the moe marlin kernel requires n % 256 == 0 and k % 128 == 0"), SM100 FlashInfer 256 / 256, triton_kernels
    64 (H unpadded). The checkpoint stores I x H x 17 / 32 bytes per matrix (weights.py _mxfp4) and bf16 biases."""
    moe, h = spec.moe, spec.hidden_size
    e, i = moe.experts, moe.intermediate_size
    tile_i, tile_h = {"marlin": (128, 256), "flashinfer-sm100": (256, 256), "triton": (64, 1)}[backend]
    ip, hp = _round_up(_cdiv(i, tp), tile_i), _round_up(h, tile_h)
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
    ([max_position, rotary_dim] in the model dtype: Llama-3.1-8B's 14.99 GiB logged = 14.96 + 0.03).
    An MXFP4 checkpoint's experts are counted as vLLM allocates them for `mxfp4_kernel` (mxfp4_backend,
    mxfp4_expert_bytes); without one, as the checkpoint stores them. An FP8 MoE checkpoint's GPUs get
    `fp8_moe_loading` more (Constants.fp8_moe_loading_bytes).
    Multi-head latent attention keeps its a-projections whole on every TP rank: vLLM's
    fused_qkv_a_proj (disable_tp=True) or kv_a_proj_with_mqa (ReplicatedLinear), models/deepseek_v2.py
    DeepseekV2MLAAttention from 0.10 on; SGLang 0.5.23's fused_qkv_a_proj_with_mqa / kv_a_proj_with_mqa
    (ReplicatedLinear); TensorRT-LLM's PyTorch backend builds the same fused kv_a_proj_with_mqa as a Linear given no
    mapping, so one TP rank (_torch/modules/attention.py MLA). hidden x (q_lora_rank + kv_lora_rank +
    qk_rope_head_dim) per MLA layer: 0.92 G parameters for DeepSeek-V3, 0.81 GB more on each of 8 ranks in FP8 than
    an even split.
    """
    _require(spec, "hidden_size", "vocab_size")
    act_bits = model_dtype.bits
    embed_params = spec.vocab_size * spec.hidden_size
    # a tied output head is the embedding itself (counted once in params, stored once in the checkpoint);
    # with PP the last stage still builds its own copy (vLLM ties only within one rank's modules)
    tied = spec.tie_word_embeddings is True
    vision = spec.vision_params or 0
    expert_extra = 0  # per rank: loaded experts minus their checkpoint share
    if weight_fmt is None and spec.weights_bytes is not None:
        total = spec.weights_bytes
        edge = _cdiv(embed_params * act_bits, 8)  # embed and head: their share of the checkpoint
        embed_b = head_b = min(edge, total // 4)
        vision_b = _cdiv(vision * act_bits, 8)
        if spec.quant_method == "mxfp4" and spec.moe is not None and mxfp4_kernel is not None:
            backend = mxfp4_kernel
            checkpoint, loaded = mxfp4_expert_bytes(spec, tp, backend)
            expert_extra = loaded - _cdiv(checkpoint, tp)
            if notes is not None:
                notes.append(f"MXFP4 experts loaded for vLLM's {backend} kernel: {loaded * tp / GIB:.2f} GiB over the "
                             f"TP group against {checkpoint / GIB:.2f} GiB in the checkpoint (padding to the kernel's "
                             "tiles, mxfp4.py create_weights)" + (
                                 "; triton_kernels' swizzled layout may add more (not sized)" if backend == "triton"
                                 else ""))
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
        whole = math.ceil(a_bytes * sum(1 for layer in spec.layer_specs[first:first + n] if layer.kind == MLA))
        first += n
        out.append(_cdiv(b - whole, tp) + whole + expert_extra * n // spec.layers + rotary)
    if fp8_moe_loading and spec.quant_method == "fp8" and spec.moe is not None and weight_fmt is None:
        out = [w + fp8_moe_loading for w in out]
    return out


def _mla_a_params(spec: ModelSpec) -> int:
    """Parameters of one MLA layer's a-projections (query and latent), which no engine splits over TP."""
    if spec.mla is None or spec.hidden_size is None:
        return 0
    m = spec.mla
    return spec.hidden_size * ((m.q_lora_rank or 0) + m.kv_lora_rank + m.qk_rope_head_dim)


# --- activation peak of the profile run

def moe_workspace_bytes(spec: ModelSpec, tokens: int, tp: int, b: int, release: Release,
                        expert_parallel: bool = False) -> int:
    """The fused-MoE intermediate buffers of one MoE layer for `tokens` tokens on one TP rank
    (docs/research/vllm-moe-workspace.md; N = w1 rows on the rank = 2 x I / tp for gated experts, K = hidden,
    A = N / 2 gated, k = top-k, M = tokens per chunk):
    - MOE_DIRECT (fused_moe.py fused_experts_impl, 0.8-0.13): cache13 M x k x max(N, K) and cache2 M x k x A;
    - MOE_MODULAR (TritonExperts.workspace_shapes, 0.14+): workspace13 M x k x max(A, K) and workspace2
      M x k x max(N, K) (0.10-0.16 write N / 2 for A: the same for gated experts).
    M = min(tokens, VLLM_FUSED_MOE_CHUNK_SIZE) while the release chunks (releases.Release.fused_moe_chunk). Under
    expert parallelism the experts are whole on their rank: N = 2 x I."""
    moe = spec.moe
    if moe is None:
        return 0
    k, K = moe.experts_per_token, spec.hidden_size
    N = (2 if moe.gated else 1) * (moe.intermediate_size if expert_parallel else _cdiv(moe.intermediate_size, tp))
    A = N // 2 if moe.gated else N
    M = min(tokens, release.fused_moe_chunk) if release.fused_moe_chunk else tokens
    if release.fused_moe == releases.MOE_MODULAR:
        return M * k * (max(A, K) + max(N, K)) * b
    return M * k * (max(N, K) + A) * b


@dataclass(frozen=True)
class ActivationPeak:
    bytes: int  # the torch peak increase of the profile run
    moe_workspace: int  # inside it
    sampler: int  # the sampler phase (0 on stages that do not sample)


def activation_peak(spec: ModelSpec, model_dtype: DType, *, stage: int, pp: int, tp: int, max_num_batched_tokens: int,
                    max_num_seqs: int, release: Release, constants: Constants = FITTED,
                    expert_parallel: bool = False) -> ActivationPeak:
    """Torch peak memory increase of vLLM's profile run on one GPU (gpu_model_runner.py profile_run).

    Two phases, the larger one sets the peak:
    - the forward of `max_num_batched_tokens` (T) dummy tokens: at the widest point of a dense decoder layer the
      MLP holds its gate/up output and activation next to the hidden states and residual:
      T x (2 x hidden + MLP width) x dtype bytes, the width estimated as the per-layer MLP parameters over hidden
      size on one TP rank; a MoE layer holds the hidden states, residual and shared-expert output beside the
      fused-MoE workspace (moe_workspace_bytes) instead. Attention and Mamba / GDN kernels do not run: the profile
      forward has no attention metadata and those layers return before their kernels
      (model_executor/layers/mamba/*.py: "V1 profile run"), so no scan workspace is profiled;
    - the sampler warm-up on the last pipeline stage: R = min(max_num_seqs, T) requests of [R, vocab] logits in
      the model dtype plus the release's sampler bytes per logit (Constants.sampler_bytes_per_logit), while the
      forward's [T, hidden] output is still held. Logits are gathered to the full vocabulary, so this does not
      shrink with TP (Qwen2.5-7B: 2.21 GiB at TP 1, 2 and 4). The modular fused-MoE workspace (0.14+) stays
      allocated (v1/worker/workspace.py WorkspaceManager), so it adds to this phase.
    A non-first pipeline stage also holds the [T, hidden] hidden states and residual it received.
    Multimodal models add the encoder profile (Constants.multimodal_profile_bytes).
    """
    _require(spec, "hidden_size", "vocab_size")
    b = model_dtype.bits // 8 or 1
    h, T = spec.hidden_size, max_num_batched_tokens
    R = min(max_num_seqs, T)
    hidden_out = T * h * b
    received = 2 * T * h * b if stage > 0 else 0
    moe = spec.moe
    workspace = moe_workspace_bytes(spec, T, tp, b, release, expert_parallel)
    attn_layers = sum(1 for layer in spec.layer_specs if layer.kind not in (NONE, STATE, MLA))
    edges = (1 if spec.tie_word_embeddings is True else 2) * spec.vocab_size * h  # embedding (+ untied head)
    attention = _attention_params(spec) if attn_layers else 0
    if moe is not None:
        shared = _cdiv(moe.shared_intermediate_size, tp)
        # hidden states, residual, the shared expert's output; router logits; top-k weights and ids (fp32 / int32)
        moe_layer = T * (3 * h if shared else 2 * h) * b + T * moe.experts * b + T * moe.experts_per_token * 8
        forward = max(moe_layer + workspace, T * (2 * h + 3 * shared) * b)
        if moe.dense_intermediate_size:  # DeepSeek's first dense layers: an ordinary gated MLP
            forward = max(forward, T * (2 * h + 3 * _cdiv(moe.dense_intermediate_size, tp)) * b)
    else:
        params = spec.active_params or spec.params
        layer_params = max(params - (spec.vision_params or 0) - edges, 0) // max(spec.layers, 1)
        mlp_params = max(layer_params - attention, 0)
        forward = T * (2 * h + _cdiv(mlp_params, h * tp)) * b
    persistent = workspace if release.fused_moe == releases.MOE_MODULAR else 0
    peak = forward + received
    sampler = 0
    if stage == pp - 1:
        kind = release.sampler  # VLLM_USE_FLASHINFER_SAMPLER, where given, is in it (releases.with_environment)
        if kind == releases.SAMPLER_TRITON and R < 8:
            kind = releases.SAMPLER_SORT  # topk_topp_sampler.py: the Triton kernel serves batches of >= 8 only
        sampler = math.ceil(R * spec.vocab_size * (b + constants.sampler(kind)))
        peak = max(peak, sampler + hidden_out + received + persistent)
    if spec.vision_params and stage == 0:
        peak += constants.multimodal_profile_bytes
    return ActivationPeak(peak + constants.profile_base_bytes, workspace, sampler)


def activation_peak_bytes(spec: ModelSpec, model_dtype: DType, *, stage: int, pp: int, tp: int,
                          max_num_batched_tokens: int, max_num_seqs: int) -> int:
    """The activation peak as the other engines' models borrow it (TensorRT-LLM's engine buffers): vLLM 0.19's
    profile with the MoE layers estimated like dense ones (their own fused-MoE kernels are not vLLM's)."""
    dense = dataclasses.replace(spec, moe=None)
    return activation_peak(dense, model_dtype, stage=stage, pp=pp, tp=tp, max_num_batched_tokens=max_num_batched_tokens,
                           max_num_seqs=max_num_seqs, release=CALIBRATION_RELEASE).bytes


# --- non-torch memory and CUDA graphs

def non_torch_setup(tp: int, pp: int, release: Release, interconnect: str | None) -> str:
    """Which fitted non-torch constant a worker gets (Constants.non_torch_bytes). TP >= 2 over an NVLink mesh or
    over PCIe differ (custom all-reduce, NCCL's NVLink buffers; custom_all_reduce.py enables it only on NVLink or
    for two PCIe GPUs); a GPU given by its memory alone is taken as NVLink, the larger figure."""
    if tp >= 2:
        return "pcie" if interconnect in ("pcie", "unified") else "nvlink"
    if pp >= 2:
        return "pp"
    return "one" if release.cuda_graph_estimated else "one-0.10"


def non_torch_bytes(tp: int, pp: int, release: Release = releases.DEFAULT, interconnect: str | None = None,
                    constants: Constants = FITTED) -> int:
    """Non-torch memory that appears during the profile run on one GPU (see Constants.non_torch_bytes)."""
    setup = non_torch_setup(tp, pp, release, interconnect)
    base = constants.non_torch(setup)
    if tp > 2 and setup == "nvlink":
        base += constants.non_torch_per_extra_rank * (tp - 2)
    return base


def cuda_graph_bytes(layers_on_rank: int, capture_sizes: int = 51, constants: Constants = FITTED) -> int:
    """vLLM's profiled CUDA-graph estimate for one GPU (a fit, see Constants.cuda_graph_base_bytes)."""
    return constants.cuda_graph_base_bytes + math.ceil(constants.cuda_graph_per_layer_size * layers_on_rank * capture_sizes)


def requested_bytes(total: int, util: Fraction, release: Release = releases.DEFAULT) -> int:
    """total x utilization as vLLM computes it in its own float arithmetic (the float product can differ from the
    exact one by a byte): math.ceil from 0.14 (v1/worker/utils.py request_memory), the float before, which the
    budget subtraction then truncates (int(...) in gpu_worker.py)."""
    product = total * float(util)
    return math.ceil(product) if release.requested_ceil else int(product)


# ------------------------------------------------------------------------------------------------ the budget

def vllm_budgets(spec: ModelSpec, *, weight_fmt: WeightFormat | None, model_dtype: DType, tp: int, pp: int,
                 total_bytes: int, util: Fraction, max_num_batched_tokens: int, max_num_seqs: int,
                 release: Release, gpu=None, site=None, constants: Constants = FITTED,
                 expert_parallel: bool = False, gpu_reserved: int = 0, cuda_graphs: bool = True,
                 notes: list[str] | None = None) -> tuple[VllmBudget, ...]:
    """The budget of one GPU per pipeline stage (the TP ranks of a stage are alike). `gpu` is the catalog entry
    (kvplan.model.catalog.Gpu) or None for a GPU given by its memory; `site` a SiteProfile whose measured terms
    replace the modelled ones (engines/calibration.py); `gpu_reserved` memory in use before vLLM starts
    (--gpu-reserved), added to the site profile's: vLLM's budget is a fraction of the total, so it moves only the
    start check (free at the snapshot >= requested). `cuda_graphs` False (--enforce-eager): no graph is estimated.
    The environment's choices (the sampler, the CUDA-graph estimate) come in `release` (releases.with_environment)."""
    requested = requested_bytes(total_bytes, util, release)
    cc = gpu.compute_capability if gpu is not None else None
    kernel = mxfp4_backend(release, cc if cc is not None else "9.0")  # a GPU given by its memory: as Hopper
    weights = stage_weight_bytes(spec, weight_fmt, model_dtype, tp, pp, mxfp4_kernel=kernel,
                                 fp8_moe_loading=constants.fp8_moe_loading_bytes, notes=notes)
    counts = pp_layer_counts(spec.layers, pp)
    context = CUDA_CONTEXT_ONE_GPU if tp * pp == 1 else CUDA_CONTEXT_MULTI_GPU
    interconnect = gpu.interconnect if gpu is not None else None
    setup = non_torch_setup(tp, pp, release, interconnect)
    sizes = cuda_graph_capture_sizes(max_num_seqs, max_num_batched_tokens, release, sm10x=_sm_major(cc) == 10)
    mxfp4_triton = spec.quant_method == "mxfp4" and spec.moe is not None and weight_fmt is None and kernel == "triton"
    in_use = (site.memory_in_use_bytes if site is not None else 0) + gpu_reserved
    out = []
    for stage in range(pp):
        act = activation_peak(spec, model_dtype, stage=stage, pp=pp, tp=tp, max_num_batched_tokens=max_num_batched_tokens,
                              max_num_seqs=max_num_seqs, release=release, constants=constants,
                              expert_parallel=expert_parallel)
        peak = act.bytes
        nt = non_torch_bytes(tp, pp, release, interconnect, constants)
        graphs = cuda_graph_bytes(counts[stage], sizes, constants) if release.cuda_graph_estimated and cuda_graphs else 0
        replaced: list[str] = []
        if site is not None:
            if site.activation_scale != 1:
                peak = math.ceil(peak * site.activation_scale)
                replaced.append("activation peak")
            if site.non_torch_for(tp, pp) is not None:  # measured at this layout only (communication buffers)
                nt = site.non_torch_for(tp, pp)
                replaced.append("non-torch memory")
            if site.cuda_graph_bytes is not None and release.cuda_graph_estimated and cuda_graphs:
                graphs = site.cuda_graph_bytes
                replaced.append("CUDA graphs")
        subtract = release.cuda_graph_subtracted
        available = requested - weights[stage] - peak - nt - (graphs if subtract else 0)
        band = _band(weights[stage], act, peak, nt, graphs if subtract else 0, setup, spec, replaced, mxfp4_triton,
                     sort_sampler=release.sampler == releases.SAMPLER_SORT)
        out.append(VllmBudget(stage=stage, layers=counts[stage], total_bytes=total_bytes,
                              gpu_memory_utilization=_fraction_text(util), requested_bytes=requested,
                              weights_bytes=weights[stage], activation_peak_bytes=peak, non_torch_bytes=nt,
                              cuda_graph_bytes=graphs, cuda_graph_subtracted=subtract, context_bytes=context,
                              available_bytes=available, uncertainty_bytes=band, memory_in_use_bytes=in_use,
                              moe_workspace_bytes=act.moe_workspace, sampler_bytes=act.sampler,
                              non_torch_setup=setup, site_terms=tuple(replaced)))
    return tuple(out)


def _band(weights: int, act: ActivationPeak, peak: int, non_torch: int, graphs: int, setup: str, spec: ModelSpec,
          replaced: list[str], mxfp4_triton: bool, sort_sampler: bool = False) -> int:
    """The half width of the budget's band: each term's measured leave-out error, summed (they are not known to
    cancel). A term a site profile measured keeps a tenth of its band."""
    w = BAND_WEIGHTS_BYTES + math.ceil(weights * BAND_WEIGHTS_FRACTION)
    if mxfp4_triton:
        w += math.ceil(weights * BAND_MXFP4_FRACTION)
    if spec.vision_params:
        w += BAND_MULTIMODAL_WEIGHTS_BYTES
    a = BAND_ACTIVATION_BYTES + math.ceil(peak * (BAND_ACTIVATION_SORT_FRACTION if sort_sampler
                                                  else BAND_ACTIVATION_FRACTION))
    if spec.vision_params:
        a += BAND_MULTIMODAL_BYTES
    n = BAND_NON_TORCH[setup]
    g = math.ceil(graphs * BAND_CUDA_GRAPH_FRACTION)
    if "activation peak" in replaced:
        a //= 10
    if "non-torch memory" in replaced:
        n //= 10
    if "CUDA graphs" in replaced:
        g //= 10
    return w + a + n + g


def with_constants(constants: Constants, **changes) -> Constants:
    """A copy with some constants replaced (the benchmark's leave-one-out fits)."""
    return dataclasses.replace(constants, **changes)


def _fraction_text(f: Fraction) -> str:
    """0.9 rather than 9/10: the utilization as a user writes it."""
    if f.denominator == 1:
        return str(f.numerator)
    for digits in range(1, 12):
        scaled = f * 10**digits
        if scaled.denominator == 1:
            return f"{f.numerator / f.denominator:.{digits}f}"
    return f"{float(f):.6f}"
