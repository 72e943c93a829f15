"""TensorRT-LLM's memory budget for the KV pool, for both backends, modelled term by term. Pure: bytes out.

PyTorch backend (1.x default; docs/engines/trtllm.md T5-T6). After the weights load, a warm-up with a
temporary pool, then

    kv_budget = (total - peak + temporary pool) x free_gpu_memory_fraction
    peak      = weights (inside torch, with load buffers) + activations of the warm-up (inside torch)
                + memory outside torch (CUDA context, cuBLAS, NCCL, CUDA graphs, the temporary pool itself,
                  and anything else on the GPU: it is read as device used - torch allocated)

TensorRT-engine backend (trtllm-build engines, C++ executor, Triton; research E1-E3). No profiling run: the
engine's buffers are allocated first and the pool gets

    pool = fraction x (free memory when the KV cache manager is created)
    free = total - CUDA context - engine (weights) - execution context (activations, fixed at build time)
           - runtime buffers and decoder (sized by max_batch_size x vocabulary) - NCCL / all-reduce at TP >= 2
           - whatever else is in use

The measured terms below come from the real logs of tests/data/trtllm_logs, each listed with the figures it
prints; `constants(exclude=...)` refits them without some sources (benchmarks/sglang_trtllm_error.py scores each
log with constants that never saw it). The CUDA context and the NCCL buffers at init are the ones measured on
SGLang's logs (kvplan/engines/sglang/budget.py): the same driver and NCCL at work, outside either engine.
"""

from __future__ import annotations

import struct
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from statistics import mean

from kvplan.engines.runtime import startup

GIB = 2**30
MIB = 2**20


@dataclass(frozen=True)
class PytorchProfile:
    """What one PyTorch-backend log prints of its profiling run ("Memory used ... in memory usage profiling")."""

    log: str
    source: str
    tp: int
    weights_printed_gib: Fraction  # "Use X GB for model weights" / "Rank 0 uses X GB for model weights"
    weights_in_torch_gib: Fraction  # "Memory used after loading model weights (inside torch)"
    non_torch_gib: Fraction  # "Memory used outside torch (e.g., NCCL and CUDA graphs)" minus the temporary pool
    activation_gib: Fraction  # "Memory dynamically allocated during inference (inside torch)"
    activation_ratio: Fraction  # that over kvplan's forward model of the warm-up


PYTORCH_PROFILES = (
    # 0.20.0, H100 80GB, Llama-3.1-8B-Instruct-FP8, max_num_tokens 8192: outside torch 2.17 GiB with the 0.56 GiB
    # temporary pool; 1.05 GiB dynamic against kvplan's 0.7813 GiB forward model (tests recompute every ratio)
    PytorchProfile("waynehacking8-llama31-8b-fp8-h100-tp1-kv090-v0.20", "waynehacking8/trtllm-triton-serving", 1,
                   Fraction("8.46"), Fraction("8.55"), Fraction("2.17") - Fraction("0.56"), Fraction("1.05"),
                   Fraction("1.344")),
    PytorchProfile("waynehacking8-llama31-8b-fp8-h100-tp1-kv095-oom-v0.20", "waynehacking8/trtllm-triton-serving", 1,
                   Fraction("8.46"), Fraction("8.55"), Fraction("2.26") - Fraction("0.56"), Fraction("1.05"),
                   Fraction("1.344")),
    # TP 2 on two H100s, max_num_tokens 4608 (crashed after profiling: no final pool, the profile stands)
    PytorchProfile("waynehacking8-llama31-8b-fp8-h100-tp2-kv080-crash-v0.20", "waynehacking8/trtllm-triton-serving", 2,
                   Fraction("4.23"), Fraction("4.32"), Fraction("2.89") - Fraction("0.16"), Fraction("0.39"),
                   Fraction("1.530")),
    # 1.1.0, a 47.37 GiB GPU, TinyLlama-1.1B, max_num_tokens 8192: outside torch 2.51 with the 1.38 GiB pool
    PytorchProfile("sro-sa-tinyllama-1.1b-48gb-pytorch-v1.1.0", "SRO-SA/trtllm-qwen-benchmark", 1, Fraction("2.05"),
                   Fraction("2.23"), Fraction("2.51") - Fraction("1.38"), Fraction("0.39"), Fraction("1.217")),
)


@dataclass(frozen=True)
class EngineBuffers:
    """One engine-backend log's runtime buffers + decoder at its build's max_batch_size and vocabulary: printed
    ("[MemUsageChange] Allocated X GB GPU memory for runtime buffers / for decoder"; MemoryCounters::bytesToString
    uses binary units, "GB" = GiB), or implied by a log that prints only its total and available memory."""

    log: str
    source: str
    batch_x_vocab: int
    buffers_gib: Fraction
    implied: bool = False


ENGINE_BUFFERS = (
    # 0.16.0, Llama-3.1-70B FP8, max_batch_size 2048, vocabulary 128,256: 1.63 GB runtime + 3.30 GB decoder
    EngineBuffers("shaamil101-llama31-70b-fp8-8xh100-tp8-engine-v0.16", "shaamil101-etched/trtllm-benchmarks",
                  2048 * 128256, Fraction("1.63") + Fraction("3.30")),
    # 0.19.0, RTX 5090, Llama-3.1-8B FP8, max_batch_size 2048: total 31.84 - available 17.83 = 14.01 GiB in use, less
    # kvplan's CUDA context (0.459 GiB, SGLang's logs), weights (8.490 GiB) and execution context (0.098 GiB for
    # max_num_tokens 1024): 4.963 GiB (benchmarks/sglang_trtllm_error.py implied_buffers; tests recompute it)
    EngineBuffers("trtllm-4275-llama31-8b-fp8-rtx5090-engine-v0.19", "NVIDIA/TensorRT-LLM#4275", 2048 * 128256,
                  Fraction("4.963"), implied=True),
)
@dataclass(frozen=True)
class EngineContext:
    """One engine-backend log's execution context ("[MemUsageChange] Allocated X MiB for execution context memory":
    TensorRT's activation memory, planned at build time) beside kvplan's forward model of its build's max_num_tokens
    (engine._execution_context; tests recompute it)."""

    log: str
    source: str
    max_num_tokens: int
    printed_mib: Fraction
    modelled_bytes: int

    @property
    def ratio(self) -> Fraction:
        return self.printed_mib * MIB / self.modelled_bytes


ENGINE_CONTEXTS = (
    # 0.16.0, Llama-3.1-70B FP8 at TP 8, max_num_tokens 8192: 1013.01 MiB printed, 424.02 MiB modelled (2.39x). The
    # 0.12.0.dev documentation run (928.77 MiB) is set aside with its pool: its figures belong to another model
    EngineContext("shaamil101-llama31-70b-fp8-8xh100-tp8-engine-v0.16", "shaamil101-etched/trtllm-benchmarks", 8192,
                  Fraction("1013.01"), 444_612_608),
)


def context_ratio_high(exclude: frozenset[str] | None = None) -> Fraction:
    """The largest printed / modelled execution context among the engine logs whose source is not excluded (default:
    the current fold's), at least 1: the band's low edge scales a modelled execution context by it, since the
    forward model is all kvplan has for TensorRT's activation plan (never below the model itself)."""
    fold = frozenset(_FOLD.get() if exclude is None else exclude)
    return max([Fraction(1)] + [c.ratio for c in ENGINE_CONTEXTS if c.source not in fold])


# When no log is left to measure a term: three float32 [max_batch_size, vocab] tensors (the runtime's logits, the
# decoder's logits and its sampling workspace; trtGptModelInflightBatching.cpp createBuffers/createDecoder)
PRIOR_BUFFER_BYTES_PER_ELEMENT = Fraction(12)
PRIOR_NON_TORCH = GIB  # the assumption kvplan had before any TensorRT-LLM log was read
PRIOR_ACTIVATION_RATIO = Fraction(1)


@dataclass(frozen=True)
class Constants:
    non_torch_one_gpu: int  # PyTorch backend, outside torch at the profile's peak, without the temporary pool
    nccl_extra: int  # PyTorch backend at TP >= 2, on top of it
    load_extra: int  # inside torch after loading, beyond the weights the log prints
    activation_ratio: Fraction  # the warm-up's dynamic memory over kvplan's forward model
    buffer_bytes_per_element: Fraction  # engine backend: runtime + decoder bytes per max_batch_size x vocab
    fitted_on: tuple[str, ...]


def _by_source(rows, value) -> list:
    """One value per source (the mean of its logs), so a source with three logs weighs as one."""
    groups: dict[str, list] = {}
    for row in rows:
        groups.setdefault(row.source, []).append(value(row))
    return [mean(v) for v in groups.values()]


# the sources left out of every fit while a leave-one-source-out fold runs (`leaving_out`)
_FOLD: ContextVar[frozenset[str]] = ContextVar("trtllm_fold", default=frozenset())


@contextmanager
def leaving_out(sources):
    """Within the block the constants are fitted without these sources' logs (and SGLang's, whose CUDA context
    and NCCL figures TensorRT-LLM shares, likewise): the benchmark's folds."""
    token = _FOLD.set(frozenset(sources))
    try:
        with startup.leaving_out(sources):
            yield
    finally:
        _FOLD.reset(token)


def constants(exclude: frozenset[str] | None = None) -> Constants:
    """The measured terms fitted on the logs whose source is not in `exclude` (default: the current fold's)."""
    return _constants(frozenset(_FOLD.get() if exclude is None else exclude))


@lru_cache(maxsize=None)
def _constants(exclude: frozenset[str]) -> Constants:
    one = [r for r in PYTORCH_PROFILES if r.source not in exclude and r.tp == 1]
    multi = [r for r in PYTORCH_PROFILES if r.source not in exclude and r.tp > 1]
    every = one + multi
    non_torch = _by_source(one, lambda r: r.non_torch_gib)
    nt_one = int(mean(non_torch) * GIB) if non_torch else PRIOR_NON_TORCH
    # TP >= 2: the extra over the same source's one-GPU runs (NCCL communicators and all-reduce buffers)
    extras = []
    for r in multi:
        base = [x.non_torch_gib for x in one if x.source == r.source]
        if base:
            extras.append(r.non_torch_gib - mean(base))
    nccl = int(mean(extras) * GIB) if extras else startup.constants().dist_init_nvlink
    loads = _by_source(every, lambda r: r.weights_in_torch_gib - r.weights_printed_gib)
    ratios = _by_source(every, lambda r: r.activation_ratio)
    buffers = [Fraction(int(b.buffers_gib * GIB), b.batch_x_vocab) for b in ENGINE_BUFFERS if b.source not in exclude]
    used = tuple(r.log for r in every) + tuple(b.log for b in ENGINE_BUFFERS if b.source not in exclude)
    return Constants(non_torch_one_gpu=nt_one, nccl_extra=nccl, load_extra=int(mean(loads) * GIB) if loads else 0,
                     activation_ratio=Fraction(mean(ratios)).limit_denominator(1000) if ratios else PRIOR_ACTIVATION_RATIO,
                     buffer_bytes_per_element=Fraction(mean(buffers)).limit_denominator(1000) if buffers
                     else PRIOR_BUFFER_BYTES_PER_ELEMENT, fitted_on=used)


def float32(fraction: Fraction) -> float:
    """free_gpu_memory_fraction as TensorRT-LLM holds it: a C++ float (0.9 -> 0.8999999761581421, as its logs
    print it), in both backends' arithmetic."""
    return struct.unpack("f", struct.pack("f", float(fraction)))[0]


# ------------------------------------------------------------------------------------------ PyTorch backend
def pool_tokens(total: int, *, weights: int, peak: int, non_torch: int, temp_blocks: int, bytes_per_token: int,
                estimator_bytes_per_token: int, tokens_per_block: int, fraction: Fraction) -> tuple[int, int, int]:
    """(temporary pool bytes, kv_budget, max_tokens) of T5-T6, in TensorRT-LLM's float arithmetic.

    The warm-up pool is capped at fraction x free-after-load / bytes per token; kv_budget =
    int((total - peak_total + temporary pool) x fraction) with peak_total = weights + activations + non-torch +
    the temporary pool; the estimate kv_budget // T3 bytes is capped by fraction x (memory free when the manager
    is built: total - weights - non-torch) // T2 bytes."""
    f = float32(fraction)
    free_after_load = total - weights - non_torch
    temp_blocks = min(temp_blocks, int(f * free_after_load / bytes_per_token) // tokens_per_block)
    temp = max(temp_blocks, 0) * tokens_per_block * bytes_per_token
    peak_total = weights + peak + non_torch + temp
    budget_b = int((total - peak_total + temp) * f)
    est_tokens = budget_b // estimator_bytes_per_token if budget_b > 0 else 0
    cap = int(f * free_after_load / bytes_per_token)
    return temp, budget_b, max(min(est_tokens, cap), 0)


# ------------------------------------------------------------------------------------------- engine backend
@dataclass(frozen=True)
class EngineBudget:
    """One GPU of a TensorRT-engine deployment, each term as the C++ runtime allocates it before the pool."""

    total_bytes: int
    context_bytes: int  # CUDA context (measured on SGLang's logs)
    weights_bytes: int  # "Loaded engine size"
    activation_bytes: int  # "Allocated X MiB for execution context memory" (given, or modelled)
    buffers_bytes: int  # runtime buffers + decoder
    nccl_bytes: int  # TP >= 2
    in_use_bytes: int
    free_bytes: int  # "Memory usage when calculating max tokens in paged kv cache: ... available"
    fraction: Fraction
    pool_bytes: int  # uint64(free x fraction)


def engine_budget(total: int, *, weights: int, activation: int, batch_x_vocab: int, tp: int, architecture: str | None,
                  link: str | None, fraction: Fraction, in_use: int = 0, fit: Constants | None = None,
                  context: int | None = None) -> EngineBudget:
    fit = fit or constants()
    sg = startup.constants()
    if context is None:
        context = sg.context_by_arch.get(architecture or "", sg.context_other)
    nccl = 0 if tp == 1 else (sg.dist_init_pcie if link == "pcie" else sg.dist_init_nvlink)
    buffers = int(fit.buffer_bytes_per_element * batch_x_vocab)
    free = total - context - weights - activation - buffers - nccl - in_use
    # calculateFreeMemBytes: uint64(finalFree x fraction), the fraction a C++ float
    pool = int(max(free, 0) * float32(fraction))
    return EngineBudget(total_bytes=total, context_bytes=context, weights_bytes=weights, activation_bytes=activation,
                        buffers_bytes=buffers, nccl_bytes=nccl, in_use_bytes=in_use, free_bytes=free, fraction=fraction,
                        pool_bytes=pool)


# --------------------------------------------------------------------------------------------- the bands
# The band is twice the largest out-of-sample error of the budget's terms: each term rests on one to three
# sources, so the error seen on the others is a floor for the next log's, not a bound (a choice, not a fit;
# benchmarks/sglang_trtllm_error.py measures how many runs the band covers).
BAND_FACTOR = 2


def pytorch_term_errors(exclude: frozenset[str] | None = None) -> tuple[tuple[str, int, int], ...]:
    """(log, tp, bytes) per PyTorch-backend profile: the sum of its non-torch, load and activation errors, each
    modelled with constants fitted without its own source (and the current fold's)."""
    base = frozenset(_FOLD.get() if exclude is None else exclude)
    out = []
    for r in PYTORCH_PROFILES:
        if r.source in base:
            continue
        fit = constants(base | {r.source})
        nt = fit.non_torch_one_gpu + (fit.nccl_extra if r.tp > 1 else 0)
        err = abs(nt - r.non_torch_gib * GIB) + abs(fit.load_extra - (r.weights_in_torch_gib - r.weights_printed_gib) * GIB)
        err += abs(fit.activation_ratio - r.activation_ratio) / r.activation_ratio * r.activation_gib * GIB
        out.append((r.log, r.tp, int(err)))
    return tuple(out)


def pytorch_band_bytes(fraction: Fraction, tp: int) -> int:
    """Half the band of a PyTorch-backend budget: BAND_FACTOR x the fraction x the largest term error among the
    profiles of the same layout (one GPU or TP; all of them where none is of that layout)."""
    errors = pytorch_term_errors()
    same = [e for _, t, e in errors if (t > 1) == (tp > 1)] or [e for _, _, e in errors]
    return int(BAND_FACTOR * float32(fraction) * max(same, default=0))


def engine_band_bytes(b: EngineBudget, tp: int, link: str | None) -> int:
    """Half the band of an engine-backend pool: BAND_FACTOR x the fraction x (the CUDA context and NCCL errors of
    SGLang's free-memory readings in the same layout + the buffer coefficient's out-of-sample error x
    max_batch_size x vocab)."""
    fold = _FOLD.get()
    errors = startup.free_before_errors()
    group = startup.link_group(tp, link)
    same = [abs(e) for _, g, e in errors if g == group] or [abs(e) for _, _, e in errors]
    coef = []
    for row in ENGINE_BUFFERS:
        if row.source in fold:
            continue
        fit = constants(fold | {row.source})
        coef.append(abs(fit.buffer_bytes_per_element - Fraction(int(row.buffers_gib * GIB), row.batch_x_vocab)))
    per_element = max(coef, default=Fraction(0))
    batch_x_vocab = int(b.buffers_bytes / constants().buffer_bytes_per_element) if b.buffers_bytes else 0
    err = max(same, default=0) + per_element * batch_x_vocab
    return int(BAND_FACTOR * float32(b.fraction) * err)
