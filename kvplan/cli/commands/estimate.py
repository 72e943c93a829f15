"""`kvplan estimate MODEL`: KV cache, weights and fit, in the terms of the chosen engine."""

from __future__ import annotations

import sys

import typer

from kvplan.cli.edge import guarded
from kvplan.cli.options import (BatchOpt, BlockOpt, BriefOpt, CalibrationOpt, DetailOpt, DtypeOpt, EngineOpt, EngineOptionOpt, EngineVersionOpt, GpuMemOpt,
                                GpuOpt, GpuReservedOpt, GpusOpt, GpuUtilOpt, HeadDimOpt, JsonOpt, KvDtypeOpt, KvHeadsOpt,
                                KvMemOpt, MaxSeqsOpt, MaxTokOpt, ModelArg, ModelsDirOpt, OfflineOpt, OptimisticOpt, PpOpt, PromptOpt, RateOpt,
                                ReserveOpt, SeqOpt, SglangArgsOpt, TpOpt, VllmArgsOpt)


def register(app) -> None:
    app.command(name="estimate")(guarded(estimate))


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
    engine: EngineOpt = None,
    engine_version: EngineVersionOpt = None,
    engine_option: EngineOptionOpt = None,
    gpu_util: GpuUtilOpt = None,
    gpu_reserved: GpuReservedOpt = None,
    reserve: ReserveOpt = None,
    kv_cache_memory: KvMemOpt = None,
    block_size: BlockOpt = None,
    max_num_seqs: MaxSeqsOpt = None,
    max_num_batched_tokens: MaxTokOpt = None,
    kv_heads: KvHeadsOpt = None,
    head_dim: HeadDimOpt = None,
    vllm_args: VllmArgsOpt = None,
    sglang_args: SglangArgsOpt = None,
    rate: RateOpt = None,
    prompt: PromptOpt = None,
    calibration: CalibrationOpt = None,
    optimistic: OptimisticOpt = False,
    brief: BriefOpt = False,
    detail: DetailOpt = False,
    json_out: JsonOpt = False,
    models_dir: ModelsDirOpt = None,
    offline: OfflineOpt = False,
):
    """KV cache, weights and fit for MODEL at --seq tokens x --batch sequences (exit 1 if a GPU was given and it does not fit)."""
    from kvplan.api.estimate import run
    from kvplan.cli import render, views
    from kvplan.core.errors import EXIT_NO, InputError

    request, result = run(model, seq=seq, batch=batch, kv_dtype=kv_dtype, dtype=dtype, gpu=gpu, gpu_mem=gpu_mem, gpus=gpus,
                          tp=tp, pp=pp, engine=engine, engine_version=engine_version, engine_option=engine_option,
                          gpu_util=gpu_util, gpu_reserved=gpu_reserved, reserve=reserve, kv_cache_memory=kv_cache_memory,
                          block_size=block_size, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
                          kv_heads=kv_heads, head_dim=head_dim, vllm_args=vllm_args, sglang_args=sglang_args, rate=rate,
                          prompt=prompt, calibration=calibration, models_dir=models_dir, offline=offline,
                          optimistic=optimistic)
    from kvplan.core.units import decimal_suffix_note

    suffix_note = decimal_suffix_note(seq, what="--seq")
    if suffix_note and not json_out:
        print(f"note: {suffix_note}", file=sys.stderr)
    if request.spec.source and request.spec.source.endswith(".json") and request.spec.notes:
        # what kvplan assumed while reading a config.json (a missing dtype, an untested model_type): on stderr,
        # so --json output stays clean
        print(f"note: {request.spec.notes}", file=sys.stderr)
    if brief and detail:
        raise InputError("give --brief or --detail, not both", where="--detail")
    if json_out:
        print(render.to_json(result))
    elif brief:
        from kvplan.cli.views.brief import estimate_lines

        print("\n".join(estimate_lines(result)))
    else:
        out = render.console()
        with render.exact_bytes(detail):
            tables = views.tables(result)
        for table in tables:
            render.print_fitting(out, table)
        from kvplan.api.args import DEFAULT_ENGINE_NOTE, GPU_DEFAULT_ENGINE

        err = render.console(stderr=True)
        if engine is None and result.engine == GPU_DEFAULT_ENGINE:  # the default the note names
            err.print(f"note: {DEFAULT_ENGINE_NOTE}")
        for note in result.notes:
            err.print(f"note: {note}")
    if result.fits is False:
        raise typer.Exit(EXIT_NO)
