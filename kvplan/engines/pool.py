"""What a paged engine (vLLM, SGLang, TensorRT-LLM) returns beyond the contract: why it does not start, the
preallocated pool as `kvplan check` judges it, and the terms the three share. Pure.

Kept apart from engines/result.py (the contract every engine returns) so that a static estimate, the common first
command, does not build these types at start.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kvplan.core.cache import CacheModel
from kvplan.core.dtypes import DType
from kvplan.engines.api import EngineRequest
from kvplan.engines.result import ContractEstimate


# ------------------------------------------------------------------ why an engine does not start

@dataclass(frozen=True)
class NoKvMemory:
    """The weights and runtime buffers take all the memory the engine may use: nothing is left for the cache."""


@dataclass(frozen=True)
class RequestTooLong:
    """One request of max_model_len needs more KV cache than a worker has (vLLM's start-up error)."""

    needed_kv_bytes: int
    available_kv_bytes: int
    longest: int | None  # the engine's estimated maximum model length


@dataclass(frozen=True)
class Refused:
    """The engine refuses to start for a reason it states (memory free at start-up below the fraction asked)."""

    message: str


@dataclass(frozen=True)
class PoolTooShort:
    """A token pool that holds fewer tokens than one request of max_model_len (SGLang, TensorRT-LLM). Both engines
    start anyway: `action` says what the engine does instead of failing ("TensorRT-LLM starts with max_seq_len
    reduced to 86,720"), None where the release's behaviour is not known."""

    available_kv_bytes: int
    longest: int
    action: str | None = None


StartProblem = NoKvMemory | RequestTooLong | Refused | PoolTooShort


@dataclass(frozen=True)
class PoolView:
    """A paged engine's preallocated KV pool, in the terms `kvplan check` judges by (one GPU, the pool-sizing one).

    concurrency: requests of max_model_len at once as the engine logs it (vLLM's "Maximum concurrency", a
    float; TensorRT-LLM's whole requests), None where the engine logs none (then max_batch counts);
    held_at_once: requests the pool really holds at once where that differs from the logged figure (vLLM's null
    block); running_limit: the engine's cap on running requests where it resolves one (vLLM max_num_seqs);
    pool_bytes / per_request_bytes: the pool and what one request of max_model_len takes of it (None: not one
    figure, e.g. sliding-window or state pools beside it)."""

    problem: StartProblem | None  # why it does not start, None when it does (or the generic fit test decides)
    available_kv_bytes: int | None
    num_gpu_blocks: int | None
    kv_cache_tokens: int | None
    concurrency: float | int | None
    held_at_once: int | None
    running_limit: int | None
    pool_bytes: int | None
    per_request_bytes: int | None
    estimated_max_model_len: int | None
    replicas: int = 1  # data-parallel engines, each with a pool like this one: the deployment holds replicas x as many


@dataclass(frozen=True)
class EngineEstimate(ContractEstimate):
    """The contract and the terms the paged engines share."""

    engine_version: str
    tp: int
    pp: int
    gpus: int
    available_kv_bytes: int | None
    # the band of a modelled budget: available_kv_bytes minus and plus the measured leave-out error of its terms
    # (docs/engines/calibration.md); equal to available_kv_bytes when it is given (--kv-cache-memory), None without a GPU
    available_kv_bytes_low: int | None
    available_kv_bytes_high: int | None
    # the fit holds at one edge of the band and not at the other: the engine may or may not start / hold `batch`
    marginal: bool | None
    estimated_max_model_len: int | None  # only when seq does not fit
    budget_source: str  # "model" (modelled budget), "--kv-cache-memory", or "none" (no GPU given)
    suggestions: tuple[str, ...]  # filled by engines/fixes.py when it does not fit
    serves_batch: bool | None  # the pool holds `batch` sequences of `seq` at once
    starts: bool | None  # the engine starts and serves one request of `seq` (fits = starts and serves_batch)


@lru_cache(maxsize=4096)
def _kv_bytes_per_token(spec, kv: DType, tp: int, pp: int) -> int:
    """CacheModel(...).kv_bytes_per_token, remembered: searches (kvplan plan, sweep) ask it for the same few layouts
    thousands of times, and building the layer groups is most of an engine estimate's time."""
    return CacheModel(spec, kv, tp, pp).kv_bytes_per_token


def request_terms(req: EngineRequest, kv: DType, *, engine: str, engine_version: str) -> dict[str, Any]:
    """The EngineEstimate fields that follow from the request alone (keyword arguments for the result)."""
    spec, hw = req.spec, req.hardware
    return dict(model=spec.name, engine=engine, seq=req.seq, batch=req.batch, kv_dtype=kv.name,
                dtype=req.weight_fmt.name if req.weight_fmt else (spec.weight_dtype or spec.dtype),
                kv_bytes_per_token=_kv_bytes_per_token(spec, kv, req.tp, req.pp),
                # the text model's count is not the model's when a tower is unknown: no figure rather than a low one
                params=None if spec.weights_unknown and spec.weights_bytes is None else spec.params,
                gpu=hw.name if hw else None, engine_version=engine_version, tp=req.tp, pp=req.pp, gpus=req.tp * req.pp)


def verdict_terms(starts: bool | None, serves: bool | None) -> dict[str, Any]:
    """`fits` (the request shape fits) = the engine starts with `seq` and holds `batch` of them."""
    return dict(fits=None if starts is None else bool(starts and serves), starts=starts, serves_batch=serves)
