"""`kvplan check CONFIG...`: a CI gate for deployment files (Kubernetes, compose, Helm values, Ray, SkyPilot,
scripts, Dockerfiles, TensorRT-LLM and vLLM configs, kvplan's deployment YAML, vLLM command lines). The logic is
kvplan.check (run.py); the output formats are kvplan.check.formats."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, List, Optional

import typer

from kvplan.cli.options import whole_number


class OutputFormat(str, Enum):
    """The same members as kvplan.check.formats.Format (a test keeps them equal); declared here so that
    `kvplan --help` does not import the check machinery."""

    text = "text"
    json = "json"
    markdown = "markdown"
    junit = "junit"
    github = "github"
    sarif = "sarif"


def register(app) -> None:
    from kvplan.cli.edge import guarded

    app.command(name="check")(guarded(check))


def check(
    configs: Annotated[Optional[List[str]], typer.Argument(
        help="Deployment files or folders (every *.yaml, *.yml, *.sh and Dockerfile below, hidden ones skipped): "
             "Kubernetes, KServe, KubeAI, Ray, compose, Helm values, SkyPilot, TensorRT-LLM, vLLM configs, scripts, "
             "Dockerfiles, kvplan deployment YAML.", show_default=False)] = None,
    vllm_args: Annotated[Optional[List[str]], typer.Option(
        "--vllm-args", help="A vLLM command line to judge, e.g. \"serve meta-llama/Llama-3.1-8B --max-model-len 32K -tp 2\" "
                            "(repeatable).", show_default=False)] = None,
    gpu: Annotated[Optional[str], typer.Option(
        "--gpu", help="GPU for vLLM configs and for deployments that name none (kvplan gpus).", show_default=False)] = None,
    gpu_mem: Annotated[Optional[str], typer.Option(
        "--gpu-mem", help="Memory of one GPU not in the catalog, e.g. 80GiB (instead of --gpu).", show_default=False)] = None,
    gpus: Annotated[Optional[int], typer.Option(
        "--gpus", help="GPUs per deployment (= TP x PP); sets the tensor parallel size where none is given.",
        show_default=False, parser=whole_number)] = None,
    require_concurrency: Annotated[Optional[int], typer.Option(
        "--require-concurrency", help="Require at least N requests of max_model_len at once (where a deployment "
                                      "sets no require.concurrency).", show_default=False, parser=whole_number)] = None,
    require_headroom: Annotated[Optional[str], typer.Option(
        "--require-headroom", help="Require this share of usable GPU memory free with them resident, e.g. 10% "
                                   "(where a deployment sets no require.headroom).", show_default=False)] = None,
    vllm_version: Annotated[Optional[str], typer.Option(
        "--vllm-version", help="vLLM release whose options and rules judge vLLM deployments that pin none (an image "
                               "tag wins): any of 0.10.0 ... 0.33.x (default: the newest line's, 0.33.0).",
        show_default=False)] = None,
    optimistic: Annotated[bool, typer.Option(
        "--optimistic", help="Judge a modelled engine budget by its modelled value. By default check judges by the low "
                             "edge of its band (the terms' measured error): a deployment that passes only inside the band "
                             "fails, marked marginal.")] = False,
    models_dir: Annotated[Optional[List[str]], typer.Option(
        "--models-dir", help="Folder of model folders (org--name/config.json, org/name/, a model's folder name for a "
                             "path on the serving host, or a Hugging Face cache) (repeatable).", show_default=False)] = None,
    offline: Annotated[bool, typer.Option(
        "--offline", help="Never ask the Hugging Face Hub for a model (as HF_HUB_OFFLINE=1).")] = False,
    gpu_reserved: Annotated[Optional[str], typer.Option(
        "--gpu-reserved", help="Memory each GPU already has in use when the engine starts, e.g. 1.2GiB (vLLM, SGLang and "
                               "TensorRT-LLM deployments).", show_default=False)] = None,
    engine_option: Annotated[Optional[List[str]], typer.Option(
        "--engine-option", help="An engine setting KEY=VALUE (repeatable), applied to the deployments whose engine "
                                "reads it, e.g. backend=tensorrt for TensorRT-LLM.", show_default=False)] = None,
    calibration: Annotated[Optional[str], typer.Option(
        "--calibration", help="A site profile (kvplan calibrate --save FILE), applied to the deployments of the engine "
                              "it was fitted on.", show_default=False)] = None,
    allow_path: Annotated[Optional[List[str]], typer.Option(
        "--allow-path", help="A folder outside the checked repository whose files deployments may name (a model, a "
                             "--config) (repeatable). Without it such files are not read.", show_default=False)] = None,
    fmt: Annotated[OutputFormat, typer.Option(
        "--format", "-f", help="text (table), json, markdown (for $GITHUB_STEP_SUMMARY), junit (XML), github (workflow "
                              "annotations) or sarif (SARIF 2.1.0).")] = OutputFormat.text,
    json_out: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    brief: Annotated[bool, typer.Option("--brief", help="The answer alone: per deployment its verdict and engine, the concurrency at max_model_len, the longest context that starts, the fix (8 lines for one deployment); text format only.")] = False,
    output: Annotated[Optional[str], typer.Option(
        "--output", "-o", help="Write the report to FILE (the text table still goes to stdout).", show_default=False)] = None,
    print_schema: Annotated[bool, typer.Option(
        "--print-schema", help="Print the JSON Schema of kvplan deployment files (for editors) and exit.")] = False,
):
    """Judge deployment configs: would each start, how many max_model_len requests fit at once, how much
    headroom is left. Exit 0 all pass, 1 any fail, 2 any invalid file (the others are still judged), 3 any that
    kvplan cannot judge; when several apply: 2, then 1, then 3."""
    import sys

    from kvplan.check.entry import check as api_check
    from kvplan.check import formats as report_formats
    from kvplan.check.report import CANNOT_JUDGE, INVALID
    from kvplan.core.errors import InputError

    if print_schema:
        from kvplan.core import packaged

        sys.stdout.write(packaged.data_file("deployment.schema.json").read_text(encoding="utf-8"))
        return
    if json_out and fmt not in (OutputFormat.text, OutputFormat.json):
        raise InputError(f"--json and --format {fmt.value} disagree", where="--json", hint="give one of them")
    chosen = report_formats.Format("json" if json_out else fmt.value)
    if brief and chosen is not report_formats.Format.TEXT:
        raise InputError(f"--brief is a text view; --format {chosen.value} has every figure", where="--brief",
                         hint="drop --brief, or drop --format/--json")
    from kvplan.core.io import refuse_over_inputs

    refuse_over_inputs(output, [*(configs or []), calibration, *(models_dir or [])], option="--output")
    report = api_check(configs, vllm_args=vllm_args, gpu=gpu, gpu_mem=gpu_mem, gpus=gpus,
                       require_concurrency=require_concurrency, require_headroom=require_headroom,
                       vllm_version=vllm_version, optimistic=optimistic, models_dir=models_dir, offline=offline,
                       gpu_reserved=gpu_reserved, engine_option=engine_option, calibration=calibration,
                       allow_path=allow_path)
    unsure = [v for v in report.verdicts if v.status in (INVALID, CANNOT_JUDGE)]
    if chosen is report_formats.Format.TEXT and output is None and not (len(unsure) == 1 and unsure[0].status == INVALID):
        # the text report on stdout gives each reason: stderr says how many in one line, not the findings again (a
        # single invalid file keeps its own error line, the contract of bad input)
        if unsure:
            invalid = sum(v.status == INVALID for v in unsure)
            unjudged = len(unsure) - invalid
            parts = ([f"{invalid:,} invalid"] if invalid else []) + ([f"{unjudged:,} cannot be judged"] if unjudged else [])
            total = len(report.verdicts)
            print(f"error: {' and '.join(parts)}, of {total:,} deployment{'s' if total != 1 else ''} (the report says why)",
                  file=sys.stderr)
    else:
        for verdict in unsure:
            print(f"error: {verdict.reason}", file=sys.stderr)
    from kvplan.cli.render import terminal_width

    # the text table fits an interactive terminal (records when it is wider); a pipe, a CI log and a file get the
    # whole table, whatever COLUMNS says (docs/check.md: the same input gives the same bytes)
    fit = terminal_width()
    text = report_formats.render(report, chosen) if output is not None or chosen is not report_formats.Format.TEXT \
        else report_formats.render_text(report, fit)
    if brief and output is None:
        from kvplan.cli.views.brief import check_lines

        text = "\n".join(check_lines(report)) + "\n"
    if output is not None:
        from kvplan.core.io import write_file

        def write(target: str) -> None:
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)

        write_file(output, write, what="the report")
        sys.stdout.write(report_formats.render_text(report, fit))
    else:
        sys.stdout.write(text)
    sys.stdout.flush()
    if report.exit_code:
        raise typer.Exit(report.exit_code)
