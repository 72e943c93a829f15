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

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

from kvplan.core.layers import ENGINE_BASE_KINDS, require_mapped_kinds
from kvplan.core.dtypes import DType
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.spec import CHUNKED, FULL, MLA, SLIDING, STATE
from kvplan.core.units import MAX_TOKENS, parse_size
from kvplan.engines.paged import cap_given_pool, cdiv, kv_dtype, longest, model_dtype
from kvplan.engines.api import EngineRequest
from kvplan.engines.pool import (EngineEstimate, NoKvMemory, PoolTooShort, PoolView, Refused, StartProblem,
                                 request_terms, verdict_terms)
from kvplan.engines.result import PerGpu
from kvplan.engines.runtime.activations import one_sequence_forward_peak
from kvplan.engines.runtime.startup import link_class
from kvplan.engines.runtime.weights import expert_bytes, linear_bits, model_weights, stage_weight_bytes
from kvplan.engines.trtllm import budget as tbudget
from kvplan.engines.trtllm import features as tfeatures
from kvplan.engines.trtllm import releases
from kvplan.engines.trtllm.budget import pool_tokens
from kvplan.engines.trtllm.releases import PYTORCH, TENSORRT

GIB = 2**30
MIB = 2**20
MAX_BATCH_SIZE = 2048  # BaseLlmArgs.max_batch_size; trtllm-build --max_batch_size default
MAX_NUM_TOKENS = 8192  # BaseLlmArgs.max_num_tokens; trtllm-build --max_num_tokens default
MAX_INPUT_LEN = 1024  # BaseLlmArgs.max_input_len; trtllm-build --max_input_len default
CUDA_GRAPH_MAX_BS = 128  # CudaGraphConfig().max_batch_size
# kv_cache_config.dtype: "auto" (model dtype, or fp8 for checkpoints with an FP8 KV cache), "fp8"; nvfp4 not modelled
KV_DTYPES = {"auto": "", "fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "bf16": "bf16", "bfloat16": "bf16",
             "fp16": "fp16", "float16": "fp16"}
# --engine-option keys: the backend, the engine's build settings, the execution context trtllm-build reports,
# and the kv_cache_config caps
OPTION_KEYS = ("backend", "max_batch_size", "max_num_tokens", "max_input_len", "activation_bytes", "max_tokens",
               "max_gpu_total_bytes") + tfeatures.OPTION_KEYS


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

    def pool_view(self) -> PoolView | None:
        if self.available_kv_bytes is None:
            return None
        problem: StartProblem | None = None
        if not self.fits:
            if self.features is not None and self.features.after_pool_fits is False:
                f = self.features
                what = " and ".join(w for w, on in ((f"the cache transceiver's {f.transceiver.buffers if f.transceiver else 0} "
                                                     "transfer buffers", f.transceiver), ("the LoRA device cache", f.lora)) if on)
                problem = Refused(f"{what} ({f.after_pool_bytes:,} B) do not fit in the memory free_gpu_memory_fraction "
                                  "leaves beside the pool and the profiled peak: TensorRT-LLM runs out of memory building "
                                  "them after the pool")
            elif self.available_kv_bytes <= 0:
                problem = NoKvMemory()
            elif self.estimated_max_model_len:
                action = None
                if any(n.startswith("TensorRT-LLM starts") for n in self.notes):
                    action = f"TensorRT-LLM starts with max_seq_len reduced to {self.estimated_max_model_len:,}"
                problem = PoolTooShort(self.available_kv_bytes, self.estimated_max_model_len, action=action)
        pool = self.per_gpu.cache_bytes if self.per_gpu else None
        per_request = None
        slots, block = self.kv_cache_tokens, self.tokens_per_block
        if pool is not None:
            if slots and not self.window_blocks and pool % slots == 0:
                per_request = -(-self.seq // block) * block * (pool // slots)  # whole blocks of tokens
            elif self.max_batch:
                per_request = -(-pool // self.max_batch)  # per-window pools: an even share
        return PoolView(problem=problem, available_kv_bytes=self.available_kv_bytes, num_gpu_blocks=self.num_blocks,
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
        elif key in ("activation_bytes", "max_gpu_total_bytes"):
            out[key] = parse_size(value, what=f"--engine-option {key}")
        else:
            try:
                n = int(value.replace("_", ""))
            except ValueError:
                raise InputError(f"{key}={value!r} is not a whole number", where="--engine-option") from None
            if n < 1 or n > 2**40:
                raise InputError(f"{key}={n} is out of range", where="--engine-option")
            out[key] = n
    return out


def read_kv_dtype(req: EngineRequest) -> DType:
    """The request's kv_cache_config.dtype as TensorRT-LLM reads it."""
    return kv_dtype(req, KV_DTYPES, engine="TensorRT-LLM", flag="kv_cache_config.dtype")


def estimate(req: EngineRequest, *, search_max_seq: bool = True, pool_capped: bool = False) -> TrtllmEstimate:
    """The pool TensorRT-LLM builds for this deployment (max_seq left None when search_max_seq is False: the
    search for it re-runs the estimate that way)."""
    require_mapped_kinds(req.spec.layer_specs, ENGINE_BASE_KINDS, "TensorRT-LLM", req.spec.source or req.spec.name)
    if not pool_capped and req.kv_cache_memory is not None and req.hardware is not None:
        # issue 15: max_gpu_total_bytes beside free_gpu_memory_fraction: the smaller wins
        return cap_given_pool(estimate, req, search_max_seq=search_max_seq, engine="TensorRT-LLM",
                              rule="with free_gpu_memory_fraction the smaller of the two wins (KvCacheConfig."
                                   "max_gpu_total_bytes; maintainer comment on NVIDIA/TensorRT-LLM#2773)")
    rel = releases.release(req.engine_version)
    opts = _options(req)
    be = releases.backend(rel, opts.get("backend"))
    spec = req.spec
    launch = tfeatures.read({k: v for k, v in opts.items() if k in tfeatures.OPTION_KEYS}, spec, seq=req.seq)
    if launch.any and be == TENSORRT:
        raise UnsupportedError("the LLM-API options " + ", ".join(launch.options()) + " are modelled on the PyTorch "
                               "backend (kvplan/engines/trtllm/features.py), not on a trtllm-build engine",
                               where="--engine-option", hint="backend=pytorch")
    # attention DP: each rank keeps every KV head of its own requests (KVCacheManager: tp_size = 1)
    kv_tp = 1 if launch.attention_dp else req.tp
    if any(layer.kind == STATE for layer in spec.layer_specs):
        raise UnsupportedError("TensorRT-LLM's Mamba hybrid cache (MambaHybridCacheManager) is not modelled",
                               where="--engine trtllm", hint="try --engine vllm or --engine sglang")
    if any(layer.kind == CHUNKED for layer in spec.layer_specs):
        # TensorRT-LLM applies attention_chunk_size in its attention kernel (docs/source/features/long-sequence.md:
        # Llama 4, TRTLLM backend, context requests only); whether its KV pool keeps the chunk or the whole sequence
        # for those layers is not settled from the source kvplan read: no guess
        raise UnsupportedError("TensorRT-LLM's KV pool for chunked-local attention layers (Llama 4) is not modelled",
                               where="--engine trtllm", hint="try --engine vllm or --engine sglang")
    if req.batch < 1:
        raise InputError(f"must be at least 1, got {req.batch}", where="--batch")
    kv = read_kv_dtype(req)
    act = model_dtype(req)
    engine_be = be == TENSORRT
    round_up = engine_be or rel.pytorch_blocks == "ceil"  # ceilDiv(max_tokens, tokens_per_block), else floor
    tpb = req.block_size or (rel.engine_tokens_per_block if engine_be else releases.PYTORCH_TOKENS_PER_BLOCK)
    b = kv.bits // 8 or 1
    notes: list[str] = []
    if req.hardware is not None and req.reserve_bytes is not None:
        notes.append("--reserve applies to the static engine; TensorRT-LLM's budget is its own")
    # --max-num-seqs / --max-num-batched-tokens stand for max_batch_size / max_num_tokens (build settings of an
    # engine); --engine-option names them directly
    max_batch_size = opts.get("max_batch_size") or req.max_num_seqs or MAX_BATCH_SIZE
    max_num_tokens = opts.get("max_num_tokens") or req.max_num_batched_tokens or MAX_NUM_TOKENS
    max_input_len = opts.get("max_input_len") or MAX_INPUT_LEN
    cap_tokens = opts.get("max_tokens")
    cap_bytes = opts.get("max_gpu_total_bytes")
    counts = _pp_counts(spec.layers, req.pp)
    stages, start = [], 0
    for n in counts:
        stages.append(spec.layer_specs[start:start + n])
        start += n
    # the pool's layers: the drafter's (MTP modules, the EAGLE-3 head) join the last pipeline rank's (get_pp_layers);
    # the estimator's bytes per token (T3) counts the target's alone
    spec_layers = tfeatures.spec_kv_layers(spec, launch)
    pool_stages = [tuple(layers) for layers in stages]
    pool_stages[-1] = pool_stages[-1] + spec_layers
    # the engine backend before 0.18 keeps one pool at the full length for every layer (a single window)
    windows_apply = not engine_be or rel.engine_vswa

    def layer_bytes(layers) -> list[tuple[int | None, int]]:
        """(attention window or None, bytes per token on one GPU) for each layer with a KV cache."""
        out = []
        for layer in layers:
            if layer.kind in (FULL, SLIDING):
                per = cdiv(layer.kv_heads, kv_tp) * (layer.head_dim + layer.v_head_dim) * b
            elif layer.kind == MLA:
                per = layer.mla.latent_dim * b
            else:
                continue
            w = layer.window if layer.kind == SLIDING and layer.window < req.seq and windows_apply else None
            out.append((w, per))
        return out

    def t2(layers) -> dict[int | None, int]:
        """Bytes per token of one GPU, per attention window (None = full attention)."""
        out: dict[int | None, int] = {}
        for w, per in layer_bytes(layers):
            out[w] = out.get(w, 0) + per
        return out

    def t3(layers) -> int:
        total = 0
        for layer in layers:
            if layer.kind in (FULL, SLIDING):
                total += 2 * (layer.head_dim * layer.kv_heads // kv_tp) * b
            elif layer.kind == MLA:
                total += layer.mla.latent_dim * b
        return total

    per_stage = [t2(layers) for layers in pool_stages]
    heavy = max(range(req.pp), key=lambda s: sum(per_stage[s].values()))
    windows = per_stage[heavy]
    layer_counts: dict[int | None, int] = {}
    for layer in pool_stages[heavy]:
        if layer.kind in (FULL, SLIDING, MLA):
            w = layer.window if layer.kind == SLIDING and layer.window < req.seq and windows_apply else None
            layer_counts[w] = layer_counts.get(w, 0) + 1
    bpt = sum(windows.values())
    bpt3 = t3(stages[heavy]) if not engine_be else bpt
    if bpt == 0:
        raise UnsupportedError("the model has no attention layer", where=spec.source or spec.name)
    vswa = len(windows) > 1
    if vswa:
        notes.append("sliding and full layers: TensorRT-LLM gives each window its own share of the pool (VSWA, T10): "
                     + ("equal shares on the PyTorch backend" if not engine_be else
                        "weighted by bytes x window x layers on the engine backend"))
    elif engine_be and not rel.engine_vswa and any(x.kind == SLIDING for x in spec.layer_specs):
        notes.append(f"TensorRT-LLM {rel.version}'s engine runtime keeps one pool at the full length for every layer "
                     "(no per-window pools before 0.18)")
    hw = req.hardware
    facts = hw.facts if hw is not None else None
    common = request_terms(req, kv, engine="trtllm", engine_version=f"TensorRT-LLM {rel.version} {be} backend")
    weights_total, _ = model_weights(spec, req.weight_fmt)
    frac = req.gpu_util if req.gpu_util is not None else rel.free_fraction
    weights = peak = non_torch = temp = budget_b = buffers = in_use = None
    weights_added, draft_how = 0, ""
    trans = tfeatures.transceiver_terms(launch, layer_bytes(pool_stages[heavy]), seq=req.seq, tokens_per_block=tpb,
                                        ranks=kv_tp * req.pp)
    lora_t = tfeatures.lora_terms(spec, launch, tp=req.tp, pp=req.pp, dtype_bytes=act.bits // 8)
    # built after the KV cache manager (create_py_executor_instance): the transceiver's buffers, the PEFT cache
    after_pool = (trans.total_bytes if trans else 0) + (lora_t.device_bytes if lora_t else 0)
    trans_fits = None
    band = 0
    fit = tbudget.constants()
    in_use_b = (req.gpu_reserved_bytes or 0) + (req.site.memory_in_use_bytes if req.site else 0)
    if req.kv_cache_memory is not None:
        pool_bytes = req.kv_cache_memory
        max_tokens = pool_bytes // bpt
        source = "--kv-cache-memory"
        notes.append("--kv-cache-memory is taken as kv_cache_config.max_gpu_total_bytes: the estimate is skipped")
    elif hw is not None:
        if getattr(facts, "unified_memory", False) and not in_use_b and not (req.site and req.site.non_torch_for(req.tp, req.pp)):
            raise UnsupportedError(
                f"{hw.name or 'this GPU'} shares its memory with the CPU: TensorRT-LLM sizes the pool from "
                "cudaMemGetInfo, which counts what the operating system and other processes hold (a public DGX Spark "
                "log: 49 GiB outside torch, 5.95 GiB left for the cache of gpt-oss-120b); kvplan cannot know it",
                where="--gpu", hint="give --gpu-reserved SIZE (the memory in use before TensorRT-LLM starts) or "
                                    "--kv-cache-memory SIZE")
        in_use = in_use_b
        weights = max(stage_weight_bytes(spec, req.weight_fmt, act, req.tp, req.pp))
        plain_weights = weights
        if launch.attention_dp and req.tp > 1:
            weights = _attention_dp_weights(spec, req, act, counts)
            notes.append("attention DP: attention, dense and embedding weights whole on every rank, the routed experts "
                         f"split over the {req.tp} ranks (an upper bound where TensorRT-LLM shards a dense MLP within a node)")
        draft_b, draft_how = tfeatures.drafter_weights(spec, launch, tp=req.tp, bits=_linear_bits(spec, req, act),
                                                       act_bits=act.bits) if launch.decoding_type else (0, "")
        weights += draft_b  # the last pipeline rank's; counted on the most loaded GPU (an upper bound with PP)
        weights_added = weights - plain_weights
        link = _link(facts)
        if engine_be:
            given = opts.get("activation_bytes")
            activation = given if given is not None else _execution_context(spec, act, req.tp, max_num_tokens)
            if given is None:
                notes.append("the engine's execution context (activations, fixed by trtllm-build) is modelled from "
                             "max_num_tokens; give --engine-option activation_bytes=SIZE (\"Allocated X MiB for "
                             "execution context memory\") for the real one")
            vocab = spec.vocab_size or 0
            eb = tbudget.engine_budget(hw.capacity_bytes, weights=weights, activation=activation,
                                       batch_x_vocab=max_batch_size * vocab, tp=req.tp,
                                       architecture=facts.architecture if facts else None, link=link, fraction=frac,
                                       in_use=in_use, fit=fit)
            peak, buffers, non_torch = activation, eb.buffers_bytes, eb.context_bytes + eb.nccl_bytes
            budget_b = eb.pool_bytes
            max_tokens = budget_b // bpt if budget_b > 0 else 0
            if cap_tokens is not None:
                max_tokens = cap_tokens if rel.max_tokens_rule == "replaces" else min(max_tokens, cap_tokens)
            if cap_bytes is not None:
                max_tokens = min(max_tokens, cap_bytes // bpt)
            pool_bytes = budget_b
            band = tbudget.engine_band_bytes(eb, req.tp, link)
            notes.append("the TensorRT-engine backend sizes the pool from what is free after the engine, its execution "
                         "context, runtime and decoder buffers are allocated (no profiling run); kvplan models them")
        else:
            peak = int(one_sequence_forward_peak(spec, act, tp=req.tp, tokens=max_num_tokens) * fit.activation_ratio)
            if req.site is not None and req.site.activation_scale != 1:
                peak = int(peak * req.site.activation_scale)
            non_torch = fit.non_torch_one_gpu + (fit.nccl_extra if req.tp > 1 else 0)
            if req.site is not None and req.site.non_torch_for(req.tp, req.pp) is not None:  # its layouts only
                non_torch = req.site.non_torch_for(req.tp, req.pp)
            weights += fit.load_extra
            # T5.1: the warm-up pool: the CUDA-graph warm-up or the dummy prompts, at least max_batch_size blocks
            dummy_len = min(max_num_tokens, req.seq - 1)
            n_full, rest = divmod(max_num_tokens, dummy_len) if dummy_len > 0 else (0, 0)
            # _get_token_num_for_estimation: each dummy request also reserves the draft tokens (twice with the overlap
            # scheduler, TensorRT-LLM's default) and the extra KV tokens; attention DP submits them once per rank
            extra = 1 + (2 * launch.max_draft_len + launch.extra_kv_tokens if launch.decoding_type else 0)
            dummy_blocks = n_full * cdiv(dummy_len + extra, tpb) + (cdiv(rest + extra, tpb) if rest else 0)
            if launch.attention_dp:
                dummy_blocks *= req.tp
            graph_blocks = cdiv(req.seq + 1, tpb) + CUDA_GRAPH_MAX_BS - 1
            temp_blocks = max(dummy_blocks, graph_blocks, max_batch_size)
            # memory in use before start counts as non-torch memory (the profile reads device used - torch allocated)
            temp, budget_b, max_tokens = pool_tokens(hw.capacity_bytes, weights=weights, peak=peak,
                                                     non_torch=non_torch + in_use, temp_blocks=temp_blocks,
                                                     bytes_per_token=bpt, estimator_bytes_per_token=bpt3,
                                                     tokens_per_block=tpb, fraction=frac)
            if cap_tokens is not None:
                max_tokens = min(max_tokens, cap_tokens)
            if cap_bytes is not None:
                budget_b = min(budget_b, cap_bytes)
                max_tokens = min(max_tokens, cap_bytes // bpt3)
            pool_bytes = budget_b if vswa else max_tokens * bpt
            band = tbudget.pytorch_band_bytes(frac, req.tp)
            notes.append("TensorRT-LLM profiles the peak at start-up; kvplan models the activations (kvplan's forward "
                         "model x the ratio measured on TensorRT-LLM logs) and the memory outside torch as measured on "
                         "TensorRT-LLM logs (docs/engines/trtllm.md)")
            if bpt3 < bpt:
                why = f"tp {req.tp} > KV heads" if not spec_layers else "the drafter's layers are in the pool alone"
                notes.append(f"{why}: the estimator counts {bpt3:,} B per token, the pool stores "
                             f"{bpt:,} B (T3): the pool is capped by the free memory instead")
    else:
        pool_bytes = max_tokens = None
        source = "none"
        notes.append("no GPU given: the pool needs --gpu/--gpu-mem or --kv-cache-memory")
    if hw is not None and req.kv_cache_memory is None:
        source = "model"

    def blocks_of(pool_b: int, tokens_cap: int) -> tuple[int, dict]:
        """(primary blocks, {window: blocks}) from a pool of pool_b bytes and the max_tokens cap."""
        if vswa:
            if engine_be:  # BlockManager::calculateWindowSizeToShare: bytes x window x layers
                weight = {w: Fraction(per, bpt) * (w or req.seq) * layer_counts.get(w, 1) for w, per in windows.items()}
            else:
                weight = {w: Fraction(1) for w in windows}
            total_w = sum(weight.values())
            per_window = {}
            for w, per in windows.items():
                share_tokens = int(Fraction(max(pool_b, 0)) * weight[w] / total_w / per)
                per_window[w] = cdiv(share_tokens, tpb) if round_up else share_tokens // tpb
            return (per_window[None] if None in per_window else min(per_window.values())), per_window
        return (cdiv(tokens_cap, tpb) if round_up else tokens_cap // tpb), {}

    num_blocks = tokens = conc = est_len = None
    fits = max_batch = max_seq = serves = None
    low = high = marginal = pin_flag = pinned_fits = None
    window_blocks: tuple[tuple[int, int], ...] = ()
    if max_tokens is not None:
        num_blocks, per_window = blocks_of(pool_bytes, max_tokens)

        def shape(nb: int, pw: dict) -> tuple[int, int, bool]:
            """(requests of seq at once, the longest length one request gets, fits) for a pool of nb blocks."""
            if vswa:
                need = {w: cdiv(min(req.seq, w or req.seq), tpb) for w in windows}
                c = min(pw[w] // need[w] for w in windows)
                # the longest length every window's share holds once (T7 shrinks windows from the smallest up)
                bound = min((pw[w] * tpb if w is None else req.seq) for w in windows)
            else:
                c = nb // cdiv(req.seq, tpb)
                bound = nb * tpb
                if engine_be and nb * tpb < req.seq:
                    # clampWindowSizesToFitAtLeastOneSequence (calculateMaxAttentionWindow, beam 1)
                    inp = min(max_input_len, req.seq - 1)
                    out = req.seq - inp
                    bound = min(out + (nb - cdiv(out, tpb)) * tpb, req.seq)
            c = min(c, max_batch_size)
            ok = nb > 0 and bound >= req.seq
            return c, bound, ok and req.batch <= c

        window_blocks = tuple((w or req.seq, n) for w, n in sorted(per_window.items(), key=lambda kv: kv[0] or 0))
        tokens = num_blocks * tpb
        conc, bound, _ = shape(num_blocks, per_window)
        starts = num_blocks > 0
        fits = starts and bound >= req.seq
        if starts and not fits:
            est_len = bound
            short = PYTORCH if not engine_be else rel.engine_short_pool
            if short:
                notes.append(f"TensorRT-LLM starts with max_seq_len reduced to {bound:,} (\"Adjusted max_seq_len\" / "
                             "\"maxSequenceLen is reduced to maxAttentionWindow\", T7/E5)")
            else:
                notes.append(f"the pool holds one request of at most {bound:,} tokens; what TensorRT-LLM {rel.version}'s "
                             "engine runtime does then (lower max_seq_len or fail) was not read")
        if after_pool and hw is not None and weights is not None:
            # the transceiver and the PEFT cache are built after the pool (create_py_executor_instance): they must
            # fit in what is left beside the weights, the profiled peak, the memory outside torch and the pool
            pool_now = num_blocks * tpb * bpt if not vswa else max(pool_bytes, 0)
            left = hw.capacity_bytes - weights - (peak or 0) - (non_torch or 0) - (buffers or 0) - (in_use or 0) - pool_now
            trans_fits = left >= after_pool
            what = " and ".join(w for w, on in (("the cache transceiver's buffers", trans), ("the LoRA device cache", lora_t))
                                if on)
            if trans_fits and search_max_seq:
                if trans is not None:
                    notes.append(f"the cache transceiver ({trans.backend}): {trans.buffers} transfer buffers of "
                                 f"{trans.buffer_bytes:,} B allocated after the pool, in the {left:,} B it leaves")
                if lora_t is not None:
                    notes.append(f"lora_config: a {lora_t.device_bytes:,} B device PEFT cache allocated after the pool, "
                                 f"in the {left:,} B it leaves")
            if not trans_fits:
                fits = False
                notes.append(f"{what} ({after_pool:,} B) do not fit in the {max(left, 0):,} B left beside the pool: lower "
                             "free_gpu_memory_fraction" + (" or max_tokens_in_buffer" if trans else "")
                             + (" or max_loras" if lora_t else ""))
        max_batch = conc if fits else 0
        serves = fits and req.batch <= max_batch
        if fits and not serves:
            notes.append(f"the pool holds {max_batch} requests of {req.seq:,} tokens at once; the other "
                         f"{req.batch - max_batch} wait (GUARANTEED_NO_EVICT admits a request only with blocks for all of it)")
        if search_max_seq:
            # the longest max_seq_len at which `fits` holds for `batch`, each length judged with the pool built at
            # it: the warm-up pool and the per-window split (VSWA only once max_seq_len passes a window) change
            # with it; fewer blocks and fewer requests as it grows, so the test is monotone
            def fits_at(m: int) -> bool:
                return bool(estimate(dataclasses.replace(req, seq=m), search_max_seq=False).fits)

            max_seq = max(longest(fits_at, 1, spec.max_context or MAX_TOKENS), 0)
        if not starts:
            notes.append("no memory is left for the KV cache after the weights and the profiled peak")
        if source == "--kv-cache-memory":
            low = high = pool_bytes
        elif source == "model":
            low, high = pool_bytes - band, pool_bytes + band

            def edge(pool_b: int) -> tuple[int, dict]:
                cap = max(pool_b, 0) // (bpt if engine_be else bpt3)
                if cap_tokens is not None:
                    cap = min(cap, cap_tokens)
                return blocks_of(pool_b, cap)

            lo_nb, lo_pw = edge(low)
            hi_nb, hi_pw = edge(high)
            marginal = shape(lo_nb, lo_pw)[2] != shape(hi_nb, hi_pw)[2]
            if lo_nb > 0:
                pin_flag = f"kv_cache_config: {{max_tokens: {lo_nb * tpb}}}"
                pinned_fits = shape(lo_nb, lo_pw)[2]
    per_gpu = None
    if hw is not None and weights is not None:
        pool = (tokens or 0) * bpt if not vswa else max(pool_bytes, 0)
        other = (peak or 0) + (non_torch or 0) + (buffers or 0) + (in_use or 0)
        per_gpu = PerGpu(capacity_bytes=hw.capacity_bytes, usable_bytes=hw.capacity_bytes, weights_bytes=weights,
                         cache_bytes=pool, reserved_bytes=other, free_bytes=hw.capacity_bytes - weights - other - pool)
    all_windows = [t2(layers) for layers in pool_stages]
    # one request's KV over the GPUs holding it: every TP rank (its heads, or the whole MLA latent), one rank with
    # attention DP
    kv_one = kv_tp * sum(per * cdiv(min(req.seq, w or req.seq), tpb) * tpb for st in all_windows for w, per in st.items())
    feats = None
    if launch.any:
        sp = None
        if launch.decoding_type:
            sp = tfeatures.SpeculativeTerms(
                decoding_type=launch.decoding_type, kv_layers=launch.spec_layers, max_draft_len=launch.max_draft_len,
                extra_kv_tokens=launch.extra_kv_tokens,
                draft=launch.eagle_head.name if launch.eagle_head is not None else f"{spec.name}'s MTP modules",
                weights_per_gpu_bytes=tfeatures.drafter_weights(spec, launch, tp=req.tp, bits=_linear_bits(spec, req, act),
                                                                act_bits=act.bits)[0],
                formula=draft_how or tfeatures.drafter_weights(spec, launch, tp=req.tp, bits=_linear_bits(spec, req, act),
                                                               act_bits=act.bits)[1])
            notes.append(f"speculative decoding ({launch.decoding_type}): {launch.spec_layers} more layer(s) in the KV cache "
                         "manager (get_pp_layers), in the pool's bytes per token but not the estimator's")
        pools = req.tp if launch.attention_dp else 1
        if launch.attention_dp:
            notes.append(f"attention DP: each of the {req.tp} ranks has its own pool and its own requests; the "
                         "deployment holds that many times one pool's")
        feats = tfeatures.TrtllmFeatures(
            options=launch.options(), attention_dp=launch.attention_dp, kv_head_split=kv_tp, pools=pools, speculative=sp,
            transceiver=trans, lora=lora_t, weights_added_per_gpu_bytes=weights_added, after_pool_bytes=after_pool,
            after_pool_fits=trans_fits,
            deployment_concurrency=conc * pools if conc is not None else None,
            notes=tuple(n for n in notes if n.startswith(("attention DP", "speculative", "the cache transceiver",
                                                          "lora_config", "the LoRA"))))
    return TrtllmEstimate(
        **common, kv_bytes=kv_one * req.batch, state_bytes=0, cache_bytes=kv_one * req.batch,
        weights_bytes=weights_total, per_gpu=per_gpu, max_batch=max_batch, max_seq=max_seq, notes=tuple(notes),
        **verdict_terms(fits, serves), trtllm_version=rel.version, backend=be, tokens_per_block=tpb,
        bytes_per_token=bpt, estimator_bytes_per_token=bpt3,
        free_gpu_memory_fraction=None if source == "none" else str(float(frac)), max_batch_size=max_batch_size,
        max_num_tokens=max_num_tokens, weights_per_gpu_bytes=weights, activation_peak_bytes=peak,
        non_torch_bytes=non_torch, engine_buffers_bytes=buffers, in_use_bytes=in_use, temporary_pool_bytes=temp,
        kv_budget_bytes=budget_b, available_kv_bytes=pool_bytes, available_kv_bytes_low=low,
        available_kv_bytes_high=high, marginal=marginal, max_tokens=max_tokens, num_blocks=num_blocks,
        kv_cache_tokens=tokens, window_blocks=window_blocks, max_concurrency=conc, estimated_max_model_len=est_len,
        budget_source=source, suggestions=(), pin_flag=pin_flag, pinned_fits=pinned_fits, features=feats,
    )


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
