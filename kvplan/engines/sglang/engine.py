"""SGLang: how big the token pool of `python -m sglang.launch_server` will be. Pure.

Mirrors SGLang 0.5.23 as read in docs/engines/sglang.md (rules S1-S13, each with its source file):

- cell size (S2): bytes one token takes over this rank's layers: KV heads per rank x (head_dim + v_head_dim)
  x dtype bytes per attention layer (heads replicated when tp > KV heads); MLA: the latent, not split by TP;
- budget (S4-S6): everything free before the weights load (P) times mem_fraction_static is the static area
  for weights + KV; the pool gets rest = A - P x (1 - mem_fraction_static), A being the memory free after
  loading. mem_fraction_static defaults to a reserve formula on the GPU size (nvidia-smi MiB), the chunked
  prefill size and the CUDA-graph batch sizes;
- tokens (S7, S8): max_total_num_tokens = rest // cell size, rounded down to the page size (1 on Hopper);
- sliding windows (S12): a separate SWA pool only for whitelisted architectures (gpt-oss, Llama 4, Gemma 4,
  ...); Gemma-2/3, Mistral and Phi-3 are sized as full attention; Llama 4's chunked-local layers are its SWA
  layers, the window being attention_chunk_size;
- Mamba / linear-attention hybrids (S13): a state pool of max_mamba_cache_size requests takes m / (1 + m) of
  the rest (m = 0.9), the SSM state in float32 by default; the cell counts attention layers only.

SGLang measures P and A at start-up; kvplan models them as total minus the CUDA context (and NCCL at
TP >= 2) and P minus the weights: those two inputs are measured, not derived, and the notes say so.
`starts`: SGLang starts and its pool holds one request of `seq` tokens (it starts with a smaller pool too,
capping requests at max_total_num_tokens - 1, which `estimated_max_model_len` reports); `max_batch`: requests
of `seq` the pool holds at once (tokens // seq rounded up to whole pages), capped at max_running_requests;
`fits` = `starts` and `batch` <= `max_batch`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

from kvplan.core.cache import layer_state_bytes, layer_token_bytes
from kvplan.core.dtypes import DType
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.spec import CHUNKED, FULL, HEADED_KINDS, MLA, SLIDING, STATE, WINDOWED_KINDS, StateSpec
from kvplan.core.units import MAX_TOKENS
from kvplan.engines.paged import cap_given_pool, kv_dtype, longest, model_dtype
from kvplan.engines.request import EngineRequest
from kvplan.engines.result import (EngineEstimate, NoKvMemory, PerGpu, PoolTooShort, PoolView, Refused, request_terms,
                                   verdict_terms)
from kvplan.engines.sglang import releases
from kvplan.engines.static import model_weights
from kvplan.engines.vllm import budget as vbudget

ENGINE_VERSION = "SGLang 0.5.23"
GIB = 2**30
MIB = 2**20

# --kv-cache-dtype choices (srt/server_args.py) that kvplan models; fp4_e2m1 / mxfp8 are not
KV_DTYPES = {"auto": "", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2", "bf16": "bf16", "bfloat16": "bf16",
             "fp16": "fp16", "float16": "fp16"}
# configs/model_config.py is_hybrid_swa_model: architectures with a separate sliding-window pool
HYBRID_SWA_ARCHITECTURES = {"GptOssForCausalLM", "Llama4ForConditionalGeneration", "Gemma4ForCausalLM",
                            "Gemma4ForConditionalGeneration", "MiMoV2FlashForCausalLM", "MellumForCausalLM"}
LLAMA4 = "Llama4ForConditionalGeneration"
SWA_FULL_TOKENS_RATIO = Fraction(4, 5)  # --swa-full-tokens-ratio default 0.8
MAMBA_FULL_MEMORY_RATIO = Fraction(9, 10)  # --mamba-full-memory-ratio default 0.9
MAMBA_SLOTS_PER_REQUEST = 3  # radix cache on, no extra buffer: r_m = 3
# Architectures SGLang 0.5.23 has no model for (S13: Jamba)
UNSERVED = {"JambaForCausalLM": "Jamba has no SGLang model in 0.5.23"}
# Measured inputs (docs/engines/sglang.md worked example, one public SGLang log of Llama-3.1-8B on an H100):
# "Load weight begin. avail mem=78.81 GB" on a 79.19 GiB GPU: 0.38 GiB CUDA context; the load took 0.13 GiB
# beyond the weights. At TP >= 2 NCCL adds ~1 GiB (vLLM's measurement, vllm budget.py): an assumption.
CUDA_CONTEXT = 389 * MIB
CUDA_CONTEXT_MULTI = 1420 * MIB
LOAD_OVERHEAD = 133 * MIB


@dataclass(frozen=True)
class SglangEstimate(EngineEstimate):
    """available_kv_bytes: the rest after the Mamba pool; budget_source "model": P and A modelled."""

    page_size: int
    cell_size: int  # bytes per token on the most loaded rank (S2)
    mem_fraction_static: str | None
    gpu_mem_mib: int | None  # what SGLang reads from nvidia-smi
    chunked_prefill_size: int | None
    reserved_mib: float | None  # S5
    free_before_load_bytes: int | None  # P (measured by SGLang; modelled)
    free_after_load_bytes: int | None  # A
    weights_per_gpu_bytes: int | None
    mamba_state_per_request_bytes: int
    max_mamba_cache_size: int | None
    max_total_num_tokens: int | None
    swa_tokens: int | None  # the sliding-window pool (hybrid SWA architectures)
    max_running_requests: int | None

    def pool_view(self) -> PoolView | None:
        if self.available_kv_bytes is None:
            return None
        problem = None
        if not self.fits:
            if self.max_total_num_tokens == 0:
                problem = Refused(NO_ROOM)
            elif self.available_kv_bytes <= 0:
                problem = NoKvMemory()
            elif self.estimated_max_model_len:
                problem = PoolTooShort(self.available_kv_bytes, self.estimated_max_model_len)
        pool = self.per_gpu.cache_bytes if self.per_gpu else None
        per_request = None
        slots, page = self.max_total_num_tokens, self.page_size
        if pool is not None:
            if slots and not self.swa_tokens and not self.mamba_state_per_request_bytes and pool % slots == 0:
                # whole pages of token slots, one slot being pool / max_total_num_tokens bytes
                per_request = -(-self.seq // page) * page * (pool // slots)
            elif self.max_batch:
                per_request = -(-pool // self.max_batch)  # sliding-window or state pools beside it: an even share
        return PoolView(problem=problem, available_kv_bytes=self.available_kv_bytes, num_gpu_blocks=None,
                        kv_cache_tokens=None, concurrency=None, held_at_once=None, running_limit=None, pool_bytes=pool,
                        per_request_bytes=per_request, estimated_max_model_len=self.estimated_max_model_len)


NO_ROOM = ("the weights leave no memory for the KV cache (\"Loaded weights leave no GPU memory for the KV cache\"): "
           "SGLang refuses to start")


def _pp_counts(layers: int, pp: int) -> list[int]:
    """SGLang's split (S9): layers // pp each, the last layers % pp stages one more (vLLM favours the first)."""
    if pp > layers:
        raise InputError(f"pipeline parallel size {pp} exceeds the model's {layers} layers", where="--pp")
    counts = [layers // pp] * pp
    for i in range(layers % pp):
        counts[-1 - i] += 1
    return counts


def _gpu_mib(hw) -> tuple[int, list[str]]:
    """nvidia-smi's memory.total of the GPU (the catalog's reading), which SGLang's defaults read (S4)."""
    from kvplan.model.catalog import find_gpu

    smi = find_gpu(hw.name).nvidia_smi_total_mib if hw.name else None
    if smi is not None:
        return smi, []
    return hw.capacity_bytes // MIB, ["SGLang reads the GPU size from nvidia-smi; kvplan used the runtime capacity "
                                      "in MiB (nvidia-smi shows a little more)"]


def _capture_sizes(limit: int) -> int:
    sizes = [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 497, 16)) + list(range(512, limit + 1, 32))
    sizes = [s for s in sizes if s <= limit]
    if limit not in sizes:
        sizes.append(limit)
    return len(sizes)


def _prefill_sizes(limit: int) -> int:
    """How many prefill CUDA-graph sizes SGLang captures up to `limit` tokens: counted, not listed, so an
    absurd limit costs nothing."""
    ranges = (range(4, 33, 4), range(48, 257, 16), range(288, 513, 32), range(576, 1025, 64), range(1280, 4097, 256),
              range(4608, limit + 1, 512))
    return sum(len(range(r.start, min(r.stop, limit + 1), r.step)) for r in ranges)


def default_mem_fraction(gpu_mib: int, tp: int, pp: int, mla: bool, *, chunked_prefill_size: int | None = None,
                         max_running_requests: int | None = None) -> tuple[Fraction, int, float]:
    """(mem_fraction_static, chunked_prefill_size, reserved MiB): arg_groups/memory_hook.py
    handle_gpu_memory_settings for a text-only model on CUDA (S4); the two flags replace the GPU-size defaults
    (--max-running-requests lowers the decode CUDA-graph batch size when smaller)."""
    bins = [(20480, 2048, 8, 8), (35840, 4096, 48, 160), (61440, 4096, 32, 160), (92160, 8192, 256, 512),
            (163840, 8192, 256, 512)]
    chunk, bs_small, bs_big = 16384, 512, 512
    for limit, c, b1, b2 in bins:
        if gpu_mib < limit:
            chunk, bs_small, bs_big = c, b1, b2
            break
    max_bs = bs_big if tp >= 4 else bs_small
    if chunked_prefill_size is not None:
        chunk = chunked_prefill_size
    if max_running_requests is not None:
        max_bs = min(max_bs, max_running_requests)
    graph = 2 * max_bs
    if mla:
        graph += 1536
    elif pp == 1:  # prefill ("breakable") graphs are off under pipeline parallelism
        graph += 8 * _prefill_sizes(chunk)
    reserved = 512 + 1.5 * max(chunk, 2048) + tp * pp / 8 * 1024 + graph
    if gpu_mib > 61440:
        reserved = max(reserved, 10240)
    frac = round((gpu_mib - reserved) / gpu_mib, 3)
    return Fraction(str(frac)), chunk, reserved


def _state_fp32(state: StateSpec) -> StateSpec:
    """SGLang keeps the SSM (recurrent) state in float32 by default (configs/mamba_utils.py; S13)."""
    return dataclasses.replace(state, recurrent_dtype="fp32")


def estimate(req: EngineRequest, *, search_max_seq: bool = True, pool_capped: bool = False) -> SglangEstimate:
    """The token pool SGLang builds for this deployment (the longest context is a closed-form search here)."""
    if not pool_capped and req.kv_cache_memory is not None and req.hardware is not None:
        # issue 15: a pool larger than the GPU leaves is SGLang's profiled one
        return cap_given_pool(estimate, req, search_max_seq=search_max_seq, engine="SGLang",
                              rule="SGLang uses its profiled value instead (\"max_total_tokens=... is larger than the "
                                   "profiled value ... Use the profiled value instead\", model_runner init_memory_pool)")
    releases.release(req.engine_version)
    spec = req.spec
    if spec.architecture in UNSERVED:
        raise UnsupportedError(UNSERVED[spec.architecture], where="--engine sglang",
                               hint="try --engine vllm, which serves it")
    if req.batch < 1:
        raise InputError(f"must be at least 1, got {req.batch}", where="--batch")
    kv = read_kv_dtype(req)
    act = model_dtype(req)
    page = req.block_size or 1
    notes: list[str] = []
    if req.hardware is not None and req.reserve_bytes is not None:
        notes.append("--reserve applies to the static engine; SGLang's budget is its own (mem_fraction_static)")
    attn_kinds = {layer.kind for layer in spec.layer_specs}
    has_state = STATE in attn_kinds
    if has_state and not attn_kinds & {*HEADED_KINDS, MLA}:
        raise UnsupportedError("pure Mamba models on SGLang are not modelled", where="--engine sglang",
                               hint="try --engine vllm")
    windowed = attn_kinds & set(WINDOWED_KINDS)
    if len(windowed) > 1:
        raise UnsupportedError("sliding and chunked-local layers in one model: SGLang's SWA pool has one window "
                               "(sliding_window, else attention_chunk_size); not modelled", where="--engine sglang",
                               hint="try --engine vllm")
    swa = spec.architecture in HYBRID_SWA_ARCHITECTURES and bool(windowed)
    # SGLang's one SWA window (model_runner_components/load_model_utils.py resolve_sliding_window_size): the
    # config's sliding_window, else attention_chunk_size, so Llama 4's chunked-local layers live in the SWA pool
    swa_window = spec.attention_chunk_size if CHUNKED in windowed else spec.sliding_window
    if CHUNKED in windowed and swa:
        # configs/model_config.py get_hybrid_layer_ids: Llama 4's SWA layers are (i + 1) % 4 != 0, whatever the spec
        if spec.architecture != LLAMA4:
            raise UnsupportedError(f"chunked-local layers in {spec.architecture}: SGLang puts only Llama 4's into its SWA "
                                   "pool; not modelled", where="--engine sglang", hint="try --engine vllm")
        ours = {i for i, layer in enumerate(spec.layer_specs) if layer.kind == CHUNKED}
        if ours != {i for i in range(spec.layers) if (i + 1) % 4}:
            raise UnsupportedError("SGLang puts layers with (i + 1) % 4 != 0 of Llama 4 into its SWA pool, and this "
                                   "spec's chunked layers are others; not modelled", where="--engine sglang",
                                   hint="try --engine vllm")
    if windowed and not swa:
        what = "sliding" if SLIDING in windowed else "chunked-local"
        notes.append(f"SGLang has no sliding-window pool for {spec.architecture or 'this architecture'}: {what} layers "
                     "are sized as full attention (S12)")
    counts = _pp_counts(spec.layers, req.pp)
    stages, start = [], 0
    for n in counts:
        stages.append(spec.layer_specs[start:start + n])
        start += n

    def cells(layers) -> tuple[int, int, int]:
        full = sum(layer_token_bytes(layer, kv, req.tp) for layer in layers
                   if layer.kind in (FULL, MLA) or (layer.kind in WINDOWED_KINDS and not swa))
        slide = sum(layer_token_bytes(layer, kv, req.tp) for layer in layers if layer.kind in WINDOWED_KINDS and swa)
        state = sum(layer_state_bytes(dataclasses.replace(layer, state=_state_fp32(layer.state)), req.tp)
                    for layer in layers if layer.kind == STATE)
        return full, slide, state

    per_stage = [cells(layers) for layers in stages]
    mla = MLA in attn_kinds
    hw = req.hardware
    common = request_terms(req, kv, engine="sglang", engine_version=ENGINE_VERSION)
    weights_total, _ = model_weights(spec, req.weight_fmt)
    mfs = gpu_mib = chunk = reserved = None
    P = A = w_gpu = None
    rests: list[int] | None = None
    if req.kv_cache_memory is not None:
        rests = [req.kv_cache_memory] * req.pp
        source = "--kv-cache-memory"
        notes.append("SGLang has no cache-size flag: --kv-cache-memory is taken as the rest it would compute "
                     "(cap it in SGLang with --max-total-tokens)")
    elif hw is not None:
        gpu_mib, gnotes = _gpu_mib(hw)
        notes += gnotes
        # --max-num-batched-tokens / --max-num-seqs stand for SGLang's --chunked-prefill-size / --max-running-requests
        mfs, chunk, reserved = default_mem_fraction(gpu_mib, req.tp, req.pp, mla,
                                                    chunked_prefill_size=req.max_num_batched_tokens,
                                                    max_running_requests=req.max_num_seqs)
        if req.gpu_util is not None:
            mfs = req.gpu_util
        if spec.vision_params:
            notes.append("vision-language models: SGLang lowers mem_fraction_static further (adjust_mem_fraction_for_vlm); "
                         "not modelled")
        weights = vbudget.stage_weight_bytes(spec, req.weight_fmt, act, req.tp, req.pp)
        context = CUDA_CONTEXT if req.tp * req.pp == 1 else CUDA_CONTEXT_MULTI
        P = hw.capacity_bytes - context
        w_gpu = max(weights)
        A = P - w_gpu - LOAD_OVERHEAD  # min over ranks: the heaviest stage
        # SGLang computes in GiB floats: rest = A - P x (1 - mfs), then int(rest x 2**30)
        rest_gib = A / GIB - P / GIB * (1 - float(mfs))
        rests = [int(rest_gib * GIB)] * req.pp
        source = "model"
        notes.append("SGLang measures the free memory before (P) and after (A) loading; kvplan models P as total minus "
                     "the CUDA context and A as P minus the weights (docs/engines/sglang.md S5)")
    else:
        source = "none"
        notes.append("no GPU given: the token pool needs --gpu/--gpu-mem or --kv-cache-memory")

    mamba_per_req = max(s for _, _, s in per_stage)
    tokens = swa_tokens = max_mamba = running = est_len = None
    fits = max_batch = max_seq = serves = None
    available = None
    if rests is not None:
        rest = min(rests)
        if has_state:
            budget_b = rest * MAMBA_FULL_MEMORY_RATIO / (1 + MAMBA_FULL_MEMORY_RATIO)
            max_mamba = max(int((budget_b - mamba_per_req) // mamba_per_req), 0) if mamba_per_req else 0
            rest -= (max_mamba + 1) * mamba_per_req
        available = rest
        full_cell = max(f for f, _, _ in per_stage)
        swa_cell = max(s for _, s, _ in per_stage)
        if rest <= 0 or full_cell == 0:
            tokens = 0
            notes.append(NO_ROOM)
        elif swa:
            cell = full_cell + SWA_FULL_TOKENS_RATIO * swa_cell
            tokens = math.floor(rest / cell) // page * page
            swa_tokens = math.floor(tokens * SWA_FULL_TOKENS_RATIO) // page * page
        else:
            tokens = rest // full_cell // page * page
        starts = tokens > 0 and (not swa or swa_tokens > (swa_window or 0) + page)

        def running_at(context_len: int) -> int:
            """max_running_requests at --context-length context_len (S11): more slots for shorter contexts."""
            n = min(max(int(tokens / context_len * 512), 2048), 4096)
            if req.max_num_seqs is not None:  # --max-running-requests
                n = req.max_num_seqs
            n = min(n, tokens // 2)
            if has_state and max_mamba is not None:
                n = min(n, max_mamba // MAMBA_SLOTS_PER_REQUEST)
            return n

        if tokens > 0:
            running = running_at(req.seq)
        fits = starts and tokens >= req.seq
        if starts and tokens < req.seq:
            est_len = tokens - 1
            notes.append(f"SGLang starts but warns \"KV pool holds {tokens:,} tokens, fewer than --context-length "
                         f"{req.seq:,}\": requests are capped at {tokens - 1:,} tokens")
        def slots(m: int) -> int:
            """Token slots one request of m tokens takes: whole pages (the paged allocator)."""
            return -(-m // page) * page

        max_batch = min(tokens // slots(req.seq), running or 0) if fits else 0
        serves = fits and req.batch <= max_batch
        if fits and not serves:
            notes.append(f"the pool holds {max_batch} requests of {req.seq:,} tokens at once; the other "
                         f"{req.batch - max_batch} wait")
        # the longest --context-length L at which `fits` holds for `batch` requests: B x L token slots (whole
        # pages), and B running slots at L. L = N fits (max_req_len = min(L - 1, N - 1) = L - 1, as at any
        # L <= N). Both limits shrink as L grows, so the test is monotone.
        cap = spec.max_context or MAX_TOKENS
        max_seq = longest(lambda m: req.batch <= min(tokens // slots(m), running_at(m)), 1, cap) if starts else 0
        max_seq = max(max_seq, 0)
    per_gpu = None
    if hw is not None and available is not None and P is not None:
        pool = (tokens or 0) * max(f for f, _, _ in per_stage) + (swa_tokens or 0) * max(s for _, s, _ in per_stage)
        static = int(P * float(mfs))
        per_gpu = PerGpu(capacity_bytes=hw.capacity_bytes, usable_bytes=static, weights_bytes=w_gpu,
                         cache_bytes=pool, reserved_bytes=hw.capacity_bytes - static,
                         free_bytes=static - w_gpu - pool)
    full_all = sum(f for f, _, _ in per_stage) * req.tp
    swa_all = sum(s for _, s, _ in per_stage) * req.tp
    seq_swa = min(req.seq, swa_window or req.seq)
    kv_one = full_all * req.seq + swa_all * seq_swa
    state_one = sum(s for _, _, s in per_stage) * req.tp
    result = SglangEstimate(
        **common, kv_bytes=kv_one * req.batch, state_bytes=state_one * req.batch,
        cache_bytes=(kv_one + state_one) * req.batch, weights_bytes=weights_total, per_gpu=per_gpu, max_batch=max_batch,
        max_seq=max_seq, notes=tuple(notes), **verdict_terms(fits, serves), page_size=page,
        cell_size=max(f for f, _, _ in per_stage), mem_fraction_static=None if mfs is None else str(float(mfs)),
        gpu_mem_mib=gpu_mib, chunked_prefill_size=chunk, reserved_mib=reserved, free_before_load_bytes=P,
        free_after_load_bytes=A, weights_per_gpu_bytes=w_gpu, available_kv_bytes=available, available_kv_bytes_low=available if source == "--kv-cache-memory" else None,
        available_kv_bytes_high=available if source == "--kv-cache-memory" else None, marginal=None,
        mamba_state_per_request_bytes=mamba_per_req, max_mamba_cache_size=max_mamba, max_total_num_tokens=tokens,
        swa_tokens=swa_tokens, max_running_requests=running, estimated_max_model_len=est_len, budget_source=source,
        suggestions=(),
    )
    return result


def read_kv_dtype(req: EngineRequest) -> DType:
    """The request's --kv-cache-dtype as SGLang reads it (srt/server_args.py choices)."""
    return kv_dtype(req, KV_DTYPES, engine="SGLang", flag="--kv-cache-dtype")
