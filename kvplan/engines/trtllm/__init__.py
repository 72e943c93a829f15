"""TensorRT-LLM: the paged KV pool its executor sizes."""

from kvplan.engines.trtllm.engine import TrtllmEstimate, estimate, pool_tokens, render_tables  # noqa: F401

__all__ = ["estimate", "TrtllmEstimate", "pool_tokens"]
