"""The exceptions kvplan raises and the exit code each maps to (README "Exit codes", docs/architecture.md).

Commands raise; only the CLI edge (cli.main) turns these into one line on stderr and an exit code.
"""

from __future__ import annotations

from kvplan.core.text import first_control, visible

EXIT_OK = 0
EXIT_NO = 1  # a definite "no": does not fit, a check failed, a probe did not match
EXIT_INPUT = 2  # bad input or usage
EXIT_UNSUPPORTED = 3  # an architecture or option kvplan does not model


class KvplanError(Exception):
    """Base class: a message for a person, where it happened, and how to fix it."""

    exit_code = EXIT_INPUT

    def __init__(self, what: str, *, where: str | None = None, hint: str | None = None):
        super().__init__(what)
        self.what = what
        self.where = where
        self.hint = hint

    def located(self, where: str) -> "KvplanError":
        """The same error with `where` prefixed by an outer location (a file around a key)."""
        self.where = f"{where}: {self.where}" if self.where else where
        return self

    def to_dict(self) -> dict:
        """The --json form of the error (docs/json.md): what `--json` prints on a failed command, and what the HTTP
        and MCP servers answer."""
        return {"error": {"where": self.where, "what": " ".join(self.what.split()), "hint": self.hint},
                "exit_code": self.exit_code}

    def one_line(self) -> str:
        """`<where> — <what> (<hint>)` on one line: runs of spaces and newlines become one space, and the other
        control characters (an ESC in a file name) are shown as escapes (kvplan.core.text.visible)."""
        text = f"{self.where} — {self.what}" if self.where else self.what
        if self.hint:
            text += f" ({self.hint})"
        return visible(" ".join(text.split()))


class InputError(KvplanError):
    """Bad input: unreadable or invalid file, unknown name, impossible option. Exit 2."""

    exit_code = EXIT_INPUT


class DoesNotFitError(KvplanError):
    """A definite "no" that leaves nothing to report: e.g. no memory at all is left for the cache. Exit 1."""

    exit_code = EXIT_NO


class UnsupportedError(KvplanError):
    """Something kvplan does not model; it refuses rather than guesses. Exit 3."""

    exit_code = EXIT_UNSUPPORTED


def did_you_mean(word: str, choices, *, n: int = 3) -> str | None:
    """A hint naming the closest known choices, or None when nothing is close."""
    import difflib

    lowered = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=0.6)
    if not close:
        return None
    return "did you mean " + " or ".join(repr(lowered[c]) for c in close) + "?"


def check_name(value: str, *, where: str) -> str:
    """A name kvplan's own files define (a spec's, a deployment's): control characters are refused, since they
    would break every report the name appears in (kvplan.core.text)."""
    bad = first_control(value)
    if bad is not None:
        raise InputError(f"holds the control character {bad} ({visible(value)!r})", where=where,
                         hint="names are shown in tables, YAML, JUnit XML and CSV: use letters, digits and punctuation")
    return value
