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
from kvplan.core.dtypes import DType, WeightFormat
from kvplan.core.spec import ModelSpec
from kvplan.engines.runtime import unified
from kvplan.engines.runtime.activations import (MULTIMODAL_PROFILE_BYTES, SORT_SAMPLER_BYTES_PER_LOGIT,
                                                dense_forward_bytes, sampler_bytes)
from kvplan.engines.runtime.weights import cdiv, mxfp4_expert_bytes, require_fields, stage_weight_bytes
from kvplan.engines.vllm import releases
from kvplan.engines.vllm.releases import Release
from kvplan.model.catalog import find_gpu

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
    # - sort: derived, not fitted (engines/runtime/activations.py SORT_SAMPLER_BYTES_PER_LOGIT: 36).
    # - flashinfer: top_k_top_p_sampling_from_logits on the float32 logits (the masked logits and their
    #   softmax): derived as 12, no log of a release that runs it by default (0.21+) holds the split.
    sampler_bytes_per_logit: tuple[tuple[str, Fraction], ...] = (
        (releases.SAMPLER_TRITON, Fraction(1236, 100)), (releases.SAMPLER_SORT, SORT_SAMPLER_BYTES_PER_LOGIT),
        (releases.SAMPLER_FLASHINFER, Fraction(12)))
    # a fixed part of the profile peak (rand_like hidden states, embeddings' outputs, small buffers): least squares
    # with the Triton sampler constant on the same 34 logs (76.4 MiB)
    profile_base_bytes: int = 80_086_056
    # Multimodal models' encoder profile (engines/runtime/activations.py MULTIMODAL_PROFILE_BYTES: fitted on the
    # 6 multimodal 0.19 logs; the other engines' models borrow it)
    multimodal_profile_bytes: int = MULTIMODAL_PROFILE_BYTES
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

# The V2 model runner's CUDA-graph estimate (v1/worker/gpu/cudagraph_utils.py profile_cudagraph_memory, 0.28.0-0.33.0)
# is not the V1 runner's extrapolation the fit above was made on (v1/worker/gpu_model_runner.py
# profile_cudagraph_memory: per capture mode the first graph plus (n - 1) x the second one, the modes' first captures
# sharing a pool): it captures every PIECEWISE graph into a throwaway pool and measures what the pool took, smaller
# graphs reusing the larger ones' memory, and extrapolates the FULL graphs only (the first plus (n - 1) x the second,
# at least 1 MiB each: _MIN_PER_GRAPH_BYTES). The source bounds it: from about nothing (all reused) to the V1
# runner's extrapolation (none reused). No public log outside the ones kvplan scores prints it, so kvplan takes the
# middle of that range and a band over all of it plus the fit's own 30%: a judgement from the source, not a fit.
V2_GRAPH_CENTRE = Fraction(1, 2)  # of the V1 fit
BAND_V2_GRAPH_FRACTION = Fraction(13, 10)  # of the centre: 0 ... the V1 fit, widened by BAND_CUDA_GRAPH_FRACTION

# A cold torch.compile cache (releases.COMPILE_CACHE_OPTION): Inductor compiles inside vLLM's profile run, and what
# it leaves loaded (kernel images, its benchmarking's workspaces) and its transient peak count in the budget. Not in
# vLLM's source (Inductor decides it). Sized from one public pair of starts kvplan does not score: a test file quoting
# a warm and a cold vLLM 0.29.0 start of one container on a 6.0 GiB GPU (search index id 68573043236: "2.1 / 2.63 GiB
# for consumed memory", "0.22 / 0.67 GiB for peak activation", 2.41 / 1.5 GiB of KV cache, the cold one at 0.01
# more utilization). Each figure is printed to 0.01 GiB. Measured, not fitted; one setup, so the band is what covers.
COLD_COMPILE_RETAINED_BYTES = 569_083_167  # 0.53 GiB: the "consumed" memory's rise
COLD_COMPILE_TRANSIENT_BYTES = 483_183_821  # 0.45 GiB: the transient peak's rise
BAND_MXFP4_FRACTION = Fraction(3, 100)  # MXFP4 experts whose swizzled layout triton_kernels sizes, not vLLM

# ROCm (MI300X-class GPUs). vLLM's ROCm paths (platforms/rocm.py, v1/worker/gpu_worker.py, read in 0.12.0, 0.19.0,
# 0.27.1, 0.33.0) run the same profile and budget arithmetic as CUDA; what differs is in releases.on_rocm (sampler,
# graph estimate) and in terms no ROCm source or public log sizes. Those are bands over their plausible values, not
# fits, and not refusals (docs/engines/vllm.md "ROCm"):
# - the total: torch's mem_get_info total on an MI300X reads 191.69 GiB in four public vLLM logs of four sites and
#   191.45 GiB in a V0 log, where the catalog has the HIP device query's 191.98 GiB (the driver's reservation
#   varies): +-0.3% of the requested memory;
# - the non-torch memory: hipBLASLt workspaces and the HIP code objects AITER and Triton load on one GPU; RCCL's
#   channels and ROCm's custom all-reduce buffers at TP >= 2 (quick reduce is off by default:
#   VLLM_ROCM_QUICK_REDUCE_QUANTIZATION=NONE, envs.py). The CUDA figures are the centre, the half width 1 GiB on
#   one GPU and 2 GiB with TP (the CUDA one-GPU and NVLink figures are 0.25 and 2.07 GiB);
# - the HIP graph estimate (0.26+, the only releases that profile it on ROCm): HIP graph pools are not sized by
#   any source kvplan read; the band spans 1x to 4x the CUDA fit (centre 2.5x, half width 1.5x), a judgement;
# - AITER (VLLM_ROCM_USE_AITER=1, which a launch may not show: AMD's images set it): its sampler and fused-MoE
#   kernels come from the aiter package, not vLLM: the activation band is the sort sampler's 5%, plus the
#   fused-MoE workspace whole; VLLM_ROCM_USE_AITER=0 given (releases.ROCM_AITER_OPTION) narrows it to CUDA's.
ROCM_BAND_TOTAL_FRACTION = Fraction(3, 1000)
ROCM_BAND_NON_TORCH = {"one": 1024 * MIB, "one-0.10": 1024 * MIB, "pp": 1024 * MIB, "nvlink": 2048 * MIB,
                       "pcie": 2048 * MIB}
ROCM_GRAPH_CENTRE = Fraction(5, 2)
ROCM_BAND_GRAPH_FRACTION = Fraction(3, 5)  # of the centre: 1.5x of the CUDA fit


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
    """(max_num_batched_tokens, max_num_seqs) that vLLM picks when not told (engine/arg_utils.py
    get_batch_defaults, the release's tiers, for its entry point: `vllm serve` or the offline LLM class). vLLM tests
    the device name ("NVIDIA A100-SXM4-80GB" contains "a100") and, in 0.33, the capability (GB10's 12.1); kvplan
    tests the catalog name, its aliases and its capability. Without a GPU the first tier of >= 70 GiB is assumed."""
    if release.entry_point == releases.ENTRY_ENGINE:
        return releases.ENGINE_CONTEXT_LIMITS
    offline = release.entry_point == releases.ENTRY_OFFLINE

    def limits(tier) -> tuple[int, int]:
        return (tier.offline_max_num_batched_tokens if offline else tier.max_num_batched_tokens), tier.max_num_seqs

    if capacity_bytes is None:
        return limits(next(t for t in release.batch_tiers if t.min_total_gib == 70))
    names = " ".join(_gpu_names(gpu_name)).lower()
    facts = find_gpu(gpu_name) if gpu_name else None
    capability = facts.compute_capability if facts is not None else None
    if facts is not None and facts.interconnect == "unified" and not release.nvml_total_on_integrated:
        capacity_bytes = 0  # NVML has no memory figure for an integrated GPU: vLLM sizes its defaults for 0 bytes
    for tier in release.batch_tiers:
        if (capacity_bytes >= tier.min_total_gib * GIB and not (tier.excludes and tier.excludes in names)
                and not (tier.excludes_capability and tier.excludes_capability == capability)):
            return limits(tier)
    return limits(release.batch_tiers[-1])


def _gpu_names(gpu_name: str | None) -> tuple[str, ...]:
    if not gpu_name:
        return ()

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
    engine_context = release.entry_point == releases.ENTRY_ENGINE
    # 0.10-0.11 ENGINE_CONTEXT: SchedulerConfig.__post_init__ caps its own default at max_num_seqs x max_model_len
    if mnbt is None and (release.batched_tokens_capped_at_seqs_x_len or engine_context):
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


def rocm_mxfp4_backend(release: Release, gfx: str | None) -> str:
    """How vLLM pads MXFP4 experts on ROCm (releases.Release.rocm_mxfp4_tiles); 0.14-0.17 pad to 256 on gfx950
    (MI355X) and 128 elsewhere (quantization/utils/mxfp4_utils.py get_padding_alignment, 0.14.1)."""
    if release.rocm_mxfp4_tiles == "rocm-128" and gfx == "gfx950":
        return "rocm-256"
    return release.rocm_mxfp4_tiles


def _sm_major(compute_capability: str | None) -> int | None:
    if not compute_capability or compute_capability.startswith("gfx"):
        return None
    return int(compute_capability.split(".")[0])


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
    N = (2 if moe.gated else 1) * (moe.intermediate_size if expert_parallel else cdiv(moe.intermediate_size, tp))
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
    require_fields(spec, "hidden_size", "vocab_size")
    b = model_dtype.bits // 8 or 1
    h, T = spec.hidden_size, max_num_batched_tokens
    R = min(max_num_seqs, T)
    hidden_out = T * h * b
    received = 2 * T * h * b if stage > 0 else 0
    moe = spec.moe
    workspace = moe_workspace_bytes(spec, T, tp, b, release, expert_parallel)
    if moe is not None:
        shared = cdiv(moe.shared_intermediate_size, tp)
        # hidden states, residual, the shared expert's output; router logits; top-k weights and ids (fp32 / int32)
        moe_layer = T * (3 * h if shared else 2 * h) * b + T * moe.experts * b + T * moe.experts_per_token * 8
        forward = max(moe_layer + workspace, T * (2 * h + 3 * shared) * b)
        if moe.dense_intermediate_size:  # DeepSeek's first dense layers: an ordinary gated MLP
            forward = max(forward, T * (2 * h + 3 * cdiv(moe.dense_intermediate_size, tp)) * b)
    else:
        forward = dense_forward_bytes(spec, T, tp, b)
    persistent = workspace if release.fused_moe == releases.MOE_MODULAR else 0
    peak = forward + received
    sampler = 0
    if stage == pp - 1:
        if release.model_runner == releases.RUNNER_V2:
            sampler = v2_sampler_bytes(spec, R, b)
        else:
            kind = release.sampler  # VLLM_USE_FLASHINFER_SAMPLER, where given, is in it (releases.with_environment)
            if kind == releases.SAMPLER_TRITON and R < 8:
                kind = releases.SAMPLER_SORT  # topk_topp_sampler.py: the Triton kernel serves batches of >= 8 only
            sampler = sampler_bytes(spec, R, b, constants.sampler(kind))
        peak = max(peak, sampler + hidden_out + received + persistent)
    if spec.vision_params and stage == 0:
        peak += constants.multimodal_profile_bytes
    return ActivationPeak(peak + constants.profile_base_bytes, workspace, sampler)


# the block of the V2 sampler's Gumbel-max kernel (v1/worker/gpu/sample/gumbel.py gumbel_sample, 0.28.0-0.33.0)
GUMBEL_BLOCK = 1024


def v2_sampler_bytes(spec: ModelSpec, requests: int, b: int) -> int:
    """The V2 model runner's sampler warm-up (v1/worker/gpu/model_runner.py _dummy_sampler_run, 0.29.0): the dummy
    requests carry no sampling parameters (sample/states.py: top_k = vocab, top_p = 1, temperature 0 -> no logits
    processing), so Sampler.sample keeps the logits as compute_logits returns them (the model dtype: b bytes), skips
    top-k / top-p and FlashInfer (get_top_k_top_p gives None) and draws with gumbel_sample, whose scratch is one int64
    index and one float32 maximum per request and 1024-wide block of the vocabulary. Derived, nothing fitted."""
    require_fields(spec, "vocab_size")
    return requests * spec.vocab_size * b + requests * cdiv(spec.vocab_size, GUMBEL_BLOCK) * 12


# --- non-torch memory and CUDA graphs

# Why the "nvlink" figure is not a fact of the launch: most of it is multicast (NVLink SHARP) memory, which exists
# only where the driver reports multicast support (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: NVSwitch systems of
# Hopper or later with the fabric manager running; not a bridged pair, an A100, most VMs):
# - NCCL src/transport/nvls.cc ncclNvlsInit / ncclNvlsBufferSetup: NCCL_NVLS_ENABLE defaults to 2 (on where
#   supported); its buffers are nChannels x 2 x buffSize per rank times the NVLS heads, unicast and multicast,
#   rounded to the multicast granularity;
# - vLLM vllm/distributed/device_communicators/symm_mem.py SymmMemCommunicator (not in 0.10.1.1; 0.12.0 envs.py
#   VLLM_ALLREDUCE_USE_SYMM_MEM default 1): a torch symmetric-memory buffer (64 MiB at TP 2, all_reduce_utils.py) on capability 9.0 / 10.0 only,
#   and only where the rendezvous hands back a multicast pointer;
# - custom_all_reduce.py: off without P2P ("your platform lacks GPU P2P capability"); its buffers are 8 MiB + 8 MiB +
#   8 MiB of rank data, inside every band.
# Without multicast, TP's non-torch memory is NCCL's P2P ring buffers, the "pcie" figure. The launch does not say
# which machine it runs on, so engine.open_terms widens the band to both; a site profile's measured non-torch
# memory settles it.
MULTICAST_BUFFERS = "NVLink multicast (NCCL NVLS, symmetric-memory all-reduce)"


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
                 multicast: bool = True, host_growth: str | None = None,
                 notes: list[str] | None = None) -> tuple[VllmBudget, ...]:
    """The budget of one GPU per pipeline stage (the TP ranks of a stage are alike). `gpu` is the catalog entry
    (kvplan.model.catalog.Gpu) or None for a GPU given by its memory; `site` a SiteProfile whose measured terms
    replace the modelled ones (engines/calibration.py); `gpu_reserved` memory in use before vLLM starts
    (--gpu-reserved), added to the site profile's: vLLM's budget is a fraction of the total, so it moves only the
    start check (free at the snapshot >= requested). `cuda_graphs` False (--enforce-eager): no graph is estimated.
    `multicast` False: GPUs joined by NVLink whose driver reports no multicast (no NVSwitch fabric manager, a VM, a
    bridged pair), where TP's non-torch memory is a PCIe node's (MULTICAST_BUFFERS below). `host_growth` (a release's
    Release.integrated_free reader): on a unified pool, the host's growth during the profile at its ceiling is
    non-torch memory (runtime/unified.py profile_growth_ceiling; a site profile's measured non-torch replaces it).
    The environment's choices (the sampler, the CUDA-graph estimate) come in `release` (releases.with_environment)."""
    requested = requested_bytes(total_bytes, util, release)
    cc = gpu.compute_capability if gpu is not None else None
    rocm = gpu is not None and gpu.rocm
    kernel = rocm_mxfp4_backend(release, cc) if rocm else mxfp4_backend(release, cc if cc is not None else "9.0")
    weights = stage_weight_bytes(spec, weight_fmt, model_dtype, tp, pp, mxfp4_kernel=kernel,
                                 fp8_moe_loading=constants.fp8_moe_loading_bytes, notes=notes)
    counts = pp_layer_counts(spec.layers, pp)
    context = CUDA_CONTEXT_ONE_GPU if tp * pp == 1 else CUDA_CONTEXT_MULTI_GPU
    interconnect = gpu.interconnect if gpu is not None else None
    if not multicast and non_torch_setup(tp, pp, release, interconnect) == "nvlink":
        interconnect = "pcie"  # NCCL's P2P ring buffers only, as on a PCIe node (MULTICAST_BUFFERS)
    setup = non_torch_setup(tp, pp, release, interconnect)
    sizes = cuda_graph_capture_sizes(max_num_seqs, max_num_batched_tokens, release, sm10x=_sm_major(cc) == 10)
    mxfp4_triton = spec.quant_method == "mxfp4" and spec.moe is not None and weight_fmt is None and kernel == "triton"
    emulation_band = 0
    if rocm and release.rocm_mxfp4_emulation and spec.quant_method == "mxfp4" and spec.moe is not None and weight_fmt is None:
        # AITER's layout or the emulation's 32-wide block: the band spans both (releases.Release.rocm_mxfp4_emulation)
        emulation_band = mxfp4_expert_bytes(spec, tp, kernel)[1] - mxfp4_expert_bytes(spec, tp, "emulation")[1]
    if rocm and setup == "one-0.10":
        setup = "one"  # the CUDA 0.10-0.17 figure is a CUDA release's; ROCm's own band covers both
    in_use = (site.memory_in_use_bytes if site is not None else 0) + gpu_reserved
    # each node of a unified-memory TP run reads the whole checkpoint: the stages' weights times the ranks
    growth = unified.profile_growth_ceiling(host_growth, sum(weights) * tp) if host_growth is not None else 0
    out = []
    for stage in range(pp):
        act = activation_peak(spec, model_dtype, stage=stage, pp=pp, tp=tp, max_num_batched_tokens=max_num_batched_tokens,
                              max_num_seqs=max_num_seqs, release=release, constants=constants,
                              expert_parallel=expert_parallel)
        peak = act.bytes
        nt = non_torch_bytes(tp, pp, release, interconnect, constants) if not rocm else _rocm_non_torch(setup, tp, constants)
        nt += growth
        graphs = cuda_graph_bytes(counts[stage], sizes, constants) if release.cuda_graph_estimated and cuda_graphs else 0
        if release.model_runner == releases.RUNNER_V2:
            graphs = math.ceil(graphs * V2_GRAPH_CENTRE)
        if release.compile_cache == releases.COMPILE_COLD and cuda_graphs:  # --enforce-eager compiles nothing
            nt += COLD_COMPILE_RETAINED_BYTES
            peak += COLD_COMPILE_TRANSIENT_BYTES
        if rocm:
            graphs = math.ceil(graphs * ROCM_GRAPH_CENTRE)
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
                     sort_sampler=release.sampler == releases.SAMPLER_SORT, rocm_requested=requested if rocm else None,
                     aiter=release.rocm_aiter is not False, v2_graphs=release.model_runner == releases.RUNNER_V2)
        band += math.ceil(emulation_band * Fraction(counts[stage], spec.layers))
        out.append(VllmBudget(stage=stage, layers=counts[stage], total_bytes=total_bytes,
                              gpu_memory_utilization=_fraction_text(util), requested_bytes=requested,
                              weights_bytes=weights[stage], activation_peak_bytes=peak, non_torch_bytes=nt,
                              cuda_graph_bytes=graphs, cuda_graph_subtracted=subtract, context_bytes=context,
                              available_bytes=available, uncertainty_bytes=band, memory_in_use_bytes=in_use,
                              moe_workspace_bytes=act.moe_workspace, sampler_bytes=act.sampler,
                              non_torch_setup=setup, site_terms=tuple(replaced)))
    return tuple(out)


def _rocm_non_torch(setup: str, tp: int, constants: Constants) -> int:
    """The centre of ROCm's non-torch band: the CUDA figure of the same setup (see ROCM_BAND_NON_TORCH)."""
    base = constants.non_torch(setup)
    if tp > 2 and setup == "nvlink":
        base += constants.non_torch_per_extra_rank * (tp - 2)
    return base


def _band(weights: int, act: ActivationPeak, peak: int, non_torch: int, graphs: int, setup: str, spec: ModelSpec,
          replaced: list[str], mxfp4_triton: bool, sort_sampler: bool = False, rocm_requested: int | None = None,
          aiter: bool = True, v2_graphs: bool = False) -> int:
    """The half width of the budget's band: each term's measured leave-out error, summed (they are not known to
    cancel); on ROCm (`rocm_requested`, the requested memory) the wider bands of the ROCm terms, AITER's unless the
    launch turned it off (`aiter` False). A term a site profile measured keeps a tenth of its band."""
    rocm = rocm_requested is not None
    aiter = rocm and aiter
    w = BAND_WEIGHTS_BYTES + math.ceil(weights * BAND_WEIGHTS_FRACTION)
    if mxfp4_triton:
        w += math.ceil(weights * BAND_MXFP4_FRACTION)
    if spec.vision_params:
        w += BAND_MULTIMODAL_WEIGHTS_BYTES
    a = BAND_ACTIVATION_BYTES + math.ceil(peak * (BAND_ACTIVATION_SORT_FRACTION if sort_sampler or aiter
                                                  else BAND_ACTIVATION_FRACTION))
    if aiter:
        a += act.moe_workspace
    if spec.vision_params:
        a += BAND_MULTIMODAL_BYTES
    n = ROCM_BAND_NON_TORCH[setup] if rocm else BAND_NON_TORCH[setup]
    g = math.ceil(graphs * (ROCM_BAND_GRAPH_FRACTION if rocm else BAND_CUDA_GRAPH_FRACTION))
    if v2_graphs:  # the V2 runner's measured capture: the whole range the source leaves (V2_GRAPH_CENTRE)
        g = max(g, math.ceil(graphs * BAND_V2_GRAPH_FRACTION))
    if rocm:
        w += math.ceil(rocm_requested * ROCM_BAND_TOTAL_FRACTION)
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
