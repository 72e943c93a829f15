"""`kvplan plot MODEL`: capacity curves against context length, as a PNG/SVG file or a terminal chart."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from kvplan.cli.options import CalibrationOpt, ModelsDirOpt, OfflineOpt, with_model_lookup, whole_number


class Kind(str, Enum):
    capacity = "capacity"
    concurrency = "concurrency"


class ImageFormat(str, Enum):
    png = "png"
    svg = "svg"


def register(app) -> None:
    from kvplan.cli.edge import guarded

    app.command(name="plot")(guarded(with_model_lookup(plot)))


def plot(
    model: Annotated[str, typer.Argument(help="Bundled model name or alias, spec YAML, config.json, or a folder with one.", show_default=False)],
    kind: Annotated[Kind, typer.Option("--kind", "-k", help="capacity: weights + cache per GPU vs context, against each GPU's usable memory; concurrency: the most sequences that fit vs context.")] = Kind.capacity,
    seq: Annotated[str, typer.Option("--seq", "-s", help="Context lengths (x axis): a list or range, e.g. 1K..128K*2.")] = "1K..128K*2",
    batch: Annotated[int, typer.Option("--batch", "-b", help="Sequences in the capacity chart's cache.", parser=whole_number)] = 1,
    kv_dtype: Annotated[str, typer.Option("--kv-dtype", "--kv-cache-dtype", help="KV dtypes, comma separated: one curve each.")] = "auto",
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="GPUs from the catalog, comma separated: one curve and one usable-memory line each.", show_default=False)] = None,
    gpu_mem: Annotated[Optional[str], typer.Option("--gpu-mem", help="Memory of one GPU not in the catalog, e.g. 80GiB.", show_default=False)] = None,
    tp: Annotated[str, typer.Option("--tp", help="Tensor parallel sizes, comma separated: one curve each.")] = "1",
    pp: Annotated[str, typer.Option("--pp", help="Pipeline parallel sizes, comma separated.")] = "1",
    engine: Annotated[Optional[str], typer.Option("--engine", help="Engines, comma separated (static: the textbook, vllm, sglang, trtllm). Default: static for --kind capacity (the bytes a cache takes); for --kind concurrency vllm with a GPU, as estimate and sweep judge.", show_default=False)] = None,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="Weight dtype/format. Default: the model's.", show_default=False)] = None,
    gpu_util: Annotated[Optional[str], typer.Option("--gpu-util", help="Fraction of GPU memory usable.", show_default=False)] = None,
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Write an image (.png or .svg; needs matplotlib: pip install 'kvplan[plot]'). Without it: a terminal chart.", show_default=False)] = None,
    image_format: Annotated[Optional[ImageFormat], typer.Option("--format", help="Image format when the file name does not say.", show_default=False)] = None,
    width: Annotated[Optional[int], typer.Option("--width", help="Terminal chart width in characters. Default: 72, or less to fit the terminal.", show_default=False, parser=whole_number)] = None,
    height: Annotated[int, typer.Option("--height", help="Terminal chart height in lines.", parser=whole_number)] = 18,
    calibration: CalibrationOpt = None,
    models_dir: ModelsDirOpt = None,
    offline: OfflineOpt = False,
):
    """Capacity curves for MODEL: how memory and concurrency follow context length, per GPU, TP size and
    KV dtype. Writes a PNG or SVG with --output, else draws the chart in the terminal."""
    import sys

    from kvplan.analysis import plotting, sweep as sw
    from kvplan.cli.commands.sweep import build_grid
    from kvplan import engines
    from kvplan.core.errors import InputError

    if batch < 1:
        raise InputError(f"must be at least 1, got {batch}", where="--batch")
    from kvplan.cli import render

    if width is None:  # the plot area, beside the y axis labels (12 columns), fits the terminal
        width = max(20, min(72, render.width() - 14))
    # the terminal chart needs room for its axis labels; beyond these it only wraps into noise
    for flag, value, low, high in (("--width", width, 20, 1000), ("--height", height, 6, 500)):
        if not low <= value <= high:
            raise InputError(f"must be from {low} to {high} characters, got {value}" if flag == "--width" else
                             f"must be from {low} to {high} lines, got {value}", where=flag,
                             hint="the defaults are 72 x 18" if not output else "it sizes the terminal chart only; drop it with --output")
    if image_format is not None and output is None:
        raise InputError("--format chooses the image format of --output", where="--format",
                         hint="add -o FILE.png or -o FILE.svg, or leave --format out for a terminal chart")
    from kvplan.core.io import refuse_over_inputs

    refuse_over_inputs(output, [model, calibration, *(models_dir or [])], option="--output")
    if output is not None:
        plotting.image_format(output, image_format.value if image_format else None)  # before any work
        _check_matplotlib()
    if engine is None and kind is Kind.capacity:
        # the capacity chart draws the bytes a cache takes against the memory left for it: the textbook's picture (a
        # paged engine's pool is preallocated, flat in context); its title says so. The concurrency chart, a
        # verdict per length, is the default engine's (vLLM with a GPU), as estimate and sweep judge.
        engine = "static"
    spec, grid, make_request, _ = build_grid(model, seq=seq, batch=str(batch), kv_dtype=kv_dtype, gpu=gpu, gpu_mem=gpu_mem, tp=tp,
                                             pp=pp, engine=engine, dtype=dtype, gpu_util=gpu_util,
                                             calibration=calibration)
    if len(grid.seq) < 2:
        raise InputError("a curve needs at least two context lengths", where="--seq", hint="e.g. 1K..128K*2")
    if len(grid) > 100_000:
        raise InputError(f"{len(grid):,} points are more than a chart can show", where="--seq", hint="use fewer values per axis")
    refusals: list = []
    rows = list(sw.rows(grid, make_request, engines.get, model=spec.name, on_refusal=refusals.append))
    if refusals and all(r.error for r in rows):
        raise refusals[-1]
    if kind is Kind.capacity:
        chart = plotting.capacity_chart(rows, model=spec.name, batch=batch)
    else:
        chart = plotting.concurrency_chart(rows, model=spec.name)
    for message in sorted({r.error for r in rows if r.error}):
        print(f"note: left out: {message}", file=sys.stderr)
    if output is not None:
        plotting.render_file(chart, output, fmt=image_format.value if image_format else None)
        print(f"wrote {output}", file=sys.stderr)
    else:
        sys.stdout.write(plotting.render_text(chart, width=width, height=height, columns=render.width()))


def _check_matplotlib() -> None:
    import importlib.util

    from kvplan.core.errors import InputError

    if importlib.util.find_spec("matplotlib") is None:
        raise InputError("drawing image files needs matplotlib", where="--output",
                         hint="pip install 'kvplan[plot]', or leave out --output for a terminal chart")
