"""`kvplan sweep MODEL`: estimates over a grid of seq, batch, KV dtype, GPU, TP, PP and engine, streamed as rows."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, List, Optional

import typer

from kvplan.cli.options import CalibrationOpt, ModelsDirOpt, OfflineOpt, with_model_lookup, whole_number


class Format(str, Enum):
    text = "text"
    csv = "csv"
    jsonl = "jsonl"
    markdown = "markdown"


# how often the streamed output is flushed: the first rows at once, then in batches (a flush per row
# would cost more than computing the row)
_FLUSH_EVERY = 256
_TEXT_CHUNK = 64


def register(app) -> None:
    from kvplan.cli.edge import guarded

    app.command(name="sweep")(guarded(with_model_lookup(sweep)))


def sweep(
    model: Annotated[str, typer.Argument(help="Bundled model name or alias, spec YAML, config.json, or a folder with one.", show_default=False)],
    seq: Annotated[Optional[str], typer.Option("--seq", "-s", help="Tokens per sequence: a list or range, e.g. 4K,8K or 4K..128K*2 (doubling; A..B alone doubles too). Default: the model's max context.", show_default=False)] = None,
    batch: Annotated[str, typer.Option("--batch", "-b", help="Concurrent sequences: a list or range, e.g. 1,8,64 or 1..64+8 (A..B alone steps by 1).")] = "1",
    kv_dtype: Annotated[str, typer.Option("--kv-dtype", "--kv-cache-dtype", help="KV dtypes, comma separated: auto, bf16, fp16, fp8, fp8_e5m2, int8, int4.")] = "auto",
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="GPUs from the catalog, comma separated (kvplan gpus).", show_default=False)] = None,
    gpu_mem: Annotated[Optional[str], typer.Option("--gpu-mem", help="Memory of one GPU not in the catalog (one value), e.g. 80GiB.", show_default=False)] = None,
    tp: Annotated[str, typer.Option("--tp", help="Tensor parallel sizes: a list or range, e.g. 1,2,4,8 or 1..8 (A..B alone doubles).")] = "1",
    pp: Annotated[str, typer.Option("--pp", help="Pipeline parallel sizes: a list or range.")] = "1",
    engine: Annotated[Optional[str], typer.Option("--engine", help="Engines, comma separated: static (the textbook), vllm, sglang, trtllm. Default: vllm with a GPU, static without.", show_default=False)] = None,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="Weight dtype/format (one value). Default: the model's.", show_default=False)] = None,
    gpu_util: Annotated[Optional[str], typer.Option("--gpu-util", help="Fraction of GPU memory the engine may use.", show_default=False)] = None,
    reserve: Annotated[Optional[str], typer.Option("--reserve", help="Memory per GPU kept back (static engine).", show_default=False)] = None,
    kv_cache_memory: Annotated[Optional[str], typer.Option("--kv-cache-memory", help="Bytes per GPU for the KV cache; skips the budget model.", show_default=False)] = None,
    block_size: Annotated[Optional[int], typer.Option("--block-size", help="Paged-attention block size in tokens.", show_default=False, parser=whole_number)] = None,
    max_num_seqs: Annotated[Optional[int], typer.Option("--max-num-seqs", help="vLLM max_num_seqs.", show_default=False, parser=whole_number)] = None,
    max_num_batched_tokens: Annotated[Optional[int], typer.Option("--max-num-batched-tokens", help="vLLM max_num_batched_tokens.", show_default=False, parser=whole_number)] = None,
    vllm_args: Annotated[Optional[str], typer.Option("--vllm-args", help="Extra `vllm serve` options for every vllm row (speculative decoding, LoRA, offload, parallelism, KV connectors; docs/engines/features/).", show_default=False)] = None,
    sglang_args: Annotated[Optional[str], typer.Option("--sglang-args", help="Extra `python -m sglang.launch_server` options for every sglang row (disaggregation, speculative decoding, DP attention, LoRA, HiCache; docs/engines/features/).", show_default=False)] = None,
    engine_option: Annotated[Optional[List[str]], typer.Option("--engine-option", help="An engine setting KEY=VALUE for every row (repeatable), as for estimate; rows of an engine that does not read the key carry the error.", show_default=False)] = None,
    gpu_reserved: Annotated[Optional[str], typer.Option("--gpu-reserved", help="Memory each GPU has in use before the engine starts (sglang, trtllm), e.g. 1.2GiB.", show_default=False)] = None,
    calibration: CalibrationOpt = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="text (aligned table), csv, jsonl (one JSON object per row) or markdown. All stream.")] = Format.text,
    models_dir: ModelsDirOpt = None,
    offline: OfflineOpt = False,
):
    """One row per combination of the grid's axes: cache bytes, per-GPU fit, max batch and max context.

    Rows stream as they are computed (csv, jsonl and markdown row by row; text in blocks). A combination
    an engine refuses (an engine not modelled yet, a TP size that does not divide the KV heads) becomes
    rows with the `error` column set; exit 3 when every row was refused."""
    import sys

    from kvplan.analysis import sweep as sw
    from kvplan import engines

    spec, grid, make_request, kv_names = build_grid(
        model, seq=seq, batch=batch, kv_dtype=kv_dtype, gpu=gpu, gpu_mem=gpu_mem, tp=tp, pp=pp, engine=engine, dtype=dtype,
        gpu_util=gpu_util, reserve=reserve, kv_cache_memory=kv_cache_memory, block_size=block_size, max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens, engine_options=engine_option, gpu_reserved=gpu_reserved,
        vllm_args=vllm_args, calibration=calibration, sglang_args=sglang_args)
    counts = {"rows": 0, "refused": 0}
    refusals: list = []

    def counted(stream):
        for row in stream:
            counts["rows"] += 1
            counts["refused"] += row.error is not None
            yield row

    stream = counted(sw.rows(grid, make_request, engines.get, model=spec.name, on_refusal=refusals.append))
    out = sys.stdout
    if fmt is Format.csv:
        _write_lines(out, sw.iter_csv(stream))
    elif fmt is Format.jsonl:
        _write_lines(out, sw.iter_jsonl(stream))
    elif fmt is Format.markdown:
        _write_lines(out, _iter_markdown(stream, grid, spec.name, kv_names))
    else:
        _write_text(stream, grid, spec.name, kv_names)
    if counts["rows"] and counts["refused"] == counts["rows"]:
        raise refusals[-1]  # nothing could be judged: the reason's own exit code (2 bad input, 3 not modelled)


def build_grid(model: str, *, seq, batch, kv_dtype, gpu, gpu_mem, tp, pp, engine, dtype=None, gpu_util=None, reserve=None,
               kv_cache_memory=None, block_size=None, max_num_seqs=None, max_num_batched_tokens=None, engine_options=None,
               gpu_reserved=None, vllm_args=None, calibration=None, sglang_args=None):
    """Parse the grid flags (shared with `kvplan plot`): (spec, Grid, make_request, {kv name: resolved}).
    Bad values anywhere are bad input for the whole command (exit 2) before any row is printed. A site profile
    (--calibration) goes with the requests of the engine it was fitted on; it must be one of the grid's engines."""
    from kvplan.model import catalog
    from kvplan.analysis import sweep as sw
    from kvplan.core import units
    from kvplan.requests.build import LIMITS, build_request, refuse_paged_flags
    from kvplan.core.dtypes import dtype as lookup, resolve_kv_dtype
    from kvplan.engines import ENGINE_NAMES
    from kvplan.core.errors import InputError, did_you_mean

    spec = catalog.resolve_model(model)
    _check_single_flags(dtype=dtype, gpu=gpu, gpu_mem=gpu_mem, gpu_util=gpu_util, reserve=reserve, kv_cache_memory=kv_cache_memory,
                        block_size=block_size, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
                        gpu_reserved=gpu_reserved)

    def whole(where: str):
        # each value within the bound every command holds it to (requests/build.py LIMITS): a value beyond it is
        # bad input for the whole sweep, refused before any row (it would be the same error on every row)
        def parse(text: str) -> int:
            return units.parse_int(text, what=where, minimum=1, maximum=LIMITS[where])
        return parse

    def names(text: str | None, where: str) -> tuple:
        if text is None:
            return (None,)
        parts = tuple(dict.fromkeys(p.strip() for p in text.split(",")))
        if not all(parts):
            raise InputError(f"empty entry in {text!r}", where=where)
        return parts

    from kvplan.api.args import default_engine

    engine = default_engine(engine, gpu=gpu, gpu_mem=gpu_mem, kv_cache_memory=kv_cache_memory, reserve=reserve,
                            vllm_only=vllm_args is not None, sglang_args=sglang_args)
    engines = tuple(e.lower() for e in names(engine, "--engine"))
    for name in engines:
        if name not in ENGINE_NAMES:
            raise InputError(f"unknown engine {name!r}", where="--engine",
                             hint=did_you_mean(name, ENGINE_NAMES) or "one of " + ", ".join(ENGINE_NAMES))
    refuse_paged_flags(engines, block_size=block_size, max_num_seqs=max_num_seqs,
                       max_num_batched_tokens=max_num_batched_tokens)
    gpus = names(gpu, "--gpu")
    if gpu is not None:
        gpus = tuple(dict.fromkeys(catalog.find_gpu(g).name for g in gpus))
    grid = sw.Grid(
        seq=sw.parse_axis(seq, lambda t: units.parse_tokens(t, what="--seq"), where="--seq", default_step="*2")
        if seq is not None else (spec.max_context or 8192,),
        batch=sw.parse_axis(batch, whole("--batch"), where="--batch", default_step="+1"),
        kv_dtype=names(kv_dtype, "--kv-dtype"),
        gpu=gpus,
        tp=sw.parse_axis(tp, whole("--tp"), where="--tp", default_step="*2"),
        pp=sw.parse_axis(pp, whole("--pp"), where="--pp", default_step="+1"),
        engine=engines,
    )
    try:
        kv_names = {name: resolve_kv_dtype(name, lookup(spec.dtype)).name for name in grid.kv_dtype}
    except InputError as err:
        raise (err.located("--kv-dtype") if err.where is None else err) from None

    from kvplan import engines as registry

    # the engine's own launch options (the record's launch_args_flag) apply to rows of that engine only
    if vllm_args is not None and any(registry.get(e).launch_args_flag != "--vllm-args" for e in grid.engine):
        raise InputError("--vllm-args applies to the vllm engine", where="--vllm-args", hint="sweep with --engine vllm")
    if sglang_args is not None and any(registry.get(e).launch_args_flag != "--sglang-args" for e in grid.engine):
        raise InputError("--sglang-args applies to the sglang engine", where="--sglang-args", hint="sweep with --engine sglang")
    site = None
    if calibration is not None:
        from kvplan.engines.calibration import read_profile

        site = read_profile(calibration)
        if site.engine is not None and site.engine not in engines:
            raise InputError(f"the profile was fitted on {site.engine} logs; none of --engine {engine} is {site.engine}",
                             where=f"--calibration {calibration}", hint=f"add --engine {site.engine}")

    def make_request(combo, seq_tokens: int, batch_size: int):
        from kvplan import engines as registry

        req = build_request(model, seq=str(seq_tokens), batch=batch_size, kv_dtype=combo.kv_dtype, dtype=dtype,
                            gpu=combo.gpu, gpu_mem=gpu_mem, gpus=None, tp=combo.tp, pp=combo.pp, gpu_util=gpu_util,
                            reserve=reserve, kv_cache_memory=kv_cache_memory, block_size=block_size,
                            max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
                            gpu_reserved=gpu_reserved, engine_options=engine_options, vllm_args=vllm_args,
                            sglang_args=sglang_args, site=site if site is not None and site.engine in (None, combo.engine) else None)
        registry.get(combo.engine).accepts(req)
        return req

    return spec, grid, make_request, kv_names


def _check_single_flags(*, dtype, gpu, gpu_mem, gpu_util, reserve, kv_cache_memory, block_size, max_num_seqs,
                        max_num_batched_tokens, gpu_reserved=None) -> None:
    """The one-value flags are wrong for every row alike: refuse them before any row is printed, instead of
    streaming a grid of rows that all carry the same error."""
    from kvplan.core import dtypes, units
    from kvplan.core.errors import InputError

    if gpu is not None and gpu_mem is not None:
        raise InputError("give --gpu or --gpu-mem, not both", where="--gpu-mem", hint="--gpu for catalog GPUs, --gpu-mem for others")
    for flag, value in (("--reserve", reserve), ("--gpu-util", gpu_util)):
        if value is not None and gpu is None and gpu_mem is None:
            raise InputError(f"{flag} needs a GPU", where=flag, hint="add --gpu NAME or --gpu-mem SIZE")
    for flag, value in (("--block-size", block_size), ("--max-num-seqs", max_num_seqs),
                        ("--max-num-batched-tokens", max_num_batched_tokens)):
        if value is not None and value < 1:
            raise InputError(f"must be at least 1, got {value}", where=flag)
    if dtype is not None:
        try:
            dtypes.weight_format(dtype)
        except InputError as err:
            raise (err.located("--dtype") if err.where is None else err) from None
    if gpu_util is not None:
        units.parse_fraction(gpu_util, what="--gpu-util")
    for flag, value in (("--gpu-mem", gpu_mem), ("--reserve", reserve), ("--kv-cache-memory", kv_cache_memory),
                        ("--gpu-reserved", gpu_reserved)):
        if value is not None:
            units.parse_size(value, what=flag, zero_ok=flag == "--gpu-reserved")


def _write_lines(out, lines) -> None:
    for n, line in enumerate(lines):
        out.write(line)
        if n % _FLUSH_EVERY == 1:
            out.flush()
    out.flush()


# ------------------------------------------------------------------ human formats

def _tokens(n: int | None) -> str:
    if n is None:
        return "—"
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else f"{n:,}"


def _bytes(n: int | None) -> str:
    from kvplan.core.units import format_bytes

    return "—" if n is None else format_bytes(n)


def _columns(grid, has_gpu: bool, engines: tuple) -> list[tuple[str, str, int, object]]:
    from kvplan import engines as registry

    """(header, row attribute, width, formatter) for the columns a person needs: axes that vary, then figures."""
    yes_no = lambda v: "—" if v is None else ("yes" if v else "NO")  # noqa: E731
    count = lambda v: "—" if v is None else f"{v:,}"  # noqa: E731
    cols = []
    for axis, header, width, fmt in (("engine", "engine", 7, str), ("gpu", "gpu", 0, str), ("tp", "TP", 3, str),
                                     ("pp", "PP", 3, str), ("kv_dtype", "KV dtype", 9, str), ("seq", "seq", 8, _tokens),
                                     ("batch", "batch", 6, str)):
        values = getattr(grid, axis)
        if len(values) > 1 or axis in ("seq", "batch"):
            if axis == "gpu":
                width = max(len(str(v)) for v in values)
            cols.append((header, axis, max(width, len(header)), fmt))
    cols.append(("KV/token", "kv_bytes_per_token", 10, _bytes))
    if not has_gpu:
        cols.append(("cache", "cache_bytes", 11, _bytes))
    else:  # the whole-model cache is in csv/jsonl; per GPU is what decides the fit

        cols += [("GPU weights", "gpu_weights_bytes", 11, _bytes), ("GPU cache", "gpu_cache_bytes", 11, _bytes),
                 ("GPU free", "gpu_free_bytes", 11, _bytes), ("fits", "fits", 4, yes_no), ("max batch", "max_batch", 9, count),
                 ("max seq", "max_seq", 9, _tokens)]
        if any(registry.get(e).paged for e in engines):  # a paged pool's concurrency
            cols.append(("max conc.", "max_concurrency", 9, lambda v: "—" if v is None else f"{v:.2f}x"))
    return cols


def _title(grid, model: str, kv_names: dict) -> str:
    parts = [model]
    for axis, label in (("engine", "engine"), ("gpu", "GPU"), ("tp", "TP"), ("pp", "PP"), ("kv_dtype", "KV")):
        values = getattr(grid, axis)
        if len(values) == 1 and values[0] is not None:
            parts.append(f"{label} {kv_names.get(values[0], values[0]) if axis == 'kv_dtype' else values[0]}")
    return " · ".join(parts) + f" · {len(grid):,} rows"


def _write_text(stream, grid, model: str, kv_names: dict) -> None:
    """The grid as a table streamed in chunks of rows. Every column is as wide as its widest cell so far (a header
    wraps between its words instead), so no figure is ever cut; when a chunk's table is wider than the terminal,
    that chunk and every later one is printed as records instead: each row's axes on a line, its figures wrapped
    between them below (render.print_records)."""
    from rich import box
    from rich.measure import Measurement
    from rich.table import Table

    from kvplan.cli import render

    console = render.console()
    has_gpu = grid.gpu != (None,)
    cols = _columns(grid, has_gpu, grid.engine)
    console.print(_title(grid, model, kv_names), style="bold", highlight=False)
    axes = {"engine", "gpu", "tp", "pp", "kv_dtype", "seq", "batch"}
    keys = tuple(i for i, (_, attr, _, _) in enumerate(cols) if attr in axes)
    headers = [header for header, *_ in cols] + ["error"]
    # the widths only grow from chunk to chunk, so the columns of later chunks stay under the first one's headers
    widths = [max(len(w) for w in header.split()) for header in headers]
    state = {"first": True, "records": False}

    def cells_of(row) -> list[str]:
        return ([fmt(getattr(row, attr)) if not row.error or attr in axes else "" for _, attr, _, fmt in cols]
                + [row.error or ""])

    def flush(chunk):
        rows = [cells_of(row) for row in chunk]
        for row in rows:
            for i, cell in enumerate(row[:-1]):
                widths[i] = max(widths[i], len(cell))
            widths[-1] = max([widths[-1]] + [len(w) for w in row[-1].split()])
        errors = any(row.error for row in chunk)
        table = Table(box=box.SIMPLE_HEAD, show_header=state["first"], show_edge=False, pad_edge=False,
                      header_style="bold", collapse_padding=True)
        for header, width in zip(headers[:-1], widths):
            table.add_column(header, justify="right", width=width)
        if errors:  # the error words wrap in what is left; never below the longest word
            table.add_column("error", justify="left", min_width=widths[-1])
        for row, cells in zip(chunk, rows):
            table.add_row(*(cells if errors else cells[:-1]), style="red" if row.fits is False else None)
        narrowest = Measurement.get(console, console.options.update_width(10_000), table).minimum
        state["records"] = state["records"] or narrowest > console.width
        if state["records"]:
            # a record's axes say what they are ('TP 2 · seq 32K'); a name (engine, GPU) says it by itself
            named = [[f"{headers[i]} {c}" if i in keys and cols[i][1] not in ("engine", "gpu") and c else c
                      for i, c in enumerate(row)] for row in rows]
            render.print_records(console, None, headers, named, keys=keys)
        else:
            console.print(table)
        console.file.flush()
        state["first"] = False

    chunk = []
    for row in stream:
        chunk.append(row)
        if len(chunk) >= _TEXT_CHUNK:
            flush(chunk)
            chunk = []
    if chunk or state["first"]:
        flush(chunk)


def _iter_markdown(stream, grid, model: str, kv_names: dict):
    has_gpu = grid.gpu != (None,)
    cols = _columns(grid, has_gpu, grid.engine)
    yield f"**{_title(grid, model, kv_names)}**\n\n"
    yield "| " + " | ".join(h for h, *_ in cols) + " | error |\n"
    yield "|" + "|".join("---:" for _ in cols) + "|---|\n"
    for row in stream:
        cells = [fmt(getattr(row, attr)) for _, attr, _, fmt in cols]
        yield "| " + " | ".join(cells) + " | " + (row.error or "").replace("|", "\\|") + " |\n"
