"""TensorRT-LLM: the paged KV pool its executor sizes, for the PyTorch and the TensorRT-engine backends."""

from __future__ import annotations

from fractions import Fraction

from kvplan.engines.api import Engine, EngineFlags
from kvplan.engines.trtllm.budget import pool_tokens
from kvplan.engines.trtllm.engine import OPTION_KEYS, TrtllmEstimate, estimate, read_kv_dtype

ENGINE = Engine(
    name="trtllm", title="TensorRT-LLM", estimate=estimate, kv_dtype=read_kv_dtype,
    flags=EngineFlags("--max_seq_len", "--tp_size", "kv_cache_config: {dtype: fp8} (extra LLM API options)",
                      "kv_cache_config: {free_gpu_memory_fraction: {F}} (extra LLM API options)", None),
    util_of=lambda req, r: None if r.free_gpu_memory_fraction is None else Fraction(r.free_gpu_memory_fraction),
    util_max=lambda r: Fraction(95, 100),
    option_keys=OPTION_KEYS, takes_gpu_reserved=True,
)

__all__ = ["ENGINE", "estimate", "TrtllmEstimate", "pool_tokens"]
