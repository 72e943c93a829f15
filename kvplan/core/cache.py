"""KV-cache and recurrent-state arithmetic. Pure: ModelSpec + dtype + parallelism in, integers out.

What one layer keeps is the layer's own rule (core/layers.py: token_bytes, state_bytes, tokens_kept); this module
adds them up over layers, pipeline stages and tensor-parallel ranks. The static convention is transformers'
StaticCache: a sliding layer keeps min(N, window) tokens and a chunked-local layer (Llama 4) min(N, chunk)
(cache_utils.py STATIC_LAYER_TYPE_MAPPING; measured for Llama-4-Scout on `meta`: 36 chunked layers [1, 8, 8192, 128]
at N = 8192 and at N = 100000, 12 full layers [1, 8, N, 128]). Engines differ (slightly for sliding, more for
chunked) and model that themselves.

Whole-model figures count every rank: KV heads replicated because tp > kv_heads, and MLA latents that
every TP rank holds in full, are counted once per copy (docs/json.md `kv_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from kvplan.core.dtypes import DType
from kvplan.core.errors import InputError
from kvplan.core.layers import LayerSpec, kv_heads_per_rank  # noqa: F401  (kv_heads_per_rank: the rule engines cite)
from kvplan.core.spec import ModelSpec
from kvplan.core.units import shown

MAX_PARALLEL = 4096


def pp_layer_counts(layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage as vLLM splits them (vllm/distributed/utils.py get_pp_indices):
    layers // pp each, and the remainder one extra each to the stages just before the last."""
    if pp > layers:
        raise InputError(f"pipeline parallel size {pp} exceeds the model's {layers} layers", where="--pp")
    counts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        counts[-i] += 1
    return counts


def layer_token_bytes(layer: LayerSpec, kv: DType, tp: int = 1) -> int:
    """Bytes one token adds to one layer on one TP rank (the layer's rule)."""
    return layer.token_bytes(kv, tp)


def layer_state_bytes(layer: LayerSpec, tp: int = 1) -> int:
    """Fixed bytes one sequence keeps in one layer on one TP rank (the layer's rule)."""
    return layer.state_bytes(tp)


def cached_tokens(layer: LayerSpec, seq: int) -> int:
    """Tokens of a sequence of `seq` a layer keeps in transformers' StaticCache (the layer's rule)."""
    return layer.tokens_kept(seq)


@dataclass(frozen=True, eq=False, repr=False)
class LayerGroup:
    """Layers of one stage that cost the same: one of them (`layer`), how many, and its per-rank figures."""

    layer: LayerSpec
    count: int
    token_bytes: int  # per layer, per rank
    state_bytes: int  # per layer, per rank, per sequence
    kv_heads_per_rank: int
    kv_dtype: DType | None = None  # what `kv_bytes` asks the layer's own rule with
    tp: int = 1

    @property
    def kind(self) -> str:
        return self.layer.kind

    @property
    def window(self) -> int | None:
        return self.layer.window

    @property
    def head_dim(self) -> int:
        return self.layer.head_dim

    @property
    def v_head_dim(self) -> int:
        return self.layer.v_head_dim

    @property
    def latent_dim(self) -> int:
        return self.layer.mla.latent_dim if self.layer.mla else 0

    def kv_bytes(self, seq: int) -> int:
        if self.kv_dtype is None:
            return self.count * self.token_bytes * self.layer.tokens_kept(seq)
        return self.count * self.layer.seq_bytes(self.kv_dtype, self.tp, seq)  # the kind's rule (compressed layers)

    def peak_kv_bytes(self, seq: int) -> int:
        """The most kv_bytes is at any length up to seq (layer.peak_seq_bytes)."""
        if self.kv_dtype is None:
            return self.kv_bytes(seq)
        return self.count * self.layer.peak_seq_bytes(self.kv_dtype, self.tp, seq)


@dataclass(frozen=True, eq=False, repr=False)
class Footprint:
    """The bytes a batch's cache holds: its KV bytes (growing with the tokens) and its fixed state bytes."""

    kv_bytes: int
    state_bytes: int

    @property
    def cache_bytes(self) -> int:
        return self.kv_bytes + self.state_bytes


@dataclass(frozen=True, eq=False, repr=False)
class CacheModel:
    """The cache of one model under a KV dtype and a TP x PP layout."""

    spec: ModelSpec
    kv_dtype: DType
    tp: int = 1
    pp: int = 1

    def __post_init__(self):
        for name, value in (("--tp", self.tp), ("--pp", self.pp)):
            if not isinstance(value, int) or value < 1 or value > MAX_PARALLEL:
                raise InputError(f"must be a whole number from 1 to {MAX_PARALLEL}, got {shown(value)}", where=name)
        for layer in self.spec.layer_specs:  # validates tp against every layer's KV heads, once
            layer.heads_per_rank(self.tp)

    @cached_property
    def stages(self) -> tuple[tuple[LayerGroup, ...], ...]:
        """Per pipeline stage, its layers grouped by cost, for one TP rank of that stage."""
        out, start = [], 0
        for n in pp_layer_counts(self.spec.layers, self.pp):
            out.append(self._groups(self.spec.layer_specs[start:start + n]))
            start += n
        return tuple(out)

    def _groups(self, layers: tuple[LayerSpec, ...]) -> tuple[LayerGroup, ...]:
        """Layers that cost the same share a group; layers equal but for their KV heads on the whole model group
        by what they hold on one rank."""
        groups: dict[tuple, list] = {}
        for layer in layers:
            heads = layer.heads_per_rank(self.tp)
            key = (type(layer), layer.token_bytes(self.kv_dtype, self.tp), layer.window, layer.state_bytes(self.tp),
                   heads, layer.head_dim, layer.v_head_dim, layer.mla.latent_dim if layer.mla else 0, layer.compress)
            groups.setdefault(key, [layer, 0])[1] += 1
        return tuple(LayerGroup(layer=first, count=n, token_bytes=k[1], state_bytes=k[3], kv_heads_per_rank=k[4],
                                kv_dtype=self.kv_dtype, tp=self.tp)
                     for k, (first, n) in groups.items())

    # -- one rank -----------------------------------------------------------------------------
    def rank_footprint(self, stage: int, seq: int, batch: int = 1, *, peak: bool = False) -> Footprint:
        """One rank's cache at `seq` tokens; with `peak`, the most it holds at any length up to `seq`."""
        groups = self.stages[stage]
        kv = sum(g.peak_kv_bytes(seq) if peak else g.kv_bytes(seq) for g in groups)
        return Footprint(kv_bytes=batch * kv, state_bytes=batch * sum(g.count * g.state_bytes for g in groups))

    def max_rank_footprint(self, seq: int, batch: int = 1) -> Footprint:
        """The most loaded GPU's cache (stages differ when layers are uneven or mixed), at its peak over the lengths a
        sequence passes through on its way to `seq`: what fitting needs. It is the cache at `seq` for every kind but
        DeepSeek-V4's compressed layers, whose open window is drained at each compression boundary."""
        return max((self.rank_footprint(s, seq, batch, peak=True) for s in range(self.pp)),
                   key=lambda f: (f.cache_bytes, f.kv_bytes))

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
