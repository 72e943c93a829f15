"""Engine start-up logs as users paste them, turned into logical lines with their process labels. Pure, stdlib.

Shared by the vLLM, SGLang and TensorRT-LLM log readers (engines/<engine>/log.py). A pasted log differs from
the file the server wrote in ways that have nothing to do with the engine, and each is undone here once:

- colour codes: `\\x1b[1;36m` as a terminal writes them, and `[1;36m` / `^[[0;36m` as GitHub shows them once
  the ESC byte is gone;
- carriage returns (progress bars redrawn in place put two records on one physical line);
- hard wraps: a terminal or an issue form breaks long lines at a fixed width, mid-word (`_initialize_k` /
  `v_caches`), or an editor re-flows them at spaces. A wrapped line is joined back to the line before it when
  that line is as long as the paste's wrap width and the next one cannot start a record of its own (see
  `unwrap`); the readers' patterns accept a missing space where a word-wrap was joined;
- process labels: `(EngineCore pid=283)`, `(VllmWorker TP0 pid=7)` (a space in the name), Ray's nested
  `(ServeReplica:app pid=1) (EngineCore pid=2) (RayWorkerProc pid=3) (Worker pid=3)` and `(X pid=4, ip=10.0.0.1)`;
  the innermost label before the text owns it, and a physical line holding several labelled records (two
  processes writing at once) is split at each label;
- wrappers in front of the text (docker compose's `service  | `, a notebook's `vLLM STDOUT: `, indentation,
  markdown list items and backticks) are left in place: the readers search each line's text for the engine's
  own phrases rather than anchoring on the line start, so excerpts without the `INFO MM-DD hh:mm:ss
  [file.py:N]` head are read like whole logs.

`detect_engine` names the engine whose phrases a text holds; `dispatch` hands a line to the first row of a reader's
table of line patterns whose pattern it matches.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence

__all__ = ["Line", "detect_engine", "dispatch", "lines", "message", "paste_traits", "spaced", "unwrap"]

# ESC-led colour codes, and what is left of them when the ESC byte is dropped ("[0;36m", "^[[0;36m")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|(?:\^\[)?\[\d{1,3}(?:;\d{1,3})*m")
# a process label: any name (spaces and colons allowed, no parentheses) then pid=N, optionally ", ip=..."
_LABEL = re.compile(r"\((?P<name>[^()]*?)\s*\bpid=(?P<pid>\d+)(?:,\s*ip=[^()]*)?\)\s?")

# How a line that starts a record of its own begins: a process label, a level word with a date or a source,
# a bracketed head ("[2025-03-08 12:29:13 TP0]", "[TensorRT-LLM][INFO]", "[Gloo]", "[W923 ...]"), a date, a
# progress bar, a fence or a heading; a wrapped continuation never does.
_STARTS_RECORD = re.compile(
    r"""(?x)
    \(\S[^()]*\bpid=\d+
    | (?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b
    | \[
    | \d{4}-\d{2}-\d{2}
    | (?:Loading\ safetensors|Capturing|Traceback|Exception|ValueError|RuntimeError|AssertionError|torch\.)
    | \s*\d+%\|
    | ```|\*\*|\#|\$\ |>|\.\.\.|[-+|]{3}
    """
)
# The engines' own phrases that may open a bare, prefix-less line in an excerpt; such a line is a record,
# never a wrapped continuation.
_PHRASES = re.compile(
    r"(?:Available KV cache|GPU KV cache size|Maximum concurrency|# ?\w+ blocks|GPU blocks|Memory profiling|"
    r"Model loading took|Loading model weights|the current vLLM|model weights take|Free memory on device|"
    r"KV Cache is allocated|Load weight|Memory pool end|max_total_num_tokens|Number of blocks|Allocated|"
    r"Using \d+ (?:total )?tokens|The model's max seq len|init engine)"
)
MIN_WRAP_WIDTH = 60  # narrower than any terminal or issue form that wraps a log
WORD_WRAP_SLACK = 15  # a re-flowed paragraph's lines end up to this many characters short of its width
MAX_LONGER = 0  # lines a wrapped paste may hold beyond its width: none (a terminal wraps every line it prints)


@dataclass(frozen=True)
class Line:
    """One logical line of a log: its text after the process labels, and the innermost label's process."""

    text: str
    name: str | None  # the process label's name ("EngineCore", "Worker_TP1", "VllmWorker TP0"), None if none
    pid: int | None
    number: int  # 1-based physical line where it starts


_HEAD = re.compile(r"^(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+(?:\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}(?:\.\d+)?\s+)?"
                   r"(?:\[[^\]]*\]\s?|[\w./-]+\.py:\d+\]\s?)?")


def message(text: str) -> str:
    """A line's text without vLLM's `LEVEL MM-DD hh:mm:ss [file.py:N]` head (when it has one)."""
    return _HEAD.sub("", text, count=1)


# every match of _ANSI holds ESC or this; it starts with a literal, which re finds fast, where _ANSI's optional "^["
# makes re try the whole pattern at every position (9 ms for a 160 KB log that has no colour codes)
_ANSI_HINT = re.compile(r"\[\d{1,3}(?:;\d{1,3})*m")


def strip_ansi(text: str) -> str:
    if "\x1b" not in text and not _ANSI_HINT.search(text):
        return text
    return _ANSI.sub("", text)


def _continues(prev: str, nxt: str, *, cut: bool = False) -> bool:
    """Whether `nxt` can be the wrapped rest of `prev` (not whether it is: unwrap decides with the width). A line a
    terminal cut at its last column (`cut`) continues with whatever text followed, so only a true record head
    (a process label, a level and date, a bracketed head) stops it; a re-flowed line also stops at a line that
    opens with one of the engines' phrases or a progress bar."""
    if not nxt.strip() or (nxt[0].isspace() and not cut) or nxt[0] == "|" or len(prev) < MIN_WRAP_WIDTH:
        return False
    if _LABEL.search(nxt[:60]) or _HEAD_ANYWHERE.search(nxt[:60]):
        return False  # a record, or one behind a wrapper ("service  | (APIServer pid=1) INFO ...")
    if cut:
        return not _TRUE_HEAD.match(nxt)
    return not (_STARTS_RECORD.match(nxt) or _PHRASES.match(nxt))


_TRUE_HEAD = re.compile(r"\(\S[^()]*\bpid=\d+|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+(?:\d|\[)|\[")


def unwrap(physical: list[str]) -> list[tuple[int, str]]:
    """Join hard-wrapped lines back: [(1-based first physical line, logical line)].

    A wrapped paste has a width no line exceeds (a terminal's columns, an issue form's): W is a length seen at least
    twice on a line followed by a possible continuation, with no line longer than W + WORD_WRAP_SLACK (an ordinary
    log has lines far longer than any that is followed by an unlabelled one, so nothing is joined in it). A line of
    exactly W characters was cut by a terminal at a column and continues without a space; a line a little
    shorter (a space dropped at the break, or a paragraph re-flowed at spaces) continues after a space.
    """
    candidates = Counter(len(physical[i]) for i in range(len(physical) - 1)
                         if _continues(physical[i], physical[i + 1], cut=True))
    lengths = sorted((len(p) for p in physical), reverse=True)

    def longer(w: int) -> int:
        return sum(1 for n in lengths if n > w)

    widths = [w for w, n in candidates.items() if n >= 2 and longer(w + WORD_WRAP_SLACK) <= MAX_LONGER]
    width = max(widths) if widths else None
    out: list[tuple[int, str]] = []
    for i, line in enumerate(physical):
        cut = width is not None and len(physical[i - 1]) == width if i else False
        if width is not None and out and _continues(physical[i - 1], line, cut=cut) and \
                width - WORD_WRAP_SLACK <= len(physical[i - 1]) <= width:
            start, text = out[-1]
            out[-1] = (start, text + ("" if len(physical[i - 1]) == width else " ") + line)
        else:
            out.append((i + 1, line))
    return out


def lines(text: str) -> list[Line]:
    """The logical lines of a pasted log, each split at its process labels (see the module docstring)."""
    physical: list[str] = []
    for raw in strip_ansi(text).replace("\r\n", "\n").split("\n"):
        # a progress bar redrawn with carriage returns: the pieces are separate writes
        physical.extend(piece.rstrip() for piece in raw.split("\r"))
    out: list[Line] = []
    for number, logical in unwrap(physical):
        labels = list(_LABEL.finditer(logical))
        if not labels:
            if logical.strip():
                out.append(Line(logical.strip(), None, None, number))
            continue
        head = logical[:labels[0].start()].strip()
        if head and not head.endswith(("|", ":")):  # text before the first label that is not a wrapper
            out.append(Line(head, None, None, number))
        for i, lab in enumerate(labels):
            end = labels[i + 1].start() if i + 1 < len(labels) else len(logical)
            body = logical[lab.end():end].strip()
            if body:  # an outer label of a nested chain owns no text of its own
                out.append(Line(body, lab["name"].strip() or None, int(lab["pid"]), number))
    return out


def paste_traits(text: str) -> list[str]:
    """How a paste differs from the file the server wrote, in words (what the reader undid)."""
    out = []
    if "\x1b[" in text:
        out.append("ANSI colour codes")
    elif re.search(r"(?:\^\[)?\[\d{1,3}(?:;\d{1,3})*m", text):
        out.append("ANSI colour codes without the ESC byte")
    physical = [p.rstrip() for raw in strip_ansi(text).replace("\r\n", "\n").split("\n") for p in raw.split("\r")]
    joined = len(physical) - len(unwrap(physical))
    if joined:
        out.append(f"{joined} hard-wrapped line(s) joined")
    labels = [m for m in _LABEL.finditer(strip_ansi(text))]
    if any(" " in m["name"].strip() for m in labels):
        out.append("process labels with a space in the name")
    if re.search(r"pid=\d+[^()\n]*\)[ \t]*\([^()\n]*pid=\d+", strip_ansi(text)):
        out.append("nested or repeated process labels")
    heads = sum(1 for line in physical if _HEAD_ANYWHERE.search(line))
    if heads == 0:
        out.append("no `LEVEL MM-DD hh:mm:ss` heads (an excerpt)")
    if any(re.match(r"^[A-Za-z0-9][\w.-]*\s+\|\s", line) for line in physical):
        out.append("container-log prefixes (`service | `)")
    return out


_HEAD_ANYWHERE = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR)\s+\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}|\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}|"
                            r"\[\d{2}/\d{2}/\d{4}-\d{2}:\d{2}:\d{2}\]|\[TensorRT-LLM\]")


class Needs:
    """`pattern`, tried only on a text that holds `literal`, a piece of every text the pattern matches. Python's re
    scans for a pattern that begins with a group or a class (`(?:^|, )key=`) by trying it at every position: on a
    start-up log's lines that is 10-40 times slower than the substring test, and most lines match nothing."""

    __slots__ = ("literal", "pattern")

    def __init__(self, literal: str, pattern: re.Pattern):
        self.literal, self.pattern = literal, pattern

    def search(self, text: str) -> re.Match | None:
        return self.pattern.search(text) if self.literal in text else None


# a number as the engines print it in their start-up lines ("79.19", "-0.37", "8192"), one group
NUMBER = r"(-?\d+(?:\.\d+)?)"


def spaced(pattern: str) -> re.Pattern:
    """A pattern whose literal spaces also match no space or several (a word-wrap joined back; a table's
    padding): write the engine's phrase as it prints it."""
    return re.compile(pattern.replace(" ", r"\s*"))


# --------------------------------------------------------------------------------------------------------------
# Which engine wrote a log

_MARKERS = {
    "vllm": (
        (3, re.compile(r"vLLM API server version|Initializing a V[01] LLM engine|the current vLLM instance|"
                       r"Available KV cache memory|GPU KV cache size|num_gpu_blocks is|# (?:GPU|CUDA|cuda|rocm) blocks|"
                       r"Free memory on device|worker init memory snapshot|Loading model weights took|"
                       r"Model loading took [\d.]+ Gi?B")),
        (1, re.compile(r"\bvllm\b|EngineCore|VllmWorker|gpu_worker\.py|kv_cache_utils\.py|Maximum concurrency for")),
    ),
    "sglang": (
        (3, re.compile(r"server_args=ServerArgs\(|KV Cache is allocated\. #tokens|Load weight (?:begin|end)\.|"
                       r"Memory pool end\.|max_total_num_tokens=|Capture cuda graph (?:begin|end)|"
                       r"SWAKVPool|Mamba Cache is allocated")),
        (1, re.compile(r"\bsglang\b|Init torch distributed")),
    ),
    "trtllm": (
        (3, re.compile(r"\[TensorRT-LLM\]|\[TRT-LLM\]|paged KV cache|TRTGptModel|KV cache primary pool|"
                       r"\[MemUsageChange\]")),
        (1, re.compile(r"tensorrt_llm|trtllm|TensorRT-LLM")),
    ),
}


# one row of a log reader's table: what finds the line (a pattern's search), and what the match gives
LineRow = tuple[Callable[[str], Any], Callable[..., None]]


def dispatch(rows: Sequence[LineRow], text: str, *context: Any, every: bool = False) -> bool:
    """Hand `text` to the handler of the first row whose matcher finds something in it (`every`: of each such row,
    in order), called with `context` and the match; False when no row does. The rows' order is the reader's
    precedence: a line one phrase of which another row also finds goes to the earlier row."""
    taken = False
    for matches, handle in rows:
        if m := matches(text):
            handle(*context, m)
            if not every:
                return True
            taken = True
    return taken


def detect_engine(text: str) -> str | None:
    """'vllm', 'sglang' or 'trtllm': the engine whose start-up phrases the text holds most (weighted: a phrase
    only that engine logs counts 3 a line, a mention of its name or files 1); None when none or a tie."""
    scores = {engine: 0 for engine in _MARKERS}
    for line in strip_ansi(text).splitlines():
        for engine, markers in _MARKERS.items():
            for weight, pattern in markers:
                if pattern.search(line):
                    scores[engine] += weight
                    break
    best = max(scores.values())
    winners = [e for e, s in scores.items() if s == best]
    return winners[0] if best > 0 and len(winners) == 1 else None
