"""transformers as a peer: the cache tensors and parameter count it really allocates for a config.json.

The model is built on the `meta` device (shapes and dtypes, no memory, no weights), one token is run
through it with a `StaticCache(config=..., max_cache_len=N)`, and every tensor the cache then holds is
read back. transformers' cache layers allocate lazily on their first `update`
(transformers/cache_utils.py: `StaticLayer.lazy_initialization`, `LinearAttentionLayer.lazy_initialization`),
which is why a forward is needed at all; on `meta` it costs milliseconds.

What this peer measures is what transformers does, not what kvplan thinks is right, and it labels rather
than corrects: transformers 5.x caches DeepSeek-V3's MLA as the compressed latent (512) plus the rotary
key (64) in the `keys`/`values` slots of a one-head StaticLayer (4.x cached full per-head K and V); the
Mamba / gated-delta-net layers keep d_conv (not d_conv - 1) conv columns and float32 recurrent states.

torch and transformers are imported inside the functions, so importing this module is free and the
test suite can skip cleanly when they are missing.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Names of the attributes of transformers' cache layers (transformers/cache_utils.py, 5.x) and what they
# hold. `cumulative_length` and friends are 0-d position counters, not cache storage: they are kept out of
# the byte totals (they are listed in `CacheTensor.kind == "counter"` so nothing is hidden).
_KIND_BY_ATTR = {
    "keys": "key",
    "values": "value",
    "conv_states": "conv_state",
    "recurrent_states": "recurrent_state",
    "indexer_keys": "indexer_key",
    "idx_keys": "indexer_key",  # MiniMax-M3's lightning indexer (MiniMaxM3VLSparseStaticCacheLayer)
    "compressed_kv": "latent",
    "latent": "latent",
    "ssm_states": "recurrent_state",
    "_quantized_keys": "key",
    "_quantized_values": "value",
}
_PER_TOKEN_KINDS = frozenset({"key", "value", "latent", "rope_key", "indexer_key"})
_STATE_KINDS = frozenset({"conv_state", "recurrent_state"})
_COUNTER_ATTRS = {"cumulative_length", "indexer_cumulative_length", "idx_cumulative_length", "_sliding_window_tensor"}
# Substrings of module names that mark the vision side of a multimodal model (Gemma-3: `model.vision_tower`,
# `model.multi_modal_projector`; Llama-4 / Qwen-VL use `vision_model` / `visual`).
_VISION_MARKERS = ("vision_tower", "vision_model", "visual")
_PROJECTOR_MARKERS = ("multi_modal_projector", "mm_projector")


class CannotBuild(Exception):
    """transformers cannot build this config natively (remote code only, or it rejects the config)."""


@dataclass(frozen=True)
class CacheTensor:
    layer: int
    kind: str  # key | value | latent | rope_key | conv_state | recurrent_state | indexer_key | counter
    layer_class: str  # the transformers cache-layer class, e.g. StaticSlidingWindowLayer
    shape: tuple[int, ...]
    dtype: str
    nbytes: int  # numel x element_size, a Python int


@dataclass(frozen=True)
class PeerResult:
    config_path: str
    n_tokens: int
    batch: int
    built: bool
    reason: str | None  # why it could not be built, else None
    transformers_version: str
    torch_version: str
    model_type: str | None = None
    model_class: str | None = None
    cache_class: str | None = None
    attn_implementation: str | None = None
    # dtypes: what the file says, what transformers resolves, what was used to build (and so the K/V dtype)
    config_dtype: str | None = None
    text_config_dtype: str | None = None
    default_build_dtype: str | None = None
    build_dtype: str | None = None
    quantization_config_ignored: str | None = None
    tensors: tuple[CacheTensor, ...] = ()
    cache_bytes: int = 0
    params_total: int = 0  # sum(p.numel() for p in model.parameters()): shared (tied) tensors once
    params_with_duplicates: int = 0  # the same, counting a tied tensor at every place it is used
    params_vision: int = 0  # vision tower (multimodal models), 0 otherwise
    params_projector: int = 0  # multimodal projector, 0 otherwise
    tied_embeddings: bool = False  # input embedding and LM head are the same tensor
    layer_classes: tuple[tuple[str, int], ...] = ()  # transformers cache-layer class -> how many layers
    build_seconds: float = 0.0
    forward_seconds: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def kv_bytes(self) -> int:
        """Bytes that grow with the context: attention K/V, MLA latent and rotary key, DSA indexer keys."""
        return sum(t.nbytes for t in self.tensors if t.kind in _PER_TOKEN_KINDS)

    @property
    def state_bytes(self) -> int:
        """Fixed per-sequence bytes of linear-attention / SSM layers (conv and recurrent states)."""
        return sum(t.nbytes for t in self.tensors if t.kind in _STATE_KINDS)

    def layer_summary(self) -> list[dict[str, Any]]:
        """Cache tensors grouped by (layer class, kind, shape, dtype): one row per distinct tensor layout."""
        groups: dict[tuple[str, str, tuple[int, ...], str], list[CacheTensor]] = {}
        for t in self.tensors:
            if t.kind == "counter":
                continue
            groups.setdefault((t.layer_class, t.kind, t.shape, t.dtype), []).append(t)
        rows = []
        ordered = sorted(groups.items(), key=lambda kv: (kv[1][0].layer, kv[0][1]))
        for (layer_class, kind, shape, dtype), ts in ordered:
            rows.append(
                {
                    "layer_class": layer_class,
                    "kind": kind,
                    "shape": list(shape),
                    "dtype": dtype,
                    "layers": len(ts),
                    "first_layer": ts[0].layer,
                    "layer_indices": _ranges([t.layer for t in ts]),
                    "bytes_each": ts[0].nbytes,
                    "bytes_total": sum(t.nbytes for t in ts),
                }
            )
        return rows


def _ranges(indices: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> "0-2,5,7-8": layer lists stay one short line in the truth file."""
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _dtype_name(dtype: Any) -> str | None:
    if dtype is None:
        return None
    return str(dtype).removeprefix("torch.")


def _file_dtype(d: dict[str, Any]) -> str | None:
    # newer files write `dtype`, older ones `torch_dtype` (transformers 4.56 renamed it)
    v = d.get("dtype", d.get("torch_dtype"))
    return v if isinstance(v, str) else None


def load_config_dict(path: str | Path) -> dict[str, Any]:
    # json accepts the bare `Infinity` that a real Nemotron-H config holds
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _make_config(d: dict[str, Any]):
    """The transformers config object for this dict, natively (never remote code)."""
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    model_type = d.get("model_type")
    if model_type not in CONFIG_MAPPING:
        remote = d.get("auto_map")
        hint = ""
        if remote:
            hint = f"; the config only names remote code ({remote.get('AutoModelForCausalLM') or remote})"
        raise CannotBuild(
            f"model_type {model_type!r} is not native to transformers{hint}; the peer never runs remote code"
        )
    kwargs = {k: v for k, v in d.items() if k != "model_type"}
    try:
        return AutoConfig.for_model(model_type, **kwargs)
    except Exception as e:  # transformers rejects the config (validation)
        raise CannotBuild(f"transformers rejects the config: {_one_line(e)}") from e


def _model_class(cfg, d: dict[str, Any]):
    """The class `from_pretrained` would pick: the config's `architectures[0]` when transformers has it natively,
    else the causal-LM auto class (which maps e.g. gemma3 to Gemma3ForConditionalGeneration)."""
    import transformers
    from transformers import AutoModelForCausalLM

    for name in d.get("architectures") or []:
        cls = getattr(transformers, name, None)
        if cls is not None:
            return cls
    try:
        return AutoModelForCausalLM._model_mapping[type(cfg)]
    except KeyError as e:
        archs = d.get("architectures")
        raise CannotBuild(f"no native causal-LM class for {type(cfg).__name__} (architectures {archs})") from e


def _walk_cache(cache, mla: tuple[int, int] | None = None) -> list[CacheTensor]:
    import torch

    out: list[CacheTensor] = []

    def add(layer: int, layer_class: str, attr: str, t: Any) -> None:
        if isinstance(t, torch.Tensor):
            kind = "counter" if attr in _COUNTER_ATTRS else _KIND_BY_ATTR.get(attr, attr)
            shape = tuple(int(s) for s in t.shape)
            nbytes = int(t.numel()) * int(t.element_size())
            out.append(CacheTensor(layer, kind, layer_class, shape, _dtype_name(t.dtype), nbytes))
        elif isinstance(t, dict):
            for _k, v in sorted(t.items(), key=lambda kv: str(kv[0])):
                add(layer, layer_class, attr, v)
        elif isinstance(t, (list, tuple)):
            for v in t:
                add(layer, layer_class, attr, v)

    for i, layer in enumerate(cache.layers):
        for attr, value in sorted(vars(layer).items()):
            add(i, type(layer).__name__, attr, value)
    if mla is not None:
        out = [_relabel_mla(t, *mla) for t in out]
    # tensors held by the cache object itself rather than by a layer (none in transformers 5.24; kept honest)
    for attr, value in sorted(vars(cache).items()):
        if attr != "layers":
            add(-1, type(cache).__name__, attr, value)
    return out


def _one_line(e: Exception) -> str:
    return f"{type(e).__name__}: " + " ".join(str(e).split())


def _initialised(layer) -> bool:
    """Whether the forward made this cache layer allocate (a layer that never did would hide bytes)."""
    conv = getattr(layer, "is_conv_states_initialized", None)
    if conv is not None:  # linear-attention layers track their states per state index
        rec = layer.is_recurrent_states_initialized
        if not (any(conv.values()) or any(rec.values())):
            return False
    return getattr(layer, "is_initialized", True) is not False


def _mla_dims(text_cfg) -> tuple[int, int] | None:
    rank, rope = getattr(text_cfg, "kv_lora_rank", None), getattr(text_cfg, "qk_rope_head_dim", None)
    return (int(rank), int(rope)) if rank and rope else None


def _relabel_mla(t: CacheTensor, kv_lora_rank: int, qk_rope_head_dim: int) -> CacheTensor:
    """transformers 5.x MLA models (DeepseekV3Attention.forward) call `cache.update(kv_nope, k_rot)` with the
    compressed latent, each viewed as one head: the `keys` slot holds the normalised kv latent
    [B, 1, N, kv_lora_rank] and the `values` slot the rotary key [B, 1, N, qk_rope_head_dim]. Name them for what
    they are; the bytes are unchanged. (transformers 4.x cached the expanded per-head K and V instead.)"""
    if len(t.shape) == 4 and t.shape[1] == 1:
        if t.kind == "key" and t.shape[-1] == kv_lora_rank:
            return CacheTensor(t.layer, "latent", t.layer_class, t.shape, t.dtype, t.nbytes)
        if t.kind == "value" and t.shape[-1] == qk_rope_head_dim:
            return CacheTensor(t.layer, "rope_key", t.layer_class, t.shape, t.dtype, t.nbytes)
    return t


def _params(model) -> tuple[int, int, int, int, bool]:
    total = sum(p.numel() for p in model.parameters())  # parameters() yields a shared tensor once
    with_dups = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    vision = projector = 0
    seen: set[int] = set()
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        parts = name.split(".")
        if any(m in parts for m in _VISION_MARKERS):
            vision += p.numel()
        elif any(m in parts for m in _PROJECTOR_MARKERS):
            projector += p.numel()
    tied = False
    try:
        inp, outp = model.get_input_embeddings(), model.get_output_embeddings()
        tied = inp is not None and outp is not None and inp.weight is outp.weight
    except (AttributeError, NotImplementedError):
        pass
    return int(total), int(with_dups), int(vision), int(projector), tied


# Built models, by (config file, dtype, build options): a model on `meta` holds no tensor memory, and building one
# (DeepSeek-V3: 61 layers of 256 experts) takes seconds, where a one-token forward takes milliseconds. The tests run
# the same config at several token counts; each run still gets a cache of its own. A few are kept, the last used.
_MODELS: dict[tuple, Any] = {}
_MODELS_KEPT = 6


def _built(path: str, dtype: str | None, options: tuple):
    key = (path, dtype, options)
    model = _MODELS.pop(key, None)
    if model is not None:
        _MODELS[key] = model  # the most recently used last
    return model


def _remember(path: str, dtype: str | None, options: tuple, model) -> None:
    _MODELS[(path, dtype, options)] = model
    while len(_MODELS) > _MODELS_KEPT:
        _MODELS.pop(next(iter(_MODELS)))


def _run_peer(
    config_path: str | Path,
    n_tokens: int,
    batch: int = 1,
    dtype: str | None = None,
) -> PeerResult:
    """run_peer without the logging guard."""
    import torch
    import transformers

    base = dict(
        config_path=str(config_path),
        n_tokens=int(n_tokens),
        batch=int(batch),
        transformers_version=transformers.__version__,
        torch_version=torch.__version__,
    )
    if dtype is not None and dtype not in ("bfloat16", "float16", "float32"):
        raise ValueError(
            f"dtype {dtype!r}: transformers' StaticCache holds K/V in the model dtype; "
            "use bfloat16, float16 or float32"
        )
    d = load_config_dict(config_path)
    file_dtype = _file_dtype(d)
    notes: list[str] = []
    try:
        cfg = _make_config(d)
        cls = _model_class(cfg, d)
    except CannotBuild as e:
        return PeerResult(**base, built=False, reason=str(e), model_type=d.get("model_type"), config_dtype=file_dtype)

    # `_from_config` builds in config.dtype; with none (GPT-2, gpt-oss) torch's default dtype applies
    default_dtype = _dtype_name(cfg.dtype if cfg.dtype is not None else torch.get_default_dtype())
    qc = d.get("quantization_config")
    # `from_config` builds unquantized weights whatever quantization_config says (only from_pretrained
    # quantizes), so the parameter count is of the logical, unpacked model
    q_ignored = qc.get("quant_method") if isinstance(qc, dict) else None
    kwargs: dict[str, Any] = {}
    if dtype is not None:
        kwargs["dtype"] = getattr(torch, dtype)
    from transformers import StaticCache

    # The expert kernel does not change the cache, but the default `grouped_mm` refuses float32 inputs on
    # CPU/meta (gpt-oss built in its default float32), so a failed forward is retried once with `batched_mm`.
    for attempt in ({}, {"experts_implementation": "batched_mm"}):
        t0 = time.perf_counter()
        try:
            # `_from_config` is what AutoModelForCausalLM.from_config calls once it has picked the class; calling
            # it on the class named by `architectures` keeps multimodal configs on their own class (Gemma-3). It
            # writes the dtype into the config, hence a fresh config per attempt.
            model = _built(str(config_path), dtype, tuple(sorted(attempt.items())))
            if model is None:
                with torch.device("meta"):
                    model = cls._from_config(cfg if not attempt else _make_config(d), **kwargs, **attempt)
                _remember(str(config_path), dtype, tuple(sorted(attempt.items())), model)
        except Exception as e:
            reason = f"transformers cannot build {cls.__name__}: {_one_line(e)}"
            return PeerResult(
                **base, built=False, reason=reason, model_type=d.get("model_type"), model_class=cls.__name__,
                config_dtype=file_dtype,
            )
        model.eval()
        t1 = time.perf_counter()
        cache = StaticCache(config=model.config, max_cache_len=int(n_tokens))
        ids = torch.zeros((int(batch), 1), dtype=torch.long, device="meta")
        try:
            with torch.no_grad():
                model(input_ids=ids, cache=cache, use_cache=True)
            break
        except Exception as e:
            reason = f"one-token forward on meta failed: {_one_line(e)}"
    else:
        return PeerResult(
            **base, built=False, reason=reason, model_type=d.get("model_type"), model_class=cls.__name__,
            config_dtype=file_dtype,
        )
    if attempt:
        notes.append(f"forward needed {attempt} (first try: {reason})")
    by_dtype: Counter[str] = Counter()
    for p in model.parameters():
        by_dtype[_dtype_name(p.dtype)] += p.numel()
    build_dtype = by_dtype.most_common(1)[0][0]
    if len(by_dtype) > 1:
        # e.g. the MoE router `gate.weight` of DeepSeek-V3 and Nemotron-3-Nano is kept in float32
        notes.append("parameter dtypes (numel): " + ", ".join(f"{k} {v}" for k, v in sorted(by_dtype.items())))
    t2 = time.perf_counter()
    text_cfg = model.config.get_text_config(decoder=True)
    tensors = _walk_cache(cache, _mla_dims(text_cfg))
    uninit = [i for i, layer in enumerate(cache.layers) if not _initialised(layer)]
    if uninit:
        notes.append(f"cache layers never initialised by the forward: {uninit}")
    total, with_dups, vision, projector, tied = _params(model)
    layer_classes = tuple(sorted(Counter(type(layer).__name__ for layer in cache.layers).items()))
    if any(t.kind in ("conv_state", "recurrent_state") for t in tensors):
        # the state dtypes come from the prefill path that ran: without these kernels transformers falls back
        # to its PyTorch reference scans, which produce float32 recurrent states
        missing = [m for m in ("mamba_ssm", "causal_conv1d", "fla") if importlib.util.find_spec(m) is None]
        if missing:
            notes.append(f"linear-attention states from the PyTorch reference path ({', '.join(missing)} missing)")
    return PeerResult(
        **base,
        built=True,
        reason=None,
        model_type=d.get("model_type"),
        model_class=type(model).__name__,
        cache_class=type(cache).__name__,
        attn_implementation=getattr(text_cfg, "_attn_implementation", None),
        config_dtype=file_dtype,
        text_config_dtype=_file_dtype(d["text_config"]) if isinstance(d.get("text_config"), dict) else None,
        default_build_dtype=default_dtype,
        build_dtype=build_dtype,
        quantization_config_ignored=q_ignored,
        tensors=tuple(tensors),
        cache_bytes=sum(t.nbytes for t in tensors if t.kind != "counter"),
        params_total=total,
        params_with_duplicates=with_dups,
        params_vision=vision,
        params_projector=projector,
        tied_embeddings=tied,
        layer_classes=layer_classes,
        build_seconds=round(t1 - t0, 3),
        forward_seconds=round(t2 - t1, 3),
        notes=tuple(notes),
    )


def run_peer(config_path: str | Path, n_tokens: int, batch: int = 1, dtype: str | None = None) -> PeerResult:
    """Build the model of `config_path` on `meta`, run one token through a StaticCache of `n_tokens`, report.

    `dtype` is the dtype the model is built in ("bfloat16", "float16", "float32"); transformers' static cache
    stores K/V in the dtype of the activations, so this is also the KV-cache dtype (the linear-attention
    recurrent states may differ: the models' scans return float32). None keeps transformers' own choice, the
    config's dtype (`_from_config` defaults to `config.dtype`; Gemma-2's file says float32, GPT-2's and
    gpt-oss's say nothing, which gives torch's default float32). Quantized KV dtypes (fp8, int8) are not
    something a StaticCache stores, so they are refused.
    """
    from transformers.utils import logging as hf_logging

    # transformers warns about every missing kernel package and deprecated config key; the caller wants data
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        return _run_peer(config_path, n_tokens, batch, dtype)
    finally:
        hf_logging.set_verbosity(level)
