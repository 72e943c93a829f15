"""`kvplan calibrate LOG...`: kvplan beside each figure of real vLLM, SGLang and TensorRT-LLM start-up logs, and
(with --save) the site profile those logs measure.

Exit codes (kvplan/engines/logcheck.py says how a log gets its verdict): 0 when every log matches; 1 when a figure
disagrees that rests on nothing assumed; 2 when a log is unreadable or not a start-up log, or an option is wrong
(then nothing is saved); 3 when a log cannot be judged (nothing comparable, TP or PP assumed, the release's rules
not mirrored, the model unknown). Several at once: 2, then 1, then 3. `--json` prints one object on every path,
errors included: {"summary", "logs", "site", "error"}.
"""

from __future__ import annotations

import sys

from typing import Annotated, List, Optional

import typer


def register(app) -> None:
    from kvplan.cli.edge import guarded

    app.command(name="calibrate")(guarded(calibrate))


def calibrate(
    logs: Annotated[Optional[List[str]], typer.Argument(
        help="Start-up log files of vLLM, SGLang or TensorRT-LLM, as printed or pasted (excerpts, colour codes, "
             "process labels and hard wraps are read).", show_default=False)] = None,
    engine: Annotated[Optional[str], typer.Option(
        "--engine", help="Read every log as this engine's (vllm, sglang, trtllm). Default: detected from each log's "
                         "text.", show_default=False)] = None,
    model: Annotated[Optional[str], typer.Option(
        "--model", help="The model of the log(s): bundled name, spec YAML, config.json or model folder. Default: the "
                        "log's model id as a bundled alias, or under --models-dir.", show_default=False)] = None,
    models_dir: Annotated[Optional[str], typer.Option(
        "--models-dir", help="Folder of model folders named like the Hub cache (org--name/config.json) or by the "
                             "model's short name.", show_default=False)] = None,
    gpu: Annotated[Optional[str], typer.Option(
        "--gpu", help="The GPU of logs that do not print their total memory (SGLang, TensorRT-LLM excerpts), from the "
                      "catalog (kvplan gpus).", show_default=False)] = None,
    gpu_mem: Annotated[Optional[str], typer.Option(
        "--gpu-mem", help="The memory of that GPU when it is not in the catalog, e.g. 23.58GiB.", show_default=False)] = None,
    save: Annotated[Optional[str], typer.Option(
        "--save", help="Fit the site profile (non-torch memory, activation scale, CUDA-graph memory, memory in use at "
                       "start) to the logs, score it leave-one-log-out, and write it to FILE (YAML; JSON for *.json).",
                       show_default=False)] = None,
    calibration: Annotated[Optional[str], typer.Option(
        "--calibration", help="Compare with a site profile applied (a file written by --save).",
        show_default=False)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object: every log's figures, a summary, "
                                                          "the fitted site profile and any error.")] = False,
):
    """Compare kvplan with real engine start-up logs: each logged figure beside kvplan's, with the difference and a
    verdict; --save fits a site profile that --calibration applies in estimate, check, sweep and plot."""
    from kvplan.api.calibrate import run
    from kvplan.core.errors import KvplanError

    try:
        report, fit = run(logs or [], engine=engine, model=model, models_dir=models_dir, save=save,
                          calibration=calibration, gpu=gpu, gpu_mem=gpu_mem)
    except KvplanError as err:
        if not json_out:
            raise
        from kvplan.core.io import to_json

        print(to_json({"summary": None, "logs": [], "site": None,
                       "error": {"where": err.where, "what": err.what, "hint": err.hint, "exit_code": err.exit_code}}))
        print(f"error: {err.one_line()}", file=sys.stderr)  # the contract's one line, beside the JSON object
        raise typer.Exit(err.exit_code) from None

    results, summary = report.logs, report.summary
    if json_out:
        from kvplan.core.io import to_json

        print(to_json(report))
    else:
        from kvplan.cli.views.calibrate import print_report

        print_report(list(results), summary, fit, save)
    # the contract's one line on stderr for what stops a clean run: each unreadable log (exit 2), or why nothing
    # could be judged (exit 3); a mismatch (exit 1) is the report's own verdict
    for r in results:
        if r.status == "invalid":
            print(f"error: {r.log} — {r.reason}", file=sys.stderr)
    if summary.exit_code == 3:
        unjudged = [r for r in results if r.status == "cannot judge"]
        first = unjudged[0]
        if len(results) == 1:
            print(f"error: {first.log} — cannot judge: {first.reason}", file=sys.stderr)
        else:
            print(f"error: LOG — {len(unjudged)} of {len(results)} logs cannot be judged (first, {first.log}: "
                  f"{first.reason})", file=sys.stderr)
    if summary.exit_code:
        raise typer.Exit(summary.exit_code)
