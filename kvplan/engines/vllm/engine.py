"""vLLM (v1 engine): what `vllm serve` will make of a model and its flags. Pure.

Mirrors the release line of `--engine-version` (kvplan/engines/vllm/releases.py: 0.10 ... 0.33, default the
newest); docs/engines/vllm.md gives every rule with the vLLM file and function it was read from. In short:

- per-layer page (one block of B tokens): B x KV heads per TP rank x (head_dim + v_head_dim) x dtype bytes
  for full, sliding and chunked-local attention; B x (kv_lora_rank + qk_rope_head_dim) x dtype bytes for MLA
  (not split by TP); the recurrent state for Mamba / linear attention, padded to the attention page in hybrids,
  whose attention block grows until one page holds a state (until 0.19: model_executor/models/config.py
  HybridAttentionMambaModelConfig, 16-token steps; 0.20+: platforms/interface.py _align_hybrid_block_size,
  64-token steps for Qwen3-Next / Qwen3.5 GDN layers under FlashInfer's GDN prefill with prefix caching in 0.33);
- layers are grouped (v1/core/kv_cache_utils.py get_kv_cache_groups): one group when every layer is alike;
  otherwise one bucket per layer spec, a group size of the smallest bucket (0.12+: the largest when it is < 1.25x,
  0.18+ < 1.5x the smallest), buckets split into groups of that size and padded ("Add N padding layers");
- one pool: num_gpu_blocks = available // (group size x page), the minimum over workers (PP stages);
- a request of max_model_len M needs, per group, cdiv(M, B) blocks (full, MLA), cdiv(min(W - 1 +
  tokens in flight, M), B) + 1 (sliding window W), cdiv(min(C + tokens in flight, M), B) (chunked-local
  attention of chunk C, Llama 4; charged the whole length in 0.10.1-0.13), 1 (Mamba; with prefix caching, on by
  default for hybrids from 0.26, 2, and 3 for GDN layers that export prefill checkpoints in 0.33);
- logged: "GPU KV cache size: N tokens" (until 0.19: num_gpu_blocks // groups x B; 0.20+: int(concurrency x M)),
  "Maximum concurrency for M tokens per request: X.XXx" (num_gpu_blocks / blocks per request), or the
  does-not-fit error with the estimated maximum model length (binary search; 0.29+ keep one block back).

The budget (`available`) is modelled in budget.py unless --kv-cache-memory gives it; a modelled budget carries a
band (available_kv_bytes_low / _high) from the measured leave-out error of its terms; on ROCm (MI300X-class) the
release's ROCm paths apply (releases.on_rocm) and the terms the source does not settle widen the band (budget.py).
vLLM on GPUs whose memory the host shares (GH200, GB200, DGX Spark) is not predicted (exit 3) unless the budget
is given.

What the contract's fields mean here: `starts` says whether vLLM would start and serve one request of
max_model_len (`seq`); `max_batch` is how many sequences of `seq` tokens the pool holds at once, the null
block left out ((num_gpu_blocks - 1) // blocks per request), capped at max_num_seqs; `fits` = `starts` and
`batch` <= `max_batch` (docs/json.md: "whether the request shape fits"; the same as `starts` at --batch 1, the
default); `max_seq` is the longest max_model_len at which vLLM starts and holds `batch` such sequences,
capped at the model's context; `marginal` says the verdict differs at the two edges of the band.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from kvplan.core.cache import kv_heads_per_rank, layer_state_bytes, layer_token_bytes, pp_layer_counts
from kvplan.core.dtypes import DType, dtype
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.spec import ModelSpec
from kvplan.core.units import MAX_TOKENS
from kvplan.engines import driver, lazy
from kvplan.engines.paged import cdiv, kv_dtype, longest, model_dtype
from kvplan.engines.api import FLOAT_WEIGHTS, EngineRequest, refuse_unread_options
from kvplan.engines.pool import EngineEstimate, request_terms, verdict_terms
from kvplan.engines.result import PerGpu
from kvplan.engines.runtime import unified as unified_memory
from kvplan.engines.runtime.logs import vllm_format_gib
from kvplan.engines.runtime.weights import format_assumption, model_weights
from kvplan.engines.vllm import budget as budget_model
from kvplan.engines.vllm import features as vfeat
from kvplan.engines.vllm import gpu_dtypes
from kvplan.engines.vllm import kv_formats
from kvplan.engines.vllm.kv_formats import KV_DTYPES
from kvplan.engines.vllm import releases
from kvplan.engines.vllm import specs as vspecs
from kvplan.engines.vllm.specs import MAMBA, PageSpec
from kvplan.engines.vllm.budget import VllmBudget
from kvplan.engines.vllm.releases import Release
from kvplan.model.catalog import find_gpu
from kvplan.engines.lazy import deferred

if TYPE_CHECKING:
    from kvplan.engines import pool_view as view_types
    from kvplan.engines.pool_view import PoolView, StartProblem
else:  # why it does not start and the pool as check judges it: built by pool_view() only (check, plan)
    view_types = lazy.module("kvplan.engines.pool_view")

# `vllm serve`'s option table of a release (serve_args.py, with argparse and its JSON tables): a packed
# --kv-cache-dtype asks it for the release's choices; a plain one never loads it (benchmarks/cold_start.py)
_release_options = deferred("kvplan.engines.vllm.serve_args", "options")

ENGINE_VERSION = "vLLM v1 engine, release lines 0.10-0.33 (--engine-version; default the newest)"
DEFAULT_BLOCK_SIZE = 16  # config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE (every release line)

# Architectures whose linear-attention layers are vLLM 0.33's QwenGatedDeltaNetAttention
# (model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py), the one Mamba layer that exports prefill
# checkpoints; with FlashInfer's GDN prefill their offsets are multiples of 64 tokens
# (v1/attention/backends/gdn_attn.py FLASHINFER_GDN_CHECKPOINT_ALIGNMENT).
GDN_CHECKPOINT_ARCHITECTURES = frozenset({"Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM",
                                          "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                                          "InternS2MobiusForConditionalGeneration"})
GDN_CHECKPOINT_ALIGNMENT = 64
# qwen_gdn_linear_attn.py _resolve_gdn_prefill_backend: FlashInfer's GDN prefill on Hopper (SM90) always, on
# Blackwell (SM100/SM120) only with head_k_dim 128 and a CUDA runtime >= 13; Triton elsewhere (Ampere, Ada,
# Turing, Volta; ROCm picks Triton or AITER FlyDSL, neither exports checkpoints). By the catalog's architecture.
GDN_FLASHINFER_ARCHITECTURES = frozenset({"hopper"})
GDN_TRITON_ARCHITECTURES = frozenset({"volta", "turing", "ampere", "ada", "cdna2", "cdna3"})


@dataclass(frozen=True)
class KvCacheGroup:
    """One of vLLM's KV-cache groups (layers sharing a block table), sized for one GPU of stage 0."""

    kind: str  # full | sliding | chunked | mla | mamba
    window: int | None  # sliding window, or the chunk of chunked-local attention
    layers: int  # real layers in this group (whole model)
    padding_layers: int  # empty slots: group size - layers
    block_size: int  # tokens per block for this group's layers
    page_bytes: int  # one layer, one block, one GPU
    blocks_per_request: int  # blocks one request of max_model_len takes in this group


@dataclass(frozen=True)
class VllmWorker:
    """One GPU of each pipeline stage (the TP ranks of a stage are alike)."""

    stage: int
    layers: int
    group_size: int  # layer slots per group on this worker
    bytes_per_block: int
    available_kv_bytes: int
    num_blocks: int  # this worker's own count, before the minimum over workers
    needed_kv_bytes: int  # for one request of max_model_len
    fits: bool
    estimated_max_model_len: int | None
    budget: VllmBudget | None


@dataclass(frozen=True)
class VllmEstimate(EngineEstimate):
    """kv_bytes: what vLLM reserves for `batch` requests of `seq`: whole blocks, padding slots, every GPU;
    available_kv_bytes and bytes_per_block: of the worker that sizes the pool; budget_source "model" is
    budget.py."""

    vllm_version: str  # the release line whose rules applied ("0.18-0.19")
    vllm_release: str  # the release they were applied for ("0.19.1")
    block_size: int
    max_num_batched_tokens: int
    max_num_seqs: int
    gpu_memory_utilization: str | None
    kv_cache_groups: tuple[KvCacheGroup, ...]
    padding_layers: int
    padding_warnings: tuple[str, ...]
    group_size: int
    bytes_per_block: int | None
    blocks_per_request: int
    num_gpu_blocks: int | None
    kv_cache_tokens: int | None
    max_concurrency: float | None  # num_gpu_blocks / blocks_per_request (vLLM prints it "%.2f")
    requested_bytes: int | None
    weights_per_gpu_bytes: int | None
    activation_peak_bytes: int | None
    non_torch_bytes: int | None
    cuda_graph_bytes: int | None
    cuda_graph_subtracted: bool | None
    moe_workspace_bytes: int | None  # the fused-MoE workspace inside activation_peak_bytes
    budget_uncertainty_bytes: int | None  # the band's half width (available_kv_bytes_low / _high)
    budget_edge: str | None  # "low" / "high": the pool was sized at that edge of the band (check's pessimistic view)
    # --kv-cache-memory-bytes that makes vLLM's pool exactly num_gpu_blocks (None: the release has no such option or
    # the budget is not modelled), whether weights + activations + non-torch + graphs fit beside it on every GPU, and
    # the bytes to spare on the tightest
    pinned_kv_cache_memory_bytes: int | None
    pinned_fits_beside: bool | None
    pinned_spare_bytes: int | None
    workers: tuple[VllmWorker, ...]
    log_lines: tuple[str, ...]  # what vLLM would log about the cache
    refusal: str | None  # why vLLM refuses to start although the pool would hold the request, in its terms
    features: vfeat.VllmFeatures | None  # the terms of the launch's extra options (null when it sets none)
    # --max-model-len auto: the length vLLM picks (seq is that length; 0: it cannot fit one token and does not
    # start), and the lengths it picks at the low and high edges of the budget's band (None: not an auto launch)
    auto_max_model_len: int | None = None
    auto_max_model_len_low: int | None = None
    auto_max_model_len_high: int | None = None

    def pool_view(self) -> PoolView | None:
        if self.available_kv_bytes is None:
            return None
        problem: StartProblem | None = None
        if not self.fits:
            failing = next((w for w in self.workers if not w.fits), None)
            if any(w.available_kv_bytes <= 0 for w in self.workers):
                problem = view_types.NoKvMemory()
            elif failing is not None:
                problem = view_types.RequestTooLong(failing.needed_kv_bytes, failing.available_kv_bytes,
                                                    failing.estimated_max_model_len)
            elif self.refusal is not None:
                problem = view_types.Refused(self.refusal)
        blocks, bpb = self.num_gpu_blocks, self.bytes_per_block
        return view_types.PoolView(
            problem=problem, available_kv_bytes=self.available_kv_bytes, num_gpu_blocks=blocks,
            kv_cache_tokens=self.kv_cache_tokens, concurrency=self.max_concurrency,
            # block 0 is vLLM's null block (v1/core/block_pool.py), which no request can take: a pool of exactly k
            # requests' blocks logs k.00x and holds k - 1 at once
            held_at_once=(blocks - 1) // self.blocks_per_request if blocks is not None else None,
            running_limit=self.max_num_seqs,
            pool_bytes=blocks * bpb if blocks is not None and bpb is not None else None,
            per_request_bytes=self.blocks_per_request * bpb if bpb is not None else None,
            estimated_max_model_len=self.estimated_max_model_len,
            replicas=self.features.replicas if self.features is not None else 1)


def refusal(b: VllmBudget, *, multi_gpu: bool) -> str:
    """vLLM's start-up refusal when the memory free at the init snapshot is below the memory asked for
    (v1/worker/utils.py request_memory)."""
    in_use = f" and the {b.memory_in_use_bytes:,} B already in use" if b.memory_in_use_bytes else ""
    return (f"vLLM refuses to start: {b.gpu_memory_utilization} x {b.total_bytes:,} B requested is more than the "
            f"{b.total_bytes - b.context_bytes - b.memory_in_use_bytes:,} B free after the CUDA context"
            + (" and NCCL" if multi_gpu else "") + in_use
            + " (\"Free memory on device ... is less than desired GPU memory utilization\")")


def read_kv_dtype(req: EngineRequest) -> DType:
    """The request's --kv-cache-dtype as vLLM reads it (config/cache.py CacheDType); the packed formats (per-token-
    head scales, NVFP4) where the release and the GPU take them (kvplan/engines/vllm/kv_formats.py)."""
    name = (req.kv_dtype or "auto").strip().lower()
    if name in kv_formats.KNOWN:
        rel = releases.release(req.engine_version)
        facts = req.hardware.facts if req.hardware is not None else None
        attention = [layer for layer in req.spec.layer_specs if layer.headed]
        kv_formats.check(name, version=rel.version, accepted=_release_options(rel.version)["kv_cache_dtype"].choices,
                         capability=facts.compute_capability if facts is not None and not facts.rocm else None,
                         rocm=bool(facts is not None and facts.rocm),
                         head_size=attention[0].head_dim if attention else None,
                         mla=vspecs.any_latent(req.spec.layer_specs),
                         windowed=vspecs.any_windowed(req.spec.layer_specs))
        return dtype(name, what="KV dtype")
    return kv_dtype(req, KV_DTYPES, engine="vLLM", flag="--kv-cache-dtype")


# --------------------------------------------------------------------------------------------- layers

@dataclass(frozen=True)
class _Layout:
    block_size: int
    specs: dict[int, PageSpec]  # layer index -> spec (layers without a cache are absent)
    groups: list[tuple[PageSpec, list[int]]]  # global groups: spec and layer indices
    uniform_type: bool  # one group holding per-layer pages of one kind (UniformTypeKVCacheSpecs)
    padding_warnings: list[str]
    padding_layers: int
    notes: list[str]


def _layer_specs(req: EngineRequest, kv: DType, block_size: int, rel: Release,
                 fplan: vfeat.Plan) -> tuple[int, dict[int, PageSpec], list[str]]:
    """Every layer of the pool (the target's, then the drafter's: kvplan/engines/vllm/features.py Plan) as vLLM
    specs it, each with its own KV dtype (--kv-cache-dtype-skip-layers)."""
    spec, tp = fplan.spec, req.tp
    notes: list[str] = []
    attn = [c for c in fplan.cache_layers if vspecs.rule(c.layer).tokens]
    state = [c for c in fplan.cache_layers if vspecs.rule(c.layer).state]
    for c in attn:
        if c.layer.headed:
            kv_heads_per_rank(c.layer.kv_heads, tp)  # vLLM's divisibility rule, raises InputError
    mamba_page = max((layer_state_bytes(c.layer, tp) for c in state), default=0)
    held, checkpoint = 1, None
    if state:
        held, checkpoint, mode_notes = _mamba_cache_mode(req, rel, hybrid=bool(attn))
        notes += mode_notes
        held += fplan.mamba_speculative_blocks  # num_speculative_blocks (model_executor/layers/mamba/abstract.py)
    if state and attn:
        # HybridAttentionMambaModelConfig (0.19) / Platform._align_hybrid_block_size (0.33): the attention
        # block grows to a multiple of the kernel alignment until one attention page holds a Mamba state.
        first = attn[0]
        per_token = layer_token_bytes(first.layer, first.kv, tp)
        align = rel.hybrid_mla_alignment if vspecs.rule(first.layer).latent else 16
        if rel.hybrid_align_to_block_size:
            align = max(align, block_size)
            if checkpoint:  # mamba_cache_mode "align": blocks also land on the prefill checkpoints
                align = math.lcm(align, checkpoint)
        needed = align * cdiv(mamba_page, align * per_token)
        if block_size < needed:
            notes.append(f"vLLM raises the attention block size from {block_size} to {needed} tokens so that one "
                         f"attention page ({needed} x {per_token:,} B) holds a Mamba state ({mamba_page:,} B)"
                         + (f"; {needed} is a multiple of {align} because the GDN prefill checkpoints land on "
                            f"{checkpoint}-token boundaries" if checkpoint else ""))
            block_size = needed
        mamba_page = block_size * per_token  # "Padding mamba page size by X%"
    specs: dict[int, PageSpec] = {}
    chunked_as_full = not rel.chunked_local_hybrid and vspecs.any_chunked(c.layer for c in attn)
    if chunked_as_full:
        notes.append(f"vLLM {rel.version} turns its hybrid KV cache manager off for chunked-local attention "
                     "(VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to 0 in 0.10.1-0.13): those layers "
                     "are charged the whole max_model_len")
    for c in attn:
        specs[c.index] = vspecs.attention_spec(c.layer, block_size=block_size,
                                               page=block_size * layer_token_bytes(c.layer, c.kv, tp),
                                               shards=fplan.token_shards, all_full=fplan.hybrid_manager_off,
                                               chunked_as_full=chunked_as_full)
    if state:
        if any(layer_state_bytes(c.layer, tp) != layer_state_bytes(state[0].layer, tp) for c in state) and attn:
            raise UnsupportedError("Mamba layers with different state sizes in one hybrid model are not modelled",
                                   where=f"{spec.source or spec.name}: state")
        # pure Mamba: block_size = mamba_block_size = max_model_len when prefix caching is off
        mamba_block = block_size if attn else req.seq
        for c in state:
            specs[c.index] = PageSpec(MAMBA, None, mamba_block, mamba_page if attn else layer_state_bytes(c.layer, tp), held)
    if fplan.hybrid_manager_off and vspecs.any_windowed(c.layer for c in attn):
        notes.append("the hybrid KV cache manager is off: sliding-window and chunked layers are charged the whole "
                     "max_model_len")
    return block_size, specs, notes


def _mamba_cache_mode(req: EngineRequest, rel: Release, *, hybrid: bool) -> tuple[int, int | None, list[str]]:
    """(state blocks a request holds, prefill-checkpoint alignment or None, notes) for the Mamba layers.

    Prefix caching decides vLLM's mamba_cache_mode (model_executor/models/config.py MambaModelConfig): off, mode
    "none", one state block a request; on, mode "align", 2 + num_prefill_checkpoint_blocks
    (v1/kv_cache_interface.py MambaSpec.max_memory_usage_bytes). By default it is on for hybrid models in 0.33
    and off in 0.19 (config/model.py ModelConfig.is_prefix_caching_supported: "hybrid"), off for pure Mamba in
    both ("attention_free")."""
    default = hybrid and rel.hybrid_prefix_caching
    on = default if req.prefix_caching is None else req.prefix_caching
    if not on:
        return 1, None, []
    if not hybrid or not rel.hybrid_prefix_caching:
        raise UnsupportedError(f"Mamba prefix caching (mamba_cache_mode align) on {'vLLM ' + rel.line if hybrid else 'a pure Mamba model'}"
                               " is not modelled", where="--enable-prefix-caching",
                               hint="judge it without prefix caching")
    notes = []
    checkpoint = None
    if rel.gdn_prefill_checkpoints and req.spec.architecture in GDN_CHECKPOINT_ARCHITECTURES:
        name = req.hardware.name if req.hardware is not None else None
        arch = find_gpu(name).architecture if name else None
        if arch not in GDN_TRITON_ARCHITECTURES:
            # QwenGatedDeltaNetAttention exports prefill checkpoints with FlashInfer's GDN prefill: one more
            # state block a request (num_prefill_checkpoint_blocks = 1) and 64-token block alignment
            checkpoint = GDN_CHECKPOINT_ALIGNMENT
            if arch not in GDN_FLASHINFER_ARCHITECTURES:
                notes.append(f"assumed FlashInfer's GDN prefill (Hopper; Blackwell with CUDA >= 13) for "
                             f"{name or 'this GPU'}: with Triton's (Ampere, Ada, ROCm) vLLM aligns the block to 16 "
                             "tokens, not 64, and holds 2 state blocks a request, not 3")
    held = 2 + (1 if checkpoint else 0)
    notes.append(f"prefix caching is on{' (vLLM ' + rel.line + ' default for hybrid models)' if req.prefix_caching is None else ''}:"
                 f" mamba_cache_mode align keeps {held} Mamba state blocks a request, not 1")
    return held, checkpoint, notes


def _default_block_size(req: EngineRequest, rel: Release) -> tuple[int, list[str]]:
    """The block size vLLM picks when --block-size is not given: 16, except MLA models, whose attention backend
    decides by GPU (platforms/cuda.py; releases.Release.mla_block_hopper / mla_block_sm10x)."""
    if not vspecs.any_latent(req.spec.layer_specs):
        return DEFAULT_BLOCK_SIZE, []
    facts = req.hardware.facts if req.hardware is not None else None
    cc = facts.compute_capability if facts is not None else None
    if cc is None:
        return DEFAULT_BLOCK_SIZE, ["MLA: no GPU named, block size 16 assumed; on Hopper vLLM 0.10-0.17 picks FlashMLA "
                                    "(64), on SM10x CUTLASS / FlashInfer MLA (128 / 64 / 32 by release): give --gpu or "
                                    "--block-size"]
    major = int(cc.split(".")[0]) if not cc.startswith("gfx") else None
    if major == 9:
        size = rel.mla_block_hopper
        why = "FlashMLA (64 tokens)" if size == 64 else "FLASH_ATTN_MLA, first on Hopper (16)"
    elif major == 10:
        size = rel.mla_block_sm10x
        why = {128: "CUTLASS MLA (128 tokens)", 64: "FlashInfer MLA (64 tokens)", 32: "FlashInfer MLA (32 tokens)"}[size]
    else:
        return DEFAULT_BLOCK_SIZE, []
    return size, [f"MLA on {req.hardware.name}: vLLM {rel.version} picks {why} unless told otherwise "
                  "(platforms/cuda.py); pass --block-size if your attention backend differs"]


def _layout(req: EngineRequest, kv: DType, rel: Release, fplan: vfeat.Plan) -> _Layout:
    block_notes: list[str]
    if req.block_size or fplan.block_size:  # --block-size, or the one the launch's attention backend forces
        block_size, block_notes = req.block_size or fplan.block_size, []
    else:
        block_size, block_notes = _default_block_size(req, rel)
    block_size, specs, notes = _layer_specs(req, kv, block_size, rel, fplan)
    notes = block_notes + notes
    if not specs:
        raise UnsupportedError("the model has no layer with a KV cache or state; vLLM treats it as attention-free",
                               where=req.spec.source or req.spec.name)
    order = sorted(specs)
    distinct = {specs[i] for i in order}
    if len(distinct) == 1:
        return _Layout(block_size, specs, [(specs[order[0]], order)], False, [], 0, notes)
    families = {(s.family, s.window) for s in distinct}
    if len(families) == 1 and len({s.block_size for s in distinct}) == 1:
        if not rel.uniform_type_groups:
            raise UnsupportedError(f"vLLM {rel.version} has no KV-cache group for layers of one kind with different page "
                                   "sizes (UniformTypeKVCacheSpecs came in 0.11; 0.10 raises NotImplementedError)",
                                   where=req.spec.source or req.spec.name, hint="judge it as vLLM 0.11 or newer")
        # UniformTypeKVCacheSpecs: one group; a block holds every layer's own page
        return _Layout(block_size, specs, [(specs[order[0]], order)], True, [], 0, notes)
    # hybrid: unify page sizes (kv_cache_utils.py unify_kv_cache_spec_page_size, 0.12+; 0.10-0.11 need them equal)
    top = max(s.page for s in distinct)
    unified: dict[PageSpec, PageSpec] = {}
    for s in distinct:
        if s.page == top:
            unified[s] = s
        elif top % s.page == 0 and not s.state and rel.page_unification != "equal":
            unified[s] = dataclasses.replace(s, block_size=s.block_size * (top // s.page), page=top)
        elif rel.pads_uneven_pages and s.pads_page:
            unified[s] = dataclasses.replace(s, page=top)  # 0.33 pads the page instead
        else:
            raise UnsupportedError(f"vLLM {rel.version} cannot unify KV pages of {s.page:,} and {top:,} bytes in one "
                                   "model (NotImplementedError in get_kv_cache_config / unify_kv_cache_spec_page_size)",
                                   where=req.spec.source or req.spec.name)
    specs = {i: unified[specs[i]] for i in order}
    buckets: dict[PageSpec, list[int]] = {}
    for i in order:
        buckets.setdefault(specs[i], []).append(i)
    sizes = [len(v) for v in buckets.values()]
    group_size = min(sizes)
    if rel.group_size_max_within is not None and max(sizes) < rel.group_size_max_within * min(sizes):
        group_size = max(sizes)
    groups, warnings, padding = [], [], 0
    for s, layers in buckets.items():
        pad = group_size - len(layers) % group_size
        if pad != group_size:
            warnings.append(f"Add {pad} padding layers, may waste at most {pad / len(layers) * 100:.2f}% KV cache memory")
            padding += pad
        k = cdiv(len(layers), group_size)
        for j in range(k):
            groups.append((s, layers[j::k]))
    return _Layout(block_size, specs, groups, False, warnings, padding, notes)


# --------------------------------------------------------------------------------------------- workers

@dataclass(frozen=True)
class _WorkerShape:
    stage: int
    layers: int
    group_size: int
    bytes_per_block: int


def _worker_shapes(layout: _Layout, counts: list[int]) -> list[_WorkerShape]:
    out, start = [], 0
    for stage, n in enumerate(counts):
        on = range(start, start + n)
        if layout.uniform_type:
            layer_ids = [i for i in layout.groups[0][1] if i in on]
            bpb = sum(layout.specs[i].page for i in layer_ids)
            size = len(layer_ids)
        else:
            size = max(sum(1 for i in layers if i in on) for _, layers in layout.groups)
            bpb = size * layout.groups[0][0].page
        out.append(_WorkerShape(stage, n, size, bpb))
        start += n
    return out


def _blocks_per_request(layout: _Layout, max_model_len: int, in_flight: int) -> int:
    if layout.uniform_type:
        return max(layout.specs[i].blocks(max_model_len, in_flight) for i in layout.groups[0][1])
    return sum(s.blocks(max_model_len, in_flight) for s, _ in layout.groups)


def _in_flight(rel: Release, mnbt: int, pp: int) -> int:
    """Tokens scheduled but not settled, which sliding layers keep beyond the window: max_num_batched_tokens
    until 0.25; max_concurrent_batches x max_num_batched_tokens from 0.26 (config/vllm.py max_in_flight_tokens): the
    V1 model runner with async scheduling (on by default from 0.14, off with PP) runs 2 batches at PP 1, else PP;
    the V2 model runner (0.29+ default) pp + 1."""
    if rel.in_flight == "v2_async":
        return (pp + 1) * mnbt
    if rel.in_flight == "v1_async":
        return (2 if pp == 1 else pp) * mnbt
    return mnbt


# --------------------------------------------------------------------------------------------- estimate

def _check_device(req: EngineRequest, rel: Release) -> None:
    """Devices whose budget kvplan does not predict (exit 3), unless --kv-cache-memory gives the budget."""
    facts = req.hardware.facts if req.hardware is not None else None
    if facts is None or req.kv_cache_memory is not None:
        return
    if not facts.unified_memory or _in_use_given(req) or host_share_for(req, rel) is not None:
        return
    if unified_memory.shares_with_host(facts):
        raise UnsupportedError(
            f"{facts.name} shares its memory with the host and vLLM {rel.version} reads its free memory from "
            "cudaMemGetInfo, which leaves the host's reclaimable page cache out (psutil's available memory from 0.12): "
            "what it finds free depends on the page cache at start, which the public readings kvplan holds do not "
            "cover", where="--gpu",
            hint="give --gpu-reserved SIZE (total - free as this vLLM logs it at start) or --kv-cache-memory SIZE, or "
                 "judge it with vLLM 0.12 or newer")
    # a Grace superchip (GH200): the discrete budget on its HBM, once the launch says what the host holds there
    raise UnsupportedError(
        f"{facts.name}: vLLM sizes its budget from the HBM's total ({req.hardware.capacity_bytes / 2**30:.2f} GiB) as "
        f"on a discrete GPU but starts only if that much is free; {unified_memory.superchip_reason('vLLM')}",
        where="--gpu", hint="give --gpu-reserved SIZE (total - free as vLLM logs it at start: 'Free memory on device "
                            "(F/T GiB)') or --kv-cache-memory SIZE, or a site profile fitted by kvplan calibrate on "
                            "one of this machine's logs")


def _in_use_given(req: EngineRequest) -> bool:
    """Whether the launch says what is in use before vLLM starts: --gpu-reserved (0 included) or a site profile's."""
    return req.gpu_reserved_bytes is not None or bool(req.site is not None and req.site.memory_in_use_bytes)


def host_share_for(req: EngineRequest, rel: Release) -> unified_memory.HostShare | None:
    """The host's share of an integrated GPU's pool (DGX Spark), as the public readings bound it, when the launch does
    not give it and the release reads free memory as they did (psutil, 0.12+); None otherwise. vLLM's budget is a
    fraction of the total, so the share moves only its start check (free at the snapshot >= requested)."""
    facts = req.hardware.facts if req.hardware is not None else None
    if (facts is None or not unified_memory.shares_with_host(facts) or _in_use_given(req)
            or rel.integrated_free != "psutil"):
        return None
    return unified_memory.in_use_range()


def _gpu_refusal(req: EngineRequest, rel: Release) -> str | None:
    """Why vLLM does not start on this GPU generation: a dtype, quantization or KV format it does not run there
    (kvplan/engines/vllm/gpu_dtypes.py); None without a catalog NVIDIA GPU (--gpu-mem names no generation)."""
    facts = req.hardware.facts if req.hardware is not None else None
    if facts is None or facts.rocm:
        return None
    fmt = req.weight_fmt.name if req.weight_fmt is not None else None
    explicit = fmt if fmt in FLOAT_WEIGHTS else req.activation_dtype
    return gpu_dtypes.refusal(version=rel.version, capability=facts.compute_capability,
                              explicit_dtype=explicit, checkpoint_dtype=req.spec.dtype,
                              architecture=req.spec.architecture,
                              method=gpu_dtypes.quant_method(req.spec.quant_method, req.spec.weight_dtype, fmt),
                              kv_spelled=req.kv_dtype or "auto", mla=vspecs.any_latent(req.spec.layer_specs))


def release_for(req: EngineRequest) -> releases.Release:
    """The rules of the request's vLLM release under the environment it gives (--engine-option, a deployment's
    environment): whether the CUDA-graph estimate leaves the budget, which sampler the profile warms up, and which
    entry point's scheduler defaults apply (`vllm serve` or the offline LLM class); on ROCm the release's ROCm paths
    (releases.on_rocm: no FlashInfer sampler, no graph estimate before 0.26)."""
    facts = req.hardware.facts if req.hardware is not None else None
    rocm = facts is not None and facts.rocm
    rel = releases.with_environment(releases.release(req.engine_version),
                                    graph_estimate=req.option(releases.GRAPH_ESTIMATE_OPTION),
                                    flashinfer_sampler=None if rocm else req.option(releases.FLASHINFER_SAMPLER_OPTION),
                                    entry=req.option(releases.ENTRY_POINT_OPTION),
                                    v2_runner=req.option(releases.V2_RUNNER_OPTION),
                                    compile_state=req.option(releases.COMPILE_CACHE_OPTION))
    rel = dataclasses.replace(rel, model_runner=_runner(req, rel, rocm))
    return releases.on_rocm(rel, releases.aiter_flag(req.option(releases.ROCM_AITER_OPTION))) if rocm else rel


def _runner(req: EngineRequest, rel: releases.Release, rocm: bool) -> str:
    """The model runner the launch gets (releases.RUNNER_*: config/vllm.py VllmConfig.use_v2_model_runner, 0.28.0 and
    0.29.0-0.33.0): VLLM_USE_V2_MODEL_RUNNER where given, else the line's rule for this model and launch."""
    if rel.model_runner == releases.RUNNER_V1:
        return releases.RUNNER_V1
    if rel.v2_runner_env is not None:
        return releases.RUNNER_V2 if rel.v2_runner_env else releases.RUNNER_V1
    spec = req.spec
    speculative = req.features.speculative if req.features is not None else None
    if speculative is not None and speculative.method in rel.v2_runner_v1_methods:
        return releases.RUNNER_V1
    if rel.model_runner == releases.RUNNER_V2_DENSE:
        default_arch = spec.architecture in releases.V2_DEFAULT_ARCHITECTURES_028
        if spec.state is not None and not default_arch:  # a hybrid (Mamba / linear-attention layers)
            return releases.RUNNER_V1
        return releases.RUNNER_V2 if default_arch or spec.moe is None else releases.RUNNER_V1
    if rocm and spec.architecture in releases.ROCM_V1_RUNNER_ARCHITECTURES:
        return releases.RUNNER_V1
    return releases.RUNNER_V2


def budgets_for(req: EngineRequest, constants: budget_model.Constants = budget_model.FITTED,
                notes: list[str] | None = None, spec: ModelSpec | None = None,
                multicast: bool = True, host_growth: bool = False) -> tuple[VllmBudget, ...]:
    """The modelled budget of one GPU per pipeline stage for a request with a GPU, resolved as estimate resolves it
    (the release's defaults for the scheduler limits and the utilization; the site profile's terms). `constants`
    other than the fitted ones serve the benchmark's leave-one-log-out fits; `multicast` False: the machine's NVLink
    has no multicast (budget.MULTICAST_BUFFERS, an open term); `host_growth` True: the host's growth during the profile
    on a unified pool at its ceiling (an open term, runtime/unified.py profile_growth_ceiling)."""
    rel = release_for(req)
    hw = req.hardware
    mnbt, max_seqs = budget_model.resolve_batch_limits(req.max_num_batched_tokens, req.max_num_seqs, req.seq,
                                                        hw.capacity_bytes, hw.name, rel)
    util = req.gpu_util if req.gpu_util is not None else rel.default_gpu_util
    site = req.site if req.site is not None and req.site.engine in (None, "vllm") else None
    return budget_model.vllm_budgets(spec or req.spec, weight_fmt=req.weight_fmt, model_dtype=model_dtype(req), tp=req.tp,
                                     pp=req.pp, total_bytes=hw.capacity_bytes, util=util, max_num_batched_tokens=mnbt,
                                     max_num_seqs=max_seqs, release=rel, gpu=hw.facts, site=site, constants=constants,
                                     expert_parallel=req.expert_parallel, gpu_reserved=_reserved(req, rel),
                                     cuda_graphs=not (req.features is not None and req.features.enforce_eager),
                                     multicast=multicast, notes=notes,
                                     host_growth=rel.integrated_free if host_growth else None)


def _reserved(req: EngineRequest, rel: Release) -> int:
    """Memory in use before vLLM starts beside the site profile's: --gpu-reserved, or on an integrated GPU whose
    launch does not give it the host's share at the request's band edge (the largest at the low edge)."""
    share = host_share_for(req, rel)
    if share is not None:
        return share.at_edge(req.budget_edge)
    return req.gpu_reserved_bytes or 0


@dataclass(frozen=True)
class OpenTerm:
    """A budget term the launch leaves open: what it is, how to narrow it, and its other value: environment options
    added to the launch's, or the machine's NVLink without multicast."""

    why: str
    narrow: str  # what the user gives to settle it
    options: tuple[tuple[str, str], ...] = ()
    multicast: bool = True
    host_growth: bool = False  # the host's growth during the profile at its ceiling (unified memory)


def open_terms(req: EngineRequest) -> list[OpenTerm]:
    """Each budget term whose value the launch leaves open, under its other value: a user who does not say cannot be
    judged by one value.
    - VLLM_USE_FLASHINFER_SAMPLER unset on 0.10-0.11: the worker warms FlashInfer's sampler up whenever flashinfer is
      installed (v1/sample/ops/topk_topp_sampler.py; the official image has it), PyTorch's sort otherwise
      (releases.sampler_for).
    - TP over NVLink without a measured non-torch figure: whether the machine has NVLink multicast (NVSwitch with the
      fabric manager) decides NCCL's NVLS and the symmetric-memory all-reduce buffers (budget.MULTICAST_BUFFERS).
    - a unified pool (DGX Spark) without a measured non-torch figure: what the host allocates during the profile is
      non-torch memory to vLLM (runtime/unified.py profile_growth_ceiling), from nothing to the ceiling.
    - torch.compile's cache on 0.29+ (releases.COMPILE_CACHE_OPTION) unless --enforce-eager: warm or cold."""
    rel = release_for(req)
    out = []
    eager = req.features is not None and req.features.enforce_eager
    if rel.compile_cache_open and rel.compile_cache is None and not eager:
        out.append(OpenTerm("whether torch.compile's cache is warm is not given, and on a cold one vLLM "
                            f"{rel.version} compiles inside its profile run, which then holds about "
                            f"{_gib(budget_model.COLD_COMPILE_RETAINED_BYTES + budget_model.COLD_COMPILE_TRANSIENT_BYTES)}"
                            " GiB more (a container without a volume for ~/.cache/vllm starts cold every time): the "
                            "band covers both",
                            f"give --engine-option {releases.COMPILE_CACHE_OPTION}=warm or =cold",
                            options=((releases.COMPILE_CACHE_OPTION, releases.COMPILE_COLD),)))
    if rel.sampler_by_install and req.option(releases.FLASHINFER_SAMPLER_OPTION) is None:
        out.append(OpenTerm(f"{releases.FLASHINFER_SAMPLER_ENV} is not given, and vLLM {rel.version} warms FlashInfer's "
                            "sampler up whenever flashinfer is installed (the official image has it): the band covers "
                            "both samplers",
                            f"give --engine-option {releases.FLASHINFER_SAMPLER_ENV}=0 or 1",
                            options=((releases.FLASHINFER_SAMPLER_OPTION, "1"),)))
    facts = req.hardware.facts if req.hardware is not None else None
    site = req.site if req.site is not None and req.site.engine in (None, "vllm") else None
    measured = site is not None and site.non_torch_for(req.tp, req.pp) is not None
    setup = budget_model.non_torch_setup(req.tp, req.pp, rel, facts.interconnect if facts is not None else None)
    if setup == "nvlink" and not measured and not (facts is not None and facts.rocm):  # NVLink only: not Infinity Fabric
        out.append(OpenTerm("whether the GPUs' NVLink has multicast is not given (NCCL's NVLS buffers and vLLM's "
                            "symmetric-memory all-reduce need it: NVSwitch machines with the fabric manager, not "
                            "bridged pairs, A100s or most VMs): the band covers both",
                            "give a site profile fitted on one start-up log of this machine (kvplan calibrate LOG "
                            "--save FILE, then --calibration FILE)", multicast=False))
    if facts is not None and unified_memory.shares_with_host(facts) and not measured:
        out.append(OpenTerm("the host's memory shares the GPU's here, and what it allocates during vLLM's profile run "
                            "(torch.compile's workers on a cold cache, any other process) counts as vLLM's non-torch "
                            "memory: the band covers none to "
                            f"{_gib(unified_memory.profile_growth_ceiling(rel.integrated_free, 0))} GiB of it"
                            + ("" if rel.integrated_free == "psutil" else " plus the checkpoint's page cache"),
                            "give a site profile fitted on one start-up log of this machine (kvplan calibrate LOG "
                            "--save FILE, then --calibration FILE)", host_growth=True))
    return out


def budget_edges(req: EngineRequest, budgets, *, constants: budget_model.Constants = budget_model.FITTED,
                 spec: ModelSpec | None = None, bterms=None, notes: list[str] | None = None) -> tuple[list[int], list[int]]:
    """The band of each worker's KV memory: the budget's measured error around it, widened to every combination of
    the values of the terms the launch leaves open (open_terms); the verdict is judged at its low edge."""
    low = [b.available_bytes - b.uncertainty_bytes for b in budgets]
    high = [b.available_bytes + b.uncertainty_bytes for b in budgets]
    terms = open_terms(req)
    for mask in range(1, 2 ** len(terms)):
        chosen = [t for i, t in enumerate(terms) if mask >> i & 1]
        options = tuple(req.engine_options or ()) + tuple(o for t in chosen for o in t.options)
        alt = dataclasses.replace(req, engine_options=options or None)
        other = budgets_for(alt, constants, spec=spec, multicast=all(t.multicast for t in chosen),
                            host_growth=any(t.host_growth for t in chosen))
        if bterms is not None:
            other = vfeat.adjust_budgets(other, bterms)
        low = [min(x, b.available_bytes - b.uncertainty_bytes) for x, b in zip(low, other)]
        high = [max(x, b.available_bytes + b.uncertainty_bytes) for x, b in zip(high, other)]
        if notes is not None and len(chosen) == 1:
            gap = abs(other[0].available_bytes - budgets[0].available_bytes)
            notes.append(f"{chosen[0].why} ({_gib(gap)} GiB apart); {chosen[0].narrow} to narrow it")
    return low, high


def _workers(shapes: list[_WorkerShape], available: list[int], budgets, layout: _Layout, blocks_req: int,
             in_flight: int, reserve_null: bool, seq: int, *, override: int | None = None,
             override_in_fit: bool = False) -> list[VllmWorker]:
    out = []
    for shape, avail in zip(shapes, available):
        need = shape.bytes_per_block * blocks_req
        # --num-gpu-blocks-override replaces the block count; 0.33 also plans the fit check with it
        # (releases.Release.fit_check_uses_block_override)
        fit_memory = override * shape.bytes_per_block if override is not None and override_in_fit else avail
        room = fit_memory - (shape.bytes_per_block if reserve_null else 0)
        ok = avail > 0 and need <= room
        est_len = None
        if avail > 0 and not ok:
            est_len = longest(lambda m: shape.bytes_per_block * _blocks_per_request(layout, m, in_flight) <= room, 1, seq)
        out.append(VllmWorker(stage=shape.stage, layers=shape.layers, group_size=shape.group_size,
                              bytes_per_block=shape.bytes_per_block, available_kv_bytes=avail,
                              num_blocks=override if override is not None else max(avail // shape.bytes_per_block, 0),
                              needed_kv_bytes=need, fits=ok,
                              estimated_max_model_len=est_len, budget=budgets[shape.stage] if budgets else None))
    return out


def _holds(workers: list[VllmWorker], blocks_req: int, batch: int, max_seqs: int) -> bool:
    """The request shape fits a pool of these workers (start, one request of max_model_len, `batch` at once)."""
    if not all(w.fits for w in workers):
        return False
    blocks = min(w.num_blocks for w in workers)
    return batch <= min(max(blocks - 1, 0) // blocks_req, max_seqs)


@dataclass(eq=False, repr=False)
class _Run(driver.Run):
    """One vLLM estimate's figures as its steps (driver.Steps) hand them along."""

    rel: Release | None = None
    features: Any = None  # the launch's features (kvplan/engines/features/), `.any` when it sets one
    fplan: vfeat.Plan | None = None
    spec: ModelSpec | None = None  # the model as vLLM builds it with the launch's options
    layout: _Layout | None = None
    counts: list[int] = field(default_factory=list)
    shapes: list[_WorkerShape] = field(default_factory=list)
    mnbt: int = 0
    max_seqs: int = 0
    in_flight: int = 0
    blocks_req: int = 0
    util: Fraction | None = None
    bterms: Any = None  # the budget terms of the launch's features
    budgets: tuple[VllmBudget, ...] | None = None
    edges: tuple[list[int], list[int]] | None = None
    available: list[int] | None = None  # KV memory of each worker (one per pipeline stage)
    workers: list[VllmWorker] = field(default_factory=list)
    groups: tuple[KvCacheGroup, ...] = ()
    weights_total: int | None = None
    per_request: int = 0
    state_per_request: int = 0
    log_lines: list[str] = field(default_factory=list)
    binding: VllmWorker | None = None  # the worker whose block count sizes the pool
    failing: VllmWorker | None = None  # the first worker one request of max_model_len does not fit
    starts: bool | None = None
    refused_otherwise: bool = False  # vLLM stops for a reason other than its free-memory check
    too_long: bool = False
    refused: str | None = None
    gpu_refusal: str | None = None  # why vLLM does not start on this GPU generation (gpu_dtypes.py)
    num_blocks: int | None = None
    tokens: int | None = None
    concurrency: float | None = None
    fits: bool | None = None
    low_kv: int | None = None
    high_kv: int | None = None
    pin: int | None = None
    pin_fits: bool | None = None
    pin_spare: int | None = None
    feature_record: vfeat.VllmFeatures | None = None


def _refuse(req: EngineRequest) -> None:
    refuse_unread_options(req, "vLLM", releases.OPTION_KEYS)  # a file's engine_options skip accepts


def _judge_given_pool(req: EngineRequest, *, search_max_seq: bool) -> VllmEstimate:
    return _given_pool_on_the_gpu(req, estimate(req, search_max_seq=search_max_seq, pool_checked=True))


def _refuse_empty_stage(shapes: list[_WorkerShape], counts: list[int]) -> None:
    empty = next((s for s in shapes if s.bytes_per_block == 0), None)
    if empty is not None:
        # its worker has no KV-cache layer, so no block size to divide its memory by (vLLM's per-worker sizing,
        # v1/core/kv_cache_utils.py get_kv_cache_configs, and the minimum over workers are not modelled for it)
        first = sum(counts[:empty.stage])
        raise UnsupportedError(f"pipeline stage {empty.stage} (layers {first}-{first + empty.layers - 1}) holds no layer "
                               "with a KV cache; how vLLM sizes that worker's pool is not modelled",
                               where="--pp", hint="choose a pipeline size whose every stage holds an attention layer")


def _start(req: EngineRequest, search_max_seq: bool) -> _Run:
    """The release, dtypes, launch plan, layout and scheduler limits of the request."""
    rel = release_for(req)
    driver.refuse_batch(req)
    _check_device(req, rel)
    kv = read_kv_dtype(req)
    gpu_refusal = _gpu_refusal(req, rel)
    act = model_dtype(req)
    features = vfeat.features_of(req)
    vfeat.check_lengths(req, req.spec)
    fplan = vfeat.plan(req, rel, kv, act, KV_DTYPES)
    spec = fplan.spec  # the model as vLLM builds it with the launch's options (kvplan/engines/vllm/features.py)
    if (rel.engine_multimodal_tokens and rel.entry_point == releases.ENTRY_ENGINE and spec.vision_params
            and req.max_num_batched_tokens is None):
        raise UnsupportedError(f"an engine built directly (entry_point=engine) on vLLM {rel.version} raises a "
                               f"multimodal model's batched tokens to {rel.engine_multimodal_tokens} "
                               "(SchedulerConfig.__post_init__), which kvplan does not apply",
                               where="--engine-option", hint="give --max-num-batched-tokens, or a release from 0.12")
    layout = _layout(req, kv, rel, fplan)
    counts = pp_layer_counts(spec.layers, req.pp)
    # the drafter's layers sit on the (only) stage after the target's (speculative decoding is judged at PP 1)
    shapes = _worker_shapes(layout, counts[:-1] + [counts[-1] + fplan.draft_layers])
    _refuse_empty_stage(shapes, counts)
    hw = req.hardware
    mnbt, max_seqs = budget_model.resolve_batch_limits(req.max_num_batched_tokens, req.max_num_seqs, req.seq,
                                                        hw.capacity_bytes if hw else None, hw.name if hw else None,
                                                        rel)
    in_flight = _in_flight(rel, mnbt, req.pp)
    run = _Run(req, search_max_seq, notes=list(layout.notes), rel=rel, kv=kv, act=act, features=features, fplan=fplan,
               spec=spec, layout=layout, counts=counts, shapes=shapes, mnbt=mnbt, max_seqs=max_seqs,
               in_flight=in_flight, blocks_req=_blocks_per_request(layout, req.seq, in_flight), gpu_refusal=gpu_refusal)
    assumed = format_assumption(spec, req.weight_fmt, linear_only=True)
    if assumed:
        run.notes.append(assumed)
    reserve = driver.reserve_note(req, "vLLM's budget is its own (gpu_memory_utilization)")
    if reserve:
        run.notes.append(reserve)
    run.util = req.gpu_util if req.gpu_util is not None else rel.default_gpu_util
    if features.any:
        run.bterms = vfeat.budget_terms(req, fplan, act, rel, mnbt, counts, rel.cuda_graph_subtracted)
    return run


def _given(run: _Run) -> None:
    req, rel = run.req, run.rel
    run.available = [req.kv_cache_memory] * req.pp
    if not rel.kv_cache_memory_option:
        run.notes.append(f"vLLM {rel.version} has no --kv-cache-memory-bytes (it came in 0.10.2): the given KV memory "
                         "is taken as what its budget would leave")


def _modelled(run: _Run) -> None:
    req = run.req
    budget_notes: list[str] = []
    budgets = budgets_for(req, notes=budget_notes, spec=run.spec)
    if run.bterms is not None:
        budgets = vfeat.adjust_budgets(budgets, run.bterms)
    run.notes += budget_notes
    share = host_share_for(req, run.rel)
    if share is not None:
        b = budgets[0]
        need = b.requested_bytes + b.context_bytes - b.total_bytes  # the most the host may hold for vLLM to start
        run.notes.append(
            f"{req.hardware.name} shares its {_gib(b.total_bytes)} GiB with the host, and --gpu-reserved does not say "
            f"what the host holds: kvplan takes {unified_memory.describe(share)}. vLLM {run.rel.version} starts only if the "
            f"free memory it reads (psutil's available) holds the requested {_gib(b.requested_bytes)} GiB: the host may "
            f"hold at most {max(-need, 0) / 2**30:.2f} GiB beside the CUDA context"
            + ("" if -need >= share.high_bytes else " (judged at the largest share, the band's low edge)")
            + "; give --gpu-reserved SIZE (total - free as vLLM logs it at start, less its CUDA context: 0.51 GiB, 1.51 "
              "with NCCL at TP >= 2) to narrow it")
    nominal = [b.available_bytes for b in budgets]
    run.edges = budget_edges(req, budgets, spec=run.spec, bterms=run.bterms, notes=run.notes)
    run.available = {"low": run.edges[0], "high": run.edges[1]}.get(req.budget_edge or "", nominal)
    run.budgets = budgets


def _pool(run: _Run) -> None:
    """The workers' pools, the verdict, the logged figures, the band and what the result reports beside them."""
    req, rel, layout, shapes = run.req, run.rel, run.layout, run.shapes
    override = run.fplan.num_gpu_blocks_override
    if run.available is not None:
        run.workers = _workers(shapes, run.available, run.budgets, layout, run.blocks_req, run.in_flight,
                               rel.null_block_reserved_before_fit, req.seq, override=override,
                               override_in_fit=rel.fit_check_uses_block_override)
        if override is not None:
            run.notes.append(f"Overriding num_gpu_blocks={max(run.available[0] // shapes[0].bytes_per_block, 0)} with "
                             f"num_gpu_blocks_override={override}")
    run.groups = _public_groups(layout, req.seq, run.in_flight)
    run.common = request_terms(req, run.kv, engine="vllm", engine_version=ENGINE_VERSION)
    spec = run.spec
    # a tower kvplan cannot size leaves the weights unknown; a given pool (--kv-cache-memory) does not need them
    run.weights_total = None if spec.weights_unknown and spec.weights_bytes is None else model_weights(spec, req.weight_fmt)[0]
    if run.budgets is not None:
        run.weights_total = sum(b.weights_bytes for b in run.budgets) * req.tp
    run.per_request = sum(w.bytes_per_block for w in shapes) * run.blocks_req * req.tp
    run.state_per_request = _state_bytes_per_request(layout, shapes, req.tp)
    run.log_lines = list(f"WARNING {w}" for w in layout.padding_warnings)
    if run.workers:
        _verdict(run)
        _logged_pool(run)
        _band(run)
    _per_gpu(run)
    _layer_notes(run)
    _feature_notes(run)


def _verdict(run: _Run) -> None:
    """Whether vLLM starts and serves one request of max_model_len, and why not, in its own words."""
    req, rel, workers, budgets, notes = run.req, run.rel, run.workers, run.budgets, run.notes
    run.binding = min(workers, key=lambda w: (w.num_blocks, w.stage))
    run.starts = budgets is None or all(b.starts for b in budgets)
    if budgets is not None and not run.starts:
        run.refused = refusal(budgets[0], multi_gpu=req.tp * req.pp > 1)
        notes.append(run.refused)
    for why in (run.fplan.refusal, run.gpu_refusal):
        if why is not None:
            run.starts = False
            run.refused_otherwise = True
            run.refused = run.refused or why
            notes.append(why)
    run.failing = failing = next((w for w in workers if not w.fits), None)
    if any(w.available_kv_bytes <= 0 for w in workers):
        notes.append("no memory is left for the KV cache (\"No available memory for the cache blocks\"): the weights "
                     "and activations take the whole budget")
        run.log_lines.append("ERROR ValueError: No available memory for the cache blocks. Try increasing "
                             "`gpu_memory_utilization` when initializing the engine.")
    elif failing is not None:
        run.est_len = failing.estimated_max_model_len
        run.log_lines.append(_not_fit_line(rel, req.seq, failing.needed_kv_bytes, failing.available_kv_bytes,
                                           run.est_len))
    spec = run.spec
    run.too_long = spec.max_context is not None and req.seq > spec.max_context
    if run.too_long and releases.allow_long_flag(req.option(releases.ALLOW_LONG_OPTION)):
        run.too_long = False
        notes.append(f"max_model_len {req.seq:,} exceeds the model's max_position_embeddings {spec.max_context:,}: "
                     f"{releases.ALLOW_LONG_ENV} lets vLLM start (it warns that with RoPE the positions beyond give NaN)")
    elif run.too_long:
        longer = (f"max_model_len {req.seq:,} exceeds the model's max_position_embeddings {spec.max_context:,}: "
                  "vLLM refuses it; RoPE scaling extends it (see the fixes), "
                  f"{releases.ALLOW_LONG_ENV}=1 only lifts the check")
        run.refused = run.refused or longer
        notes.append(longer)
    run.fits = run.starts and failing is None and not run.too_long


def _logged_pool(run: _Run) -> None:
    """The blocks, tokens and concurrency vLLM logs, the sequences its pool holds at once and the longest length."""
    req, rel, binding, blocks_req = run.req, run.rel, run.binding, run.blocks_req
    run.num_blocks = num_blocks = binding.num_blocks
    run.concurrency = concurrency = num_blocks / blocks_req
    if rel.tokens_logged_from_concurrency:
        run.tokens = int(concurrency * req.seq)
    else:
        # 0.19 _report_kv_cache_config: num_blocks // groups x block size, times DCP x PCP
        run.tokens = (num_blocks // len(run.layout.groups) * min(s.block_size for s, _ in run.layout.groups)
                      * run.fplan.token_shards)
    if run.failing is None and all(w.available_kv_bytes > 0 for w in run.workers):
        run.log_lines.append(f"INFO Available KV cache memory: {_gib(binding.available_kv_bytes)} GiB")
        if rel.tokens_logged_from_concurrency:
            run.log_lines.append(f"INFO GPU KV cache size: {run.tokens:,} tokens, Maximum concurrency for {req.seq:,} "
                                 f"tokens per request: {concurrency:.2f}x")
        else:
            run.log_lines.append(f"INFO GPU KV cache size: {run.tokens:,} tokens")
            run.log_lines.append(f"INFO Maximum concurrency for {req.seq:,} tokens per request: {concurrency:.2f}x")
    usable_blocks = max(num_blocks - 1, 0)  # block 0 is the null block (v1/core/block_pool.py)
    max_seqs = run.max_seqs
    run.max_batch = max_batch = min(usable_blocks // blocks_req, max_seqs) if run.fits else 0
    run.serves = run.fits and req.batch <= max_batch
    if run.fits and req.batch > max_batch:
        run.notes.append(f"vLLM starts, but its pool holds {max_batch} sequences of {req.seq:,} tokens at once"
                         + (f" (max_num_seqs {max_seqs})" if max_batch == max_seqs else "")
                         + f"; the other {req.batch - max_batch} wait")
    if not run.starts:
        run.max_seq = 0
    elif run.search_max_seq:
        run.max_seq = _longest_seq(req, run.layout, run.workers, run.in_flight, rel.null_block_reserved_before_fit,
                                   (run.mnbt, max_seqs), rel)


def _band(run: _Run) -> None:
    """The verdict at the two edges of a modelled budget's band (marginal when they differ)."""
    req, edges, binding = run.req, run.edges, run.binding
    if edges is not None:
        run.low_kv, run.high_kv = edges[0][binding.stage], edges[1][binding.stage]
        starts = _starts_at_edges(run)
        at = [_holds(_workers(run.shapes, e, run.budgets, run.layout, run.blocks_req, run.in_flight,
                              run.rel.null_block_reserved_before_fit, req.seq), run.blocks_req, req.batch, run.max_seqs)
              and began and not run.too_long for e, began in zip(edges, starts)]
        run.marginal = at[0] != at[1]
        if run.marginal and starts[0] != starts[1]:
            run.notes.append("marginal: vLLM starts when the host holds the least of the public readings but not when "
                             "it holds the most (the host's share, see above)")
        elif run.marginal:
            run.notes.append(f"marginal: the budget's band ({_gib(run.low_kv)}-{_gib(run.high_kv)} GiB of KV memory, the "
                             "measured error of its terms) holds the request shape at its high edge but not at its low "
                             "edge")
    elif run.source == driver.GIVEN:
        run.low_kv = run.high_kv = binding.available_kv_bytes
        run.marginal = False


def _starts_at_edges(run: _Run) -> tuple[bool, bool]:
    """Whether vLLM starts at the low and the high edge of the band: on an integrated GPU whose host share the
    launch leaves open, its start check (free at the snapshot >= requested) at the largest and the smallest share;
    elsewhere the verdict's own."""
    share = host_share_for(run.req, run.rel)
    if share is None or run.budgets is None or run.refused_otherwise:
        return bool(run.starts), bool(run.starts)

    def starts(in_use: int) -> bool:
        return all(b.total_bytes - b.context_bytes - in_use >= b.requested_bytes for b in run.budgets or ())

    return starts(share.high_bytes), starts(share.low_bytes)


def _per_gpu(run: _Run) -> None:
    """The most loaded GPU, and the --kv-cache-memory-bytes that pins the pool (_pin)."""
    req, hw, binding = run.req, run.req.hardware, run.binding
    if hw is None or binding is None:
        return
    b = binding.budget
    pool = binding.num_blocks * binding.bytes_per_block
    if b is not None:
        non_kv = b.non_kv_bytes + (b.cuda_graph_bytes if b.cuda_graph_subtracted else 0)
        run.per_gpu = PerGpu(capacity_bytes=hw.capacity_bytes, usable_bytes=b.requested_bytes,
                             weights_bytes=b.weights_bytes, cache_bytes=pool,
                             reserved_bytes=hw.capacity_bytes - b.requested_bytes,
                             free_bytes=b.requested_bytes - non_kv - pool)
        if run.rel.kv_cache_memory_option and binding.num_blocks > 0:
            run.pin, run.pin_fits, run.pin_spare = _pin(run.workers, binding.num_blocks, hw.capacity_bytes)
    else:
        weights_gpu = cdiv(run.weights_total, req.tp * req.pp)
        run.per_gpu = PerGpu(capacity_bytes=hw.capacity_bytes, usable_bytes=weights_gpu + binding.available_kv_bytes,
                             weights_bytes=weights_gpu, cache_bytes=pool,
                             reserved_bytes=max(hw.capacity_bytes - weights_gpu - binding.available_kv_bytes, 0),
                             free_bytes=binding.available_kv_bytes - pool)


def _layer_notes(run: _Run) -> None:
    """What the sliding-window and chunked-local layers are charged, and where the budget's terms come from."""
    run.notes += vspecs.window_notes(run.layout.specs.values(), run.req.seq, run.in_flight)
    if run.budgets is not None:
        b0 = run.binding.budget if run.binding is not None else None
        run.notes.append(f"budget terms are modelled for vLLM {run.rel.version} (vLLM measures them at start-up); its "
                     "constants were measured on public start-up logs, the band is their leave-out error "
                     "(docs/engines/calibration.md)" + (f"; from the site profile: {', '.join(b0.site_terms)}"
                                                         if b0 is not None and b0.site_terms else ""))
        facts = run.req.hardware.facts if run.req.hardware is not None else None
        if facts is not None and facts.rocm:
            run.notes.append(_rocm_note(run.rel, facts.name))


def _rocm_note(rel: Release, name: str) -> str:
    """What kvplan assumed for vLLM's ROCm paths on this release (releases.on_rocm, budget.py ROCM_*)."""
    graphs = ("HIP graphs estimated and subtracted, band 1x-4x the CUDA fit" if rel.cuda_graph_subtracted else
              "no graph estimate in the budget (vLLM profiles it on ROCm from 0.26)" if not rel.rocm_graph_estimate
              else "HIP graphs estimated, not subtracted")
    sampler = "Triton" if rel.sampler == releases.SAMPLER_TRITON else "PyTorch sort"
    aiter = {None: "AITER's kernels (VLLM_ROCM_USE_AITER, not given: on and off both covered)",
             True: "AITER's kernels (VLLM_ROCM_USE_AITER=1)", False: None}[rel.rocm_aiter]
    open_terms = "the total, non-torch memory (RCCL, hipBLASLt)" + (f" and {aiter}" if aiter else "")
    return (f"ROCm ({name}): vLLM {rel.version} takes its ROCm paths: block 16 (ROCM_ATTN; MLA: TRITON_MLA, or "
            f"ROCM_AITER_MLA with AITER), the {sampler} sampler (no FlashInfer on ROCm), {graphs}; {open_terms} are not "
            "settled by vLLM's source: the band spans their plausible values, not a measured error "
            "(docs/engines/vllm.md, ROCm)")


def _feature_notes(run: _Run) -> None:
    """The terms of the launch's features (speculative decoding, LoRA, offload, parallelism), notes first."""
    fplan, binding = run.fplan, run.binding
    if run.features.any:
        attention_specs = [s for s in run.layout.specs.values() if not s.state]
        token_rank = sum(s.page // s.block_size for s in attention_specs)
        run.feature_record = vfeat.summarize(
            run.req, fplan, run.bterms, act=run.act, bytes_per_block=binding.bytes_per_block if binding else None,
            token_bytes_per_rank=token_rank, block_size=run.layout.block_size, mnbt=run.mnbt,
            concurrency=run.concurrency, max_batch=run.max_batch,
            pool_bytes=binding.num_blocks * binding.bytes_per_block if binding else None, rel=run.rel)
        run.notes = list(dict.fromkeys(list(fplan.notes) + run.notes + list(run.feature_record.notes)))
    elif fplan.notes:
        run.notes = list(fplan.notes) + run.notes


def _result(run: _Run) -> VllmEstimate:
    req, rel, binding, layout = run.req, run.rel, run.binding, run.layout
    b0 = binding.budget if binding is not None else None
    kv_per_request = run.per_request - run.state_per_request
    return VllmEstimate(
        **run.common, kv_bytes=kv_per_request * req.batch, state_bytes=run.state_per_request * req.batch,
        cache_bytes=run.per_request * req.batch, weights_bytes=run.weights_total, per_gpu=run.per_gpu,
        max_batch=run.max_batch, max_seq=run.max_seq, notes=tuple(run.notes), **verdict_terms(run.fits, run.serves),
        vllm_version=rel.line, vllm_release=rel.version, block_size=layout.block_size, max_num_batched_tokens=run.mnbt,
        max_num_seqs=run.max_seqs,
        gpu_memory_utilization=budget_model._fraction_text(run.util) if run.source == driver.MODELLED else None,
        kv_cache_groups=run.groups, padding_layers=layout.padding_layers,
        padding_warnings=tuple(layout.padding_warnings),
        group_size=binding.group_size if binding else run.shapes[0].group_size,
        bytes_per_block=binding.bytes_per_block if binding else None, blocks_per_request=run.blocks_req,
        available_kv_bytes=binding.available_kv_bytes if binding else None,
        available_kv_bytes_low=run.low_kv, available_kv_bytes_high=run.high_kv, marginal=run.marginal,
        num_gpu_blocks=run.num_blocks, kv_cache_tokens=run.tokens, max_concurrency=run.concurrency,
        estimated_max_model_len=run.est_len, budget_source=run.source,
        budget_edge=req.budget_edge if run.source == driver.MODELLED and req.budget_edge in ("low", "high") else None,
        requested_bytes=b0.requested_bytes if b0 else None, weights_per_gpu_bytes=b0.weights_bytes if b0 else None,
        activation_peak_bytes=b0.activation_peak_bytes if b0 else None,
        non_torch_bytes=b0.non_torch_bytes if b0 else None, cuda_graph_bytes=b0.cuda_graph_bytes if b0 else None,
        cuda_graph_subtracted=b0.cuda_graph_subtracted if b0 else None,
        moe_workspace_bytes=b0.moe_workspace_bytes if b0 else None,
        budget_uncertainty_bytes=b0.uncertainty_bytes if b0 else None,
        pinned_kv_cache_memory_bytes=run.pin, pinned_fits_beside=run.pin_fits, pinned_spare_bytes=run.pin_spare,
        workers=tuple(run.workers), log_lines=tuple(run.log_lines), refusal=run.refused, suggestions=(),
        features=run.feature_record,
    )


def _fit_length(req: EngineRequest, *, search_max_seq: bool) -> VllmEstimate:
    return _auto_fit(req, search_max_seq=search_max_seq)


STEPS = driver.Steps(kinds=vspecs.TABLE, refuse=_refuse,
                     on_the_gpu=_judge_given_pool, start=_start, given=_given, modelled=_modelled,
                     no_gpu="no GPU given: blocks, tokens and concurrency need --gpu/--gpu-mem or --kv-cache-memory",
                     pool=_pool, result=_result, fit_length=_fit_length)


def estimate(req: EngineRequest, *, search_max_seq: bool = True, pool_checked: bool = False) -> VllmEstimate:
    """What the vLLM release req.engine_version (default releases.DEFAULT) does with this deployment (max_seq left
    None when search_max_seq is False: _longest_seq re-runs the estimate that way). With req.budget_edge "low" or
    "high" a modelled budget is taken at that edge of its band (check judges by the low edge). The steps above, in
    the order every paged engine follows (kvplan/engines/driver.py)."""
    return driver.estimate(STEPS, req, search_max_seq=search_max_seq, pool_checked=pool_checked)


def _auto_length(workers: list[VllmWorker], derived: int) -> int:
    """The length --max-model-len auto gives: the derived length when one request of it fits every worker, else
    the smallest worker's longest fitting length (_workers searches it as vLLM's _estimate_max_model_len_from_groups
    does, the null block kept back from 0.29); 0 when a worker has no KV memory or cannot hold one token."""
    return min(derived if w.fits else (w.estimated_max_model_len or 0) for w in workers)


def _auto_fit_log(result: VllmEstimate, rel: Release, derived: int, picked: int) -> tuple[str, ...]:
    """The estimate's log lines with vLLM's auto-fit line after "Available KV cache memory": the memory it names is
    the limiting worker's as the search saw it (0.29+: less the null block)."""
    worker = min(result.workers, key=lambda w: (w.estimated_max_model_len or derived, w.stage)) if picked < derived \
        else result.workers[0]
    memory = worker.available_kv_bytes - (worker.bytes_per_block if rel.null_block_reserved_before_fit else 0)
    if rel.auto_fit_log_device:
        where = f"available KV cache memory ({_gib(memory)} GiB GPU)"
    elif picked < derived:
        where = f"available GPU memory ({_gib(memory)} GiB available for KV cache)"
    else:
        where = "available GPU memory"
    line = (f"INFO Auto-fit max_model_len: reduced from {derived} to {picked} to fit in {where}" if picked < derived
            else f"INFO Auto-fit max_model_len: full model context length {derived} fits in {where}")
    lines = list(result.log_lines)
    at = next((i + 1 for i, x in enumerate(lines) if x.startswith("INFO Available KV cache memory")), len(lines))
    return tuple(lines[:at] + [line] + lines[at:])


def _auto_fit(req: EngineRequest, *, search_max_seq: bool) -> VllmEstimate:
    """--max-model-len auto (kvplan --seq auto). vLLM builds its configuration at the derived length
    (config/model.py _get_and_verify_max_len: -1 is read as "not given"), so the scheduler limits, the profile and
    the budget are those of req.seq; after the budget, v1/core/kv_cache_utils.py _auto_fit_max_model_len
    (0.33: v1/core/kv_cache_planning.py) lowers max_model_len to the longest length whose one request fits every
    worker's KV memory, by binary search over 1 ... the derived length (no rounding to blocks), or raises "Cannot
    auto-fit max_model_len" when not one token fits. The pool is unchanged; concurrency and the logged token count
    are then those of the picked length."""
    rel = release_for(req)
    where = "--seq"  # check names it max_model_len (judge._ENGINE_WHERE)
    if rel.auto_fit is None:
        raise UnsupportedError(f"vLLM {rel.version} has no --max-model-len auto (it came in 0.14.0; "
                               f"vLLM {rel.version} reads -1 as a length)", where=where,
                               hint="give a length, or a release from 0.14 on (--engine-version)")
    if req.pp > 1 and rel.auto_fit == releases.AUTO_FIT_GLOBAL:
        raise UnsupportedError(f"--max-model-len auto at pipeline parallel {req.pp} on vLLM {rel.version}: this "
                               "release fits the whole model's KV cache groups against one worker's memory, which "
                               "kvplan does not model", where=where, hint="give a length, or judge it at --pp 1")
    derived = req.seq
    plain = dataclasses.replace(req, seq_auto=False)
    at_derived = estimate(plain, search_max_seq=False)
    if not at_derived.workers:
        raise InputError("vLLM picks the length from the KV memory of a GPU", where=where,
                         hint="give --gpu NAME, --gpu-mem SIZE or --kv-cache-memory SIZE")
    picked = _auto_length(list(at_derived.workers), derived)
    edges: list[int | None] = [None, None]
    if at_derived.budget_source == "model":
        for i, edge in enumerate(("low", "high")):
            if req.budget_edge == edge:
                edges[i] = picked
            else:
                edged = estimate(dataclasses.replace(plain, budget_edge=edge), search_max_seq=False)
                edges[i] = _auto_length(list(edged.workers), derived)
    elif at_derived.budget_source == "--kv-cache-memory":
        edges = [picked, picked]
    if picked < 1:
        why = ("Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token "
               "(vLLM's start-up error)")
        return dataclasses.replace(at_derived, **verdict_terms(False, False), max_batch=0, max_seq=0,
                                   refusal=at_derived.refusal or why, notes=(why,) + at_derived.notes,
                                   auto_max_model_len=0, auto_max_model_len_low=edges[0],
                                   auto_max_model_len_high=edges[1])
    if picked == derived:
        final = estimate(plain, search_max_seq=search_max_seq)
        said = f"vLLM will pick {picked:,}: one request of the model's whole length ({derived:,}) fits the KV memory"
    else:
        # the scheduler limits vLLM resolved at the derived length, kept (the configuration is not rebuilt)
        final = estimate(dataclasses.replace(plain, seq=picked, max_num_batched_tokens=at_derived.max_num_batched_tokens,
                                             max_num_seqs=at_derived.max_num_seqs), search_max_seq=search_max_seq)
        said = (f"vLLM will pick {picked:,} (--max-model-len auto: the longest length whose one request fits the KV "
                f"memory, below the model's {derived:,})")
    notes = [n for n in final.notes if not n.startswith("marginal:")]
    log_lines = _auto_fit_log(final, rel, derived, picked)
    marginal = None
    if edges[0] is not None and edges[1] is not None:
        marginal = (edges[0] < 1) != (edges[1] < 1)
        if edges[0] != edges[1]:
            said += f"; {edges[0]:,} ... {edges[1]:,} across the budget's band"
    return dataclasses.replace(final, notes=tuple([said] + notes), log_lines=log_lines, marginal=marginal,
                               auto_max_model_len=picked,
                               auto_max_model_len_low=edges[0], auto_max_model_len_high=edges[1])


def _given_pool_on_the_gpu(req: EngineRequest, result: VllmEstimate) -> VllmEstimate:
    """kv_cache_memory_bytes with a GPU (issue 15: a 79 GiB pool on an H100 beside 15 GiB of weights was a "yes").

    vLLM takes the pool as given and skips the budget (v1/worker/gpu_worker.py determine_available_memory: it still
    runs the profile, then returns kv_cache_memory_bytes), so nothing refuses a pool the GPU cannot hold until the
    allocation or the CUDA-graph capture after it runs out of memory. The pool must fit in what the whole GPU
    (utilization 1: the fraction is not applied) leaves after the CUDA context, the weights, the activation peak,
    non-torch memory and the CUDA graphs, each modelled as for the budget; beyond that it is a definite no."""
    hw = req.hardware
    whole_gpu = budgets_for(dataclasses.replace(req, kv_cache_memory=None, gpu_util=Fraction(1),
                                                max_num_batched_tokens=result.max_num_batched_tokens,
                                                max_num_seqs=result.max_num_seqs))
    b = min(whole_gpu, key=lambda x: x.total_bytes - x.memory_in_use_bytes - x.context_bytes - x.beside_pool_bytes)
    room = b.total_bytes - b.memory_in_use_bytes - b.context_bytes - b.beside_pool_bytes
    usable = room + b.weights_bytes
    pool = result.per_gpu.cache_bytes if result.per_gpu else req.kv_cache_memory
    per_gpu = PerGpu(capacity_bytes=hw.capacity_bytes, usable_bytes=usable, weights_bytes=b.weights_bytes,
                     cache_bytes=pool, reserved_bytes=hw.capacity_bytes - usable, free_bytes=room - pool)
    if req.kv_cache_memory <= room:
        return dataclasses.replace(result, per_gpu=per_gpu)
    why = (f"vLLM cannot hold a KV cache of {req.kv_cache_memory:,} B (kv_cache_memory_bytes) on {hw.name or 'this GPU'}: "
           f"{max(room, 0):,} B are left after the CUDA context, the weights, the activation peak, non-torch memory and "
           "the CUDA graphs (modelled); it would run out of memory allocating the cache")
    return dataclasses.replace(result, per_gpu=per_gpu, **verdict_terms(False, False), max_batch=0, max_seq=0,
                               refusal=why, notes=result.notes + (why,))


def _pin(workers: list[VllmWorker], blocks: int, capacity: int) -> tuple[int, bool, int]:
    """The --kv-cache-memory-bytes that makes vLLM's pool exactly `blocks` blocks, whether the weights, activation
    peak, non-torch memory, CUDA graphs and CUDA context fit beside that pool on every GPU, and the bytes to spare
    on the tightest one. vLLM gives every worker the same bytes (gpu_worker.py determine_available_memory returns
    kv_cache_memory_bytes) and keeps the minimum of their block counts, so the value is `blocks` times the largest
    bytes per block of any worker: that worker gets exactly `blocks`, the others at least as many."""
    pin = blocks * max(w.bytes_per_block for w in workers)
    spare = min(capacity - w.budget.memory_in_use_bytes - w.budget.context_bytes - w.budget.beside_pool_bytes - pin
                for w in workers)
    return pin, spare >= 0, spare


def _state_bytes_per_request(layout: _Layout, shapes: list[_WorkerShape], tp: int) -> int:
    """Mamba state one request holds, whole model (every stage and rank), padded page included."""
    if layout.uniform_type:
        return tp * sum(layout.specs[i].page * layout.specs[i].held for i in layout.groups[0][1]
                        if layout.specs[i].state)
    mamba_blocks = sum(s.held for s, _ in layout.groups if s.state)
    return tp * sum(w.bytes_per_block for w in shapes) * mamba_blocks


def _public_groups(layout: _Layout, seq: int, in_flight: int) -> tuple[KvCacheGroup, ...]:
    size = len(layout.groups[0][1]) if layout.uniform_type else max(len(g) for _, g in layout.groups)
    out = []
    for s, layers in layout.groups:
        out.append(KvCacheGroup(kind=s.kind, window=s.window, layers=len(layers),
                                padding_layers=0 if layout.uniform_type else size - len(layers),
                                block_size=s.block_size,
                                page_bytes=(sum(layout.specs[i].page for i in layers) // len(layers)
                                            if layout.uniform_type else s.page),
                                blocks_per_request=_blocks_per_request(layout, seq, in_flight) if layout.uniform_type
                                else s.blocks(seq, in_flight)))
    return tuple(out)


def _longest_seq(req: EngineRequest, layout: _Layout, workers: list[VllmWorker], in_flight: int, reserve_null: bool,
                 limits: tuple[int, int], rel: Release) -> int:
    """Longest max_model_len at which vLLM starts and its pool holds `batch` sequences of that length.

    `limits` are the (max_num_batched_tokens, max_num_seqs) vLLM picked at req.seq. Its defaults depend on
    max_model_len (capped at max_num_seqs x max_model_len, budget.resolve_batch_limits), and with them the
    activation peak and the tokens in flight; at a length where they differ the whole estimate is re-run."""
    max_seqs = limits[1]
    if req.batch > max_seqs:
        return 0
    pool = min(w.num_blocks for w in workers)
    hw = req.hardware

    def ok(m: int) -> bool:
        if budget_model.resolve_batch_limits(req.max_num_batched_tokens, req.max_num_seqs, m,
                                             hw.capacity_bytes if hw else None, hw.name if hw else None,
                                             rel) != limits:
            return bool(estimate(dataclasses.replace(req, seq=m), search_max_seq=False).fits)
        r = _blocks_per_request(layout, m, in_flight)
        for w in workers:
            room = w.available_kv_bytes - (w.bytes_per_block if reserve_null else 0)
            if w.available_kv_bytes <= 0 or w.bytes_per_block * r > room:
                return False
        return req.batch * r <= pool - 1

    cap = req.spec.max_context or MAX_TOKENS
    return max(longest(ok, 1, cap), 0)


def _gib(n: int) -> str:
    return vllm_format_gib(n)


def _not_fit_line(rel: Release, seq: int, need: int, avail: int, est: int | None) -> str:
    est_msg = f"Based on the available memory, the estimated maximum model length is {est}. " if est else ""
    models = rel.not_fit_possessive
    return (f"ERROR ValueError: To serve at least one request with the {models} max seq len ({seq}), ({_gib(need)} GiB KV "
            f"cache is needed, which is larger than the available KV cache memory ({_gib(avail)} GiB). {est_msg}"
            "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
