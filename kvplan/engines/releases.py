"""The one refusal policy of the engines' release registries (each engine's releases.py `release(version)`):

- text that is not a version of the engine is bad input: InputError, exit 2 (`not_a_version`);
- a version of the engine kvplan has not read, older or newer than the releases it mirrors, or a line it has no
  rules for, cannot be judged: UnsupportedError, exit 3 (`not_read`), with the releases it does read as the hint.
  kvplan never judges a launch by rules it did not read (docs/engines/README.md "Releases").
Every command that is given a release follows it: `estimate --engine-version` exits 3 (2 for no version), `check`
reports a file pinned to an unread release cannot judge, `calibrate` a log of one; the table of every command and
way is docs/engines/README.md "Releases kvplan has not read".

Every registry has one shape, REGISTRY: the names it defines (and its engine record's `releases` part gives), its
rules objects the fields and method of Rules. Its order of releases and the reading of its rule tables are
engines/changes.py History.
"""

from __future__ import annotations

from typing import Protocol

from kvplan.core.errors import InputError, UnsupportedError

# the names every engine's releases.py defines:
#   parse(text) -> the engine's comparable version, None for text that is no version;
#   release(version, *, where) -> Rules (None: DEFAULT), refused as this module says;
#   closest(version) -> (Rules, a note or None): never refuses, for calibrate, which compares any log and says
#     which rules it used (a note makes the log cannot judge);
#   sort_key(version) -> the comparable version (ValueError for no version); at_least(version, than) -> bool;
#   LINES: the release lines between which rules changed, oldest first; DEFAULT: the rules when none is named
REGISTRY = ("parse", "release", "closest", "sort_key", "at_least", "LINES", "DEFAULT")


class Rules(Protocol):
    """What every registry's rules object answers; the rest of its fields are its own engine's."""

    @property
    def version(self) -> str:  # the release the rules are for, as kvplan names it
        ...

    @property
    def line(self) -> str:  # its line, one of LINES
        ...

    @property
    def mirrors(self) -> str:  # the release whose source was read for it
        ...

    def at_least(self, version: str) -> bool:  # whether it is release `version` or a later one
        ...


def not_a_version(title: str, text: str, *, where: str, hint: str | None) -> InputError:
    """The error for text that names no release of engine `title`."""
    return InputError(f"{text!r} is not a version of {title}", where=where, hint=hint)


def not_read(what: str, *, where: str, hint: str | None) -> UnsupportedError:
    """The error for a release kvplan has not read (`what` names the engine and the release)."""
    return UnsupportedError(what, where=where, hint=hint)


def outside(title: str, text: str, *, newer: bool, edge: str, where: str, hint: str | None,
            unit: str = "release") -> UnsupportedError:
    """The error for a release past either end of those kvplan has read (`edge`: the newest or the oldest it read,
    as a `unit`: a release, or vLLM's line), in the same words on every engine."""
    side = f"newer than {edge}, the newest" if newer else f"older than {edge}, the oldest"
    return not_read(f"{title} {text} is {side} {unit} kvplan has read", where=where, hint=hint)


def pinned(where: str, version: str) -> str:
    """How to give `version` where a refused release was given: the option with its value ('--vllm-version 0.33.0'),
    else the version alone (a file's key, an image tag, a log)."""
    return f"{where} {version}" if where.startswith("--") else version
