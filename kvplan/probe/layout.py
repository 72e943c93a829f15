"""Which tensors hold one rank's cache, and what kvplan estimates for them. Pure: no torch here.

Shapes come from the layers themselves (LayerSpec.token_tensors and state_tensors: K and V per head, the MLA
latent, the state tensors), each laid out as below, with no kind named here; the
estimate comes from kvplan.cache's per-token and per-sequence byte math. The probe then allocates the
shapes with torch and compares the two, so a mistake in either shows up as a mismatch.

Static layout (contiguous, preallocated; transformers' StaticCache, cache_utils.py StaticLayer and
StaticSlidingWindowLayer):
    full / sliding / chunked   K [batch, kv_heads_per_rank, len, head_dim], V [..., v_head_dim],
                     len = min(seq, window or attention_chunk_size)
    mla              latent [batch, len, kv_lora_rank + qk_rope_head_dim] (every TP rank holds it whole)
    state            conv [batch, ceil(c0 / tp), ...] and recurrent [batch, ceil(r0 / tp), ...], own dtypes
Paged layout (vLLM's per-layer block pools, vllm/v1/worker/gpu_model_runner.py reshapes each layer's
KV tensor to [num_blocks, block_size, kv_heads, head_size] for K and for V):
    full / sliding / chunked   K, V [num_blocks, block_size, kv_heads_per_rank, head_dim]
    mla              latent [num_blocks, block_size, latent_dim]
    state            one slot per sequence, as in the static layout
Without an engine's block count, each layer's pool holds what the sequences keep: cdiv(tokens kept, block_size)
blocks each; a chunked-local layer holds the most blocks one of its chunks spans (LayerSpec.blocks_held).
Sub-byte dtypes (int4) are stored two to a byte: uint8 with the last dimension ceil(d x bits / 8).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Mapping

from kvplan.core.layers import ENGINE_BASE_KINDS, require_mapped_kinds
from kvplan.core.cache import CacheModel, cached_tokens, layer_state_bytes, layer_token_bytes, pp_layer_counts
from kvplan.core.dtypes import DType, dtype as lookup_dtype
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.spec import LayerSpec

STATIC, PAGED = "static", "paged"
LAYOUTS = (STATIC, PAGED)
# vLLM's default block size (vllm/config/cache.py BlockSize default 16)
DEFAULT_BLOCK_SIZE = 16


@dataclass(frozen=True)
class StorageDType:
    """How torch stores a kvplan dtype: the torch dtype name, bytes per stored element, and for
    sub-byte formats the bits per logical element (packed along the last dimension)."""

    torch_name: str
    itemsize: int
    packed_bits: int | None = None

    def last_dim(self, d: int) -> int:
        if self.packed_bits is None:
            return d
        return -(-d * self.packed_bits // 8)


def storage_dtype(dt: DType) -> StorageDType:
    if dt.packed:  # scales beside the values: the probe lays out plain tensors only
        raise UnsupportedError(f"the probe has no layout for the packed KV format {dt.name}", where="--kv-dtype")
    if dt.bits < 8:
        # torch has no 4-bit dtype: int4 KV is two values per uint8 (as vLLM/TRT-LLM pack int4)
        return StorageDType("uint8", 1, dt.bits)
    if dt.torch_name is None or dt.bits % 8:
        raise UnsupportedError(f"no torch storage for dtype {dt.name}", where="--kv-dtype")
    return StorageDType(dt.torch_name, dt.bits // 8)


@dataclass(frozen=True)
class TensorSpec:
    layer: int  # global layer index
    role: str  # k, v, latent, conv, recurrent
    shape: tuple[int, ...]
    dtype: str  # torch dtype name
    itemsize: int

    @property
    def nbytes(self) -> int:
        return prod(self.shape) * self.itemsize

    def describe(self) -> str:
        return f"{self.role} [{', '.join(str(d) for d in self.shape)}] {self.dtype}"


@dataclass(frozen=True)
class GroupPlan:
    """Layers of one rank that share a tensor layout, their tensors and kvplan's estimate for them."""

    label: str
    kind: str
    layers: tuple[int, ...]
    tensors: tuple[TensorSpec, ...]
    estimated_bytes: int

    @property
    def planned_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)


@dataclass(frozen=True)
class BlockPlan:
    """Blocks of every attention layer's pool on one rank, and where the counts came from.

    `blocks` maps a global layer index to its pool's block count. The default (`static_need`) gives
    each layer what `batch` sequences of `seq` tokens need, cdiv(tokens kept, block_size) each; an
    engine result (vLLM's num_gpu_blocks, kvplan/engines/vllm/engine.py) can fill it instead with
    `uniform`, which is how vLLM sizes attention-only models (every layer's tensor holds num_blocks
    pages; vllm/v1/core/kv_cache_utils.py get_kv_cache_config_from_groups).
    """

    block_size: int
    blocks: Mapping[int, int] = field(hash=False)
    source: str

    @classmethod
    def static_need(cls, layers: Mapping[int, LayerSpec], seq: int, batch: int, block_size: int) -> "BlockPlan":
        # each layer's own rule (LayerSpec.blocks_held); a kind whose rule is not the plain cdiv says so in the source
        blocks = {i: batch * layer.blocks_held(seq, block_size) for i, layer in layers.items() if layer.attends}
        rules = dict.fromkeys(layer.blocks_rule for layer in layers.values() if layer.blocks_rule)
        return cls(block_size, blocks, f"what {batch} x {seq} tokens need: cdiv(tokens kept, {block_size}) per sequence"
                   + "".join(f"; {rule}" for rule in rules))

    @classmethod
    def uniform(cls, layers: Mapping[int, LayerSpec], num_blocks: int, block_size: int, source: str) -> "BlockPlan":
        blocks = {i: num_blocks for i, layer in layers.items() if layer.attends}
        return cls(block_size, blocks, source)


@dataclass(frozen=True)
class RankPlan:
    """One rank's cache: its stage and layers, the tensors per group, and the estimates."""

    layout: str
    rank: int
    stage: int
    tp_rank: int
    tp: int
    pp: int
    seq: int
    batch: int
    kv_dtype: str
    first_layer: int
    last_layer: int  # inclusive; first > last when the stage holds no layer
    groups: tuple[GroupPlan, ...]
    estimated_bytes: int  # sum of the groups' estimates
    footprint_bytes: int  # CacheModel.rank_footprint(stage, seq, batch).cache_bytes: the static estimate
    block_size: int | None = None
    block_source: str | None = None
    # what footprint_bytes is, when the plan must add up to it: "cache model" (static layout), the engine
    # (its num_gpu_blocks x bytes_per_block), or None (paged pools sized here: block-rounded, may exceed it)
    reference: str | None = None
    checks: tuple[str, ...] = ()  # layout problems found while planning (each one fails the match)

    @property
    def tensors(self) -> tuple[TensorSpec, ...]:
        return tuple(t for g in self.groups for t in g.tensors)

    @property
    def planned_bytes(self) -> int:
        return sum(g.planned_bytes for g in self.groups)


def stage_layers(cache: CacheModel, stage: int) -> dict[int, LayerSpec]:
    """Global index -> layer spec for the layers of one pipeline stage (vLLM's split)."""
    counts = pp_layer_counts(cache.spec.layers, cache.pp)
    if not 0 <= stage < cache.pp:
        raise InputError(f"stage {stage} does not exist with --pp {cache.pp}", where="--stage", hint=f"0 to {cache.pp - 1}")
    start = sum(counts[:stage])
    return {i: cache.spec.layer_specs[i] for i in range(start, start + counts[stage])}


def most_loaded_stage(cache: CacheModel, seq: int, batch: int) -> int:
    """The stage whose rank holds the most cache (the one that decides whether a plan fits)."""
    sizes = [cache.rank_footprint(s, seq, batch).cache_bytes for s in range(cache.pp)]
    return sizes.index(max(sizes))


def _group_key(layer: LayerSpec, tp: int) -> tuple:
    """Layers that share a tensor layout: one kind, window, per-token tensors and state."""
    return (layer.kind, layer.window, layer.token_tensors(tp), layer.state)


def _label(layer: LayerSpec) -> str:
    return f"{layer.kind}({layer.window})" if layer.windowed else layer.kind


def _attention_tensors(i: int, layer: LayerSpec, kv: DType, tp: int, lead: tuple[int, ...], token_axis: str) -> list[TensorSpec]:
    """The per-token tensors of one layer (LayerSpec.token_tensors: K and V, or the MLA latent), none for a layer
    without them. `lead` is (batch, len) for the static layout or (num_blocks, block_size) for the paged one;
    `token_axis` says where the heads go."""
    per_token = layer.token_tensors(tp)
    if not per_token:
        return []
    st = storage_dtype(kv)
    out = []
    for role, (*heads, dim) in per_token:
        if token_axis == "static":  # [batch, heads, len, dim]; [batch, len, dim] for the headless latent
            shape = (lead[0], *heads, lead[1], st.last_dim(dim))
        else:  # [num_blocks, block_size, heads, dim]
            shape = (*lead, *heads, st.last_dim(dim))
        out.append(TensorSpec(i, role, shape, st.torch_name, st.itemsize))
    return out


def _state_tensors(i: int, layer: LayerSpec, tp: int, batch: int) -> list[TensorSpec]:
    """The fixed state (LayerSpec.state_tensors: conv and recurrent, TP splitting the first dimension) for `batch`
    sequences; none for a layer without one."""
    out = []
    for role, shape, name in layer.state_tensors(tp):
        st = storage_dtype(lookup_dtype(name))
        if st.packed_bits is not None:  # a packed state is one byte run per sequence, as cache.py rounds it
            full = (batch, st.last_dim(prod(shape)))
        else:
            full = (batch, *shape)
        out.append(TensorSpec(i, role, full, st.torch_name, st.itemsize))
    return out


def static_tensors(i: int, layer: LayerSpec, kv: DType, tp: int, seq: int, batch: int) -> list[TensorSpec]:
    return _attention_tensors(i, layer, kv, tp, (batch, cached_tokens(layer, seq)), "static") + _state_tensors(i, layer, tp, batch)


def paged_tensors(i: int, layer: LayerSpec, kv: DType, tp: int, num_blocks: int, block_size: int) -> list[TensorSpec]:
    """One layer's block pool (attention layers only)."""
    return _attention_tensors(i, layer, kv, tp, (num_blocks, block_size), "paged")


def _static_estimate(layer: LayerSpec, kv: DType, tp: int, seq: int, batch: int) -> int:
    return batch * (layer_token_bytes(layer, kv, tp) * cached_tokens(layer, seq) + layer_state_bytes(layer, tp))


def rank_plan(cache: CacheModel, *, seq: int, batch: int, layout: str = STATIC, stage: int = 0, tp_rank: int = 0,
              blocks: BlockPlan | None = None, block_size: int | None = None) -> RankPlan:
    """The tensors and estimates of the rank (stage, tp_rank) of a TP x PP deployment."""
    if layout not in LAYOUTS:
        raise InputError(f"unknown layout {layout!r}", where="--layout", hint="static or paged")
    if batch < 1:
        raise InputError(f"must be at least 1, got {batch}", where="--batch")
    layers = stage_layers(cache, stage)
    # the probe allocates the tensors of the kinds it knows; a kind it does not is refused, not left unallocated
    require_mapped_kinds(layers.values(), ENGINE_BASE_KINDS, "the probe", cache.spec.source or cache.spec.name)
    kv, tp = cache.kv_dtype, cache.tp
    if layout == PAGED and blocks is None:
        blocks = BlockPlan.static_need(layers, seq, batch, block_size or DEFAULT_BLOCK_SIZE)
    grouped: dict[tuple, list[int]] = {}
    for i, layer in layers.items():
        grouped.setdefault(_group_key(layer, tp), []).append(i)
    groups, labels = [], [_label(layers[idx[0]]) for idx in grouped.values()]
    for key, idx in grouped.items():
        one = layers[idx[0]]  # the group's layers are alike
        if not one.caches:
            continue
        label = _label(one)
        if labels.count(label) > 1:  # per-layer KV heads (Nemotron-Super): say which heads
            if one.headed:
                label += (f" kv_heads={one.heads_per_rank(tp)} head_dim={one.head_dim}"
                          + (f"/{one.v_head_dim}" if one.v_head_dim != one.head_dim else ""))
            else:
                label += f" #{list(grouped).index(key)}"
        tensors, estimate = [], 0
        for i in idx:
            layer = layers[i]
            if layout == STATIC:
                tensors += static_tensors(i, layer, kv, tp, seq, batch)
                estimate += _static_estimate(layer, kv, tp, seq, batch)
            else:  # a block pool for the tokens, a slot per sequence for a state
                n = blocks.blocks.get(i, 0)
                tensors += paged_tensors(i, layer, kv, tp, n, blocks.block_size) + _state_tensors(i, layer, tp, batch)
                estimate += n * blocks.block_size * layer_token_bytes(layer, kv, tp) + batch * layer_state_bytes(layer, tp)
        groups.append(GroupPlan(label=label, kind=one.kind, layers=tuple(idx), tensors=tuple(tensors), estimated_bytes=estimate))
    first = min(layers) if layers else 0
    last = max(layers) if layers else -1
    return RankPlan(
        layout=layout, rank=stage * tp + tp_rank, stage=stage, tp_rank=tp_rank, tp=tp, pp=cache.pp, seq=seq, batch=batch,
        kv_dtype=kv.name, first_layer=first, last_layer=last, groups=tuple(groups),
        estimated_bytes=sum(g.estimated_bytes for g in groups),
        footprint_bytes=cache.rank_footprint(stage, seq, batch).cache_bytes,
        block_size=blocks.block_size if blocks else None, block_source=blocks.source if blocks else None,
        reference="cache model" if layout == STATIC else None,
    )


def engine_rank_plan(cache: CacheModel, result, *, stage: int, tp_rank: int = 0, engine: str = "vllm") -> RankPlan:
    """The pool a paged engine allocates on one worker, from its estimate (kvplan/engines/vllm/engine.py fields:
    kv_cache_groups, workers, num_gpu_blocks), as vLLM lays it out (v1/core/kv_cache_utils.py
    get_kv_cache_config_from_groups; v1/worker/gpu_model_runner.py allocates each KVCacheTensor as one
    int8 buffer and views it per layer):
      one group (every layer alike, or one kind with per-layer pages): a tensor per layer of num_blocks
        pages, here typed as that layer's K/V (or latent, or state) blocks;
      several groups (hybrids, sliding + full): group_size tensors of num_blocks x page bytes, each shared
        by one layer of every group (`shared_by`); here raw uint8 slots, and every layer's typed page is
        checked to fit in the slot's page.
    The estimate is the engine's own figure, num_gpu_blocks x bytes_per_block of this worker."""
    groups_e = tuple(getattr(result, "kv_cache_groups", None) or ())
    workers = tuple(getattr(result, "workers", None) or ())
    num_blocks = getattr(result, "num_gpu_blocks", None)
    if not groups_e or not workers or num_blocks is None:
        raise InputError(f"the {engine} estimate sized no block pool", where="--engine",
                         hint="give --gpu NAME, --gpu-mem SIZE or --kv-cache-memory SIZE")
    worker = next((w for w in workers if w.stage == stage), None)
    if worker is None:
        raise InputError(f"the {engine} estimate has no worker for stage {stage}", where="--stage")
    layers = stage_layers(cache, stage)
    # as in rank_plan: a kind the probe has no tensors for is refused, not left out of the pool
    require_mapped_kinds(layers.values(), ENGINE_BASE_KINDS, "the probe", cache.spec.source or cache.spec.name)
    kv, tp = cache.kv_dtype, cache.tp
    engine_bytes = num_blocks * worker.bytes_per_block
    checks: list[str] = []
    plans: list[GroupPlan] = []
    if len(groups_e) == 1:
        bs = groups_e[0].block_size
        grouped: dict[tuple, list[int]] = {}
        for i, layer in layers.items():
            if layer.caches:
                grouped.setdefault(_group_key(layer, tp), []).append(i)
        for idx in grouped.values():
            tensors, estimate = [], 0
            for i in idx:
                layer = layers[i]
                # pages of tokens; in pure state models one state per block (vLLM's mamba block = max_model_len)
                tensors += paged_tensors(i, layer, kv, tp, num_blocks, bs) + _state_tensors(i, layer, tp, num_blocks)
                estimate += num_blocks * (bs * layer_token_bytes(layer, kv, tp) + layer_state_bytes(layer, tp))
            one = layers[idx[0]]
            plans.append(GroupPlan(label=_label(one), kind=one.kind, layers=tuple(idx), tensors=tuple(tensors),
                                   estimated_bytes=estimate))
        size = groups_e[0].block_size
    else:
        page = groups_e[0].page_bytes
        if any(g.page_bytes != page for g in groups_e):
            checks.append(f"{engine} groups with different page sizes: {sorted({g.page_bytes for g in groups_e})}")
        for i, layer in layers.items():
            if not layer.caches:
                continue
            kind = "mamba" if layer.recurrent else layer.kind  # vLLM's name of a state layer's group (MambaSpec)
            group = next((g for g in groups_e if g.kind == kind and (g.window == layer.window or not layer.windowed)), None)
            if group is None:
                checks.append(f"layer {i} ({layer.kind}) belongs to no {engine} KV cache group")
                continue
            typed = layer_state_bytes(layer, tp) + group.block_size * layer_token_bytes(layer, kv, tp)
            if typed > page:
                checks.append(f"layer {i}: a {layer.kind} block of {typed:,} B does not fit the shared page of {page:,} B")
        slots = tuple(TensorSpec(-1 - k, "slot", (num_blocks, page), "uint8", 1) for k in range(worker.group_size))
        plans.append(GroupPlan(label=f"shared slots ({len(groups_e)} groups)", kind="pool",
                               layers=tuple(i for i, layer in layers.items() if layer.caches), tensors=slots,
                               estimated_bytes=num_blocks * worker.group_size * page))
        size = min(g.block_size for g in groups_e)
    first = min(layers) if layers else 0
    last = max(layers) if layers else -1
    return RankPlan(
        layout=PAGED, rank=stage * tp + tp_rank, stage=stage, tp_rank=tp_rank, tp=tp, pp=cache.pp, seq=getattr(result, "seq", 0),
        batch=getattr(result, "batch", 1), kv_dtype=kv.name, first_layer=first, last_layer=last, groups=tuple(plans),
        estimated_bytes=sum(g.estimated_bytes for g in plans), footprint_bytes=engine_bytes, block_size=size,
        block_source=f"{engine}: num_gpu_blocks {num_blocks:,} x {worker.bytes_per_block:,} B per block on stage {stage}",
        reference=engine, checks=tuple(checks),
    )


# ------------------------------------------------------------------ growth units for --find-max

@dataclass(frozen=True)
class GrowthUnit:
    """What --find-max adds one of at a time: a sequence (static) or a block in every pool (paged)."""

    name: str  # "sequences" or "blocks"
    estimated_bytes: int  # kvplan's bytes for one unit on this rank
    layers: Mapping[int, LayerSpec] = field(hash=False)
    kv: DType
    tp: int
    seq: int
    block_size: int | None

    def tensors(self, n: int) -> list[TensorSpec]:
        """The tensors that hold n more units."""
        out: list[TensorSpec] = []
        for i, layer in self.layers.items():
            if self.name == "sequences":
                out += static_tensors(i, layer, self.kv, self.tp, self.seq, n)
            else:
                out += paged_tensors(i, layer, self.kv, self.tp, n, self.block_size)
        return out


def growth_unit(cache: CacheModel, *, layout: str, stage: int, seq: int, block_size: int | None) -> GrowthUnit:
    layers = stage_layers(cache, stage)
    # as in rank_plan: a kind the probe has no tensors for is refused, not grown without them
    require_mapped_kinds(layers.values(), ENGINE_BASE_KINDS, "the probe", cache.spec.source or cache.spec.name)
    if layout == STATIC:
        # one more sequence of seq tokens: the per-sequence cache of this stage (plan.py's max_batch divisor)
        per_seq = cache.rank_footprint(stage, seq, 1).cache_bytes
        if per_seq == 0:
            raise UnsupportedError("this stage holds no cache to grow", where="--find-max")
        return GrowthUnit("sequences", per_seq, layers, cache.kv_dtype, cache.tp, seq, None)
    bs = block_size or DEFAULT_BLOCK_SIZE
    attention = {i: layer for i, layer in layers.items() if layer.attends}
    if not attention:
        raise UnsupportedError("paged --find-max grows attention block pools, and this stage has no attention layer",
                               where="--find-max", hint="use --layout static to grow whole sequences")
    # one more block in every attention layer's pool: vLLM's bytes per block (num_gpu_blocks divisor)
    per_block = sum(bs * layer_token_bytes(layer, cache.kv_dtype, cache.tp) for layer in attention.values())
    return GrowthUnit("blocks", per_block, attention, cache.kv_dtype, cache.tp, seq, bs)
