"""vLLM (v1 engine): release rules, layout and estimate, budget, serve arguments, log reader and calibration.

The engine record (ENGINE, parts.py) and the names below load on first use (kvplan/engines/lazy.py).
"""

from __future__ import annotations

from kvplan.engines.lazy import module_getattr

# the release `releases.release(None)` gives (releases.DEFAULT, the newest line; tests/test_engine_contract.py holds
# them equal), named here so that check's report can say which rules judge a file that pins none without loading the
# release table (engines.release_version; benchmarks/cold_start.py)
DEFAULT_VERSION = "0.33.0"

_LAZY = {"ENGINE": "kvplan.engines.vllm.parts",
         "estimate": "kvplan.engines.vllm.engine",
         "VllmEstimate": "kvplan.engines.vllm.engine"}


__getattr__ = module_getattr(__name__, _LAZY)


__all__ = ["ENGINE", "estimate", "VllmEstimate", "DEFAULT_VERSION"]
