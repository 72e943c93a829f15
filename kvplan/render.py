"""Turning results into text for people (rich tables) and for machines (JSON).

The only module that formats numbers for people. JSON is the result dataclass itself
(dataclasses.asdict), never a second hand-built dict.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any

from kvplan.units import format_bytes, format_tokens


def to_json(result: Any) -> str:
    data = dataclasses.asdict(result) if dataclasses.is_dataclass(result) else result
    return json.dumps(data, indent=2, default=_json_default)


def _json_default(value: Any):
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def console(stderr: bool = False):
    from rich.console import Console

    width = int(os.environ.get("COLUMNS", "0") or 0) or None
    return Console(file=sys.stderr if stderr else sys.stdout, width=width, highlight=False, soft_wrap=False)


def size(n: int | None) -> str:
    """'12.50 GiB (13,421,772,800 B)': the exact bytes beside the readable figure."""
    if n is None:
        return "—"
    return f"{format_bytes(n)} ({n:,} B)" if abs(n) >= 1024 else f"{n:,} B"


def estimate_table(est) -> list:
    """The human view of an Estimate: the cache, the weights, then the GPU verdict."""
    from rich.table import Table
    from rich.text import Text

    header = f"{est.model} · seq {format_tokens(est.seq)} tokens × batch {est.batch} · KV {est.kv_dtype} · engine {est.engine}"
    if est.tp > 1 or est.pp > 1:
        header += f" · TP {est.tp} × PP {est.pp}"
    cache = Table(title=header, title_justify="left", show_header=True, header_style="bold")
    cache.add_column("quantity")
    cache.add_column("value", justify="right")
    cache.add_row("KV cache per token", size(est.kv_bytes_per_token))
    cache.add_row("KV cache per sequence", size(est.kv_bytes_per_sequence))
    if est.state_bytes:
        cache.add_row("recurrent state per sequence", size(est.state_bytes_per_sequence))
    cache.add_row(f"cache for {est.batch} sequence{'s' if est.batch > 1 else ''}", size(est.cache_bytes))
    cache.add_row("parameters", f"{est.params:,}")
    cache.add_row(f"weights ({est.dtype})", size(est.weights_bytes))
    parts: list = [cache]
    if est.per_gpu is not None:
        g = est.per_gpu
        gpu = Table(title=f"per GPU ({est.gpu or 'custom'}, {est.gpus} GPU{'s' if est.gpus > 1 else ''}, most loaded shown)",
                    title_justify="left", header_style="bold")
        gpu.add_column("quantity")
        gpu.add_column("value", justify="right")
        gpu.add_row("capacity", size(g.capacity_bytes))
        gpu.add_row("reserve (runtime overhead)", size(g.reserved_bytes))
        gpu.add_row("weights", size(g.weights_bytes))
        gpu.add_row("cache", size(g.cache_bytes))
        gpu.add_row("left", size(g.free_bytes), style=None if g.free_bytes >= 0 else "red")
        verdict = Text("fits" if est.fits else "does NOT fit", style="bold green" if est.fits else "bold red")
        gpu.add_row("verdict", verdict)
        gpu.add_row(f"most sequences of {format_tokens(est.seq)} tokens", f"{est.max_batch:,}" if est.max_batch is not None else "—")
        limit = f" (limited by {est.max_seq_limited_by})" if est.max_seq_limited_by and est.max_seq else ""
        gpu.add_row(f"longest context for {est.batch} sequence{'s' if est.batch > 1 else ''}",
                    (format_tokens(est.max_seq) + " tokens" + limit) if est.max_seq else "none fits")
        parts.append(gpu)
    return parts
