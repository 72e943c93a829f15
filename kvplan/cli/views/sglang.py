"""The SGLang view of `kvplan estimate --engine sglang`: every figure of the estimate as a table.

The result is the engine's own (engines/sglang/engine.py SglangEstimate), read by its field names as the registry
hands it back: the view never imports the engine's modules (docs/architecture.md)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kvplan.cli.views.common import (band_rows, budget_head, in_use_row, total_row, verdict_row, view_end,
                                     view_start)


def tables(result: Any) -> list:
    from kvplan.cli.render import size
    from kvplan.core.units import format_tokens

    r = result
    out = view_start(r, f"{r.model} · SGLang {r.sglang_version} · context {format_tokens(r.seq)} · batch {r.batch} · "
                        f"KV {r.kv_dtype} · page {r.page_size}")
    t = out[1]
    t.add_row("cell size (bytes per token, one GPU)", size(r.cell_size))
    if r.mamba_state_per_request_bytes:
        t.add_row("Mamba state per request (SSM in float32)", size(r.mamba_state_per_request_bytes))
    if r.budget_source == "model" and r.free_before_load_bytes is not None:
        budget_head(t, r, "P and A modelled, SGLang measures them")
        reserve = f", reserve {r.reserved_mib:,.0f} MiB" if r.reserved_mib is not None else ""
        t.add_row(f"  mem_fraction_static (GPU {r.gpu_mem_mib:,} MiB{reserve})", r.mem_fraction_static or "—")
        total_row(t, r)
        t.add_row("  − CUDA context (measured)", size(r.cuda_context_bytes))
        if r.dist_init_bytes:
            t.add_row("  − NCCL and all-reduce at init (measured)", size(r.dist_init_bytes))
        in_use_row(t, r)
        t.add_row("  P: free before loading", size(r.free_before_load_bytes))
        t.add_row("  − weights", size(r.weights_per_gpu_bytes))
        t.add_row("  A: free after loading", size(r.free_after_load_bytes))
        kept = None
        if r.mem_fraction_static is not None:
            kept = r.free_before_load_bytes * (1 - Fraction(r.mem_fraction_static))
            kept = kept.numerator // kept.denominator
        t.add_row("  − P × (1 − mem_fraction_static): activations, CUDA graphs", size(kept))
    if r.available_kv_bytes is not None:
        t.add_row("  = KV pool budget" + (" (after the Mamba pool)" if r.max_mamba_cache_size is not None else ""),
                  size(r.available_kv_bytes))
    band_rows(t, r)
    if r.max_total_num_tokens is not None:
        t.add_section()
        t.add_row("max_total_num_tokens", f"{r.max_total_num_tokens:,}")
        if r.swa_tokens is not None:
            t.add_row("sliding-window pool tokens", f"{r.swa_tokens:,}")
        if r.max_mamba_cache_size is not None:
            t.add_row("max_mamba_cache_size", f"{r.max_mamba_cache_size:,}")
        t.add_row("max_running_requests", f"{r.max_running_requests:,}" if r.max_running_requests else "—")
        t.add_section()
        if r.fits:
            verdict = f"fits: holds {r.batch} request{'s' if r.batch > 1 else ''} of {format_tokens(r.seq)}"
        elif r.starts:
            verdict = f"does NOT fit: holds {r.max_batch} of the {r.batch} requests at once"
        elif r.estimated_max_model_len is not None:
            verdict = f"does NOT fit {format_tokens(r.seq)}: starts with requests capped shorter"
        else:
            verdict = "does NOT fit"
        verdict_row(t, verdict, r.fits)
        if r.estimated_max_model_len is not None:
            t.add_row("  longest request SGLang admits", format_tokens(r.estimated_max_model_len))
        t.add_row(f"requests of {format_tokens(r.seq)} held at once", f"{r.max_batch:,}")
    if r.features is not None:
        t.add_section()
        _feature_rows(t, r)
    return view_end(r, out)


def _feature_rows(t, r: Any) -> None:
    """The terms of the launch's modelled SGLang options (engines/sglang/features.py)."""
    from kvplan.cli.plain import Styled

    from kvplan.cli.render import size

    f = r.features
    t.add_row(Styled("launch options (docs/engines/features/)", style="bold"), "")
    s = f.speculative
    if s is not None:
        t.add_row(f"  speculative decoding: {s.algorithm}, {s.num_steps} steps, top-k {s.eagle_topk}", s.draft)
        t.add_row("    draft weights per GPU (+ its own embedding/head while the pool is sized)",
                  f"{size(s.draft_weights_per_gpu_bytes)} + {size(s.draft_duplicates_per_gpu_bytes)}")
        t.add_row("    draft share of the cell", f"{s.draft_cell_bytes:,} B of {r.cell_size:,} B")
    a = f.dp_attention
    if a is not None:
        t.add_row(f"  attention data parallelism: {a.attn_dp_size} workers, attention TP {a.attn_tp_size}",
                  size(a.weights_added_per_gpu_bytes) + " more weights per GPU")
        if a.deployment_max_batch is not None:
            t.add_row("    requests held at once, all workers", f"{a.deployment_max_batch:,}")
    lo = f.lora
    if lo is not None:
        t.add_row(f"  LoRA slots: {lo.slots} x rank {lo.rank} ({', '.join(m.name for m in lo.modules)})",
                  size(lo.gpu_bytes_per_rank) + " per GPU")
    h = f.hicache
    if h is not None:
        t.add_row("  HiCache host tier, one rank" + (" (at most)" if h.auto_sized else ""),
                  f"{h.host_tokens:,} tokens, {size(h.host_bytes_per_rank)}")
        if h.ranks > 1:
            t.add_row(f"    host memory, {h.ranks} ranks", size(h.host_bytes))
    d = f.disaggregation
    if d is not None:
        t.add_row(f"  disaggregation: {d.mode} server ({d.transfer_backend})",
                  f"{d.bytes_per_token_per_rank:,} B per prompt token per rank")
        if d.extra_slots:
            t.add_row("    extra request slots for requests being received",
                      f"{d.extra_slots}" + (f" ({size(d.extra_slots_bytes)})" if d.extra_slots_bytes is not None else ""))
        if d.link is not None:
            t.add_row(f"    at {d.link.rate:g} req/s x {d.link.prompt_tokens:,} prompt tokens",
                      f"{d.link.bytes_per_s_per_gpu / 1e9:,.2f} GB/s per GPU")
            if d.link.utilisation is not None:
                t.add_row(f"    of the link ({d.link.link})", f"{d.link.utilisation * 100:.1f}%")
