"""SGLang's memory budget for the token pool, modelled term by term. Pure: integers of bytes out.

SGLang (every release, R3 of docs/research/sglang-releases.md) measures two free-memory readings with
`get_available_gpu_memory` (free bytes / 2**30, after empty_cache, the minimum over the ranks):

    P = free when init_torch_distributed ends       "Load weight begin. avail mem=P GB"
      = total - CUDA context - what NCCL and the custom all-reduce took ("Init torch distributed ends.
        mem usage=X GB") - whatever other processes hold (a desktop's display, WSL2, a second server)
    A = free after load_model                        "Load weight end. ..., avail mem=A GB, mem usage=P-A GB"
    rest = A - P x (1 - mem_fraction_static)         (GiB floats; the token pool's bytes = int(rest x 2**30))

CUDA graphs are captured after the pool is allocated, out of P x (1 - mem_fraction_static) (R6): they are not
a term of the pool. kvplan models P from the GPU and the parallel layout and A as P minus the weights.

The two measured terms (CUDA context, distributed init) are constants measured on the real SGLang logs of
tests/data/sglang_logs, listed below with the figures each log prints; `constants(exclude=...)` refits them
without some logs, which is how benchmarks/sglang_trtllm_error.py scores each log with constants that never saw
it. Everything else (the default mem_fraction_static, the reserve formulas, chunked prefill and CUDA-graph
sizes) is read from SGLang's source per release (releases.py).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from statistics import mean

from kvplan.engines.sglang.releases import Release

GIB = 2**30
MIB = 2**20


# ----------------------------------------------------------------------------- measured on the public logs
@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Constants:
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
_LEFT_OUT: ContextVar[frozenset[str]] = ContextVar("sglang_left_out", default=frozenset())


@contextmanager
def leaving_out(sources):
    """Within the block the engine's constants and bands are fitted without these sources' logs (the
    benchmark's folds: a constant fitted on a log never scores it)."""
    token = _LEFT_OUT.set(frozenset(sources))
    try:
        yield
    finally:
        _LEFT_OUT.reset(token)


def constants(exclude: frozenset[str] | None = None) -> Constants:
    """The measured terms fitted on OBSERVATIONS whose source is not in `exclude` (default: none, or the sources
    of the current `leaving_out` fold)."""
    return _constants(frozenset(_LEFT_OUT.get() if exclude is None else exclude))


@lru_cache(maxsize=None)
def _constants(exclude: frozenset[str]) -> Constants:
    from kvplan.model.catalog import find_gpu

    contexts: dict[str, list[int]] = {}
    pcie, nvlink, used = [], [], []
    for obs in OBSERVATIONS:
        if obs.source in exclude or obs.dist_init_gib is None:
            continue
        gpu = find_gpu(obs.gpu)
        dist = int(obs.dist_init_gib * GIB)
        context = gpu.capacity_bytes - int(obs.free_before_gib * GIB) - dist
        contexts.setdefault(gpu.architecture, []).append(context)
        if obs.tp > 1:
            (pcie if obs.link == "pcie" else nvlink).append(dist)
        used.append(obs.log)
    by_arch = {arch: round(mean(v)) for arch, v in contexts.items()}
    every = [c for v in contexts.values() for c in v]
    return Constants(context_by_arch=by_arch, context_other=round(mean(every)) if every else PRIOR_CONTEXT,
                     dist_init_pcie=round(mean(pcie)) if pcie else PRIOR_DIST_PCIE,
                     dist_init_nvlink=round(mean(nvlink)) if nvlink else PRIOR_DIST_NVLINK,
                     fitted_on=tuple(used))


def link_class(interconnect: str | None) -> str | None:
    """The catalog's interconnect fact as SGLang's communicators see it: "pcie", "nvlink", or None (unknown)."""
    if not interconnect:
        return None
    text = str(interconnect).lower()
    if "pcie" in text and "nvlink" not in text:
        return "pcie"
    return "nvlink"


# ----------------------------------------------------------------------------------------- the budget
@dataclass(frozen=True)
class SglangBudget:
    """One GPU's readings as SGLang takes them, modelled."""

    total_bytes: int
    context_bytes: int  # CUDA context (measured constant)
    dist_init_bytes: int  # NCCL + custom all-reduce at init (measured constant; 0 on one GPU)
    in_use_bytes: int  # taken before start: --gpu-reserved and the site profile
    free_before_load_bytes: int  # P
    weights_bytes: int
    free_after_load_bytes: int  # A
    mem_fraction_static: Fraction
    rest_bytes: int  # int((A - P x (1 - mfs)) x 2**30), SGLang's float steps


def budget(total: int, *, weights: int, mfs: Fraction, tp: int, pp: int, architecture: str | None, link: str | None,
           in_use: int = 0, non_torch: int | None = None, fit: Constants | None = None) -> SglangBudget:
    """P, A and the rest for one GPU. `non_torch` (a site profile's measurement) replaces context + init."""
    fit = fit or constants()
    context = fit.context_by_arch.get(architecture or "", fit.context_other)
    dist = 0
    if tp * pp > 1:
        # unknown interconnect: the NVLink figure, the larger one (a smaller pool, never a wrong "fits")
        dist = fit.dist_init_pcie if link == "pcie" else fit.dist_init_nvlink
    if non_torch is not None:
        context, dist = non_torch, 0
    P = total - context - dist - in_use
    A = P - weights
    # SGLang computes in GiB floats (model_runner.py profile_max_num_token): rest = A - P x (1 - mfs)
    rest_gib = A / GIB - P / GIB * (1 - float(mfs))
    return SglangBudget(total_bytes=total, context_bytes=context, dist_init_bytes=dist, in_use_bytes=in_use,
                        free_before_load_bytes=P, weights_bytes=weights, free_after_load_bytes=A,
                        mem_fraction_static=mfs, rest_bytes=int(rest_gib * GIB))


# --------------------------------------------------------------------- default mem_fraction_static (R1)
def capture_sizes(limit: int) -> int:
    """How many decode CUDA-graph batch sizes SGLang captures up to `limit`."""
    sizes = [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 497, 16)) + list(range(512, limit + 1, 32))
    sizes = [s for s in sizes if s <= limit]
    if limit not in sizes:
        sizes.append(limit)
    return len(sizes)


def prefill_sizes(limit: int) -> int:
    """How many prefill CUDA-graph sizes SGLang captures up to `limit` tokens (0.5.10+ schedule): counted, not
    listed, so an absurd limit costs nothing."""
    ranges = (range(4, 33, 4), range(48, 257, 16), range(288, 513, 32), range(576, 1025, 64), range(1280, 4097, 256),
              range(4608, limit + 1, 512))
    return sum(len(range(r.start, min(r.stop, limit + 1), r.step)) for r in ranges)


def default_sizes(rel: Release, gpu_mib: int | None, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, decode CUDA-graph max batch size) SGLang picks for this GPU (R2)."""
    if gpu_mib is None:
        return 4096, 160
    for below, chunk, bs_small, bs_big in rel.default_bins:
        if below is None or gpu_mib < below:
            return chunk, (bs_big if tp >= 4 else bs_small)
    raise AssertionError("the last bin has no limit")


def _tp_table(rel: Release, n: int) -> Fraction:
    t16, t8, t4, t2, t1 = rel.tp_table
    return t16 if n >= 16 else t8 if n >= 8 else t4 if n >= 4 else t2 if n >= 2 else t1


def default_mem_fraction(gpu_mib: int | None, tp: int, pp: int, mla: bool, *, rel: Release | None = None,
                         chunked_prefill_size: int | None = None, max_running_requests: int | None = None,
                         prefill_graphs: bool = True, disaggregation_mode: str | None = None,
                         draft_tokens: int | None = None, attn_dp_size: int = 1) -> tuple[Fraction, int, float | None]:
    """(mem_fraction_static, chunked_prefill_size, reserved MiB or None) that SGLang `rel` picks for a text model
    on CUDA (R1); the two flags replace the GPU-size defaults. `prefill_graphs`: False where SGLang turns its
    prefill CUDA graphs off (pipeline parallelism, multimodal models, ROCm; 0.5.10+). `disaggregation_mode`
    (prefill | decode; read from 0.5.23 only, engines/sglang/features.py): a decode server's activation slack
    follows its running requests x `draft_tokens` and it captures no prefill graphs; a prefill server captures no
    decode graphs (arg_groups/memory_hook.py handle_gpu_memory_settings, reserve_for_graph_mb). `attn_dp_size` D > 1
    (attention data parallelism): the decode graphs reserve max_bs x D x 3 MiB more, x 1.5 more past 300."""
    from kvplan.engines.sglang.releases import DEFAULT

    rel = rel or DEFAULT
    chunk, max_bs = default_sizes(rel, gpu_mib, tp)
    if chunked_prefill_size is not None:
        chunk = chunked_prefill_size
    if gpu_mib is None:
        return (Fraction(95, 100) if rel.at_least("0.5.20") else Fraction(88, 100)), chunk, None
    rule = rel.mfs_rule
    if rule == "tp_table":
        return _tp_table(rel, tp), chunk, None
    if rule == "tp_table_13g":
        if gpu_mib <= 81920:
            return _tp_table(rel, tp), chunk, None
        return Fraction(gpu_mib - 13 * 1024, gpu_mib), chunk, 13 * 1024.0
    if rule == "v047":
        f = _tp_table(rel, tp * pp) if gpu_mib <= 81920 else Fraction(88, 100)
        if gpu_mib > 180 * 1000:
            f = Fraction(79, 100)
        elif gpu_mib > 96 * 1024:
            f = min(f + Fraction(48 * 1024) * (1 - f) / gpu_mib, Fraction(gpu_mib - 18 * 1024, gpu_mib))
        return f, chunk, None
    p = tp * pp
    if rule == "reserve_by_gpu":
        gib = (2.8 + p / 10) if gpu_mib < 35 * 1024 else (9.5 + p / 2) if gpu_mib < 90 * 1024 else \
            (12 + p / 2) if gpu_mib < 160 * 1024 else 32.0
        reserved = gib * 1024
    else:  # reserve_by_graphs (0.5.3+)
        if max_running_requests is not None and rel.at_least("0.5.22"):
            max_bs = min(max_bs, max_running_requests)
        graph = 2 * max_bs if disaggregation_mode != "prefill" else 0
        if attn_dp_size > 1 and disaggregation_mode != "prefill":
            graph += max_bs * attn_dp_size * 3 + (max_bs * attn_dp_size * 1.5 if max_bs > 300 else 0)
        on = rel.prefill_graphs_default and prefill_graphs and pp == 1 and disaggregation_mode != "decode"
        if mla and on:
            graph += 1536
        elif on:
            graph += 8 * prefill_sizes(chunk)
        activation_tokens = max(chunk, 2048)
        if disaggregation_mode == "decode":
            activation_tokens = max((max_running_requests or max_bs or 1) * (draft_tokens or 1), 2048)
        reserved = 512 + 1.5 * activation_tokens + tp * pp / 8 * 1024 + graph
        if gpu_mib > 61440:
            reserved = max(reserved, 10240)
    frac = round((gpu_mib - reserved) / gpu_mib, 3)
    return Fraction(str(frac)), chunk, reserved


def multimodal_factor(rel: Release, vision_params: int, *, user_given: bool) -> Fraction:
    """What SGLang multiplies mem_fraction_static by for a vision-language model (R1, multimodal rows)."""
    kind, factor = rel.multimodal_factor
    if kind == "all":
        return factor
    if user_given:
        return Fraction(1)
    if kind == "default":
        return factor
    # adjust_mem_fraction_for_vlm: vit_layers x vit_hidden^2 is about the tower's parameters / 12 (a ViT layer
    # holds ~12 hidden^2 weights: QKV, output, a 4x MLP); SGLang reads the layers and width from the config
    scale = Fraction(vision_params, 12 * 24 * 1024**2)
    clamp = min(max(1 - Fraction(1, 10) * (scale - 1), Fraction(8, 10)), Fraction(105, 100))
    return Fraction(95, 100) * clamp


# --------------------------------------------------------------------------------------------- the band
# The weights SGLang loads, beyond kvplan's model of them (vLLM's stage_weight_bytes), relative to it: the
# logs whose "Load weight end ... mem usage" can be compared with a config in tests/data (tests/test_engine_sglang.py
# recomputes each figure from its log and config).
WEIGHT_RESIDUALS = (
    ("sglang-pr4826-gemma3-multimodal-141gb-tp1-v0.4.4", Fraction(72, 10000)),  # 8.13 logged, 8.072 GiB modelled
)


def _link_group(tp: int, link: str | None) -> str:
    return "one" if tp == 1 else ("pcie" if link == "pcie" else "nvlink")


def free_before_errors(exclude: frozenset[str] | None = None) -> tuple[tuple[str, str, int], ...]:
    return _free_before_errors(frozenset(_LEFT_OUT.get() if exclude is None else exclude))


@lru_cache(maxsize=None)
def _free_before_errors(exclude: frozenset[str]) -> tuple[tuple[str, str, int], ...]:
    """(log, group, modelled P - logged P in bytes) for every observation, each modelled with constants fitted
    without its own source (leave-one-source-out) and without the sources in `exclude`; group: "one" GPU, or
    TP over "pcie" / "nvlink" (unknown links count as NVLink, as in `budget`)."""
    from kvplan.model.catalog import find_gpu

    out = []
    for obs in OBSERVATIONS:
        if obs.source in exclude:
            continue
        fit = constants(exclude | {obs.source})
        gpu = find_gpu(obs.gpu)
        b = budget(gpu.capacity_bytes, weights=0, mfs=Fraction(1), tp=obs.tp, pp=1, architecture=gpu.architecture,
                   link=obs.link, fit=fit)
        out.append((obs.log, _link_group(obs.tp, obs.link), b.free_before_load_bytes - int(obs.free_before_gib * GIB)))
    return tuple(out)


# The band is twice the largest out-of-sample error of the budget's terms: each term rests on one to three logs,
# so the error seen on the others is a floor for the next log's, not a bound (a choice, not a fit;
# benchmarks/sglang_trtllm_error.py measures how many runs the band covers).
BAND_FACTOR = 2


def band_bytes(b: SglangBudget, tp: int, link: str | None, exclude: frozenset[str] | None = None) -> int:
    """Half the width of the band around the modelled rest: BAND_FACTOR x (the largest out-of-sample error of P
    (CUDA context and distributed init) among the logs of the same layout (one GPU, TP over PCIe, TP over NVLink;
    all of them where none is of that layout), which moves the rest by mem_fraction_static per byte, plus the
    largest relative error of the weights)."""
    errors = free_before_errors(exclude)
    group = _link_group(tp, link)
    same = [abs(e) for _, g, e in errors if g == group] or [abs(e) for _, _, e in errors]
    dp = max(same, default=0)
    dw = max((r for log, r in WEIGHT_RESIDUALS), default=Fraction(0))
    return math.ceil(BAND_FACTOR * (dp * b.mem_fraction_static + dw * b.weights_bytes))
