"""What every paged engine's view shares: the header line, the quantity/value table, the fix."""

from __future__ import annotations


def view_start(result, head: str) -> list:
    """The header line (TP x PP added when either is > 1) and the quantity/value table every engine view fills."""
    from rich.text import Text

    from kvplan.cli.render import quantity_table

    if result.tp > 1 or result.pp > 1:
        head += f" · TP {result.tp} × PP {result.pp}"
    table = quantity_table()
    table.add_column("quantity")
    table.add_column("value", justify="right")
    return [Text(head, style="bold"), table]


def view_end(result, out: list) -> list:
    """The view with the fix appended, when there is one."""
    from rich.text import Text

    if result.suggestions:
        out.append(Text("what would fit:", style="bold"))
        out += [Text(f"  {s}") for s in result.suggestions]
    return out


def band_rows(table, result) -> None:
    """The modelled budget's band, and the setting that pins the pool at its low edge (SGLang --max-total-tokens,
    TensorRT-LLM kv_cache_config.max_tokens) with whether the request shape still fits pinned there."""
    from rich.text import Text

    from kvplan.cli.render import size

    r = result
    if r.budget_source != "model" or r.available_kv_bytes_low is None:
        return
    left_open = getattr(r, "band_open", ())
    why = (f"measured error; open: {', '.join(left_open)}" if left_open
           else "the measured out-of-sample error, both ways")
    table.add_row(f"  band ({why})",
                  f"{size(r.available_kv_bytes_low)} … {size(r.available_kv_bytes_high)}")
    if r.marginal:
        table.add_row(Text("  marginal: it fits at one edge of the band and not at the other", style="bold yellow"), "")
    if r.pin_flag:
        fits = "still fits" if r.pinned_fits else "does not fit"
        table.add_row(f"  pin the pool at the low edge: {r.pin_flag}", f"the request {fits}")
