"""The records of the terms SGLang's launch options add (features.py reads the options into SglangOptions and
computes these): disaggregation, speculative decoding, DP attention, LoRA, HiCache, and every term of a launch
(estimate --json `features`, docs/json.md). Their own module, loaded when a launch sets an option that has them:
reading a launch that sets none never builds these classes (benchmarks/cold_start.py). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only
    from kvplan.engines.features import disagg as shared_disagg
    from kvplan.engines.features import offload as shared_offload


@dataclass(frozen=True)
class DisaggTerms:
    mode: str  # prefill | decode
    transfer_backend: str
    radix_cache: bool  # the decode server's radix cache (off unless asked for)
    extra_slots: int  # decode: req_to_token rows for requests being received, beyond max_running_requests
    extra_slots_bytes: int | None  # their int32 rows, allocated after the pool is sized (None: page > 1 with drafts)
    reserved_decode_tokens: int  # decode: free tokens a request needs beyond its prompt to be admitted
    bytes_per_token_per_rank: int  # KV one prompt token moves to (or from) one attention-TP rank
    ranks: int  # attention-TP ranks that each receive their shard
    bytes_per_token: int  # every rank together
    link: shared_disagg.LinkNeed | None
    notes: tuple[str, ...]


@dataclass(frozen=True)
class SpeculativeTerms:
    algorithm: str  # as written
    draft: str  # the head's path, or the checkpoint's MTP layers
    num_steps: int
    eagle_topk: int
    num_draft_tokens: int
    draft_layers: int
    target_cell_bytes: int  # the target's bytes per token on one rank
    draft_cell_bytes: int  # what the draft adds to the cell (int(cell x draft_layers / layers))
    draft_weights_per_gpu_bytes: int  # what the draft keeps once it shares the target's embedding (and head)
    draft_duplicates_per_gpu_bytes: int  # its own embedding (and head), resident while the pool is sized, freed after
    max_running_requests_default: int | None  # 48 when the launch gives none
    formula: str


@dataclass(frozen=True)
class SglangFeatures:
    """Every term the modelled SGLang options add (estimate --json `features`; docs/json.md)."""

    options: tuple[str, ...]  # the options in play, as SGLang spells them
    disaggregation: DisaggTerms | None
    speculative: SpeculativeTerms | None
    dp_attention: DpAttentionTerms | None
    lora: LoraTerms | None
    hicache: HiCacheTerms | None
    weight_offload: shared_offload.WeightOffloadTerms | None  # --cpu-offload-gb: what moved to the host, per GPU
    weights_added_per_gpu_bytes: int  # less what --cpu-offload-gb moved
    notes: tuple[str, ...]


@dataclass(frozen=True)
class DpAttentionTerms:
    attn_dp_size: int  # attention-DP workers, each its own pool
    attn_tp_size: int  # ranks one worker's attention is sharded over
    kv_heads_per_rank: int
    cell_bytes: int  # one rank's bytes per token (all its KV heads)
    weights_added_per_gpu_bytes: int  # attention and embedding at attn_tp instead of TP
    max_running_requests_per_worker: int | None
    deployment_max_batch: int | None  # D x the requests one worker's pool holds
    formula: str


@dataclass(frozen=True)
class LoraModule:
    name: str  # qkv_proj, o_proj, gate_up_proj, down_proj
    a_shape: tuple[int, ...]  # one layer's A buffer on one rank
    b_shape: tuple[int, ...]
    bytes_per_gpu: int  # every layer's A and B


@dataclass(frozen=True)
class LoraTerms:
    slots: int  # --max-loras-per-batch
    rank: int
    dtype_bits: int
    layers: int
    modules: tuple[LoraModule, ...]
    gpu_bytes_per_rank: int  # all of them, before the pool is sized


@dataclass(frozen=True)
class HiCacheTerms:
    ratio: float | None  # the ratio applied (None with --hicache-size)
    size_gb: int  # --hicache-size; 0: the ratio
    auto_sized: bool  # neither given: SGLang may lower the ratio to fit the host's free memory
    bytes_per_token: int  # one rank's host cell
    device_tokens: int
    host_tokens: int  # one rank's host pool (every rank of the TP group holds its shard of the same tokens)
    host_bytes_per_rank: int
    ranks: int
    host_bytes: int  # every rank of the deployment (per host: divide by the nodes)
