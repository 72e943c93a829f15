"""`kvplan plan MODEL`: the cheapest deployments that hold a load, ranked, with the reason each rejected family of
candidates failed, the chosen plan's launch flags and a deployment file `kvplan check` passes (docs/plan.md)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, List, Optional

import typer

from kvplan.cli.options import ModelArg, ModelsDirOpt, OfflineOpt


class EmitFormat(str, Enum):
    kvplan = "kvplan"
    vllm_config = "vllm-config"
    compose = "compose"
    k8s = "k8s"


def register(app) -> None:
    from kvplan.cli.edge import guarded

    app.command(name="plan")(guarded(plan))


def plan(
    model: ModelArg,
    concurrency: Annotated[Optional[int], typer.Option("--concurrency", "-n", help="The load as N sequences at once (with --seq, or a length mix from --workload / --prompt and --output).", show_default=False)] = None,
    seq: Annotated[Optional[str], typer.Option("--seq", "-s", help="Tokens per sequence (prompt + output) for --concurrency, and max_model_len; with a length mix, the longest request by default.", show_default=False)] = None,
    rate: Annotated[Optional[float], typer.Option("--rate", "-r", help="The load as R requests per second (with --workload, or --prompt and --output).", show_default=False)] = None,
    workload: Annotated[Optional[str], typer.Option("--workload", "-w", help="Request lengths as `kvplan simulate` reads them: CSV/JSONL of prompt_tokens,output_tokens, a YAML/JSON distribution, or inline 'prompt=p50:100,p99:2000;output=p50:200,p99:1500'.", show_default=False)] = None,
    prompt: Annotated[Optional[str], typer.Option("--prompt", help="Prompt lengths: a number of tokens or percentiles 'p50:200,p99:2000' (default with --seq: half of it).", show_default=False)] = None,
    output: Annotated[Optional[str], typer.Option("--output", help="Output lengths: a number of tokens or percentiles 'p50:300,p99:1000' (default with --seq: half of it).", show_default=False)] = None,
    ttft: Annotated[Optional[str], typer.Option("--ttft", help="Time-to-first-token target at a percentile of the requests: p95:2s, p50:400ms,p99:1s (p50, p90, p95, p99; a bare number is P99 milliseconds).", show_default=False)] = None,
    tpot: Annotated[Optional[str], typer.Option("--tpot", help="Time-per-output-token target, as --ttft reads it (p99:60ms). Default: P99 100 ms (interactive chat); none for no target.", show_default=False)] = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="GPU kinds to consider, comma separated (default: the whole catalog, kvplan gpus).", show_default=False)] = None,
    engine: Annotated[str, typer.Option("--engine", help="Engines to consider, comma separated: vllm, sglang, trtllm.")] = "vllm,sglang,trtllm",
    kv_dtype: Annotated[str, typer.Option("--kv-dtype", "--kv-cache-dtype", help="KV cache dtypes to consider, comma separated (auto = the model's).")] = "auto,fp8",
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="Weight format (bf16, fp16, fp8, int8, int4). Default: the checkpoint's.", show_default=False)] = None,
    max_gpus: Annotated[int, typer.Option("--max-gpus", help="The most GPUs a plan may use in all (replicas x TP x PP).")] = 64,
    gpus_per_node: Annotated[Optional[int], typer.Option("--gpus-per-node", help="GPUs in one node (TP stays inside a node). Default: per GPU kind (kvplan/data/nodes.yaml: 8 for most).", show_default=False)] = None,
    expert_parallel: Annotated[bool, typer.Option("--expert-parallel", help="MoE models: launch with expert parallelism over the TP ranks (the same bytes per GPU).")] = False,
    price: Annotated[Optional[List[str]], typer.Option("--price", help="A price in dollars per GPU hour, NAME=DOLLARS (repeatable), e.g. h100-sxm-80gb=2.49.", show_default=False)] = None,
    prices: Annotated[Optional[str], typer.Option("--prices", help="A YAML file of your prices: `gpu-name: dollars per GPU hour`, or a list like kvplan/data/prices.yaml.", show_default=False)] = None,
    top: Annotated[Optional[int], typer.Option("--top", help="Ranks shown in the table (--json has every plan). Default: 10, fewer where the answer would pass 40 lines (10 with --detail or --markdown).", show_default=False)] = None,
    rejected: Annotated[str, typer.Option("--rejected", help="The rejected families: none, summary (one line) or all (a table with each family's closest candidate).")] = "summary",
    detail: Annotated[bool, typer.Option("--detail", help="The full tables: latency bands, pools, batch limits, every engine's launch command, the interconnect.")] = False,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write the cost per million output tokens against TPOT of every plan, Pareto front marked: .png or .svg (needs matplotlib), or .txt (a text chart).", show_default=False)] = None,
    emit: Annotated[Optional[EmitFormat], typer.Option("--emit", help="Write a deployment file of the chosen plan: kvplan (any engine), vllm-config, compose or k8s (the best vLLM plan). On stdout unless --emit-to.", show_default=False)] = None,
    emit_to: Annotated[Optional[str], typer.Option("--emit-to", help="The file --emit writes (the table then goes to stdout).", show_default=False)] = None,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the tables as Markdown.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object (keys: docs/plan.md).")] = False,
    models_dir: ModelsDirOpt = None,
    offline: OfflineOpt = False,
):
    """The cheapest deployments of MODEL that hold a load: every GPU kind, engine, KV dtype and TP x PP layout, sized
    by the engine's own memory model, timed by fitted latency estimates, priced per GPU hour and ranked."""
    from pathlib import Path

    from kvplan.analysis import emit as emitting
    from kvplan.api.plan import run
    from kvplan.cli import render
    from kvplan.cli.views import plan as view  # not at the top: `kvplan --help` imports every command module
    from kvplan.core.errors import EXIT_NO, InputError
    from kvplan.model import catalog

    if top is not None and not 1 <= top <= 4096:
        raise InputError(f"must be from 1 to 4096, got {top}", where="--top")
    if json_out and markdown:
        raise InputError("give --json or --markdown, not both", where="--markdown")
    if rejected not in view.REJECTED:
        raise InputError(f"must be none, summary or all, got {rejected!r}", where="--rejected")
    if emit is not None and not emit_to and (json_out or markdown):
        raise InputError("--emit without --emit-to prints the deployment file on stdout, which --json or --markdown "
                         "also want", where="--emit", hint="add --emit-to FILE")
    if emit_to and emit is None:
        raise InputError("--emit-to needs --emit FORMAT", where="--emit-to", hint="e.g. --emit kvplan --emit-to deploy.yaml")
    from kvplan.core.io import refuse_over_inputs

    inputs = [model, workload, prices, *(models_dir or [])]
    refuse_over_inputs(emit_to, inputs + [plot], option="--emit-to")
    refuse_over_inputs(plot, inputs, option="--plot")
    if plot:
        _check_plot(plot)
    planned = run(model, concurrency=concurrency, seq=seq, rate=rate, workload=workload, prompt=prompt, output=output,
                  ttft=ttft, tpot=tpot, gpu=gpu, engine=engine, kv_dtype=kv_dtype, dtype=dtype, max_gpus=max_gpus,
                  gpus_per_node=gpus_per_node, expert_parallel=expert_parallel, price=price, prices=prices,
                  models_dir=models_dir, offline=offline)
    result, load, base, ref = planned.result, planned.load, planned.base, planned.ref

    written = None
    if emit is not None and result.plans:
        from kvplan import engines

        # the files beside kvplan's own are one engine's (its record's deployment_files): its best plan
        chosen = result.plans[0] if emit is EmitFormat.kvplan else next(
            (p for p in result.plans if engines.get(p.engine).deployment_files), None)
        if chosen is None:
            raise InputError(f"--emit {emit.value} writes a vLLM deployment and no vLLM plan holds the load", where="--emit",
                             hint="--emit kvplan writes the chosen plan for any engine")
        name = emit_to or "FILE"
        text = emitting.render(emit.value, chosen, load, model=base.spec.name, ref=ref, weight_dtype_given=dtype,
                               file_name=name, gpu_facts=catalog.find_gpu(chosen.gpu))
        if emit_to:
            render.write_file(emit_to, lambda target: Path(target).write_text(text, encoding="utf-8"), what="the deployment file")
            written = emit_to
        else:
            print(text, end="")
    if plot and result.plans:
        _write_plot(result, plot)
    if emit is not None and not emit_to:
        pass  # stdout carries the deployment file alone
    elif json_out:
        print(render.to_json(result))
    elif markdown:
        print(view.markdown(result, top=top or view.TOP, rejected=rejected), end="")
    else:
        out = render.console()
        for item in _answer(result, top=top, detail=detail, rejected=rejected):
            render.print_fitting(out, item)
    err = render.console(stderr=True)
    if not json_out:
        for note in result.notes:
            err.print(f"note: {note}")
        if written:
            err.print(f"wrote {written}")
        if plot and result.plans:
            err.print(f"wrote {plot}")
    if not result.plans:
        raise typer.Exit(EXIT_NO)


def _answer(result, *, top: int | None, detail: bool, rejected: str) -> list:
    """The text view; without --top (and without --detail) the most ranks, up to 10, that keep it within 40 lines."""
    from kvplan.cli import render
    from kvplan.cli.views import plan as view

    if top is not None or detail:
        return view.tables(result, top=top or view.TOP, detail=detail, rejected=rejected)
    for n in range(view.TOP, 0, -1):
        items = view.tables(result, top=n, rejected=rejected)
        if n == 1 or render.line_count(items) <= view.LINES:
            return items
    raise AssertionError("unreachable")


def _check_plot(path: str) -> None:
    import importlib.util
    from pathlib import Path

    from kvplan.core.errors import InputError

    suffix = Path(path).suffix.lower()
    if suffix not in (".png", ".svg", ".txt"):
        raise InputError(f"cannot write a {suffix or 'format-less'} chart", where="--plot", hint="name the file .png, .svg or .txt")
    if suffix != ".txt" and importlib.util.find_spec("matplotlib") is None:
        raise InputError("drawing image files needs matplotlib", where="--plot",
                         hint="pip install 'kvplan[plot]', or name the file .txt for a text chart")


def _write_plot(result, path: str) -> None:
    from pathlib import Path

    from kvplan.analysis import plotting
    from kvplan.cli import render

    chart = plotting.pareto_chart(result.pareto, model=result.model)
    if Path(path).suffix.lower() == ".txt":
        text = plotting.render_text(chart)
        render.write_file(path, lambda target: Path(target).write_text(text, encoding="utf-8"), what="the chart")
    else:
        plotting.render_file(chart, path)
