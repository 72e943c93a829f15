"""TensorRT-LLM's release lines: one rules object per line (the same design as kvplan/engines/vllm/releases.py).

kvplan mirrors the 1.x PyTorch backend (docs/engines/trtllm.md); a release not listed is refused rather than
judged by another line's rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.errors import InputError


@dataclass(frozen=True)
class Release:
    line: str
    mirrors: str
    major: int  # every release of this major version selects the line


RELEASES = (Release(line="1.x", mirrors="1.x PyTorch backend", major=1),)
DEFAULT = RELEASES[-1]


def release(version: str | None, *, where: str = "--engine-version") -> Release:
    if version is None:
        return DEFAULT
    wanted = str(version).strip().lstrip("v")
    for r in RELEASES:
        if wanted.startswith(str(r.major)):
            return r
    raise InputError(f"TensorRT-LLM version {version!r} is not modelled", where=where,
                     hint="kvplan mirrors TensorRT-LLM " + ", ".join(r.mirrors for r in RELEASES))
