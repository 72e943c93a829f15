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
