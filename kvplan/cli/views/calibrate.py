"""`kvplan calibrate`'s report: per log, its figures beside kvplan's with a verdict; then the summary and the fitted
site profile."""

from __future__ import annotations

GIB = 2**30
MARKS = {True: ("match", "green"), False: ("MISMATCH", "bold red"), None: ("", "")}


def _unit(cell: str | None, unit: str) -> str:
    """A figure with its unit, as the engines print it: '50.72 GiB', '7.16x'; counts say what they count in the name.
    A memory difference carries its percentage after the unit: '-0.01 GiB (-0.2%)'."""
    if not cell:
        return "—"
    if unit in ("GiB", "GB"):
        number, _, rest = cell.partition(" ")
        return f"{number} {unit}" + (f" {rest}" if rest else "")
    if unit == "x" and cell[-1].isdigit():
        return cell + "x"
    return cell


def _title(r) -> str:
    engine = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}.get(r.engine or "", r.engine or "?")
    parts = [f"{r.log}: {r.model_id or '?'}", f"{engine} {r.engine_version or '?'}"
             + (f" (kvplan {r.rules} rules)" if r.rules else "")]
    if r.gpu:
        parts.append(r.gpu)
    if r.tp or r.pp:
        parts.append(f"TP {r.tp or '?'} × PP {r.pp or '?'}")
    if r.max_model_len:
        parts.append(f"max_model_len {r.max_model_len:,}")
    return " · ".join(parts)


def print_report(results, summary, fit, save_path) -> None:
    from rich.text import Text

    from kvplan.cli.render import console, print_table

    out = console()
    err = console(stderr=True)
    shown = [r for r in results if r.status != "invalid"]  # an unreadable log gets its error line on stderr only
    if not shown:
        return
    for r in shown:
        out.print(Text(_title(r), style="bold"))
        if r.figures:
            rows, styles = [], []
            for f in r.figures:
                word, style = MARKS[f.match]
                if f.match is False and f.assumed:
                    word, style = "differs (assumed input)", "yellow"
                rows.append([f.name, f.basis, _unit(f.logged, f.unit), _unit(f.predicted, f.unit),
                             _unit(f.difference, f.unit), word])
                styles.append(style if f.match is False else None)
            # the figures keep their width; below the table's narrowest form each figure is a record (print_table)
            print_table(out, None, ["figure", "basis", "logged", "kvplan", "difference", ""], rows, text=(0, 1, 5),
                        styles=styles, simple=True)
        style = {"match": "green", "mismatch": "bold red", "cannot judge": "yellow", "invalid": "bold red"}[r.status]
        out.print(Text(f"  {r.status}: {r.reason}", style=style))
        if r.explained:
            out.print(f"  difference: {r.explained}")
        for line in r.read:
            out.print(f"  read: {line}")
        for note in r.notes:
            err.print(f"note: {r.log}: {note}")
    s = summary
    engines = ", ".join(f"{n} {e}" for e, n in sorted(s.by_engine.items()))
    line = (f"{s.logs} logs ({engines}): {s.matched} match, {s.mismatched} mismatch, {s.cannot_judge} cannot be judged, "
            f"{s.invalid} invalid")
    if s.available_kv_mean_abs_error_percent is not None:
        line += f"; modelled KV memory mean absolute error {s.available_kv_mean_abs_error_percent:.2f}% ({s.scored} logs)"
    out.print(Text(line, style="bold"))
    if fit is not None:
        _print_site(out, fit, save_path)


def _print_site(out, fit, path) -> None:
    from rich.text import Text

    from kvplan.cli.render import size

    p = fit.profile
    out.print(Text(f"site profile ({p.engine}) written to {path}, fitted on {len(p.fitted_on)} logs:", style="bold"))
    layouts = ", ".join(f"TP {t} × PP {q}" for t, q in p.layouts) or "any layout"
    out.print(f"  memory in use at start   {size(p.memory_in_use_bytes)}")
    out.print(f"  non-torch memory         {size(p.non_torch_bytes) if p.non_torch_bytes is not None else 'engine model'}"
              + (f" ({layouts})" if p.non_torch_bytes is not None else ""))
    out.print(f"  activation scale         {float(p.activation_scale):.4f}")
    out.print(f"  CUDA-graph memory        {size(p.cuda_graph_bytes) if p.cuda_graph_bytes is not None else 'engine model'}")
    if fit.mean_error_percent_after is not None:
        out.print(f"  leave-one-log-out error of the available KV memory: mean {fit.mean_error_percent_after:.2f}%, "
                  f"max {fit.max_error_percent_after:.2f}% over {len(fit.left_out)} logs "
                  f"(kvplan without the profile: mean {fit.mean_error_percent_before:.2f}%)")
    for note in fit.notes:
        out.print(f"  note: {note}")
