"""The static engine's view of `kvplan estimate`: cache, weights and the GPU verdict in one table.

The result is the engine's own (engines/static/ Estimate), read by its field names as the registry
hands it back: the view never imports the engine's modules (docs/architecture.md)."""

from __future__ import annotations

import os
from typing import Any

from kvplan.cli.render import size
from kvplan.cli.views.common import verdict_row
from kvplan.core.units import format_tokens


def tables(est: Any) -> list:
    """The human view of an Estimate: one header line, then cache, weights and the GPU verdict in one table."""
    from kvplan.cli.plain import Sheet, Styled

    header = f"{est.model} · {format_tokens(est.seq)} tokens × {est.batch} sequence{'s' if est.batch > 1 else ''} · KV {est.kv_dtype} · engine {est.engine}"
    if est.tp > 1 or est.pp > 1:
        header += f" · TP {est.tp} × PP {est.pp}"
    table = Sheet()
    if os.environ.get("KVPLAN_PLAIN"):
        table.box = None
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("KV cache per token", size(est.kv_bytes_per_token))
    table.add_row("KV cache per sequence", size(est.kv_bytes_per_sequence))
    if est.state_bytes:
        table.add_row("recurrent state per sequence", size(est.state_bytes_per_sequence))
    table.add_row(f"cache, {est.batch} sequence{'s' if est.batch > 1 else ''}", size(est.cache_bytes))
    table.add_row("parameters", "unknown (see the note)" if est.params is None else f"{est.params:,}")
    table.add_row(f"weights ({est.dtype})", size(est.weights_bytes))
    if est.per_gpu is not None:
        g = est.per_gpu
        table.add_section()
        where = f"{est.gpu or 'custom GPU'}" + (f", most loaded of {est.gpus}" if est.gpus > 1 else "")
        table.add_row(Styled(f"per GPU ({where})", style="bold"), "")
        table.add_row("  capacity", size(g.capacity_bytes))
        table.add_row(f"  kept back ({est.reserved_by})" if est.reserved_by else "  kept back", size(g.reserved_bytes))
        table.add_row("  weights", size(g.weights_bytes))
        table.add_row("  cache", size(g.cache_bytes))
        table.add_row("  left", Styled(size(g.free_bytes), style="" if g.free_bytes >= 0 else "red"))
        table.add_section()
        verdict_row(table, "fits" if est.fits else "does NOT fit", est.fits)
        table.add_row(f"most sequences of {format_tokens(est.seq)} tokens", f"{est.max_batch:,}" if est.max_batch is not None else "—")
        limit = f" (limit: {est.max_seq_limited_by})" if est.max_seq_limited_by and est.max_seq else ""
        table.add_row(f"longest context for {est.batch} sequence{'s' if est.batch > 1 else ''}",
                      (format_tokens(est.max_seq) + " tokens" + limit) if est.max_seq else "none fits")
    return [Styled(header, style="bold"), table]
