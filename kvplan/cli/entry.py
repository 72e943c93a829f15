"""The command line: parses options, calls the layers below, renders, maps errors to exit codes.

Commands raise KvplanError; `_guarded` is the one place that turns them into a one-line message on
stderr and the contract's exit code (DESIGN.md). Heavy modules are imported inside commands so that
`kvplan --help` stays fast and nothing here imports torch.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Annotated, Optional

import typer

from kvplan.core.errors import EXIT_NO, EXIT_OK, InputError, KvplanError

app = typer.Typer(
    name="kvplan",
    help="KV-cache memory planner for LLM serving: exact cache bytes, engine-faithful budgets, CI checks, GPU probes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from kvplan import __version__

        print(f"kvplan {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", help="Print kvplan's version and exit.", callback=_version,
                                                is_eager=True)] = False) -> None:
    """KV-cache memory planner for LLM serving: exact cache bytes, engine-faithful budgets, CI checks, GPU probes."""


def _guarded(command):
    """Map kvplan's exceptions to one stderr line and an exit code; tracebacks only with KVPLAN_DEBUG=1."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except KvplanError as err:
            if os.environ.get("KVPLAN_DEBUG") == "1":
                raise
            print(f"error: {err.one_line()}", file=sys.stderr)
            raise typer.Exit(err.exit_code) from None
        except RecursionError:
            if os.environ.get("KVPLAN_DEBUG") == "1":
                raise
            print("error: input is nested too deeply to read", file=sys.stderr)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:  # caught here: typer would turn it into a silent exit 130
            print("error: interrupted", file=sys.stderr)
            raise typer.Exit(130) from None

    return wrapper


# ------------------------------------------------------------------ shared options

ModelArg = Annotated[str, typer.Argument(help="Bundled model name or alias, spec YAML, config.json, or a folder with one.", show_default=False)]
SeqOpt = Annotated[Optional[str], typer.Option("--seq", "-s", help="Tokens per sequence (max_model_len): 8192, 8k (=8000), 32K (=32768). Default: the model's max context.", show_default=False)]
BatchOpt = Annotated[int, typer.Option("--batch", "-b", help="Concurrent sequences.")]
KvDtypeOpt = Annotated[str, typer.Option("--kv-dtype", help="KV cache dtype: auto (model dtype), fp32, fp16, bf16, fp8, fp8_e4m3, fp8_e5m2, int8, int4.")]
DtypeOpt = Annotated[Optional[str], typer.Option("--dtype", help="Weight dtype/format: bf16, fp16, fp32, fp8, int8, int4 (GPTQ/AWQ, group 128). Default: the model's.", show_default=False)]
GpuOpt = Annotated[Optional[str], typer.Option("--gpu", help="GPU from the catalog (kvplan gpus), e.g. h100-sxm-80gb, h100, a100-80gb.", show_default=False)]
GpuMemOpt = Annotated[Optional[str], typer.Option("--gpu-mem", help="Memory of one GPU, for GPUs not in the catalog: 80GiB, 24GB, 81559MiB.", show_default=False)]
GpusOpt = Annotated[Optional[int], typer.Option("--gpus", help="Number of GPUs (= TP x PP); sets --tp when --tp is not given.", show_default=False)]
TpOpt = Annotated[Optional[int], typer.Option("--tp", help="Tensor parallel size.", show_default=False)]
PpOpt = Annotated[int, typer.Option("--pp", help="Pipeline parallel size.")]
EngineOpt = Annotated[str, typer.Option("--engine", help="static (contiguous, like transformers' StaticCache), vllm, sglang, trtllm.")]
EngineVersionOpt = Annotated[Optional[str], typer.Option("--engine-version", help="Engine release whose rules to mirror: vllm 0.33 (default) or 0.19; sglang 0.5.23; trtllm 1.x.", show_default=False)]
GpuUtilOpt = Annotated[Optional[str], typer.Option("--gpu-util", help="Fraction of GPU memory the engine may use (vLLM gpu_memory_utilization). static default 0.9.", show_default=False)]
ReserveOpt = Annotated[Optional[str], typer.Option("--reserve", help="Memory per GPU kept back for runtime overhead (static engine); overrides --gpu-util.", show_default=False)]
KvMemOpt = Annotated[Optional[str], typer.Option("--kv-cache-memory", help="Bytes per GPU for the KV cache (vLLM kv_cache_memory_bytes); skips the budget model.", show_default=False)]
BlockOpt = Annotated[Optional[int], typer.Option("--block-size", help="Paged-attention block size in tokens (engine default when absent).", show_default=False)]
MaxSeqsOpt = Annotated[Optional[int], typer.Option("--max-num-seqs", help="vLLM max_num_seqs.", show_default=False)]
MaxTokOpt = Annotated[Optional[int], typer.Option("--max-num-batched-tokens", help="vLLM max_num_batched_tokens.", show_default=False)]
KvHeadsOpt = Annotated[Optional[int], typer.Option("--kv-heads", help="What-if: override the KV heads of every attention layer.", show_default=False)]
HeadDimOpt = Annotated[Optional[int], typer.Option("--head-dim", help="What-if: override the head dimension.", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object (keys: docs/json.md).")]


def build_request(model: str, *, seq: str | None, batch: int, kv_dtype: str, dtype: str | None, gpu: str | None,
                  gpu_mem: str | None, gpus: int | None, tp: int | None, pp: int, gpu_util: str | None = None,
                  reserve: str | None = None, kv_cache_memory: str | None = None, block_size: int | None = None,
                  max_num_seqs: int | None = None, max_num_batched_tokens: int | None = None,
                  kv_heads: int | None = None, head_dim: int | None = None):
    """Turn command-line values into an EngineRequest, validating each (shared by estimate, check, probe, sweep)."""
    from fractions import Fraction

    from kvplan.model import catalog
    from kvplan.core import dtypes, units
    from kvplan.engines import plan
    from kvplan.engines import EngineRequest

    spec = catalog.resolve_model(model)
    if kv_heads is not None or head_dim is not None:
        spec = override_spec(spec, kv_heads=kv_heads, head_dim=head_dim)
    if gpu and gpu_mem:
        raise InputError("give --gpu or --gpu-mem, not both", where="--gpu-mem")
    # upper bounds far beyond any deployment: they catch typos and keep every loop and table finite
    for name, value, limit in (("--batch", batch, 2**31), ("--pp", pp, 4096), ("--tp", tp, 4096), ("--gpus", gpus, 2**20),
                               ("--block-size", block_size, 2**20), ("--max-num-seqs", max_num_seqs, 2**31),
                               ("--max-num-batched-tokens", max_num_batched_tokens, 2**40)):
        if value is not None and value < 1:
            raise InputError(f"must be at least 1, got {value}", where=name)
        if value is not None and value > limit:
            raise InputError(f"{value} is implausibly large (limit {limit})", where=name)
    if gpus is not None:
        if tp is None:
            if gpus % pp:
                raise InputError(f"--gpus {gpus} is not a multiple of --pp {pp}", where="--gpus")
            tp = gpus // pp
        elif tp * pp != gpus:
            raise InputError(f"--gpus {gpus} but --tp {tp} x --pp {pp} = {tp * pp}", where="--gpus", hint="drop --gpus or make them agree")
    tp = tp or 1
    seq_tokens = units.parse_tokens(seq, what="--seq") if seq is not None else (spec.max_context or 8192)
    try:
        kv = dtypes.resolve_kv_dtype(kv_dtype, dtypes.dtype(spec.dtype))
    except InputError as err:
        raise err.located("--kv-dtype") from None
    try:
        weight_fmt = dtypes.weight_format(dtype) if dtype else None
    except InputError as err:
        raise err.located("--dtype") from None
    util = units.parse_fraction(gpu_util, what="--gpu-util") if gpu_util is not None else None
    hardware = None
    if gpu or gpu_mem:
        if gpu:
            entry = catalog.find_gpu(gpu)
            name, capacity = entry.name, entry.capacity_bytes
        else:
            name, capacity = None, units.parse_size(gpu_mem, what="--gpu-mem")
        hardware = plan.Hardware(name, capacity, gpu_util=util or plan.DEFAULT_GPU_UTIL,
                                 reserve_bytes=units.parse_size(reserve, what="--reserve") if reserve else None)
        if hardware.reserved_bytes >= capacity:
            raise InputError(f"reserve {hardware.reserved_bytes} B leaves nothing of {capacity} B", where="--reserve")
    elif reserve:
        raise InputError("--reserve needs a GPU", where="--reserve", hint="add --gpu NAME or --gpu-mem SIZE")
    return EngineRequest(
        spec=spec, seq=seq_tokens, batch=batch, kv_dtype=kv, kv_dtype_name=kv_dtype, weight_fmt=weight_fmt, tp=tp, pp=pp,
        hardware=hardware, gpu_util=util,
        kv_cache_memory=units.parse_size(kv_cache_memory, what="--kv-cache-memory") if kv_cache_memory else None,
        block_size=block_size, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
    )


def override_spec(spec, *, kv_heads: int | None, head_dim: int | None):
    """What-if: the same model with other KV heads or head dim on every attention layer."""
    from kvplan.core.spec import spec_from_mapping, spec_to_mapping

    mapping = spec_to_mapping(spec)
    if kv_heads is not None:
        mapping["kv_heads"] = kv_heads
        (mapping.get("layout") or {}).pop("kv_heads", None)
    if head_dim is not None:
        mapping["head_dim"] = head_dim
        mapping.pop("v_head_dim", None)
    try:
        return spec_from_mapping(mapping, source="--kv-heads/--head-dim")
    except InputError as err:
        raise InputError(err.what, where="--kv-heads" if kv_heads is not None else "--head-dim", hint=err.hint) from None


@app.command()
@_guarded
def estimate(
    model: ModelArg,
    seq: SeqOpt = None,
    batch: BatchOpt = 1,
    kv_dtype: KvDtypeOpt = "auto",
    dtype: DtypeOpt = None,
    gpu: GpuOpt = None,
    gpu_mem: GpuMemOpt = None,
    gpus: GpusOpt = None,
    tp: TpOpt = None,
    pp: PpOpt = 1,
    engine: EngineOpt = "static",
    engine_version: EngineVersionOpt = None,
    gpu_util: GpuUtilOpt = None,
    reserve: ReserveOpt = None,
    kv_cache_memory: KvMemOpt = None,
    block_size: BlockOpt = None,
    max_num_seqs: MaxSeqsOpt = None,
    max_num_batched_tokens: MaxTokOpt = None,
    kv_heads: KvHeadsOpt = None,
    head_dim: HeadDimOpt = None,
    json_out: JsonOpt = False,
):
    """KV cache, weights and fit for MODEL at --seq tokens x --batch sequences (exit 1 if a GPU was given and it does not fit)."""
    from kvplan.cli import render
    from kvplan.engines import engine_module

    module = engine_module(engine)
    request = build_request(model, seq=seq, batch=batch, kv_dtype=kv_dtype, dtype=dtype, gpu=gpu, gpu_mem=gpu_mem,
                            gpus=gpus, tp=tp, pp=pp, gpu_util=gpu_util, reserve=reserve, kv_cache_memory=kv_cache_memory,
                            block_size=block_size, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
                            kv_heads=kv_heads, head_dim=head_dim)
    if engine_version and engine.strip().lower() == "static":
        raise InputError("the static engine has no release to choose", where="--engine-version", hint="use it with --engine vllm, sglang or trtllm")
    result = module.estimate(request, version=engine_version) if engine_version else module.estimate(request)
    if request.spec.source and request.spec.source.endswith(".json") and request.spec.notes:
        # what kvplan assumed while reading a config.json (a missing dtype, an untested model_type): on stderr,
        # so --json output stays clean
        print(f"note: {request.spec.notes}", file=sys.stderr)
    if json_out:
        print(render.to_json(result))
    else:
        out = render.console()
        tables = getattr(module, "render_tables", render.estimate_table)(result)
        for table in tables:
            out.print(table)
        err = render.console(stderr=True)
        for note in result.notes:
            err.print(f"note: {note}")
    if result.fits is False:
        raise typer.Exit(EXIT_NO)


@app.command()
@_guarded
def models(json_out: JsonOpt = False):
    """The bundled model specs: layers, KV heads, head dim, layout, parameters."""
    from kvplan.model import catalog
    from kvplan.cli import render
    from kvplan.core.cache import CacheModel
    from kvplan.core.dtypes import dtype as lookup

    rows = []
    for spec in catalog.bundled_specs():
        per_token = CacheModel(spec, lookup(spec.dtype)).kv_bytes_per_token
        rows.append({"name": spec.name, "aliases": list(spec.aliases), "architecture": spec.architecture,
                     "layers": spec.layers, "attention_heads": spec.attention_heads, "kv_heads": spec.kv_heads,
                     "head_dim": spec.head_dim, "layout": spec.layout_summary(), "dtype": spec.dtype, "params": spec.params,
                     "max_context": spec.max_context, "kv_bytes_per_token": per_token})
    if json_out:
        print(render.to_json({"models": rows}))
        return
    from rich.table import Table

    from kvplan.core.units import format_bytes

    from rich import box

    table = Table(title=f"{len(rows)} bundled model specs (KV per token in the model dtype)", title_justify="left",
                  header_style="bold", box=box.SIMPLE_HEAD)
    cells = [[r["name"], str(r["layers"]), str(r["attention_heads"]), str(r["kv_heads"]), str(r["head_dim"]), r["layout"],
              f"{r['params'] / 1e9:,.2f} bn", format_bytes(r["kv_bytes_per_token"]),
              f"{r['max_context']:,}" if r["max_context"] else "—"] for r in rows]
    for i, (col, justify) in enumerate((("name", "left"), ("layers", "right"), ("heads", "right"), ("kv", "right"), ("hd", "right"),
                                        ("layout", "left"), ("params", "right"), ("KV/token", "right"), ("max ctx", "right"))):
        # every column but the layout keeps its widest cell whole: a narrow terminal wraps the layout words
        widest = max([len(col)] + [len(c[i]) for c in cells])
        table.add_column(col, justify=justify, no_wrap=col != "layout", min_width=18 if col == "layout" else widest)
    for c in cells:
        table.add_row(*c)
    render.print_whole(render.console(), table)


@app.command()
@_guarded
def gpus(json_out: JsonOpt = False):
    """The GPU catalog, with the memory the runtime reports (not the marketing figure)."""
    import dataclasses

    from kvplan.model import catalog
    from kvplan.cli import render

    entries = catalog.gpus()
    if json_out:
        print(render.to_json({"gpus": [dataclasses.asdict(g) for g in entries]}))
        return
    from rich.table import Table

    from kvplan.core.units import format_bytes

    table = Table(title=f"{len(entries)} GPUs (capacity as the runtime reports it)", title_justify="left", header_style="bold")
    for col, justify in (("name", "left"), ("marketed", "right"), ("capacity", "right"), ("bytes", "right"),
                         ("HBM TB/s", "right"), ("bf16 TFLOP/s", "right")):
        table.add_column(col, justify=justify)
    for g in entries:
        table.add_row(g.name, g.marketing_memory, format_bytes(g.capacity_bytes), f"{g.capacity_bytes:,}",
                      f"{g.hbm_bandwidth_bytes_per_s / 1e12:.2f}" if g.hbm_bandwidth_bytes_per_s else "—",
                      f"{g.bf16_dense_flops / 1e12:.0f}" if g.bf16_dense_flops else "—")
    render.console().print(table)


@app.command()
@_guarded
def show(model: ModelArg, json_out: JsonOpt = False):
    """The resolved spec as YAML that `kvplan estimate` accepts back (turn a config.json into a spec)."""
    from kvplan.model import catalog
    from kvplan.cli import render
    from kvplan.core import yamlio
    from kvplan.core.spec import spec_to_mapping

    spec = catalog.resolve_model(model)
    mapping = spec_to_mapping(spec)
    if json_out:
        print(render.to_json(mapping))
    else:
        sys.stdout.write(f"# kvplan spec for {spec.name}, resolved from {spec.source or 'bundled'}\n")
        sys.stdout.write(yamlio.dump_yaml(mapping))


_CORE_COMMANDS = {"estimate", "models", "gpus", "show"}


def _register_optional_commands(wanted: str | None = None) -> None:
    """Commands that live in their own modules (kvplan/commands/*.py), each with a register(app).

    `wanted` is the command about to run: a core command needs none of them and one of theirs needs
    only its own, which keeps typer from building every command's options on each start (~30 ms).
    """
    import importlib
    import pkgutil

    from kvplan.cli import commands

    names = sorted(info.name for info in pkgutil.iter_modules(commands.__path__))
    if wanted in _CORE_COMMANDS:
        names = []
    elif wanted in names:
        names = [wanted]
    for name in names:
        importlib.import_module(f"kvplan.cli.commands.{name}").register(app, _guarded)


_registered = False


def _register_optional_commands_once() -> None:
    global _registered
    if not _registered:
        _register_optional_commands()
        _registered = True


def main() -> None:
    """Entry point: runs the app and turns usage errors (unknown option, bad int...) into the contract's one line."""
    global _registered
    _register_optional_commands(sys.argv[1] if len(sys.argv) > 1 else None)
    _registered = True
    try:
        code = app(standalone_mode=False)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # typer's own (vendored click) usage errors carry exit_code and format_message
        if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":
            print(exc.format_message(), file=sys.stderr)
            sys.exit(exc.exit_code)
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "kvplan"
        message = " ".join(str(exc.format_message()).split())
        print(f"error: {command} — {message} (see '{command} --help')", file=sys.stderr)
        sys.exit(exc.exit_code)
    if type(code).__name__ == "Abort" or code is None:
        sys.exit(0 if code is None else 1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()

__all__ = ["app", "main", "EXIT_OK"]
