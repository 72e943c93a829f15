"""TensorRT-LLM: the paged KV pool its executor builds, for both backends, release by release. Pure.

The release rules come from releases.py; the PyTorch backend's arithmetic is walked through in
docs/engines/trtllm.md (T1-T11), the TensorRT-engine backend's in docs/research/trtllm-releases.md (E1-E8):

- bytes per token (T2): 2 x sum over this rank's attention layers of ceil(KV heads / tp) x head_dim x dtype
  bytes (ceil: with tp > KV heads every rank holds one head); MLA: one latent per layer, not split by TP;
- PyTorch backend (T3-T6, budget.py): a warm-up with a temporary pool, a profiling run, then
  kv_budget = (total - peak + temporary pool) x free_gpu_memory_fraction; the estimator's bytes per token (T3)
  may be smaller than the pool's (tp > KV heads), and fraction x free now // T2 caps it; blocks are floored;
- TensorRT-engine backend (E1-E3): no profiling run; the engine, its execution context (activations, fixed at
  build time), the runtime and decoder buffers (max_batch_size x vocabulary) and NCCL are allocated first, and
  the pool is fraction x what is free then; blocks are rounded up (ceilDiv);
- free_gpu_memory_fraction defaults to 0.85 before 0.8, 0.9 after; tokens_per_block is 32 on the PyTorch backend
  and a build setting of the engine (64 through 0.16, 32 from 0.19);
- sliding windows (T10, E3): one pool share per distinct window, equal on the PyTorch backend, weighted by
  bytes x window x layers on the engine backend (from 0.18; before it one pool at the full length);
- a pool shorter than max_seq_len (T7, E5): TensorRT-LLM lowers max_seq_len and starts; `estimated_max_model_len`
  is the length it starts with, and the PoolTooShort problem says so (`fits` stays false).

Mamba hybrids use a separate state manager kvplan does not model, nor Llama 4's chunked-local layers (exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from kvplan.core.dtypes import DType
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.units import parse_size
from kvplan.engines import driver, lazy
from kvplan.engines.paged import cap_given_pool, cdiv, kv_dtype, model_dtype
from kvplan.engines.api import EngineRequest
from kvplan.engines.pool import EngineEstimate, request_terms, verdict_terms
from kvplan.engines.result import PerGpu
from kvplan.engines.runtime.activations import one_sequence_forward_peak
from kvplan.engines.runtime.startup import link_class
from kvplan.engines.runtime.weights import expert_bytes, linear_bits, model_weights, stage_weight_bytes
from kvplan.engines.trtllm import budget as tbudget
from kvplan.engines.trtllm import build_settings as bsettings
from kvplan.engines.trtllm import features as tfeatures
from kvplan.engines.trtllm import releases
from kvplan.engines.trtllm import specs as tspecs
from kvplan.engines.trtllm.budget import pool_tokens
from kvplan.engines.trtllm.releases import PYTORCH, TENSORRT

if TYPE_CHECKING:
    from kvplan.engines import pool_view as view_types
    from kvplan.engines.pool_view import PoolView, StartProblem
else:  # why it does not start and the pool as check judges it: built by pool_view() only (check, plan)
    view_types = lazy.module("kvplan.engines.pool_view")

GIB = 2**30
MIB = 2**20
# BaseLlmArgs' defaults (the PyTorch backend's launch) are trtllm-build's BuildConfig defaults (build_settings.py)
MAX_BATCH_SIZE, MAX_NUM_TOKENS, MAX_INPUT_LEN = bsettings.MAX_BATCH_SIZE, bsettings.MAX_NUM_TOKENS, bsettings.MAX_INPUT_LEN
CUDA_GRAPH_MAX_BS = 128  # CudaGraphConfig().max_batch_size
# kv_cache_config.dtype: "auto" (model dtype, or fp8 for checkpoints with an FP8 KV cache), "fp8"; nvfp4 not modelled
KV_DTYPES = {"auto": "", "fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "bf16": "bf16", "bfloat16": "bf16",
             "fp16": "fp16", "float16": "fp16"}
# --engine-option keys: the backend, the engine's build settings, the execution context trtllm-build reports,
# and the kv_cache_config caps; the build settings read at their defaults only (build_settings.AT_DEFAULT_ONLY)
OPTION_KEYS = ("backend", "max_batch_size", "max_num_tokens", "max_input_len", "activation_bytes", "max_tokens",
               "max_gpu_total_bytes") + tuple(bsettings.AT_DEFAULT_ONLY) + tfeatures.OPTION_KEYS


@dataclass(frozen=True)
class TrtllmEstimate(EngineEstimate):
    """available_kv_bytes: the pool's bytes."""

    trtllm_version: str  # the release whose rules were applied
    backend: str  # tensorrt (trtllm-build engine) or pytorch
    tokens_per_block: int
    bytes_per_token: int  # T2, one GPU
    estimator_bytes_per_token: int  # T3, one GPU (PyTorch backend)
    free_gpu_memory_fraction: str | None
    max_batch_size: int
    max_num_tokens: int
    weights_per_gpu_bytes: int | None
    activation_peak_bytes: int | None  # PyTorch: the warm-up's; engine: the execution context
    non_torch_bytes: int | None  # PyTorch: outside torch at the peak; engine: CUDA context + NCCL
    engine_buffers_bytes: int | None  # engine backend: runtime buffers + decoder
    in_use_bytes: int | None  # --gpu-reserved + the site profile's memory in use
    temporary_pool_bytes: int | None
    kv_budget_bytes: int | None  # "available KV cache memory when calculating max tokens" / fraction x free
    max_tokens: int | None
    num_blocks: int | None  # primary blocks
    kv_cache_tokens: int | None  # blocks x tokens_per_block
    window_blocks: tuple[tuple[int, int], ...]  # VSWA: (window, blocks) per distinct window
    max_concurrency: int | None  # requests of seq tokens: blocks // ceil(seq / 32), capped at max_batch_size
    # the setting that makes the pool what kvplan assumes (its low edge) and whether the shape fits pinned there
    pin_flag: str | None
    pinned_fits: bool | None
    # the LLM-API options beyond the core request (attention DP, speculative decoding, the cache transceiver): every
    # term they add (kvplan/engines/trtllm/features.py); None when the launch sets none
    features: tfeatures.TrtllmFeatures | None = None
    # the engine's build settings the launch leaves open, which the band spans (build_settings.py)
    band_open: tuple[str, ...] = ()

    def pool_view(self) -> PoolView | None:
        if self.available_kv_bytes is None:
            return None
        problem: StartProblem | None = None
        if not self.fits:
            if self.features is not None and self.features.after_pool_fits is False:
                f = self.features
                what = " and ".join(w for w, on in ((f"the cache transceiver's {f.transceiver.buffers if f.transceiver else 0} "
                                                     "transfer buffers", f.transceiver), ("the LoRA device cache", f.lora)) if on)
                problem = view_types.Refused(f"{what} ({f.after_pool_bytes:,} B) do not fit in the memory "
                                             "free_gpu_memory_fraction leaves beside the pool and the profiled peak: "
                                             "TensorRT-LLM runs out of memory building them after the pool")
            elif self.available_kv_bytes <= 0:
                problem = view_types.NoKvMemory()
            elif self.estimated_max_model_len:
                action = None
                if any(n.startswith("TensorRT-LLM starts") for n in self.notes):
                    action = f"TensorRT-LLM starts with max_seq_len reduced to {self.estimated_max_model_len:,}"
                problem = view_types.PoolTooShort(self.available_kv_bytes, self.estimated_max_model_len, action=action)
        pool = self.per_gpu.cache_bytes if self.per_gpu else None
        per_request = None
        slots, block = self.kv_cache_tokens, self.tokens_per_block
        if pool is not None:
            if slots and not self.window_blocks and pool % slots == 0:
                per_request = -(-self.seq // block) * block * (pool // slots)  # whole blocks of tokens
            elif self.max_batch:
                per_request = -(-pool // self.max_batch)  # per-window pools: an even share
        return view_types.PoolView(
            problem=problem, available_kv_bytes=self.available_kv_bytes, num_gpu_blocks=self.num_blocks,
            kv_cache_tokens=self.kv_cache_tokens, concurrency=self.max_concurrency, held_at_once=None,
            running_limit=None, pool_bytes=pool, per_request_bytes=per_request,
            estimated_max_model_len=self.estimated_max_model_len)


def _pp_counts(layers: int, pp: int) -> list[int]:
    """Layers per pipeline rank (Mapping.pp_layers splits evenly, the first ranks taking the remainder)."""
    if pp > layers:
        raise InputError(f"pipeline parallel size {pp} exceeds the model's {layers} layers", where="--pp")
    base, extra = divmod(layers, pp)
    return [base + (1 if i < extra else 0) for i in range(pp)]


def _options(req: EngineRequest) -> dict:
    """--engine-option values read and checked: counts as integers, sizes as bytes."""
    out: dict = {}
    for key, value in req.engine_options or ():
        if key not in OPTION_KEYS:
            raise InputError(f"TensorRT-LLM has no engine option {key!r}", where="--engine-option",
                             hint="TensorRT-LLM reads " + ", ".join(OPTION_KEYS))
        if key == "backend" or key in tfeatures.OPTION_KEYS:
            out[key] = value
        elif key in bsettings.AT_DEFAULT_ONLY:
            _at_default(key, value)
        elif key in ("activation_bytes", "max_gpu_total_bytes"):
            out[key] = parse_size(value, what=f"--engine-option {key}")
        else:
            try:
                n = int(value.replace("_", ""))
            except ValueError:
                raise InputError(f"{key}={value!r} is not a whole number", where=f"--engine-option {key}") from None
            if n < 1 or n > 2**40:
                raise InputError(f"{key}={n} is out of range", where=f"--engine-option {key}")
            out[key] = n
    return out


def _at_default(key: str, value: str) -> None:
    """A build setting kvplan reads only at its default: that value passes, another is refused (exit 3)."""
    default, what = bsettings.AT_DEFAULT_ONLY[key]
    text = value.strip().lower()
    if isinstance(default, bool):
        if text not in ("true", "false", "1", "0"):
            raise InputError(f"{key}={value!r} is not true or false", where="--engine-option")
        given: int | bool = text in ("true", "1")
    else:
        try:
            given = int(text.replace("_", ""))
        except ValueError:
            raise InputError(f"{key}={value!r} is not a whole number", where="--engine-option") from None
    if given != default:
        raise UnsupportedError(f"trtllm-build {key}={value}: {what}, which kvplan does not model",
                               where=f"--engine-option {key}",
                               hint=f"kvplan judges engines built with {key}={str(default).lower()}; `kvplan probe` "
                                    "measures this one on the GPU")


def read_kv_dtype(req: EngineRequest) -> DType:
    """The request's kv_cache_config.dtype as TensorRT-LLM reads it."""
    return kv_dtype(req, KV_DTYPES, engine="TensorRT-LLM", flag="kv_cache_config.dtype")


@dataclass(eq=False, repr=False)
class _Run(driver.Run):
    """One TensorRT-LLM estimate's figures as its steps (driver.Steps) hand them along."""

    rel: releases.Release | None = None
    opts: dict[str, Any] = field(default_factory=dict)  # --engine-option values, read (_options)
    be: str = PYTORCH  # the backend
    launch: Any = None  # the LLM-API options (features.py TrtllmLaunch)
    kv_tp: int = 1  # ranks the KV heads are split over (1 with attention DP)
    engine_be: bool = False
    round_up: bool = False  # blocks are ceilDiv(max_tokens, tokens_per_block), else floored
    tpb: int = 0  # tokens per block
    dtype_bytes: int = 0
    max_batch_size: int = 0
    max_num_tokens: int = 0
    max_input_len: int = 0
    cap_tokens: int | None = None  # kv_cache_config.max_tokens
    cap_bytes: int | None = None  # kv_cache_config.max_gpu_total_bytes
    counts: list[int] = field(default_factory=list)
    stages: list[Any] = field(default_factory=list)
    spec_layers: tuple[Any, ...] = ()  # the drafter's layers in the pool
    pool_stages: list[tuple[Any, ...]] = field(default_factory=list)
    windows_apply: bool = True
    windows: dict[int | None, int] = field(default_factory=dict)  # bytes per token by window, the heaviest rank
    layer_counts: dict[int | None, int] = field(default_factory=dict)
    heavy: int = 0
    bpt: int = 0  # T2: bytes per token of the pool
    bpt3: int = 0  # T3: the estimator's
    vswa: bool = False
    weights_total: int = 0
    frac: Fraction | None = None
    weights: int | None = None
    peak: int | None = None
    non_torch: int | None = None
    temp: int | None = None
    budget_b: int | None = None
    buffers: int | None = None
    in_use: int | None = None
    weights_added: int = 0
    draft_how: str = ""
    trans: Any = None  # the cache transceiver's terms
    lora_t: Any = None  # the PEFT cache's terms
    after_pool: int = 0
    trans_fits: bool | None = None
    band: int = 0
    fit: Any = None  # budget.py's fitted constants
    pool_bytes: int | None = None
    max_tokens: int | None = None
    num_blocks: int | None = None
    tokens: int | None = None
    conc: int | None = None
    starts: bool = False
    fits: bool | None = None
    low: int | None = None
    high: int | None = None
    pin_flag: str | None = None
    pinned_fits: bool | None = None
    window_blocks: tuple[tuple[int, int], ...] = ()
    feats: Any = None
    build: bsettings.BuildRange | None = None  # engine backend: the build settings and the band's corners
    edges: tuple[int, int] | None = None  # the band's (low, high) pool bytes, before any budget_edge shift
    band_open: tuple[str, ...] = ()  # the build settings the band spans


def _cap_given_pool(req: EngineRequest, *, search_max_seq: bool) -> TrtllmEstimate:
    # issue 15: max_gpu_total_bytes beside free_gpu_memory_fraction: the smaller wins
    return cap_given_pool(estimate, req, search_max_seq=search_max_seq, engine="TensorRT-LLM",
                          rule="with free_gpu_memory_fraction the smaller of the two wins (KvCacheConfig."
                               "max_gpu_total_bytes; maintainer comment on NVIDIA/TensorRT-LLM#2773)")


def _start(req: EngineRequest, search_max_seq: bool) -> _Run:
    """The release, backend, launch options, build settings and the pool's bytes per token of the request."""
    rel = releases.release(req.engine_version)
    opts = _options(req)
    be = releases.backend(rel, opts.get("backend"))
    spec = req.spec
    launch = tfeatures.read({k: v for k, v in opts.items() if k in tfeatures.OPTION_KEYS}, spec, seq=req.seq)
    if launch.any and be == TENSORRT:
        raise UnsupportedError("the LLM-API options " + ", ".join(launch.options()) + " are modelled on the PyTorch "
                               "backend (kvplan/engines/trtllm/features.py), not on a trtllm-build engine",
                               where="--engine-option", hint="backend=pytorch")
    tspecs.refuse_unmodelled(spec.layer_specs)
    driver.refuse_batch(req)
    run = _Run(req, search_max_seq, rel=rel, opts=opts, be=be, launch=launch, kv=read_kv_dtype(req), act=model_dtype(req),
               # attention DP: each rank keeps every KV head of its own requests (KVCacheManager: tp_size = 1)
               kv_tp=1 if launch.attention_dp else req.tp, engine_be=be == TENSORRT)
    run.round_up = run.engine_be or rel.pytorch_blocks == "ceil"  # ceilDiv(max_tokens, tokens_per_block), else floor
    run.tpb = req.block_size or (rel.engine_tokens_per_block if run.engine_be else releases.PYTORCH_TOKENS_PER_BLOCK)
    run.dtype_bytes = run.kv.bits // 8 or 1
    reserve = driver.reserve_note(req, "TensorRT-LLM's budget is its own")
    if reserve:
        run.notes.append(reserve)
    # --max-num-seqs / --max-num-batched-tokens stand for max_batch_size / max_num_tokens (build settings of an
    # engine); --engine-option names them directly
    run.max_batch_size = opts.get("max_batch_size") or req.max_num_seqs or MAX_BATCH_SIZE
    run.max_num_tokens = opts.get("max_num_tokens") or req.max_num_batched_tokens or MAX_NUM_TOKENS
    if run.engine_be:
        # build settings of the engine: the ones not given are a range (build_settings.py), the nominal the default
        run.build = bsettings.build_range(max_batch_size=opts.get("max_batch_size") or req.max_num_seqs,
                                          max_num_tokens=opts.get("max_num_tokens") or req.max_num_batched_tokens,
                                          max_seq_len=req.seq, tokens_per_block=run.tpb)
        run.max_batch_size, run.max_num_tokens = run.build.max_batch_size, run.build.max_num_tokens
    run.max_input_len = opts.get("max_input_len") or MAX_INPUT_LEN
    run.cap_tokens = opts.get("max_tokens")
    run.cap_bytes = opts.get("max_gpu_total_bytes")
    _bytes_per_token(run)
    run.common = request_terms(req, run.kv, engine="trtllm", engine_version=f"TensorRT-LLM {rel.version} {be} backend")
    run.weights_total, _ = model_weights(spec, req.weight_fmt)
    run.frac = req.gpu_util if req.gpu_util is not None else rel.free_fraction
    run.trans = tfeatures.transceiver_terms(launch, _layer_bytes(run, run.pool_stages[run.heavy]), seq=req.seq,
                                            tokens_per_block=run.tpb, ranks=run.kv_tp * req.pp)
    run.lora_t = tfeatures.lora_terms(spec, launch, tp=req.tp, pp=req.pp, dtype_bytes=run.act.bits // 8)
    # built after the KV cache manager (create_py_executor_instance): the transceiver's buffers, the PEFT cache
    run.after_pool = (run.trans.total_bytes if run.trans else 0) + (run.lora_t.device_bytes if run.lora_t else 0)
    run.fit = tbudget.constants()
    return run


def _window_of(run: _Run, layer) -> int | None:
    """The attention window a layer's share of the pool is kept for; None: the full length."""
    return layer.window if tspecs.rule(layer).windowed and layer.window < run.req.seq and run.windows_apply else None


def _layer_bytes(run: _Run, layers) -> list[tuple[int | None, int]]:
    """(attention window or None, bytes per token on one GPU) for each layer with a KV cache."""
    out = []
    for layer in layers:
        rule = tspecs.rule(layer)
        if rule.tokens:
            out.append((_window_of(run, layer), rule.pool_bytes(layer, run.kv_tp, run.dtype_bytes)))
    return out


def _t2(run: _Run, layers) -> dict[int | None, int]:
    """Bytes per token of one GPU, per attention window (None = full attention)."""
    out: dict[int | None, int] = {}
    for w, per in _layer_bytes(run, layers):
        out[w] = out.get(w, 0) + per
    return out


def _t3(run: _Run, layers) -> int:
    """The estimator's bytes per token (T3): head_dim x KV heads // tp, which is less than the pool's past tp > KV
    heads."""
    return sum(tspecs.rule(layer).estimator_bytes(layer, run.kv_tp, run.dtype_bytes) for layer in layers
               if tspecs.rule(layer).tokens)


def _bytes_per_token(run: _Run) -> None:
    """The stages' layers, the pool's windows and bytes per token on the heaviest rank (T2, T3, T10)."""
    req, rel, spec = run.req, run.rel, run.req.spec
    run.counts = _pp_counts(spec.layers, req.pp)
    start = 0
    for n in run.counts:
        run.stages.append(spec.layer_specs[start:start + n])
        start += n
    # the pool's layers: the drafter's (MTP modules, the EAGLE-3 head) join the last pipeline rank's (get_pp_layers);
    # the estimator's bytes per token (T3) counts the target's alone
    run.spec_layers = tfeatures.spec_kv_layers(spec, run.launch)
    run.pool_stages = [tuple(layers) for layers in run.stages]
    run.pool_stages[-1] = run.pool_stages[-1] + run.spec_layers
    # the engine backend before 0.18 keeps one pool at the full length for every layer (a single window)
    run.windows_apply = not run.engine_be or rel.engine_vswa
    per_stage = [_t2(run, layers) for layers in run.pool_stages]
    run.heavy = heavy = max(range(req.pp), key=lambda s: sum(per_stage[s].values()))
    run.windows = per_stage[heavy]
    for layer in run.pool_stages[heavy]:
        if tspecs.rule(layer).tokens:
            w = _window_of(run, layer)
            run.layer_counts[w] = run.layer_counts.get(w, 0) + 1
    run.bpt = sum(run.windows.values())
    run.bpt3 = _t3(run, run.stages[heavy]) if not run.engine_be else run.bpt
    if run.bpt == 0:
        raise UnsupportedError("the model has no attention layer", where=spec.source or spec.name)
    run.vswa = len(run.windows) > 1
    if run.vswa:
        run.notes.append("sliding and full layers: TensorRT-LLM gives each window its own share of the pool (VSWA, "
                         "T10): " + ("equal shares on the PyTorch backend" if not run.engine_be else
                                     "weighted by bytes x window x layers on the engine backend"))
    elif run.engine_be and not rel.engine_vswa and any(tspecs.rule(x).windowed for x in spec.layer_specs):
        run.notes.append(f"TensorRT-LLM {rel.version}'s engine runtime keeps one pool at the full length for every "
                         "layer (no per-window pools before 0.18)")


def _given(run: _Run) -> None:
    run.pool_bytes = run.req.kv_cache_memory
    run.max_tokens = run.pool_bytes // run.bpt
    run.notes.append("--kv-cache-memory is taken as kv_cache_config.max_gpu_total_bytes: the estimate is skipped")


def _modelled(run: _Run) -> None:
    """The weights on the most loaded GPU, then the backend's budget."""
    req, hw, spec, act, launch = run.req, run.req.hardware, run.req.spec, run.act, run.launch
    facts = hw.facts
    in_use_b = driver.memory_in_use(req)
    if getattr(facts, "unified_memory", False) and not in_use_b and not (req.site and req.site.non_torch_for(req.tp, req.pp)):
        raise UnsupportedError(
            f"{hw.name or 'this GPU'} shares its memory with the CPU: TensorRT-LLM sizes the pool from "
            "cudaMemGetInfo, which counts what the operating system and other processes hold (a public DGX Spark "
            "log: 49 GiB outside torch, 5.95 GiB left for the cache of gpt-oss-120b); kvplan cannot know it",
            where="--gpu", hint="give --gpu-reserved SIZE (the memory in use before TensorRT-LLM starts) or "
                                "--kv-cache-memory SIZE")
    run.in_use = in_use_b
    weights = max(stage_weight_bytes(spec, req.weight_fmt, act, req.tp, req.pp))
    plain_weights = weights
    if launch.attention_dp and req.tp > 1:
        weights = _attention_dp_weights(spec, req, act, run.counts)
        run.notes.append("attention DP: attention, dense and embedding weights whole on every rank, the routed experts "
                         f"split over the {req.tp} ranks (an upper bound where TensorRT-LLM shards a dense MLP within a "
                         "node)")
    draft_b, run.draft_how = tfeatures.drafter_weights(spec, launch, tp=req.tp, bits=_linear_bits(spec, req, act),
                                                       act_bits=act.bits) if launch.decoding_type else (0, "")
    weights += draft_b  # the last pipeline rank's; counted on the most loaded GPU (an upper bound with PP)
    run.weights_added = weights - plain_weights
    run.weights = weights
    if run.engine_be:
        _engine_budget(run, _link(facts))
    else:
        _pytorch_budget(run)
    _at_edge(run)


def _engine_budget(run: _Run, link: str | None) -> None:
    """The TensorRT-engine backend (E1-E3): the pool is the fraction of what is free after the engine's buffers; the
    band spans the build settings the launch leaves open (build_settings.py) as well as the terms' measured error."""
    req, hw, spec = run.req, run.req.hardware, run.req.spec
    facts = hw.facts
    given = run.opts.get("activation_bytes")
    vocab = spec.vocab_size or 0

    def budget_at(batch: int, tokens: int, scale: Fraction = Fraction(1)) -> tbudget.EngineBudget:
        activation = given if given is not None else int(_execution_context(spec, run.act, req.tp, tokens) * scale)
        return tbudget.engine_budget(hw.capacity_bytes, weights=run.weights, activation=activation,
                                     batch_x_vocab=batch * vocab, tp=req.tp,
                                     architecture=facts.architecture if facts else None, link=link, fraction=run.frac,
                                     in_use=run.in_use, fit=run.fit)

    eb = budget_at(run.max_batch_size, run.max_num_tokens)
    if given is None:
        run.notes.append("the engine's execution context (activations, fixed by trtllm-build) is modelled from "
                         "max_num_tokens; give --engine-option activation_bytes=SIZE (\"Allocated X MiB for "
                         "execution context memory\") for the real one")
    run.peak, run.buffers, run.non_torch = eb.activation_bytes, eb.buffers_bytes, eb.context_bytes + eb.nccl_bytes
    run.budget_b = run.pool_bytes = eb.pool_bytes
    run.max_tokens = _engine_tokens(run, eb.pool_bytes)
    run.band = tbudget.engine_band_bytes(eb, req.tp, link)
    run.edges = (eb.pool_bytes - run.band, eb.pool_bytes + run.band)
    br = run.build
    # max_num_tokens moves the modelled execution context only; a given one settles it
    left_open = [n for n in (br.open if br else ()) if n != "max_num_tokens" or given is None]
    # a modelled execution context: the low edge takes it at the largest printed / modelled ratio of the engine logs
    ratio = tbudget.context_ratio_high() if given is None else Fraction(1)
    if br is not None and (left_open or ratio > 1):
        most, least = budget_at(*br.most, scale=ratio), budget_at(*br.least)
        run.edges = (most.pool_bytes - tbudget.engine_band_bytes(most, req.tp, link),
                     least.pool_bytes + tbudget.engine_band_bytes(least, req.tp, link))
        run.band_open = tuple(left_open)
    if ratio > 1:
        run.notes.append(f"the band's low edge takes the execution context at {float(ratio):.2f}x kvplan's model, the "
                         "largest ratio of an engine log that prints it (TensorRT plans its activations at build time; "
                         "budget.py ENGINE_CONTEXTS)")
    if br is not None and left_open:
        run.notes.append(_open_note(run, br, left_open))
    run.notes.append("the TensorRT-engine backend sizes the pool from what is free after the engine, its execution "
                     "context, runtime and decoder buffers are allocated (no profiling run); kvplan models them")


def _open_note(run: _Run, br: bsettings.BuildRange, left_open: list[str]) -> str:
    """What the band spans for the build settings left open, and how to narrow it."""
    spans = {"max_batch_size": (br.least[0], br.most[0], run.max_batch_size),
             "max_num_tokens": (br.least[1], br.most[1], run.max_num_tokens)}
    return ("trtllm-build's " + " and ".join(left_open) + " not given: the band spans the engines built with "
            + " and ".join(f"{n} {spans[n][0]:,}-{spans[n][1]:,}" for n in left_open)
            + " (the pool: the release's default" + ("s " if len(left_open) > 1 else " ")
            + " and ".join(f"{spans[n][2]:,}" for n in left_open) + "); give "
            + " ".join(f"--engine-option {n}=N" for n in left_open)
            + " (the engine's config.json build_config) to narrow it")


def _engine_tokens(run: _Run, pool_b: int) -> int:
    """calculateMaxNumBlocks' max_tokens for a pool of pool_b bytes, with kv_cache_config's caps."""
    max_tokens = pool_b // run.bpt if pool_b > 0 else 0
    if run.cap_tokens is not None:
        max_tokens = run.cap_tokens if run.rel.max_tokens_rule == "replaces" else min(max_tokens, run.cap_tokens)
    if run.cap_bytes is not None:
        max_tokens = min(max_tokens, run.cap_bytes // run.bpt)
    return max_tokens


def _at_edge(run: _Run) -> None:
    """With budget_edge "low" / "high" (check judges by the low edge), the pool sized at that edge of the band; the
    budget's terms and kv_budget_bytes stay the modelled ones, which the edge is measured from."""
    edge = {"low": 0, "high": 1}.get(run.req.budget_edge or "")
    if edge is None or run.edges is None or run.max_tokens is None:
        return
    pool_b = run.edges[edge]
    if run.engine_be:
        run.pool_bytes = pool_b
        run.max_tokens = _engine_tokens(run, pool_b)
        return
    run.max_tokens = max(pool_b, 0) // run.bpt3
    if run.cap_tokens is not None:
        run.max_tokens = min(run.max_tokens, run.cap_tokens)
    run.pool_bytes = pool_b if run.vswa else run.max_tokens * run.bpt


def _pytorch_budget(run: _Run) -> None:
    """The PyTorch backend (T3-T6): a warm-up pool, the profiled peak, then the fraction of what is free."""
    req, hw, spec, fit, launch, tpb = run.req, run.req.hardware, run.req.spec, run.fit, run.launch, run.tpb
    peak = int(one_sequence_forward_peak(spec, run.act, tp=req.tp, tokens=run.max_num_tokens) * fit.activation_ratio)
    if req.site is not None and req.site.activation_scale != 1:
        peak = int(peak * req.site.activation_scale)
    run.peak = peak
    run.non_torch = fit.non_torch_one_gpu + (fit.nccl_extra if req.tp > 1 else 0)
    if req.site is not None and req.site.non_torch_for(req.tp, req.pp) is not None:  # its layouts only
        run.non_torch = req.site.non_torch_for(req.tp, req.pp)
    run.weights += fit.load_extra
    # T5.1: the warm-up pool: the CUDA-graph warm-up or the dummy prompts, at least max_batch_size blocks
    dummy_len = min(run.max_num_tokens, req.seq - 1)
    n_full, rest = divmod(run.max_num_tokens, dummy_len) if dummy_len > 0 else (0, 0)
    # _get_token_num_for_estimation: each dummy request also reserves the draft tokens (twice with the overlap
    # scheduler, TensorRT-LLM's default) and the extra KV tokens; attention DP submits them once per rank
    extra = 1 + (2 * launch.max_draft_len + launch.extra_kv_tokens if launch.decoding_type else 0)
    dummy_blocks = n_full * cdiv(dummy_len + extra, tpb) + (cdiv(rest + extra, tpb) if rest else 0)
    if launch.attention_dp:
        dummy_blocks *= req.tp
    graph_blocks = cdiv(req.seq + 1, tpb) + CUDA_GRAPH_MAX_BS - 1
    temp_blocks = max(dummy_blocks, graph_blocks, run.max_batch_size)
    # memory in use before start counts as non-torch memory (the profile reads device used - torch allocated)
    run.temp, budget_b, max_tokens = pool_tokens(hw.capacity_bytes, weights=run.weights, peak=peak,
                                                 non_torch=run.non_torch + run.in_use, temp_blocks=temp_blocks,
                                                 bytes_per_token=run.bpt, estimator_bytes_per_token=run.bpt3,
                                                 tokens_per_block=tpb, fraction=run.frac)
    if run.cap_tokens is not None:
        max_tokens = min(max_tokens, run.cap_tokens)
    if run.cap_bytes is not None:
        budget_b = min(budget_b, run.cap_bytes)
        max_tokens = min(max_tokens, run.cap_bytes // run.bpt3)
    run.budget_b, run.max_tokens = budget_b, max_tokens
    run.pool_bytes = budget_b if run.vswa else max_tokens * run.bpt
    run.band = tbudget.pytorch_band_bytes(run.frac, req.tp)
    run.edges = (run.pool_bytes - run.band, run.pool_bytes + run.band)
    run.notes.append("TensorRT-LLM profiles the peak at start-up; kvplan models the activations (kvplan's forward "
                     "model x the ratio measured on TensorRT-LLM logs) and the memory outside torch as measured on "
                     "TensorRT-LLM logs (docs/engines/trtllm.md)")
    if run.bpt3 < run.bpt:
        why = f"tp {req.tp} > KV heads" if not run.spec_layers else "the drafter's layers are in the pool alone"
        run.notes.append(f"{why}: the estimator counts {run.bpt3:,} B per token, the pool stores "
                         f"{run.bpt:,} B (T3): the pool is capped by the free memory instead")


def _blocks_of(run: _Run, pool_b: int, tokens_cap: int) -> tuple[int, dict]:
    """(primary blocks, {window: blocks}) from a pool of pool_b bytes and the max_tokens cap."""
    tpb = run.tpb
    if run.vswa:
        if run.engine_be:  # BlockManager::calculateWindowSizeToShare: bytes x window x layers
            weight = {w: Fraction(per, run.bpt) * (w or run.req.seq) * run.layer_counts.get(w, 1)
                      for w, per in run.windows.items()}
        else:
            weight = {w: Fraction(1) for w in run.windows}
        total_w = sum(weight.values())
        per_window = {}
        for w, per in run.windows.items():
            share_tokens = int(Fraction(max(pool_b, 0)) * weight[w] / total_w / per)
            per_window[w] = cdiv(share_tokens, tpb) if run.round_up else share_tokens // tpb
        return (per_window[None] if None in per_window else min(per_window.values())), per_window
    return (cdiv(tokens_cap, tpb) if run.round_up else tokens_cap // tpb), {}


def _shape(run: _Run, nb: int, pw: dict) -> tuple[int, int, bool]:
    """(requests of seq at once, the longest length one request gets, fits) for a pool of nb blocks."""
    req, tpb = run.req, run.tpb
    if run.vswa:
        need = {w: cdiv(min(req.seq, w or req.seq), tpb) for w in run.windows}
        c = min(pw[w] // need[w] for w in run.windows)
        # the longest length every window's share holds once (T7 shrinks windows from the smallest up)
        bound = min((pw[w] * tpb if w is None else req.seq) for w in run.windows)
    else:
        c = nb // cdiv(req.seq, tpb)
        bound = nb * tpb
        if run.engine_be and nb * tpb < req.seq:
            # clampWindowSizesToFitAtLeastOneSequence (calculateMaxAttentionWindow, beam 1)
            inp = min(run.max_input_len, req.seq - 1)
            out = req.seq - inp
            bound = min(out + (nb - cdiv(out, tpb)) * tpb, req.seq)
    c = min(c, run.max_batch_size)
    ok = nb > 0 and bound >= req.seq
    return c, bound, ok and req.batch <= c


def _pool(run: _Run) -> None:
    """The blocks, the verdict, what is built after the pool, the longest length and the band."""
    req, notes = run.req, run.notes
    if run.max_tokens is not None:
        _verdict(run)
        _after_pool(run)
        run.max_batch = run.conc if run.fits else 0
        run.serves = run.fits and req.batch <= run.max_batch
        if run.fits and not run.serves:
            notes.append(f"the pool holds {run.max_batch} requests of {req.seq:,} tokens at once; the other "
                         f"{req.batch - run.max_batch} wait (GUARANTEED_NO_EVICT admits a request only with blocks for "
                         "all of it)")
        if run.search_max_seq:
            # the longest max_seq_len at which `fits` holds for `batch`, each length judged with the pool built at
            # it: the warm-up pool and the per-window split (VSWA only once max_seq_len passes a window) change
            # with it; fewer blocks and fewer requests as it grows, so the test is monotone
            run.max_seq = driver.longest_fitting(estimate, req)
        if not run.starts:
            notes.append("no memory is left for the KV cache after the weights and the profiled peak")
        _band(run)
    hw = req.hardware
    if hw is not None and run.weights is not None:
        pool = (run.tokens or 0) * run.bpt if not run.vswa else max(run.pool_bytes, 0)
        other = (run.peak or 0) + (run.non_torch or 0) + (run.buffers or 0) + (run.in_use or 0)
        run.per_gpu = PerGpu(capacity_bytes=hw.capacity_bytes, usable_bytes=hw.capacity_bytes, weights_bytes=run.weights,
                             cache_bytes=pool, reserved_bytes=other,
                             free_bytes=hw.capacity_bytes - run.weights - other - pool)
    if run.launch.any:
        _feature_record(run)


def _verdict(run: _Run) -> None:
    """The pool's blocks, and whether TensorRT-LLM starts with max_seq_len as given (T7, E5)."""
    req, rel = run.req, run.rel
    run.num_blocks, per_window = _blocks_of(run, run.pool_bytes, run.max_tokens)
    run.window_blocks = tuple((w or req.seq, n) for w, n in sorted(per_window.items(), key=lambda kv: kv[0] or 0))
    run.tokens = run.num_blocks * run.tpb
    run.conc, bound, _ = _shape(run, run.num_blocks, per_window)
    run.starts = run.num_blocks > 0
    run.fits = run.starts and bound >= req.seq
    if run.starts and not run.fits:
        run.est_len = bound
        short = PYTORCH if not run.engine_be else rel.engine_short_pool
        if short:
            run.notes.append(f"TensorRT-LLM starts with max_seq_len reduced to {bound:,} (\"Adjusted max_seq_len\" / "
                             "\"maxSequenceLen is reduced to maxAttentionWindow\", T7/E5)")
        else:
            run.notes.append(f"the pool holds one request of at most {bound:,} tokens; what TensorRT-LLM "
                             f"{rel.version}'s engine runtime does then (lower max_seq_len or fail) was not read")


def _after_pool(run: _Run) -> None:
    """The transceiver and the PEFT cache are built after the pool (create_py_executor_instance): they must fit in
    what is left beside the weights, the profiled peak, the memory outside torch and the pool."""
    hw, trans, lora_t, after_pool = run.req.hardware, run.trans, run.lora_t, run.after_pool
    if not (after_pool and hw is not None and run.weights is not None):
        return
    pool_now = run.num_blocks * run.tpb * run.bpt if not run.vswa else max(run.pool_bytes, 0)
    left = (hw.capacity_bytes - run.weights - (run.peak or 0) - (run.non_torch or 0) - (run.buffers or 0)
            - (run.in_use or 0) - pool_now)
    run.trans_fits = left >= after_pool
    what = " and ".join(w for w, on in (("the cache transceiver's buffers", trans), ("the LoRA device cache", lora_t))
                        if on)
    if run.trans_fits and run.search_max_seq:
        if trans is not None:
            run.notes.append(f"the cache transceiver ({trans.backend}): {trans.buffers} transfer buffers of "
                             f"{trans.buffer_bytes:,} B allocated after the pool, in the {left:,} B it leaves")
        if lora_t is not None:
            run.notes.append(f"lora_config: a {lora_t.device_bytes:,} B device PEFT cache allocated after the pool, "
                             f"in the {left:,} B it leaves")
    if not run.trans_fits:
        run.fits = False
        run.notes.append(f"{what} ({after_pool:,} B) do not fit in the {max(left, 0):,} B left beside the pool: lower "
                         "free_gpu_memory_fraction" + (" or max_tokens_in_buffer" if trans else "")
                         + (" or max_loras" if lora_t else ""))


def _band(run: _Run) -> None:
    """The pool at the two edges of a modelled budget's band, and the max_tokens that pins the low one."""
    if run.source == driver.GIVEN:
        run.low = run.high = run.pool_bytes
    elif run.source == driver.MODELLED:
        run.low, run.high = run.edges if run.edges else (run.pool_bytes - run.band, run.pool_bytes + run.band)

        def edge(pool_b: int) -> tuple[int, dict]:
            cap = max(pool_b, 0) // (run.bpt if run.engine_be else run.bpt3)
            if run.cap_tokens is not None:
                cap = min(cap, run.cap_tokens)
            return _blocks_of(run, pool_b, cap)

        lo_nb, lo_pw = edge(run.low)
        hi_nb, hi_pw = edge(run.high)
        run.marginal = _shape(run, lo_nb, lo_pw)[2] != _shape(run, hi_nb, hi_pw)[2]
        if lo_nb > 0:
            run.pin_flag = f"kv_cache_config: {{max_tokens: {lo_nb * run.tpb}}}"
            run.pinned_fits = _shape(run, lo_nb, lo_pw)[2]


def _feature_record(run: _Run) -> None:
    """The terms of the LLM-API options (features.py): speculative decoding, attention DP, transceiver, LoRA."""
    req, spec, launch, act, notes = run.req, run.req.spec, run.launch, run.act, run.notes
    sp = None
    if launch.decoding_type:
        drafter = tfeatures.drafter_weights(spec, launch, tp=req.tp, bits=_linear_bits(spec, req, act), act_bits=act.bits)
        sp = tfeatures.SpeculativeTerms(
            decoding_type=launch.decoding_type, kv_layers=launch.spec_layers, max_draft_len=launch.max_draft_len,
            extra_kv_tokens=launch.extra_kv_tokens,
            draft=launch.eagle_head.name if launch.eagle_head is not None else f"{spec.name}'s MTP modules",
            weights_per_gpu_bytes=drafter[0], formula=run.draft_how or drafter[1])
        notes.append(f"speculative decoding ({launch.decoding_type}): {launch.spec_layers} more layer(s) in the KV cache "
                     "manager (get_pp_layers), in the pool's bytes per token but not the estimator's")
    pools = req.tp if launch.attention_dp else 1
    if launch.attention_dp:
        notes.append(f"attention DP: each of the {req.tp} ranks has its own pool and its own requests; the "
                     "deployment holds that many times one pool's")
    run.feats = tfeatures.TrtllmFeatures(
        options=launch.options(), attention_dp=launch.attention_dp, kv_head_split=run.kv_tp, pools=pools,
        speculative=sp, transceiver=run.trans, lora=run.lora_t, weights_added_per_gpu_bytes=run.weights_added,
        after_pool_bytes=run.after_pool, after_pool_fits=run.trans_fits,
        deployment_concurrency=run.conc * pools if run.conc is not None else None,
        notes=tuple(n for n in notes if n.startswith(("attention DP", "speculative", "the cache transceiver",
                                                      "lora_config", "the LoRA"))))


def _result(run: _Run) -> TrtllmEstimate:
    req, tpb = run.req, run.tpb
    all_windows = [_t2(run, layers) for layers in run.pool_stages]
    # one request's KV over the GPUs holding it: every TP rank (its heads, or the whole MLA latent), one rank with
    # attention DP
    kv_one = run.kv_tp * sum(per * cdiv(min(req.seq, w or req.seq), tpb) * tpb
                             for st in all_windows for w, per in st.items())
    return TrtllmEstimate(
        **run.common, kv_bytes=kv_one * req.batch, state_bytes=0, cache_bytes=kv_one * req.batch,
        weights_bytes=run.weights_total, per_gpu=run.per_gpu, max_batch=run.max_batch, max_seq=run.max_seq,
        notes=tuple(run.notes), **verdict_terms(run.fits, run.serves), trtllm_version=run.rel.version, backend=run.be,
        tokens_per_block=tpb, bytes_per_token=run.bpt, estimator_bytes_per_token=run.bpt3,
        free_gpu_memory_fraction=None if run.source == driver.NO_GPU else str(float(run.frac)),
        max_batch_size=run.max_batch_size, max_num_tokens=run.max_num_tokens, weights_per_gpu_bytes=run.weights,
        activation_peak_bytes=run.peak, non_torch_bytes=run.non_torch, engine_buffers_bytes=run.buffers,
        in_use_bytes=run.in_use, temporary_pool_bytes=run.temp, kv_budget_bytes=run.budget_b,
        available_kv_bytes=run.pool_bytes, available_kv_bytes_low=run.low, available_kv_bytes_high=run.high,
        marginal=run.marginal, max_tokens=run.max_tokens, num_blocks=run.num_blocks, kv_cache_tokens=run.tokens,
        window_blocks=run.window_blocks, max_concurrency=run.conc, estimated_max_model_len=run.est_len,
        budget_source=run.source, suggestions=(), pin_flag=run.pin_flag, pinned_fits=run.pinned_fits,
        features=run.feats, band_open=run.band_open,
    )


STEPS = driver.Steps(kinds=tspecs.TABLE, refuse=None,
                     on_the_gpu=_cap_given_pool, start=_start, given=_given, modelled=_modelled,
                     no_gpu="no GPU given: the pool needs --gpu/--gpu-mem or --kv-cache-memory",
                     pool=_pool, result=_result)


def estimate(req: EngineRequest, *, search_max_seq: bool = True, pool_capped: bool = False) -> TrtllmEstimate:
    """The pool TensorRT-LLM builds for this deployment (max_seq left None when search_max_seq is False: the
    search for it re-runs the estimate that way), by the steps above in the order every paged engine follows
    (kvplan/engines/driver.py)."""
    return driver.estimate(STEPS, req, search_max_seq=search_max_seq, pool_checked=pool_capped)


def _linear_bits(spec, req: EngineRequest, act: DType) -> Fraction:
    return linear_bits(spec, req.weight_fmt, act)


def _attention_dp_weights(spec, req: EngineRequest, act: DType, counts: list[int]) -> int:
    """The most loaded GPU's weights with attention DP: every weight whole (TP 1) but the routed experts, which
    the ranks split among them (moe_tp x moe_ep = tp)."""
    whole = stage_weight_bytes(spec, req.weight_fmt, act, 1, req.pp)
    if spec.moe is None or not spec.moe.expert_params:
        return max(whole)
    experts = expert_bytes(spec, req.weight_fmt, act)
    out = []
    for stage, layers in enumerate(counts):
        stage_experts = experts * layers // spec.layers
        out.append(whole[stage] - stage_experts + cdiv(stage_experts, req.tp))
    return max(out)


def _link(facts) -> str | None:
    return link_class(getattr(facts, "interconnect", None))


def _execution_context(spec, act: DType, tp: int, max_num_tokens: int) -> int:
    """The engine's activation memory when trtllm-build's figure is not given: kvplan's forward model of
    max_num_tokens tokens (vLLM's, the widest point of one decoder layer), an assumption."""
    return one_sequence_forward_peak(spec, act, tp=tp, tokens=max_num_tokens)
