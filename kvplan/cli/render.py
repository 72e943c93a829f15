"""Turning results into text for people (rich tables) and for machines (JSON).

The only module that formats numbers for people. JSON is the result dataclass itself
(dataclasses.asdict), never a second hand-built dict.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from kvplan.core.io import to_json, write_file  # noqa: F401  (commands print through render)
from kvplan.core.units import format_bytes


class _Lines:
    """A text stream that writes whole lines without their trailing spaces (rich pads every table line to the
    table's width); a partial line waits for its end. Everything else is the stream's own (isatty, fileno...)."""

    def __init__(self, stream):
        self._stream = stream
        self._partial = ""

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        if lines:
            self._stream.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._partial:
            self._stream.write(self._partial)
            self._partial = ""
        self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def width() -> int:
    """The terminal's columns: COLUMNS when it is a whole number, else the terminal's, else 120 off a terminal (rich
    assumes 80, which would narrow every table in pipes and CI logs). Never below 20: narrower is not a terminal
    anyone reads, and every layout below is made to fit 20."""
    import shutil

    given = os.environ.get("COLUMNS", "").strip()
    if given.isascii() and given.isdigit() and int(given[:6]) > 0:
        return max(int(given[:6]), 20)
    if sys.stdout.isatty():
        return max(shutil.get_terminal_size((120, 24)).columns, 20)
    return 120


def terminal_width() -> int | None:
    """width() when stdout is an interactive terminal, None anywhere else (a pipe, a file, a CI log): a report that
    promises the same bytes for the same input is fitted to a terminal only, never to what COLUMNS says elsewhere."""
    return width() if sys.stdout.isatty() else None


def console(stderr: bool = False):
    """A console writing to stdout (stderr: soft-wrapped, for notes). Off a terminal it is cli/plain.py's, which
    prints tables and lines that fit without importing rich's console (the same bytes; it hands rich's console
    anything else)."""
    from kvplan.cli import plain

    stream = sys.stderr if stderr else sys.stdout
    # markup and emoji off: a model or file name like '[/x]' or ':smile:' is text to show, not a style to apply
    # (rich raised MarkupError on an unmatched closing tag); styles are given as rich Text objects instead
    settings = {"highlight": False, "markup": False, "emoji": False}
    if plain.usable(stream):
        return plain.PlainConsole(_Lines(stream), width(), stderr, settings)
    from rich.console import Console

    return Console(file=_Lines(stream), width=width(), soft_wrap=stderr, **settings)


def line_count(items) -> int:
    """The lines `items` (what print_fitting prints, in order) take at this terminal's width: a view that promises a
    number of lines measures itself with it."""
    import io

    from rich.console import Console

    buffer = io.StringIO()
    out = Console(file=_Lines(buffer), width=width(), highlight=False, markup=False, emoji=False, no_color=True)
    for item in items:
        print_fitting(out, item)
    return buffer.getvalue().count("\n")


def _plain(cell) -> str:
    return cell.plain if hasattr(cell, "plain") else str(cell)


def _is_text(cell) -> bool:
    """A cell rich measures as its text (a str or a rich Text), which _plain gives whole."""
    return isinstance(cell, str) or hasattr(cell, "plain")


def _longest_line(cell: str) -> int:
    return max((len(line) for line in cell.split("\n")), default=0)


def _longest_word(cell: str) -> int:
    return max((len(w) for w in cell.split()), default=0)


def figures_table(title: str | None, headers: list[str], rows: list[list[str]], *, text: tuple[int, ...] = (0,),
                  names: tuple[int, ...] = (), keys: tuple[int, ...] = (0,), styles: list | None = None,
                  simple: bool = False):
    """A rich table whose figures are never cut: each figure column is at least as wide as its widest cell, so
    a narrow terminal wraps the text columns and the headers ("running" over "(mean)") instead of printing
    "546,…". Columns listed in `text` are left-aligned words that may wrap; those in `names` left-aligned and
    whole (a name the user types); the others right-aligned figures. It keeps its cells, so that print_fitting
    can show it as records (`keys`: the cells that head each record) where even its narrowest form is too wide.
    `simple`: a rule under the header and no box (long listings), same widths."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold", **({"box": _box()} if simple else {}))
    for i, header in enumerate(headers):
        widest = max((_longest_line(row[i]) for row in rows), default=0)
        longest_word = max((_longest_word(row[i]) for row in rows), default=0)
        header_word = _longest_word(header)
        if i in names:
            table.add_column(header, justify="left", no_wrap=True, min_width=max(widest, header_word))
        elif i in text:
            # a word is never folded across lines: the column is at least as wide as its longest word
            table.add_column(header, justify="left", min_width=max(longest_word, header_word))
        else:
            table.add_column(header, justify="right", min_width=max(widest, header_word))
    for i, row in enumerate(rows):
        table.add_row(*row, style=styles[i] if styles else None)
    table.records = (title, list(headers), [list(r) for r in rows], keys)
    table.cells_are_text = all(_is_text(c) for row in rows for c in row)
    table.flexible = set(text)
    return table


def quantity_table(title: str | None = None):
    """The quantity/value table (the estimate views, simulate's workload, probe --find-max): both columns wrap
    between words, never inside one, and it keeps its cells so that print_fitting shows it as records where its
    narrowest form is too wide. A label written with leading spaces ('  weights') is a sub-item: it keeps its
    indent on every line when the label wraps (rich would start the continuation at the margin, where it reads as
    a new item), and in the records."""
    from rich.padding import Padding
    from rich.table import Table

    class QuantityTable(Table):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self._cells: list[list[str]] = []
            self.flexible = {0, 1}
            self.cells_are_text = True

        @property
        def records(self):
            return (self.title, [""] * len(self.columns), self._cells, (0,))

        def add_row(self, *cells, **kwargs):
            plain = [_plain(c) for c in cells]
            self._cells.append(plain)
            self.cells_are_text = self.cells_are_text and all(_is_text(c) for c in cells)
            for column, cell in zip(self.columns, plain):
                indent = len(cell) - len(cell.lstrip(" "))
                column.min_width = max(column.min_width or 0, indent + _longest_word(cell), _longest_word(column.header))
            first, *rest = cells or ("",)
            if isinstance(first, str) and first.startswith(" "):
                indent = len(first) - len(first.lstrip(" "))
                first = Padding(first.lstrip(" "), (0, 0, 0, indent))
            return super().add_row(first, *rest, **kwargs)

    return QuantityTable(title=title, title_justify="left", show_header=True, header_style="bold", box=_box())


def from_sheet(sheet):
    """The rich table a plain.Sheet stands for: quantity_table given the same columns, rows and sections."""
    from kvplan.cli.plain import Styled

    table = quantity_table(sheet.title)
    if sheet.box is None:
        table.box = None
    for header, justify in sheet.columns:
        table.add_column(header, justify=justify)
    for index, cells in enumerate(sheet.rows):
        table.add_row(*[c.__rich__() if isinstance(c, Styled) else c for c in cells])
        if index in sheet.ends:
            table.add_section()
    return table


def _measure(console, table):
    """rich's (minimum, maximum) width of a table given all the room it wants."""
    from rich.measure import Measurement

    return Measurement.get(console, console.options.update_width(10_000), table)


def needed_width(console, table, measured=None) -> int:
    """The fewest columns `table` takes without cutting a cell's figure: rich's measure ignores min_width under
    pressure, so the floors and the borders (3 per column) are counted as well."""
    need = (measured or _measure(console, table)).minimum
    columns = getattr(table, "columns", None)
    if columns:
        need = max(need, sum((c.min_width or 1) + 3 for c in columns) + 1)
    return need


def print_table(console, title: str | None, headers: list[str], rows: list[list[str]], *, text: tuple[int, ...] = (0,),
                names: tuple[int, ...] = (), keys: tuple[int, ...] = (0,), styles: list | None = None,
                simple: bool = False) -> None:
    """A table when it fits the terminal (figures whole, text columns wrapped); else the same cells as records,
    one per row: its `keys` cells on a line, then `header value` pairs joined by ' · ' and wrapped between pairs,
    so nothing is ever cut or printed past the edge, whatever the width."""
    print_fitting(console, figures_table(title, headers, rows, text=text, names=names, keys=keys, styles=styles,
                                         simple=simple))


def print_fitting(console, renderable) -> None:
    """Print a renderable; a table that keeps its cells (figures_table, quantity_table) and does not fit the
    terminal even at its narrowest is printed as records instead (rich would cut its figures or fold its words). A
    plain.Sheet is laid out by plain.py's console where it fits, else printed as the rich table it stands for."""
    from kvplan.cli import plain

    if isinstance(renderable, plain.Sheet):
        if isinstance(console, plain.PlainConsole) and console.lay_out(renderable):
            return
        renderable = from_sheet(renderable)
    records = getattr(renderable, "records", None)
    if records is None or _surely_fits(console, renderable):
        console.print(renderable)
        return
    measured = _measure(console, renderable)  # once: a table's measure renders every cell
    if needed_width(console, renderable, measured) <= console.width:
        _share_width(console, renderable, measured.maximum)
        console.print(renderable)
        return
    title, headers, rows, keys = records

    def one_line(cell: str) -> str:  # the cell's words on one line, its indent kept (a sub-item stays one)
        return cell[:len(cell) - len(cell.lstrip(" "))] + " ".join(cell.split())

    print_records(console, title, headers, [[one_line(c) for c in row] for row in rows], keys=keys)


def _surely_fits(console, table) -> bool:
    """Whether a table that keeps its cells fits the console by a bound that renders nothing (rich's measure renders
    every cell, and printing renders them again: about 1 ms of an estimate's table, benchmarks/cold_start.py). The
    bound is the most rich's measure can give (rich/table.py _measure_column, _extra_width): each column's widest
    line of its header and cells, in terminal cells as rich counts them, at least its min_width, plus the table's
    left and right padding; plus the borders. Within the width, needed_width is too and _share_width leaves the
    table as it is, so print_fitting prints it unchanged; otherwise (cells that are not text, widths set by hand)
    print_fitting measures."""
    from rich.cells import cell_len

    if not getattr(table, "cells_are_text", False) or table.width is not None:
        return False
    _, _, rows, _ = table.records
    columns = table.columns
    if any(c.width is not None or c.max_width is not None for c in columns):
        return False
    _, right, _, left = table.padding
    widest = 0
    for i, column in enumerate(columns):
        lines = [line for cell in [column.header] + [r[i] for r in rows if i < len(r)]
                 for line in _plain(cell).split("\n")]
        widest += max([column.min_width or 0] + [cell_len(line) for line in lines]) + right + left
    borders = len(columns) + 1
    floors = sum((c.min_width or 1) + 3 for c in columns) + 1  # needed_width's count of the floors and borders
    return widest + borders <= console.width and floors <= console.width


def _share_width(console, table, natural: int) -> None:
    """Give each column of a table that must shrink an explicit width: every column gets its floor (figures and
    names their widest cell, text its longest word); the room left goes to the text columns by water-filling (the
    narrowest raised first to what it would take unwrapped, the rest alike), then what remains unwraps the
    headers of the figure columns, narrowest first. A wrapped cell costs a line in every row it wraps, a wrapped
    header one line in all, hence that order (left to itself rich shrinks every wrappable column in proportion and
    folds words, or crops a column below its min_width)."""
    if natural <= console.width:
        return
    _, _, rows, _ = table.records
    columns = table.columns
    room = console.width - (3 * len(columns) + 1)  # borders and padding
    widths = [c.min_width or 1 for c in columns]
    wants = [max(widths[i], max(_longest_line(cell) for cell in [_plain(c.header)] + [r[i] for r in rows if i < len(r)]))
             for i, c in enumerate(columns)]
    flexible = [i for i in range(len(columns)) if i in table.flexible]

    def raise_to(level: int, among: list[int]) -> list[int]:
        return [max(widths[i], min(wants[i], level)) if i in among else widths[i] for i in range(len(columns))]

    level = 0
    while level < max(wants) and sum(raise_to(level + 1, flexible)) <= room:
        level += 1
    widths = raise_to(level, flexible)
    spare = room - sum(widths)
    for i in flexible:  # what is left (less than one per column below its want) goes left to right
        if spare > 0 and widths[i] < wants[i]:
            widths[i] += 1
            spare -= 1
    for i in sorted((i for i in range(len(columns)) if i not in flexible), key=lambda i: wants[i] - widths[i]):
        extra = min(wants[i] - widths[i], spare)
        if extra == wants[i] - widths[i]:  # a header unwrapped whole, or not at all
            widths[i] += extra
            spare -= extra
    for c, w in zip(columns, widths):
        c.width = w


def print_records(console, title: str | None, headers: list[str], rows: list[list[str]], *,
                  keys: tuple[int, ...] = (0,)) -> None:
    """Rows as records: the `keys` cells joined by ' · ' on a line, then the other cells as `header value` pairs
    (the value alone where the header is empty) indented below it, wrapped between pairs and words, never inside
    a word, so a figure or a path is whole even where it is longer than the line."""
    from rich.text import Text

    from kvplan.core.text import wrap_pairs

    def emit(text: str, style: str | None = None) -> None:
        # soft_wrap: the line is already wrapped; rich would fold a word longer than the terminal
        console.print(Text(text, style=style), soft_wrap=True)

    if title:
        for line in wrap_pairs([title], console.width):
            emit(line, "bold")
    for row in rows:
        head = " · ".join(row[i].strip() for i in keys if row[i].strip())
        lead = min((len(row[i]) - len(row[i].lstrip(" ")) for i in keys if row[i].strip()), default=0)
        for line in wrap_pairs([head], console.width - lead) if head else []:
            emit(" " * lead + line, "bold" if not lead else None)
        pairs = [f"{h} {c}" if h else c for i, (h, c) in enumerate(zip(headers, row)) if i not in keys and c]
        for line in wrap_pairs(pairs, console.width - lead - 2):
            emit(" " * (lead + 2) + line)


# whether size() prints the exact bytes beside the readable figure: on, except where a view turns them off for its
# short form (estimate without --detail: the bytes are in --detail and --json)
_EXACT_BYTES = contextvars.ContextVar("exact_bytes", default=True)


@contextlib.contextmanager
def exact_bytes(on: bool):
    """size() inside the block prints the exact bytes (on) or the readable figure alone (off)."""
    token = _EXACT_BYTES.set(on)
    try:
        yield
    finally:
        _EXACT_BYTES.reset(token)


def size(n: int | None) -> str:
    """'12.50 GiB (13,421,772,800 B)': the exact bytes beside the readable figure ('12.50 GiB' under
    exact_bytes(False)); below 1 KiB the bytes alone."""
    if n is None:
        return "—"
    if abs(n) < 1024:
        return f"{n:,} B"
    return f"{format_bytes(n)} ({n:,} B)" if _EXACT_BYTES.get() else format_bytes(n)


def _box():
    from rich import box

    return box.SIMPLE_HEAD
