"""A console for output that is not a terminal (a pipe, a file, a CI log): the lines rich would write, without rich's
console.

Off a terminal rich writes no colour and no style, so a table that fits the width and a line that fits it are plain
text that kvplan can lay out as rich does: importing rich.console and rendering through it cost about 10 ms of an
`estimate` table (benchmarks/cold_start.py). What this module lays out:
- a line of text (a str or a rich Text) that fits the width, or any line printed with soft_wrap (rich leaves those
  as they are);
- a table that keeps its cells (render.figures_table, render.quantity_table) with the default padding, header and no
  footer, whose columns all fit the width at their widest (render._surely_fits's bound): each column as wide as its
  widest line or its min_width, plus one space each side; the box's characters from rich.box, as rich/table.py
  _render draws them (top edge, header rule, a section's rule, bottom edge).
Anything else (a cell or line that is not printable text, a table that must wrap, a title wider than its table, any
other renderable or keyword) is printed by rich's own console, made on first use and writing to the same stream.
tests/test_plain_console.py prints each estimate view, listing and note both ways and compares the bytes.
"""

from __future__ import annotations

import builtins
import os
import sys


def usable(stream) -> bool:
    """Whether rich would treat `stream` as no terminal, write no styles and draw the boxes as given: rich's console
    (rich/console.py Console.is_terminal, _detect_color_system, Box.substitute) asks the same environment variables
    and the stream. Where in doubt (Jupyter, Windows consoles, an encoding other than UTF), rich's console prints."""
    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return False
    if not (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf"):
        return False
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "0"
    if os.environ.get("FORCE_COLOR") is not None:
        return os.environ["FORCE_COLOR"] == ""
    try:
        return not stream.isatty()
    except ValueError:  # a closed stream: rich calls it no terminal
        return True


class PlainConsole:
    """What render.console hands out off a terminal: `print` of the renderables above, everything else (print of
    anything other, `options`, `size`...) through rich's console with the same settings."""

    def __init__(self, file, width: int, soft_wrap: bool, settings: dict):
        self.file = file
        self.width = width
        self.soft_wrap = soft_wrap
        self._settings = settings
        self._rich = None

    def rich(self):
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(file=self.file, width=self.width, soft_wrap=self.soft_wrap, **self._settings)
        return self._rich

    def __getattr__(self, name):
        return getattr(self.rich(), name)

    def print(self, *objects, soft_wrap: bool | None = None, highlight: bool | None = None, **kwargs) -> None:
        text = None
        if len(objects) == 1 and not kwargs:
            wrap = self.soft_wrap if soft_wrap is None else soft_wrap
            text = _table(objects[0], self.width) if hasattr(objects[0], "records") else _line(objects[0], self.width, wrap)
        if text is None:
            self.rich().print(*objects, soft_wrap=soft_wrap, highlight=highlight, **kwargs)
            return
        self.file.write(text)
        self.file.flush()


def _plain(cell) -> str | None:
    """A str's or a rich Text's characters; None for anything else."""
    if isinstance(cell, str):
        return cell
    from rich.text import Text

    return cell.plain if isinstance(cell, Text) else None


def _line(obj, width: int, soft_wrap: bool) -> str | None:
    """A str or Text as rich prints it: each line as it is when printed with soft_wrap or when it fits the width."""
    from rich.cells import cell_len

    text = _plain(obj)
    if text is None:
        return None
    lines = text.split("\n")
    if not all(line.isprintable() for line in lines):
        return None  # tabs and control codes: rich expands or strips them
    if not soft_wrap and any(cell_len(line) > width for line in lines):
        return None  # rich wraps it between words
    return text + "\n"


def _table(table, width: int) -> str | None:
    """A table that keeps its cells, laid out as rich lays out one whose columns all fit, or None."""
    from rich.cells import cell_len
    from rich.table import Table

    if not isinstance(table, Table) or table.box is None or table.caption or not table.show_header:
        return None
    if (table.show_footer or table.show_lines or table.leading or table.expand or table.width is not None
            or table.min_width is not None or not table.show_edge or not table.pad_edge or table.collapse_padding
            or tuple(table.padding) != (0, 1, 0, 1)):
        return None
    _, _, rows, _ = getattr(table, "records")  # render adds it to its tables; rich's Table has none
    columns = table.columns
    if len(rows) != len(table.rows) or any(len(row) > len(columns) for row in rows):
        return None
    if any(c.width is not None or c.max_width is not None or c.justify not in ("left", "right") for c in columns):
        return None
    grid = []
    for row in [[c.header for c in columns]] + [list(row) + [""] * (len(columns) - len(row)) for row in rows]:
        cells = [_plain(cell) for cell in row]
        if any(cell is None or not cell.isprintable() for cell in cells):
            return None  # another renderable, a second line, a tab: rich's console lays those out
        grid.append(cells)
    widths = [max([cell_len(cells[i]) for cells in grid] + [column.min_width or 0]) for i, column in enumerate(columns)]
    widths = [w + 2 for w in widths]  # one space of padding each side
    if sum(widths) + len(columns) + 1 > width:
        return None
    box = table.box
    out = []
    if table.title:
        title = _plain(table.title)
        if title is None or not title.isprintable() or cell_len(title) > sum(widths) + len(columns) + 1:
            return None
        out.append(title)
    out.append(box.get_top(widths))
    last = len(grid) - 1
    for index, cells in enumerate(grid):
        if index == 0:
            left, right, divider = box.head_left, box.head_right, box.head_vertical
        elif index == last:
            left, right, divider = box.foot_left, box.foot_right, box.foot_vertical
        else:
            left, right, divider = box.mid_left, box.mid_right, box.mid_vertical
        shown = []
        for cell, column, w in zip(cells, columns, widths):
            if column.justify == "right":
                cell = cell.rstrip()
                shown.append(" " + " " * (w - 2 - cell_len(cell)) + cell + " ")
            else:
                shown.append(" " + cell + " " * (w - 2 - cell_len(cell)) + " ")
        out.append(left + divider.join(shown) + right)
        if index == 0:
            out.append(box.get_row(widths, "head", edge=True))
        elif index < last and table.rows[index - 1].end_section:
            out.append(box.get_row(widths, "row", edge=True))
    out.append(box.get_bottom(widths))
    return "\n".join(out) + "\n"
