"""A rule's history across an engine's releases: the value it takes from each release on, with where it was read.
The SGLang and TensorRT-LLM release registries (sglang/releases.py, trtllm/releases.py) state their rules this way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Change:
    first: str  # the first release with this value
    value: Any
    source: str  # the engine's file and function it was read from


def value_at(changes: tuple[Change, ...], key, version_of: Callable[[str], Any]) -> Any:
    """The value in force at release `key`: that of the last change whose first release is at or before it (None
    before the first); `version_of` turns a release string into the engine's comparable version."""
    value = None
    for change in changes:
        if version_of(change.first) <= key:
            value = change.value
    return value
