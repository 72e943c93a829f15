"""TensorRT-LLM: the paged KV pool its executor sizes, for the PyTorch and the TensorRT-engine backends.

The engine record (ENGINE, parts.py) and the names below load on first use (PEP 562): reading one of the engine's
tables (its releases, its options) does not build its whole memory model, which keeps every other engine's start
fast (benchmarks/cold_start.py). Its submodules load the same way when asked for as attributes.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {"ENGINE": "kvplan.engines.trtllm.parts",
         "estimate": "kvplan.engines.trtllm.engine",
         "TrtllmEstimate": "kvplan.engines.trtllm.engine",
         "pool_tokens": "kvplan.engines.trtllm.budget"}


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


__all__ = ["ENGINE", "estimate", "TrtllmEstimate", "pool_tokens"]
