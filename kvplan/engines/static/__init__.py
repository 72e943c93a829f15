"""The static engine: contiguous preallocation of every sequence to its full length, as transformers'
StaticCache does (transformers/cache_utils.py StaticLayer / StaticSlidingWindowLayer). Pure.

Does a request shape fit next to the weights, how many sequences fit, how long a context fits. All figures
are integers of bytes or tokens. The reserve for runtime overhead (CUDA context, activations, allocator
slack) is explicit: capacity x (1 - gpu_util) by default, or --reserve SIZE.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

from kvplan.core.cache import CacheModel
from kvplan.core.dtypes import DType, WeightFormat, dtype, resolve_kv_dtype
from kvplan.core.errors import InputError
from kvplan.core.spec import ModelSpec
from kvplan.core.units import MAX_TOKENS
from kvplan.engines.api import Engine, EngineRequest, Hardware
from kvplan.engines.result import ContractEstimate, PerGpu
from kvplan.engines.runtime.weights import format_assumption, model_weights
from kvplan.engines.static import specs

ENGINE_VERSION = "transformers 5.x StaticCache semantics"
# 10% of the GPU kept back by default: vLLM's historical gpu_memory_utilization default of 0.9
# (vllm/config/cache.py) — a documented, overridable stand-in for context + activations.
DEFAULT_GPU_UTIL = Fraction(9, 10)


@dataclass(frozen=True)
class Estimate(ContractEstimate):
    """The static engine's result: the contract plus the per-sequence figures and limits behind it."""

    tp: int
    pp: int
    gpus: int
    kv_bytes_per_sequence: int
    state_bytes_per_sequence: int
    weights_source: str
    max_seq_limited_by: str | None  # "memory", "model max_context" or "token limit"
    max_context: int | None
    # what sets per_gpu.reserved_bytes, for people: "--reserve", "--gpu-util 0.5", "--gpu-util 0.9 (default)",
    # "--kv-cache-memory"; None without a GPU (issue 15: the reserve was labelled --reserve whatever set it)
    reserved_by: str | None = None


@dataclass(frozen=True)
class Budget:
    """What one GPU offers the static engine: its capacity and the part kept back."""

    capacity_bytes: int
    reserved_bytes: int

    @property
    def usable_bytes(self) -> int:
        return self.capacity_bytes - self.reserved_bytes


def budget(capacity_bytes: int, *, gpu_util: Fraction | None = None, reserve_bytes: int | None = None) -> Budget:
    """--reserve SIZE when given, else capacity x (1 - gpu_util), gpu_util defaulting to DEFAULT_GPU_UTIL."""
    if reserve_bytes is not None:
        return Budget(capacity_bytes, reserve_bytes)
    usable = capacity_bytes * (gpu_util if gpu_util is not None else DEFAULT_GPU_UTIL)
    return Budget(capacity_bytes, capacity_bytes - usable.numerator // usable.denominator)


def kv_dtype(req: EngineRequest) -> DType:
    """The KV dtype as transformers' StaticCache stores it: 'auto' is the model's dtype."""
    try:
        kv = resolve_kv_dtype(req.kv_dtype, dtype(req.spec.dtype))
    except InputError as err:
        raise err.located("--kv-dtype") from None
    if kv.packed:
        raise InputError(f"{kv.name} is a vLLM KV-cache format, not a dtype transformers' StaticCache stores",
                         where="--kv-dtype", hint="use it with --engine vllm")
    return kv


def estimate(req: EngineRequest, *, search_max_seq: bool = True) -> Estimate:
    """The request as transformers' StaticCache lays it out (search_max_seq is accepted for the Engine interface:
    the longest context is a closed-form search here)."""
    specs.refuse_unmapped(req.spec.layer_specs, req.spec.source or req.spec.name)
    hardware = req.hardware
    b = None
    if hardware is not None:
        b = budget(hardware.capacity_bytes, gpu_util=req.gpu_util, reserve_bytes=req.reserve_bytes)
    if req.kv_cache_memory is not None:
        # the cache gets exactly this much per GPU: the reserve is whatever the weights and it leave
        weights, _ = model_weights(req.spec, req.weight_fmt)
        needed = -(-weights // (req.tp * req.pp)) + req.kv_cache_memory
        capacity = hardware.capacity_bytes if hardware is not None else needed
        hardware = Hardware(hardware.name if hardware else None, capacity)
        b = Budget(capacity, max(capacity - needed, 0))
    result = _estimate(req.spec, seq=req.seq, batch=req.batch, kv=kv_dtype(req), weight_fmt=req.weight_fmt,
                       tp=req.tp, pp=req.pp, gpu=hardware.name if hardware else None, budget_=b)
    if b is not None:
        result = dataclasses.replace(result, reserved_by=_reserved_by(req))
    if req.kv_cache_memory is not None and req.hardware is not None and needed > req.hardware.capacity_bytes:
        # issue 15: a cache that the GPU cannot hold beside the weights was judged against what is left instead
        why = (f"the weights ({needed - req.kv_cache_memory:,} B per GPU) and --kv-cache-memory ({req.kv_cache_memory:,} B) "
               f"need {needed:,} B, more than the GPU's {req.hardware.capacity_bytes:,} B")
        per_gpu = dataclasses.replace(result.per_gpu, free_bytes=req.hardware.capacity_bytes - needed)
        result = dataclasses.replace(result, per_gpu=per_gpu, fits=False, max_batch=0, max_seq=0,
                                     max_seq_limited_by="memory", notes=result.notes + (why,))
    return result


def _reserved_by(req: EngineRequest) -> str:
    if req.kv_cache_memory is not None:
        return "--kv-cache-memory"
    if req.reserve_bytes is not None:
        return "--reserve"
    if req.gpu_util is not None:
        return f"--gpu-util {float(req.gpu_util)!r}"  # 0.9 and 1e-30 as written, not 9/10
    return "--gpu-util 0.9 (default)"


def _estimate(spec: ModelSpec, *, seq: int, batch: int, kv: DType, weight_fmt: WeightFormat | None, tp: int, pp: int,
              gpu: str | None, budget_: Budget | None) -> Estimate:
    if batch < 1:
        raise InputError(f"must be at least 1, got {batch}", where="--batch")
    cache = CacheModel(spec, kv, tp, pp)
    whole = cache.footprint(seq, batch)
    one = cache.footprint(seq, 1)
    notes = []
    if budget_ is None and spec.weights_unknown and spec.weights_bytes is None:
        # no GPU to fit: the cache is all that is asked, and the text model's cache is exact
        weights, weights_source = None, None
        notes.append(f"weights unknown: {spec.weights_unknown}")
    else:
        weights, weights_source = model_weights(spec, weight_fmt)
        assumed = format_assumption(spec, weight_fmt, linear_only=False)
        if assumed:
            notes.append(assumed)
    if spec.max_context and seq > spec.max_context:
        notes.append(f"--seq {seq} exceeds the model's max_context {spec.max_context}")
    notes += specs.window_notes(spec, seq)

    per_gpu = fits = max_batch = max_seq = limited_by = None
    if budget_ is not None:
        weights_per_gpu = -(-weights // (tp * pp))  # weights split evenly over the TP x PP group
        room = budget_.usable_bytes - weights_per_gpu
        rank = cache.max_rank_footprint(seq, batch)
        per_gpu = PerGpu(capacity_bytes=budget_.capacity_bytes, usable_bytes=budget_.usable_bytes,
                         weights_bytes=weights_per_gpu, cache_bytes=rank.cache_bytes,
                         reserved_bytes=budget_.reserved_bytes, free_bytes=room - rank.cache_bytes)
        fits = room >= rank.cache_bytes
        per_seq = cache.max_rank_footprint(seq, 1).cache_bytes
        max_batch = max(room, 0) // per_seq if per_seq else None
        max_seq, limited_by = _longest_context(cache, batch, room, spec.max_context)
        if room < 0:
            notes.append("the weights alone exceed the usable memory of one GPU; raise --tp/--pp or use a larger GPU")
    return Estimate(
        model=spec.name, engine="static", seq=seq, batch=batch, kv_dtype=kv.name,
        dtype=(weight_fmt.name if weight_fmt else spec.weight_dtype or spec.dtype), tp=tp, pp=pp, gpus=tp * pp,
        kv_bytes_per_token=cache.kv_bytes_per_token, kv_bytes=whole.kv_bytes, state_bytes=whole.state_bytes,
        cache_bytes=whole.cache_bytes, kv_bytes_per_sequence=one.kv_bytes, state_bytes_per_sequence=one.state_bytes,
        params=spec.params if weights is not None else None, weights_bytes=weights, weights_source=weights_source,
        gpu=gpu, per_gpu=per_gpu, fits=fits, max_batch=max_batch, max_seq=max_seq,
        max_seq_limited_by=limited_by, max_context=spec.max_context, notes=tuple(notes),
    )


def _longest_context(cache: CacheModel, batch: int, room: int, max_context: int | None) -> tuple[int, str | None]:
    """Largest seq with batch x cache(seq) <= room on the most loaded GPU, by binary search on the
    monotone (piecewise linear) cache size; capped at the model's max_context."""
    cap = max_context or MAX_TOKENS

    def fits(s: int) -> bool:
        return cache.max_rank_footprint(s, batch).cache_bytes <= room

    if room < 0 or not fits(1):
        return 0, "memory"
    if fits(cap):
        return cap, "model max_context" if max_context else "token limit"
    lo, hi = 1, cap  # fits(lo) and not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo, "memory"


ENGINE = Engine(name="static", title="static", estimate=estimate, kv_dtype=kv_dtype, flags=None, weights_loaded_as=None,
                has_releases=False, paged=False,
                # the usable share check's fix search raises (--reserve pins the memory instead)
                util_of=lambda req, result: None if req.reserve_bytes is not None else req.gpu_util or DEFAULT_GPU_UTIL)
