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
The estimate views build their lines and table as `Styled` and `Sheet` (below), not as rich's Text and Table: off a
terminal they are laid out here without importing rich's text and table machinery either (about 12 ms); rich's
objects are made from them (render.from_sheet, `Styled.__rich__`) only where rich's console prints them.
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
        text = "\n" if not objects and not kwargs else None  # rich prints an empty line
        if len(objects) == 1 and not kwargs:
            wrap = self.soft_wrap if soft_wrap is None else soft_wrap
            obj = objects[0]
            text = _table(obj, self.width) if hasattr(obj, "records") else _line(obj, self.width, wrap)
        if text is None:
            self.rich().print(*objects, soft_wrap=soft_wrap, highlight=highlight, **kwargs)
            return
        self.file.write(text)
        self.file.flush()

    def lay_out(self, sheet: Sheet) -> bool:
        """Print `sheet` when it fits as it is (render.print_fitting's short way); False leaves it to the caller."""
        text = _sheet(sheet, self.width)
        if text is not None:
            self.file.write(text)
            self.file.flush()
        return text is not None


class Styled:
    """A line or a table cell of text with a rich style ("bold", "red"...): what the estimate views build where they
    used rich's Text. Off a terminal only its text shows; rich's console is given rich's Text (`__rich__`)."""

    __slots__ = ("plain", "style")

    def __init__(self, text: str = "", style: str | None = None):
        self.plain = text
        self.style = style

    def __rich__(self):
        from rich.text import Text

        return Text(self.plain, style=self.style or "")


class Sheet:
    """An estimate's quantity/value table as data (columns, rows, the rows that end a section), printed through
    render.print_fitting: laid out here off a terminal when it fits; else render.from_sheet makes
    render.quantity_table's rich table of the same calls, which print_fitting prints (wrapped, or as records where
    even its narrowest form is too wide)."""

    def __init__(self, title: str | None = None):
        self.title = title
        self.box: str | None = "SIMPLE_HEAD"  # None (KVPLAN_PLAIN): no box, rich lays it out
        self.columns: list[tuple[str, str]] = []  # (header, justify)
        self.rows: list[tuple] = []
        self.ends: set[int] = set()  # rows after which a section ends

    def add_column(self, header: str, justify: str = "left") -> None:
        self.columns.append((header, justify))

    def add_row(self, *cells) -> None:
        self.rows.append(cells)

    def add_section(self) -> None:
        if self.rows:
            self.ends.add(len(self.rows) - 1)


def _plain(cell) -> str | None:
    """A str's, a Styled's or a rich Text's characters; None for anything else."""
    if isinstance(cell, str):
        return cell
    if isinstance(cell, Styled):
        return cell.plain
    text = sys.modules.get("rich.text")  # a rich Text exists only where rich.text was imported
    return cell.plain if text is not None and isinstance(cell, text.Text) else None


# characters rich counts one terminal cell wide (tests/test_plain_console.py asks rich.cells): cells of ASCII and these
# are measured without loading rich's tables of character widths
NARROW = frozenset("·×—–…−→←≤≥µ°±")


def cell_len(text: str) -> int:
    """The terminal cells `text` takes, as rich counts them."""
    if text.isascii() or NARROW.issuperset(c for c in text if not c.isascii()):
        return len(text)
    from rich.cells import cell_len as rich_cell_len

    return rich_cell_len(text)


def _line(obj, width: int, soft_wrap: bool) -> str | None:
    """A str or Text as rich prints it: each line as it is when printed with soft_wrap or when it fits the width."""
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


def _longest_word(cell: str) -> int:
    return max((len(w) for w in cell.split()), default=0)


def _sheet(sheet: Sheet, width: int) -> str | None:
    """A Sheet as render.quantity_table's rich table prints when render._surely_fits says it fits: columns as wide as
    their widest line plus one space each side, a rule of box.SIMPLE_HEAD under the header, an empty line for the top
    and bottom edges and after each section. None where rich is needed (no box, a cell that is not one printable line,
    a table wider than `width` at its widest or by render.needed_width's floors)."""
    if sheet.box != "SIMPLE_HEAD" or sheet.title or any(j not in ("left", "right") for _, j in sheet.columns):
        return None
    columns = sheet.columns
    grid = [[header for header, _ in columns]]
    for row in sheet.rows:
        if len(row) > len(columns):
            return None
        cells = [_plain(cell) for cell in row] + [""] * (len(columns) - len(row))
        if any(cell is None or not cell.isprintable() for cell in cells):
            return None
        grid.append(cells)
    # quantity_table's min_width: a sub-item's indent and longest word, every header's longest word
    floors = [max([_longest_word(header)] + [len(c) - len(c.lstrip(" ")) + _longest_word(c) for c in
                                                   (cells[i] for cells in grid[1:])]) if len(grid) > 1 else None
              for i, (header, _) in enumerate(columns)]
    widths = [max([cell_len(cells[i]) for cells in grid] + [floor or 0]) + 2 for i, floor in enumerate(floors)]
    if sum(widths) + len(columns) + 1 > width or sum((f or 1) + 3 for f in floors) + 1 > width:
        return None
    out = [""]  # SIMPLE_HEAD's top edge: spaces, which the console's stream strips
    for index, cells in enumerate(grid):
        shown = []
        for cell, (_, justify), w in zip(cells, columns, widths):
            if justify == "right":
                cell = cell.rstrip()
                shown.append(" " * (w - 1 - cell_len(cell)) + cell + " ")
            else:
                shown.append(" " + cell + " " * (w - 1 - cell_len(cell)))
        out.append(" " + " ".join(shown) + " ")
        if index == 0:
            out.append(" " + "─" * (sum(widths) + len(columns) - 1) + " ")
        elif index < len(grid) - 1 and index - 1 in sheet.ends:
            out.append("")
    out.append("")
    return "\n".join(out) + "\n"
