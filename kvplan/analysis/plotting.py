"""Capacity curves from sweep rows: the data (Chart, Series), a terminal renderer (plain unicode text), and a
matplotlib renderer (PNG/SVG; matplotlib is the optional `plot` extra and is imported only there).

Two charts:
- capacity: per-GPU memory (weights + KV cache of `batch` sequences) against context length, one curve
  per GPU/TP/KV dtype, with each GPU's usable memory as a horizontal limit: where a curve crosses its
  limit is the longest context that fits;
- concurrency: the most sequences that fit (max batch; the paged engines' max concurrency) against
  context length, one curve per GPU/TP/KV dtype/engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from kvplan import engines
from kvplan.core.errors import InputError
from kvplan.core.io import write_file

GiB = 1 << 30
_MARKERS = "●▲■◆✚✱○△□◇"
# what joins a curve's points, one glyph per curve (with _MARKERS: every curve told apart without colour, where two
# run close or cross); none is a limit line's glyph
_JOINS = "·:'~^\""
_LIMIT_MARKS = "─┄═┈╌"
_MPL_MARKERS = "o^sD+*v<>p"


@dataclass(frozen=True)
class Series:
    label: str
    xs: tuple[int, ...]
    ys: tuple[float, ...]
    limit: bool = False  # a horizontal limit (usable memory), drawn dashed
    scatter: bool = False  # points only, not joined (plans, not a curve)


@dataclass(frozen=True)
class Chart:
    title: str
    x_label: str
    y_label: str
    series: tuple[Series, ...]
    y_log: bool = False
    x_unit: str = "tokens"  # how x ticks are written: tokens (1K, 32K) or ms


def _key_label(row, varying: dict, *, gpu: bool = True) -> str:
    parts = []
    if varying.get("engine"):
        parts.append(row.engine)
    if gpu and varying.get("gpu"):
        parts.append(row.gpu or "custom GPU")
    if varying.get("tp") or varying.get("pp"):
        parts.append(f"TP{row.tp}" + (f"xPP{row.pp}" if row.pp > 1 else ""))
    if varying.get("kv_dtype"):
        parts.append(f"KV {row.kv_dtype}")
    return " · ".join(parts) or (f"KV {row.kv_dtype}")


def _varying(rows: list) -> dict:
    return {axis: len({getattr(r, axis) for r in rows}) > 1 for axis in ("engine", "gpu", "tp", "pp", "kv_dtype")}


def capacity_chart(rows: Iterable, *, model: str, batch: int) -> Chart:
    """Weights + cache per GPU against context, and each GPU's usable memory; without a GPU, the cache alone."""
    rows = [r for r in rows if r.error is None and r.batch == batch]
    if not rows:
        raise InputError("no row could be estimated for the chart", where="plot", hint="see `kvplan sweep` with the same options")
    varying = _varying(rows)
    curves: dict[str, list] = {}
    limits: dict[str, float] = {}
    with_gpu = rows[0].gpu_cache_bytes is not None
    for r in rows:
        # the memory a deployment needs does not depend on the GPU (only the limit does): one curve per TP/dtype
        points = curves.setdefault(_key_label(r, varying, gpu=False), [])
        if not any(x == r.seq for x, _ in points):
            y = r.gpu_weights_bytes + r.gpu_cache_bytes if with_gpu else r.cache_bytes
            points.append((r.seq, y / GiB))
        if with_gpu:
            usable = r.gpu_weights_bytes + r.gpu_cache_bytes + r.gpu_free_bytes
            limits[f"usable: {r.gpu or 'GPU'}"] = usable / GiB
    series = [Series(label, tuple(x for x, _ in pts), tuple(y for _, y in pts)) for label, pts in curves.items()]
    if with_gpu:
        xs = tuple(sorted({r.seq for r in rows}))
        weights = {}
        for r in rows:
            weights.setdefault(f"weights alone ({'TP' + str(r.tp) if varying['tp'] else 'per GPU'})", r.gpu_weights_bytes / GiB)
        series += [Series(label, xs, tuple(w for _ in xs), limit=True) for label, w in weights.items()]
        series += [Series(label, xs, tuple(v for _ in xs), limit=True) for label, v in limits.items()]
    y_label = "GiB per GPU (most loaded)" if with_gpu else "KV cache, GiB (all GPUs)"
    what = f"weights + KV cache of {batch} sequence{'s' if batch > 1 else ''}" if with_gpu else f"KV cache of {batch} sequence{'s' if batch > 1 else ''}"
    # every row the textbook cache's (an engine with no paged pool, no runtime of its own: the static engine)
    textbook = " (textbook: no engine overhead)" if with_gpu and not any(engines.get(e).paged for e in {r.engine for r in rows}) else ""
    return Chart(title=f"{model}: {what} vs context{textbook}", x_label="context length (tokens)", y_label=y_label, series=tuple(series))


def concurrency_chart(rows: Iterable, *, model: str) -> Chart:
    rows = [r for r in rows if r.error is None]
    if not rows:
        raise InputError("no row could be estimated for the chart", where="plot", hint="see `kvplan sweep` with the same options")
    if rows[0].max_batch is None and rows[0].max_concurrency is None:
        raise InputError("the concurrency chart needs a GPU", where="--gpu", hint="add --gpu NAME[,NAME...] or --gpu-mem SIZE")
    first_batch = rows[0].batch
    rows = [r for r in rows if r.batch == first_batch]
    varying = _varying(rows)
    curves: dict[str, list] = {}
    for r in rows:
        value = r.max_concurrency if r.max_concurrency is not None else r.max_batch
        curves.setdefault(_key_label(r, varying), []).append((r.seq, float(value or 0)))
    series = tuple(Series(label, tuple(x for x, _ in pts), tuple(y for _, y in pts)) for label, pts in curves.items())
    positive = [y for s in series for y in s.ys if y > 0]
    y_log = bool(positive) and max(positive) / min(positive) > 50
    return Chart(title=f"{model}: concurrent sequences that fit vs context", x_label="context length (tokens)",
                 y_label="max concurrent sequences", series=series, y_log=y_log)


def x_tick(chart: Chart, x) -> str:
    return f"{x:,.3g} ms" if chart.x_unit == "ms" else token_label(x)


def pareto_chart(points, *, model: str) -> Chart:
    """Plans' cost per million output tokens against their TPOT estimate, one series per engine, and the Pareto front
    (the plans no other is both cheaper and faster than)."""
    if not points:
        raise InputError("no priced plan with a latency estimate to draw", where="--plot", hint="give --price for the GPUs")
    by_engine: dict[str, list] = {}
    for p in points:
        by_engine.setdefault(p.engine, []).append(p)
    series = [Series(engine, tuple(p.tpot_ms for p in pts), tuple(p.usd_per_million_output_tokens for p in pts), scatter=True)
              for engine, pts in sorted(by_engine.items())]
    front = sorted((p for p in points if p.front), key=lambda p: p.tpot_ms)
    series.append(Series("Pareto front", tuple(p.tpot_ms for p in front), tuple(p.usd_per_million_output_tokens for p in front)))
    ys = [p.usd_per_million_output_tokens for p in points]
    return Chart(title=f"{model}: cost per million output tokens vs TPOT of every plan", x_label="TPOT estimate (ms)",
                 y_label="$ per million output tokens", series=tuple(series),
                 y_log=min(ys) > 0 and max(ys) / min(ys) > 50, x_unit="ms")


def token_label(n: int) -> str:
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10}K"
    return f"{n:,}"


# ------------------------------------------------------------------ terminal

def render_text(chart: Chart, *, width: int = 72, height: int = 18, columns: int | None = None) -> str:
    """The chart as lines of unicode text: y axis on the left, log2 x axis below, a legend after. With `columns`
    (the terminal's), the title and legend wrap between words at that width; no line has trailing spaces."""
    import math
    import textwrap

    width, height = max(width, 20), max(height, 6)
    xs = sorted({x for s in chart.series for x in s.xs})
    ys = [y for s in chart.series for y in s.ys]
    if not xs or not ys:
        return chart.title + "\n(no data)\n"
    x0, x1 = math.log2(xs[0]), math.log2(xs[-1])
    if chart.y_log:
        positive = [y for y in ys if y > 0] or [1.0]
        lo, hi = math.log10(min(positive)), math.log10(max(positive))
    else:
        lo, hi = 0.0, max(ys) * 1.05 or 1.0
    if hi <= lo:
        hi = lo + 1.0

    def col(x: float) -> int:
        return 0 if x1 == x0 else round((math.log2(x) - x0) / (x1 - x0) * (width - 1))

    def row(y: float) -> int | None:
        if chart.y_log:
            if y <= 0:
                return None
            y = math.log10(y)
        return height - 1 - round((y - lo) / (hi - lo) * (height - 1))

    grid = [[" "] * width for _ in range(height)]
    legend = []
    curves = [s for s in chart.series if not s.limit]
    limits = [s for s in chart.series if s.limit]
    for i, s in enumerate(limits):
        r = row(s.ys[0])
        mark = _LIMIT_MARKS[i % len(_LIMIT_MARKS)]  # a line of its own glyph: told apart without colour
        if r is not None and 0 <= r < height:
            for c in range(width):
                if grid[r][c] == " ":
                    grid[r][c] = mark
        legend.append(f"{mark * 3} {s.label} ({_y_text(chart, s.ys[0])})")
    for i, s in enumerate(curves):
        marker, join = _MARKERS[i % len(_MARKERS)], _JOINS[i % len(_JOINS)]
        pts = sorted(zip(s.xs, s.ys))
        for (xa, ya), (xb, yb) in ([] if s.scatter else zip(pts, pts[1:])):  # join neighbouring points with its own glyph
            ca, cb = col(xa), col(xb)
            for c in range(ca + 1, cb):
                frac = (c - ca) / (cb - ca)
                r = row(ya + frac * (yb - ya)) if not chart.y_log else row(math.exp(math.log(max(ya, 1e-9)) + frac * (math.log(max(yb, 1e-9)) - math.log(max(ya, 1e-9)))))
                if r is not None and 0 <= r < height and grid[r][c] in " " + _LIMIT_MARKS:
                    grid[r][c] = join
        for x, y in pts:
            r = row(y)
            if r is not None and 0 <= r < height:
                grid[r][col(x)] = marker
        legend.append(f"{join}{marker}{join} {s.label}" if not s.scatter else f" {marker}  {s.label}")
    labels = {0: hi, height - 1: lo, (height - 1) // 2: (hi + lo) / 2}
    gutter = 10

    def wrapped(text: str, indent: str = "") -> list[str]:
        if not columns:
            return [text]
        return textwrap.wrap(text, columns, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [text]

    lines = wrapped(chart.title) + [f"{chart.y_label}" + (" (log scale)" if chart.y_log else "")]
    for r in range(height):
        label = ""
        if r in labels:
            value = 10 ** labels[r] if chart.y_log else labels[r]
            label = _y_text(chart, value)
        lines.append(f"{label:>{gutter}} ┤" + "".join(grid[r]))
    axis = [" "] * width
    tick_labels = [" "] * (width + 8)
    for x in xs:
        c = col(x)
        axis[c] = "┬"
        text = x_tick(chart, x)
        start = max(0, min(c - len(text) // 2, width + 8 - len(text)))
        if all(ch == " " for ch in tick_labels[max(0, start - 1):start + len(text) + 1]):
            tick_labels[start:start + len(text)] = text
    lines.append(" " * gutter + " └" + "".join(axis))
    lines.append(" " * (gutter + 2) + "".join(tick_labels).rstrip())
    lines += wrapped(" " * (gutter + 2) + chart.x_label + " (log scale)", " " * (gutter + 2))
    for item in legend:
        lines += wrapped(item, "     ")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _y_text(chart: Chart, value: float) -> str:
    if "GiB" in chart.y_label:
        return f"{value:,.1f} GiB"
    return f"{value:,.0f}" if value >= 10 else f"{value:,.2f}"


# ------------------------------------------------------------------ matplotlib (optional)

def image_format(path: str, fmt: str | None) -> str:
    """'png' or 'svg' for an image file: --format when given, else the file's extension; a --format that
    contradicts the extension is refused (issue 15: `-o c.svg --format png` wrote a PNG named .svg)."""
    from pathlib import Path

    if not path:
        raise InputError("is empty", where="--output", hint="give a file name, or leave the option out")
    suffix = Path(path).suffix.lstrip(".").lower()
    if fmt and suffix in ("png", "svg") and suffix != fmt.lower():
        raise InputError(f"--format {fmt} but the file is named .{suffix}", where="--format",
                         hint="name the file for its format, or leave --format out")
    fmt = (fmt or suffix).lower()
    if fmt not in ("png", "svg"):
        raise InputError(f"cannot write a {fmt or 'format-less'} image", where="--output",
                         hint="name the file .png or .svg, or pass --format png|svg")
    return fmt


def render_file(chart: Chart, path: str, *, fmt: str | None = None, dpi: int = 120) -> None:
    """Write the chart as PNG or SVG (by `fmt` or the file's extension). Needs matplotlib (kvplan[plot])."""
    fmt = image_format(path, fmt)
    try:
        # a bare Figure (no pyplot) draws with the Agg/SVG canvases and touches no GUI backend
        from matplotlib.figure import Figure
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    except ImportError:
        raise InputError("drawing image files needs matplotlib", where="--output",
                         hint="pip install 'kvplan[plot]', or leave out --output for a terminal chart") from None
    fig = Figure(figsize=(9, 5.2), dpi=dpi, layout="constrained")
    ax = fig.add_subplot()
    curves = [s for s in chart.series if not s.limit]
    limits = [s for s in chart.series if s.limit]
    for i, s in enumerate(curves):
        pts = sorted(zip(s.xs, s.ys))
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker=_MPL_MARKERS[i % len(_MPL_MARKERS)], markersize=4,
                linewidth=0 if s.scatter else 1.6, label=s.label)
    for i, s in enumerate(limits):
        ax.axhline(s.ys[0], linestyle="--" if "usable" in s.label else ":", linewidth=1.2, color=f"C{(len(curves) + i) % 10}",
                   label=f"{s.label} ({_y_text(chart, s.ys[0])})")
    ax.set_xscale("log", base=2)
    xs = sorted({x for s in chart.series for x in s.xs})
    ax.xaxis.set_major_locator(FixedLocator(xs))
    ax.xaxis.set_minor_locator(NullLocator())
    if chart.x_unit == "ms":
        ax.xaxis.set_major_locator(FixedLocator(xs[:: max(1, len(xs) // 8)]))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.3g}"))
    else:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: token_label(int(round(v)))))
    if chart.y_log:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlabel(chart.x_label)
    ax.set_ylabel(chart.y_label)
    ax.set_title(chart.title, fontsize=11, loc="left")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="best")

    write_file(path, lambda target: fig.savefig(target, format=fmt), what="the image")
