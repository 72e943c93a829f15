"""The registry of the serving engines' memory models.

Every engine package (static.py, vllm/, sglang/, trtllm/) defines `ENGINE`, an `Engine` (kvplan/engines/api.py):
its name, how it reads a request's KV-cache dtype, its estimate, and how it spells the knobs a fix turns. Commands
ask the registry (`get`) and never import an engine by hand; adding an engine is its package plus a line in
`_PACKAGES` (and its view in kvplan/cli/views/). Results are frozen dataclasses extending
engines/result.py's ContractEstimate; the paged engines' results also give check a typed `pool_view()`.
The neutral types are re-exported here for callers that name them; they live in engines/api.py, which imports no
engine.
"""

from __future__ import annotations

import importlib

from kvplan.core.errors import InputError, did_you_mean
from kvplan.engines.api import Engine, EngineFlags, EngineRequest, Hardware
from kvplan.engines.releases import Rules

# name -> the module that defines ENGINE; imported on first use (start-up time)
_PACKAGES = {"static": "kvplan.engines.static", "vllm": "kvplan.engines.vllm", "sglang": "kvplan.engines.sglang",
             "trtllm": "kvplan.engines.trtllm"}
ENGINE_NAMES = tuple(_PACKAGES)
# name -> its release registry (a `release(version, *, where)` under engines/releases.py's one refusal policy); the
# static engine has no releases
_RELEASES = {"vllm": "kvplan.engines.vllm.releases", "sglang": "kvplan.engines.sglang.releases",
             "trtllm": "kvplan.engines.trtllm.releases"}


def _key(name: str) -> str:
    """The registry key `name` means (case and spaces forgiven); InputError at --engine otherwise."""
    key = name.strip().lower()
    if key not in _PACKAGES:
        raise InputError(f"unknown engine {name!r}", where="--engine",
                         hint=did_you_mean(name, ENGINE_NAMES) or "one of " + ", ".join(ENGINE_NAMES))
    return key


def get(name: str) -> Engine:
    """The engine registered under `name` (case and spaces forgiven); InputError at --engine otherwise."""
    return importlib.import_module(_PACKAGES[_key(name)]).ENGINE


def release(name: str, version: str | None, *, where: str = "--engine-version") -> Rules:
    """The rules of engine `name`'s release `version` (None: its default) from the engine's registry, read without
    building its memory model (`check` names a release before it judges; benchmarks/cold_start.py). Refusals follow
    engines/releases.py: not a version -> InputError, a release kvplan has not read -> UnsupportedError."""
    key = _key(name)
    if key not in _RELEASES:
        raise InputError(f"the {key} engine has no releases", where=where, hint="drop the release")
    return importlib.import_module(_RELEASES[key]).release(version, where=where)


def release_version(name: str, version: str | None, *, where: str = "--engine-version") -> str:
    """`release(name, version).version`: for None, the DEFAULT_VERSION the engine's package names where it names one
    (vLLM's), without loading its release table (check's report names vLLM's default release on every run)."""
    if version is None:
        named = vars(importlib.import_module(_PACKAGES[_key(name)])).get("DEFAULT_VERSION")
        if named is not None:
            return str(named)
    return release(name, version, where=where).version


__all__ = ["Engine", "EngineFlags", "EngineRequest", "Hardware", "ENGINE_NAMES", "get", "release", "release_version"]
