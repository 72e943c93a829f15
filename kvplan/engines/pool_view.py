"""A paged engine's (vLLM, SGLang, TensorRT-LLM) preallocated pool as `kvplan check` judges it (PoolView), and
the reasons it does not start (engines/start_problems.py, handed out here too). Built by the engines'
`pool_view()` (check, plan), never by an estimate: its own module, so an estimate does not create these classes at
start-up (benchmarks/cold_start.py); engines/pool.py hands the names out too. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan.engines import lazy

if TYPE_CHECKING:
    from kvplan.engines.start_problems import NoKvMemory as NoKvMemory
    from kvplan.engines.start_problems import PoolTooShort as PoolTooShort
    from kvplan.engines.start_problems import Refused as Refused
    from kvplan.engines.start_problems import RequestTooLong as RequestTooLong
    from kvplan.engines.start_problems import StartProblem as StartProblem
else:  # built only when a launch does not start: loaded then (PEP 562), so a check that passes never makes them
    __getattr__ = lazy.module_getattr(__name__, {name: "kvplan.engines.start_problems" for name in (
        "NoKvMemory", "RequestTooLong", "Refused", "PoolTooShort", "StartProblem")})


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
