"""vLLM (v1 engine): release rules, layout and estimate, budget, serve arguments, log reader and calibration.

The engine record (ENGINE, parts.py) and the names below load on first use (kvplan/engines/lazy.py).
"""

from __future__ import annotations

from kvplan.engines.lazy import module_getattr

_LAZY = {"ENGINE": "kvplan.engines.vllm.parts",
         "estimate": "kvplan.engines.vllm.engine",
         "VllmEstimate": "kvplan.engines.vllm.engine"}


__getattr__ = module_getattr(__name__, _LAZY)


__all__ = ["ENGINE", "estimate", "VllmEstimate"]
