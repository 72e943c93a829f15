"""The records of the terms vLLM's launch options add (features.py reads the options and computes them): the
speculative decoding summary, every term of a launch (estimate --json `features`, docs/json.md), and what the
options add to each worker's budget. Their own module, loaded when a launch sets an option: a plain estimate never
builds these classes (benchmarks/cold_start.py). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only
    from kvplan.engines.features import backend as backends, disagg, lora, offload, parallel


@dataclass(frozen=True)
class SpeculativeSummary:
    method: str
    num_speculative_tokens: int
    uses_gpu: bool
    draft: str | None  # the draft model or head
    draft_kv_layers: int  # attention layers the drafter adds to the KV pool
    draft_kv_dtype: str | None
    draft_weights_per_gpu_bytes: int
    lookahead_tokens: int  # KV slots a running request reserves past its tokens (capped at max_model_len)
    decode_requests_per_step: int | None  # max_num_batched_tokens // (1 + k): requests one decode step verifies
    mamba_speculative_blocks: int
    formula: str


@dataclass(frozen=True)
class VllmFeatures:
    """Every extra term a launch's options add, in bytes and tokens (estimate --json `features`; docs/json.md)."""

    options: tuple[str, ...]  # the options in play, as vLLM names them
    speculative: SpeculativeSummary | None
    lora: lora.LoraTerms | None
    weight_offload: offload.WeightOffloadTerms | None
    kv_offload: offload.KvOffloadTerms | None
    parallel: parallel.ParallelTerms | None
    kv_transfer: disagg.TransferTerms | None
    link: disagg.LinkNeed | None
    attention_backend: backends.BackendChoice | None
    weights_added_per_gpu_bytes: int  # draft + LoRA slots - offloaded weights, on the most loaded GPU
    expert_weights_per_gpu_bytes: int | None  # the routed experts' share on one GPU (MoE)
    activation_added_bytes: int
    cuda_graph_added_bytes: int
    host_memory_bytes: int  # pinned host memory one DP replica needs (offloaded weights, KV tiers, LoRA cache, buffers)
    gpus: int  # every GPU of the deployment
    replicas: int  # DP engines, each with its own KV pool
    deployment_concurrency: float | None  # replicas x one pool's concurrency
    deployment_max_batch: int | None  # replicas x the sequences one pool holds at once
    notes: tuple[str, ...]


@dataclass(frozen=True)
class StageTerms:
    """What the options add to one worker (one GPU of a pipeline stage)."""

    weights: int
    activation: int
    graphs: int
    experts: int | None  # the routed experts' bytes on this GPU
    offload: offload.WeightOffloadTerms | None


@dataclass(frozen=True)
class BudgetTerms:
    stages: tuple[StageTerms, ...]
    draft_bytes: int
    draft_how: str
    lora: lora.LoraTerms | None
    parallel: parallel.ParallelTerms
    host_bytes: int  # pinned host memory: offloaded weights and the LoRA adapter cache, one DP replica
