"""What a CUDA process holds before an engine loads its weights: the CUDA context, by GPU architecture, and what the
distributed init (NCCL communicators, the custom all-reduce) takes at TP >= 2, by interconnect. Engine-neutral
runtime physics: measured on SGLang's public start-up logs, the only engine that prints both readings, and shared by
SGLang's budget (engines/sglang/budget.py) and TensorRT-LLM's (engines/trtllm/budget.py). Pure: integers of bytes.

SGLang's "Load weight begin. avail mem=P GB" after "Init torch distributed ends. mem usage=X GB" gives, on a GPU of
known capacity, CUDA context = capacity - P - X and distributed init = X. `constants(exclude=...)` refits them
without some logs (`leaving_out` for a block), which is how benchmarks/sglang_trtllm_error.py scores each log with
constants that never saw it.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from kvplan.model.catalog import find_gpu

GIB = 2**30
MIB = 2**20


@dataclass(frozen=True, eq=False, repr=False)
class FreeBeforeLoad:
    """One log's "Load weight begin. avail mem=P GB" (the minimum over ranks) and what it says of the
    distributed init, on a catalog GPU."""

    log: str  # tests/data/sglang_logs id
    source: str  # where it was published: the unit left out together
    gpu: str  # catalog name
    gpu_inferred: bool  # the log does not name the GPU; its memory figures fit this one only
    tp: int
    link: str | None  # "pcie", "nvlink" or None (not stated)
    free_before_gib: Fraction  # P, 2 decimals as printed
    dist_init_gib: Fraction | None  # "Init torch distributed ends. mem usage=X GB" of the same rank; None: not logged


OBSERVATIONS = (
    # L4 x4 on AWS g6.12xlarge; "Custom allreduce is disabled because it's not supported on more than two
    # PCIe-only GPUs": NCCL alone, 0.13 GiB
    FreeBeforeLoad("didier-durand-qwq32b-4xL4-tp4-v0.4.3", "didier-durand/llms-in-clouds", "l4-24gb", False, 4,
                   "pcie", Fraction("21.63"), Fraction("0.13")),
    # 8 ranks, 137.29-137.52 GiB free after 1.77-2.01 GiB of distributed init: an H200's 139.80 GiB
    FreeBeforeLoad("sglang-pr11716-8gpu-141gb-tp8-init", "sgl-project/sglang#11716", "h200-141gb", True, 8,
                   "nvlink", Fraction("137.29"), Fraction("2.01")),
    # one GPU: P = A + mem usage = 131.08 + 8.13; an H200 (8.13 GiB of gemma-3-4b weights leave 131.08)
    FreeBeforeLoad("sglang-pr4826-gemma3-multimodal-141gb-tp1-v0.4.4", "sgl-project/sglang#4826", "h200-141gb", True,
                   1, None, Fraction("139.21"), Fraction(0)),
    # 2x RTX 3090 (a patched 0.5.12): 22.91 / 23.06 GiB free on TP0 / TP1; the distributed init is not in the
    # excerpt, so these score the model and fit nothing
    FreeBeforeLoad("mattbucci-3090-devstral24b-awq-fp8kv-tp2-v0.5.12", "mattbucci/2x-3090-GA102-300-A1-sglang-inference",
                   "rtx-3090-24gb", False, 2, "pcie", Fraction("22.91"), None),
    FreeBeforeLoad("mattbucci-3090-gemma4-31b-awq-swa-tp2-v0.5.12", "mattbucci/2x-3090-GA102-300-A1-sglang-inference",
                   "rtx-3090-24gb", False, 2, "pcie", Fraction("22.91"), None),
    FreeBeforeLoad("mattbucci-3090-gemma4-26b-moe-awq-swa-tp2-v0.5.12", "mattbucci/2x-3090-GA102-300-A1-sglang-inference",
                   "rtx-3090-24gb", False, 2, "pcie", Fraction("22.91"), None),
)


def _mean(values: list[int]) -> Fraction:
    """The exact mean of byte counts, as statistics.mean computes it (rounded to the same int by round()) without
    importing statistics (about 0.6 ms of start-up)."""
    return Fraction(sum(values), len(values))


@dataclass(frozen=True, eq=False, repr=False)
class StartupConstants:
    """The measured terms: CUDA context by GPU architecture (and the mean of all, for other architectures), the
    distributed init by interconnect at TP >= 2."""

    context_by_arch: dict[str, int]
    context_other: int
    dist_init_pcie: int
    dist_init_nvlink: int
    fitted_on: tuple[str, ...]


# When no log is left to measure a term (a fold of the leave-one-source-out benchmark): the CUDA context of
# SGLang's own worked example (docs/engines/sglang.md: 0.38 GiB on an H100), NCCL's ring buffers alone on PCIe,
# and on NVLink the communicators vLLM finds at its init snapshot on H100 at TP 2-4 (1.48-1.53 GiB with them,
# 0.51 without: kvplan/engines/vllm/budget.py CUDA_CONTEXT_MULTI_GPU - CUDA_CONTEXT_ONE_GPU).
PRIOR_CONTEXT = 389 * MIB
PRIOR_DIST_PCIE = 128 * MIB
PRIOR_DIST_NVLINK = 1024 * MIB


# the sources left out of every fit while a leave-one-source-out fold runs (`leaving_out`); empty otherwise
_LEFT_OUT: ContextVar[frozenset[str]] = ContextVar("startup_left_out", default=frozenset())


@contextmanager
def leaving_out(sources):
    """Within the block the engine's constants and bands are fitted without these sources' logs (the
    benchmark's folds: a constant fitted on a log never scores it)."""
    token = _LEFT_OUT.set(frozenset(sources))
    try:
        yield
    finally:
        _LEFT_OUT.reset(token)


def constants(exclude: frozenset[str] | None = None) -> StartupConstants:
    """The measured terms fitted on OBSERVATIONS whose source is not in `exclude` (default: none, or the sources
    of the current `leaving_out` fold)."""
    return _constants(frozenset(_LEFT_OUT.get() if exclude is None else exclude))


@lru_cache(maxsize=None)
def _constants(exclude: frozenset[str]) -> StartupConstants:
    contexts: dict[str, list[int]] = {}
    pcie: list[int] = []
    nvlink: list[int] = []
    used: list[str] = []
    for obs in OBSERVATIONS:
        if obs.source in exclude or obs.dist_init_gib is None:
            continue
        gpu = find_gpu(obs.gpu)
        dist = int(obs.dist_init_gib * GIB)
        context = gpu.runtime_capacity() - int(obs.free_before_gib * GIB) - dist
        contexts.setdefault(gpu.architecture, []).append(context)
        if obs.tp > 1:
            (pcie if obs.link == "pcie" else nvlink).append(dist)
        used.append(obs.log)
    by_arch = {arch: round(_mean(v)) for arch, v in contexts.items()}
    every = [c for v in contexts.values() for c in v]
    return StartupConstants(context_by_arch=by_arch, context_other=round(_mean(every)) if every else PRIOR_CONTEXT,
                     dist_init_pcie=round(_mean(pcie)) if pcie else PRIOR_DIST_PCIE,
                     dist_init_nvlink=round(_mean(nvlink)) if nvlink else PRIOR_DIST_NVLINK,
                     fitted_on=tuple(used))


def link_class(interconnect: str | None) -> str | None:
    """The catalog's interconnect fact as SGLang's communicators see it: "pcie", "nvlink", or None (unknown)."""
    if not interconnect:
        return None
    text = str(interconnect).lower()
    if "pcie" in text and "nvlink" not in text:
        return "pcie"
    return "nvlink"


def link_group(tp: int, link: str | None) -> str:
    return "one" if tp == 1 else ("pcie" if link == "pcie" else "nvlink")


def free_before_errors(exclude: frozenset[str] | None = None) -> tuple[tuple[str, str, int], ...]:
    return _free_before_errors(frozenset(_LEFT_OUT.get() if exclude is None else exclude))


@lru_cache(maxsize=None)
def _free_before_errors(exclude: frozenset[str]) -> tuple[tuple[str, str, int], ...]:
    """(log, group, modelled P - logged P in bytes) for every observation, each modelled with constants fitted
    without its own source (leave-one-source-out) and without the sources in `exclude`; group: "one" GPU, or
    TP over "pcie" / "nvlink" (unknown links count as NVLink, as in `startup_bytes`)."""
    out = []
    for obs in OBSERVATIONS:
        if obs.source in exclude:
            continue
        fit = constants(exclude | {obs.source})
        gpu = find_gpu(obs.gpu)
        context, dist = startup_bytes(fit, tp=obs.tp, pp=1, architecture=gpu.architecture, link=obs.link)
        free_before = gpu.runtime_capacity() - context - dist
        out.append((obs.log, link_group(obs.tp, obs.link), free_before - int(obs.free_before_gib * GIB)))
    return tuple(out)


def startup_bytes(fit: StartupConstants, *, tp: int, pp: int, architecture: str | None,
                  link: str | None) -> tuple[int, int]:
    """(CUDA context, distributed init) on one GPU: the context of its architecture (the mean of all for another),
    the init at TP x PP >= 2 by link (unknown: the NVLink figure, the larger one: a smaller pool, never a wrong
    "fits"), 0 on one GPU."""
    context = fit.context_by_arch.get(architecture or "", fit.context_other)
    dist = 0
    if tp * pp > 1:
        dist = fit.dist_init_pcie if link == "pcie" else fit.dist_init_nvlink
    return context, dist
