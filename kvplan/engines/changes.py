"""A rule's history across an engine's releases: the value it takes from each release on, with where it was read.
The SGLang and TensorRT-LLM release registries (sglang/releases.py, trtllm/releases.py) state their rules this way
and read them with a History of their own version order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True, eq=False, repr=False)
class Change:
    """One release's value of a rule: the first release that has it, and where it was read."""

    first: str  # the first release with this value
    value: Any
    source: str  # the engine's file and function it was read from


class History:
    """One engine's order of releases, from its `parse` (a release as written -> a comparable version, None for text
    that is no version): the sort key, the comparison and the reading of its Change tables, written once for every
    registry (engines/releases.py REGISTRY names what each registry gives)."""

    def __init__(self, parse: Callable[[str], Any]):
        self._parse = parse

    def key(self, version: str) -> Any:
        """The comparable version of a release; ValueError for text that is no version (a registry's own tables and
        the releases it hands out always are one; a user's text goes through its release(), which refuses it)."""
        parsed = self._parse(version)
        if parsed is None:
            raise ValueError(f"{version!r} is not a version")
        return parsed

    def at_least(self, version: str, than: str) -> bool:
        """Whether release `version` is `than` or a later one."""
        return self.key(version) >= self.key(than)

    def at(self, changes: tuple[Change, ...], key: Any) -> Any:
        """The value a Change table gives at the release whose comparable version is `key`: that of the last change
        whose first release is at or before it (None before the first)."""
        value = None
        for change in changes:
            if self.key(change.first) <= key:
                value = change.value
        return value
