"""What every engine returns. Pure.

`ContractEstimate` is the `estimate --json` contract (docs/json.md), declared once: the static engine's
Estimate (engines/static/) and the paged engines' EngineEstimate (engines/pool.py) extend it, so the JSON
(dataclasses.asdict) carries the contract's keys first for every engine. A paged engine's result also gives
`pool_view()`: the typed figures `kvplan check` judges by (engines/pool.py PoolView), so the judge never asks an
engine's own fields. The paged engines' types live apart so that a static estimate does not build them at start.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.io import JsonResult


@dataclass(frozen=True)
class PerGpu:
    """The most loaded GPU of the deployment."""

    capacity_bytes: int
    usable_bytes: int
    weights_bytes: int
    cache_bytes: int
    reserved_bytes: int
    free_bytes: int  # usable - weights - cache; negative when it does not fit


@dataclass(frozen=True, init=False, eq=False, repr=False)
class ContractEstimate(JsonResult):
    """The `estimate --json` contract keys (docs/json.md). Every engine's result extends this, so the keys are
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

    def pool_view(self):
        """The preallocated pool check judges (an engines/pool.py PoolView); None for an engine that allocates per
        sequence (static)."""
        return None
