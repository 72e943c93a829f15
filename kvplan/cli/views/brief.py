"""`--brief`: the answer an operator needs, first and alone: the verdict and the engine that gave it, the concurrency
at the asked length, the longest length, the fix. At most 8 lines of at most 80 columns for one estimate or one
deployment; byte counts stay in the detailed view and the JSON."""

from __future__ import annotations

from kvplan.core.text import plural

WIDTH = 80
MAX_LINES = 8
_FIXES_SHOWN = 3


def _title(name: str | None) -> str | None:
    """How people write an engine kvplan models (its record's title), else the name as given."""
    from kvplan import engines

    return engines.get(name).title if name in engines.ENGINE_NAMES else name


def _engine_name(result) -> str:
    """The engine that gave the verdict and its release: 'vLLM 0.33.0', 'SGLang 0.5.23', 'textbook (static)'."""
    from kvplan import engines

    record = engines.get(result.engine)
    if not record.paged:
        return "textbook (static)"
    release = record.release_field
    return f"{record.title} {getattr(result, release)}" if release and getattr(result, release, None) else record.title


def _longest(result) -> tuple[int | None, int]:
    """(the one longest context of the answer, for how many sequences): the engine's own estimate when the asked
    length does not start (one sequence), else the longest that holds `batch` sequences."""
    estimated = getattr(result, "estimated_max_model_len", None)
    if estimated is not None:
        return estimated, 1
    return result.max_seq, result.batch


def estimate_lines(result) -> list[str]:
    """The brief answer of an estimate result, any engine."""
    from kvplan.core.units import format_bytes

    from kvplan.check.report import short_tokens

    r = result
    tokens = short_tokens(r.seq)
    gpus = getattr(r, "gpus", None) or 1
    where = f"{gpus}× {r.gpu}" if r.gpu else (f"{gpus}× custom GPU" if r.per_gpu is not None else "no GPU named")
    lines = [f"{r.model} · {tokens} × {r.batch:,} · KV {r.kv_dtype} · {where} · {_engine_name(r)}"]
    if r.fits is None:
        lines.append(f"KV cache: {format_bytes(r.cache_bytes)} ({format_bytes(r.kv_bytes_per_token)} per token); "
                     "give --gpu NAME for a verdict")
        return _fit(lines)
    starts = getattr(r, "starts", None)
    if r.fits:
        verdict = "fits"
    elif starts:
        verdict = f"does NOT fit: starts, holds {r.max_batch:,} of the {r.batch:,}"
    elif starts is False:
        verdict = "does NOT start"
    else:
        verdict = "does NOT fit"
    if getattr(r, "marginal", None):
        verdict += " (marginal: the budget's band decides)"
    lines.append(f"verdict: {verdict}")
    pool = r.pool_view()
    held = plural(r.max_batch or 0, "sequence")
    if pool is not None and pool.concurrency is not None:
        lines.append(f"concurrency at {tokens}: {float(pool.concurrency):.2f}x ({held} at once)")
    elif r.max_batch is not None:
        lines.append(f"concurrency at {tokens}: {held} at once")
    longest, of = _longest(r)
    lines.append(f"longest context for {plural(of, 'sequence')}: " + (f"{longest:,} tokens" if longest else "none fits"))
    fixes = list(getattr(r, "suggestions", ()) or ())
    if fixes:
        lines.append("fix (in the order to try):")
        lines += [f"  {fix}" for fix in fixes[:_FIXES_SHOWN]]
    return _fit(lines)


def check_lines(report) -> list[str]:
    """The brief answer of a check report: per deployment its status and engine, concurrency at max_model_len,
    longest context and first fix; then the count. Eight lines hold one deployment; more take more."""
    from kvplan.check.report import FAIL, PASS, SKIPPED, short_tokens

    lines: list[str] = []
    for v in report.verdicts:
        if v.status == SKIPPED:
            continue
        name = v.name or v.source
        if v.status not in (PASS, FAIL):
            lines.append(f"{v.status.upper()} {name}: {v.reason}")
            continue
        release = (v.origins.engine_release or "").split(" (")[0].replace(" rules", "") if v.origins else ""
        engine = release or _title(v.engine)
        lines.append(f"{v.status.upper()} {name}" + ("" if v.model == name else f" ({v.model})"))
        f = v.figures
        concurrency = f"{f.max_concurrency:.2f}x" if f.max_concurrency is not None else (
            plural(f.max_batch, "sequence") if f.max_batch is not None else "—")
        lines.append(f"  {engine} on {v.gpus}× {v.gpu} · max_model_len {short_tokens(v.max_model_len)} · "
                     f"concurrency {concurrency}")
        lines.append("  longest max_model_len that starts: "
                     + (f"{f.longest_context:,} tokens" if f.longest_context else "none"))
        if v.status == FAIL:
            lines.append(f"  why: {v.reason}")
            lines += [("  fix: " if i == 0 else "    or ") + fix for i, fix in enumerate(v.suggestions[:_FIXES_SHOWN])]
    n = report.total
    others = [f"{count} {word}" for count, word in ((report.invalid, "invalid"), (report.cannot_judge, "cannot judge")) if count]
    lines.append(f"{plural(n, 'deployment')}: " + ", ".join([f"{report.passed} passed", f"{report.failed} failed", *others])
                 + f" (exit {report.exit_code})")
    return _fit(lines, limit=None if n > 1 else MAX_LINES)


def _fit(lines: list[str], *, limit: int | None = MAX_LINES) -> list[str]:
    """Lines of at most WIDTH columns, each long one cut at a word with an ellipsis (the detailed view has the rest);
    at most `limit` of them."""
    out = []
    for line in lines:
        if len(line) > WIDTH:
            cut = line[:WIDTH - 2]
            cut = cut[:cut.rfind(" ")] if " " in cut[WIDTH // 2:] else cut
            line = cut.rstrip() + " …"
        out.append(line)
    return out if limit is None else out[:limit]
