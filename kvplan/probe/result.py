"""What a probe reports, as frozen dataclasses of integers; their fields are the JSON (kvplan.core.io.to_json).

Counters that a device cannot give are None (torch's collect_env habit): CUDA has no RSS, the CPU
has no allocator or driver view, `meta` has neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GroupResult:
    label: str  # full, sliding(4096), mla, state, ...
    kind: str
    layers: int
    tensors: int
    shapes: tuple[str, ...]  # the distinct tensor shapes, e.g. "k [8, 8, 32768, 128] bfloat16"
    estimated_bytes: int
    measured_bytes: int
    match: bool


@dataclass(frozen=True)
class Deltas:
    """Counter changes while the cache was held (after minus before), and what stayed after freeing.

    requested: CUDA caching allocator's requested_bytes (exact tensor sizes); allocated: its
    memory_allocated (sizes rounded to 512 B, and a block not split when <= 1 MiB would remain);
    reserved: memory_reserved (whole segments: 2 MiB small pool, 20 MiB or 2 MiB-rounded large);
    driver: total - free from cudaMemGetInfo (what other processes see); rss: process resident set
    after every page was written (CPU).
    """

    requested_bytes: int | None = None
    allocated_bytes: int | None = None
    reserved_bytes: int | None = None
    driver_bytes: int | None = None
    rss_bytes: int | None = None
    # after the probe freed everything (and emptied the allocator cache): what is still held, vs before
    left_after_free_requested_bytes: int | None = None
    left_after_free_reserved_bytes: int | None = None
    left_after_free_rss_bytes: int | None = None


@dataclass(frozen=True)
class FindMaxResult:
    unit: str  # "sequences" (static) or "blocks" (paged)
    unit_bytes: int  # kvplan's bytes for one unit on this rank
    budget_bytes: int
    budget_source: str
    predicted_max: int  # kvplan: budget // unit_bytes
    measured_max: int  # units the device actually held
    measured_bytes: int  # tensor bytes held at the maximum
    limited_by: str  # "budget" or "out of memory"
    steps: int
    match: bool  # measured_max == predicted_max and measured_bytes == predicted_max x unit_bytes
    seconds: float


@dataclass(frozen=True)
class BenchGroup:
    label: str
    layers: int
    bytes_per_layer: int  # K and V (or latent) bytes one decode step reads for one layer
    seconds_per_layer: float
    bytes_per_s: int


@dataclass(frozen=True)
class BenchResult:
    """One decode step: a query token per sequence attends over the whole cache of every layer."""

    groups: tuple[BenchGroup, ...]
    kv_bytes_per_step: int  # all attention layers of this rank (or of every stage, merged)
    seconds_per_token: float  # implied: sum over layers of the measured per-layer time
    achieved_bytes_per_s: int
    gpu: str | None  # catalog entry matched by the device name
    catalog_bytes_per_s: int | None  # its HBM bandwidth
    catalog_fraction: float | None  # achieved / catalog
    catalog_seconds_per_token: float | None  # the KV reads alone at catalog bandwidth (a lower bound)
    iterations: int
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RankResult:
    rank: int
    stage: int
    tp_rank: int
    device: str
    layers: str  # "0-31"
    estimated_bytes: int
    measured_bytes: int
    match: bool
    tensor_bytes: int  # sum of the tensors' untyped_storage().nbytes()
    tensors: int
    groups: tuple[GroupResult, ...]
    deltas: Deltas
    seconds: float
    find_max: FindMaxResult | None = None
    bench: BenchResult | None = None


@dataclass(frozen=True)
class ProbeResult:
    model: str
    engine: str
    layout: str  # static or paged
    device: str  # cpu, cuda, meta
    device_name: str | None
    torch_version: str
    seq: int
    batch: int
    kv_dtype: str
    tp: int
    pp: int
    world_size: int  # processes that allocated (torchrun ranks), 1 otherwise
    stages: tuple[int, ...]  # the pipeline stages probed
    block_size: int | None
    blocks_source: str | None
    estimated_bytes: int  # kvplan, for the ranks probed
    measured_bytes: int  # device: CUDA requested_bytes delta; CPU/meta: tensor storage bytes
    match: bool
    whole_model_estimated_bytes: int  # `kvplan estimate`'s cache_bytes (every rank); static layout
    groups: tuple[GroupResult, ...]  # summed over the ranks probed, by label
    ranks: tuple[RankResult, ...]
    requested_delta_bytes: int | None
    allocated_delta_bytes: int | None
    reserved_delta_bytes: int | None
    driver_delta_bytes: int | None
    rss_delta_bytes: int | None
    find_max: FindMaxResult | None
    bench: BenchResult | None
    seconds: float
    notes: tuple[str, ...] = field(default=())
