"""Turning results into text for people (rich tables) and for machines (JSON).

The only module that formats numbers for people. JSON is the result dataclass itself
(dataclasses.asdict), never a second hand-built dict.
"""

from __future__ import annotations

import os
import sys
from kvplan.core.io import to_json, write_file  # noqa: F401  (commands print through render)
from kvplan.core.units import format_bytes


def console(stderr: bool = False):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = int(os.environ.get("COLUMNS", "0") or 0) or None
    if width is None and not stream.isatty():
        width = 120  # rich assumes 80 columns off a terminal, which truncates exact byte counts in pipes and CI logs
    # markup and emoji off: a model or file name like '[/x]' or ':smile:' is text to show, not a style to apply
    # (rich raised MarkupError on an unmatched closing tag); styles are given as rich Text objects instead
    return Console(file=stream, width=width, highlight=False, soft_wrap=stderr, markup=False, emoji=False)


def figures_table(title: str | None, headers: list[str], rows: list[list[str]], *, text: tuple[int, ...] = (0,)):
    """A rich table whose figures are never cut: each figure column is at least as wide as its widest cell, so
    a narrow terminal wraps the text columns and the headers ("running" over "(mean)") instead of printing
    "546,…". Columns listed in `text` are left-aligned words that may wrap; the others right-aligned figures."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold")
    for i, header in enumerate(headers):
        widest = max((len(row[i]) for row in rows), default=0)
        longest_word = max((len(w) for row in rows for w in row[i].split()), default=0)
        header_word = max((len(w) for w in header.split()), default=0)
        if i in text:
            table.add_column(header, justify="left", min_width=max(min(longest_word, 16), min(header_word, 12)))
        else:
            table.add_column(header, justify="right", min_width=max(widest, min(header_word, 12)))
    for row in rows:
        table.add_row(*row)
    return table


def print_whole(console, renderable) -> None:
    """Print without cropping: when even the narrowest layout is wider than the terminal, print at the width
    it needs and let the terminal wrap the lines (rich would cut them at the edge, figures and all)."""
    from rich.console import Console
    from rich.measure import Measurement

    measured = Measurement.get(console, console.options.update_width(10_000), renderable)
    need = measured.minimum
    columns = getattr(renderable, "columns", None)
    if columns:  # rich's measure ignores min_width under pressure; count the floors and the borders (3 per column)
        need = max(need, sum((c.min_width or 1) + 3 for c in columns) + 1)
    if need <= console.width:
        console.print(renderable)
        return
    need = measured.maximum  # too narrow anyway: print it unwrapped and let the terminal fold the lines
    Console(file=console.file, width=need, highlight=False, color_system=console.color_system, markup=False,
            emoji=False).print(renderable)


def size(n: int | None) -> str:
    """'12.50 GiB (13,421,772,800 B)': the exact bytes beside the readable figure."""
    if n is None:
        return "—"
    return f"{format_bytes(n)} ({n:,} B)" if abs(n) >= 1024 else f"{n:,} B"


def _box():
    from rich import box

    return box.SIMPLE_HEAD
