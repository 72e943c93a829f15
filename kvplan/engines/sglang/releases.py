"""SGLang's release lines: one rules object per line (the same design as kvplan/engines/vllm/releases.py).

kvplan mirrors SGLang 0.5.23 (docs/engines/sglang.md); a release not listed is refused rather than judged by
another line's rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.errors import InputError


@dataclass(frozen=True)
class Release:
    line: str
    mirrors: str
    names: tuple[str, ...]  # the version strings that select this line


RELEASES = (Release(line="0.5", mirrors="0.5.23", names=("0.5.23", "0.5")),)
DEFAULT = RELEASES[-1]


def release(version: str | None, *, where: str = "--engine-version") -> Release:
    if version is None:
        return DEFAULT
    wanted = str(version).strip().lstrip("v")
    for r in RELEASES:
        if wanted in r.names:
            return r
    raise InputError(f"SGLang version {version!r} is not modelled", where=where,
                     hint="kvplan mirrors SGLang " + ", ".join(r.mirrors for r in RELEASES))
