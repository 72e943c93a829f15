"""Check kvplan's TensorRT-LLM model against a real TensorRT-LLM start-up log, figure by figure. Pure (apart from
reading the model files it is pointed at). The bases and verdicts are engines/logcheck.py's.

- consistency: the pool's tokens are its primary blocks x tokens per block;
- given the logged pool: "Allocated X GiB for max tokens in paged KV cache (N)" is N x kvplan's bytes per token
  (T2: the model, TP, KV dtype), printed to 0.01 GiB; 0.5-0.8's "Allocate B bytes" and "Using N tokens" give
  the bytes per token exactly;
- given the logged budget (PyTorch backend): "available KV cache memory when calculating max tokens: K GiB" over
  the estimator's bytes per token (T3) is "Estimated max tokens in KV cache";
- modelled, when the GPU is known ("device total memory", "total: T GiB", --gpu, --gpu-mem): kvplan's pool from
  the GPU and the flags.

The release line and backend are the log's own (kvplan/engines/trtllm/releases.py closest: a log older or newer
than the lines kvplan mirrors, or without a version, is compared under the nearest rules and said to be; the
backend from the lines it prints, else the release's default, said as assumed: never a pass).
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from kvplan.core.errors import KvplanError
from kvplan.engines.logcheck import (CONSISTENCY, GIB, LOGGED_BUDGET, LOGGED_POOL, MODELLED, Figure, LogCalibration,
                                     HALF, SiteObservation, band_of, count_figure, given_pool, invalid, memory_figure,
                                     verdict)
from kvplan.engines.logtext import paste_traits
from kvplan.engines.trtllm.log import parse_trtllm_log
from kvplan.engines.runtime.logs import describe_log_model, gpu_assumption, gpu_from_log
from kvplan.engines.trtllm import releases
from kvplan.core import dtypes
from kvplan.engines.api import EngineRequest
from kvplan.engines import trtllm

_KV_DTYPES = {"fp8": "fp8", "FP8": "fp8", "auto": "auto", "bfloat16": "bf16", "float16": "fp16", "BF16": "bf16",
              "FP16": "fp16"}


def calibrate_text(text: str, *, log: str, model: str | None = None, models_dir: str | None = None, site=None,
                   hardware=None) -> LogCalibration:
    try:
        figs = parse_trtllm_log(text)
    except ValueError as err:
        return invalid(log, str(err), "trtllm")
    notes: list[str] = []
    gpu_assumed: tuple[str, ...] = ()
    tp, pp, rel, backend, read, assumed = _layout_read(figs, text)
    if hardware is None and figs.total_gib is not None:
        # TensorRT-LLM's totals come a little under the runtime capacity ("79.10", "79.18" on an H100's 79.19)
        hardware, hw_notes = gpu_from_log(figs.total_gib, tolerance_gib=Decimal("0.15"))
        notes += hw_notes
        gpu_assumed = gpu_assumption(hw_notes)
    base = dict(log=log, engine="trtllm", model_id=figs.model, engine_version=figs.version, rules=f"{rel.line} {backend}",
                gpu=hardware.name if hardware else None, tp=tp, pp=pp, max_model_len=figs.max_seq_len,
                read=tuple(read))
    figures: list[Figure] = []
    tpb = figs.tokens_per_block
    if figs.pool_tokens is not None and figs.primary_blocks is not None and tpb:
        figures.append(count_figure("pool tokens (primary blocks x tokens per block)", figs.pool_tokens,
                                    figs.primary_blocks * tpb, basis=CONSISTENCY))
    spec, why_not = describe_log_model(figs.model, model=model, models_dir=models_dir)
    obs = None
    if spec is not None:
        req = _request(figs, spec, tp, pp, hardware, rel.version, backend)
        per_token_req = req
        if backend == releases.TENSORRT and rel.engine_read is None:
            # the budget of a runtime before ENGINE_FROM is not read (refused below, end to end); its bytes per token
            # are the model's layout, the same sum in 0.5's GptSession (kvCacheManager.h calculateCacheSizePerToken:
            # layers x 2 x KV heads x head size) as in the releases read: the logged pool is checked against them
            per_token_req = dataclasses.replace(req, engine_version=releases.ENGINE_FROM)
        try:
            pool = given_pool(trtllm.estimate, per_token_req, GIB)
        except KvplanError as err:
            return LogCalibration(**base, model=spec.name, status="cannot judge",
                                  reason=f"kvplan cannot model it: {err.one_line()}", figures=tuple(figures),
                                  assumed=tuple(assumed), notes=tuple(notes))
        layout_assumed = tuple(assumed)
        modelled_assumed = layout_assumed + gpu_assumed
        bpt, bpt3 = pool.bytes_per_token, pool.estimator_bytes_per_token
        if figs.pool_tokens is not None and figs.pool_gib is not None:
            fig = memory_figure("pool memory (logged tokens x bytes per token)", figs.pool_gib, figs.pool_tokens * bpt,
                                basis=LOGGED_POOL, assumed=layout_assumed)
            figures.append(dataclasses.replace(fig, match=abs(Decimal(figs.pool_tokens * bpt) / GIB - figs.pool_gib)
                                               <= HALF))
        if figs.kv_cache_bytes is not None and figs.using_tokens is not None:
            figures.append(count_figure("tokens in the paged KV cache (logged bytes / bytes per token)",
                                        figs.using_tokens, figs.kv_cache_bytes // bpt, basis=LOGGED_POOL,
                                        assumed=layout_assumed))
        if figs.kv_budget_gib is not None and figs.estimated_max_tokens is not None:
            lo, hi = (int((figs.kv_budget_gib - HALF) * GIB), int((figs.kv_budget_gib + HALF) * GIB))
            figures.append(count_figure("estimated max tokens (logged budget / estimator bytes per token)",
                                        figs.estimated_max_tokens, range(lo // bpt3, hi // bpt3 + 1),
                                        basis=LOGGED_BUDGET, assumed=layout_assumed))
        if hardware is not None:
            obs = _end_to_end(figs, req, tp, pp, figures, notes, modelled_assumed)
        else:
            notes.append("the GPU is not known (give --gpu or --gpu-mem): nothing end to end is modelled")
    status, reason = verdict(figures, tuple(assumed), described=spec is not None, why_not=why_not)
    return LogCalibration(**base, model=spec.name if spec else None, status=status, reason=reason,
                          figures=tuple(figures), assumed=tuple(assumed), notes=tuple(notes), site=obs)


def _layout_read(figs, text: str):
    """(TP, PP, the release's rules, the backend, what was read from the paste, what was assumed) of the log."""
    assumed: list[str] = []
    read = list(paste_traits(text))
    if figs.tp_source:
        read.append(f"TP from the {figs.tp_source}")
    if figs.backend:
        read.append(f"{figs.backend} backend (from the lines it prints)")
    tp = figs.tp_size
    if tp is None:
        tp = figs.tp_at_least or 1
        assumed.append(f"TP {tp} (" + (f"the log shows ranks up to {tp - 1}" if figs.tp_at_least else "not stated") + ")")
    pp = figs.pp_size or 1
    if figs.pp_size is None and tp > 1:
        assumed.append("PP 1 (not stated)")

    rel, note = releases.closest(figs.version)
    if not figs.version and (figs.using_tokens is not None or figs.kv_cache_bytes is not None):
        # "Using N tokens in paged KV cache" / "Allocate N bytes for k/v cache": the closed runtime of the releases
        # before releases.ENGINE_FROM (0.5, 0.8 logs), whose engine-backend sizing kvplan refuses (releases.py)
        rel = releases.release(releases.OLDEST)
        note = f"its lines are those of a runtime before {releases.ENGINE_FROM}; {releases.OLDEST} rules applied"
    if note:
        assumed.append(f"TensorRT-LLM {rel.line} rules ({note})")
    backend = figs.backend
    if backend is None:
        backend = rel.default_backend
        assumed.append(f"the {backend} backend (the release's default; the log's lines do not show which)")
    if figs.kv_dtype is None:
        assumed.append("KV cache dtype auto (the log does not print it; a checkpoint with an FP8 KV cache stores fp8)")
    return tp, pp, rel, backend, read, assumed


def _end_to_end(figs, req, tp: int, pp: int, figures: list[Figure], notes: list[str], assumed: tuple[str, ...]):
    """The modelled pool, activations and memory outside torch against the logged ones (figures appended), and the
    site observation; None when kvplan cannot model the deployment (a note says why)."""
    try:
        modelled = trtllm.estimate(req, search_max_seq=False)
        band = band_of(modelled)
        figures.append(memory_figure("KV pool memory (modelled)", figs.pool_gib, modelled.available_kv_bytes,
                                     band=band, assumed=assumed))
        figures.append(count_figure("pool tokens (modelled)", figs.pool_tokens, modelled.kv_cache_tokens,
                                    judged=False, basis=MODELLED, assumed=assumed))
        figures.append(memory_figure("activation peak (modelled)", figs.activation_gib,
                                     modelled.activation_peak_bytes, assumed=assumed))
        figures.append(memory_figure("memory outside torch (modelled)", figs.outside_torch_gib,
                                     modelled.non_torch_bytes, assumed=assumed))
        return _observation(figs, tp, pp, modelled)
    except KvplanError as err:
        notes.append(f"kvplan cannot model it end to end: {err.one_line()}")
        return None


def _request(figs, spec, tp, pp, hardware, version, backend):
    from fractions import Fraction

    kv = _KV_DTYPES.get(figs.kv_dtype or "auto", "auto")
    fp8 = (figs.quantization or "").upper() == "FP8" or (figs.model or "").lower().endswith("-fp8")
    weight_fmt = dtypes.weight_format("fp8") if fp8 and spec.weights_bytes is None else None
    util = Fraction(figs.free_fraction).limit_denominator(1000) if figs.free_fraction else None
    options = [("backend", backend)]
    if backend == "tensorrt":
        # the engine's build settings, as its runtime printed them (TRTGptModel maxBatchSize / maxNumTokens)
        options += [(k, str(v)) for k, v in (("max_batch_size", figs.max_batch_size),
                                             ("max_num_tokens", figs.max_num_tokens)) if v is not None]
        if figs.execution_context_mib is not None:  # the engine's activations, as its runtime allocated them
            options.append(("activation_bytes", f"{figs.execution_context_mib}MiB"))
    return EngineRequest(spec=spec, seq=figs.max_seq_len or spec.max_context or 8192, batch=1, kv_dtype=kv,
                         weight_fmt=weight_fmt, tp=tp, pp=pp, hardware=hardware, gpu_util=util,
                         block_size=figs.tokens_per_block, max_num_seqs=figs.max_batch_size,
                         max_num_batched_tokens=figs.max_num_tokens, engine_version=version,
                         engine_options=tuple(options))


def _observation(figs, tp, pp, modelled) -> SiteObservation:
    def b(v):
        return None if v is None else int(v * GIB)

    fraction = float(figs.free_fraction) if figs.free_fraction else None
    return SiteObservation(engine="trtllm", tp=tp, pp=pp, non_torch_bytes=b(figs.outside_torch_gib),
                           activation_peak_bytes=b(figs.activation_gib),
                           modelled_activation_peak_bytes=modelled.activation_peak_bytes,
                           available_kv_bytes=b(figs.kv_budget_gib),
                           modelled_available_kv_bytes=modelled.kv_budget_bytes,
                           modelled_non_torch_bytes=modelled.non_torch_bytes, memory_fraction=fraction,
                           term_share=fraction)
