"""vLLM (v1 engine): release rules, layout and estimate, budget, serve arguments, log reader and calibration.

The engine record (ENGINE, parts.py) and the names below load on first use (PEP 562): reading one of the engine's
tables (its releases, its options) does not build its whole memory model, which keeps every other engine's start
fast (benchmarks/cold_start.py). Its submodules load the same way when asked for as attributes.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {"ENGINE": "kvplan.engines.vllm.parts",
         "estimate": "kvplan.engines.vllm.engine",
         "VllmEstimate": "kvplan.engines.vllm.engine"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if not name.startswith("_"):
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ENGINE", "estimate", "VllmEstimate"]
