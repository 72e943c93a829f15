"""What every paged engine (vLLM, SGLang, TensorRT-LLM) returns: DESIGN.md's contract fields first, then the
terms the three share, then each engine's own. Pure (rich only inside the rendering helpers).

Each engine's result is a frozen dataclass extending EngineEstimate, which extends plan.ContractEstimate (the
static engine's plan.Estimate extends it too), so the contract's keys are declared once and the JSON
(dataclasses.asdict) carries all of them for every engine.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from kvplan.core.cache import CacheModel
from kvplan.core.dtypes import DType
from kvplan.engines import EngineRequest
from kvplan.engines.plan import ContractEstimate


@dataclass(frozen=True)
class EngineEstimate(ContractEstimate):
    """DESIGN.md's contract (plan.ContractEstimate) and the terms the paged engines share."""

    engine_version: str
    tp: int
    pp: int
    gpus: int
    available_kv_bytes: int | None
    estimated_max_model_len: int | None  # only when seq does not fit
    budget_source: str  # "model" (modelled budget), "--kv-cache-memory", or "none" (no GPU given)
    suggestions: tuple[str, ...]
    serves_batch: bool | None  # the pool holds `batch` sequences of `seq` at once
    starts: bool | None  # the engine starts and serves one request of `seq` (fits = starts and serves_batch)


def request_terms(req: EngineRequest, kv: DType, *, engine: str, engine_version: str) -> dict[str, Any]:
    """The EngineEstimate fields that follow from the request alone (keyword arguments for the result)."""
    spec, hw = req.spec, req.hardware
    return dict(model=spec.name, engine=engine, seq=req.seq, batch=req.batch, kv_dtype=kv.name,
                dtype=req.weight_fmt.name if req.weight_fmt else (spec.weight_dtype or spec.dtype),
                kv_bytes_per_token=CacheModel(spec, kv, req.tp, req.pp).kv_bytes_per_token, params=spec.params,
                gpu=hw.name if hw else None, engine_version=engine_version, tp=req.tp, pp=req.pp, gpus=req.tp * req.pp)


def verdict_terms(starts: bool | None, serves: bool | None) -> dict[str, Any]:
    """`fits` (DESIGN.md: the request shape fits) = the engine starts with `seq` and holds `batch` of them."""
    return dict(fits=None if starts is None else bool(starts and serves), starts=starts, serves_batch=serves)


R = TypeVar("R", bound=EngineEstimate)


def with_fix(result: R, suggest: bool, fix: Callable[[R], list[str]]) -> R:
    """The result with suggest.py's fix attached when it does not start or does not hold `batch` (the fix re-runs
    the engine with suggest=False, one thing changed)."""
    if suggest and (result.starts is False or result.serves_batch is False):
        return dataclasses.replace(result, suggestions=tuple(fix(result)))
    return result


# --------------------------------------------------------------------------------------------- rendering

def view_start(result: EngineEstimate, head: str) -> list:
    """The header line (TP x PP added when either is > 1) and the quantity/value table every engine view fills."""
    from rich.table import Table
    from rich.text import Text

    from kvplan.cli.render import _box

    if result.tp > 1 or result.pp > 1:
        head += f" · TP {result.tp} × PP {result.pp}"
    table = Table(show_header=True, header_style="bold", box=_box())
    table.add_column("quantity")
    table.add_column("value", justify="right")
    return [Text(head, style="bold"), table]


def view_end(result: EngineEstimate, out: list) -> list:
    """The view with the fix appended, when there is one."""
    from rich.text import Text

    if result.suggestions:
        out.append(Text("what would fit:", style="bold"))
        out += [Text(f"  {s}") for s in result.suggestions]
    return out
