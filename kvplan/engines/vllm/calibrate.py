"""Check kvplan's vLLM model against a real vLLM start-up log: the same launch, figure by figure. Pure
(apart from reading the model files it is pointed at).

A log names its model (a Hugging Face id), GPU (total memory in the worker snapshot or the profile lines) and
flags (TP, PP, max_model_len, gpu_memory_utilization, dtype, quantization, KV dtype, scheduler limits). kvplan
resolves the model (a path given with --model, a bundled spec or alias, or <models-dir>/<org>--<name>), rebuilds
the launch as an EngineRequest and compares (engines/logcheck.py says on which bases and how a verdict follows):

- given the logged pool: the pool the log states most directly — num_gpu_blocks, else the KV memory (exact bytes
  where 0.10.2 prints them, else every byte count that prints as the logged GiB: [low, high) from log.gib_bounds),
  else the token count — fixes the block counts it allows; every other pool figure the log prints (blocks from
  the memory, "GPU KV cache size", "Maximum concurrency", V0's token capacity, the estimated maximum model
  length, padding layers) must follow from them by vLLM's block arithmetic. TP-independent when the anchor is a
  block or token count; the memory anchor needs the bytes per block, so TP and PP;
- modelled: the whole budget from the architecture and the flags (what `kvplan estimate --engine vllm` says before
  the run) — weights, activation peak, non-torch memory, CUDA graphs, available KV memory, blocks, tokens,
  concurrency — judged against the estimate's band where it carries one.

Inputs the log does not state are assumed and said: TP/PP (worker labels give a lower bound; the weights per GPU,
when they match one TP exactly, give it), max_model_len (the model's), and the release rules when kvplan does not
mirror the log's release line (kvplan/engines/vllm/releases.py closest). Any assumption makes the log "cannot
judge", never a pass.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from pathlib import Path

from kvplan.core.errors import InputError, KvplanError
from kvplan.engines.runtime.logs import gpu_assumption, gpu_from_log, model_dir_name, resolve_log_model
from kvplan.engines.logcheck import (CANNOT_JUDGE, GIB, LOGGED_POOL, MODELLED, Figure, LogCalibration, SiteObservation,
                                     count_figure, invalid, memory_figure, ratio_figure, verdict)
from kvplan.core import dtypes
from kvplan.engines.api import EngineRequest
from kvplan.engines.logcheck import band_of, given_pool, read_log
from kvplan.engines import vllm
from kvplan.engines.vllm import budget, releases
from kvplan.engines.vllm.log import gib_bounds, parse_vllm_log
from kvplan.core.dtypes import dtype
from kvplan.engines.logtext import paste_traits

MAX_CANDIDATES = 64  # block counts evaluated one by one; a wider printed interval is judged by its ends
WEIGHTS_TP_TOLERANCE = Decimal("0.03")  # a TP is read off the weights only when one TP lands this close
TP_CANDIDATES = (1, 2, 4, 8, 16)

__all__ = ["calibrate_log", "calibrate_text", "gpu_from_log", "model_dir_name", "request_from_log",
           "resolve_log_model"]


# ------------------------------------------------------------------------------------------ resolving

_TORCH_DTYPES = {"torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32", "float16": "fp16",
                 "bfloat16": "bf16", "float32": "fp32", "half": "fp16", "float": "fp32"}


def request_from_log(figs, spec, hardware, *, rules: str | None = None, kv_cache_memory: int | None = None,
                     tp: int | None = None, pp: int | None = None, max_model_len: int | None = None, site=None):
    """The EngineRequest of the launch a log describes (tp, pp, max_model_len: where the log is silent)."""
    from fractions import Fraction

    notes = []
    act = _TORCH_DTYPES.get(str(figs.dtype or "").strip().strip("'"))
    if act and act != spec.dtype:
        spec = dataclasses.replace(spec, dtype=act)  # vLLM's --dtype: the activations (and an auto KV cache)
    weight_fmt = None
    quant = (figs.quantization or "").lower()
    if quant == "fp8" and spec.weights_bytes is None:
        weight_fmt = dtypes.weight_format("fp8")  # vLLM quantizes the linear layers to fp8 at load time
    elif quant and quant != "none" and spec.weights_bytes is None:
        notes.append(f"the log's quantization {figs.quantization!r} but the model files carry no quantization_config: "
                     "weights counted in the model dtype")
    kv_name = figs.kv_cache_dtype or "auto"
    util = Fraction(str(figs.gpu_memory_utilization)) if figs.gpu_memory_utilization is not None else None
    seq = max_model_len or figs.max_model_len or spec.max_context or 8192
    return EngineRequest(spec=spec, seq=seq, batch=1, kv_dtype=kv_name, weight_fmt=weight_fmt,
                         tp=tp or figs.tensor_parallel_size or 1, pp=pp or figs.pipeline_parallel_size or 1,
                         hardware=hardware, gpu_util=util, kv_cache_memory=kv_cache_memory, block_size=figs.block_size,
                         max_num_seqs=figs.max_num_seqs, max_num_batched_tokens=figs.max_num_batched_tokens,
                         engine_version=rules, site=site), notes


# ------------------------------------------------------------------------------------------ comparing

def calibrate_log(path: str | Path, *, model: str | None = None, models_dir: str | None = None, site=None
                  ) -> LogCalibration:
    """Parse one vLLM log file and compare every figure kvplan predicts for the same launch."""
    try:
        text = read_log(path)
    except InputError as err:
        return invalid(str(path), err.what, "vllm")
    return calibrate_text(text, log=str(path), model=model, models_dir=models_dir, site=site)


def calibrate_text(text: str, *, log: str, model: str | None = None, models_dir: str | None = None, site=None,
                   hardware=None) -> LogCalibration:
    try:
        figs = parse_vllm_log(text)
    except ValueError as err:
        return invalid(log, str(err), "vllm")
    rel, rules_note = releases.closest(figs.vllm_version)
    notes: list[str] = []
    assumed: list[str] = []
    if rules_note:
        assumed.append(f"vLLM {rel.line} rules ({rules_note})")
    if figs.engine_generation == "V0":
        notes.append("a V0-engine log (worker/worker.py budget, # GPU blocks): kvplan's vLLM rules are the v1 engine's")
    if figs.runs > 1:
        notes.append(f"the file holds {figs.runs} start-ups; the one with the most figures was read")
    if figs.refused_at_startup:
        notes.append("vLLM refused to start: the free memory at start-up was below the memory asked for")
    total = figs.total_memory_gib if figs.total_memory_gib is not None else figs.startup_total_gib
    gpu_assumed: tuple[str, ...] = ()
    if total is not None or hardware is None:
        hardware, hw_notes = gpu_from_log(total)
        notes += hw_notes
        gpu_assumed = gpu_assumption(hw_notes)
    base = dict(log=log, engine="vllm", model_id=figs.model, engine_version=figs.vllm_version, rules=rel.line,
                gpu=hardware.name if hardware else None, read=_read_notes(text, figs))
    try:
        spec = resolve_log_model(figs.model, model=model, models_dir=models_dir)
    except KvplanError as err:
        tp, pp = figs.tensor_parallel_size, figs.pipeline_parallel_size
        return LogCalibration(**base, model=None, tp=tp, pp=pp, max_model_len=figs.max_model_len, status=CANNOT_JUDGE,
                              reason=f"cannot describe the log's model: {err.one_line()}", notes=tuple(notes),
                              assumed=tuple(assumed) + tuple(_layout_assumptions(figs)))

    tp, pp, layout_assumed, layout_notes = _layout(figs, spec, hardware, rel.line)
    assumed += layout_assumed
    notes += layout_notes
    max_len = figs.max_model_len
    len_assumed: tuple[str, ...] = ()
    if max_len is None:
        max_len = spec.max_context or 8192
        len_assumed = (f"max_model_len {max_len:,} (the model's; the log does not show it)",)
        assumed += len_assumed
    kv_assumed: tuple[str, ...] = ()
    if figs.kv_cache_dtype is None:
        kv_assumed = ("KV cache dtype auto (the log does not show it)",)
        assumed += kv_assumed
    base.update(tp=tp, pp=pp, max_model_len=max_len)
    req, req_notes = request_from_log(figs, spec, hardware, rules=rel.line, tp=tp, pp=pp, max_model_len=max_len)
    notes += req_notes
    rules_assumed = tuple(a for a in assumed if a.startswith("vLLM ")) + kv_assumed
    tp_assumed = tuple(a for a in layout_assumed)
    try:
        modelled = vllm.estimate(req) if hardware else None
        pool_base = given_pool(vllm.estimate, req, GIB)
    except KvplanError as err:
        return LogCalibration(**base, model=spec.name, status=CANNOT_JUDGE, reason=f"kvplan cannot model it: "
                              f"{err.one_line()}", notes=tuple(notes), assumed=tuple(assumed))

    w = figs.binding_worker()
    figures: list[Figure] = []
    modelled_assumed = rules_assumed + tp_assumed + len_assumed + gpu_assumed
    site_obs = None
    error_pct = error_gib = None
    if modelled is not None:
        error_pct, error_gib, site_obs = _modelled_figures(figs, w, modelled, tp, pp, figures, notes, modelled_assumed)
    figures += _pool_figures(figs, req, pool_base, w, rules_assumed=rules_assumed, tp_assumed=tp_assumed,
                             len_assumed=len_assumed)
    status, reason = verdict(figures, tuple(assumed), described=True)
    if modelled is not None:
        base["read"] = base["read"] + _defaults_read(figs, rel, modelled)
    return LogCalibration(**base, model=spec.name, status=status, reason=reason, figures=tuple(figures),
                          available_error_percent=error_pct, available_error_gib=error_gib, assumed=tuple(assumed),
                          notes=tuple(notes), site=site_obs)


def _modelled_figures(figs, w, modelled, tp: int, pp: int, figures: list[Figure], notes: list[str],
                      assumed: tuple[str, ...]):
    """The modelled budget's terms, KV memory, blocks, tokens and concurrency against the logged ones (figures
    appended); (the KV memory's error in percent and in GiB, each None where the log has no figure, the site
    observation)."""
    error_pct = error_gib = None
    mb = _binding_budget(modelled)
    band = band_of(modelled)
    avail = min(x.available_kv_bytes for x in modelled.workers) if modelled.workers else modelled.available_kv_bytes
    if w is not None and mb is not None:
        figures += [
            memory_figure("weights (\"Model loading took\")", w.weights_gib, mb.weights_bytes,
                          assumed=assumed),
            memory_figure("activation peak", w.activation_peak_gib, mb.activation_peak_bytes, assumed=assumed),
            memory_figure("non-torch memory", w.non_torch_gib,
                          mb.non_torch_bytes if w.non_torch_gib is not None else None, assumed=assumed),
            memory_figure("CUDA graph estimate", w.cuda_graph_estimate_gib, mb.cuda_graph_bytes,
                          assumed=assumed),
        ]
    logged_avail = w.available_kv_gib if w is not None else None
    figures.append(memory_figure("available KV cache memory (modelled)", logged_avail, avail, band=band,
                                 assumed=assumed))
    if logged_avail is not None and avail is not None:
        error_gib = round(avail / GIB - float(logged_avail), 3)
        if logged_avail > 0:
            error_pct = abs(avail - float(logged_avail) * GIB) / (float(logged_avail) * GIB) * 100
        else:
            notes.append(f"the logged KV memory is {logged_avail} GiB (not positive): left out of the mean error; "
                         f"kvplan is {error_gib:+.2f} GiB off")
    figures += [
        count_figure("num_gpu_blocks (modelled)", figs.num_gpu_blocks, modelled.num_gpu_blocks, judged=False,
                     basis=MODELLED, assumed=assumed),
        count_figure("GPU KV cache size, tokens (modelled)", figs.kv_cache_tokens, modelled.kv_cache_tokens,
                     judged=False, basis=MODELLED, assumed=assumed),
        ratio_figure("maximum concurrency (modelled)", figs.max_concurrency, modelled.max_concurrency, judged=False,
                     basis=MODELLED, assumed=assumed),
    ]
    return error_pct, error_gib, _site_observation(figs, w, mb, modelled, tp, pp, avail)


def _binding_budget(modelled):
    """The budget of the worker that sizes the pool (the last stage under PP: the sampler's peak)."""
    if not modelled.workers:
        return None
    binding = min(modelled.workers, key=lambda x: (x.num_blocks, x.stage))  # as engine.py picks it
    return binding.budget


def _layout_assumptions(figs) -> list[str]:
    out = []
    if figs.tensor_parallel_size is None:
        out.append("TP not stated" + (f" (worker labels show at least {figs.tp_at_least})" if figs.tp_at_least else ""))
    if figs.pipeline_parallel_size is None:
        out.append("PP not stated")
    return out


def _layout(figs, spec, hardware, rules: str) -> tuple[int, int, list[str], list[str]]:
    """(tp, pp, assumptions, notes): the log's TP and PP, else TP read off the weights per GPU when exactly one TP
    gives them, else the worker labels' lower bound (or 1), said as assumed."""
    assumed: list[str] = []
    notes: list[str] = []
    for conflict in figs.layout_conflicts:
        assumed.append(f"the log's sources disagree: {conflict}")
    pp = figs.pipeline_parallel_size
    pp_told = pp is not None
    if pp is None:
        pp = figs.pp_at_least or 1
    tp = figs.tensor_parallel_size
    if tp is not None:
        return tp, pp, assumed + ([] if pp_told else [f"PP {pp} (not stated)"]), notes
    from_weights = _tp_from_weights(figs, spec, hardware, rules, pp)
    if from_weights is not None and (figs.tp_at_least is None or from_weights >= figs.tp_at_least):
        notes.append(f"TP {from_weights} read off the weights per GPU ({figs.weights_gib} GiB): no other TP gives them")
        return from_weights, pp, assumed + ([] if pp_told else [f"PP {pp} (not stated)"]), notes
    tp = figs.tp_at_least or 1
    why = f"worker labels show ranks up to {tp - 1}" if figs.tp_at_least else "not stated"
    assumed.append(f"TP {tp} ({why})")
    if not pp_told:
        assumed.append(f"PP {pp} (not stated)")
    return tp, pp, assumed, notes


def _tp_from_weights(figs, spec, hardware, rules: str, pp: int) -> int | None:
    if figs.weights_gib is None or figs.weights_gib <= 0:
        return None
    req, _ = request_from_log(figs, spec, hardware, rules=rules, tp=1, pp=pp, max_model_len=figs.max_model_len)
    act = dtype(req.spec.dtype)
    hits = []
    for tp in TP_CANDIDATES:
        try:
            per_gpu = max(budget.stage_weight_bytes(req.spec, req.weight_fmt, act, tp, pp))
        except KvplanError:
            return None
        if abs(Decimal(per_gpu) / GIB - figs.weights_gib) <= WEIGHTS_TP_TOLERANCE * figs.weights_gib:
            hits.append(tp)
    return hits[0] if len(hits) == 1 else None


def _pool_figures(figs, req, pool_base, w, *, rules_assumed, tp_assumed, len_assumed) -> list[Figure]:
    """The pool figures, given the pool the log states (see the module docstring)."""
    out: list[Figure] = []
    stopped = _pool_after_no_memory(figs, w)
    if stopped is not None:
        out.append(stopped)
    bpb = pool_base.bytes_per_block
    if not bpb:
        return out
    memory_bytes = None  # (low, high) of the binding worker's KV memory, exact where printed in bytes
    if w is not None and w.available_kv_bytes is not None:
        memory_bytes = (w.available_kv_bytes, w.available_kv_bytes + 1)
    elif w is not None and w.available_kv_gib is not None and w.available_kv_gib > 0:
        memory_bytes = gib_bounds(w.available_kv_gib)

    def at(blocks: int):
        return given_pool(vllm.estimate, req, blocks * bpb)

    memory_assumed = rules_assumed + tp_assumed
    if figs.num_gpu_blocks is not None:
        candidates, anchor_assumed, anchor = range(figs.num_gpu_blocks, figs.num_gpu_blocks + 1), rules_assumed, "blocks"
    elif memory_bytes is not None:
        lo, hi = memory_bytes
        candidates, anchor_assumed, anchor = range(lo // bpb, (hi - 1) // bpb + 1), memory_assumed, "memory"
    elif figs.kv_cache_tokens is not None:
        candidates, anchor_assumed, anchor = _blocks_for_tokens(figs.kv_cache_tokens, at), rules_assumed, "tokens"
    else:
        return out
    tag = {"blocks": "logged blocks", "memory": "logged KV memory", "tokens": "logged tokens"}[anchor]
    if figs.num_gpu_blocks is not None and memory_bytes is not None:
        lo, hi = memory_bytes
        out.append(count_figure("num_gpu_blocks (logged KV memory)", figs.num_gpu_blocks,
                                range(lo // bpb, (hi - 1) // bpb + 1), assumed=memory_assumed))
    if anchor == "tokens" and not len(candidates):
        out.append(Figure("GPU KV cache size, tokens (logged tokens)", "count", f"{figs.kv_cache_tokens:,}", "none",
                          "no block count gives it", False, LOGGED_POOL, rules_assumed))
        return out
    picks = list(candidates) if len(candidates) <= MAX_CANDIDATES else [candidates[0], candidates[-1]]
    if len(candidates) > MAX_CANDIDATES and figs.kv_cache_tokens is not None:
        # a wide interval (a large pool printed to 0.01 GiB: hundreds of block counts): its ends alone would call a
        # logged token count between them a mismatch. Tokens never fall as blocks grow, so bisect for the block count
        # that gives the logged tokens and judge that one too.
        low, high = 0, len(candidates) - 1
        while low < high:
            mid = (low + high) // 2
            if at(candidates[mid]).kv_cache_tokens < figs.kv_cache_tokens:
                low = mid + 1
            else:
                high = mid
        picks.insert(1, candidates[low])
    results = [at(b) for b in picks]
    if anchor != "tokens" and figs.kv_cache_tokens is not None:
        out.append(count_figure(f"GPU KV cache size, tokens ({tag})", figs.kv_cache_tokens,
                                sorted({r.kv_cache_tokens for r in results}), assumed=anchor_assumed))
    if figs.max_concurrency is not None:
        out.append(ratio_figure(f"maximum concurrency ({tag})", figs.max_concurrency,
                                sorted({r.max_concurrency for r in results}), assumed=anchor_assumed + len_assumed))
    if figs.tokens_capacity is not None:
        # V0's fit check (worker/worker.py raise_if_cache_size_invalid): block_size x (num_gpu_blocks // pp)
        out.append(count_figure(f"tokens the KV cache stores ({tag})", figs.tokens_capacity,
                                sorted({r.block_size * (b // req.pp) for r, b in zip(results, picks)}),
                                assumed=anchor_assumed))
    if figs.estimated_max_model_len is not None and memory_bytes is not None:
        at_low = vllm.estimate(dataclasses.replace(req, kv_cache_memory=memory_bytes[0], hardware=None))
        out.append(count_figure("estimated maximum model length (logged KV memory)", figs.estimated_max_model_len,
                                at_low.estimated_max_model_len, assumed=memory_assumed + len_assumed))
    if figs.padding_layers is not None or pool_base.padding_layers:
        out.append(count_figure("padding layers", figs.padding_layers or 0, pool_base.padding_layers,
                                assumed=rules_assumed))
    return out


def _pool_after_no_memory(figs, w) -> Figure | None:
    """A pool printed after a KV memory that is not positive: no vLLM release builds one. v1 raises "No available
    memory for the cache blocks" when available_memory <= 0, before it logs "GPU KV cache size" (0.10.0 ... 0.33.0,
    v1/core/kv_cache_utils.py check_enough_kv_cache_memory / _check_enough_kv_cache_memory); V0 clamps the block
    count to 0 and raises the same (worker/worker.py raise_if_cache_size_invalid). So the log contradicts itself:
    a mismatch that rests on no assumption, never a pass on the pool figures alone."""
    if w is None:
        return None
    memory = w.available_kv_bytes if w.available_kv_bytes is not None else w.available_kv_gib
    if memory is None or memory > 0:
        return None
    if figs.num_gpu_blocks is not None:
        printed = f"{figs.num_gpu_blocks:,} blocks"
    elif figs.kv_cache_tokens is not None:
        printed = f"{figs.kv_cache_tokens:,} tokens"
    elif figs.tokens_capacity is not None:
        printed = f"{figs.tokens_capacity:,} tokens"
    elif figs.max_concurrency is not None:
        printed = f"{figs.max_concurrency:.2f}x"
    else:
        return None  # the real case: vLLM stopped after the line, and the log shows no pool
    shown = f"{w.available_kv_gib} GiB" if w.available_kv_gib is not None else f"{w.available_kv_bytes:,} B"
    return Figure(f"KV pool after the logged KV memory ({shown})", "count", printed, "none",
                  "vLLM stops: No available memory for the cache blocks", False, LOGGED_POOL)


def _blocks_for_tokens(tokens: int, at) -> range:
    """The block counts whose logged "GPU KV cache size" is `tokens` (monotone in the blocks: two searches)."""
    first = at(1)
    per_block = max(first.kv_cache_tokens or 0, 1)
    guess = max(tokens // per_block, 1)
    lo, hi = max(guess // 4, 1), guess * 4 + 8
    while lo > 1 and (at(lo).kv_cache_tokens or 0) >= tokens:
        lo = max(lo // 2, 1)
    while (at(hi).kv_cache_tokens or 0) <= tokens:
        hi *= 2

    def search(pred) -> int:
        a, b = lo, hi  # pred(a) false, pred(b) true
        while b - a > 1:
            mid = (a + b) // 2
            a, b = (a, mid) if pred(mid) else (mid, b)
        return b

    start = search(lambda n: (at(n).kv_cache_tokens or 0) >= tokens)
    stop = search(lambda n: (at(n).kv_cache_tokens or 0) > tokens)
    return range(start, stop) if (at(start).kv_cache_tokens or 0) == tokens else range(start, start)


def _site_observation(figs, w, mb, modelled, tp, pp, avail) -> SiteObservation | None:
    if w is None:
        return None

    def b(v):
        return None if v is None else int(v * GIB)

    in_use = None
    free, total = w.init_free_memory_gib, w.total_memory_gib
    if free is not None and total is not None and mb is not None:
        in_use = max(int((total - free) * GIB) - mb.context_bytes, 0)
    graphs = w.cuda_graph_estimate_gib if w.cuda_graph_estimate_gib is not None else None
    return SiteObservation(
        engine="vllm", tp=tp, pp=pp, non_torch_bytes=b(w.non_torch_gib), activation_peak_bytes=b(w.activation_peak_gib),
        modelled_activation_peak_bytes=mb.activation_peak_bytes if mb else None, cuda_graph_bytes=b(graphs),
        memory_in_use_bytes=in_use,
        available_kv_bytes=w.available_kv_bytes if w.available_kv_bytes is not None else b(w.available_kv_gib),
        modelled_available_kv_bytes=avail, modelled_non_torch_bytes=mb.non_torch_bytes if mb else None,
        modelled_cuda_graph_bytes=mb.cuda_graph_bytes if mb else None,
        cuda_graph_subtracted=mb.cuda_graph_subtracted if mb else None, weights_bytes=b(w.weights_gib),
        modelled_weights_bytes=mb.weights_bytes if mb else None)


def _defaults_read(figs, rel, modelled) -> tuple[str, ...]:
    """The launch settings the modelled figures took from vLLM's defaults because the log does not print them: said,
    so that a figure resting on a default is not read as one the log gave."""
    out = []
    if figs.gpu_memory_utilization is None:
        out.append(f"gpu_memory_utilization {float(rel.default_gpu_util):g}: vLLM {rel.line}'s default (the log does "
                   "not print it)")
    if figs.max_num_seqs is None and modelled.max_num_seqs:
        out.append(f"max_num_seqs {modelled.max_num_seqs:,}: vLLM {rel.line}'s default for this GPU (the log does not "
                   "print it)")
    return tuple(out)


def _read_notes(text: str, figs) -> tuple[str, ...]:
    """What the reader had to undo or infer in this paste (shown under the table)."""
    out = list(paste_traits(text))
    if figs.tp_source:
        out.append(f"TP from the {figs.tp_source}")
    if figs.pp_source:
        out.append(f"PP from the {figs.pp_source}")
    if figs.max_model_len_source and figs.max_model_len_source != "engine config":
        out.append(f"max_model_len from the {figs.max_model_len_source}")
    if len({w.pid for w in figs.workers}) > 1:
        out.append(f"{len(figs.workers)} workers; judged by the one with the least KV memory")
    if len(figs.capacity_reports) > 1:
        out.append(f"{len(figs.capacity_reports)} capacity reports; the one with the fewest tokens binds the pool")
    return tuple(out)
