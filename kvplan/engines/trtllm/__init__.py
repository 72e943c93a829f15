"""TensorRT-LLM: the paged KV pool its executor sizes, for the PyTorch and the TensorRT-engine backends.

The engine record (ENGINE, parts.py) and the names below load on first use (kvplan/engines/lazy.py).
"""

from __future__ import annotations

from kvplan.engines.lazy import module_getattr

_LAZY = {"ENGINE": "kvplan.engines.trtllm.parts",
         "estimate": "kvplan.engines.trtllm.engine",
         "TrtllmEstimate": "kvplan.engines.trtllm.engine",
         "pool_tokens": "kvplan.engines.trtllm.budget"}


__getattr__ = module_getattr(__name__, _LAZY)


__all__ = ["ENGINE", "estimate", "TrtllmEstimate", "pool_tokens"]
