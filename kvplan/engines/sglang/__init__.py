"""SGLang: the token pool its model runner sizes, release by release (0.3.0 ... 0.5.23).

The engine record (ENGINE, parts.py) and the names below load on first use (kvplan/engines/lazy.py).
"""

from __future__ import annotations

from kvplan.engines.lazy import module_getattr

_LAZY = {"ENGINE": "kvplan.engines.sglang.parts",
         "estimate": "kvplan.engines.sglang.engine",
         "SglangEstimate": "kvplan.engines.sglang.engine",
         "default_mem_fraction": "kvplan.engines.sglang.budget"}


__getattr__ = module_getattr(__name__, _LAZY)


__all__ = ["ENGINE", "estimate", "SglangEstimate", "default_mem_fraction"]
