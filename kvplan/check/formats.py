"""Renderers for `kvplan check` results: text (the default), json, markdown, junit, github (workflow annotations),
sarif (SARIF 2.1.0).

One str-Enum of formats and one exhaustive mapping from each to its renderer (a test loops over every
member). Every renderer is a pure function of the CheckReport: no clock, no absolute paths, no
terminal width, so the same input gives the same bytes and CI diffs stay meaningful.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Callable

from kvplan import engines
from kvplan.check.report import CANNOT_JUDGE, FAIL, INVALID, PASS, SKIPPED, CheckReport, Verdict, short_tokens
from kvplan.core.text import visible, wrap_pairs
from kvplan.core.units import format_bytes
from kvplan.core.io import to_json


class Format(str, Enum):
    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"
    JUNIT = "junit"
    GITHUB = "github"
    SARIF = "sarif"


_STATUS_TEXT = {PASS: "pass", FAIL: "FAIL", INVALID: "INVALID", CANNOT_JUDGE: "CANNOT JUDGE", SKIPPED: "skipped"}
_STATUS_MARK = {PASS: "✅ pass", FAIL: "❌ fail", INVALID: "⚠️ invalid", CANNOT_JUDGE: "❔ cannot judge",
                SKIPPED: "⏭️ skipped"}


def summary_line(report: CheckReport) -> str:
    """'7 deployments: 3 passed, 2 failed, 1 invalid, 1 cannot judge; 2 documents skipped (exit 2)'."""
    parts = [f"{report.passed} passed", f"{report.failed} failed"]
    if report.invalid:
        parts.append(f"{report.invalid} invalid")
    if report.cannot_judge:
        parts.append(f"{report.cannot_judge} cannot judge")
    noun = "deployment" if report.total == 1 else "deployments"
    skipped = f"; {report.skipped} document{'s' if report.skipped != 1 else ''} skipped" if report.skipped else ""
    return f"{report.total} {noun}: {', '.join(parts)}{skipped} (exit {report.exit_code})"


def origin_lines(v: Verdict) -> list[str]:
    """Where each input of a verdict came from, one 'what: where' per line."""
    o = v.origins
    if o is None:
        return []
    return [f"{what}: {where}" for what, where in (("GPU", o.gpu), ("GPUs", o.gpus), ("model", o.model),
                                                    ("release", o.engine_release)) if where]


def _check(v: Verdict, name: str):
    return next((c for c in v.checks if c.name == name), None)


def concurrency_cell(v: Verdict) -> str:
    """What fits at once ('13.73x' as vLLM logs it, or whole requests), and the requirement."""
    f = v.figures
    if f is None:
        return "—"
    if f.max_concurrency is not None:
        text = f"{f.max_concurrency:.2f}x"
    elif f.max_batch is not None:
        text = f"{f.max_batch:,}"
    else:
        return "—"
    check = _check(v, "concurrency")
    return f"{text} (≥{check.required:,})" if check else text


def headroom_cell(v: Verdict) -> str:
    check = _check(v, "headroom")
    if check is None or v.figures is None:
        return "—"
    actual = "none" if v.figures.headroom_percent is None else f"{v.figures.headroom_percent:.1f}%"
    return f"{actual} (≥{check.required:g}%)"


def located_label(v: Verdict) -> str:
    """'deploy/prod.yaml#2:14': the file, its document and the line the verdict points at (when it has one)."""
    return visible(v.label) + (f":{v.line}" if v.line else "")


def _gpu_cell(v: Verdict) -> str:
    if v.gpu is None:
        return "—"
    return f"{v.gpus}× {v.gpu}" if v.gpus else v.gpu


def _row(v: Verdict) -> list[str]:
    # file names and deployment names come from users: control characters are shown as escapes in every format
    return [visible(c) for c in (v.label, v.name, v.model or "—", v.engine or "—", _gpu_cell(v),
                                 short_tokens(v.max_model_len) if v.max_model_len else "—", concurrency_cell(v),
                                 headroom_cell(v))]


_HEADERS = ["deployment", "name", "model", "engine", "GPUs", "max len", "concurrency", "headroom"]


# ------------------------------------------------------------------ text

def _release_from_elsewhere(name: str | None) -> bool:
    """Whether a verdict's engine takes its release from the file's image tag or its own default, never from
    --vllm-version (its record has releases and no version_key): SGLang, TensorRT-LLM."""
    if name not in engines.ENGINE_NAMES:
        return False
    record = engines.get(name)
    return record.has_releases and record.version_key is None


def _release_clause(report: CheckReport) -> str:
    """Which vLLM release's rules judged the vLLM deployments that name none; nothing when every deployment judged is
    another engine's (SGLang, TensorRT-LLM). One whose engine is unknown (a file that could not be read) keeps it."""
    judged = [v for v in report.verdicts if v.status != SKIPPED]
    if judged and all(_release_from_elsewhere(v.engine) for v in judged):
        return ""
    return f" · vLLM deployments that pin no release judged by vLLM {report.vllm_version} rules"


def render_text(report: CheckReport, width: int | None = None) -> str:
    """The text report: a table, or, when `width` is given (the terminal's) and the table is wider, one record per
    deployment (its status and file on one line, the rest wrapped below), so no name or figure runs past the edge.
    The same report and width give the same bytes; without a width (a file written with -o) always the table."""
    rows = [[_STATUS_TEXT[v.status]] + _row(v) for v in report.verdicts]
    header = ["status"] + _HEADERS
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    right = {6, 7, 8}  # numbers align right

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = _wrapped("kvplan check" + _release_clause(report), width, "", "") + [""]
    if width is None or sum(widths) + 2 * (len(widths) - 1) <= width:
        out += [line(header)] + [line(r) for r in rows]
    else:
        for r in rows:
            out += _wrapped(f"{r[0]}  {r[1]}", width, "", "    ")
            out += ["    " + line for line in wrap_pairs([f"{h} {c}" for h, c in zip(header[2:], r[2:]) if c != "—"],
                                                       width - 4)]
    details = [v for v in report.verdicts if v.status != PASS]
    if details:
        out.append("")
    for v in details:
        if v.status == SKIPPED:
            out += _wrapped(f"skipped {visible(v.label)} ({visible(v.name)}): {visible(v.reason)}", width, "", "    ")
            continue
        if v.status in (INVALID, CANNOT_JUDGE):  # the reason is the error line, which names file and key
            out += _wrapped(f"{_STATUS_TEXT[v.status]} {visible(v.reason)}", width, "", "    ")
            continue
        out += _wrapped(f"{_STATUS_TEXT[v.status]} {visible(v.label)} ({visible(v.name)}): {visible(v.reason)}", width,
                        "", "    ")
        f = v.figures
        if f is not None and f.usable_bytes is not None:
            pool = "KV cache pool" if f.available_kv_bytes is not None else "cache"
            out += _wrapped(f"per GPU: usable {format_bytes(f.usable_bytes)}, weights {format_bytes(f.weights_bytes)}, "
                            f"{pool} {format_bytes(f.cache_bytes)}"
                            + (f"; longest max_model_len that starts: {f.longest_context:,}" if f.longest_context else ""),
                            width, "  ", "    ")
        if v.suggestions:
            out += _wrapped("fix (any one): " + " | ".join(v.suggestions), width, "  ", "    ")
    sourced = [v for v in report.verdicts if v.origins is not None and v.status in (PASS, FAIL, CANNOT_JUDGE)]
    if sourced:
        out += [""] + _wrapped("where the inputs came from:", width, "", "")
        for v in sourced:
            out += _wrapped(f"{visible(v.label)} ({visible(v.name)}): " + " · ".join(visible(o) for o in origin_lines(v)),
                            width, "  ", "    ")
    out += [""] + _wrapped(summary_line(report), width, "", "")
    return "\n".join(out) + "\n"


def _wrapped(text: str, width: int | None, first: str, rest: str) -> list[str]:
    """`text` after `first`, wrapped between words at `width` with `rest` before the later lines (never inside a
    word: a path or a figure stays whole); one line without a width."""
    import textwrap

    if width is None:
        return [first + text]
    return textwrap.wrap(text, max(width, 20), initial_indent=first, subsequent_indent=rest, break_long_words=False,
                         break_on_hyphens=False) or [first]


# ------------------------------------------------------------------ json

def render_json(report: CheckReport) -> str:
    return to_json(report) + "\n"


# ------------------------------------------------------------------ markdown

def _md(text: str) -> str:
    """A table cell: pipes escaped, no line breaks, control characters as escapes, and HTML outside code spans as
    entities: a name such as `<img src=x onerror=...>` is shown, never rendered (inside a code span it is text)."""
    parts = visible(" ".join(str(text).split())).replace("|", "\\|").split("`")
    last = len(parts) - 1  # after an unpaired backtick the text is no code span: escaped too
    return "`".join(part if i % 2 and i != last else _html_text(part) for i, part in enumerate(parts))


def _html_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    """Inline code; a backtick inside would end it early."""
    return "`" + text.replace("`", "'") + "`"


def render_markdown(report: CheckReport) -> str:
    out = ["## kvplan check", "", f"**{summary_line(report)}**{_release_clause(report)}", ""]
    out.append("| status | " + " | ".join(_HEADERS) + " | reason |")
    out.append("|---|" + "|".join("---:" if h in ("max len", "concurrency", "headroom") else "---" for h in _HEADERS) + "|---|")
    for v in report.verdicts:
        cells = [_STATUS_MARK[v.status]] + _row(v) + [v.reason]
        cells[1] = _code(located_label(v))
        out.append("| " + " | ".join(_md(c) for c in cells) + " |")
    fixes = [v for v in report.verdicts if v.suggestions]
    if fixes:
        out += ["", "### Fixes", "", "Each change alone makes the deployment pass (checked with the same engine model)."]
        out.append("")
        for v in fixes:
            out.append(f"- {_code(_md(v.label))} ({_md(v.name)}): " + " · ".join(f"`{s}`" for s in v.suggestions))
    sourced = [v for v in report.verdicts if v.origins is not None and v.status in (PASS, FAIL, CANNOT_JUDGE)]
    if sourced:
        out += ["", "### Where the inputs came from", ""]
        for v in sourced:
            out.append(f"- {_code(_md(v.label))} ({_md(v.name)}): " + " · ".join(_md(line) for line in origin_lines(v)))
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ junit

def render_junit(report: CheckReport) -> str:
    """JUnit XML as CI systems read it: one testcase per deployment; fail -> <failure>, invalid and
    cannot judge -> <error> (both block the gate: exit 2 / 3). time is always 0 (no clock: deterministic)."""
    import xml.etree.ElementTree as ET

    errors = report.invalid + report.cannot_judge
    counts = {"tests": str(report.total + report.skipped), "failures": str(report.failed), "errors": str(errors),
              "skipped": str(report.skipped)}
    root = ET.Element("testsuites", {"name": "kvplan check", **counts, "time": "0"})
    suite = ET.SubElement(root, "testsuite", {"name": "kvplan check", **counts, "time": "0"})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "vllm_version", "value": report.vllm_version})
    ET.SubElement(props, "property", {"name": "exit_code", "value": str(report.exit_code)})
    for v in report.verdicts:
        # XML 1.0 cannot hold most control characters at all (a parser rejects the file): shown as escapes
        attributes = {"classname": visible(v.source), "name": visible(v.label if v.label != v.source else v.name),
                      "file": visible(v.source), "time": "0"}
        if v.line:
            attributes["line"] = str(v.line)  # as pytest's and GitLab's JUnit readers take it
        case = ET.SubElement(suite, "testcase", attributes)
        body = [f"{k}: {val}" for k, val in (("model", v.model), ("engine", v.engine), ("GPUs", _gpu_cell(v)),
                                             ("max_model_len", v.max_model_len), ("concurrency", concurrency_cell(v)),
                                             ("headroom", headroom_cell(v))) if val not in (None, "—")]
        body += [f"fix: {s}" for s in v.suggestions] + [f"note: {n}" for n in v.notes]
        body += [f"{line.split(': ', 1)[0]} from: {line.split(': ', 1)[1]}" for line in origin_lines(v)]
        if v.origins is not None:
            props = ET.SubElement(case, "properties")
            for what, where in (("gpu_from", v.origins.gpu), ("gpus_from", v.origins.gpus), ("model_from", v.origins.model),
                                ("release_from", v.origins.engine_release)):
                if where:
                    ET.SubElement(props, "property", {"name": what, "value": visible(where)})
        body = [visible(line) for line in body]
        reason = visible(v.reason)
        if v.status == FAIL:
            ET.SubElement(case, "failure", {"message": reason, "type": "fail"}).text = "\n".join([reason] + body)
        elif v.status in (INVALID, CANNOT_JUDGE):
            ET.SubElement(case, "error", {"message": reason, "type": v.status}).text = reason
        elif v.status == SKIPPED:
            ET.SubElement(case, "skipped", {"message": visible(v.reason)})
        if body and v.status in (PASS, FAIL):
            ET.SubElement(case, "system-out").text = "\n".join([reason] + body)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# ------------------------------------------------------------------ github

def _workflow_data(text: str) -> str:
    """A workflow command's message, escaped as the Actions runner unescapes it (% CR LF)."""
    return visible(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _workflow_property(text: str) -> str:
    """A workflow command's property value: also ':' and ',', which separate properties."""
    return _workflow_data(text).replace(":", "%3A").replace(",", "%2C")


_ANNOTATION = {FAIL: "error", INVALID: "error", CANNOT_JUDGE: "error"}


def render_github(report: CheckReport) -> str:
    """GitHub Actions workflow commands (https://docs.github.com/actions/reference/workflow-commands-for-github-actions):
    one `::error file=F,line=L,title=T::message` per deployment that blocks the gate (fail, invalid, cannot judge: each
    makes the exit code non-zero), shown on the file's line in the pull request; a `::notice` per pass; the summary
    line last. Files are named as given on the command line (run kvplan from the repository root)."""
    out = []
    for v in report.verdicts:
        if v.status == SKIPPED:
            continue
        level = _ANNOTATION.get(v.status, "notice")
        props = []
        if v.source and not v.source.startswith("--vllm-args"):
            props.append(f"file={_workflow_property(v.source)}")
            if v.line:
                props.append(f"line={v.line}")
        props.append(f"title={_workflow_property(f'kvplan check: {_STATUS_TEXT[v.status]} {v.name}')}")
        message = v.reason
        if v.suggestions:
            message += "\nfix (any one): " + " | ".join(v.suggestions)
        if v.origins is not None:
            message += "\n" + " · ".join(origin_lines(v))
        out.append(f"::{level} {','.join(props)}::{_workflow_data(message)}")
    out.append(summary_line(report))
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ sarif

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_RULES = (
    ("starts", "the engine starts and serves one request of max_model_len"),
    ("concurrency", "the required requests of max_model_len fit at once"),
    ("headroom", "the required share of usable GPU memory stays free"),
    ("gpus", "the file gives the GPUs its parallel layout takes"),
    (INVALID, "the deployment file is valid input"),
    (CANNOT_JUDGE, "kvplan can judge the deployment (what it does not model or cannot know is named)"),
)


def render_sarif(report: CheckReport) -> str:
    """SARIF 2.1.0 (OASIS, https://docs.oasis-open.org/sarif/sarif/v2.1.0/): one run of the tool `kvplan`, a rule per
    check, one result per failed check of a failing deployment, and one per invalid or cannot-judge deployment, each
    at its file and line (region.startLine). Code scanning shows them on the pull request."""
    import json

    rule_ids = [rule for rule, _ in _SARIF_RULES]
    results = []
    for v in report.verdicts:
        if v.status == FAIL:
            failed = [(c.name, c.detail) for c in v.checks if not c.passed] or [("starts", v.reason)]
        elif v.status in (INVALID, CANNOT_JUDGE):
            failed = [(v.status, v.reason)]
        else:
            continue
        for rule, detail in failed:
            text = f"{v.name}: {detail}"
            if v.suggestions:
                text += " (fix, any one: " + " | ".join(v.suggestions) + ")"
            unused = [line for line in origin_lines(v) if "not used)" in line]  # a --gpu / --gpus the file overrules
            if unused:
                text += " [" + "; ".join(unused) + "]"
            result = {"ruleId": rule, "ruleIndex": rule_ids.index(rule) if rule in rule_ids else 0, "level": "error",
                      "message": {"text": visible(text)}}
            if v.source and not v.source.startswith("--vllm-args"):
                location: dict[str, Any] = {"artifactLocation": {"uri": visible(v.source)}}
                if v.line:
                    location["region"] = {"startLine": v.line}
                result["locations"] = [{"physicalLocation": location}]
            results.append(result)
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "kvplan",
                            "rules": [{"id": rule, "shortDescription": {"text": text}} for rule, text in _SARIF_RULES]}},
        "results": results}]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


RENDERERS: dict[Format, Callable[[CheckReport], str]] = {
    Format.TEXT: render_text,
    Format.JSON: render_json,
    Format.MARKDOWN: render_markdown,
    Format.JUNIT: render_junit,
    Format.GITHUB: render_github,
    Format.SARIF: render_sarif,
}
if set(RENDERERS) != set(Format):  # pragma: no cover - exhaustive by construction; the test loops too
    raise AssertionError("every Format needs a renderer")


def render(report: CheckReport, fmt: Format | str) -> str:
    return RENDERERS[Format(fmt)](report)
