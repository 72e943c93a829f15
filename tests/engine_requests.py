"""One way for the engine tests to build an EngineRequest (imported by the test modules; tests/ is on sys.path)."""

from __future__ import annotations

from kvplan.model.catalog import find_gpu, resolve_model
from kvplan.engines import EngineRequest
from kvplan.engines.api import Hardware
from kvplan.core.spec import ModelSpec


def engine_request(model, seq=8192, *, kv="auto", tp=1, pp=1, mem=None, gpu=None, hw=None, batch=1, **kw) -> EngineRequest:
    """A request for `model` (a ModelSpec, or anything resolve_model takes) on catalog GPU `gpu` or Hardware `hw`."""
    spec = model if isinstance(model, ModelSpec) else resolve_model(str(model))
    if gpu:
        g = find_gpu(gpu)
        hw = Hardware(g.name, g.capacity_bytes)
    return EngineRequest(spec=spec, seq=seq, batch=batch, kv_dtype=kv, weight_fmt=None, tp=tp, pp=pp, hardware=hw,
                         kv_cache_memory=mem, **kw)


def with_fixes(engine: str, req: EngineRequest):
    """The engine's result with the fixes `kvplan estimate` attaches (kvplan/engines/fixes.py)."""
    from kvplan import engines
    from kvplan.engines import fixes

    chosen = engines.get(engine)
    return fixes.attach(chosen, req, chosen.estimate(req))
