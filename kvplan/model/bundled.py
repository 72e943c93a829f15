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
        if _may_alias(name, wanted) and any(norm(a) == wanted for a in _aliases(name)):
            return bundled_spec(name)
    return None


def _may_alias(name: str, wanted: str) -> bool:
    """False only when no alias of the file can be `wanted` (normalised), known from its aliases line's text: an
    alias written on the line without escapes keeps its characters in a row there, so its norm() is a substring of
    the line's. A Hugging Face id that matches the 37th file in order parsed 36 lines of YAML before this (about
    1 ms of `kvplan check`); a line with a backslash (an escape) or no such line is parsed."""
    if name in alias_index():
        return True
    line = _aliases_line(name)
    return line is None or "\\" in line or wanted in norm(line)


@lru_cache(maxsize=None)
def _aliases_line(name: str) -> str | None:
    """The file's top-level `aliases:` line when it writes the list on that one line, as kvplan's specs do."""
    for line in bundled_spec_files()[name].read_text(encoding="utf-8").splitlines():
        if line.startswith("aliases:"):
            return line if line.rstrip().endswith("]") else None
    return None


INDEX = "aliases.txt"


@lru_cache(maxsize=None)
def alias_index() -> dict[str, tuple[str, ...]]:
    """model_specs/aliases.txt, written by scripts/make_specs.py from the files' own aliases: one line per file,
    its name and aliases separated by tabs. Reading one file instead of each spec up to a matching alias saves
    about 1.3 ms of `kvplan check` of a file naming a Hugging Face id (37 files for Llama 3.1 8B).
    tests/test_bundled_specs.py checks it says what every file says; a file it does not name is read itself."""
    try:
        text = (_specs_dir() / INDEX).read_text(encoding="utf-8")
    except OSError:
        return {}
    index = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, *aliases = line.split("\t")
            index[name] = tuple(aliases)
    return index


def _aliases(name: str) -> tuple[str, ...]:
    """A bundled spec's aliases without building the spec: `kvplan check` of a file naming a Hugging Face id looked
    up every alias, and building all 80 specs for it cost more than the rest of the check (cProfile)."""
    index = alias_index()
    return index[name] if name in index else file_aliases(name)


@lru_cache(maxsize=None)
def file_aliases(name: str) -> tuple[str, ...]:
    """The aliases a bundled file holds, read from its aliases line alone when the file writes it as a one-line
    list, as kvplan's specs do; any other form builds the spec."""
    line = _aliases_line(name)
    if line is not None:
        import yaml

        found = yaml.load(line, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["aliases"]
        if isinstance(found, list) and all(isinstance(a, str) for a in found):
            return tuple(found)
    return tuple(bundled_spec(name).aliases)
