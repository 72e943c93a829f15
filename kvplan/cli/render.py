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

from kvplan.core.units import format_bytes


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

    stream = sys.stderr if stderr else sys.stdout
    width = int(os.environ.get("COLUMNS", "0") or 0) or None
    if width is None and not stream.isatty():
        width = 120  # rich assumes 80 columns off a terminal, which truncates exact byte counts in pipes and CI logs
    return Console(file=stream, width=width, highlight=False, soft_wrap=stderr)


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
    Console(file=console.file, width=need, highlight=False, color_system=console.color_system).print(renderable)


def write_file(path: str, write, *, what: str = "the output") -> None:
    """Write an output file (-o/--output) whole or not at all.

    `write(target)` writes to the path it is given. A regular file is written to a temporary file beside
    it and renamed over it at the end, so a failure (a full disk, an error while drawing, Ctrl-C) never
    leaves a truncated file or an empty new one. Devices and pipes (-o /dev/stdout) are written in place.
    OSErrors become one-line input errors naming the path.
    """
    import errno
    import tempfile

    from kvplan.core.errors import InputError

    target = os.path.realpath(os.path.expanduser(path))  # through a symlink, not over it
    try:
        if os.path.isdir(target):
            raise InputError("is a directory", where=path, hint="give a file name")
        if os.path.exists(target) and not os.path.isfile(target):
            write(target)  # a device or a FIFO: nothing to replace
            return
        folder = os.path.dirname(target) or "."
        if not os.path.isdir(folder):
            raise InputError("its folder does not exist", where=path, hint=f"create {os.path.dirname(path) or '.'} first")
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
        os.close(fd)
        try:
            write(tmp)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is as readable as any new file
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except OSError as err:
        reason = {errno.EACCES: "permission denied", errno.EPERM: "permission denied", errno.EROFS: "read-only file system",
                  errno.ENOSPC: "no space left on the device", errno.ENAMETOOLONG: "file name too long"}.get(
            err.errno, err.strerror or str(err))
        raise InputError(f"cannot write {what}: {reason}", where=path, hint="choose another path with -o") from None


def size(n: int | None) -> str:
    """'12.50 GiB (13,421,772,800 B)': the exact bytes beside the readable figure."""
    if n is None:
        return "—"
    return f"{format_bytes(n)} ({n:,} B)" if abs(n) >= 1024 else f"{n:,} B"


def _box():
    from rich import box

    return box.SIMPLE_HEAD
