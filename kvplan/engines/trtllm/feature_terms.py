"""The records of the terms TensorRT-LLM's launch options add (features.py reads the options and computes them):
speculative decoding, the cache transceiver, the PEFT cache, and every term of a launch (estimate --json
`features`, docs/json.md). Their own module, loaded when a launch sets an option that has them: a plain estimate
never builds these classes (benchmarks/cold_start.py). Pure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpeculativeTerms:
    decoding_type: str  # MTP or EAGLE3
    kv_layers: int  # layers the KV cache manager gains (get_num_spec_layers)
    max_draft_len: int
    extra_kv_tokens: int  # get_num_extra_kv_tokens
    draft: str | None  # the draft head's checkpoint, or the target's own MTP modules
    weights_per_gpu_bytes: int
    formula: str


@dataclass(frozen=True)
class TransceiverTerms:
    backend: str
    max_tokens_in_buffer: int | None
    buffer_bytes: int  # one transfer buffer
    buffers: int  # send + receive
    total_bytes: int  # every buffer of one GPU
    formula: str
    bytes_per_token_per_rank: int = 0  # KV one prompt token sends from one rank (every layer of its manager)
    bytes_per_token: int = 0  # ... from every rank holding the request (TP ranks; one with attention DP)


@dataclass(frozen=True)
class LoraTerms:
    max_lora_rank: int
    max_loras: int
    max_cpu_loras: int | None
    modules: tuple[tuple[str, int], ...]  # (module, in + out elements on one rank)
    page_width: int  # elements
    slots_per_page: int
    device_pages: int
    device_bytes: int  # the device PEFT cache on one GPU
    host_bytes: int  # the host PEFT cache of one rank
    formula: str


@dataclass(frozen=True)
class TrtllmFeatures:
    """Every term the launch options add (estimate --json `features`, docs/json.md)."""

    options: tuple[str, ...]  # the LLM-API options in play
    attention_dp: bool
    kv_head_split: int  # the TP the KV heads are split over (1 with attention DP)
    pools: int  # KV pools of the deployment: one per rank with attention DP, else 1
    speculative: SpeculativeTerms | None
    transceiver: TransceiverTerms | None
    lora: LoraTerms | None
    weights_added_per_gpu_bytes: int  # the drafter's weights, and attention DP's replicated weights
    after_pool_bytes: int  # what is allocated after the pool: the transceiver's buffers, the device PEFT cache
    after_pool_fits: bool | None  # they fit beside the pool and the profiled peak; None without a GPU or without them
    deployment_concurrency: int | None  # pools x one pool's requests of max_seq_len
    notes: tuple[str, ...]
