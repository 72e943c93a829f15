"""`kvplan calibrate LOG...`: kvplan's vLLM prediction beside each figure of a real vLLM start-up log.

Exit codes: 0 when every log kvplan can describe matches where vLLM is deterministic (blocks within the
rounding of the printed KV memory; tokens, concurrency, estimated max model length and padding layers
exactly) — logs of models kvplan cannot describe are listed and skipped; 1 when a deterministic figure
differs; 2 when a log is unreadable or not a vLLM log; 3 when kvplan can describe none of the logs.
Modelled budget terms (weights, activation peak, non-torch, CUDA graphs, available memory) are reported
with their difference and never fail the run: vLLM measures them on the GPU.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer


def register(app) -> None:
    from kvplan.cli.edge import guarded

    app.command(name="calibrate")(guarded(calibrate))


def calibrate(
    logs: Annotated[list[str], typer.Argument(help="vLLM start-up log files (INFO; DEBUG adds the per-worker budget lines).", show_default=False)],
    model: Annotated[Optional[str], typer.Option("--model", help="The model of the log(s): bundled name, spec YAML, config.json or model folder. Default: the log's model id as a bundled alias, or under --models-dir.", show_default=False)] = None,
    models_dir: Annotated[Optional[str], typer.Option("--models-dir", help="Folder of model folders named like the Hub cache (org--name/config.json) or by the model's short name.", show_default=False)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object: every log's figures and a summary.")] = False,
):
    """Compare kvplan's vLLM model with real start-up logs: each logged figure beside kvplan's, with the difference."""
    from pathlib import Path

    from kvplan.engines.vllm.calibrate import calibrate_log
    from kvplan.core.errors import EXIT_NO, InputError, UnsupportedError

    if not logs:
        raise InputError("no log given", where="LOG", hint="kvplan calibrate path/to/vllm.log")
    # a wrong --model or --models-dir is bad input for every log (exit 2), not a model kvplan cannot describe
    if model is not None:
        from kvplan.model.catalog import resolve_model

        try:
            resolve_model(model)
        except InputError as err:
            raise InputError(err.what, where=f"--model {model}" if err.where in (None, "MODEL") else err.where, hint=err.hint) from None
    if models_dir is not None and not Path(models_dir).expanduser().is_dir():
        missing = not Path(models_dir).expanduser().exists()
        raise InputError("no such folder" if missing else "is not a folder", where=f"--models-dir {models_dir}",
                         hint="a folder of model folders named like the Hub cache (org--name/config.json)")
    results = [calibrate_log(path, model=model, models_dir=models_dir) for path in logs]
    described = [r for r in results if r.status == "ok"]
    mismatched = [r for r in described if any(f.match is False for f in r.figures)]
    errors = [r.available_error_percent for r in described if r.available_error_percent is not None]
    summary = {
        "logs": len(results), "described": len(described), "cannot_describe": len(results) - len(described),
        "deterministic_mismatches": len(mismatched),
        "available_kv_mean_abs_error_percent": round(sum(errors) / len(errors), 3) if errors else None,
    }
    if json_out:
        from kvplan.core.io import to_json

        print(to_json({"summary": summary, "logs": results}))
    else:
        _print(results, summary)
    if not described:
        # the report above says it per log; the contract's one line on stderr says why nothing was compared
        first = results[0]
        if len(results) == 1:
            raise UnsupportedError(f"cannot describe the log's model: {first.reason}", where=first.log)
        raise UnsupportedError(f"kvplan can describe none of the {len(results)} logs (first: {first.reason})", where="LOG")
    if mismatched:
        raise typer.Exit(EXIT_NO)


def _unit(cell: str | None, unit: str) -> str:
    """A figure with its unit, as vLLM prints it: '50.72 GiB', '7.16x'; counts say what they count in the name.
    A memory difference carries its percentage after the unit: '-0.01 GiB (-0.2%)'."""
    if not cell:
        return "—"
    if unit == "GiB":
        number, _, rest = cell.partition(" ")
        return f"{number} GiB" + (f" {rest}" if rest else "")
    if unit == "x" and cell[-1].isdigit():
        return cell + "x"
    return cell


def _print(results, summary) -> None:
    from rich.text import Text

    from kvplan.cli.render import console, print_table

    out = console()
    err = console(stderr=True)
    for r in results:
        title = f"{r.log}: {r.model_id or '?'} · vLLM {r.vllm_version or '?'} (kvplan {r.rules} rules)"
        if r.gpu or r.tp:
            title += f" · {r.gpu or 'unknown GPU'} · TP {r.tp} × PP {r.pp} · max_model_len {r.max_model_len:,}" if r.max_model_len else ""
        out.print(Text(title, style="bold"))
        if r.status != "ok":
            out.print(f"  cannot describe: {r.reason}")
            continue
        rows = [[f.name, _unit(f.logged, f.unit), _unit(f.predicted, f.unit), _unit(f.difference, f.unit),
                 {True: "match", False: "MISMATCH", None: ""}[f.match]] for f in r.figures]
        # the figures keep their width; below the table's narrowest form each figure is a record (print_table)
        print_table(out, None, ["figure", "logged", "kvplan", "difference", ""], rows, text=(0, 4),
                    styles=["bold red" if f.match is False else None for f in r.figures], simple=True)
        for note in r.notes:
            err.print(f"note: {note}")
    mae = summary["available_kv_mean_abs_error_percent"]
    out.print(Text(f"{summary['described']} of {summary['logs']} logs described; "
                   f"{summary['deterministic_mismatches']} with a deterministic mismatch"
                   + (f"; available KV memory mean absolute error {mae:.2f}%" if mae is not None else ""), style="bold"))
