"""torchrun: which shard this process holds, and gathering every rank's outcome on every rank.

torchrun sets RANK, WORLD_SIZE and LOCAL_RANK (and MASTER_ADDR/PORT for the rendezvous). Rank r holds
pipeline stage r // tp and tensor-parallel rank r % tp, as vLLM orders its ranks (TP innermost).
Outcomes are gathered with all_gather_object, so every rank knows the result and exits with the same
code; only rank 0 prints. A rank that fails sends its error instead of a result, so no rank waits
forever on a peer that died.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class DistEnv:
    rank: int
    world_size: int
    local_rank: int


def from_env(environ: Mapping[str, str] | None = None) -> DistEnv | None:
    env = os.environ if environ is None else environ
    try:
        world = int(env.get("WORLD_SIZE", "1"))
        rank = int(env.get("RANK", "0"))
        local = int(env.get("LOCAL_RANK", str(rank)))
    except ValueError:
        return None
    if world <= 1 or "RANK" not in env:
        return None
    return DistEnv(rank=rank, world_size=world, local_rank=local)


@dataclass(frozen=True)
class Outcome:
    """What one rank sends to the others: its result, or the error it raised (one line and exit code)."""

    rank: int
    result: Any = None
    error: str | None = None
    exit_code: int = 0


class Group:
    """An initialised process group; `gather` is collective (every rank must call it once)."""

    def __init__(self, torch, env: DistEnv, device_kind: str):
        self.dist = torch.distributed
        self.env = env
        # NCCL between GPUs; gloo on the CPU (and for meta tensors, which never leave the process)
        backend = "nccl" if device_kind == "cuda" else "gloo"
        if not self.dist.is_initialized():
            self.dist.init_process_group(backend=backend, rank=env.rank, world_size=env.world_size)
        self.backend = backend

    def gather(self, outcome: Outcome) -> list[Outcome]:
        out: list = [None] * self.env.world_size
        self.dist.all_gather_object(out, outcome)
        return sorted(out, key=lambda o: o.rank)

    def close(self) -> None:
        if self.dist.is_initialized():
            self.dist.destroy_process_group()
