"""The marker of a word kvplan/check/shell.py could not expand (a variable with no value, a `$(...)`): MARK + name +
MARK inside the word, so that the engine readers name the variable a verdict depends on instead of guessing its
value. Kept apart from the parser: every reader looks for the marker, and most files (a compose file's list command,
a Kubernetes manifest's args) never need the parser itself. Pure."""

from __future__ import annotations

import re

MARK = "\x00"


def unresolved_names(text: str) -> list[str]:
    """The variables (or `$(...)`) a word could not be expanded without."""
    return re.findall(MARK + r"([^" + MARK + r"]*)" + MARK, text)


def marker(name: str) -> str:
    return f"{MARK}{name}{MARK}"


def display(text: str) -> str:
    """A word with its unresolved parts written back as the file wrote them ($NAME)."""
    return re.sub(MARK + r"([^" + MARK + r"]*)" + MARK,
                  lambda m: m.group(1) if m.group(1).startswith(("$", "`")) else "$" + m.group(1), text)
