"""Names and other text from users' files, made safe to print in every report format. Pure.

A name or path is shown as written, except what would act instead of being read: control characters (an ESC
starting an ANSI sequence that recolours or clears a terminal, a newline that starts a new table row or YAML key,
NUL and the other C0/C1 codes that make JUnit XML invalid), Unicode line separators, and the bidirectional
overrides that make text read in another order than it is stored ("Trojan Source", CVE-2021-42574). Each is
written as its escape (`\\x1b`, `\\n`, `\\u202e`), so the report still says exactly what the file holds.

Names kvplan's own files define (a spec's name, a deployment's name) are refused with control characters at
validation (kvplan.core.errors.check_name); what comes from elsewhere (a folder name, a log's model id, vLLM's served model name,
a path) is escaped where it is shown (`visible`).
"""

from __future__ import annotations

import unicodedata

_INVISIBLE = {0x2028, 0x2029, 0x200E, 0x200F, 0x061C, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) == "Cc" or ord(ch) in _INVISIBLE


def _escape(ch: str) -> str:
    code = ord(ch)
    return _SHORT.get(ch) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(text) -> str:
    """`text` with every control character, line separator and bidi override written as its escape."""
    text = str(text)
    if text.isprintable() and not any(ord(ch) in _INVISIBLE for ch in text):
        return text  # the common case, without a per-character walk
    return "".join(_escape(ch) if _unsafe(ch) else ch for ch in text)


def first_control(text: str) -> str | None:
    """The escape of the first character `visible` would escape, or None (errors.check_name refuses names by it)."""
    bad = next((ch for ch in str(text) if _unsafe(ch)), None)
    return None if bad is None else _escape(bad)


# a spreadsheet reads a cell starting with one of these as a formula (=HYPERLINK(...), +cmd, -2+3, @SUM);
# OWASP "CSV Injection": prefix such a cell with a single quote
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value) -> str:
    """A text cell for CSV: visible, and a leading formula character neutralised with a quote. Numbers are left
    alone (a negative count is a number, not a formula); only text cells go through here."""
    text = visible(value)
    if text.startswith(_FORMULA_START):
        return "'" + text
    return text


def wrap_pairs(pairs: list[str], width: int) -> list[str]:
    """Items joined by ' · ' into lines of at most `width`, breaking only between items; an item longer than a line
    wraps between its words, never inside one (a path or a figure stays whole, even past the edge)."""
    import textwrap

    lines: list[str] = []
    line = ""
    for pair in pairs:
        if line and len(line) + 3 + len(pair) <= width:
            line += " · " + pair
            continue
        if line:
            lines.append(line)
        parts = textwrap.wrap(pair, max(width, 10), break_long_words=False, break_on_hyphens=False) or [pair]
        lines.extend(parts[:-1])
        line = parts[-1]
    if line:
        lines.append(line)
    return lines


def plural(n: int, word: str) -> str:
    """`1 sequence`, `2 sequences`, `1,024 sequences`: a count with its noun in the right number."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"
