"""The model specs kvplan ships (kvplan/model_specs/*.yaml), by name or alias. kvplan/model/resolve.py looks here
first; kvplan/model/catalog.py re-exports these for its callers."""

from __future__ import annotations

import re
from functools import lru_cache
from kvplan.core import packaged
from pathlib import Path

from kvplan.core.spec import ModelSpec, spec_from_mapping


def norm(name: str) -> str:
    """A name with case and punctuation forgiven (how bundled names, aliases and GPU names are matched)."""
    return re.sub(r"[^a-z0-9.]", "", name.lower())


def _specs_dir():
    return packaged.folder("kvplan.model_specs")


def _load_bundled_file(entry) -> dict:
    import yaml

    # bundled files are ours and alias-free; the C loader keeps start-up fast
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(entry.read_text(encoding="utf-8"), Loader=loader)


@lru_cache(maxsize=None)
def bundled_spec_files() -> dict[str, object]:
    return {Path(e.name).stem: e for e in _specs_dir().iterdir() if e.name.endswith(".yaml")}


@lru_cache(maxsize=None)
def bundled_spec(name: str) -> ModelSpec:
    entry = bundled_spec_files()[name]
    return spec_from_mapping(_load_bundled_file(entry), source=f"model_specs/{entry.name}")


def bundled_specs() -> list[ModelSpec]:
    return [bundled_spec(n) for n in sorted(bundled_spec_files())]


def find_bundled(ref: str) -> ModelSpec | None:
    """The bundled spec named `ref` or carrying it as an alias (case and punctuation forgiven), else None."""
    files = bundled_spec_files()
    if ref in files:
        return bundled_spec(ref)
    wanted = norm(ref)
    for name in files:  # names first (cheap), then every alias
        if norm(name) == wanted:
            return bundled_spec(name)
    for name in sorted(files):
        if any(norm(a) == wanted for a in _aliases(name)):
            return bundled_spec(name)
    return None


@lru_cache(maxsize=None)
def _aliases(name: str) -> tuple[str, ...]:
    """A bundled spec's aliases without building the spec: `kvplan check` of a file naming a Hugging Face id looked
    up every alias, and building all 80 specs for it cost more than the rest of the check (cProfile). The line is
    read alone when the file writes it as a one-line list, as kvplan's specs do; any other form builds the spec."""
    import yaml

    for line in bundled_spec_files()[name].read_text(encoding="utf-8").splitlines():
        if line.startswith("aliases:"):
            if line.rstrip().endswith("]"):
                found = yaml.load(line, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["aliases"]
                if isinstance(found, list) and all(isinstance(a, str) for a in found):
                    return tuple(found)
            return tuple(bundled_spec(name).aliases)
    return tuple(bundled_spec(name).aliases)
