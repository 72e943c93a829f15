"""Capacity planning for the static engine (contiguous preallocation, like transformers' StaticCache):
does a request shape fit next to the weights, how many sequences fit, how long a context fits.

All figures are integers of bytes or tokens. The reserve for runtime overhead (CUDA context,
activations, allocator slack) is explicit: capacity x (1 - gpu_util) by default, or --reserve SIZE.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from kvplan.core.cache import CacheModel
from kvplan.core.dtypes import DType, WeightFormat, weight_bytes
from kvplan.core.errors import InputError
from kvplan.core.spec import ModelSpec
from kvplan.core.units import MAX_TOKENS

# 10% of the GPU kept back by default: vLLM's historical gpu_memory_utilization default of 0.9
# (vllm/config/cache.py) — a documented, overridable stand-in for context + activations.
DEFAULT_GPU_UTIL = Fraction(9, 10)


@dataclass(frozen=True)
class PerGpu:
    """The most loaded GPU of the deployment."""

    capacity_bytes: int
    usable_bytes: int
    weights_bytes: int
    cache_bytes: int
    reserved_bytes: int
    free_bytes: int  # usable - weights - cache; negative when it does not fit


@dataclass(frozen=True)
class ContractEstimate:
    """DESIGN.md's `estimate --json` contract keys. Every engine's result extends this, so the keys are
    declared once; the JSON of a result is its dataclasses.asdict."""

    model: str
    engine: str
    seq: int
    batch: int
    kv_dtype: str
    dtype: str
    kv_bytes_per_token: int
    kv_bytes: int
    state_bytes: int
    cache_bytes: int
    params: int
    weights_bytes: int  # whole model
    gpu: str | None
    per_gpu: PerGpu | None
    fits: bool | None
    max_batch: int | None
    max_seq: int | None
    notes: tuple[str, ...]


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


@dataclass(frozen=True)
class Hardware:
    """What one GPU offers: its capacity and how much of it may be used."""

    name: str | None
    capacity_bytes: int
    gpu_util: Fraction = DEFAULT_GPU_UTIL
    reserve_bytes: int | None = None  # overrides gpu_util when given

    @property
    def reserved_bytes(self) -> int:
        if self.reserve_bytes is not None:
            return self.reserve_bytes
        usable = self.capacity_bytes * self.gpu_util
        return self.capacity_bytes - usable.numerator // usable.denominator

    @property
    def usable_bytes(self) -> int:
        return self.capacity_bytes - self.reserved_bytes


def model_weights(spec: ModelSpec, fmt: WeightFormat | None) -> tuple[int, str]:
    """Weight bytes and where the figure came from."""
    from kvplan.core.dtypes import weight_format

    if fmt is None and spec.weights_bytes is not None:
        return spec.weights_bytes, spec.weights_source or "weights_bytes in the spec"
    fmt = fmt or weight_format(spec.weight_dtype or spec.dtype)
    return weight_bytes(spec.params, fmt), f"{spec.params:,} params x {fmt.name} ({fmt.note})"


def estimate(spec: ModelSpec, *, seq: int, batch: int, kv_dtype: DType, weight_fmt: WeightFormat | None = None,
             tp: int = 1, pp: int = 1, hardware: Hardware | None = None) -> Estimate:
    if batch < 1:
        raise InputError(f"must be at least 1, got {batch}", where="--batch")
    cache = CacheModel(spec, kv_dtype, tp, pp)
    whole = cache.footprint(seq, batch)
    one = cache.footprint(seq, 1)
    weights, weights_source = model_weights(spec, weight_fmt)
    notes = []
    if spec.max_context and seq > spec.max_context:
        notes.append(f"--seq {seq} exceeds the model's max_context {spec.max_context}")
    if any(layer.kind == "sliding" for layer in spec.layer_specs) and seq > (spec.sliding_window or 0):
        notes.append(f"sliding layers keep only the last {spec.sliding_window} tokens")
    if any(layer.kind == "chunked" for layer in spec.layer_specs) and seq > (spec.attention_chunk_size or 0):
        # transformers' StaticCache gives a chunked layer the sliding-window buffer (cache.py cached_tokens)
        notes.append(f"chunked-attention layers keep {spec.attention_chunk_size} tokens, as transformers' StaticCache does")

    per_gpu = fits = max_batch = max_seq = limited_by = None
    if hardware is not None:
        weights_per_gpu = -(-weights // (tp * pp))  # weights split evenly over the TP x PP group
        room = hardware.usable_bytes - weights_per_gpu
        rank = cache.max_rank_footprint(seq, batch)
        per_gpu = PerGpu(capacity_bytes=hardware.capacity_bytes, usable_bytes=hardware.usable_bytes,
                         weights_bytes=weights_per_gpu, cache_bytes=rank.cache_bytes,
                         reserved_bytes=hardware.reserved_bytes, free_bytes=room - rank.cache_bytes)
        fits = room >= rank.cache_bytes
        per_seq = cache.max_rank_footprint(seq, 1).cache_bytes
        max_batch = max(room, 0) // per_seq if per_seq else None
        max_seq, limited_by = _longest_context(cache, batch, room, spec.max_context)
        if room < 0:
            notes.append("the weights alone exceed the usable memory of one GPU; raise --tp/--pp or use a larger GPU")
    return Estimate(
        model=spec.name, engine="static", seq=seq, batch=batch, kv_dtype=kv_dtype.name,
        dtype=(weight_fmt.name if weight_fmt else spec.weight_dtype or spec.dtype), tp=tp, pp=pp, gpus=tp * pp,
        kv_bytes_per_token=cache.kv_bytes_per_token, kv_bytes=whole.kv_bytes, state_bytes=whole.state_bytes,
        cache_bytes=whole.cache_bytes, kv_bytes_per_sequence=one.kv_bytes, state_bytes_per_sequence=one.state_bytes,
        params=spec.params, weights_bytes=weights, weights_source=weights_source,
        gpu=hardware.name if hardware else None, per_gpu=per_gpu, fits=fits, max_batch=max_batch, max_seq=max_seq,
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
