"""TensorRT-LLM (PyTorch backend, `trtllm-serve` / LLM API): the paged KV pool it will build. Pure.

Mirrors TensorRT-LLM 1.x, PyTorch backend, KVCacheManager V1, as read in docs/engines/trtllm.md (rules
T1-T11 with their source files):

- bytes per token (T2): 2 x sum over this rank's attention layers of ceil(KV heads / tp) x head_dim x dtype
  bytes (ceil: with tp > KV heads every rank holds one head); MLA: one latent per layer, not split by TP;
- the estimator's bytes per token (T3): kv_factor x layers x (head_dim x KV heads // tp) x dtype bytes —
  smaller than T2 when tp > KV heads, so the estimate asks for more tokens than fit and T6's cap decides;
- budget (T5): after the weights, a temporary KV pool for the warm-up, a profiling run, then
  kv_budget = (total - peak + temporary pool) x free_gpu_memory_fraction (0.9): the fraction applies to what
  is left after weights, activations and non-torch memory;
- pool (T6): min(kv_budget // T3, fraction x free now // T2) tokens, in blocks of tokens_per_block (32);
- a request of L tokens holds ceil(L / 32) blocks under GUARANTEED_NO_EVICT (T9), at most max_batch_size
  (2048) requests; when the pool is shorter than max_seq_len, TRT-LLM lowers max_seq_len to it and starts
  (T7): `estimated_max_model_len` reports that bound;
- layers mixing sliding and full attention (Gemma-3, gpt-oss) get one pool share per distinct window (T10).

`starts`: the pool holds one request of `seq` (max_seq_len); `max_batch`: requests of `seq` held at once;
`fits` = `starts` and `batch` <= `max_batch`.

TensorRT-LLM measures the peak at start-up; kvplan models the activation peak like vLLM's forward and takes
the non-torch memory (CUDA context, cuBLAS workspace, CUDA graphs; NCCL at TP >= 2) as an assumed constant:
no TensorRT-LLM log was available to calibrate against, and the notes say so. Mamba hybrids use a separate
state manager that kvplan does not model, and Llama 4's chunked-local layers are not modelled either (exit 3).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

from kvplan.core.dtypes import DType
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.spec import CHUNKED, FULL, MLA, SLIDING, STATE
from kvplan.core.units import MAX_TOKENS
from kvplan.engines.paged import cap_given_pool, cdiv, kv_dtype, longest, model_dtype
from kvplan.engines.request import EngineRequest
from kvplan.engines.result import EngineEstimate, NoKvMemory, PerGpu, PoolTooShort, PoolView, request_terms, verdict_terms
from kvplan.engines.static import model_weights
from kvplan.engines.trtllm import releases
from kvplan.engines.vllm import budget as vbudget

ENGINE_VERSION = "TensorRT-LLM 1.x PyTorch backend, KVCacheManager (V1)"
GIB = 2**30
MIB = 2**20
TOKENS_PER_BLOCK = 32  # KvCacheConfig.tokens_per_block
FREE_FRACTION = Fraction(9, 10)  # KvCacheConfig.free_gpu_memory_fraction
MAX_BATCH_SIZE = 2048  # BaseLlmArgs.max_batch_size
MAX_NUM_TOKENS = 8192  # BaseLlmArgs.max_num_tokens
CUDA_GRAPH_MAX_BS = 128  # CudaGraphConfig().max_batch_size
# kv_cache_config.dtype: "auto" (model dtype, or fp8 for checkpoints with an FP8 KV cache), "fp8"; nvfp4 not modelled
KV_DTYPES = {"auto": "", "fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "bf16": "bf16", "bfloat16": "bf16",
             "fp16": "fp16", "float16": "fp16"}
# Assumed, not calibrated (docs/engines/trtllm.md worked example): CUDA context, cuBLAS workspace and CUDA graphs
# of a one-GPU run; at TP >= 2 the NCCL buffers vLLM measured on H100 (vllm budget.py).
NON_TORCH_ONE_GPU = GIB
NCCL_EXTRA = vbudget.NON_TORCH_TP2 - vbudget.NON_TORCH_ONE_GPU


@dataclass(frozen=True)
class TrtllmEstimate(EngineEstimate):
    """available_kv_bytes: the pool's bytes."""

    tokens_per_block: int
    bytes_per_token: int  # T2, one GPU
    estimator_bytes_per_token: int  # T3, one GPU
    free_gpu_memory_fraction: str | None
    weights_per_gpu_bytes: int | None
    activation_peak_bytes: int | None
    non_torch_bytes: int | None
    temporary_pool_bytes: int | None
    kv_budget_bytes: int | None  # "available KV cache memory when calculating max tokens"
    max_tokens: int | None
    num_blocks: int | None  # primary blocks
    kv_cache_tokens: int | None  # blocks x tokens_per_block
    window_blocks: tuple[tuple[int, int], ...]  # VSWA: (window, blocks) per distinct window
    max_concurrency: int | None  # requests of seq tokens: blocks // ceil(seq / 32), capped at max_batch_size

    def pool_view(self) -> PoolView | None:
        if self.available_kv_bytes is None:
            return None
        problem = None
        if not self.fits:
            if self.available_kv_bytes <= 0:
                problem = NoKvMemory()
            elif self.estimated_max_model_len:
                problem = PoolTooShort(self.available_kv_bytes, self.estimated_max_model_len)
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


def pool_tokens(total: int, *, weights: int, peak: int, non_torch: int, temp_blocks: int, bytes_per_token: int,
                estimator_bytes_per_token: int, tokens_per_block: int, fraction: Fraction) -> tuple[int, int, int]:
    """(temporary pool bytes, kv_budget, max_tokens) of T5-T6, in TensorRT-LLM's float arithmetic.

    The warm-up pool is capped at fraction x free-after-load / bytes per token; kv_budget =
    int((total - peak_total + temporary pool) x fraction) with peak_total = weights + activations + non-torch +
    the temporary pool; the estimate kv_budget // T3 bytes is capped by fraction x (memory free when the manager
    is built: total - weights - non-torch) // T2 bytes."""
    f = float(fraction)
    free_after_load = total - weights - non_torch
    temp_blocks = min(temp_blocks, int(f * free_after_load / bytes_per_token) // tokens_per_block)
    temp = max(temp_blocks, 0) * tokens_per_block * bytes_per_token
    peak_total = weights + peak + non_torch + temp
    budget_b = int((total - peak_total + temp) * f)
    est_tokens = budget_b // estimator_bytes_per_token if budget_b > 0 else 0
    cap = int(f * free_after_load / bytes_per_token)
    return temp, budget_b, max(min(est_tokens, cap), 0)


def estimate(req: EngineRequest, *, search_max_seq: bool = True, pool_capped: bool = False) -> TrtllmEstimate:
    """The pool TensorRT-LLM builds for this deployment (max_seq left None when search_max_seq is False: the
    search for it re-runs the estimate that way)."""
    if not pool_capped and req.kv_cache_memory is not None and req.hardware is not None:
        # issue 15: max_gpu_total_bytes beside free_gpu_memory_fraction: the smaller wins
        return cap_given_pool(estimate, req, search_max_seq=search_max_seq, engine="TensorRT-LLM",
                              rule="with free_gpu_memory_fraction the smaller of the two wins (KvCacheConfig."
                                   "max_gpu_total_bytes; maintainer comment on NVIDIA/TensorRT-LLM#2773)")
    releases.release(req.engine_version)
    spec = req.spec
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
    tpb = req.block_size or TOKENS_PER_BLOCK
    b = kv.bits // 8 or 1
    notes: list[str] = []
    if req.hardware is not None and req.reserve_bytes is not None:
        notes.append("--reserve applies to the static engine; TensorRT-LLM's budget is its own")
    # --max-num-seqs / --max-num-batched-tokens stand for max_batch_size / max_num_tokens
    max_batch_size = req.max_num_seqs or MAX_BATCH_SIZE
    max_num_tokens = req.max_num_batched_tokens or MAX_NUM_TOKENS
    counts = _pp_counts(spec.layers, req.pp)
    stages, start = [], 0
    for n in counts:
        stages.append(spec.layer_specs[start:start + n])
        start += n

    def t2(layers) -> dict[int | None, int]:
        """Bytes per token of one GPU, per attention window (None = full attention)."""
        out: dict[int | None, int] = {}
        for layer in layers:
            if layer.kind in (FULL, SLIDING):
                per = cdiv(layer.kv_heads, req.tp) * (layer.head_dim + layer.v_head_dim) * b
            elif layer.kind == MLA:
                per = layer.mla.latent_dim * b
            else:
                continue
            w = layer.window if layer.kind == SLIDING and layer.window < req.seq else None
            out[w] = out.get(w, 0) + per
        return out

    def t3(layers) -> int:
        total = 0
        for layer in layers:
            if layer.kind in (FULL, SLIDING):
                total += 2 * (layer.head_dim * layer.kv_heads // req.tp) * b
            elif layer.kind == MLA:
                total += layer.mla.latent_dim * b
        return total

    per_stage = [t2(layers) for layers in stages]
    heavy = max(range(req.pp), key=lambda s: sum(per_stage[s].values()))
    windows = per_stage[heavy]
    bpt = sum(windows.values())
    bpt3 = t3(stages[heavy])
    if bpt == 0:
        raise UnsupportedError("the model has no attention layer", where=spec.source or spec.name)
    vswa = len(windows) > 1
    if vswa:
        notes.append("sliding and full layers: TensorRT-LLM gives each window an equal share of the pool (VSWA, T10); "
                     "whether a model fills its windows in automatically depends on its model code")
    hw = req.hardware
    common = request_terms(req, kv, engine="trtllm", engine_version=ENGINE_VERSION)
    weights_total, _ = model_weights(spec, req.weight_fmt)
    frac = req.gpu_util if req.gpu_util is not None else FREE_FRACTION
    weights = peak = non_torch = temp = budget_b = None
    if req.kv_cache_memory is not None:
        pool_bytes = req.kv_cache_memory
        max_tokens = pool_bytes // bpt
        source = "--kv-cache-memory"
        notes.append("--kv-cache-memory is taken as kv_cache_config.max_gpu_total_bytes: the estimate is skipped")
    elif hw is not None:
        weights = max(vbudget.stage_weight_bytes(spec, req.weight_fmt, act, req.tp, req.pp))
        peak = vbudget.activation_peak_bytes(spec, act, stage=0, pp=1, tp=req.tp, max_num_batched_tokens=max_num_tokens,
                                             max_num_seqs=1) - vbudget.PROFILE_BASE_BYTES
        non_torch = NON_TORCH_ONE_GPU + (NCCL_EXTRA if req.tp > 1 else 0)
        # T5.1: the warm-up pool: the CUDA-graph warm-up or the dummy prompts, at least max_batch_size blocks
        dummy_len = min(max_num_tokens, req.seq - 1)
        n_full, rest = divmod(max_num_tokens, dummy_len) if dummy_len > 0 else (0, 0)
        dummy_blocks = n_full * cdiv(dummy_len + 1, tpb) + (cdiv(rest + 1, tpb) if rest else 0)
        graph_blocks = cdiv(req.seq + 1, tpb) + CUDA_GRAPH_MAX_BS - 1
        temp_blocks = max(dummy_blocks, graph_blocks, max_batch_size)
        temp, budget_b, max_tokens = pool_tokens(hw.capacity_bytes, weights=weights, peak=peak, non_torch=non_torch,
                                                 temp_blocks=temp_blocks, bytes_per_token=bpt,
                                                 estimator_bytes_per_token=bpt3, tokens_per_block=tpb, fraction=frac)
        pool_bytes = budget_b if vswa else max_tokens * bpt
        source = "model"
        notes.append("TensorRT-LLM profiles the peak at start-up; kvplan models the activations like vLLM's forward and "
                     "assumes 1 GiB of non-torch memory (+ NCCL at TP >= 2): not calibrated against a TensorRT-LLM log")
        if bpt3 < bpt:
            notes.append(f"tp {req.tp} > KV heads: the estimator counts {bpt3:,} B per token, the pool stores {bpt:,} B "
                         "(T3): the pool is capped by the free memory instead")
    else:
        pool_bytes = max_tokens = None
        source = "none"
        notes.append("no GPU given: the pool needs --gpu/--gpu-mem or --kv-cache-memory")

    num_blocks = tokens = conc = est_len = None
    fits = max_batch = max_seq = serves = None
    window_blocks: tuple[tuple[int, int], ...] = ()
    if max_tokens is not None:
        if vswa:
            share = Fraction(max(pool_bytes, 0), len(windows))
            per_window = {w: int(share / per) // tpb for w, per in windows.items()}
            window_blocks = tuple((w or req.seq, n) for w, n in sorted(per_window.items(), key=lambda kv: kv[0] or 0))
            need = {w: cdiv(min(req.seq, w or req.seq), tpb) for w in windows}
            num_blocks = per_window[None] if None in per_window else min(per_window.values())
            conc = min(per_window[w] // need[w] for w in windows)
            # the longest length every window's share holds once (T7 shrinks windows from the smallest up)
            bound = min((per_window[w] * tpb if w is None else req.seq) for w in windows)
        else:
            num_blocks = max_tokens // tpb
            conc = num_blocks // cdiv(req.seq, tpb)
            bound = num_blocks * tpb
        tokens = num_blocks * tpb
        conc = min(conc, max_batch_size)
        starts = num_blocks > 0
        fits = starts and bound >= req.seq
        if starts and not fits:
            est_len = bound
            notes.append(f"TensorRT-LLM starts but lowers max_seq_len to {bound:,} (\"Adjusted max_seq_len\", T7)")
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
    per_gpu = None
    if hw is not None and weights is not None:
        pool = (tokens or 0) * bpt if not vswa else max(pool_bytes, 0)
        per_gpu = PerGpu(capacity_bytes=hw.capacity_bytes, usable_bytes=hw.capacity_bytes, weights_bytes=weights,
                         cache_bytes=pool, reserved_bytes=peak + non_torch,
                         free_bytes=hw.capacity_bytes - weights - peak - non_torch - pool)
    all_windows = [t2(layers) for layers in stages]
    kv_one = req.tp * sum(per * cdiv(min(req.seq, w or req.seq), tpb) * tpb for st in all_windows for w, per in st.items())
    result = TrtllmEstimate(
        **common, kv_bytes=kv_one * req.batch, state_bytes=0, cache_bytes=kv_one * req.batch,
        weights_bytes=weights_total, per_gpu=per_gpu, max_batch=max_batch, max_seq=max_seq, notes=tuple(notes),
        **verdict_terms(fits, serves), tokens_per_block=tpb, bytes_per_token=bpt, estimator_bytes_per_token=bpt3,
        free_gpu_memory_fraction=None if source == "none" else str(float(frac)), weights_per_gpu_bytes=weights,
        activation_peak_bytes=peak, non_torch_bytes=non_torch, temporary_pool_bytes=temp, kv_budget_bytes=budget_b,
        available_kv_bytes=pool_bytes, available_kv_bytes_low=pool_bytes if source == "--kv-cache-memory" else None,
        available_kv_bytes_high=pool_bytes if source == "--kv-cache-memory" else None, marginal=None, max_tokens=max_tokens, num_blocks=num_blocks, kv_cache_tokens=tokens,
        window_blocks=window_blocks, max_concurrency=conc, estimated_max_model_len=est_len, budget_source=source,
        suggestions=(),
    )
    return result


def read_kv_dtype(req: EngineRequest) -> DType:
    """The request's kv_cache_config.dtype as TensorRT-LLM reads it."""
    return kv_dtype(req, KV_DTYPES, engine="TensorRT-LLM", flag="kv_cache_config.dtype")
