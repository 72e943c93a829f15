"""SGLang: how big the token pool of `python -m sglang.launch_server` will be, release by release. Pure.

The rules of each release come from releases.py (0.3.0 ... 0.5.23, read from every wheel); the arithmetic of the
newest is walked through in docs/engines/sglang.md (S1-S13):

- cell size (S2): bytes one token takes over this rank's layers: KV heads per rank x (head_dim + v_head_dim)
  x dtype bytes per attention layer (heads replicated when tp > KV heads); MLA: the latent, not split by TP;
- budget (S4-S6, budget.py): everything free before the weights load (P) times mem_fraction_static is the
  static area for weights + KV; the pool gets rest = A - P x (1 - mem_fraction_static), A being the memory free
  after loading. The default mem_fraction_static is the release's rule (a TP table up to 0.4.6, reserve
  formulas after), times the release's multimodal factor;
- tokens (S7, S8): max_total_num_tokens = rest // cell size, rounded down to the page size (from 0.4.4; 1 on
  Hopper, 64 for MHA on Blackwell from 0.5.7);
- sliding windows (S12, R4): a separate SWA pool for the models the release splits (none before 0.4.9.post3;
  any sliding-window model class to 0.5.6; an allowlist from 0.5.8);
- Mamba / linear-attention hybrids (S13, R5): a state pool takes m / (1 + m) of the rest (m = 0.9 from
  0.5.3.post3, 0.2 in 0.5.3.post2; a fixed 512 requests in 0.5.2-0.5.3.post1; not served before 0.5.2).

SGLang measures P and A at start-up; kvplan models them (budget.py: measured CUDA context and distributed init,
what --gpu-reserved and the site profile say is in use) and says so in the notes. A pool shorter than the context
does not stop SGLang (R3): it starts with requests capped at max_total_num_tokens - 1 tokens, which
`estimated_max_model_len` reports and the PoolTooShort problem words; `fits` stays false then.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from kvplan.core.layers import kv_heads_per_rank
from kvplan.core.cache import layer_state_bytes, layer_token_bytes
from kvplan.core.dtypes import DType, dtype
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.spec import StateSpec
from kvplan.core.units import MAX_TOKENS
from kvplan.engines import driver, lazy
from kvplan.engines.paged import cap_given_pool, longest, model_dtype
from kvplan.engines.api import EngineRequest, refuse_unread_options
from kvplan.engines.pool import EngineEstimate, request_terms, verdict_terms
from kvplan.engines.result import PerGpu
from kvplan.engines.sglang import after_pool
from kvplan.engines.sglang import budget as sbudget
from kvplan.engines.sglang import context
from kvplan.engines.sglang import releases
from kvplan.engines.sglang import specs as sspecs
from kvplan.engines.sglang.budget import default_mem_fraction, multimodal_factor

if TYPE_CHECKING:
    from kvplan.engines.runtime import unified as unified_memory
    from kvplan.engines import pool_view as view_types
    from kvplan.engines.pool_view import PoolView, StartProblem
    from kvplan.engines import features as shared
    from kvplan.engines.sglang import features as sfeat
else:  # the launch options' terms (features.py): loaded by a launch that sets them, never by a plain estimate
    view_types = lazy.module("kvplan.engines.pool_view")  # built by pool_view() only (check, plan)
    shared = lazy.module("kvplan.engines.features")
    sfeat = lazy.module("kvplan.engines.sglang.features")
    # a GPU that shares its memory with the host (GB10): _unified_memory asks it only for one
    unified_memory = lazy.module("kvplan.engines.runtime.unified")
from kvplan.engines.runtime.startup import link_class
from kvplan.engines.runtime.weights import linear_bits, model_weights, stage_weight_bytes

GIB = 2**30
MIB = 2**20

LLAMA4 = "Llama4ForConditionalGeneration"
DEEPSEEK_V3 = {"DeepseekV3ForCausalLM"}
QWEN3_NEXT = "Qwen3NextForCausalLM"
SWA_FULL_TOKENS_RATIO = Fraction(4, 5)  # --swa-full-tokens-ratio default 0.8 (0.4.9.post3+)
MAMBA_SLOTS_PER_REQUEST = 3  # radix cache on, no extra buffer: r_m = 3
MAMBA_FIXED_REQUESTS = 512  # 0.5.2-0.5.3.post1: --max-running-requests or 512 state slots
# Architectures SGLang 0.5.23 has no model for (S13: Jamba)
UNSERVED = {"JambaForCausalLM": "Jamba has no SGLang model in 0.5.23"}
# --attention-backend choices that force a page size (R7), with the first release that has them
BACKEND_PAGES = {"flashinfer": (1, "0.3.0"), "triton": (1, "0.3.0"), "torch_native": (1, "0.4.0"),
                 "fa3": (1, "0.4.5.post1"), "aiter": (1, "0.4.7"), "flashmla": (64, "0.4.6"),
                 "cutlass_mla": (128, "0.4.7"), "trtllm_mla": (64, "0.5.1"), "trtllm_mha": (64, "0.5.1")}
OPTION_KEYS = releases.OPTION_KEYS


@dataclass(frozen=True)
class SglangEstimate(EngineEstimate):
    """available_kv_bytes: the rest after the Mamba pool; budget_source "model": P and A modelled."""

    sglang_version: str  # the release whose rules were applied
    page_size: int
    cell_size: int  # bytes per token on the most loaded rank (S2)
    mem_fraction_static: str | None
    gpu_mem_mib: int | None  # what SGLang reads from nvidia-smi
    chunked_prefill_size: int | None
    reserved_mib: float | None  # S5
    cuda_context_bytes: int | None  # in P: measured constants (budget.py)
    dist_init_bytes: int | None
    in_use_bytes: int | None  # --gpu-reserved + the site profile's memory in use
    free_before_load_bytes: int | None  # P (measured by SGLang; modelled)
    free_after_load_bytes: int | None  # A
    weights_per_gpu_bytes: int | None
    mamba_state_per_request_bytes: int
    max_mamba_cache_size: int | None
    max_total_num_tokens: int | None
    swa_tokens: int | None  # the sliding-window pool (hybrid SWA architectures)
    max_running_requests: int | None
    # the flag that makes the pool what kvplan assumes: --max-total-tokens at the band's low edge, and whether
    # the request shape still fits with the pool pinned there
    pin_flag: str | None
    pinned_fits: bool | None
    # the terms of the launch's modelled SGLang options (disaggregation, speculative decoding; features.py), null
    # when it sets none
    features: sfeat.SglangFeatures | None = None

    def pool_view(self) -> PoolView | None:
        if self.available_kv_bytes is None:
            return None
        problem: StartProblem | None = None
        if not self.fits:
            if self.max_total_num_tokens == 0:
                problem = view_types.Refused(next((n for n in self.notes if n.startswith("SGLang refuses")), NO_ROOM))
            elif self.available_kv_bytes <= 0:
                problem = view_types.NoKvMemory()
            elif self.estimated_max_model_len:
                problem = view_types.PoolTooShort(
                    self.available_kv_bytes, self.estimated_max_model_len,
                    action=f"SGLang starts, with requests capped at {self.estimated_max_model_len:,} "
                           f"tokens (--context-length stays {self.seq:,})")
        pool = self.per_gpu.cache_bytes if self.per_gpu else None
        per_request = None
        slots, page = self.max_total_num_tokens, self.page_size
        if pool is not None:
            if slots and not self.swa_tokens and not self.mamba_state_per_request_bytes and pool % slots == 0:
                # whole pages of token slots, one slot being pool / max_total_num_tokens bytes
                per_request = -(-self.seq // page) * page * (pool // slots)
            elif self.max_batch:
                per_request = -(-pool // self.max_batch)  # sliding-window or state pools beside it: an even share
        dp = self.features.dp_attention if self.features is not None else None
        return view_types.PoolView(
            problem=problem, available_kv_bytes=self.available_kv_bytes, num_gpu_blocks=None,
            kv_cache_tokens=None, concurrency=None, held_at_once=None, running_limit=None, pool_bytes=pool,
            per_request_bytes=per_request, estimated_max_model_len=self.estimated_max_model_len,
            replicas=dp.attn_dp_size if dp is not None else 1)


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
    facts = hw.facts
    smi = facts.nvidia_smi_total_mib if facts is not None else None
    if smi is not None:
        return smi, []
    return hw.capacity_bytes // MIB, ["SGLang reads the GPU size from nvidia-smi; kvplan used the runtime capacity "
                                      "in MiB (nvidia-smi shows a little more)"]


def _state_fp32(state: StateSpec) -> StateSpec:
    """SGLang keeps the SSM (recurrent) state in float32 by default (configs/mamba_utils.py; S13)."""
    return dataclasses.replace(state, recurrent_dtype="fp32")


def _page_size(req: EngineRequest, rel: releases.Release, mla: bool) -> tuple[int, str | None]:
    """The page size SGLang runs with (R7): --page-size, else the attention backend's (given, or SGLang's default
    for the GPU); 1 before 0.4.4, which has no pages."""
    backend = req.option("attention_backend")
    if req.block_size is not None:
        if not rel.page_rounding:
            raise InputError(f"SGLang {rel.version} has no --page-size (it came in 0.4.4)", where="--block-size")
        return req.block_size, None
    if backend is not None:
        name = backend.strip().lower()
        if name not in BACKEND_PAGES:
            raise InputError(f"SGLang has no attention backend {backend!r} kvplan knows", where="--engine-option",
                             hint="attention_backend=" + "|".join(BACKEND_PAGES))
        page, first = BACKEND_PAGES[name]
        if not rel.at_least(first):
            raise InputError(f"SGLang {rel.version} has no --attention-backend {name} (from {first})",
                             where="--engine-option")
        return (page if rel.page_rounding else 1), None
    facts = req.hardware.facts if req.hardware is not None else None
    if facts is not None and facts.architecture == "blackwell":
        if mla and req.spec.architecture in DEEPSEEK_V3:
            page = rel.blackwell_deepseek_page
            why = "trtllm_mla"
        elif mla:
            page, why = 1, "flashinfer"
        else:
            page, why = rel.blackwell_mha_page, "trtllm_mha"
        if page > 1:
            return page, f"on Blackwell SGLang {rel.version} picks the {why} attention backend: pages of {page} tokens"
    return 1, None


def _uses_swa(rel: releases.Release, spec, windowed: set[sspecs.PoolRule]) -> bool:
    """Whether this release gives the model a separate sliding-window pool (R4)."""
    if not windowed or rel.swa_rule == "none":
        return False
    if rel.swa_rule == "sliding_classes":
        return sspecs.SWA_SLIDING in windowed and spec.architecture in rel.swa_classes
    return spec.architecture in rel.swa_allowlist


GPT_OSS = "GptOssForCausalLM"


def _gpt_oss_swa_off(req: EngineRequest, rel: releases.Release, sg) -> str | None:
    """Why SGLang turns GPT-OSS's sliding-window pool off (server_args.py, GPT-OSS's branch of
    _handle_model_specific_adjustments), or None: `disable_hybrid_swa_memory = True` unconditionally in 0.5.1-0.5.7
    (0.5.1, 0.5.2, 0.5.3, 0.5.4, 0.5.5, 0.5.7 read); in 0.5.8-0.5.9 only with the trtllm_mha attention backend (its
    default for GPT-OSS on SM100) or speculative decoding (0.5.8, 0.5.9 read); not in 0.5.10 (read). Public AMD logs of
    0.5.6 on MI355X show it: one pool of 28,831,220 tokens, disable_hybrid_swa_memory=True in server_args."""
    if req.spec.architecture != GPT_OSS or not rel.at_least("0.5.1") or rel.at_least("0.5.10"):
        return None
    what = f"SGLang {rel.version} turns GPT-OSS's sliding-window pool off (disable_hybrid_swa_memory)"
    if not rel.at_least("0.5.8"):
        return what + ": every layer gets the full pool (server_args.py, 0.5.1-0.5.7)"
    if sg is not None and getattr(sg, "speculative_algorithm", None):
        return what + " with speculative decoding (0.5.8-0.5.9)"
    named = (req.option("attention_backend") or "").strip().lower()
    facts = req.hardware.facts if req.hardware is not None else None
    sm100 = facts is not None and str(facts.compute_capability or "").startswith("10.")
    if named == "trtllm_mha" or (not named and sm100):
        return what + " with the trtllm_mha attention backend (GPT-OSS's default on SM100; 0.5.8-0.5.9)"
    return None


# kvplan's generic KV dtype names -> SGLang's spelling of the same cache (server_args.py: SGLang has no plain "fp8";
# its fp8_e4m3 is the e4m3 cache vLLM calls fp8), said in a note (kv_spelling_note)
GENERIC_KV = {"fp8": "fp8_e4m3"}


def kv_spelling_note(req: EngineRequest) -> str | None:
    """The note when the request's KV dtype is kvplan's generic name for an SGLang spelling."""
    name = (req.kv_dtype or "auto").strip().lower()
    if name in GENERIC_KV and GENERIC_KV[name] in releases.release(req.engine_version).kv_dtypes:
        return f"--kv-dtype {name} is SGLang's --kv-cache-dtype {GENERIC_KV[name]} (SGLang has no plain {name})"
    return None


def read_kv_dtype(req: EngineRequest) -> DType:
    """The request's --kv-cache-dtype as the chosen SGLang release reads it (R9: no release takes fp16/float16)."""
    rel = releases.release(req.engine_version)
    name = (req.kv_dtype or "auto").strip().lower()
    table = rel.kv_dtypes
    name = GENERIC_KV.get(name, name) if GENERIC_KV.get(name) in table else name
    if name not in table:
        raise InputError(f"SGLang has no KV-cache dtype {req.kv_dtype!r}", where="--kv-dtype",
                         hint=f"SGLang {rel.version} takes --kv-cache-dtype " + ", ".join(sorted(table)))
    target = table[name]
    if target is None:
        raise UnsupportedError(f"SGLang's --kv-cache-dtype {name} (scales stored with the cache) is not modelled",
                               where="--kv-dtype", hint="give fp8_e4m3 or auto")
    return model_dtype(req) if not target else dtype(target)


@dataclass(frozen=True, eq=False, repr=False)
class _Pool:
    """The pools SGLang builds from one budget (the rest, in bytes)."""

    available: int
    tokens: int
    swa_tokens: int | None
    max_mamba: int | None
    starts: bool


@dataclass(eq=False, repr=False)
class _Run(driver.Run):
    """One SGLang estimate's figures as its steps (driver.Steps) hand them along."""

    rel: releases.Release | None = None
    sg: sfeat.SglangOptions | None = None  # the launch's modelled SGLang options (features.py), None without
    max_running: int | None = None  # --max-running-requests (48 with speculative decoding when none is given)
    attn_dp: int = 1
    attn_tp: int = 1
    worker_running: int | None = None  # max_running over the attention-DP workers
    has_state: bool = False
    mamba_ratio: Fraction | None = None  # the state pool's share (R5); None: a fixed pool, or none
    mla: bool = False
    page: int = 1
    swa: bool = False  # a separate sliding-window pool (R4)
    swa_window: int | None = None
    stages: list[Any] = field(default_factory=list)  # each pipeline stage's layers
    per_stage: list[tuple[int, int, int]] = field(default_factory=list)  # (full, sliding, state) bytes a token, a rank
    model_stage: list[tuple[int, int, int]] = field(default_factory=list)  # the same over the whole TP group
    draft_bytes: int = 0
    draft_how: str = ""
    draft_dup: int = 0
    dup_how: str = ""
    draft_add: int = 0
    dp_weights: int = 0
    dp_how: str = ""
    lora_t: sfeat.LoraTerms | None = None
    offloaded: Any = None  # --cpu-offload-gb: features/offload.py WeightOffloadTerms
    weights_total: int = 0
    in_use: int = 0
    share_gap: int = 0  # the rest's rise from the largest to the smallest host share (unified memory, R8)
    mfs: Fraction | None = None
    gpu_mib: int | None = None
    chunk: int | None = None
    reserved: float | None = None
    bud: Any = None  # budget.py's SglangBudget
    band: int = 0
    refused: str | None = None
    rest: int | None = None
    mamba_per_req: int = 0
    target_cell: int = 0
    full_cell: int = 0
    swa_cell: int = 0
    layers_full: int = 0
    layers_swa: int = 0
    p: _Pool | None = None
    tokens: int | None = None
    swa_tokens: int | None = None
    max_mamba: int | None = None
    running: int | None = None
    fits: bool | None = None
    low: int | None = None
    high: int | None = None
    pin_flag: str | None = None
    pinned_fits: bool | None = None
    feature_record: sfeat.SglangFeatures | None = None


def _cap_given_pool(req: EngineRequest, *, search_max_seq: bool) -> SglangEstimate:
    # issue 15: a pool larger than the GPU leaves is SGLang's profiled one
    return cap_given_pool(estimate, req, search_max_seq=search_max_seq, engine="SGLang",
                          rule="SGLang uses its profiled value instead (\"max_total_tokens=... is larger than the "
                               "profiled value ... Use the profiled value instead\", model_runner init_memory_pool)")


def _start(req: EngineRequest, search_max_seq: bool) -> _Run:
    """The release, the launch's options, the layer kinds' pools and the cell sizes of the request."""
    rel = releases.release(req.engine_version)
    spec = req.spec
    refuse_unread_options(req, "SGLang", OPTION_KEYS)
    if spec.architecture in UNSERVED:
        raise UnsupportedError(UNSERVED[spec.architecture], where="--engine sglang",
                               hint="try --engine vllm, which serves it")
    driver.refuse_batch(req)
    run = _Run(req, search_max_seq, rel=rel, kv=read_kv_dtype(req), act=model_dtype(req))
    run.notes = [n for n in (kv_spelling_note(req),) if n]
    sg = run.sg = req.features.sglang if req.features is not None else None
    if req.features is not None and dataclasses.replace(req.features, sglang=None, rate=None, prompt_tokens=None,
                                                        link_bytes_per_s=None).any:
        raise InputError("the sglang engine does not model vLLM's launch options (LoRA, offload tiers, expert, data "
                         "or context parallelism, KV connectors)", where="--vllm-args",
                         hint="they apply to --engine vllm; SGLang's own go in --sglang-args")
    if sg is not None:
        _check_features(sg, req, rel)
    # speculative decoding resets SGLang's running-request cap to 48 when none is given (features.py)
    run.max_running = req.max_num_seqs
    if sg is not None and sg.speculative_algorithm is not None and run.max_running is None:
        run.max_running = sfeat.SPEC_RUNNING_DEFAULT
    run.attn_dp = sg.attn_dp_size if sg is not None else 1
    run.attn_tp = req.tp // run.attn_dp  # one attention-DP worker's ranks (_check_features: TP divisible by D)
    # --max-running-requests is split over the attention-DP workers (resolve_max_num_reqs)
    run.worker_running = max(1, run.max_running // run.attn_dp) if run.max_running is not None else None
    reserve = driver.reserve_note(req, "SGLang's budget is its own (mem_fraction_static)")
    if reserve:
        run.notes.append(reserve)
    _pools_of_kinds(run)
    _cells(run)
    run.common = request_terms(req, run.kv, engine="sglang", engine_version=f"SGLang {rel.version}")
    run.weights_total, _ = model_weights(spec, req.weight_fmt)
    run.in_use = driver.memory_in_use(req)
    return run


def _pools_of_kinds(run: _Run) -> None:
    """Which pools the model's layer kinds take on this release: the state pool (R5), pages (R7), the SWA pool (R4)."""
    req, rel, spec, notes = run.req, run.rel, run.req.spec, run.notes
    pools = {sspecs.rule(layer) for layer in spec.layer_specs}
    run.has_state = any(r.state for r in pools)
    if run.has_state and not any(r.tokens for r in pools):
        raise UnsupportedError("pure Mamba models on SGLang are not modelled", where="--engine sglang",
                               hint="try --engine vllm")
    if run.has_state:
        if rel.mamba_rule is None:
            raise UnsupportedError(f"SGLang {rel.version} serves no Mamba / linear-attention hybrid (from 0.5.2)",
                                   where="--engine-version", hint="give --engine-version 0.5.23")
        if rel.mamba_rule == "fixed" and spec.architecture != QWEN3_NEXT:
            raise UnsupportedError(f"SGLang {rel.version} serves only Qwen3-Next among the hybrids (more from "
                                   "0.5.3.post2)", where="--engine-version", hint="give --engine-version 0.5.23")
        if rel.mamba_rule != "fixed":
            run.mamba_ratio = rel.mamba_rule
    run.mla = any(r.latent for r in pools)
    run.page, page_note = _page_size(req, rel, run.mla)
    if page_note:
        notes.append(page_note)
    windowed = {r for r in pools if r.windowed}
    if len(windowed) > 1:
        raise UnsupportedError("sliding and chunked-local layers in one model: SGLang's SWA pool has one window "
                               "(sliding_window, else attention_chunk_size); not modelled", where="--engine sglang",
                               hint="try --engine vllm")
    run.swa = _uses_swa(rel, spec, windowed)
    off = _gpt_oss_swa_off(req, rel, run.sg) if run.swa else None
    if off is not None:
        run.swa = False
        notes.append(off)
    # SGLang's one SWA window (model_runner_components/load_model_utils.py resolve_sliding_window_size): the
    # config's sliding_window, else attention_chunk_size, so Llama 4's chunked-local layers live in the SWA pool
    run.swa_window = spec.attention_chunk_size if sspecs.SWA_CHUNKED in windowed else spec.sliding_window
    if sspecs.SWA_CHUNKED in windowed and run.swa:
        _refuse_chunked_swa(spec)
    if windowed and not run.swa:
        what = next(iter(windowed)).what
        notes.append(f"SGLang {rel.version} has no sliding-window pool for {spec.architecture or 'this architecture'}: "
                     f"{what} layers are sized as full attention (R4)")


def _refuse_chunked_swa(spec) -> None:
    # configs/model_config.py get_hybrid_layer_ids: Llama 4's SWA layers are (i + 1) % 4 != 0, whatever the spec
    if spec.architecture != LLAMA4:
        raise UnsupportedError(f"chunked-local layers in {spec.architecture}: SGLang puts only Llama 4's into its SWA "
                               "pool; not modelled", where="--engine sglang", hint="try --engine vllm")
    ours = {i for i, layer in enumerate(spec.layer_specs) if sspecs.rule(layer) is sspecs.SWA_CHUNKED}
    if ours != {i for i in range(spec.layers) if (i + 1) % 4}:
        raise UnsupportedError("SGLang puts layers with (i + 1) % 4 != 0 of Llama 4 into its SWA pool, and this "
                               "spec's chunked layers are others; not modelled", where="--engine sglang",
                               hint="try --engine vllm")


def _cell_bytes(run: _Run, layers, tp: int) -> tuple[int, int, int]:
    """(full, sliding, state) bytes one token (the state: one request) takes over `layers` on one of `tp` ranks."""
    kv, swa = run.kv, run.swa
    full = sum(layer_token_bytes(layer, kv, tp) for layer in layers if sspecs.cell(layer, swa) == sspecs.FULL_CELL)
    slide = sum(layer_token_bytes(layer, kv, tp) for layer in layers if sspecs.cell(layer, swa) == sspecs.SWA_CELL)
    state = sum(layer_state_bytes(dataclasses.replace(layer, state=_state_fp32(layer.state)), tp)
                for layer in layers if sspecs.cell(layer, swa) == sspecs.STATE_CELL)
    return full, slide, state


def _cells(run: _Run) -> None:
    """The stages' cells, and what the launch's options add: the draft, attention DP's whole weights, LoRA slots."""
    req, spec, sg, act = run.req, run.req.spec, run.sg, run.act
    counts = _pp_counts(spec.layers, req.pp)
    start = 0
    for n in counts:
        run.stages.append(spec.layer_specs[start:start + n])
        start += n
    # the pool of one rank: its KV heads are those of its attention-TP group (TP without attention DP)
    run.per_stage = [_cell_bytes(run, layers, run.attn_tp) for layers in run.stages]
    run.model_stage = run.per_stage if run.attn_tp == req.tp else [_cell_bytes(run, layers, req.tp)
                                                                   for layers in run.stages]
    run.lora_t = sfeat.lora_terms(spec, sg, tp=req.tp, bits=act.bits) if sg is not None and sg.lora_slots else None
    if sg is not None and sg.hicache and (run.swa or run.has_state):
        raise UnsupportedError("HiCache of a sliding-window or Mamba hybrid is not modelled (its host pools are split "
                               "per sub-pool, hybrid_pool_assembler.py)", where=sg.where)
    run.offloaded = sfeat.offloaded_weights(sg, spec, tp=req.tp, pp_counts=counts,
                                            bits=_loaded_bits(req, act)) if sg is not None else None
    if run.attn_dp > 1:
        run.dp_weights, run.dp_how = sfeat.dp_attention_weights_delta(
            spec, tp=req.tp, attn_dp=run.attn_dp, linear_bits=linear_bits(spec, req.weight_fmt, act), act_bits=act.bits)
    if sg is not None and sg.speculative_algorithm is not None:
        bits = Fraction(act.bits) if sg.head is not None or sg.draft_spec is not None else linear_bits(spec, req.weight_fmt, act)
        run.draft_bytes, run.draft_how = sfeat.draft_weights_per_gpu(sg, spec, tp=req.tp, bits=bits)
        run.draft_dup, run.dup_how = sfeat.draft_duplicates_per_gpu(sg, spec, tp=req.tp, act_bits=act.bits)
        target_layers = sum(1 for x in run.stages[0] if sspecs.rule(x).full)
        run.draft_add = sfeat.draft_cell(run.per_stage[0][0], target_layers, sg.draft_layers)


def _given(run: _Run) -> None:
    run.rest = run.req.kv_cache_memory
    run.notes.append("SGLang has no cache-size flag: --kv-cache-memory is taken as the rest it would compute "
                     "(cap it in SGLang with --max-total-tokens)")


def _modelled(run: _Run) -> None:
    """P and A on the request's GPU (budget.py), the rest the pool gets and the band around it."""
    req, hw, spec = run.req, run.req.hardware, run.req.spec
    facts = hw.facts
    share = _unified_memory(run)
    run.gpu_mib, gnotes = _gpu_mib(hw)
    run.notes += gnotes
    _mem_fraction(run)
    weights = stage_weight_bytes(spec, req.weight_fmt, run.act, req.tp, req.pp)
    if run.draft_bytes:
        # PP 1 (_check_features): the draft beside the target, with its own embedding (and head) still resident
        weights = [w + run.draft_bytes + run.draft_dup for w in weights]
    if run.dp_weights:
        weights = [w + run.dp_weights for w in weights]  # attention and embedding over attn_tp (PP 1)
    if run.lora_t is not None:
        weights = [w + run.lora_t.gpu_bytes_per_rank for w in weights]  # the adapter slots, before the pool (PP 1)
    if run.offloaded is not None:
        weights = [w - run.offloaded.offloaded_bytes for w in weights]  # decoder-layer parameters in host memory
    non_torch = req.site.non_torch_for(req.tp, req.pp) if req.site else None  # at the layouts it was measured at
    link = link_class(getattr(facts, "interconnect", None))
    run.bud = sbudget.budget(hw.capacity_bytes, weights=max(weights), mfs=run.mfs, tp=req.tp, pp=req.pp,
                             architecture=facts.architecture if facts else None, link=link, in_use=run.in_use,
                             non_torch=non_torch)
    if share is not None:
        # judged at the largest share (the band's low edge), the smallest one's rest is the band's top
        at_least, at_most = (sbudget.budget(hw.capacity_bytes, weights=max(weights), mfs=run.mfs, tp=req.tp, pp=req.pp,
                                            architecture=facts.architecture if facts else None, link=link, in_use=held,
                                            non_torch=non_torch) for held in (share.low_bytes, share.high_bytes))
        run.bud, run.in_use = at_most, at_most.in_use_bytes
        run.share_gap = at_least.rest_bytes - at_most.rest_bytes
        run.notes.append(_share_note(run, share))
    run.rest = run.bud.rest_bytes
    run.band = sbudget.band_bytes(run.bud, req.tp * req.pp, link)
    if facts is not None and facts.vendor == "amd" and non_torch is None:
        run.band += sbudget.rocm_band_bytes(run.bud, req.tp * req.pp)
        run.notes.append(f"ROCm ({hw.name}): the HIP context, RCCL at init and torch's view of the total were not "
                         "measured on any ROCm log; the band spans their plausible values (docs/engines/sglang.md, ROCm)")
    run.notes.append("SGLang measures the free memory before (P) and after (A) loading; kvplan models P as total "
                     "minus the CUDA context and distributed init it measured on public logs (and what is in use "
                     "before start), A as P minus the weights (docs/engines/sglang.md S5)")


def _unified_memory(run: _Run) -> unified_memory.HostShare | None:
    """On a GPU sharing its memory with the host: the refusal of a release that cannot start there (R8), the host's
    share when the launch leaves it open and the release reads free memory as the public readings did (psutil,
    0.5.9+: runtime/unified.py), or "cannot judge" (exit 3) where kvplan holds no reading for it."""
    req, rel, hw = run.req, run.rel, run.req.hardware
    facts = hw.facts
    if not bool(getattr(facts, "unified_memory", False)):
        return None
    superchip = not unified_memory.shares_with_host(facts)  # GH200: its nvidia-smi shows memory.total (R8 is GB10's)
    if rel.unified_memory == "fails" and not superchip:
        run.refused = (f"SGLang refuses to start: {rel.version} reads the GPU size from nvidia-smi, which shows no "
                       "memory.total on an integrated GPU (ValueError('No GPU memory values found.'); fixed in "
                       "0.4.9.post3)")
        return None
    given = req.gpu_reserved_bytes is not None or bool(
        req.site and (req.site.memory_in_use_bytes or req.site.non_torch_for(req.tp, req.pp) is not None))
    if given:
        return None
    if superchip:  # a Grace superchip (GH200): the discrete path, its HBM a NUMA node the host allocates from
        raise UnsupportedError(
            f"{hw.name}: SGLang sizes the pool from the HBM's free memory as on a discrete GPU; "
            f"{unified_memory.superchip_reason(f'SGLang {rel.version}')}", where="--gpu",
            hint="give --gpu-reserved SIZE (the memory in use on the GPU before SGLang starts) or --kv-cache-memory "
                 "SIZE")
    if rel.unified_memory == "psutil":
        return unified_memory.in_use_range()
    raise UnsupportedError(
        f"{hw.name or 'this GPU'} shares its memory with the CPU: SGLang {rel.version} sizes the pool from "
        "cudaMemGetInfo, which depends on what the operating system and other processes hold (a public DGX Spark "
        "log shows 49 GiB in use outside the engine); kvplan holds no readings of it for this release or GPU",
        where="--gpu", hint="give --gpu-reserved SIZE (the memory in use before SGLang starts) or --kv-cache-memory "
                            "SIZE, or judge it with SGLang 0.5.9+")


def _share_note(run: _Run, share: unified_memory.HostShare) -> str:
    return (f"{run.req.hardware.name} shares its memory with the host and --gpu-reserved does not say what the host "
            f"holds: kvplan takes {unified_memory.describe(share)}. SGLang {run.rel.version} reads the free memory "
            "from psutil's available memory, so the pool shrinks by mem_fraction_static of every byte the host "
            "holds: judged at the largest share, the band reaches the smallest one's pool; give --gpu-reserved SIZE "
            "to narrow it")


def _aiter_factor(rel: releases.Release) -> Fraction | None:
    """`if attention_backend == "aiter": if context_len > 8192: mem_fraction_static *= F`, whether or not the user
    gave the fraction: in model_runner.py ModelRunner.__init__ from 0.4.7 to 0.5.4 (F = 0.85; 0.4.7, 0.4.8, 0.4.9.post2,
    0.5.2, 0.5.3, 0.5.4 read; absent in 0.4.6.post5; server_args prints the value before it), then in server_args.py
    _handle_attention_backend_compatibility (0.90 in 0.5.4.post1, 0.85 from 0.5.4.post2: 0.5.4.post2, 0.5.5, 0.5.7,
    0.5.10 read). AMD's public MI300X / MI355X sanity logs (tests/data/rocm_logs) agree: a given 0.85 prints 0.765
    (0.5.4.post1) and 0.7224999999999999 (later), and 0.5.3's pool is sized at 0.85 x 0.85."""
    if rel.at_least("0.5.4.post2"):
        return Fraction(85, 100)
    if rel.at_least("0.5.4.post1"):
        return Fraction(90, 100)
    if rel.at_least("0.4.7"):
        return Fraction(85, 100)
    return None


def _aiter_backend(run: _Run) -> bool:
    """Whether SGLang runs its aiter attention backend on ROCm (server_args.py _handle_attention_backend_compatibility
    / the default backend, 0.5.5 and 0.5.7 read): the ROCm default for MHA; for MLA only when the KV heads per TP
    rank (ModelConfig.get_num_kv_heads: num_key_value_heads // tp, at least 1) are 16 or 128 ("current aiter only
    support head number 16 or 128"), triton otherwise; a named --attention-backend decides itself."""
    named = run.req.option("attention_backend")
    if named is not None:
        return named.strip().lower() == "aiter"
    if not run.mla:
        return True
    return max(1, run.req.spec.kv_heads // run.req.tp) in (16, 128)


def _mem_fraction(run: _Run) -> None:
    """mem_fraction_static as the release picks it (or as given), with its multimodal and ROCm factors (S4)."""
    req, rel, spec, sg, notes = run.req, run.rel, run.req.spec, run.sg, run.notes
    facts = req.hardware.facts
    multimodal = bool(spec.vision_params)
    rocm = facts is not None and facts.vendor == "amd"
    # --max-num-batched-tokens / --max-num-seqs stand for SGLang's --chunked-prefill-size / --max-running-requests
    mfs, run.chunk, run.reserved = default_mem_fraction(run.gpu_mib, req.tp, req.pp, run.mla, rel=rel,
                                                        chunked_prefill_size=req.max_num_batched_tokens,
                                                        max_running_requests=run.max_running,
                                                        prefill_graphs=not multimodal and not rocm,
                                                        disaggregation_mode=sg.disaggregation_mode if sg else None,
                                                        draft_tokens=sg.num_draft_tokens if sg else None,
                                                        attn_dp_size=run.attn_dp,
                                                        unchunked_prefill_tokens=sg.unchunked_prefill_tokens if sg else None)
    if run.attn_dp > 1:
        run.chunk //= run.attn_dp  # parallel_hook.py _handle_data_parallelism, after the fraction is chosen
    user_given = req.gpu_util is not None
    if user_given:
        mfs = req.gpu_util
    if multimodal:
        factor = multimodal_factor(rel, spec.vision_params, user_given=user_given)
        if factor != 1:
            mfs = mfs * factor
            notes.append(f"vision-language model: SGLang {rel.version} multiplies mem_fraction_static by "
                         f"{float(factor):.3f}" + (" (also the value given)" if user_given else ""))
    factor = _aiter_factor(rel)
    if rocm and factor is not None and req.seq > 8192 and _aiter_backend(run):
        mfs = mfs * factor  # the value given too: SGLang multiplies whatever it holds by then
        notes.append(f"ROCm aiter backend with a context over 8192: SGLang {rel.version} multiplies mem_fraction_static "
                     f"by {float(factor):.2f}" + (" (also the value given)" if user_given else ""))
    run.mfs = mfs


def _pool_of(run: _Run, rest_b: int) -> _Pool:
    """What SGLang builds from a rest of rest_b bytes (R3-R5)."""
    max_mamba = None
    per_req, page, swa = run.mamba_per_req, run.page, run.swa
    if run.has_state:
        if run.mamba_ratio is None:  # 0.5.2-0.5.3.post1: a fixed state pool
            max_mamba = run.req.max_num_seqs or MAMBA_FIXED_REQUESTS
            rest_b -= max_mamba * per_req
        else:
            budget_b = rest_b * run.mamba_ratio / (1 + run.mamba_ratio)
            max_mamba = max(int((budget_b - per_req) // per_req), 0) if per_req else 0
            rest_b -= (max_mamba + 1) * per_req
    swa_tokens = None
    if rest_b <= 0 or run.full_cell == 0:
        tokens = 0
    elif swa and run.rel.swa_split == "layer_ratio":
        # 0.4.9.post3-0.5.6 (set_num_token_hybrid): the pool sized as all-full, then split by layer counts
        n_all = rest_b // (run.full_cell + run.swa_cell)
        total = n_all * (run.layers_full + run.layers_swa)
        tokens = int(total / (SWA_FULL_TOKENS_RATIO * run.layers_swa + run.layers_full))
        swa_tokens = int(tokens * SWA_FULL_TOKENS_RATIO)
    elif swa:
        cell = run.full_cell + SWA_FULL_TOKENS_RATIO * run.swa_cell
        tokens = math.floor(rest_b / cell) // page * page
        swa_tokens = math.floor(tokens * SWA_FULL_TOKENS_RATIO) // page * page
    else:
        tokens = rest_b // run.full_cell // page * page
    ok = tokens > 0 and (not swa or swa_tokens > (run.swa_window or 0) + page)
    return _Pool(available=rest_b, tokens=tokens, swa_tokens=swa_tokens, max_mamba=max_mamba, starts=ok)


def _slots(run: _Run, m: int) -> int:
    """Token slots one request of m tokens takes: whole pages (the paged allocator)."""
    return -(-m // run.page) * run.page


def _running_at(run: _Run, p: _Pool, context_len: int) -> int:
    """max_running_requests at --context-length context_len (S11): more slots for shorter contexts."""
    n = min(max(int(p.tokens / context_len * 512), 2048), 4096)
    if run.worker_running is not None:  # --max-running-requests (48 with speculative decoding), per DP worker
        n = run.worker_running
    n = min(n, p.tokens // 2)
    if run.has_state and p.max_mamba is not None:
        n = min(n, p.max_mamba // MAMBA_SLOTS_PER_REQUEST)
    return n


def _fits_at(run: _Run, p: _Pool) -> bool:
    req = run.req
    return p.starts and p.tokens >= req.seq and req.batch <= min(p.tokens // _slots(run, req.seq),
                                                                 _running_at(run, p, req.seq))


def _pool(run: _Run) -> None:
    """The pools from the rest, the verdict, the longest context, the band and the terms of the launch's options."""
    per_stage, stages = run.per_stage, run.stages
    run.mamba_per_req = max(s for _, _, s in per_stage)
    run.target_cell = max(f for f, _, _ in per_stage)
    run.full_cell = run.target_cell + run.draft_add  # the cell SGLang divides the rest by (the draft's pool beside)
    run.swa_cell = max(s for _, s, _ in per_stage)
    run.layers_full = max(sum(1 for x in st if sspecs.rule(x).full) for st in stages)
    run.layers_swa = max(sum(1 for x in st if sspecs.rule(x).windowed) for st in stages)
    run.p = _pool_of(run, run.rest) if run.rest is not None and run.refused is None else None
    if run.refused is not None:
        run.tokens, run.fits, run.serves, run.max_batch, run.max_seq = 0, False, False, 0, 0
        run.notes.append(run.refused)
    if run.p is not None:
        _verdict(run)
        _band(run)
    _per_gpu(run)
    sg = run.sg
    if sg is not None:
        run.feature_record = _feature_record(
            sg, run.req, target_cell=run.target_cell, draft_add=run.draft_add, draft_bytes=run.draft_bytes,
            draft_how=run.draft_how, page=run.page, max_running=run.max_running, draft_dup=run.draft_dup,
            dup_how=run.dup_how, dp_weights=run.dp_weights, dp_how=run.dp_how, worker_running=run.worker_running,
            max_batch=run.max_batch, lora_t=run.lora_t, device_tokens=run.tokens, offloaded=run.offloaded, rel=run.rel,
            act_bits=run.act.bits)
        run.notes += run.feature_record.notes


def _verdict(run: _Run) -> None:
    """Whether SGLang starts and holds `batch` requests of --context-length, and the longest context that does."""
    req, p, notes = run.req, run.p, run.notes
    run.tokens, run.swa_tokens, run.max_mamba = p.tokens, p.swa_tokens, p.max_mamba
    tokens = p.tokens
    if not p.starts and tokens == 0:
        notes.append(f"SGLang refuses to start: \"{run.rel.no_room_message}\" (the weights leave no memory for the KV "
                     "cache)")
    if tokens > 0:
        run.running = _running_at(run, p, req.seq)
    run.fits = p.starts and tokens >= req.seq
    if p.starts and tokens < req.seq:
        run.est_len = tokens - 1
        notes.append(f"SGLang starts with a pool of {tokens:,} tokens, fewer than --context-length {req.seq:,}: "
                     f"requests are capped at {tokens - 1:,} tokens (max_req_len; R3)")
    _check_context_length(run)
    run.max_batch = min(tokens // _slots(run, req.seq), run.running or 0) if run.fits else 0
    run.serves = run.fits and req.batch <= run.max_batch
    if run.fits and not run.serves:
        notes.append(f"the pool holds {run.max_batch} requests of {req.seq:,} tokens at once; the other "
                     f"{req.batch - run.max_batch} wait")
    # the longest --context-length L at which `fits` holds for `batch` requests: B x L token slots (whole
    # pages), and B running slots at L. L = N fits (max_req_len = min(L - 1, N - 1) = L - 1, as at any
    # L <= N). Both limits shrink as L grows, so the test is monotone.
    cap = req.spec.max_context or MAX_TOKENS
    max_seq = longest(lambda m: req.batch <= min(tokens // _slots(run, m), _running_at(run, p, m)), 1, cap) \
        if p.starts else 0
    run.max_seq = max(max_seq, 0)


def _check_context_length(run: _Run) -> None:
    """SGLang's own check of a --context-length past the length it derives (context.py): a launch it refuses does not
    start, as `kvplan check` judges the same launch (vLLM's estimate refuses a length past the model's the same way).
    The derived length here is the spec's maximum context; check reads the config.json's own keys."""
    req = run.req
    given = req.option(context.ALLOW_ENV.lower())
    try:
        note = context.check_length(req.seq, req.spec, None, version=req.engine_version,
                                    env={} if given is None else {context.ALLOW_ENV: given}, where="--seq")
    except InputError as refusal:
        why = f"{refusal.what} ({refusal.hint})" if refusal.hint else refusal.what
        run.refused = run.refused or why
        run.notes.append(why)
        run.fits = False
        return
    if note is not None:
        run.notes.append(note)


def _band(run: _Run) -> None:
    """The pools at the two edges of a modelled budget's band, and the --max-total-tokens that pins the low one."""
    if run.source == driver.GIVEN:
        run.low = run.high = run.p.available
    elif run.source == driver.MODELLED:
        lo_p, hi_p = _pool_of(run, run.rest - run.band), _pool_of(run, run.rest + run.band + run.share_gap)
        run.low, run.high = lo_p.available, hi_p.available
        run.marginal = _fits_at(run, lo_p) != _fits_at(run, hi_p)
        if lo_p.tokens > 0:
            run.pin_flag = f"--max-total-tokens {lo_p.tokens}"
            # pinned at the low edge the pool is that size whatever the real budget (SGLang caps at it)
            run.pinned_fits = _fits_at(run, lo_p)


def _per_gpu(run: _Run) -> None:
    bud, hw = run.bud, run.req.hardware
    if bud is None or run.p is None:
        return
    pool_b = (run.tokens or 0) * run.full_cell + (run.swa_tokens or 0) * run.swa_cell
    static = int(bud.free_before_load_bytes * float(run.mfs))
    run.per_gpu = PerGpu(capacity_bytes=hw.capacity_bytes, usable_bytes=static, weights_bytes=bud.weights_bytes,
                         cache_bytes=pool_b, reserved_bytes=hw.capacity_bytes - static,
                         free_bytes=static - bud.weights_bytes - pool_b)


def _result(run: _Run) -> SglangEstimate:
    req, bud, model_stage = run.req, run.bud, run.model_stage
    full_all = sum(f for f, _, _ in model_stage) * req.tp
    swa_all = sum(s for _, s, _ in model_stage) * req.tp
    seq_swa = min(req.seq, run.swa_window or req.seq)
    kv_one = full_all * req.seq + swa_all * seq_swa
    state_one = sum(s for _, _, s in model_stage) * req.tp
    terms = verdict_terms(run.fits, run.serves)
    if run.refused is not None:
        terms["starts"] = False
    return SglangEstimate(
        **run.common, kv_bytes=kv_one * req.batch, state_bytes=state_one * req.batch,
        cache_bytes=(kv_one + state_one) * req.batch, weights_bytes=run.weights_total, per_gpu=run.per_gpu,
        max_batch=run.max_batch, max_seq=run.max_seq, notes=tuple(run.notes), **terms, sglang_version=run.rel.version,
        page_size=run.page, cell_size=run.full_cell,
        mem_fraction_static=None if run.mfs is None else _fraction_text(run.mfs),
        gpu_mem_mib=run.gpu_mib, chunked_prefill_size=run.chunk, reserved_mib=run.reserved,
        cuda_context_bytes=bud.context_bytes if bud else None, dist_init_bytes=bud.dist_init_bytes if bud else None,
        in_use_bytes=bud.in_use_bytes if bud else None,
        free_before_load_bytes=bud.free_before_load_bytes if bud else None,
        free_after_load_bytes=bud.free_after_load_bytes if bud else None,
        weights_per_gpu_bytes=bud.weights_bytes if bud else None,
        available_kv_bytes=run.p.available if run.p is not None else None,
        available_kv_bytes_low=run.low, available_kv_bytes_high=run.high, marginal=run.marginal,
        mamba_state_per_request_bytes=run.mamba_per_req, max_mamba_cache_size=run.max_mamba,
        max_total_num_tokens=run.tokens, swa_tokens=run.swa_tokens, max_running_requests=run.running,
        estimated_max_model_len=run.est_len, budget_source=run.source, suggestions=(), pin_flag=run.pin_flag,
        pinned_fits=run.pinned_fits, features=run.feature_record,
    )


STEPS = driver.Steps(kinds=sspecs.TABLE, refuse=None,
                     on_the_gpu=_cap_given_pool, start=_start, given=_given, modelled=_modelled,
                     no_gpu="no GPU given: the token pool needs --gpu/--gpu-mem or --kv-cache-memory",
                     pool=_pool, result=_result)


def estimate(req: EngineRequest, *, search_max_seq: bool = True, pool_capped: bool = False) -> SglangEstimate:
    """The token pool SGLang builds for this deployment (the longest context is a closed-form search here), by the
    steps above in the order every paged engine follows (kvplan/engines/driver.py)."""
    return driver.estimate(STEPS, req, search_max_seq=search_max_seq, pool_checked=pool_capped)


def _fraction_text(f: Fraction) -> str:
    """mem_fraction_static as SGLang prints it: a float, three decimals where the release rounds it."""
    value = float(f)
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text if text else "0"


def _check_features(sg: sfeat.SglangOptions, req: EngineRequest, rel: releases.Release) -> None:
    """What kvplan models of the options, and where: SGLang 0.5.23's rules (--cpu-offload-gb: 0.5.1-0.5.23's), on the
    layouts they were read for."""
    newest = releases.release(None)
    # chunked prefill off (sg.unchunked_prefill_tokens) is read on every release: the reserve that reads it has one
    # form from 0.5.3 to 0.5.23, and the older fraction rules read no prefill size (budget.py default_mem_fraction)
    given = [name for name, on in (("--disaggregation-mode", sg.disaggregation_mode is not None),
                                   ("--speculative-algorithm", sg.speculative_algorithm is not None),
                                   ("attention data parallelism", sg.attn_dp_size > 1),
                                   ("LoRA slots", sg.lora_slots > 0),
                                   ("--enable-hierarchical-cache", sg.hicache)) if on]
    if rel.version != newest.version and given:
        raise UnsupportedError(f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} modelled from SGLang "
                               f"{newest.version}'s source only, not {rel.version}'s", where=sg.where,
                               hint=f"judge it with --engine-version {newest.version}")
    if sg.cpu_offload_bytes and not rel.weight_offload:
        # releases.py WEIGHT_OFFLOAD: the offloader kvplan walks is 0.5.1's to 0.5.23's; older ones were not read
        raise UnsupportedError(f"--cpu-offload-gb on SGLang {rel.version} is not modelled (kvplan read the weight "
                               "offloader of 0.5.1 to 0.5.23; 0.3-0.4 keep another one)", where=sg.where,
                               hint="judge it with --engine-version 0.5.1 or newer")
    for flag, first in after_pool.FUSION_FLAGS.items():
        if sg.fusion_flags and flag in sg.fusion_flags and not rel.at_least(first):
            raise InputError(f"SGLang {rel.version} has no {flag} (from {first})", where=f"{sg.where}: {flag}",
                             hint=f"drop it, or judge the launch as SGLang {first} or later")
    pools = {sspecs.rule(layer) for layer in req.spec.layer_specs}
    if sg.attn_dp_size > 1:
        d = sg.attn_dp_size
        if req.spec.architecture not in sfeat.DP_ATTENTION_CLASSES:
            raise UnsupportedError(f"attention data parallelism on {req.spec.architecture or req.spec.name} is not "
                                   "modelled (which weights shard over the attention-TP group is per model class)",
                                   where=sg.where, hint="kvplan read " + ", ".join(sorted(sfeat.DP_ATTENTION_CLASSES)))
        if req.tp % d:
            raise InputError(f"SGLang refuses it: tp_size {req.tp} must be divisible by attn_dp_size {d}", where=sg.where)
        attn_tp = req.tp // d
        kv = req.spec.kv_heads
        if (kv >= attn_tp and kv % attn_tp) or (kv < attn_tp and attn_tp % kv) or req.spec.attention_heads % attn_tp:
            raise InputError(f"SGLang refuses it: {req.spec.attention_heads} heads / {kv} KV heads over attention TP "
                             f"{attn_tp}", where=sg.where)
        if req.pp > 1 or sg.speculative_algorithm is not None or sg.disaggregation_mode is not None:
            raise UnsupportedError("attention data parallelism with PP > 1, speculative decoding or disaggregation is "
                                   "not modelled", where=sg.where, hint="judge the options one at a time")
    if sg.cpu_offload_bytes and (sg.attn_dp_size > 1 or sg.speculative_algorithm is not None or sg.lora_slots):
        raise UnsupportedError("--cpu-offload-gb with attention data parallelism, speculative decoding or LoRA is not "
                               "modelled (which layers each builds, and in what order)", where=sg.where,
                               hint="judge the options one at a time")
    if sg.speculative_algorithm is not None:
        if req.pp > 1:
            raise UnsupportedError("speculative decoding with pipeline parallelism is not modelled (which stage holds "
                                   "the draft)", where=sg.where, hint="judge it at --pp 1")
        if any(r.state or r.windowed for r in pools):
            raise UnsupportedError("speculative decoding on a sliding-window or Mamba hybrid is not modelled (SGLang "
                                   "sizes those draft pools with their own configurators)", where=sg.where)
    if sg.lora_slots:
        spec = req.spec
        if spec.architecture not in sfeat.LORA_ARCHITECTURES or spec.moe is not None:
            raise UnsupportedError(f"SGLang's LoRA slots for {spec.architecture or spec.name} are not modelled", where=sg.where,
                                   hint="kvplan sizes them for dense " + ", ".join(sorted(sfeat.LORA_ARCHITECTURES)))
        if spec.hidden_size is None or spec.intermediate_size is None:
            raise UnsupportedError("LoRA slots need the model's hidden_size and intermediate_size", where=sg.where)
        if req.pp > 1 or sg.attn_dp_size > 1:
            raise UnsupportedError("LoRA with PP > 1 or attention data parallelism is not modelled", where=sg.where)
    if sg.hicache:
        if req.pp > 1 or sg.attn_dp_size > 1 or sg.speculative_algorithm is not None or sg.disaggregation_mode == "decode":
            raise UnsupportedError("HiCache with PP > 1, attention data parallelism, speculative decoding (the draft's "
                                   "host layers) or on a decode server (its ratio follows the retraction backup) is not "
                                   "modelled", where=sg.where, hint="judge the options one at a time")
    if sg.disaggregation_mode is not None and any(r.state for r in pools):
        raise UnsupportedError("disaggregation of a Mamba hybrid is not modelled (its state transfer and the decode "
                               "server's state slots without a radix cache)", where=sg.where)


def _loaded_bits(req: EngineRequest, act: DType) -> int:
    """Bits a parameter of the decoder layers as loaded: the requested format, 8 for a quantized checkpoint (which
    weight_offload refuses: its scales move one by one), else the model dtype."""
    if req.weight_fmt is not None:
        return int(req.weight_fmt.bits_per_param)
    if req.spec.quant_method is not None or req.spec.weight_dtype not in (None, "bf16", "fp16", "fp32"):
        return 8
    return act.bits


def _feature_record(sg: sfeat.SglangOptions, req: EngineRequest, *, target_cell: int, draft_add: int,
                    draft_bytes: int, draft_how: str, page: int, max_running: int | None, dp_weights: int = 0,
                    dp_how: str = "", worker_running: int | None = None, max_batch: int | None = None,
                    lora_t: sfeat.LoraTerms | None = None, device_tokens: int | None = None, draft_dup: int = 0,
                    dup_how: str = "", offloaded=None, rel: releases.Release, act_bits: int) -> sfeat.SglangFeatures:
    notes: list[str] = []
    dis = spec_terms = None
    f = req.features
    if sg.disaggregation_mode is not None:
        link_bps, link_name = shared.disagg.link_of(f.link_bytes_per_s, req.hardware)
        moved = target_cell + sfeat.draft_cell_actual(sg, req.spec, read_kv_dtype(req), tp=req.tp)
        dis = sfeat.disagg_terms(sg, cell_per_rank=moved, ranks=req.tp, context_len=req.seq, page=page,
                                 max_running_requests=max_running, rate=f.rate, prompt_tokens=f.prompt_tokens,
                                 link_bytes_per_s=link_bps, link_name=link_name)
        notes += dis.notes
    if sg.speculative_algorithm is not None:
        spec_terms = sfeat.SpeculativeTerms(
            algorithm=sg.speculative_algorithm, draft=sg.draft_path or "the checkpoint's MTP layer(s)",
            num_steps=sg.num_steps, eagle_topk=sg.eagle_topk, num_draft_tokens=sg.num_draft_tokens,
            draft_layers=sg.draft_layers, target_cell_bytes=target_cell, draft_cell_bytes=draft_add,
            draft_weights_per_gpu_bytes=draft_bytes, draft_duplicates_per_gpu_bytes=draft_dup,
            max_running_requests_default=sfeat.SPEC_RUNNING_DEFAULT if req.max_num_seqs is None else None,
            formula=draft_how)
        notes.append(f"--speculative-algorithm {sg.speculative_algorithm}: the draft's {sg.draft_layers} layer(s) add "
                     f"{draft_add:,} B to the {target_cell:,}-B cell the pool is divided by, and {draft_bytes:,} B of "
                     f"weights per GPU; while the pool is sized {draft_dup:,} B more are resident ({dup_how})")
        if req.max_num_seqs is None:
            notes.append(f"speculative decoding sets --max-running-requests {sfeat.SPEC_RUNNING_DEFAULT} when none is given")
    dp = None
    if sg.attn_dp_size > 1:
        attn_tp = req.tp // sg.attn_dp_size
        dp = sfeat.DpAttentionTerms(
            attn_dp_size=sg.attn_dp_size, attn_tp_size=attn_tp, kv_heads_per_rank=kv_heads_per_rank(req.spec.kv_heads, attn_tp),
            cell_bytes=target_cell, weights_added_per_gpu_bytes=dp_weights, max_running_requests_per_worker=worker_running,
            deployment_max_batch=max_batch * sg.attn_dp_size if max_batch is not None else None, formula=dp_how)
        notes.append(f"attention data parallelism: {sg.attn_dp_size} workers on the {req.tp} GPUs, each its own pool with "
                     f"attention over {attn_tp} rank(s); {dp_weights:,} B more weights per GPU ({dp_how})")
    if lora_t is not None:
        notes.append(f"LoRA: {lora_t.slots} adapter slot(s) of rank {lora_t.rank} for "
                     f"{', '.join(m.name for m in lora_t.modules)} in every layer: {lora_t.gpu_bytes_per_rank:,} B per GPU, "
                     "allocated before the pool is sized")
    hic = None
    if sg.hicache:
        if device_tokens is None:
            raise UnsupportedError("the HiCache host pool is sized from the device pool, which needs a GPU", where=sg.where,
                                   hint="add --gpu")
        hic = sfeat.hicache_terms(sg, cell_per_rank=target_cell, device_tokens=device_tokens, page=page, ranks=req.tp,
                                  rel=rel)
        notes.append(f"HiCache: {hic.host_tokens:,} tokens in {hic.host_bytes_per_rank:,} B of pinned host memory per rank "
                     f"({hic.host_bytes:,} B for the {hic.ranks} rank(s))" + (
                         "; SGLang lowers the default ratio 2.0 if the host's free memory is short" if hic.auto_sized else ""))
        if hic.staging_gpu_bytes_per_rank:
            notes.append(f"HiCache's write-back staging: {hic.staging_gpu_bytes_per_rank:,} B of GPU memory per rank "
                         f"({min(hic.host_tokens // page, 64) * page:,} tokens x {target_cell:,} B), made with the host "
                         "pool after the token pool is sized: out of what mem_fraction_static leaves free, not the pool")
    fusion = None
    if sg.fusion_backend is not None and req.tp > 1:
        fusion = after_pool.fusion_workspace(rel, backend=sg.fusion_backend, tp=req.tp, attn_tp=req.tp // sg.attn_dp_size,
                                             hidden=req.spec.hidden_size or 0, dtype_bits=act_bits)
        sized = (f"{fusion.low_bytes_per_rank:,} to {fusion.high_bytes_per_rank:,} B of GPU memory per rank "
                 f"({fusion.formula})" if fusion.low_bytes_per_rank is not None else f"not sized ({fusion.formula})")
        notes.append(f"FlashInfer all-reduce fusion ({fusion.backend}): {len(fusion.group_sizes)} workspace(s), {sized}; "
                     "made after the token pool is sized (at the warm-up before graph capture, or the first fused "
                     "all-reduce): out of what mem_fraction_static leaves free, not the pool")
    moved = offloaded.offloaded_bytes if offloaded is not None else 0
    if offloaded is not None:
        notes.append(f"--cpu-offload-gb: {moved:,} B of decoder-layer weights per GPU ({offloaded.parameters_moved} "
                     f"parameters, whole) in pinned host memory, {moved * req.tp:,} B for the {req.tp} rank(s); each "
                     "layer with moved parameters copies them to the GPU for its forward and frees them after "
                     "(utils/offloader.py), out of the memory mem_fraction_static leaves free")
    return sfeat.SglangFeatures(options=sfeat.option_names(sg), disaggregation=dis, speculative=spec_terms,
                                dp_attention=dp, lora=lora_t, hicache=hic, weight_offload=offloaded,
                                allreduce_fusion=fusion,
                                weights_added_per_gpu_bytes=draft_bytes + draft_dup + dp_weights + (
                                    lora_t.gpu_bytes_per_rank if lora_t else 0) - moved,
                                notes=tuple(notes))
