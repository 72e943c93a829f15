"""`kvplan explain MODEL`: the cache bill derived layer group by layer group, what-ifs side by side, and
lower bounds on prefill and decode time when a GPU is given."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from kvplan.cli.options import ModelsDirOpt, OfflineOpt, DtypeOpt, GpuUtilOpt, KvDtypeOpt, ModelArg, PpOpt, TpOpt, whole_number


def register(app) -> None:
    from kvplan.cli.edge import guarded

    app.command(name="explain")(guarded(explain))


def explain(
    model: ModelArg,
    seq: Annotated[Optional[str], typer.Option("--seq", "-s", help="Tokens per sequence. Default: the model's max context.", show_default=False)] = None,
    batch: Annotated[int, typer.Option("--batch", "-b", help="Concurrent sequences.", parser=whole_number)] = 1,
    kv_dtype: KvDtypeOpt = "auto",
    dtype: DtypeOpt = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="GPU from the catalog: adds max batch per what-if and latency bounds.", show_default=False)] = None,
    gpu_mem: Annotated[Optional[str], typer.Option("--gpu-mem", help="Memory of one GPU not in the catalog (no latency bounds without catalog figures).", show_default=False)] = None,
    tp: TpOpt = None,
    pp: PpOpt = 1,
    gpu_util: GpuUtilOpt = None,
    window: Annotated[int, typer.Option("--window", help="Window for the sliding-window what-if on models without one.", parser=whole_number)] = 4096,
    prompt: Annotated[Optional[str], typer.Option("--prompt", help="Prompt tokens for the latency bounds. Default: half of --seq.", show_default=False)] = None,
    output: Annotated[Optional[str], typer.Option("--output", help="Output tokens for the latency bounds. Default: --seq minus --prompt.", show_default=False)] = None,
    vllm_args: Annotated[Optional[str], typer.Option("--vllm-args", help="Extra `vllm serve` options: each term they add (drafter, LoRA slots, offload tiers, parallelism, KV connectors) derived with its numbers (docs/engines/features/).", show_default=False)] = None,
    sglang_args: Annotated[Optional[str], typer.Option("--sglang-args", help="Extra `python -m sglang.launch_server` options (--disaggregation-mode, --speculative-algorithm, --enable-dp-attention, --enable-lora, --enable-hierarchical-cache): each term they add derived with its numbers (docs/engines/features/).", show_default=False)] = None,
    engine_option: Annotated[Optional[List[str]], typer.Option("--engine-option", help="TensorRT-LLM launch options as KEY=VALUE (LLM-API fields: enable_attention_dp, speculative_config.*, cache_transceiver_config.*): each term they add, with its numbers (docs/engines/features/).", show_default=False)] = None,
    engine: Annotated[Optional[str], typer.Option("--engine", help="Also derive the engine's figure for the same launch (vllm, sglang, trtllm): its budget term by term, the pool, the longest context and the fixes, judged as estimate and check judge. Needs --gpu or --gpu-mem.", show_default=False)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    models_dir: ModelsDirOpt = None,
    offline: OfflineOpt = False,
):
    """Derive the KV cache of MODEL with every number substituted, layer group by layer group, and compare
    what-ifs: MHA / MQA / MLA against the model's own attention, bf16 / fp8 / int4 KV, with and without a
    sliding window. With --gpu: the most sequences that fit per variant, and lower bounds on time to first
    token and time per output token (compute-bound prefill, bandwidth-bound decode) and what a KV cache saves."""
    from kvplan.api.explain import run
    from kvplan.cli import render

    result, est = run(model, seq=seq, batch=batch, kv_dtype=kv_dtype, dtype=dtype, gpu=gpu, gpu_mem=gpu_mem, tp=tp, pp=pp,
                      gpu_util=gpu_util, window=window, prompt=prompt, output=output, vllm_args=vllm_args,
                      sglang_args=sglang_args, engine_option=engine_option, models_dir=models_dir, offline=offline)
    from kvplan.api.explain import engine_estimate

    engine_result = engine_estimate(engine, model, seq=seq, batch=batch, kv_dtype=kv_dtype, dtype=dtype, gpu=gpu,
                                     gpu_mem=gpu_mem, tp=tp, pp=pp, gpu_util=gpu_util, vllm_args=vllm_args,
                                     sglang_args=sglang_args, engine_option=engine_option, models_dir=models_dir,
                                     offline=offline)
    if json_out:
        if engine_result is None:
            print(render.to_json(result))
        else:  # one object: the explanation's keys and, under `engine_estimate`, the engine's (estimate --json's)
            import json

            print(json.dumps({**json.loads(render.to_json(result)),
                              "engine_estimate": json.loads(render.to_json(engine_result))}, indent=2))
        return
    _print(result, est, engine="TensorRT-LLM" if engine_option else "SGLang" if sglang_args is not None else "vLLM")
    if engine_result is not None:
        from kvplan.cli import views

        out = render.console()
        out.print()
        # a plain heading: the console prints with markup off (cli/render.py), so a [bold] tag would be printed as is
        out.print(f"the same launch as {engine_result.engine} makes it (kvplan estimate --engine "
                  f"{engine_result.engine}: its budget term by term, judged as check judges)")
        for table in views.tables(engine_result):
            render.print_fitting(out, table)
        err = render.console(stderr=True)
        for note in engine_result.notes:
            err.print(f"note: {note}")


def _print(result, est, *, engine: str = "vLLM") -> None:

    from kvplan.cli import render
    from kvplan.core.units import format_bytes, format_tokens

    out = render.console()
    head = f"{result.model} · {format_tokens(result.seq)} tokens x {result.batch} seq · KV {result.kv_dtype}"
    if result.tp > 1 or result.pp > 1:
        head += f" · TP {result.tp} x PP {result.pp}"
    stages = result.pp > 1
    headers = (["stage"] if stages else []) + ["layers", "per token, per layer, per GPU", "x layers x tokens x seqs x GPUs",
                                               "bytes"]
    rows = []
    for g in result.groups:
        label = f"{g.layers} {g.kind}" + (f" ({g.tokens:,}-token window)" if g.kind == "sliding" else
                                          f" ({g.tokens:,}-token chunk)" if g.kind == "chunked" else "")
        per = g.state_formula if g.state_formula else g.per_token_formula
        cells = [label, per, g.total_formula.rsplit(" = ", 1)[0], f"{format_bytes(g.total_bytes)}"]
        rows.append(([str(g.stage)] if stages else []) + cells)
    rows.append([""] * (1 if stages else 0) + ["total", f"K/V per token (all layers, all GPUs): {result.kv_bytes_per_token:,} B",
                                                f"= estimate's cache_bytes {est.cache_bytes:,} B", format_bytes(result.cache_bytes)])
    first = 1 if stages else 0
    # the formulas are words that wrap; the bytes keep their width (render.print_table: records when even that is too wide)
    render.print_table(out, f"{head}: the KV cache, layer group by layer group", headers, rows,
                       text=(first, first + 1, first + 2), keys=tuple(range(first + 1)),
                       styles=[None] * (len(rows) - 1) + ["bold"])

    if result.extra_terms:
        rows = [[t.option, t.what, t.formula, format_bytes(t.bytes) if t.bytes is not None else "—"]
                for t in result.extra_terms]
        render.print_fitting(out, render.figures_table(f"what the {engine} launch options add ({engine}'s own terms, per GPU unless said)",
                                                     ["option", "term", "how", "bytes"], rows, text=(0, 1, 2)))

    has_gpu = any(w.max_batch is not None for w in result.what_ifs)
    headers = ["variant", "KV/token", "cache", "vs model"] + ([f"max seqs on {est.gpu or 'GPU'} (textbook)"] if has_gpu else []) + ["what changes"]
    rows = []
    for w in result.what_ifs:
        if w.error:
            rows.append([w.name, "—", "—", "—"] + (["—"] if has_gpu else []) + [w.error])
        else:
            rows.append([w.name, format_bytes(w.kv_bytes_per_token), format_bytes(w.cache_bytes),
                         f"{w.ratio:.2f}x" if w.ratio is not None else "—"]
                        + ([f"{w.max_batch:,}" if w.max_batch is not None else "—"] if has_gpu else []) + [w.description])
    # figures keep their width and the words wrap (figures_table): at 100 columns rich would otherwise squeeze all
    render.print_table(out, f"what-ifs at {format_tokens(result.seq)} tokens x {result.batch} (weights unchanged)",
                       headers, rows, text=(0, len(headers) - 1))

    b = result.latency
    if b is not None:
        rows = []

        def row(name, ph):
            rows.append([name, f"{ph.flops:.3e}", format_bytes(ph.bytes), _secs(ph.compute_s), _secs(ph.memory_s),
                         _secs(ph.seconds), ph.bound])

        row(f"prefill {b.prompt_tokens:,} tokens (TTFT)", b.prefill)
        row(f"decode step at {b.context:,} cached (TPOT)", b.decode)
        if b.decode_batch is not None:
            row(f"prefill {b.batch:,} prompts together", b.prefill_batch)
            row(f"decode step, {b.batch:,} seqs (the most that fit): {b.decode_batch_tokens_per_s:,.0f} tok/s", b.decode_batch)
        row(f"generate {b.output_tokens:,} tokens with KV cache", b.generate_cached)
        row(f"generate {b.output_tokens:,} tokens, no cache", b.generate_no_cache)
        render.print_table(
            out, f"lower bounds on {b.gpu} x {b.tp * b.pp} ({b.peak_flops_dtype} {b.peak_flops_per_s / 1e12:,.0f} TFLOP/s, "
            f"{b.hbm_bytes_per_s / 1e12:.2f} TB/s per GPU): real runs are slower",
            ["phase", "FLOPs", "bytes read", "compute floor", "memory floor", "lower bound", "bound by"], rows, text=(0, 6))
        err = render.console(stderr=True)
        err.print(f"note: without a KV cache the same generation needs {b.no_cache_flops_ratio:,.0f}x the FLOPs and at least "
                  f"{b.no_cache_time_ratio:,.1f}x the time (docs/latency.md)")
        for note in b.notes:
            err.print(f"note: {note}")
    err = render.console(stderr=True)
    for note in result.notes:
        err.print(f"note: {note}")


def _secs(s: float) -> str:
    if s >= 1:
        return f"{s:,.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"
