"""Check kvplan's SGLang model against a real SGLang start-up log, figure by figure. Pure (apart from reading the
model files it is pointed at). The bases and verdicts are engines/logcheck.py's.

- consistency: the scheduler's max_total_num_tokens is the pool's #tokens (the full-attention pool's where a
  sliding-window pool sits beside it) — kvplan's S8;
- given the logged budget: SGLang sizes the pool from two free-memory readings, P before the weights ("Load weight
  begin. avail mem") and A after them ("Load weight end. avail mem"), each the minimum over ranks:
  rest = A - P x (1 - mem_fraction_static), tokens = rest // cell (research/sglang/releases.md R3, the same from
  0.3.0 to 0.5.23). P and A are printed to 0.01 GiB, so the rest is an interval; the cell is kvplan's (the model
  and TP) or, when the model is unknown, the log's own (K + V size over #tokens + page, also an interval);
- given the logged pool: the K and V sizes are (#tokens + page) x the cell, printed to 0.01 GiB;
- modelled, when the GPU is known (the log's "total_gpu_memory", --gpu or --gpu-mem): kvplan's P, A and token pool
  from the GPU and the flags.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from kvplan.core.errors import KvplanError
from kvplan.engines.logcheck import (CONSISTENCY, GIB, LOGGED_BUDGET, LOGGED_POOL, MODELLED, Figure, LogCalibration,
                                     HALF, SiteObservation, band_of, count_figure, given_pool, invalid, memory_figure,
                                     verdict)
from kvplan.engines.logtext import paste_traits
from kvplan.engines.sglang.log import parse_sglang_log
from kvplan.engines.runtime.logs import describe_log_model
from kvplan.core.spec import CHUNKED, MLA, SLIDING, STATE
from kvplan.engines.api import EngineRequest, Hardware
from kvplan.engines import sglang

# "Using KV cache dtype: torch.float8_e4m3fn" (and the pool line's dtype) in SGLang's --kv-cache-dtype spelling
_TORCH_KV = {"torch.float8_e4m3fn": "fp8_e4m3", "torch.float8_e5m2": "fp8_e5m2", "torch.bfloat16": "bf16",
             "torch.float16": "fp16"}
MAX_CANDIDATES = 200


def _gib_interval(value: Decimal) -> tuple[Decimal, Decimal]:
    """The GiB values that print as `value`."""
    return value - HALF, value + HALF


def calibrate_text(text: str, *, log: str, model: str | None = None, models_dir: str | None = None, site=None,
                   hardware=None) -> LogCalibration:
    try:
        figs = parse_sglang_log(text)
    except ValueError as err:
        return invalid(log, str(err), "sglang")
    notes: list[str] = []
    tp, pp, read, assumed = _layout_read(figs, text)
    if figs.kv_cache_dtype is None and figs.kv_dtype_logged is None and not any(
            p.dtype for r in figs.ranks for p in r.pools):
        assumed.append("KV cache dtype auto (the log does not show it)")
    if hardware is None and figs.total_gpu_memory_gib is not None:
        hardware = Hardware(None, int(figs.total_gpu_memory_gib * GIB))
    base = dict(log=log, engine="sglang", model_id=figs.model or figs.architecture, engine_version=None,
                rules="0.5.23", gpu=hardware.name if hardware else None, tp=tp, pp=pp,
                max_model_len=figs.context_length or figs.context_len, read=tuple(read))
    spec, why_not = describe_log_model(figs.model, model=model, models_dir=models_dir)
    r = figs.binding_rank()
    pool = _main_pool(figs, r)
    figures: list[Figure] = []
    page = figs.page_size or 1

    # consistency: the scheduler's token count is the pool's (kvplan S8)
    if figs.max_total_num_tokens is not None and pool is not None:
        figures.append(count_figure("max_total_num_tokens (the KV pool's #tokens)", figs.max_total_num_tokens,
                                    pool.tokens, basis=CONSISTENCY))
    rules_assumed: tuple[str, ...] = ()
    if spec is not None and _special_layout(spec):
        rules_assumed = ("SGLang 0.5.23 pool rules (the log does not state its release; MLA, sliding-window and Mamba "
                         "pools changed across releases)",)
        assumed += rules_assumed
    tp_assumed = tuple(a for a in assumed if a.startswith(("TP", "PP")))
    mfs = figs.mem_fraction_static
    P = min((x.free_before_load_gib for x in figs.ranks if x.free_before_load_gib is not None), default=None)
    A = min((x.free_after_load_gib for x in figs.ranks if x.free_after_load_gib is not None), default=None)
    req = None
    if spec is not None:
        req = _request(figs, spec, tp, pp, hardware)
    rest: tuple[int, ...] | None = None
    if P is not None and A is not None and mfs is not None:
        lo_a, hi_a = _gib_interval(A)
        lo_p, hi_p = _gib_interval(P)
        rest = (int((lo_a - hi_p * (1 - mfs)) * GIB), int((hi_a - lo_p * (1 - mfs)) * GIB))
    elif figs.rest_memory_gib is not None:
        rest = tuple(int(x * GIB) for x in _gib_interval(figs.rest_memory_gib))
    if rest is not None and pool is not None:
        figures += _budget_figures(figs, req, pool, rest, page, spec, rules_assumed + tp_assumed)
    if pool is not None and req is not None and not _special_layout(spec):
        try:
            est = given_pool(sglang.estimate, req, GIB)
            predicted = (pool.tokens + page) * est.cell_size
            figures.append(_rounded("K + V size of the pool (logged #tokens)", pool.total_gib, predicted,
                                    Decimal("0.01") if pool.kv_gib is None else HALF,
                                    assumed=rules_assumed + tp_assumed))
        except KvplanError as err:
            notes.append(f"kvplan cannot size the pool: {err.one_line()}")
    obs = None
    if req is not None and hardware is not None:
        obs = _end_to_end(figs, req, tp, pp, hardware, P, A, rest, pool, mfs, figures, notes, rules_assumed + tp_assumed)
    elif hardware is None:
        notes.append("the GPU is not known (give --gpu or --gpu-mem): nothing end to end is modelled")
    if figs.no_room:
        notes.append("SGLang refused to start: the weights left no memory for the KV cache")
    status, reason = verdict(figures, tuple(assumed), described=spec is not None, why_not=why_not)
    return LogCalibration(**base, model=spec.name if spec else None, status=status, reason=reason,
                          figures=tuple(figures), assumed=tuple(assumed), notes=tuple(notes), site=obs)


def _layout_read(figs, text: str) -> tuple[int, int, list[str], list[str]]:
    """(TP, PP, what was read from the paste, what was assumed) of the log's layout."""
    assumed: list[str] = []
    read = list(paste_traits(text))
    if figs.tp_source:
        read.append(f"TP from the {figs.tp_source}")
    if figs.pp_source:
        read.append(f"PP from the {figs.pp_source}")
    if len(figs.ranks) > 1:
        read.append(f"{len(figs.ranks)} ranks; the pool is sized by the least free memory over them")
    tp = figs.tp_size
    if tp is None:
        tp = figs.tp_at_least or 1
        assumed.append(f"TP {tp} (" + (f"rank heads show ranks up to TP{tp - 1}" if figs.tp_at_least else "not stated")
                       + ")")
    pp = figs.pp_size
    if pp is None:
        pp = 1
        assumed.append("PP 1 (not stated)")
    return tp, pp, read, assumed


def _end_to_end(figs, req: EngineRequest, tp: int, pp: int, hardware, P, A, rest, pool, mfs, figures: list[Figure],
                notes: list[str], assumed: tuple[str, ...]):
    """The modelled P, A, rest and pool against the logged ones (figures appended), and the site observation; None
    when kvplan cannot model the deployment (a note says why)."""
    try:
        modelled = sglang.estimate(req, search_max_seq=False)
        figures.append(memory_figure("free before loading, P (modelled)", P, modelled.free_before_load_bytes,
                                     assumed=assumed))
        figures.append(memory_figure("free after loading, A (modelled)", A, modelled.free_after_load_bytes,
                                     assumed=assumed))
        band = band_of(modelled)
        logged_rest = None if rest is None else Decimal((rest[0] + rest[1]) // 2) / GIB
        figures.append(memory_figure("KV budget, rest = A - P x (1 - mem_fraction_static) (modelled)",
                                     None if logged_rest is None else logged_rest.quantize(Decimal("0.01")),
                                     modelled.available_kv_bytes, band=band, assumed=assumed))
        figures.append(count_figure("max_total_num_tokens (modelled)", pool.tokens if pool else None,
                                    modelled.max_total_num_tokens, judged=False, basis=MODELLED,
                                    assumed=assumed))
        return _observation(figs, tp, pp, hardware, P, rest, modelled, mfs)
    except KvplanError as err:
        notes.append(f"kvplan cannot model it end to end: {err.one_line()}")
        return None


def _main_pool(figs, r):
    """The full-attention pool of the binding rank (the first pool line; with a sliding-window pool, the one whose
    #tokens are the full-layer tokens)."""
    ranks = [r] if r is not None and r.pools else [x for x in figs.ranks if x.pools]
    if not ranks:
        return None
    pools = ranks[0].pools
    if figs.full_layer_tokens is not None:
        for p in pools:
            if p.tokens == figs.full_layer_tokens:
                return p
    return pools[0]


def _special_layout(spec) -> bool:
    return bool({layer.kind for layer in spec.layer_specs} & {MLA, SLIDING, STATE, CHUNKED})


def _request(figs, spec, tp, pp, hardware):
    from fractions import Fraction

    logged = figs.kv_dtype_logged or next((p.dtype for r in figs.ranks for p in r.pools if p.dtype), None)
    kv = (figs.kv_cache_dtype or _TORCH_KV.get(logged or "", "auto")).lower()
    seq = figs.context_length or figs.context_len or spec.max_context or 8192
    return EngineRequest(spec=spec, seq=seq, batch=1, kv_dtype=kv, tp=tp, pp=pp, hardware=hardware,
                         gpu_util=None if figs.mem_fraction_static is None else Fraction(figs.mem_fraction_static),
                         block_size=figs.page_size, max_num_seqs=figs.max_running_requests,
                         max_num_batched_tokens=figs.chunked_prefill_size if (figs.chunked_prefill_size or 0) > 0 else None)


def _budget_figures(figs, req, pool, rest, page, spec, assumed) -> list[Figure]:
    """The pool's #tokens given the logged budget (the rest interval)."""
    lo, hi = rest
    name = "KV pool #tokens (logged budget)"
    if req is not None:
        try:
            low, high = given_pool(sglang.estimate, req, lo), given_pool(sglang.estimate, req, hi)
        except KvplanError:
            return []
        values = range(low.max_total_num_tokens, high.max_total_num_tokens + 1)
        return [count_figure(name, pool.tokens, values, basis=LOGGED_BUDGET, assumed=assumed)]
    if figs.full_layer_tokens is not None or pool.total_gib is None:
        return []  # a sliding-window split needs the model's layer counts
    mamba = next((x.mamba_gib for x in figs.ranks if x.mamba_gib is not None), None)
    width = Decimal("0.01") if pool.kv_gib is None else HALF
    # the cell from the log: (K + V) / (#tokens + page); the Mamba pool (sizes printed) comes off the rest first
    cell_lo = (pool.total_gib - width) * GIB / (pool.tokens + page)
    cell_hi = (pool.total_gib + width) * GIB / (pool.tokens + page)
    m_lo = m_hi = 0
    if mamba is not None:
        m_lo, m_hi = int((mamba - Decimal("0.01")) * GIB), int((mamba + Decimal("0.01")) * GIB)
    t_lo = int((lo - m_hi) // cell_hi) // page * page
    t_hi = int((hi - m_lo) // cell_lo) // page * page
    return [count_figure(name + ", the log's cell", pool.tokens, range(t_lo, t_hi + 1), basis=LOGGED_BUDGET)]


def _rounded(name: str, logged: Decimal | None, predicted: int, tolerance: Decimal, *, assumed) -> Figure:
    """A memory figure judged within the rounding of the printed value(s)."""
    fig = memory_figure(name, logged, predicted, basis=LOGGED_POOL, assumed=assumed)
    if logged is None:
        return fig
    inside = abs(Decimal(predicted) / GIB - logged) <= tolerance
    return dataclasses.replace(fig, match=inside)


def _observation(figs, tp, pp, hardware, P, rest, modelled, mfs) -> SiteObservation:
    # memory in use before the engine started: what kvplan models free before the weights (the GPU less the CUDA
    # context and the distributed init, sglang/budget.py) minus what the log saw free
    in_use = None
    if P is not None and modelled.free_before_load_bytes is not None:
        in_use = max(modelled.free_before_load_bytes - int(P * GIB), 0)
    return SiteObservation(engine="sglang", tp=tp, pp=pp, memory_in_use_bytes=in_use,
                           available_kv_bytes=None if rest is None else (rest[0] + rest[1]) // 2,
                           modelled_available_kv_bytes=modelled.available_kv_bytes,
                           memory_fraction=None if mfs is None else float(mfs))
