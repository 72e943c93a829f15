"""KV-cache and recurrent-state arithmetic. Pure: ModelSpec + dtype + parallelism in, integers out.

Per layer and rank, one token costs
    full / sliding / chunked:  kv_heads_per_rank x (head_dim + v_head_dim) x bits / 8
    mla:             (kv_lora_rank + qk_rope_head_dim) x bits / 8   (one latent, no factor 2, not split by TP)
    state / none:    0   (state layers hold a fixed amount per sequence instead)
and a sequence of N tokens keeps min(N, window) tokens in a sliding layer, and min(N, attention_chunk_size)
in a chunked-local layer (Llama 4): transformers' StaticCache convention, which gives both kinds a
StaticSlidingWindowLayer of [B, H_kv, min(window, N), d] (cache_utils.py STATIC_LAYER_TYPE_MAPPING;
measured for Llama-4-Scout on `meta`: 36 chunked layers [1, 8, 8192, 128] at N = 8192 and at N = 100000,
12 full layers [1, 8, N, 128]). Engines differ (slightly for sliding, more for chunked) and model that
themselves.

Whole-model figures count every rank: KV heads replicated because tp > kv_heads, and MLA latents that
every TP rank holds in full, are counted once per copy (DESIGN.md `kv_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from kvplan.core.dtypes import DType, dtype
from kvplan.core.errors import InputError
from kvplan.core.spec import FULL, HEADED_KINDS, MLA, STATE, WINDOWED_KINDS, LayerSpec, ModelSpec

MAX_PARALLEL = 4096


def kv_heads_per_rank(kv_heads: int, tp: int, *, where: str = "--tp") -> int:
    """KV heads each TP rank holds: kv/tp, or 1 replicated head when tp > kv (vLLM's rule).

    vLLM requires kv % tp == 0, or tp % kv == 0 when it replicates (vllm/config/parallel.py).
    """
    if kv_heads % tp == 0:
        return kv_heads // tp
    if tp % kv_heads == 0:
        return 1
    raise InputError(f"tensor parallel size {tp} does not divide {kv_heads} KV heads, nor do they divide it", where=where,
                     hint="choose a tp that divides the KV heads or a multiple of them")


def pp_layer_counts(layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage as vLLM splits them (vllm/distributed/utils.py get_pp_indices):
    layers // pp each, and the remainder one extra each to the stages just before the last."""
    if pp > layers:
        raise InputError(f"pipeline parallel size {pp} exceeds the model's {layers} layers", where="--pp")
    counts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        counts[-i] += 1
    return counts


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _bytes(elements: int, bits: int) -> int:
    return _ceil_div(elements * bits, 8)


def layer_token_bytes(layer: LayerSpec, kv: DType, tp: int = 1) -> int:
    """Bytes one token adds to one layer on one TP rank."""
    if layer.kind in HEADED_KINDS:
        heads = kv_heads_per_rank(layer.kv_heads, tp)
        return _bytes(heads * (layer.head_dim + layer.v_head_dim), kv.bits)
    if layer.kind == MLA:
        return _bytes(layer.mla.latent_dim, kv.bits)
    return 0


def layer_state_bytes(layer: LayerSpec, tp: int = 1) -> int:
    """Fixed bytes one sequence keeps in one state layer on one TP rank (first dim split by TP)."""
    if layer.kind != STATE:
        return 0
    state = layer.state

    def shard(shape: tuple[int, ...]) -> int:
        rows = _ceil_div(shape[0], tp)
        n = rows
        for d in shape[1:]:
            n *= d
        return n

    return _bytes(shard(state.conv_shape), dtype(state.conv_dtype).bits) + _bytes(shard(state.recurrent_shape), dtype(state.recurrent_dtype).bits)


def cached_tokens(layer: LayerSpec, seq: int) -> int:
    """Tokens of a sequence of `seq` that a layer keeps: capped at the window for sliding layers and at the
    chunk length for chunked-local layers (a chunked layer attends within its current chunk only, but
    transformers' StaticCache allocates, and keeps filled, a rolling buffer of min(seq, chunk) tokens)."""
    if layer.kind in WINDOWED_KINDS:
        return min(seq, layer.window)
    if layer.kind in (FULL, MLA):
        return seq
    return 0


@dataclass(frozen=True)
class LayerGroup:
    """Layers of one stage that cost the same: kind, per-rank bytes per token, window, state bytes."""

    kind: str
    count: int
    token_bytes: int  # per layer, per rank
    window: int | None
    state_bytes: int  # per layer, per rank, per sequence
    kv_heads_per_rank: int
    head_dim: int
    v_head_dim: int
    latent_dim: int

    def kv_bytes(self, seq: int) -> int:
        tokens = min(seq, self.window) if self.window is not None else seq
        return self.count * self.token_bytes * tokens


@dataclass(frozen=True)
class Footprint:
    kv_bytes: int
    state_bytes: int

    @property
    def cache_bytes(self) -> int:
        return self.kv_bytes + self.state_bytes


@dataclass(frozen=True)
class CacheModel:
    """The cache of one model under a KV dtype and a TP x PP layout."""

    spec: ModelSpec
    kv_dtype: DType
    tp: int = 1
    pp: int = 1

    def __post_init__(self):
        for name, value in (("--tp", self.tp), ("--pp", self.pp)):
            if not isinstance(value, int) or value < 1 or value > MAX_PARALLEL:
                raise InputError(f"must be a whole number from 1 to {MAX_PARALLEL}, got {value!r}", where=name)
        for layer in self.spec.layer_specs:  # validates tp against every layer's KV heads, once
            layer_token_bytes(layer, self.kv_dtype, self.tp)

    @cached_property
    def stages(self) -> tuple[tuple[LayerGroup, ...], ...]:
        """Per pipeline stage, its layers grouped by cost, for one TP rank of that stage."""
        out, start = [], 0
        for n in pp_layer_counts(self.spec.layers, self.pp):
            out.append(self._groups(self.spec.layer_specs[start:start + n]))
            start += n
        return tuple(out)

    def _groups(self, layers: tuple[LayerSpec, ...]) -> tuple[LayerGroup, ...]:
        groups: dict[tuple, int] = {}
        for layer in layers:
            heads = kv_heads_per_rank(layer.kv_heads, self.tp) if layer.kind in HEADED_KINDS else 0
            key = (layer.kind, layer_token_bytes(layer, self.kv_dtype, self.tp), layer.window,
                   layer_state_bytes(layer, self.tp), heads, layer.head_dim, layer.v_head_dim,
                   layer.mla.latent_dim if layer.mla else 0)
            groups[key] = groups.get(key, 0) + 1
        return tuple(LayerGroup(kind=k[0], count=n, token_bytes=k[1], window=k[2], state_bytes=k[3],
                                kv_heads_per_rank=k[4], head_dim=k[5], v_head_dim=k[6], latent_dim=k[7])
                     for k, n in groups.items())

    # -- one rank -----------------------------------------------------------------------------
    def rank_footprint(self, stage: int, seq: int, batch: int = 1) -> Footprint:
        groups = self.stages[stage]
        return Footprint(kv_bytes=batch * sum(g.kv_bytes(seq) for g in groups),
                         state_bytes=batch * sum(g.count * g.state_bytes for g in groups))

    def max_rank_footprint(self, seq: int, batch: int = 1) -> Footprint:
        """The most loaded GPU's cache (stages differ when layers are uneven or mixed)."""
        return max((self.rank_footprint(s, seq, batch) for s in range(self.pp)), key=lambda f: (f.cache_bytes, f.kv_bytes))

    # -- whole model, every rank counted --------------------------------------------------------
    def footprint(self, seq: int, batch: int = 1) -> Footprint:
        kv = state = 0
        for s in range(self.pp):
            f = self.rank_footprint(s, seq, batch)
            kv += f.kv_bytes
            state += f.state_bytes
        return Footprint(kv_bytes=kv * self.tp, state_bytes=state * self.tp)

    @cached_property
    def kv_bytes_per_token(self) -> int:
        """K/V bytes one token adds across all layers and ranks, before any window is full."""
        return self.tp * sum(g.count * g.token_bytes for stage in self.stages for g in stage)

    def state_bytes_per_sequence(self) -> int:
        return self.footprint(1, 1).state_bytes
