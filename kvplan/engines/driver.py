"""The estimate skeleton the paged engines (vLLM, SGLang, TensorRT-LLM) share, with each engine's memory model
plugged in as steps. Engine-neutral: imports no engine package. Pure.

Every paged estimate goes the same way: refuse what the engine does not read; judge a pool the user gives against
the GPU it must fit on; plan the layout (release, dtypes, layers, pages); find the budget from one of three sources
(the pool given with --kv-cache-memory, the engine's budget modelled on a GPU, or none without a GPU); size the pool
and judge the request shape, its band and the longest length; build the result. The engine supplies each step as a
function of its own run record (a subclass of `Run` holding what the steps pass along); `estimate` calls them in
that order. The small pieces of judgement the three engines word alike live here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Generic, TypeVar

from kvplan.core.dtypes import DType
from kvplan.core.errors import InputError
from kvplan.core.layers import KindTable
from kvplan.core.units import MAX_TOKENS
from kvplan.engines.api import EngineRequest
from kvplan.engines.paged import longest
from kvplan.engines.result import PerGpu

# where a paged engine's KV budget comes from (EngineEstimate.budget_source)
GIVEN = "--kv-cache-memory"
MODELLED = "model"
NO_GPU = "none"


@dataclass(init=False, eq=False, repr=False)
class Run:
    """What an engine's steps hand one another while one request is estimated; each engine extends it with the
    figures its own steps compute."""

    req: EngineRequest
    search_max_seq: bool
    source: str = NO_GPU
    notes: list[str] = field(default_factory=list)
    kv: DType | None = None  # the KV-cache dtype the engine stores
    act: DType | None = None  # the model's (activation) dtype
    common: dict[str, Any] = field(default_factory=dict)  # the result fields every engine fills alike
    # the verdict every engine's result carries
    serves: bool | None = None
    marginal: bool | None = None
    max_batch: int | None = None
    max_seq: int | None = None
    est_len: int | None = None
    per_gpu: PerGpu | None = None


R = TypeVar("R", bound=Run)


@dataclass(frozen=True, eq=False, repr=False)
class Steps(Generic[R]):
    """One engine's memory model as the driver calls it (each step returns nothing but the last: it fills its run).

    kinds: the engine's kind table (its specs.TABLE, core/layers.py KindTable): a layer kind it has no rule for is
    refused by name (exit 3) before anything is sized;
    refuse: what else the engine does not read, first of all (InputError / UnsupportedError); None: nothing else;
    on_the_gpu: a pool given with --kv-cache-memory, judged beside what else the engine puts on the GPU; it calls
    back into `estimate` with pool_checked=True for the plain estimate;
    start: the run with the release, dtypes and layout of the request;
    given / modelled: the budget from the pool given, or modelled on the request's GPU;
    no_gpu: what an estimate without a GPU leaves out (a note);
    pool: the pool, the verdict, the band and the longest length; result: the engine's result from the run;
    fit_length: the engine's --seq auto (vLLM's --max-model-len auto), None where it has none."""

    kinds: KindTable[Any]
    refuse: Callable[[EngineRequest], None] | None
    on_the_gpu: Callable[..., Any]
    start: Callable[[EngineRequest, bool], R]
    given: Callable[[R], None]
    modelled: Callable[[R], None]
    no_gpu: str
    pool: Callable[[R], None]
    result: Callable[[R], Any]
    fit_length: Callable[..., Any] | None = None


def estimate(steps: Steps[Any], req: EngineRequest, *, search_max_seq: bool = True, pool_checked: bool = False) -> Any:
    """The engine's result for `req`, its steps called in the one order every paged engine follows."""
    if steps.refuse is not None:
        steps.refuse(req)
    steps.kinds.refuse_unmapped(req.spec.layer_specs, req.spec.source or req.spec.name)
    if req.seq_auto and steps.fit_length is not None:
        return steps.fit_length(req, search_max_seq=search_max_seq)
    if not pool_checked and req.kv_cache_memory is not None and req.hardware is not None:
        return steps.on_the_gpu(req, search_max_seq=search_max_seq)
    run = steps.start(req, search_max_seq)
    run.source = budget_source(req)
    if run.source == GIVEN:
        steps.given(run)
    elif run.source == MODELLED:
        steps.modelled(run)
    else:
        run.notes.append(steps.no_gpu)
    steps.pool(run)
    return steps.result(run)


def budget_source(req: EngineRequest) -> str:
    """Where the KV budget comes from: the pool the user gives wins over a GPU's modelled budget."""
    if req.kv_cache_memory is not None:
        return GIVEN
    return MODELLED if req.hardware is not None else NO_GPU


def refuse_batch(req: EngineRequest) -> None:
    if req.batch < 1:
        raise InputError(f"must be at least 1, got {req.batch}", where="--batch")


def memory_in_use(req: EngineRequest) -> int:
    """Bytes in use on each GPU before the engine starts: --gpu-reserved and the site profile's memory in use."""
    return (req.gpu_reserved_bytes or 0) + (req.site.memory_in_use_bytes if req.site is not None else 0)


def reserve_note(req: EngineRequest, budget: str) -> str | None:
    """--reserve sizes the static engine's budget; a paged engine sizes its own (`budget` says how), so it is noted,
    not applied."""
    if req.hardware is not None and req.reserve_bytes is not None:
        return f"--reserve applies to the static engine; {budget}"
    return None


def longest_fitting(estimate: Callable[..., Any], req: EngineRequest) -> int:
    """The longest length (1 ... the model's context) at which the engine's estimate of `req` fits, each length
    estimated afresh (the engine's pool and limits may depend on it; the fit must be monotone in the length)."""
    def fits(m: int) -> bool:
        return bool(estimate(replace(req, seq=m), search_max_seq=False).fits)

    return max(longest(fits, 1, req.spec.max_context or MAX_TOKENS), 0)
