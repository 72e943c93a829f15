"""What a paged engine (vLLM, SGLang, TensorRT-LLM) returns beyond the contract: why it does not start, the
preallocated pool as `kvplan check` judges it, and the terms the three share. Pure.

Kept apart from engines/result.py (the contract every engine returns) so that a static estimate, the common first
command, does not build these types at start. Why an engine does not start and the pool as check judges it (PoolView,
the StartProblem records) live in engines/pool_view.py, which only `pool_view()` builds (kvplan check, plan): an
estimate does not load it; its names still answer here (PEP 562).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from kvplan.core.cache import CacheModel
from kvplan.core.dtypes import DType
from kvplan.engines.api import EngineRequest
from kvplan.engines.result import ContractEstimate
from kvplan.engines import lazy

if TYPE_CHECKING:
    from kvplan.engines.pool_view import NoKvMemory as NoKvMemory
    from kvplan.engines.pool_view import PoolTooShort as PoolTooShort
    from kvplan.engines.pool_view import PoolView as PoolView
    from kvplan.engines.pool_view import Refused as Refused
    from kvplan.engines.pool_view import RequestTooLong as RequestTooLong
    from kvplan.engines.pool_view import StartProblem as StartProblem
else:
    __getattr__ = lazy.module_getattr(__name__, {name: "kvplan.engines.pool_view" for name in (
        "NoKvMemory", "RequestTooLong", "Refused", "PoolTooShort", "StartProblem", "PoolView")})


@dataclass(frozen=True, init=False, eq=False, repr=False)
class EngineEstimate(ContractEstimate):
    """The contract and the terms the paged engines share."""

    engine_version: str
    tp: int
    pp: int
    gpus: int
    available_kv_bytes: int | None
    # the band of a modelled budget: available_kv_bytes minus and plus the measured leave-out error of its terms
    # (docs/engines/calibration.md); equal to available_kv_bytes when it is given (--kv-cache-memory), None without a GPU
    available_kv_bytes_low: int | None
    available_kv_bytes_high: int | None
    # the fit holds at one edge of the band and not at the other: the engine may or may not start / hold `batch`
    marginal: bool | None
    estimated_max_model_len: int | None  # only when seq does not fit
    budget_source: str  # "model" (modelled budget), "--kv-cache-memory", or "none" (no GPU given)
    suggestions: tuple[str, ...]  # filled by engines/fixes.py when it does not fit
    serves_batch: bool | None  # the pool holds `batch` sequences of `seq` at once
    starts: bool | None  # the engine starts and serves one request of `seq` (fits = starts and serves_batch)


@lru_cache(maxsize=4096)
def _kv_bytes_per_token(spec, kv: DType, tp: int, pp: int) -> int:
    """CacheModel(...).kv_bytes_per_token, remembered: searches (kvplan plan, sweep) ask it for the same few layouts
    thousands of times, and building the layer groups is most of an engine estimate's time."""
    return CacheModel(spec, kv, tp, pp).kv_bytes_per_token


def request_terms(req: EngineRequest, kv: DType, *, engine: str, engine_version: str) -> dict[str, Any]:
    """The EngineEstimate fields that follow from the request alone (keyword arguments for the result)."""
    spec, hw = req.spec, req.hardware
    return dict(model=spec.name, engine=engine, seq=req.seq, batch=req.batch, kv_dtype=kv.name,
                dtype=req.weight_fmt.name if req.weight_fmt else (spec.weight_dtype or spec.dtype),
                kv_bytes_per_token=_kv_bytes_per_token(spec, kv, req.tp, req.pp),
                # the text model's count is not the model's when a tower is unknown: no figure rather than a low one
                params=None if spec.weights_unknown and spec.weights_bytes is None else spec.params,
                gpu=hw.name if hw else None, engine_version=engine_version, tp=req.tp, pp=req.pp, gpus=req.tp * req.pp)


def verdict_terms(starts: bool | None, serves: bool | None) -> dict[str, Any]:
    """`fits` (the request shape fits) = the engine starts with `seq` and holds `batch` of them."""
    return dict(fits=None if starts is None else bool(starts and serves), starts=starts, serves_batch=serves)
