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
tests/data/sglang_logs, engine-neutral runtime physics that TensorRT-LLM's model shares: engines/runtime/startup.py
lists them with the figures each log prints and refits them without some logs (`leaving_out`). Everything else (the default mem_fraction_static, the reserve formulas, chunked prefill and CUDA-graph
sizes) is read from SGLang's source per release (releases.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from kvplan.engines.runtime.startup import StartupConstants, constants, free_before_errors, link_group, startup_bytes
from kvplan.engines.sglang.releases import Release, DEFAULT

GIB = 2**30
MIB = 2**20


# ----------------------------------------------------------------------------------------- the budget
@dataclass(frozen=True, eq=False, repr=False)
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
           in_use: int = 0, non_torch: int | None = None, fit: StartupConstants | None = None) -> SglangBudget:
    """P, A and the rest for one GPU. `non_torch` (a site profile's measurement) replaces context + init."""
    context, dist = startup_bytes(fit or constants(), tp=tp, pp=pp, architecture=architecture, link=link)
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
                         draft_tokens: int | None = None, attn_dp_size: int = 1,
                         unchunked_prefill_tokens: int | None = None) -> tuple[Fraction, int, float | None]:
    """(mem_fraction_static, chunked_prefill_size, reserved MiB or None) that SGLang `rel` picks for a text model
    on CUDA (R1); the two flags replace the GPU-size defaults. `prefill_graphs`: False where SGLang turns its
    prefill CUDA graphs off (pipeline parallelism, multimodal models, ROCm; 0.5.10+). `disaggregation_mode`
    (prefill | decode; read from 0.5.23 only, engines/sglang/features.py): a decode server's activation slack
    follows its running requests x `draft_tokens` and it captures no prefill graphs; a prefill server captures no
    decode graphs (arg_groups/memory_hook.py handle_gpu_memory_settings, reserve_for_graph_mb). `attn_dp_size` D > 1
    (attention data parallelism): the decode graphs reserve max_bs x D x 3 MiB more, x 1.5 more past 300.
    `unchunked_prefill_tokens` (chunked prefill off: --max-prefill-tokens, features.py unchunked_prefill_tokens):
    the activation reserve reads max(it, 2048) instead of the chunk, and the prefill graphs, sized up to the chunk
    (-1), capture no size: 0 MiB but MLA's flat 1.5 GiB (0.5.3, 0.5.10, 0.5.16 server_args.py
    _handle_gpu_memory_settings and _generate_piecewise_cuda_graph_tokens; 0.5.22, 0.5.23 arg_groups/memory_hook.py,
    cuda_graph_hook.py generate_prefill_cuda_graph_batch_sizes); the chunk returned is then -1, as SGLang logs it."""
    rel = rel or DEFAULT
    chunk, max_bs = default_sizes(rel, gpu_mib, tp)
    if chunked_prefill_size is not None:
        chunk = chunked_prefill_size
    if unchunked_prefill_tokens is not None:
        chunk = -1
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
        graph: float = 2 * max_bs if disaggregation_mode != "prefill" else 0
        if attn_dp_size > 1 and disaggregation_mode != "prefill":
            graph += max_bs * attn_dp_size * 3 + (max_bs * attn_dp_size * 1.5 if max_bs > 300 else 0)
        on = rel.prefill_graphs_default and prefill_graphs and pp == 1 and disaggregation_mode != "decode"
        if mla and on:
            graph += 1536
        elif on:
            graph += 8 * prefill_sizes(chunk)
        activation_tokens = max(chunk if chunk > 0 else (unchunked_prefill_tokens or 0), 2048)
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


# The band is twice the largest out-of-sample error of the budget's terms: each term rests on one to three logs,
# so the error seen on the others is a floor for the next log's, not a bound (a choice, not a fit;
# benchmarks/sglang_trtllm_error.py measures how many runs the band covers).
BAND_FACTOR = 2


# ROCm (MI300X-class): P is measured by torch's mem_get_info as on CUDA, but none of the logs the CUDA context and the
# distributed-init constants were measured on is a ROCm one. Widened to their plausible values, not fitted (no public
# SGLang ROCm log prints P; docs/engines/sglang.md "ROCm"): torch's total on an MI300X reads 191.69 GiB in four
# public vLLM logs where rocminfo's pool (SGLang's GPU size, utils/common.py get_amdgpu_memory_capacity) is
# 191.98 GiB: +-0.3% of the total; the HIP context and ROCm's libraries on one GPU +-1 GiB; RCCL's channels and the
# custom all-reduce at TP >= 2 +-2 GiB. Each moves the rest by mem_fraction_static per byte of P.
ROCM_BAND_TOTAL_FRACTION = Fraction(3, 1000)
ROCM_BAND_CONTEXT_BYTES = 1024 * MIB
ROCM_BAND_DIST_INIT_BYTES = 2048 * MIB


def rocm_band_bytes(b: SglangBudget, ranks: int) -> int:
    """The part of the band ROCm adds (ROCM_BAND_*): P's unsettled terms, times mem_fraction_static."""
    p = math.ceil(b.total_bytes * ROCM_BAND_TOTAL_FRACTION) + ROCM_BAND_CONTEXT_BYTES
    if ranks > 1:
        p += ROCM_BAND_DIST_INIT_BYTES
    return math.ceil(p * b.mem_fraction_static)


def band_bytes(b: SglangBudget, tp: int, link: str | None, exclude: frozenset[str] | None = None) -> int:
    """Half the width of the band around the modelled rest: BAND_FACTOR x (the largest out-of-sample error of P
    (CUDA context and distributed init) among the logs of the same layout (one GPU, TP over PCIe, TP over NVLink;
    all of them where none is of that layout), which moves the rest by mem_fraction_static per byte, plus the
    largest relative error of the weights)."""
    errors = free_before_errors(exclude)
    group = link_group(tp, link)
    same = [abs(e) for _, g, e in errors if g == group] or [abs(e) for _, _, e in errors]
    dp = max(same, default=0)
    dw = max((r for log, r in WEIGHT_RESIDUALS), default=Fraction(0))
    return math.ceil(BAND_FACTOR * (dp * b.mem_fraction_static + dw * b.weights_bytes))
