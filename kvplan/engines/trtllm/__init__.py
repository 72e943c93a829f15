"""TensorRT-LLM: the paged KV pool its executor sizes."""

from __future__ import annotations

from fractions import Fraction

from kvplan.engines import Engine, EngineFlags
from kvplan.engines.trtllm.engine import TrtllmEstimate, estimate, pool_tokens, read_kv_dtype

ENGINE = Engine(
    name="trtllm", title="TensorRT-LLM", estimate=estimate, kv_dtype=read_kv_dtype,
    flags=EngineFlags("--max_seq_len", "--tp_size", "kv_cache_config: {dtype: fp8} (extra LLM API options)",
                      "kv_cache_config: {free_gpu_memory_fraction: {F}} (extra LLM API options)", None),
    util_of=lambda req, r: None if r.free_gpu_memory_fraction is None else Fraction(r.free_gpu_memory_fraction),
    util_max=lambda r: Fraction(95, 100),
)

__all__ = ["ENGINE", "estimate", "TrtllmEstimate", "pool_tokens"]
