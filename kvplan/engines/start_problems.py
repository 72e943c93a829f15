"""Why a paged engine (vLLM, SGLang, TensorRT-LLM) does not start: the StartProblem records a PoolView carries.
Built only for a launch that does not start (check, plan): their own module, so judging one that starts does not
create these classes (benchmarks/cold_start.py); engines/pool_view.py and engines/pool.py hand the names out too.
Pure."""

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
