"""The records of SGLang's launch options: SglangOptions, the modelled options a launch sets (features.py `read`
builds it), and the terms they add (features.py computes these): disaggregation, speculative decoding, DP
attention, LoRA, HiCache, and every term of a launch (estimate --json `features`, docs/json.md). Their own module,
loaded when a launch sets an option that has them: reading a launch that sets none never builds these classes
(benchmarks/cold_start.py); `features.SglangOptions` still answers (PEP 562). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only
    from kvplan.core.spec import ModelSpec
    from kvplan.engines.features import disagg as shared_disagg
    from kvplan.engines.features import offload as shared_offload
    from kvplan.engines.features import speculative as shared_spec
    from kvplan.engines.sglang.after_pool import FusionWorkspace

RESERVED_DECODE_TOKENS = 512  # arg_groups/fields/disagg.py num_reserved_decode_tokens


@dataclass(frozen=True)
class SglangOptions:
    """The SGLang options a launch sets that engine.py models, as SGLang resolves them."""

    disaggregation_mode: str | None = None  # prefill | decode
    transfer_backend: str = "mooncake"
    decode_extra_slots: int | None = None  # None: SGLang's default
    decode_radix_cache: bool = False  # --disaggregation-decode-enable-radix-cache
    num_reserved_decode_tokens: int = RESERVED_DECODE_TOKENS
    speculative_algorithm: str | None = None  # as written (upper case): EAGLE | EAGLE3 | NEXTN
    draft_path: str | None = None
    head: shared_spec.EagleHead | None = None  # the draft head's config (EAGLE / EAGLE-3 with a path)
    draft_spec: ModelSpec | None = None  # STANDALONE: the draft model
    draft_layers: int = 0  # layers the draft adds to the pool's cell
    num_steps: int | None = None
    eagle_topk: int | None = None
    num_draft_tokens: int | None = None
    attn_dp_size: int = 1  # attention-DP workers (--enable-dp-attention --dp-size D, or --attn-dp-size D)
    lora_slots: int = 0  # --max-loras-per-batch when LoRA is on; 0: off
    lora_rank: int = 0
    lora_modules: tuple[str, ...] = ()  # normalized: qkv_proj, o_proj, gate_up_proj, down_proj
    hicache: bool = False
    hicache_ratio: float | None = None  # None: the default 2.0, auto-sized against host memory
    hicache_size_gb: int = 0  # --hicache-size (decimal GB); 0: the ratio
    # FlashInfer's all-reduce fusion as SGLang resolves the flags (arg_groups/serving_hook.py _handle_deprecated_args:
    # --enable-flashinfer-allreduce-fusion is backend auto; overrides.py: --enforce-disable-... turns it off); None: off
    fusion_backend: str | None = None
    fusion_flags: tuple[str, ...] = ()  # the fusion's flags the launch gives (each from its own release)
    cpu_offload_bytes: int = 0  # --cpu-offload-gb x 1024**3 per rank; 0: off
    # chunked prefill off (--chunked-prefill-size <= 0): --max-prefill-tokens as given (16,384 when not), which the
    # default fraction's activation reserve reads instead of a chunk; None: chunked prefill on
    unchunked_prefill_tokens: int | None = None
    where: str = "sglang"

    @property
    def eagle3(self) -> bool:
        return self.speculative_algorithm == "EAGLE3"


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
    allreduce_fusion: FusionWorkspace | None  # FlashInfer's fusion workspace, after the pool (engines/sglang/after_pool.py)
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
    staging_gpu_bytes_per_rank: int  # write-back staging on the GPU, after the pool (engines/sglang/after_pool.py)
