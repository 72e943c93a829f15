"""The line of a deployment file a verdict points at, for reports that annotate files (GitHub annotations, SARIF,
JUnit, markdown). Pure of typer and rich.

A verdict knows its file and YAML document; the line is found in that document's text: for a failure or a refusal,
the line that writes the setting the message names (`--max-model-len`, `max_model_len:`, `maxModelLen:`, the key
after the last ': ' of the error's location), else the line that starts the engine, else the document's first line.
For a pass, the engine launch (or the document's first line). The verdict's own reason and location name the
setting; this module only finds where the file writes it."""

from __future__ import annotations

import re

# how files write the length a deployment is judged at, in every format kvplan reads
_LENGTH_SPELLINGS = ("max-model-len", "max_model_len", "maxModelLen", "context-length", "context_length",
                     "max_seq_len", "max-seq-len", "maxSeqLen")
_LAUNCH = re.compile(r"vllm\s+serve|vllm\.entrypoints|sglang(?:\.launch_server|\s+serve)|trtllm-serve|llama-server|"
                     r"text-generation-launcher|ollama|lmdeploy|tritonserver|\bimage:|\bmodel:|--model\b")
_DOC_SEPARATOR = re.compile(r"^---\s*(#.*)?$")


def document_spans(text: str) -> list[tuple[int, int]]:
    """(first line, last line), 1-based, of each YAML document of a file; a file without `---` is one span."""
    lines = text.splitlines()
    spans, start = [], 1
    for number, line in enumerate(lines, start=1):
        if _DOC_SEPARATOR.match(line):
            if number > start and any(l.strip() and not l.lstrip().startswith("#") for l in lines[start - 1:number - 1]):
                spans.append((start, number - 1))
            start = number + 1
    if start <= len(lines) or not spans:
        spans.append((start, max(start, len(lines))))
    return spans


def _named_key(reason: str) -> str | None:
    """The setting an error line names: 'file#1: spec...containers[x]: --swap-space — ...' -> '--swap-space'."""
    where = reason.split(" — ", 1)[0]
    if ": " not in where:
        return None
    key = where.rsplit(": ", 1)[1].strip()
    key = key.split("[")[0].rsplit(".", 1)[-1] if not key.startswith("-") else key.split("=")[0]
    return key or None


def find_line(text: str, document: int | None, status: str, reason: str) -> int:
    """The 1-based line of `text` a verdict of that document points at (see the module docstring)."""
    spans = document_spans(text)
    first, last = spans[min(len(spans), document or 1) - 1] if spans else (1, 1)
    lines = text.splitlines()
    body = [(n, lines[n - 1]) for n in range(first, min(last, len(lines)) + 1)]
    code = [(n, line) for n, line in body if not line.lstrip().startswith("#")]

    def first_with(words) -> int | None:
        return next((n for n, line in code if any(w in line for w in words)), None)

    wanted: list[str] = []
    named = _named_key(reason) if status in ("invalid", "cannot_judge") else None
    if named:
        wanted.append(named)
        if not named.startswith("-"):
            wanted.append("--" + named.replace("_", "-"))
    if status == "fail" or named in ("max_model_len", "--max-model-len"):
        wanted += list(_LENGTH_SPELLINGS)
    for word in wanted:
        hit = first_with((word,))
        if hit is not None:
            return hit
    launch = next((n for n, line in code if _LAUNCH.search(line)), None)
    if launch is not None:
        return launch
    return next((n for n, line in code if line.strip()), first)
