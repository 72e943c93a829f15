"""`kvplan estimate MODEL`: KV cache, weights and fit, in the terms of the chosen engine."""

from __future__ import annotations

import sys

import typer

from kvplan.cli.edge import guarded
from kvplan.cli.options import (BatchOpt, BlockOpt, CalibrationOpt, DtypeOpt, EngineOpt, EngineOptionOpt, EngineVersionOpt, GpuMemOpt,
                                GpuOpt, GpuReservedOpt, GpusOpt, GpuUtilOpt, HeadDimOpt, JsonOpt, KvDtypeOpt, KvHeadsOpt,
                                KvMemOpt, MaxSeqsOpt, MaxTokOpt, ModelArg, ModelsDirOpt, OfflineOpt, OptimisticOpt, PpOpt, PromptOpt, RateOpt,
                                ReserveOpt, SeqOpt, SglangArgsOpt, TpOpt, VllmArgsOpt, with_model_lookup)


def register(app) -> None:
    app.command(name="estimate")(guarded(with_model_lookup(estimate)))


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
    json_out: JsonOpt = False,
    models_dir: ModelsDirOpt = None,
    offline: OfflineOpt = False,
):
    """KV cache, weights and fit for MODEL at --seq tokens x --batch sequences (exit 1 if a GPU was given and it does not fit)."""
    from kvplan import engines
    from kvplan.cli import render, views
    from kvplan.core.errors import EXIT_NO, InputError
    from kvplan.engines import fixes
    from kvplan.requests.build import build_request, refuse_paged_flags

    chosen = engines.get(engine)
    refuse_paged_flags((chosen.name,), block_size=block_size, max_num_seqs=max_num_seqs,
                       max_num_batched_tokens=max_num_batched_tokens)
    if sglang_args is not None and chosen.name != "sglang":
        raise InputError("SGLang's options apply to --engine sglang", where="--sglang-args", hint="add --engine sglang")
    if (vllm_args is not None or (sglang_args is None and (rate is not None or prompt is not None))) and chosen.name != "vllm":
        flag = "--vllm-args" if vllm_args is not None else "--rate" if rate is not None else "--prompt"
        raise InputError("vLLM's options apply to --engine vllm", where=flag, hint="add --engine vllm")
    site = None
    if calibration is not None:
        from kvplan.engines.calibration import read_profile

        site = read_profile(calibration, engine=chosen.name)
    request = build_request(model, seq=seq, batch=batch, kv_dtype=kv_dtype, dtype=dtype, gpu=gpu, gpu_mem=gpu_mem,
                            gpus=gpus, tp=tp, pp=pp, gpu_util=gpu_util, reserve=reserve, kv_cache_memory=kv_cache_memory,
                            block_size=block_size, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
                            kv_heads=kv_heads, head_dim=head_dim, engine_version=engine_version,
                            gpu_reserved=gpu_reserved, engine_options=engine_option, vllm_args=vllm_args,
                            rate=rate, prompt=prompt, site=site, sglang_args=sglang_args)
    if engine_version and chosen.name == "static":
        raise InputError("the static engine has no release to choose", where="--engine-version", hint="use it with --engine vllm, sglang or trtllm")
    chosen.accepts(request)
    result = chosen.estimate(request)
    if not optimistic:
        # judged where check judges: a modelled budget at the low edge of its band, so the verdict, the longest
        # context and every fix below are the ones `kvplan check` gives the same deployment
        request, result = fixes.at_judging_edge(chosen, request, result)
    result = fixes.attach(chosen, request, result)
    if request.spec.source and request.spec.source.endswith(".json") and request.spec.notes:
        # what kvplan assumed while reading a config.json (a missing dtype, an untested model_type): on stderr,
        # so --json output stays clean
        print(f"note: {request.spec.notes}", file=sys.stderr)
    if json_out:
        print(render.to_json(result))
    else:
        out = render.console()
        for table in views.tables(result):
            render.print_fitting(out, table)
        err = render.console(stderr=True)
        for note in result.notes:
            err.print(f"note: {note}")
    if result.fits is False:
        raise typer.Exit(EXIT_NO)
