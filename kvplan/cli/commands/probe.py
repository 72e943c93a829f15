"""`kvplan probe`: allocate the estimated cache with torch on the device and compare, byte for byte.

Only typer is imported here at module level; torch is imported by kvplan.probe when the command runs.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kvplan.cli.options import (ModelsDirOpt, OfflineOpt, with_model_lookup, BatchOpt, BlockOpt, GpuMemOpt, GpuOpt, HeadDimOpt, JsonOpt, KvDtypeOpt, KvHeadsOpt, KvMemOpt, ModelArg,
                        PpOpt, SeqOpt, TpOpt, whole_number)

DeviceOpt = Annotated[str, typer.Option("--device", help="auto (CUDA when torch sees a GPU, else the CPU), cuda, cuda:N, cpu, or meta (shapes only, no memory).")]
LayoutOpt = Annotated[Optional[str], typer.Option("--layout", help="static (contiguous [batch, heads, len, dim] per layer) or paged (vLLM-style block pools). Default: static, or paged with --engine vllm.", show_default=False)]
ProbeEngineOpt = Annotated[str, typer.Option("--engine", help="static, or vllm: the paged pool vLLM would allocate (num_gpu_blocks from --gpu/--gpu-mem/--kv-cache-memory, else from the probed GPU's memory).")]
NumBlocksOpt = Annotated[Optional[int], typer.Option("--num-blocks", help="Paged: blocks in every attention layer's pool (default: what --seq x --batch needs).", show_default=False, parser=whole_number)]
StageOpt = Annotated[Optional[int], typer.Option("--stage", help="One process with --pp: which pipeline stage to allocate (default: the most loaded).", show_default=False, parser=whole_number)]
FindMaxOpt = Annotated[bool, typer.Option("--find-max", help="Grow the cache (sequences, or blocks when paged) until the budget or the device refuses; compare with kvplan's maximum.")]
MaxBytesOpt = Annotated[Optional[str], typer.Option("--max-bytes", help="--find-max: never hold more than this (required on cpu/meta), e.g. 1GiB.", show_default=False)]
MaxFractionOpt = Annotated[str, typer.Option("--max-fraction", help="--find-max: never hold more than this share of the free device memory.")]
BenchOpt = Annotated[bool, typer.Option("--bench", help="Time a decode attention step over the cache: bandwidth and time per output token.")]
NoTouchOpt = Annotated[bool, typer.Option("--no-touch", help="Do not write the pages (faster on the CPU; the RSS delta then means little).")]


def probe(
    model: ModelArg,
    seq: SeqOpt = None,
    batch: BatchOpt = 1,
    kv_dtype: KvDtypeOpt = "auto",
    tp: TpOpt = None,
    pp: PpOpt = 1,
    engine: ProbeEngineOpt = "static",
    layout: LayoutOpt = None,
    block_size: BlockOpt = None,
    num_blocks: NumBlocksOpt = None,
    device: DeviceOpt = "auto",
    stage: StageOpt = None,
    find_max: FindMaxOpt = False,
    max_bytes: MaxBytesOpt = None,
    max_fraction: MaxFractionOpt = "0.95",
    bench: BenchOpt = False,
    no_touch: NoTouchOpt = False,
    gpu: GpuOpt = None,
    gpu_mem: GpuMemOpt = None,
    kv_cache_memory: KvMemOpt = None,
    kv_heads: KvHeadsOpt = None,
    head_dim: HeadDimOpt = None,
    json_out: JsonOpt = False,
    models_dir: ModelsDirOpt = None,
    offline: OfflineOpt = False,
):
    """Allocate MODEL's cache with torch (GPU or CPU) and compare with the estimate, byte for byte (exit 1 on a mismatch).

    Under torchrun every rank allocates its own TP/PP shard and rank 0 reports them all.
    """

    from kvplan.cli import render
    from kvplan.core import units
    from kvplan.requests.build import build_request
    from kvplan.core.errors import EXIT_NO, InputError, KvplanError
    from kvplan.probe.dist import from_env
    from kvplan.probe.layout import PAGED, STATIC
    from kvplan.probe.runner import ProbeOptions, run_probe
    from kvplan import engines

    engine_name = engine.strip().lower()
    paged = engines.get(engine_name).paged  # the static engine keeps one contiguous cache per sequence
    if not device.strip():
        raise InputError("is empty", where="--device", hint="auto, cuda, cuda:N, cpu or meta")
    layout_name = (layout or (PAGED if paged else STATIC)).strip().lower()
    if layout_name not in (STATIC, PAGED):
        raise InputError(f"unknown layout {layout!r}", where="--layout", hint="static or paged")
    if num_blocks is not None and num_blocks < 1:
        raise InputError(f"must be at least 1, got {num_blocks}", where="--num-blocks")
    if num_blocks is not None and layout_name != PAGED:
        raise InputError("--num-blocks sizes the paged pools", where="--num-blocks", hint="add --layout paged")
    if block_size is not None and layout_name != PAGED:
        raise InputError("--block-size sizes the paged pools' blocks", where="--block-size", hint="add --layout paged")
    if stage is not None and stage < 0:
        raise InputError(f"must be 0 or more, got {stage}", where="--stage")
    if (max_bytes is not None or max_fraction != "0.95") and not find_max:
        raise InputError("--max-bytes/--max-fraction bound --find-max", where="--max-bytes", hint="add --find-max")
    request = build_request(model, seq=seq, batch=batch, kv_dtype=kv_dtype, dtype=None, gpu=gpu, gpu_mem=gpu_mem, gpus=None,
                            tp=tp, pp=pp, kv_cache_memory=kv_cache_memory, block_size=block_size, kv_heads=kv_heads,
                            head_dim=head_dim)
    # torch describes sizes in int64: a cache (or a pool) past 2**62 bytes cannot even be laid out on the meta
    # device, and torch's own error is a C++ traceback
    if num_blocks is not None and num_blocks > 2**40:
        raise InputError(f"{num_blocks} blocks is beyond what torch can lay out", where="--num-blocks", hint="at most 2**40")
    if engines.get("static").estimate(request).cache_bytes > 2**62:
        raise InputError(f"a cache of {request.seq:,} tokens x {request.batch:,} sequences is beyond what torch can lay out "
                         "(2**62 bytes)", where="--batch" if request.batch > 1 else "--seq", hint="lower --seq or --batch")
    engine_estimate = None
    if paged:
        if layout_name != PAGED:
            raise InputError(f"--engine {engine_name} lays the cache out in block pools", where="--layout", hint="drop --layout static")
        engine_estimate = engines.get(engine_name).estimate
    options = ProbeOptions(
        layout=layout_name, device=device, stage=stage, find_max=find_max,
        max_bytes=units.parse_size(max_bytes, what="--max-bytes") if max_bytes is not None else None,
        max_fraction=units.parse_fraction(max_fraction, what="--max-fraction"), bench=bench, touch=not no_touch,
        block_size=block_size, num_blocks=num_blocks, engine=engine_name,
    )
    env = from_env()
    try:
        result = run_probe(request, options, engine_estimate=engine_estimate)
    except KeyboardInterrupt:
        # measure/findmax free their tensors in `finally`; say so and leave like a shell does on SIGINT
        from kvplan.cli.edge import Interrupted

        raise Interrupted("the probe freed the memory it held", where="interrupted") from None
    except KvplanError as err:
        if env is not None and env.rank != 0:
            raise typer.Exit(err.exit_code) from None  # rank 0 reports every rank's error once
        raise
    if env is None or env.rank == 0:
        if json_out:
            print(render.to_json(result))
        else:
            from kvplan.cli.views.probe import tables

            out = render.console()
            for table in tables(result):
                render.print_fitting(out, table)
            err = render.console(stderr=True)
            for note in result.notes:
                err.print(f"note: {note}", markup=False)
    ok = result.match and (result.find_max is None or result.find_max.match)
    if not ok:
        raise typer.Exit(EXIT_NO)


def register(app) -> None:
    from kvplan.cli.edge import guarded

    app.command(name="probe")(guarded(with_model_lookup(probe)))
