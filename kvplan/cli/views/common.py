"""What every engine's view shares: the header line, the quantity/value table, the budget's head and common rows, the
band, the verdict, the fix."""

from __future__ import annotations


def view_start(result, head: str) -> list:
    """The header line (TP x PP added when either is > 1) and the quantity/value table every engine view fills."""
    from kvplan.cli.plain import Sheet, Styled

    if result.tp > 1 or result.pp > 1:
        head += f" · TP {result.tp} × PP {result.pp}"
    table = Sheet()
    table.add_column("quantity")
    table.add_column("value", justify="right")
    return [Styled(head, style="bold"), table]


def view_end(result, out: list) -> list:
    """The view with the fix appended, when there is one."""
    from kvplan.cli.plain import Styled

    if result.suggestions:
        out.append(Styled("what would fit:", style="bold"))
        out += [Styled(f"  {s}") for s in result.suggestions]
    return out


def band_rows(table, result) -> None:
    """The modelled budget's band, and the setting that pins the pool at its low edge (SGLang --max-total-tokens,
    TensorRT-LLM kv_cache_config.max_tokens) with whether the request shape still fits pinned there."""
    from kvplan.cli.plain import Styled

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
        table.add_row(Styled("  marginal: it fits at one edge of the band and not at the other", style="bold yellow"), "")
    if r.pin_flag:
        fits = "still fits" if r.pinned_fits else "does not fit"
        table.add_row(f"  pin the pool at the low edge: {r.pin_flag}", f"the request {fits}")


def budget_head(table, result, how: str) -> None:
    """A section headed by the budget's GPU and how the engine comes to its budget."""
    from kvplan.cli.plain import Styled

    table.add_section()
    table.add_row(Styled(f"budget per GPU ({result.gpu or 'custom GPU'}; {how})", style="bold"), "")


def total_row(table, result) -> None:
    """The GPU's total memory, the budget's first term."""
    from kvplan.cli.render import size

    table.add_row("  total memory", size(result.per_gpu.capacity_bytes if result.per_gpu else None))


def in_use_row(table, result) -> None:
    """The memory in use before the engine starts, where the request or a site profile gives some."""
    from kvplan.cli.render import size

    if result.in_use_bytes:
        table.add_row("  − in use before start (--gpu-reserved, site profile)", size(result.in_use_bytes))


def verdict_row(table, verdict: str, fits: bool, *, marginal: bool = False) -> None:
    """The verdict in words: green when it fits (yellow when only at one edge of the band), red when not."""
    from kvplan.cli.plain import Styled

    table.add_row("verdict", Styled(verdict, style=("bold yellow" if marginal else "bold green") if fits else "bold red"))
