"""vLLM's release lines: one rules object per line, every rule that changed between releases stated once, with
the release it changed in and the vLLM file it was read from. Every consumer (the engine, the budget, the
`vllm serve` option table, check, calibrate) asks this registry; a version string is parsed here only.

Read from each release's own wheel (`pip download --no-deps vllm==X`, the `.py` files; the studied releases are
listed in docs/research/vllm-releases.md and, for the option tables, in kvplan/data/vllm_options/). Citations are
`file:function` under `vllm/`. A line is what users run ("0.18-0.19"); where a rule changed inside a line (a patch
release), PATCHES says so and `release(version)` applies it, so the rules object of "0.10.1.1" is exact for that
release. A rule first seen in a studied release X is dated to the first release of X's line when the releases
between were not read (e.g. the 0.20 line's rules come from 0.20.2; 0.20.0 and 0.20.1 were not read).

Releases before 0.10 are refused (exit 3), not guessed: 0.6-0.7 run the V0 engine (a profile of one batch of the
whole max_model_len while chunked prefill is off below 32K, CPU swap blocks, its own block count), and 0.8-0.9 the
first V1 releases, whose budget counts absolute peaks (CUDA context and weights inside) and that fall back to V0
for many features; neither shares the 0.10+ budget or layout rules. Releases newer than the newest line are
refused too: their rules were not read.

Adding a release line: one Release below (a copy of the line before it with the rules that changed) and its
option table, kvplan/data/vllm_options/<release>.json (scripts/vllm_option_table.py writes it from vLLM's parser).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kvplan.engines import releases as policy
from kvplan.core.errors import InputError
from kvplan.engines.changes import History

GIB = 2**30

# How --max-model-len auto searches (Release.auto_fit): "global" (0.14: the whole model's KV cache groups against
# the smallest worker's memory, v1/core/kv_cache_utils.py get_kv_cache_configs), "per_worker" (each worker's own
# layers against its own memory, the smallest result: _project_kv_cache_groups_to_worker)
AUTO_FIT_GLOBAL = "global"
AUTO_FIT_PER_WORKER = "per_worker"


@dataclass(frozen=True)
class BatchTier:
    """One row of vLLM's default scheduler limits (engine/arg_utils.py get_batch_defaults): a device with at least
    `min_total_gib` GiB of memory whose lower-cased name does not contain `excludes` and whose compute capability is
    not `excludes_capability` gets these. The tokens depend on the entry point (vLLM's UsageContext):
    OPENAI_API_SERVER (`vllm serve`) and LLM_CLASS (the offline `LLM(...)` class); the sequences do not."""

    min_total_gib: int
    excludes: str | None
    max_num_batched_tokens: int  # UsageContext.OPENAI_API_SERVER
    max_num_seqs: int  # both entry points
    offline_max_num_batched_tokens: int  # UsageContext.LLM_CLASS
    excludes_capability: str | None = None


# engine/arg_utils.py _set_default_args_v1 (0.10-0.11) / get_batch_defaults (0.11.2+), read in 0.10.2, 0.11.0,
# 0.13.0, 0.14.1, 0.19.0, 0.20.2, 0.26.0, 0.27.1, 0.28.0, 0.29.0, 0.31.0, 0.32.0 and 0.33.0: >= 70 GiB and not an
# A100: 8192 tokens / 1024 sequences for the API server, 16384 / 1024 for the LLM class; every other GPU 2048 / 256
# and 8192 / 256. 0.28 adds a first tier of 16384 / 1024 at >= 160 GiB for both. GB10 (DGX Spark, 121.6 GiB) gets
# the small tier on every release, for two reasons in turn: until 0.32 get_batch_defaults asks NVML for the memory
# (platforms/cuda.py NvmlCudaPlatform.get_device_total_memory: nvmlDeviceGetMemoryInfo, which an integrated GPU does
# not implement: nvidia-smi prints N/A) and its `except Exception` takes device_memory = 0 (Release.nvml_total_on_
# integrated False; a public 0.13 GB10 log prints "max_num_batched_tokens=2048"); 0.33 falls back to torch's total
# there and keeps GB10 (is_device_capability((12, 1)): "the memory but not the compute of a large discrete GPU") on
# the small tier by name.
TIERS_70 = (BatchTier(70, "a100", 8192, 1024, 16384), BatchTier(0, None, 2048, 256, 8192))
TIERS_160 = (BatchTier(160, None, 16384, 1024, 16384),) + TIERS_70
TIERS_160_GB10 = (TIERS_160[0], dataclasses.replace(TIERS_70[0], excludes_capability="12.1"), TIERS_70[1])

# Which entry point starts the engine (engine/arg_utils.py: the UsageContext its defaults are keyed by): `vllm serve`
# (entrypoints/cli/serve.py, OPENAI_API_SERVER), the offline LLM class (entrypoints/llm.py, LLM_CLASS) that
# notebooks, batch jobs and RL frameworks build, or an engine built directly (AsyncLLM / LLMEngine.from_engine_args:
# ENGINE_CONTEXT; `vllm run-batch`: OPENAI_BATCH_RUNNER), which get_batch_defaults has no row for. Only the default
# scheduler limits differ on CUDA (LLM.__init__'s gpu_memory_utilization default is the CacheConfig's: 0.9 until
# 0.19, 0.92 from 0.20, read in the same releases). kvplan --engine-option entry_point=serve|offline|engine.
ENTRY_SERVE = "serve"
ENTRY_OFFLINE = "offline"
ENTRY_ENGINE = "engine"
ENTRY_POINTS = (ENTRY_SERVE, ENTRY_OFFLINE, ENTRY_ENGINE)
# ENGINE_CONTEXT's limits, whatever the GPU: SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS / DEFAULT_MAX_NUM_SEQS
# (config/scheduler.py, the .get() fallback of _set_default_max_num_seqs_and_batched_tokens_args, read in 0.13.0,
# 0.14.1, 0.19.0 ... 0.33.0); in 0.10-0.11 the arg_utils defaults skip a context they have no row for and
# SchedulerConfig.__post_init__ sets 128 sequences and utils.DEFAULT_MAX_NUM_BATCHED_TOKENS (2048) tokens, raised
# to MULTIMODAL_MODEL_MAX_NUM_BATCHED_TOKENS (5120) for a multimodal model (Release.engine_multimodal_tokens)
ENGINE_CONTEXT_LIMITS = (2048, 128)
ENTRY_POINT_OPTION = "entry_point"

# The sampler warm-up of the profile run (v1/worker/gpu_model_runner.py _dummy_sampler_run: top-k and top-p on
# [num_reqs, vocab] float32 logits), by the implementation each release picks on CUDA
# (v1/sample/ops/topk_topp_sampler.py TopKTopPSampler.__init__):
SAMPLER_SORT = "sort"  # apply_top_k_top_p: a full sort of the vocabulary (FlashInfer absent or off)
SAMPLER_TRITON = "triton"  # apply_top_k_top_p_triton (0.17+, batches of >= 8): no sort
SAMPLER_FLASHINFER = "flashinfer"  # top_k_top_p_sampling_from_logits (0.21+ default)


# the environment variable that picks the top-k / top-p sampler (kvplan --engine-option KEY=VALUE for vLLM)
FLASHINFER_SAMPLER_ENV = "VLLM_USE_FLASHINFER_SAMPLER"
FLASHINFER_SAMPLER_OPTION = FLASHINFER_SAMPLER_ENV.lower()  # --engine-option keys are read in lower case


# the environment variable that lets max_model_len exceed the model's derived limit (vllm/config/model.py
# _get_and_verify_max_len: a warning instead of "User-specified max_model_len ... is greater than the derived")
ALLOW_LONG_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
ALLOW_LONG_OPTION = ALLOW_LONG_ENV.lower()
# the environment variable that says whether the CUDA-graph estimate is taken out of the budget (0.18+: envs.py
# default 0 in 0.18-0.19, 1 from 0.20; v1/worker/gpu_worker.py determine_available_memory); before 0.18 there is
# no estimate and the variable does not exist
GRAPH_ESTIMATE_ENV = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"
GRAPH_ESTIMATE_OPTION = GRAPH_ESTIMATE_ENV.lower()
# ROCm: the master switch of AMD's AITER kernels (envs.py, 0.10-0.33: os.getenv(..., "False").lower() in ("true",
# "1"), any other value off); unset it is off, but AMD's images and recipes set it, so a launch that does not say
# leaves it open (budget.py ROCM_*: the band covers both); given, it narrows the band and picks the MLA backend
ROCM_AITER_ENV = "VLLM_ROCM_USE_AITER"
ROCM_AITER_OPTION = ROCM_AITER_ENV.lower()
# Which model runner profiles the budget (Release.model_runner; engine.release_for settles it for a launch):
# - "v1": v1/worker/gpu_model_runner.py GPUModelRunner, every line before 0.28;
# - "v2-dense": 0.28, config/vllm.py VllmConfig.use_v2_model_runner: v1/worker/gpu/model_runner.py (the V2 runner) for
#   a generating model that is not a MoE, not a hybrid and not attention-free, or whose architecture is in
#   DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES; the V1 runner otherwise;
# - "v2": 0.29-0.33, the V2 runner whatever the model ("Using V2 Model Runner" in the logs), unless a feature it lacks
#   is asked for (VllmConfig._get_v2_model_runner_unsupported_features: the speculative methods in
#   Release.v2_runner_v1_methods) or, on ROCm, DeepSeek-V3.2 / V4 (ROCM_DEFAULT_MRV1_ARCHITECTURES).
# VLLM_USE_V2_MODEL_RUNNER (envs.py maybe_convert_bool: bool(int(value)), 0.28-0.33) overrides the choice either way.
RUNNER_V1 = "v1"
RUNNER_V2 = "v2"
RUNNER_V2_DENSE = "v2-dense"
V2_RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"
V2_RUNNER_OPTION = V2_RUNNER_ENV.lower()
# 0.28.0 config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES: MoE architectures that take the V2 runner anyway
V2_DEFAULT_ARCHITECTURES_028 = frozenset({
    "DeepseekV2ForCausalLM", "DeepseekV4ForCausalLM", "GraniteMoeForCausalLM", "InklingForCausalLM",
    "InklingForConditionalGeneration", "KimiK3ForConditionalGeneration", "LongcatFlashNgramForCausalLM",
    "Qwen2MoeForCausalLM"})
# 0.29.0-0.33.0 config/vllm.py ROCM_DEFAULT_MRV1_ARCHITECTURES
ROCM_V1_RUNNER_ARCHITECTURES = frozenset({"DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM"})

# Whether torch.compile's cache holds this model's compiled graphs when vLLM starts (kvplan's own key,
# --engine-option compile_cache=warm|cold). vLLM compiles inside the profile run (the first dummy forward), so on a
# cold cache Inductor's compilation happens inside the memory the budget measures; the launch does not say whether
# ~/.cache/vllm/torch_compile_cache survives from an earlier start (a container without a volume starts cold every
# time), so on the lines where its cost is measured (Release.compile_cache_open) the band covers both
# (budget.COLD_COMPILE_*; engine.open_terms). --enforce-eager compiles nothing (config/vllm.py: mode NONE, 0.29.0).
COMPILE_CACHE_OPTION = "compile_cache"
COMPILE_WARM = "warm"
COMPILE_COLD = "cold"

OPTION_KEYS = (FLASHINFER_SAMPLER_OPTION, ALLOW_LONG_OPTION, GRAPH_ESTIMATE_OPTION, ENTRY_POINT_OPTION, ROCM_AITER_OPTION,
               V2_RUNNER_OPTION, COMPILE_CACHE_OPTION)


def aiter_flag(value: str | None) -> bool | None:
    """VLLM_ROCM_USE_AITER as vLLM reads it (envs.py): on for "1" / "true" in any case, off for anything else; None
    when not given."""
    return None if value is None else value.strip().lower() in ("true", "1")


def allow_long_flag(value: str | None) -> bool:
    """VLLM_ALLOW_LONG_MAX_MODEL_LEN as vLLM reads it (envs.py, 0.10-0.33): value.strip().lower() in ("1", "true");
    any other value is off, without an error."""
    return value is not None and value.strip().lower() in ("1", "true")


def integer_flag(name: str, value: str, *, where: str = "--engine-option", hint: str = "1 or 0") -> bool:
    """A variable vLLM reads as bool(int(value)) (envs.py: VLLM_USE_FLASHINFER_SAMPLER 0.10-0.33,
    VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS 0.18-0.33): any integer, nonzero meaning on; anything else stops vLLM
    at start-up, so it is refused here."""
    try:
        return bool(int(value))
    except ValueError:
        raise InputError(f"{name}={value!r}: vLLM reads it as an integer and would not start", where=where,
                         hint=f"{name}={hint}") from None


def flashinfer_flag(value: str, *, where: str = "--engine-option") -> bool:
    return integer_flag(FLASHINFER_SAMPLER_ENV, value, where=where,
                        hint="1 (FlashInfer's sampler) or =0 (the native one)")


def entry_point(value: str, *, where: str = "--engine-option") -> str:
    """`serve` or `offline` (ENTRY_POINTS), as --engine-option entry_point=... or a deployment gives it."""
    text = value.strip().lower()
    if text not in ENTRY_POINTS:
        raise InputError(f"{ENTRY_POINT_OPTION}={value!r}: vLLM starts from `vllm serve`, the offline LLM class or an "
                         "engine built directly", where=where,
                         hint=f"{ENTRY_POINT_OPTION}=serve (the default), offline or engine")
    return text


def compile_cache(value: str, *, where: str = "--engine-option") -> str:
    """`warm` or `cold`, as --engine-option compile_cache=... gives it."""
    text = value.strip().lower()
    if text not in (COMPILE_WARM, COMPILE_COLD):
        raise InputError(f"{COMPILE_CACHE_OPTION}={value!r}: torch.compile's cache is warm (the compiled graphs are "
                         "loaded) or cold (vLLM compiles in its profile run)", where=where,
                         hint=f"{COMPILE_CACHE_OPTION}=warm or {COMPILE_CACHE_OPTION}=cold")
    return text


def with_environment(release: "Release", *, graph_estimate: str | None = None,
                     flashinfer_sampler: str | None = None, entry: str | None = None,
                     v2_runner: str | None = None, compile_state: str | None = None) -> "Release":
    """The release's rules under the engine's environment (None: a variable not set):
    VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 takes the CUDA-graph estimate out of the budget on 0.18-0.19 too, =0
    leaves it in on 0.20+ (before 0.18 it changes nothing); VLLM_USE_FLASHINFER_SAMPLER picks the sampler
    (sampler_for); `entry` the entry point whose scheduler defaults apply (ENTRY_POINTS); VLLM_USE_V2_MODEL_RUNNER
    the model runner on 0.28+ (Release.v2_runner_env; the variable is not modelled before 0.28: InputError there);
    `compile_state` whether torch.compile's cache is warm or cold (COMPILE_CACHE_OPTION)."""
    changes: dict[str, Any] = {}
    if v2_runner is not None:
        if release.model_runner == RUNNER_V1:
            raise policy.not_read(f"{V2_RUNNER_ENV} on vLLM {release.version}: kvplan read the V2 model runner's "
                                  "profile in 0.28 and later only", where="--engine-option",
                                  hint=f"leave {V2_RUNNER_ENV} out, or judge the launch as 0.28 or newer")
        changes["v2_runner_env"] = integer_flag(V2_RUNNER_ENV, v2_runner)
    if compile_state is not None:
        changes["compile_cache"] = compile_cache(compile_state)
    if entry is not None and entry_point(entry) != release.entry_point:
        changes["entry_point"] = entry_point(entry)
    if graph_estimate is not None:
        flag = integer_flag(GRAPH_ESTIMATE_ENV, graph_estimate)
        if release.cuda_graph_estimated and flag != release.cuda_graph_subtracted:
            changes["cuda_graph_subtracted"] = flag
    if flashinfer_sampler is not None:
        sampler = sampler_for(release, flashinfer_sampler)
        if sampler != release.sampler:
            changes["sampler"] = sampler
    return dataclasses.replace(release, **changes) if changes else release


def on_rocm(release: "Release", aiter: bool | None = None) -> "Release":
    """The release's rules on ROCm (an AMD GPU), where vLLM's CUDA-only paths are not taken:
    - the sampler: TopKTopPSampler.__init__ takes FlashInfer only under current_platform.is_cuda(), False on ROCm
      (v1/sample/ops/topk_topp_sampler.py, 0.12.0 / 0.19.0 / 0.27.1 / 0.33.0 read), so VLLM_USE_FLASHINFER_SAMPLER
      and an installed flashinfer change nothing: the native path, PyTorch's sort before 0.17 and the Triton kernel
      from 0.17 (apply_top_k_top_p: HAS_TRITON and >= 8 rows). VLLM_ROCM_USE_AITER=1 swaps in AITER's sampler
      (forward_hip), whose kernels live in the aiter package kvplan has not read: budget.py widens the band;
    - the CUDA-graph estimate: not profiled on 0.18-0.25, profiled and subtracted from 0.26 (rocm_graph_estimate);
    - `aiter`: VLLM_ROCM_USE_AITER as the launch gives it (None: not given, left open)."""
    sampler = SAMPLER_SORT if release.sampler == SAMPLER_SORT else SAMPLER_TRITON
    estimated = release.cuda_graph_estimated and release.rocm_graph_estimate
    return dataclasses.replace(release, sampler=sampler, sampler_by_install=False, cuda_graph_estimated=estimated,
                               cuda_graph_subtracted=estimated and release.cuda_graph_subtracted, rocm=True,
                               rocm_aiter=aiter)


def sampler_for(release: "Release", flashinfer_env: str | None) -> str:
    """The sampler a worker of `release` profiles with VLLM_USE_FLASHINFER_SAMPLER set as given (None: unset).
    v1/sample/ops/topk_topp_sampler.py TopKTopPSampler.__init__: on selects FlashInfer on every line (0.10-0.11 use
    it whenever flashinfer is installed and the variable is not 0; 0.12-0.20 only when it is 1; 0.21+ unless it is 0);
    off the native path: PyTorch's sort before 0.17, the Triton kernel from 0.17."""
    if flashinfer_env is None:
        return release.sampler
    if flashinfer_flag(flashinfer_env):
        return SAMPLER_FLASHINFER
    return SAMPLER_TRITON if release.sampler in (SAMPLER_TRITON, SAMPLER_FLASHINFER) else SAMPLER_SORT


MOE_DIRECT = "direct"  # fused_moe.py fused_experts_impl: workspace freed after each layer
MOE_MODULAR = "modular"  # FusedMoEModularKernel + TritonExperts: one persistent workspace

BUDGET_PEAK = "peak"  # requested - (weights + torch peak increase + non-torch increase)
BUDGET_CONSUMED = "consumed"  # requested - (free-memory drop + transient torch peak) - graph estimate


@dataclass(frozen=True)
class Release:
    """The rules of one vLLM release line (v1 engine). Each field says what it rules, the file it was read from and
    the release it changed in; `release(version)` returns a copy with a line's patch-release changes applied."""

    line: str  # what users run: "0.18-0.19"
    first: str  # the first release of the line
    mirrors: str  # the release whose source was read for it
    version: str  # the release these rules are for (set by release(); = mirrors in RELEASES)

    # --- defaults ------------------------------------------------------------------------------------------
    # config/cache.py CacheConfig.gpu_memory_utilization: 0.9; 0.92 from 0.20 (0.20.2 read)
    default_gpu_util: Fraction
    # engine/arg_utils.py get_batch_defaults (see TIERS_70 / TIERS_160 / TIERS_160_GB10)
    batch_tiers: tuple[BatchTier, ...]
    # platforms/cuda.py get_device_total_memory on an integrated GPU: NVML's error until 0.32 (get_batch_defaults then
    # sizes for 0 bytes: the small tier), torch's total from 0.33
    nvml_total_on_integrated: bool
    # engine/arg_utils.py: a defaulted max_num_seqs is capped at max_num_batched_tokens (0.10.1+)
    max_num_seqs_capped_at_batched_tokens: bool
    # engine/arg_utils.py: defaulted max_num_batched_tokens capped at max_num_seqs x max_model_len (0.11.2+)
    batched_tokens_capped_at_seqs_x_len: bool

    # --- the memory budget (v1/worker/gpu_worker.py determine_available_memory) ----------------------------
    # requested = total x util as a float until 0.13; math.ceil from 0.14 (v1/worker/utils.py request_memory)
    requested_ceil: bool
    # v1/worker/gpu_worker.py init_device: 0.10 takes the init snapshot before distributed init, so NCCL's
    # communicators count in the profile's non-torch increase; 0.11+ after it (outside the budget)
    nccl_in_budget: bool
    # BUDGET_PEAK until 0.26; BUDGET_CONSUMED from 0.27 (utils/mem_utils.py memory_profiling total_consumed)
    budget_formula: str
    # v1/worker/gpu_model_runner.py profile_cudagraph_memory: the estimate exists from 0.18, and is subtracted by
    # default from 0.20 (envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default 1)
    cuda_graph_estimated: bool
    cuda_graph_subtracted: bool
    # ROCm: v1/worker/gpu_worker.py determine_available_memory skips profile_cudagraph_memory on ROCm in 0.18-0.25
    # ("not current_platform.is_rocm()", 0.19.0 and 0.20.2 read: "graph pool handles and mem_get_info behave
    # differently"); from 0.26 (0.26.0 read: "is_cuda_alike()", vllm#44825) ROCm estimates and subtracts it too
    rocm_graph_estimate: bool
    # ROCm with VLLM_ROCM_USE_AITER=1: ROCM_AITER_MLA serves MLA (platforms/rocm.py); its block when --block-size is
    # not given: None in 0.10-0.11 (get_attn_backend_cls raises for the default 16: "currently only supports block
    # size 1"), 16 in 0.12-0.17 (check_and_update_config sets 16, the kernel splits it into 1-token kernel blocks),
    # 1 in 0.18-0.19 (0.19.0: kernel sizes [1], update_block_size_for_backend takes the smallest), 16 from 0.20
    # (0.20.2, 0.26.0, 0.27.1: MultipleOf(1))
    rocm_aiter_mla_block: int | None
    # ROCm: how the MXFP4 MoE experts are padded (runtime/weights.py mxfp4_expert_bytes): triton_kernels with I and H
    # rounded to 256 (quantization/mxfp4.py create_weights, 0.11.0); 0.14: mxfp4_utils.get_padding_alignment, 256
    # on gfx950, 128 otherwise ("rocm-128", 0.14.1); 0.18-0.26: 256 (fused_moe/oracle/mxfp4.py
    # mxfp4_round_up_hidden_size_and_intermediate_size, 0.19.0 / 0.20.2 / 0.26.0). From 0.27 ROCm tries
    # AITER_MXFP4_BF16 (256) and then EMULATION, which keeps the packed weights at the 32-wide MX block (0.27.1, 0.33.0):
    # rocm_mxfp4_emulation widens the weights band over both
    rocm_mxfp4_tiles: str
    rocm_mxfp4_emulation: bool
    # config/vllm.py _set_cudagraph_sizes: the largest capture size is min(2 x max_num_seqs, ceiling): 512; 1024 on
    # SM10x from 0.29
    cuda_graph_ceiling_sm10x: int
    # v1/sample/ops/topk_topp_sampler.py: SAMPLER_SORT until 0.16 (0.10-0.11: FlashInfer only when the optional
    # flashinfer package is installed, which the public 0.10/0.11 logs show it was not: "FlashInfer is not
    # available"; 0.12-0.20: FlashInfer opt-in, VLLM_USE_FLASHINFER_SAMPLER=1); SAMPLER_TRITON from 0.17 (0.17.1
    # read, absent in 0.16.0); SAMPLER_FLASHINFER by default from 0.21 (envs.py default True)
    sampler: str
    # model_executor/layers/fused_moe: the unquantized / fp8 MoE runs fused_experts_impl (MOE_DIRECT) until 0.13,
    # the modular TritonExperts kernel with a persistent WorkspaceManager buffer (MOE_MODULAR) from 0.14
    # (unquantized_fused_moe_method.py process_weights_after_loading)
    fused_moe: str
    # envs.py VLLM_FUSED_MOE_CHUNK_SIZE: tokens per fused-MoE chunk, 32768 until 0.11, 16384 in 0.12-0.17,
    # removed in 0.18 (None: one chunk of all tokens)
    fused_moe_chunk: int | None
    # model_executor/layers/quantization/mxfp4.py get_mxfp4_backend on Hopper without FlashInfer's MXFP4 MoE:
    # Marlin (vllm#23278 logs the Marlin fallback on an H100 with 0.10.1) until 0.11; triton_kernels from 0.12
    mxfp4_hopper_backend: str

    # --- KV layout (v1/core/kv_cache_utils.py; 0.33: v1/core/kv_cache_planning.py) --------------------------
    # _get_kv_cache_groups_uniform_page_size: group size = the smallest layer count per spec; 0.12: the largest
    # when it is < 1.25 x the smallest; 0.18: < 1.5 x (None: always the smallest)
    group_size_max_within: Fraction | None
    # pages of different sizes in one model: "equal" (0.10-0.11: NotImplementedError unless Mamba pages were
    # padded to the attention page beforehand), "divide" (0.12+ unify_kv_cache_spec_page_size: each must divide
    # the largest, its block size multiplied), "pad" (0.33: smaller pages padded, MLA excepted)
    page_unification: str
    # UniformTypeKVCacheSpecs: layers of one kind with different pages in one group (0.11+); 0.10 refuses them
    uniform_type_groups: bool
    # config/vllm.py + envs.py VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE: chunked-local layers keep their
    # own groups (0.10.0; 0.14+: default 1); 0.10.1-0.13 default 0: the hybrid manager is off for them and they
    # are charged the whole max_model_len
    chunked_local_hybrid: bool
    # "GPU KV cache size": num_gpu_blocks // groups x block size until 0.19; int(concurrency x max_model_len) 0.20+
    tokens_logged_from_concurrency: bool
    # check_enough_kv_cache_memory keeps the null block back before the fit test (0.29+)
    null_block_reserved_before_fit: bool
    # --num-gpu-blocks-override: until 0.19 the fit check tests the memory and the override then replaces the block
    # count (v1/core/kv_cache_utils.py may_override_num_blocks); from 0.20 (read in 0.20.2 ... 0.32.0, get_kv_cache_configs
    # "adjusted_memory"; 0.33 v1/core/kv_cache_planning.py) the fit check and the auto-fit plan with override x bytes
    # per block
    fit_check_uses_block_override: bool
    # sliding-window / chunked-local tokens in flight: one batch of max_num_batched_tokens until 0.25;
    # config/vllm.py max_in_flight_tokens = max_concurrent_batches x max_num_batched_tokens from 0.26 (V1 model
    # runner: 2 batches with async scheduling at PP 1, else PP); the V2 model runner (0.29+ default): PP + 1
    in_flight: str  # "one" | "v1_async" | "v2_async"
    # config/model.py ModelConfig.is_prefix_caching_supported: generative hybrid models default to prefix caching
    # (mamba_cache_mode "align") from 0.26
    hybrid_prefix_caching: bool
    # hybrid attention + Mamba block size: alignment 16 (MLA 64) in model_executor/models/config.py
    # HybridAttentionMambaModelConfig until 0.19; platforms/interface.py _align_hybrid_block_size from 0.20 (MLA
    # 128, at least the requested block size)
    hybrid_mla_alignment: int
    hybrid_align_to_block_size: bool
    # the GDN layers (Qwen3-Next, Qwen3.5) export FlashInfer prefill checkpoints every 64 tokens with prefix
    # caching (v1/attention/backends/gdn_attn.py FLASHINFER_GDN_CHECKPOINT_ALIGNMENT, 0.33)
    gdn_prefill_checkpoints: bool
    pads_uneven_pages: bool
    # MLA block size when --block-size is not given, by GPU (platforms/cuda.py): Hopper FlashMLA 64 until 0.17,
    # FLASH_ATTN_MLA (16) first from 0.18; SM10x: CUTLASS_MLA 128 (0.10.2-0.14), FLASHINFER_MLA 64 (0.15-0.17,
    # qk_nope_head_dim 128) and 32 (0.18+); elsewhere (Ampere, Ada, SM12x) TRITON_MLA 16
    mla_block_hopper: int
    mla_block_sm10x: int

    # --max-model-len auto / -1 (0.14+): at start-up the length is lowered to the longest whose one request fits
    # the KV memory (v1/core/kv_cache_utils.py _auto_fit_max_model_len, a binary search over 1 ... the derived
    # length); None: the release has no such value (0.10-0.13 read -1 as a length)
    auto_fit: str | None
    # v1/sample/ops/topk_topp_sampler.py: with VLLM_USE_FLASHINFER_SAMPLER unset, FlashInfer's sampler whenever
    # flashinfer is installed (0.10-0.11), which the launch does not say (engine.open_terms)
    sampler_by_install: bool
    # the auto-fit log line (v1/core/kv_cache_utils.py _auto_fit_max_model_len): "... available GPU memory (X GiB
    # available for KV cache)" until 0.31, "... available KV cache memory (X GiB GPU)" from 0.32
    auto_fit_log_device: bool
    # what an integrated GPU's free memory is read from (utils/mem_utils.py MemorySnapshot.measure): "cuda" (0.10-0.11:
    # torch.cuda.mem_get_info, which on a unified pool leaves the host's reclaimable page cache out of the free
    # memory), "psutil" (0.12+: psutil.virtual_memory().available on Orin, Thor and Spark by capability (8.7, 11.0,
    # 12.1) in 0.12.0-0.19, by torch's is_integrated from 0.20; read in 0.12.0, 0.13.0, 0.19.0, 0.20.2, 0.33.0)
    integrated_free: str
    # --- parser and log -------------------------------------------------------------------------------------
    # config/cache.py CacheConfig.kv_cache_memory_bytes: --kv-cache-memory-bytes exists from 0.10.2
    kv_cache_memory_option: bool
    # vllm/utils/argparse_utils.py: 0.33 registers EnableDisableAction for switches (--disable-x for --enable-x; the
    # option tables carry each switch's action, serve_args derives the spellings from it)
    enable_disable_switches: bool
    # utils/argparse_utils.py load_config_file: a config file's `false` becomes --no-KEY where it exists (0.28+)
    config_false_as_no_flag: bool
    # the spelling of vLLM's not-fit error: "the models's max seq len" until 0.21, "model's" from 0.22
    not_fit_possessive: str
    # GiB in log lines: "%.2f" until 0.13; utils/mem_utils.py format_gib str(round(x, 2)) from 0.14
    format_gib_rounding: bool
    # set by on_rocm (engine.release_for): the request runs on ROCm, and VLLM_ROCM_USE_AITER as given (None: open)
    rocm: bool = False
    rocm_aiter: bool | None = None
    # --- the launch's environment (with_environment) --------------------------------------------------------
    # the entry point whose scheduler defaults apply (ENTRY_POINTS): `vllm serve` unless the launch says otherwise
    entry_point: str = ENTRY_SERVE
    # ENGINE_CONTEXT's batched tokens for a multimodal model: 5120 in 0.10-0.11 (SchedulerConfig.__post_init__), the
    # plain 2048 from 0.12 (None)
    engine_multimodal_tokens: int | None = None
    # --- the model runner (RUNNER_*) -------------------------------------------------------------------------
    # the line's rule for the default runner; engine.release_for replaces it by the launch's runner (v1 or v2)
    model_runner: str = RUNNER_V1
    # VLLM_USE_V2_MODEL_RUNNER as given (None: unset)
    v2_runner_env: bool | None = None
    # speculative methods the V2 runner lacks, which fall back to the V1 runner (config/vllm.py
    # _get_v2_model_runner_unsupported_features; kvplan's method names: features/speculative.py)
    v2_runner_v1_methods: tuple[str, ...] = ()
    # --- torch.compile's cache (COMPILE_CACHE_OPTION) ----------------------------------------------------------
    # whether the band spans a cold cache (the lines whose cold start is measured in public: 0.29-0.30)
    compile_cache_open: bool = False
    # as given: "warm", "cold" or None (not given: the budget is the warm one, the band covers the cold one)
    compile_cache: str | None = None

    @property
    def first_key(self) -> tuple[int, int, int, int]:
        return sort_key(self.first)

    def at_least(self, version: str) -> bool:
        """Whether these rules are those of release `version` or a later one."""
        return sort_key(self.version) >= sort_key(version)


def _line(**rules) -> Release:
    return Release(version=rules["mirrors"], **rules)


_BASE = dict(
    default_gpu_util=Fraction(9, 10), batch_tiers=TIERS_70, nvml_total_on_integrated=False,
    max_num_seqs_capped_at_batched_tokens=True,
    batched_tokens_capped_at_seqs_x_len=True, requested_ceil=False, nccl_in_budget=False, budget_formula=BUDGET_PEAK,
    cuda_graph_estimated=False, cuda_graph_subtracted=False, rocm_graph_estimate=False, rocm_aiter_mla_block=None, rocm_mxfp4_tiles="rocm-256", rocm_mxfp4_emulation=False, cuda_graph_ceiling_sm10x=512, sampler=SAMPLER_SORT,
    fused_moe=MOE_DIRECT, fused_moe_chunk=32768, mxfp4_hopper_backend="marlin", group_size_max_within=None,
    page_unification="equal", uniform_type_groups=True, chunked_local_hybrid=False,
    tokens_logged_from_concurrency=False, null_block_reserved_before_fit=False, in_flight="one",
    fit_check_uses_block_override=False, auto_fit=None, sampler_by_install=False,
    auto_fit_log_device=False,
    hybrid_prefix_caching=False, hybrid_mla_alignment=64, hybrid_align_to_block_size=False,
    gdn_prefill_checkpoints=False, pads_uneven_pages=False, mla_block_hopper=64, mla_block_sm10x=128,
    kv_cache_memory_option=True, enable_disable_switches=False, config_false_as_no_flag=False, integrated_free="cuda",
    not_fit_possessive="models's",
    format_gib_rounding=False,
)


def _after(previous: dict, **changes) -> dict:
    return {**previous, **changes}


_L10 = _after(_BASE, line="0.10", first="0.10.0", mirrors="0.10.2", nccl_in_budget=True, uniform_type_groups=False,
              engine_multimodal_tokens=5120,
              sampler_by_install=True,
              batched_tokens_capped_at_seqs_x_len=False, chunked_local_hybrid=False)
_L11 = _after(_L10, line="0.11", first="0.11.0", mirrors="0.11.0", nccl_in_budget=False, uniform_type_groups=True)
_L12 = _after(_L11, line="0.12-0.13", first="0.12.0", mirrors="0.13.0", batched_tokens_capped_at_seqs_x_len=True,
              integrated_free="psutil", engine_multimodal_tokens=None,
              sampler_by_install=False, rocm_aiter_mla_block=16,
              fused_moe_chunk=16384, group_size_max_within=Fraction(5, 4), page_unification="divide",
              mxfp4_hopper_backend="triton")
_L14 = _after(_L12, line="0.14-0.17", first="0.14.0", mirrors="0.14.1", requested_ceil=True, fused_moe=MOE_MODULAR,
              rocm_mxfp4_tiles="rocm-128",
              chunked_local_hybrid=True, auto_fit=AUTO_FIT_GLOBAL, format_gib_rounding=True, mla_block_sm10x=128)
_L18 = _after(_L14, line="0.18-0.19", first="0.18.0", mirrors="0.19.0", cuda_graph_estimated=True, auto_fit=AUTO_FIT_PER_WORKER,
              rocm_aiter_mla_block=1, rocm_mxfp4_tiles="rocm-256",
              sampler=SAMPLER_TRITON, fused_moe_chunk=None, group_size_max_within=Fraction(3, 2), mla_block_hopper=16,
              mla_block_sm10x=32)
_L20 = _after(_L18, line="0.20-0.25", first="0.20.0", mirrors="0.20.2", default_gpu_util=Fraction(23, 25),
              rocm_aiter_mla_block=16,
              cuda_graph_subtracted=True, tokens_logged_from_concurrency=True, fit_check_uses_block_override=True,
              hybrid_mla_alignment=128, hybrid_align_to_block_size=True)
_L26 = _after(_L20, line="0.26", first="0.26.0", mirrors="0.26.0", sampler=SAMPLER_FLASHINFER, in_flight="v1_async",
              rocm_graph_estimate=True,
              hybrid_prefix_caching=True, not_fit_possessive="model's")
_L27 = _after(_L26, line="0.27", first="0.27.0", mirrors="0.27.1", budget_formula=BUDGET_CONSUMED,
              rocm_mxfp4_emulation=True)
_L28 = _after(_L27, line="0.28", first="0.28.0", mirrors="0.28.0", batch_tiers=TIERS_160, config_false_as_no_flag=True,
              model_runner=RUNNER_V2_DENSE,
              v2_runner_v1_methods=("ngram", "ngram_gpu", "suffix", "draft_model"))
_L29 = _after(_L28, line="0.29-0.30", first="0.29.0", mirrors="0.29.0", null_block_reserved_before_fit=True,
              in_flight="v2_async", cuda_graph_ceiling_sm10x=1024, model_runner=RUNNER_V2, compile_cache_open=True,
              v2_runner_v1_methods=("ngram", "ngram_gpu", "suffix", "draft_model"))
_L31 = _after(_L29, line="0.31-0.32", first="0.31.0", mirrors="0.31.0", v2_runner_v1_methods=("ngram", "ngram_gpu", "suffix"))
_L33 = _after(_L31, line="0.33", first="0.33.0", mirrors="0.33.0", gdn_prefill_checkpoints=True, pads_uneven_pages=True,
              v2_runner_v1_methods=("suffix",),
              batch_tiers=TIERS_160_GB10, nvml_total_on_integrated=True,
              auto_fit_log_device=True,
              enable_disable_switches=True)

RELEASES = tuple(_line(**rules) for rules in (_L10, _L11, _L12, _L14, _L18, _L20, _L26, _L27, _L28, _L29, _L31, _L33))
DEFAULT = RELEASES[-1]
# the release lines, oldest first, as users name them and `release` takes them ("0.18-0.19")
LINES = tuple(r.line for r in RELEASES)

# Rules that changed inside a line, at the release given (the first studied release that shows it; the patch
# releases before it were not read): (release, field, value, source).
PATCHES = (
    ("0.10.1", "max_num_seqs_capped_at_batched_tokens", True, "engine/arg_utils.py _set_default_args_v1 (0.10.1.1)"),
    ("0.10.0", "max_num_seqs_capped_at_batched_tokens", False, "engine/arg_utils.py _set_default_args_v1 (0.10.0)"),
    ("0.10.0", "chunked_local_hybrid", True, "envs.py: VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE added in 0.10.1"),
    ("0.10.1", "chunked_local_hybrid", False, "envs.py VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE default 0"),
    ("0.10.0", "kv_cache_memory_option", False, "config/cache.py CacheConfig.kv_cache_memory_bytes (added in 0.10.2)"),
    ("0.10.2", "kv_cache_memory_option", True, "config/cache.py CacheConfig.kv_cache_memory_bytes"),
    ("0.11.2", "batched_tokens_capped_at_seqs_x_len", True, "engine/arg_utils.py get_batch_defaults (0.11.2)"),
    ("0.17.0", "sampler", SAMPLER_TRITON, "v1/sample/ops/topk_topp_triton.py (in 0.17.1, not in 0.16.0)"),
    ("0.14.0", "sampler", SAMPLER_SORT, "v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p"),
    ("0.21.0", "sampler", SAMPLER_FLASHINFER, "envs.py VLLM_USE_FLASHINFER_SAMPLER default True (0.21.0)"),
    ("0.20.0", "sampler", SAMPLER_TRITON, "envs.py VLLM_USE_FLASHINFER_SAMPLER default None (0.20.2)"),
    ("0.22.0", "not_fit_possessive", "model's", "v1/core/kv_cache_utils.py _check_enough_kv_cache_memory (0.22.1)"),
    ("0.17.0", "auto_fit", AUTO_FIT_PER_WORKER, "v1/core/kv_cache_utils.py get_kv_cache_configs: auto-fit on each "
     "worker's projected groups (0.17.1; 0.16.0 fits the global groups)"),
    ("0.32.0", "auto_fit_log_device", True, "v1/core/kv_cache_utils.py _auto_fit_max_model_len (0.32.0; 0.31.0 the "
     "older wording)"),
    ("0.15.0", "mla_block_sm10x", 64, "platforms/cuda.py: FLASHINFER_MLA first on SM10x for qk_nope_head_dim 128 (0.15.1)"),
)

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.?(?:post|rc|dev|a|b)[0-9a-z.+]*|\+[0-9a-z.]+)*",
                      re.IGNORECASE)


def parse(version: str) -> tuple[int, int, int] | None:
    """'0.19', '0.19.5', 'v0.11.0rc2', '0.10.1.1', '0.15.2rc1.dev93+g11a4c9d30' -> (major, minor, patch); None when
    it is not a version."""
    m = _VERSION.fullmatch(str(version).strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


@functools.lru_cache(maxsize=512)  # a check of a folder asks for the same few versions thousands of times
def _order(version: str) -> tuple[int, int, int, int] | None:
    """'0.10.1.1' -> (0, 10, 1, 1): the four-part order vLLM's releases sort in (pre-releases as their release);
    None for text that is no version."""
    m = _VERSION.fullmatch(str(version).strip())
    return tuple(int(m.group(i) or 0) for i in (1, 2, 3, 4)) if m else None  # type: ignore[return-value]


HISTORY = History(_order)  # the registry's order of releases (engines/changes.py)
sort_key, at_least = HISTORY.key, HISTORY.at_least


# between patches of one field, the one of the highest release <= version wins
_PATCHES = sorted(PATCHES, key=lambda p: sort_key(p[0]))
OLDEST, NEWEST = RELEASES[0], RELEASES[-1]


@functools.lru_cache(maxsize=256)  # a Release is frozen: one per version string serves every caller
def release(version: str | None, *, where: str = "--engine-version") -> Release:
    """The rules for a vLLM release as a user names it; None -> DEFAULT (the newest line). InputError for what is
    not a version; UnsupportedError (exit 3) for releases before 0.10 or after the newest line."""
    if version is None:
        return DEFAULT
    text = str(version).strip()
    named = next((r for r in RELEASES if r.line == text and parse(text) is None), None)
    if named is not None:  # a line's own name ("0.18-0.19"): the release read for it
        return named
    if parse(text) is None:
        raise policy.not_a_version("vLLM", text, where=where, hint="e.g. 0.19.1, 0.11.0rc2 or 0.10.1.1")
    key = sort_key(text)
    if key < OLDEST.first_key:
        raise policy.not_read(
            f"vLLM {text} is older than 0.10, which kvplan does not model: 0.6-0.7 run the V0 engine (a profile of one "
            "batch of the whole max_model_len when chunked prefill is off, CPU swap blocks) and 0.8-0.9 the first V1 "
            "releases (a budget of absolute peaks, V0 fallbacks)", where=where,
            hint=f"judge it as {OLDEST.first} or newer ({policy.pinned(where, OLDEST.first)})")
    if key[:2] > NEWEST.first_key[:2]:
        raise policy.outside("vLLM", text, newer=True, edge=NEWEST.line, unit="line", where=where,
                             hint=f"judge it by {NEWEST.line}'s rules ({policy.pinned(where, NEWEST.mirrors)})")
    line = [r for r in RELEASES if r.first_key <= key][-1]
    changes: dict[str, Any] = {}
    for at, name, value, _source in _PATCHES:
        if line.first_key <= sort_key(at) <= key:
            changes[name] = value
    return dataclasses.replace(line, version=_canonical(text), **changes)


def _canonical(version: str) -> str:
    """'v0.19' -> '0.19.0', '0.11.0rc2' -> '0.11.0rc2' (the release as vLLM spells it, without a leading v)."""
    text = version.strip().lstrip("vV")
    return text if text.count(".") >= 2 else text + ".0"


def closest(version: str | None) -> tuple[Release, str | None]:
    """The rules a logged version is compared with, and a note when kvplan had to choose: a log that names no
    version or an unreadable one gets the oldest line; one older than 0.10 the oldest line, one newer than the
    newest line the newest (calibrate compares any log)."""
    if not version:
        return OLDEST, f"the log does not say its vLLM version; {OLDEST.line} rules applied"
    if parse(version) is None:
        return OLDEST, f"vLLM version {version!r} not understood; {OLDEST.line} rules applied"
    key = sort_key(version)
    if key < OLDEST.first_key:
        return OLDEST, f"kvplan models vLLM 0.10 and later; this {version} log is compared with the {OLDEST.line} rules"
    if key[:2] > NEWEST.first_key[:2]:
        return release(NEWEST.mirrors), f"this {version} log is newer than {NEWEST.line}; compared with its rules"
    return release(version), None


# The launch options' rules (speculative decoding, LoRA, offload, connectors, parallelism, layout options) per release
# are in option_rules.py, stated the same way.
