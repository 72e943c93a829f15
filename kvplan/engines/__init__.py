"""Memory models of serving engines behind one interface.

Each engine module exposes `estimate(request: EngineRequest) -> result dataclass` and states the
engine version whose rules it mirrors. `static` (contiguous preallocation, like transformers'
StaticCache) is the default and lives in plan.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from kvplan.core.dtypes import DType, WeightFormat
from kvplan.core.errors import InputError, did_you_mean
from kvplan.engines.plan import Hardware
from kvplan.core.spec import ModelSpec

ENGINE_NAMES = ("static", "vllm", "sglang", "trtllm")


@dataclass(frozen=True)
class EngineRequest:
    """Everything a user can say about a deployment, in the engine-neutral form the CLI builds."""

    spec: ModelSpec
    seq: int  # max_model_len for the paged engines
    batch: int
    kv_dtype: DType
    kv_dtype_name: str  # as the user wrote it ('auto', 'fp8', 'fp8_e5m2', ...): engines have their own spellings
    weight_fmt: WeightFormat | None
    tp: int = 1
    pp: int = 1
    hardware: Hardware | None = None
    gpu_util: Fraction | None = None  # None: the engine's own default
    kv_cache_memory: int | None = None  # bytes for the cache, skipping the budget model (vLLM kv_cache_memory_bytes)
    block_size: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    prefix_caching: bool | None = None  # None: the engine's default (vLLM: on; off for hybrids in 0.19, pure Mamba)


def engine_module(name: str):
    key = name.strip().lower()
    if key not in ENGINE_NAMES:
        raise InputError(f"unknown engine {name!r}", where="--engine", hint=did_you_mean(name, ENGINE_NAMES) or "one of " + ", ".join(ENGINE_NAMES))
    import importlib

    try:
        return importlib.import_module(f"kvplan.engines.{key}")
    except ModuleNotFoundError as err:
        if err.name != f"kvplan.engines.{key}":
            raise
        from kvplan.core.errors import UnsupportedError

        raise UnsupportedError(f"engine {key!r} is not modelled in this version", where="--engine", hint="use --engine static") from None
