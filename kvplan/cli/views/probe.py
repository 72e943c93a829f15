"""The human view of a ProbeResult (rich tables). JSON is the dataclass itself (kvplan.core.io.to_json)."""

from __future__ import annotations

from kvplan.cli.render import figures_table, quantity_table, size
from kvplan.core.units import format_bytes, format_tokens


def _verdict(ok: bool):
    from rich.text import Text

    return Text("yes", style="green") if ok else Text("NO", style="red")


def _bold(text: str):
    from rich.text import Text

    return Text(text, style="bold")


def tables(result) -> list:
    out = []
    where = result.device_name if result.device_name and result.device_name != result.device else result.device
    header = (f"{result.model} · {result.layout} layout · seq {format_tokens(result.seq)} × batch {result.batch} · "
              f"KV {result.kv_dtype} · {where} · torch {result.torch_version}")
    if result.tp > 1 or result.pp > 1:
        header += f" · TP {result.tp} × PP {result.pp} · {result.world_size} process{'es' if result.world_size > 1 else ''}"
    if result.find_max is None:
        rows = [[g.label, str(g.layers), "\n".join(g.shapes), size(g.estimated_bytes), size(g.measured_bytes),
                 "yes" if g.match else "NO"] for g in result.groups]
        rows.append(["total", "", f"{sum(g.tensors for g in result.groups)} tensors", size(result.estimated_bytes),
                     size(result.measured_bytes), "yes" if result.match else "NO"])
        out.append(figures_table(header, ["group", "layers", "tensors", "estimated", "measured", "match"], rows,
                                 text=(0, 2, 5), styles=[None] * (len(rows) - 1) + ["bold"]))
        out.append(_device_table(result))
        if len(result.ranks) > 1:
            out.append(_ranks_table(result))
    else:
        out.append(_find_max_table(result, header))
    if result.bench is not None:
        out.append(_bench_table(result.bench))
    return out


def _device_table(result):
    rows = [
        ("tensor storage", sum(r.tensor_bytes for r in result.ranks), "sum of untyped_storage().nbytes()"),
        ("allocator requested", result.requested_delta_bytes, "CUDA requested_bytes: what the tensors asked for (the match)"),
        ("memory_allocated", result.allocated_delta_bytes, "rounded to 512 B; a block is not split when <= 1 MiB would remain"),
        ("memory_reserved", result.reserved_delta_bytes, "segments from cudaMalloc: 2 MiB small pool, large ones rounded to 2 MiB"),
        ("driver (mem_get_info)", result.driver_delta_bytes, "total - free as the driver sees it"),
        ("process RSS", result.rss_delta_bytes, "resident pages after every byte was written (/proc/self/statm)"),
    ]
    cells = [[name, size(value), meaning] for name, value, meaning in rows if value is not None]
    if result.whole_model_estimated_bytes != result.estimated_bytes:
        cells.append(["whole model (estimate)", size(result.whole_model_estimated_bytes),
                      "`kvplan estimate` cache_bytes, every rank"])
    return figures_table("what the device reports (deltas while the cache was held)", ["counter", "bytes", "meaning"],
                         cells, text=(0, 2))


def _ranks_table(result):
    rows = [[str(r.rank), str(r.stage), str(r.tp_rank), r.device, r.layers, size(r.estimated_bytes), size(r.measured_bytes),
             "yes" if r.match else "NO"] for r in result.ranks]
    return figures_table("per rank", ["rank", "stage", "tp rank", "device", "layers", "estimated", "measured", "match"],
                         rows, text=(3, 4, 7), names=(0, 1, 2))


def _find_max_table(result, header):
    fm = result.find_max
    t = quantity_table(header + " · --find-max")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    t.add_row("budget", f"{size(fm.budget_bytes)} ({fm.budget_source})")
    t.add_row(f"one unit ({fm.unit[:-1]})", size(fm.unit_bytes))
    t.add_row(f"predicted max {fm.unit} (kvplan)", f"{fm.predicted_max:,}")
    t.add_row(f"measured max {fm.unit} (device)", f"{fm.measured_max:,}")
    t.add_row("held at the maximum", size(fm.measured_bytes))
    t.add_row("stopped by", fm.limited_by)
    t.add_row("allocation steps", f"{fm.steps} in {fm.seconds:.3f} s")
    t.add_row("match", _verdict(fm.match))
    return t


def _bench_table(b):
    rows = [[g.label, str(g.layers), format_bytes(g.bytes_per_layer), f"{g.seconds_per_layer * 1e6:,.1f} µs",
             f"{g.bytes_per_s / 1e9:,.1f} GB/s"] for g in b.groups]
    rows.append(["all layers", "", format_bytes(b.kv_bytes_per_step), f"{b.seconds_per_token * 1e3:,.3f} ms/token",
                 f"{b.achieved_bytes_per_s / 1e9:,.1f} GB/s"])
    styles = [None] * (len(rows) - 1) + ["bold"]
    if b.catalog_bytes_per_s:
        rows.append([f"catalog {b.gpu}", "", "", f"{b.catalog_seconds_per_token * 1e3:,.3f} ms/token",
                     f"{b.catalog_bytes_per_s / 1e9:,.0f} GB/s ({b.catalog_fraction:.0%} reached)"])
        styles.append(None)
    return figures_table("decode attention step (scaled_dot_product_attention, one query token per sequence)",
                         ["group", "layers", "K/V per layer", "time per layer", "bandwidth"], rows, styles=styles)
