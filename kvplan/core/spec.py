"""ModelSpec: what kvplan knows about a model, as frozen dataclasses, and its strict validation.

A spec is read from a plain mapping (a YAML spec file, or what hf_config.py derives from a config.json);
this module does no I/O. Every layer is resolved to a LayerSpec, so the cache math never has to
re-interpret patterns. The compact layout (default kind, a repeating pattern, or a per-layer list) is
kept too, so `kvplan show` can write the spec back in the form a person edits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from kvplan.core.dtypes import dtype as lookup_dtype
from kvplan.core.errors import InputError, UnsupportedError, check_name, did_you_mean
from kvplan.core.layers import (  # noqa: F401  (the layer kinds are spec vocabulary: re-exported for readers of specs)
    CHUNKED, COMPRESSED, COMPRESSED_INDEXED, FULL, HEADED_KINDS, INDEXED_FULL, INDEXED_MLA, KINDS, LAYER_KINDS, MLA,
    NONE, SLIDING, STATE, WINDOWED_KINDS, CompressSpec, LayerSpec, MlaSpec, StateSpec, make_layer)
from kvplan.core.units import shown
from kvplan.core.regex import Pattern

# other spellings seen in configs and papers, accepted in spec files
_KIND_ALIASES = {
    "full_attention": FULL, "global": FULL, "attention": FULL, "attn": FULL,
    "sliding_attention": SLIDING, "local": SLIDING, "swa": SLIDING, "sliding_window": SLIDING,
    "chunked_attention": CHUNKED, "chunked_local": CHUNKED, "chunk": CHUNKED,
    "latent": MLA, "indexed_attention": INDEXED_MLA, "deepseek_sparse_attention": INDEXED_MLA, "dsa": INDEXED_MLA,
    "mamba": STATE, "mamba2": STATE, "ssm": STATE, "linear": STATE, "linear_attention": STATE,
    "no_op": NONE, "skip": NONE, "mlp": NONE,
    # DeepSeek-V4's layer_types (transformers DeepseekV4Config)
    "heavily_compressed_attention": COMPRESSED, "compressed_sparse_attention": COMPRESSED_INDEXED,
    "minimax_m3_sparse": INDEXED_FULL,  # MiniMax-M3's layer_types (transformers MiniMaxM3VLTextConfig)
}

# Bounds that keep every per-layer loop finite and catch typos; far beyond any published model.
MAX_LAYERS = 4096
MAX_HEADS = 65536
MAX_DIM = 1 << 20
MAX_PARAMS = 10**14


@dataclass(frozen=True)
class Layout:
    """The compact, editable form of the per-layer layout, as written in a spec file."""

    default: str = FULL
    pattern: tuple[str, ...] | None = None  # repeats from layer 0
    per_layer: tuple[str, ...] | None = None  # exactly one entry per layer
    kv_heads: tuple[int, ...] | None = None  # per-layer KV heads, where they differ by layer
    # per-layer head widths (K and V alike), where they differ by layer: Gemma 4's global layers (global_head_dim)
    head_dims: tuple[int, ...] | None = None
    # DeepSeek-V4: per layer, the tokens one compressed entry stands for (0: the window only); compressed layers only
    compress_ratios: tuple[int, ...] | None = None


@dataclass(frozen=True)
class MoeSpec:
    """The routed experts of a mixture-of-experts model: what expert parallelism spreads over the GPUs and what the
    engines size their fused-MoE kernels' workspace by (the parameter count has them already)."""

    experts: int  # routed experts in each MoE layer
    experts_per_token: int
    intermediate_size: int  # one expert's MLP width
    layers: int  # decoder layers with routed experts
    expert_params: int  # the routed experts' weights, all MoE layers together (shared experts not included)
    shared_intermediate_size: int = 0  # the shared experts as one MLP beside the fused kernel
    dense_intermediate_size: int = 0  # the MLP width of the layers without experts (0: none)
    gated: bool = True  # gate and up projections fused (SiLU-and-multiply); False: up only (squared ReLU)


@dataclass(frozen=True)
class MtpSpec:
    """Multi-token-prediction layers the checkpoint holds beyond the decoder layers (DeepSeek-V3's
    num_nextn_predict_layers, Qwen3-Next, GLM-4.5): loaded only for speculative decoding (method mtp)."""

    layers: int
    params: int  # their weights together, the embedding and output head they share with the model left out


@dataclass(frozen=True)
class ModelSpec:
    """A model as kvplan sizes it: its layers, heads, dtypes and cache layout, from a bundled spec or a config.json."""

    name: str
    layers: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    dtype: str
    params: int
    layout: Layout
    layer_specs: tuple[LayerSpec, ...]
    v_head_dim: int | None = None
    hidden_size: int | None = None
    vocab_size: int | None = None
    weight_dtype: str | None = None
    weights_bytes: int | None = None
    weights_source: str | None = None
    # of the checkpoint's bytes, what every tensor-parallel rank loads whole rather than 1/tp of (GPTQ act-order's
    # row-parallel scales and zero points: model/weights.py _row_parallel); None or 0: everything is split
    tp_whole_bytes: int | None = None
    active_params: int | None = None
    vision_params: int | None = None
    # why the checkpoint's weight bytes are unknown (a tower kvplan cannot size): params are then the text model's
    # alone; an estimate that needs the weights is cannot judge naming this, one given the pool is not
    weights_unknown: str | None = None
    max_context: int | None = None
    # the dims rotary embedding turns, where below head_dim (partial_rotary_factor x head_dim: Qwen3.5 64 of 256,
    # GLM-4.x half); None: all of head_dim (MLA's rotary part is mla.qk_rope_head_dim)
    rotary_dim: int | None = None
    # multimodal rotary (rope_parameters.mrope_section, Qwen2.5-VL / Qwen3.5): vLLM's cos/sin cache has 4 x
    # max_position rows (0.19.0 rotary_embedding/mrope.py MRotaryEmbedding cache_max_position_num)
    mrope: bool | None = None
    sliding_window: int | None = None
    attention_chunk_size: int | None = None
    tie_word_embeddings: bool | None = None  # None: the source does not say
    mla: MlaSpec | None = None
    state: StateSpec | None = None
    index_head_dim: int | None = None  # DeepSeek-V4: the indexer's compressed key width (compressed_indexed layers)
    intermediate_size: int | None = None  # the dense MLP width (LoRA slots are sized by it)
    moe: MoeSpec | None = None
    mtp: MtpSpec | None = None
    quant_method: str | None = None  # config.json's quantization_config.quant_method ("fp8", "mxfp4", "awq", ...)
    aliases: tuple[str, ...] = ()
    architecture: str | None = None
    provenance: str | None = None
    notes: str | None = None
    source: str | None = field(default=None, compare=False)  # where the spec was read from

    def require_known_weights(self, *, budget: bool = False) -> None:
        """UnsupportedError (exit 3) when the weights are unknown (a tower kvplan cannot size) and no exact figure from
        the checkpoint stands in: every weight figure made from params asks here first. An engine's budget asks with
        `budget`: it needs the tower itself (its split over the GPUs, the engine's encoder profile), which the
        checkpoint's total does not give."""
        if self.weights_unknown and (budget or self.weights_bytes is None):
            raise UnsupportedError(f"the weights are unknown: {self.weights_unknown}", where=self.source or self.name,
                                   hint="the KV cache is known: give --kv-cache-memory, or put the checkpoint's "
                                        "safetensors (or model.safetensors.index.json) beside its config.json")

    def count(self, kind: str) -> int:
        return sum(1 for layer in self.layer_specs if layer.kind == kind)

    def layout_summary(self) -> str:
        """'32 full', '21 sliding(4096) + 21 full', '54 mamba + 10 full' — for tables."""
        parts = []
        for kind in LAYER_KINDS:
            n = self.count(kind)
            if not n:
                continue
            label = {SLIDING: f"sliding({self.sliding_window})", CHUNKED: f"chunked({self.attention_chunk_size})",
                     STATE: "state"}.get(kind, kind)
            parts.append(f"{n} {label}")
        return " + ".join(parts)


# ---------------------------------------------------------------- validation

_TOP_KEYS = {
    "name", "aliases", "provenance", "architecture", "notes", "layers", "attention_heads", "kv_heads",
    "head_dim", "v_head_dim", "hidden_size", "vocab_size", "dtype", "weight_dtype", "params",
    "active_params", "vision_params", "weights_unknown", "weights_bytes", "weights_source", "tp_whole_bytes",
    "max_context", "rotary_dim", "mrope", "layout",
    "sliding_window", "attention_chunk_size", "tie_word_embeddings", "mla", "state", "intermediate_size", "moe", "mtp",
    "quant_method", "index_head_dim",
}
_REQUIRED = ("name", "layers", "attention_heads", "head_dim", "dtype", "params")
_LAYOUT_KEYS = {"default", "pattern", "per_layer", "kv_heads", "head_dims", "compress_ratios"}
_MLA_KEYS = {"kv_lora_rank", "qk_rope_head_dim"}
_MLA_OPTIONAL_KEYS = {"q_lora_rank", "index_head_dim"}
_MOE_REQUIRED = ("experts", "experts_per_token", "intermediate_size", "layers", "expert_params")
_MOE_KEYS = {*_MOE_REQUIRED, "shared_intermediate_size", "dense_intermediate_size", "gated"}
_STATE_KEYS = {"conv_shape", "recurrent_shape", "conv_dtype", "recurrent_dtype"}
_MTP_KEYS = {"layers", "params"}


class _Reader:
    """Typed access to one mapping, with errors that name the key path."""

    def __init__(self, data: Any, path: str, allowed: set[str]):
        if not isinstance(data, Mapping):
            raise InputError(f"expected a mapping of keys, got {type(data).__name__}", where=path or None,
                             hint="a spec file is a YAML mapping such as `layers: 32`")
        self.data = data
        self.path = path
        for key in data:
            if not isinstance(key, str) or key not in allowed:
                raise InputError(f"unknown key {key!r}", where=self._where(str(key)),
                                 hint=did_you_mean(str(key), allowed) or "known keys: " + ", ".join(sorted(allowed)))

    def _where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def int(self, key: str, *, default: int | None = None, minimum: int = 1, maximum: int = MAX_PARAMS) -> int | None:
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"must be a whole number, got {shown(value)}", where=self._where(key))
        if value < minimum:
            raise InputError(f"must be at least {minimum}, got {shown(value)}", where=self._where(key))
        if value > maximum:
            raise InputError(f"{shown(value)} is implausibly large (limit {maximum})", where=self._where(key))
        return value

    def bool(self, key: str) -> bool | None:
        value = self.data.get(key)
        if value is None or isinstance(value, bool):
            return value
        raise InputError(f"must be true or false, got {shown(value)}", where=self._where(key))

    def str(self, key: str, *, default: str | None = None) -> str | None:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"must be a non-empty string, got {shown(value)}", where=self._where(key))
        return value.strip()

    def dtype(self, key: str, *, default: str | None = None) -> str | None:
        value = self.data.get(key)
        if value is None:
            return default
        try:
            return lookup_dtype(value, what="dtype").name
        except InputError as err:
            raise err.located(self._where(key)) from None

    def list(self, key: str) -> list | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not value:
            raise InputError(f"must be a non-empty list, got {shown(value)}", where=self._where(key))
        return value

    def sub(self, key: str, allowed: set[str]) -> "_Reader | None":
        value = self.data.get(key)
        return None if value is None else _Reader(value, self._where(key), allowed)


_RUN = Pattern(r"^\s*([A-Za-z_]+|\d+)\s*\*\s*(\d+)\s*$")


def _expand_runs(items: list, where: str) -> list:
    """['sliding*5', 'full'] -> five 'sliding' then 'full'. Entries are kinds or integers."""
    out: list = []
    for item in items:
        if isinstance(item, str) and (match := _RUN.match(item)):
            value, times = match.group(1), int(match.group(2))
            if times < 1 or len(out) + times > MAX_LAYERS:
                raise InputError(f"run {item!r} has an impossible length", where=where)
            out.extend([int(value) if value.isdigit() else value] * times)
        else:
            out.append(item)
        if len(out) > MAX_LAYERS:
            raise InputError(f"more than {MAX_LAYERS} entries", where=where)
    return out


def _kind(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"layer kind must be a string, got {shown(value)}", where=where,
                         hint="one of " + ", ".join(LAYER_KINDS))
    key = value.strip().lower()
    key = _KIND_ALIASES.get(key, key)
    if key not in KINDS:
        raise InputError(f"unknown layer kind {shown(value)}", where=where,
                         hint=did_you_mean(value, list(LAYER_KINDS) + list(_KIND_ALIASES)) or "one of " + ", ".join(LAYER_KINDS))
    return key


def _shape(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_DIM for v in value):
        raise InputError(f"must be a list of positive whole numbers (a tensor shape), got {shown(value)}", where=where,
                         hint="e.g. [8192, 3]")
    return tuple(value)


def spec_from_mapping(data: Any, *, source: str | None = None) -> ModelSpec:
    """Validate a spec mapping and resolve every layer. Raises InputError naming source and key."""
    try:
        spec = _build(data)
    except InputError as err:
        raise err.located(source) if source else err
    return dataclasses.replace(spec, source=source) if source else spec


def _build(data: Any) -> ModelSpec:
    r = _Reader(data, "", _TOP_KEYS)
    for key in _REQUIRED:
        if not r.has(key):
            raise InputError("is required", where=key, hint=_REQUIRED_HINTS.get(key))
    name = check_name(r.str("name"), where="name")
    layers = r.int("layers", maximum=MAX_LAYERS)
    heads = r.int("attention_heads", maximum=MAX_HEADS)
    kv_heads = r.int("kv_heads", default=heads, maximum=MAX_HEADS)
    head_dim = r.int("head_dim", maximum=MAX_DIM)
    v_head_dim = r.int("v_head_dim", maximum=MAX_DIM)
    if heads % kv_heads:
        raise InputError(f"attention_heads ({heads}) is not a multiple of kv_heads ({kv_heads})", where="kv_heads",
                         hint="each KV head serves a whole group of query heads; check both values")
    model_dtype = r.dtype("dtype")
    sliding_window = r.int("sliding_window", maximum=1 << 40)
    chunk = r.int("attention_chunk_size", maximum=1 << 40)

    mla = None
    if (m := r.sub("mla", _MLA_KEYS | _MLA_OPTIONAL_KEYS)) is not None:
        for key in _MLA_KEYS:
            if not m.has(key):
                raise InputError("is required", where=f"mla.{key}")
        mla = MlaSpec(m.int("kv_lora_rank", maximum=MAX_DIM), m.int("qk_rope_head_dim", minimum=0, maximum=MAX_DIM),
                      m.int("q_lora_rank", maximum=MAX_DIM), m.int("index_head_dim", maximum=MAX_DIM))

    state = None
    if (s := r.sub("state", _STATE_KEYS)) is not None:
        for key in ("conv_shape", "recurrent_shape"):
            if not s.has(key):
                raise InputError("is required", where=f"state.{key}", hint="the per-sequence tensor shape, e.g. [8192, 3]")
        state = StateSpec(
            conv_shape=_shape(s.data["conv_shape"], "state.conv_shape"),
            recurrent_shape=_shape(s.data["recurrent_shape"], "state.recurrent_shape"),
            conv_dtype=s.dtype("conv_dtype", default=model_dtype),
            recurrent_dtype=s.dtype("recurrent_dtype", default=model_dtype),
        )

    moe = None
    if (m := r.sub("moe", _MOE_KEYS)) is not None:
        for key in _MOE_REQUIRED:
            if not m.has(key):
                raise InputError("is required", where=f"moe.{key}")
        moe = MoeSpec(experts=m.int("experts", maximum=1 << 20), experts_per_token=m.int("experts_per_token", maximum=1 << 20),
                      intermediate_size=m.int("intermediate_size", maximum=MAX_DIM), layers=m.int("layers", maximum=layers),
                      expert_params=m.int("expert_params"),
                      shared_intermediate_size=m.int("shared_intermediate_size", default=0, minimum=0, maximum=MAX_DIM),
                      dense_intermediate_size=m.int("dense_intermediate_size", default=0, minimum=0, maximum=MAX_DIM),
                      gated=True if m.bool("gated") is None else m.bool("gated"))
        if moe.experts_per_token > moe.experts:
            raise InputError(f"experts_per_token ({moe.experts_per_token}) exceeds experts ({moe.experts})",
                             where="moe.experts_per_token")
    mtp = None
    if (t := r.sub("mtp", _MTP_KEYS)) is not None:
        for key in _MTP_KEYS:
            if not t.has(key):
                raise InputError("is required", where=f"mtp.{key}")
        mtp = MtpSpec(layers=t.int("layers", maximum=MAX_LAYERS), params=t.int("params"))

    layout = _layout(r, layers)
    kinds = _resolve_kinds(layout, layers)
    per_layer_kv = layout.kv_heads or (kv_heads,) * layers
    per_layer_dim = layout.head_dims or (None,) * layers

    # what each kind needs from the spec, as the kind says it (LayerSpec.headed, window_from, indexed, latent,
    # compressed, recurrent): the spec's field that gives its window, an indexer's key width, the mla or state section
    windows = {"sliding_window": sliding_window, "attention_chunk_size": chunk}
    resolved = []
    for index, (kind, layer_kv) in enumerate(zip(kinds, per_layer_kv)):
        where = f"layout (layer {index})"
        rules = KINDS[kind]
        if rules.headed:
            if layer_kv < 1:
                raise InputError(f"an attention layer needs at least 1 KV head, got {layer_kv}", where="layout.kv_heads")
            if heads % layer_kv:
                raise InputError(f"attention_heads ({heads}) is not a multiple of layer {index}'s KV heads ({layer_kv})",
                                 where="layout.kv_heads")
            window = None if rules.window_from is None else windows[rules.window_from]
            if rules.window_from is not None and window is None:
                raise InputError(f"a {kind} layer needs `{rules.window_from}`", where=where,
                                 hint=_WINDOW_EXAMPLES[rules.window_from])
            index_dim = None
            if rules.indexed:
                index_dim = r.int("index_head_dim", maximum=MAX_DIM)
                if index_dim is None:
                    raise InputError(f"a {kind} layer needs `index_head_dim`", where=where,
                                     hint="the sparse-attention indexer's key width (MiniMax-M3: 128)")
            layer_dim = per_layer_dim[index]
            if layer_dim is None:
                resolved.append(make_layer(kind, kv_heads=layer_kv, head_dim=head_dim, v_head_dim=v_head_dim or head_dim,
                                           window=window, index_head_dim=index_dim))
                continue
            if layer_dim < 1:
                raise InputError(f"an attention layer needs a head width, got {layer_dim}", where="layout.head_dims")
            if v_head_dim not in (None, head_dim):
                raise InputError("per-layer head_dims with a v_head_dim of its own are not modelled", where="layout.head_dims")
            # K and V alike, as Gemma 4's global layers have them
            resolved.append(make_layer(kind, kv_heads=layer_kv, head_dim=layer_dim, v_head_dim=layer_dim, window=window,
                                       index_head_dim=index_dim))
        elif rules.latent:
            if mla is None:
                raise InputError(f"an {kind} layer needs the `mla` section", where=where,
                                 hint="add `mla: {kv_lora_rank: 512, qk_rope_head_dim: 64}`")
            if rules.indexed and not mla.index_head_dim:
                raise InputError(f"an {kind} layer needs `mla.index_head_dim`", where=where,
                                 hint="the sparse-attention indexer's key width, e.g. 128 (index_head_dim in config.json)")
            resolved.append(make_layer(kind, mla=mla))
        elif rules.compressed:
            resolved.append(_compressed_layer(kind, index, layout, layer_kv, head_dim, windows[rules.window_from],
                                              r.int("index_head_dim", maximum=MAX_DIM), where))
        elif rules.recurrent:
            if state is None:
                raise InputError(f"a {kind} layer needs the `state` section", where=where,
                                 hint="add `state: {conv_shape: [...], recurrent_shape: [...]}`")
            resolved.append(make_layer(kind, state=state))
        else:  # a layer that keeps nothing needs nothing (no_op blocks)
            resolved.append(make_layer(kind))

    aliases = r.list("aliases") or []
    if not all(isinstance(a, str) and a.strip() for a in aliases):
        raise InputError("must be a list of names", where="aliases")
    for alias in aliases:
        check_name(alias, where="aliases")
    if r.has("architecture"):
        check_name(r.str("architecture"), where="architecture")

    params = r.int("params")
    active = r.int("active_params")
    if active is not None and active > params:
        raise InputError(f"active_params ({active}) exceeds params ({params})", where="active_params")
    return ModelSpec(
        name=name, layers=layers, attention_heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        v_head_dim=v_head_dim, dtype=model_dtype, params=params, layout=layout, layer_specs=tuple(resolved),
        hidden_size=r.int("hidden_size", maximum=MAX_DIM), vocab_size=r.int("vocab_size", maximum=1 << 30),
        weight_dtype=r.dtype("weight_dtype"), weights_bytes=r.int("weights_bytes", maximum=1 << 60),
        weights_source=r.str("weights_source"), tp_whole_bytes=r.int("tp_whole_bytes", minimum=0, maximum=1 << 60),
        active_params=active, vision_params=r.int("vision_params", minimum=0),
        weights_unknown=r.str("weights_unknown"),
        max_context=r.int("max_context", maximum=1 << 40), rotary_dim=_rotary_dim(r, head_dim), mrope=r.bool("mrope"),
        sliding_window=sliding_window, attention_chunk_size=chunk,
        tie_word_embeddings=r.bool("tie_word_embeddings"), mla=mla, state=state,
        index_head_dim=r.int("index_head_dim", maximum=MAX_DIM),
        intermediate_size=r.int("intermediate_size", maximum=MAX_DIM), moe=moe, mtp=mtp,
        quant_method=r.str("quant_method"), aliases=tuple(a.strip() for a in aliases), architecture=r.str("architecture"),
        provenance=r.str("provenance"), notes=r.str("notes"),
    )


def _compressed_layer(kind: str, index: int, layout: Layout, kv_heads: int, head_dim: int, window: int | None,
                      index_head_dim: int | None, where: str) -> LayerSpec:
    """One DeepSeek-V4 attention layer: its window, its compression ratio and (compressed sparse attention) the
    indexer's key width."""
    if kv_heads != 1:
        raise UnsupportedError(f"a compressed layer of {kv_heads} KV heads is not modelled (DeepSeek-V4 keeps one)",
                               where="kv_heads")
    if window is None:
        raise InputError(f"a {kind} layer needs `sliding_window`", where=where, hint="DeepSeek-V4: 128")
    if layout.compress_ratios is None:
        raise InputError(f"a {kind} layer needs `layout.compress_ratios`", where=where,
                         hint="one entry per layer: 0 (window only), 4, 128 ...")
    ratio = layout.compress_ratios[index]
    if KINDS[kind].indexed:  # compressed sparse attention: the indexer compresses its own keys
        if not ratio:
            raise InputError(f"a {kind} layer needs a compression ratio of at least 1",
                             where="layout.compress_ratios")
        if not index_head_dim:
            raise InputError(f"a {kind} layer needs `index_head_dim`", where=where,
                             hint="the lightning indexer's key width (index_head_dim in config.json)")
        return make_layer(kind, kv_heads=1, head_dim=head_dim, v_head_dim=head_dim, window=window,
                          compress=CompressSpec(ratio, index_head_dim))
    return make_layer(kind, kv_heads=1, head_dim=head_dim, v_head_dim=head_dim, window=window,
                      compress=CompressSpec(ratio))


# a spec that leaves out the field a windowed kind reads its window from (LayerSpec.window_from): what to add
_WINDOW_EXAMPLES = {"sliding_window": "add e.g. `sliding_window: 4096`",
                    "attention_chunk_size": "add e.g. `attention_chunk_size: 8192` (Llama 4)"}


_REQUIRED_HINTS = {
    "name": "a short lowercase name such as `my-model-7b`",
    "layers": "the number of decoder layers (num_hidden_layers in config.json)",
    "attention_heads": "num_attention_heads in config.json",
    "head_dim": "per-head dimension; hidden_size / attention_heads unless the config says otherwise",
    "dtype": "the model's dtype, e.g. bf16",
    "params": "the parameter count, e.g. 8030261248",
}


def _rotary_dim(r: _Reader, head_dim: int) -> int | None:
    return r.int("rotary_dim", maximum=head_dim)  # rotary embedding turns part of a head, never more


def _layout(r: _Reader, layers: int) -> Layout:
    sub = r.sub("layout", _LAYOUT_KEYS)
    if sub is None:
        return Layout()
    default = _kind(sub.data.get("default", FULL), "layout.default")
    pattern = per_layer = kv = None
    if (raw := sub.list("pattern")) is not None:
        pattern = tuple(_kind(k, "layout.pattern") for k in _expand_runs(raw, "layout.pattern"))
        if len(pattern) > layers:
            raise InputError(f"pattern has {len(pattern)} entries but the model has {layers} layers", where="layout.pattern",
                             hint="a pattern repeats over the layers; use per_layer for an explicit list")
    if (raw := sub.list("per_layer")) is not None:
        if pattern is not None:
            raise InputError("give either pattern or per_layer, not both", where="layout")
        per_layer = tuple(_kind(k, "layout.per_layer") for k in _expand_runs(raw, "layout.per_layer"))
        if len(per_layer) != layers:
            raise InputError(f"has {len(per_layer)} entries but `layers` is {layers}", where="layout.per_layer",
                             hint="one entry per layer; runs like 'sliding*5' count as 5")
    if (raw := sub.list("kv_heads")) is not None:
        values = _expand_runs(raw, "layout.kv_heads")
        if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_HEADS for v in values):
            raise InputError("must list whole numbers of KV heads (0 for layers without attention)", where="layout.kv_heads")
        if len(values) != layers:
            raise InputError(f"has {len(values)} entries but `layers` is {layers}", where="layout.kv_heads")
        kv = tuple(values)
    dims = None
    if (raw := sub.list("head_dims")) is not None:
        values = _expand_runs(raw, "layout.head_dims")
        if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_DIM for v in values):
            raise InputError("must list whole numbers (0 for layers without attention)", where="layout.head_dims")
        if len(values) != layers:
            raise InputError(f"has {len(values)} entries but `layers` is {layers}", where="layout.head_dims")
        dims = tuple(values)
    ratios = None
    if (raw := sub.list("compress_ratios")) is not None:
        values = _expand_runs(raw, "layout.compress_ratios")
        if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_DIM for v in values):
            raise InputError("must list whole numbers (0: the window only)", where="layout.compress_ratios")
        if len(values) != layers:
            raise InputError(f"has {len(values)} entries but `layers` is {layers}", where="layout.compress_ratios")
        ratios = tuple(values)
    return Layout(default=default, pattern=pattern, per_layer=per_layer, kv_heads=kv, head_dims=dims,
                  compress_ratios=ratios)


def _resolve_kinds(layout: Layout, layers: int) -> list[str]:
    if layout.per_layer is not None:
        return list(layout.per_layer)
    if layout.pattern is not None:
        return [layout.pattern[i % len(layout.pattern)] for i in range(layers)]
    return [layout.default] * layers


# ---------------------------------------------------------------- back to a mapping

def _compress(items: tuple) -> list:
    """The inverse of _expand_runs: ('sliding',)*5 + ('full',) -> ['sliding*5', 'full']."""
    out: list = []
    i = 0
    while i < len(items):
        j = i
        while j < len(items) and items[j] == items[i]:
            j += 1
        out.append(items[i] if j - i == 1 else f"{items[i]}*{j - i}")
        i = j
    return out


def spec_to_mapping(spec: ModelSpec) -> dict:
    """The spec as a plain mapping that spec_from_mapping accepts back unchanged (round trip)."""
    out: dict[str, Any] = {"name": spec.name}
    if spec.aliases:
        out["aliases"] = list(spec.aliases)
    for key in ("architecture", "provenance", "notes"):
        if getattr(spec, key):
            out[key] = getattr(spec, key)
    out.update(layers=spec.layers, attention_heads=spec.attention_heads, kv_heads=spec.kv_heads, head_dim=spec.head_dim)
    for key in ("v_head_dim", "hidden_size", "intermediate_size", "vocab_size"):
        if getattr(spec, key) is not None:
            out[key] = getattr(spec, key)
    out["dtype"] = spec.dtype
    for key in ("weight_dtype", "params", "active_params", "vision_params", "weights_unknown", "weights_bytes",
                "weights_source", "tp_whole_bytes",
                "max_context", "rotary_dim", "mrope", "sliding_window", "attention_chunk_size", "tie_word_embeddings", "quant_method",
                "index_head_dim"):
        if getattr(spec, key) is not None:
            out[key] = getattr(spec, key)
    layout: dict[str, Any] = {}
    if spec.layout.default != Layout.default:  # written only where it differs from the class default
        layout["default"] = spec.layout.default
    if spec.layout.pattern is not None:
        layout["pattern"] = _compress(spec.layout.pattern)
    if spec.layout.per_layer is not None:
        layout["per_layer"] = _compress(spec.layout.per_layer)
    if spec.layout.kv_heads is not None:
        layout["kv_heads"] = _compress(spec.layout.kv_heads)
    if spec.layout.head_dims is not None:
        layout["head_dims"] = _compress(spec.layout.head_dims)
    if spec.layout.compress_ratios is not None:
        layout["compress_ratios"] = _compress(spec.layout.compress_ratios)
    if layout:
        out["layout"] = layout
    if spec.mla:
        out["mla"] = {"kv_lora_rank": spec.mla.kv_lora_rank, "qk_rope_head_dim": spec.mla.qk_rope_head_dim}
        if spec.mla.q_lora_rank is not None:
            out["mla"]["q_lora_rank"] = spec.mla.q_lora_rank
        if spec.mla.index_head_dim is not None:
            out["mla"]["index_head_dim"] = spec.mla.index_head_dim
    if spec.state:
        out["state"] = {"conv_shape": list(spec.state.conv_shape), "recurrent_shape": list(spec.state.recurrent_shape),
                        "conv_dtype": spec.state.conv_dtype, "recurrent_dtype": spec.state.recurrent_dtype}
    if spec.moe:
        out["moe"] = {"experts": spec.moe.experts, "experts_per_token": spec.moe.experts_per_token,
                      "intermediate_size": spec.moe.intermediate_size, "layers": spec.moe.layers,
                      "expert_params": spec.moe.expert_params}
        if spec.moe.shared_intermediate_size:
            out["moe"]["shared_intermediate_size"] = spec.moe.shared_intermediate_size
        if spec.moe.dense_intermediate_size:
            out["moe"]["dense_intermediate_size"] = spec.moe.dense_intermediate_size
        if not spec.moe.gated:
            out["moe"]["gated"] = False
    if spec.mtp:
        out["mtp"] = {"layers": spec.mtp.layers, "params": spec.mtp.params}
    return out
