"""Why a paged engine (vLLM, SGLang, TensorRT-LLM) does not start, and its preallocated pool as `kvplan check`
judges it (PoolView). Built by the engines' `pool_view()` (check, plan), never by an estimate: its own module, so an
estimate does not create these classes at start-up (benchmarks/cold_start.py); engines/pool.py hands the names out
too. Pure."""

from __future__ import annotations

from dataclasses import dataclass


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


@dataclass(frozen=True, eq=False, repr=False)
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
