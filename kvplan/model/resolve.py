"""Finding the model a name stands for, in one order for every command (estimate, check, sweep, explain, ...):

1. a path that exists: a spec YAML, a config.json, or a folder holding one (relative paths from `base_dir`,
   the deployment file's folder, when one is given);
2. a bundled spec, by its name or one of its aliases (a Hugging Face id it was made from);
3. under --models-dir: DIR/<org>--<name>/, DIR/<org>/<name>/, DIR/<name>/, or DIR laid out as a Hugging Face
   cache; a path on a serving host (/mnt/models/x) is looked up by its last component;
4. the local Hugging Face cache (kvplan/model/hf_cache.py): models--<org>--<name>/snapshots/<commit>, through
   refs/<revision> (main by default), with the safetensors index or headers there for the exact weight bytes;
5. the Hugging Face Hub (kvplan/model/hub.py), unless --offline or HF_HUB_OFFLINE=1: config.json and the
   safetensors metadata only, cached in 4.

`org/name@revision` names a branch, tag or commit. A model found nowhere is "cannot judge" (exit 3) with the
ways to give it; so is a path that only exists on the serving host (a deployment's `/mnt/models`). A bare name
that is neither bundled nor a path stays a typo (exit 2, with the closest bundled names), except in a
deployment's engine command line (`host_paths`), where it is a folder on the serving host.

Which source answered is returned with the spec (ModelSource), so reports can say where a figure came from.
"""

from __future__ import annotations

import contextlib
import re
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from kvplan.core.errors import InputError, KvplanError, UnsupportedError, did_you_mean
from kvplan.core.spec import ModelSpec, spec_from_mapping
from kvplan.model import bundled

BUNDLED, FILE, MODELS_DIR, HF_CACHE, HUB = "bundled", "file", "models-dir", "hf-cache", "hub"
_WITH_REVISION = re.compile(r"(?P<id>[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)@(?P<rev>[A-Za-z0-9][A-Za-z0-9._/-]*)")


@dataclass(frozen=True)
class Lookup:
    """Where to look besides the bundled specs and the local files: --models-dir and --offline."""

    models_dirs: tuple[Path, ...] = ()
    offline: bool = False  # --offline; HF_HUB_OFFLINE=1 forbids the Hub as well


@dataclass(frozen=True, eq=False, repr=False)
class ModelSource:
    """Where a model's description came from."""

    kind: str  # bundled | file | models-dir | hf-cache | hub
    location: str  # the bundled spec's name, the file or folder, or the cache / Hub it was found in
    repo_id: str | None = None
    revision: str | None = None  # the commit of a cache snapshot or Hub download
    weights: str | None = None  # where the weight bytes came from, when not from the parameter count

    def describe(self) -> str:
        at = f"{self.repo_id}@{self.revision[:12]}" if self.repo_id and self.revision else self.repo_id
        text = {BUNDLED: f"bundled spec {self.location}", FILE: f"file {self.location}",
                MODELS_DIR: f"--models-dir {self.location}", HF_CACHE: f"Hugging Face cache: {at} in {self.location}",
                HUB: f"Hugging Face Hub {self.location}: {at}"}[self.kind]
        return text + (f"; weights from {self.weights}" if self.weights else "")


@dataclass(frozen=True, eq=False, repr=False)
class Resolved:
    """A model reference resolved: the spec, where it came from, and the raw configs it was read from."""

    spec: ModelSpec
    source: ModelSource
    config: Mapping[str, Any] | None = field(default=None, compare=False)  # the raw config.json, when there is one
    tokenizer_config: Mapping[str, Any] | None = field(default=None, compare=False)


_current: ContextVar[Lookup] = ContextVar("kvplan_model_lookup", default=Lookup())


def current() -> Lookup:
    return _current.get()


@contextlib.contextmanager
def using(lookup: Lookup) -> Iterator[Lookup]:
    """Resolve with `lookup` inside the block (the CLI's --models-dir / --offline)."""
    token = _current.set(lookup)
    try:
        yield lookup
    finally:
        _current.reset(token)


def lookup_from_options(models_dirs, offline: bool) -> Lookup:
    """--models-dir (repeatable) and --offline, validated: a folder that is not there is bad input."""
    dirs = []
    for given in models_dirs or ():
        path = Path(given).expanduser()
        if not path.is_dir():
            raise InputError("no such folder" if not path.exists() else "is not a folder", where=f"--models-dir {given}",
                             hint="a folder of model folders (org--name/config.json) or a Hugging Face cache")
        dirs.append(path)
    return Lookup(models_dirs=tuple(dirs), offline=bool(offline))


# ------------------------------------------------------------------ the one entry point

def resolve(ref: str, *, base_dir: Path | None = None, host_paths: bool = False, lookup: Lookup | None = None) -> Resolved:
    """The model `ref` names; see the module docstring for the order."""
    lookup = lookup or current()
    memo = _memo.get()
    if memo is None:
        return _resolve(ref, base_dir=base_dir, host_paths=host_paths, lookup=lookup)
    key: tuple = (ref, base_dir, host_paths, lookup)
    if not _local_or_bundled(ref, base_dir):
        # what the cache and the Hub hold depends on where the cache is and whether the Hub may be asked
        hf_cache, hub = _remote()
        key += (str(hf_cache.cache_dir()), lookup.offline or hub.offline_by_environment())
    return _remembered(memo, key, lambda: _resolve(ref, base_dir=base_dir, host_paths=host_paths, lookup=lookup))


def _remote():
    """The modules of the Hugging Face cache and Hub (hf_cache, hub), loaded only for a name neither bundled nor a file:
    with what they import (hashlib's OpenSSL, json, the safetensors reader) they cost about 5 ms at start-up (python -X
    importtime), which `kvplan estimate` of a bundled model does not pay (benchmarks/cold_start.py)."""
    from kvplan.model import hf_cache, hub

    return hf_cache, hub


def _remembered(memo: dict, key: tuple, find):
    """`find()` once per key inside remembering(): its answer, or its failure (raised again, a fresh copy each time,
    since callers relocate an error's `where`), so a run asks the Hub once about a model it cannot get."""
    hit = memo.get(key)
    if hit is None:
        try:
            hit = ("found", find())
        except KvplanError as err:
            hit = ("failed", (type(err), err.what, err.where, err.hint))
        memo[key] = hit
    kind, value = hit
    if kind == "failed":
        cls, what, where, hint = value
        raise cls(what, where=where, hint=hint)
    return value


def _local_or_bundled(ref, base_dir: Path | None) -> bool:
    if not isinstance(ref, str) or not ref.strip() or _WITH_REVISION.fullmatch(ref.strip()):
        return False
    return _local_path(ref.strip(), base_dir) is not None or bundled.find_bundled(ref.strip()) is not None


_memo: ContextVar[dict | None] = ContextVar("kvplan_model_memo", default=None)


@contextlib.contextmanager
def remembering() -> Iterator[None]:
    """Inside the block a model is resolved once (`kvplan check` on a folder names few models, many times); files
    are taken as they were when first read."""
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


def _resolve(ref: str, *, base_dir: Path | None, host_paths: bool, lookup: Lookup) -> Resolved:
    if not isinstance(ref, str) or not ref.strip():
        raise InputError("no model given", hint="name a bundled model (kvplan models), a spec YAML or a config.json")
    ref = ref.strip()
    revision = None
    pinned = _WITH_REVISION.fullmatch(ref)
    path = _local_path(ref, base_dir)
    if path is not None and not pinned:
        return _from_path(path, kind=FILE, location=ref)
    name = pinned.group("id") if pinned else ref
    if pinned:
        revision = pinned.group("rev")
    else:
        spec = bundled.find_bundled(ref)
        if spec is not None:
            return Resolved(spec, ModelSource(BUNDLED, spec.name, weights=spec.weights_source))
    hf_cache, _ = _remote()  # past the bundled specs and the files: names the cache or the Hub may hold
    snapshot_ref = hf_cache.snapshot_reference(ref)
    if snapshot_ref is not None:  # a cache snapshot path on the serving host names its repository and commit
        name, revision = snapshot_ref
        found = bundled.find_bundled(name)
        if found is not None:
            return Resolved(found, ModelSource(BUNDLED, found.name, repo_id=name, weights=found.weights_source))
    if snapshot_ref is None and (_looks_like_path(ref) or (host_paths and not hf_cache.REPO_ID.fullmatch(name))):
        return _host_path(ref, lookup, host_paths=host_paths, base_dir=base_dir)
    if not hf_cache.REPO_ID.fullmatch(name):
        names = list(bundled.bundled_spec_files()) + [a for s in bundled.bundled_specs() for a in s.aliases]

        raise InputError(f"unknown model {ref!r}", where="MODEL",
                         hint=(did_you_mean(ref, names) or "see `kvplan models`")
                         + "; or pass a spec YAML, a config.json, a model folder or a Hugging Face id (org/name)")
    return _repository(name, revision, lookup)


def _local_path(ref: str, base_dir: Path | None) -> Path | None:
    path = Path(ref).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    try:
        return path if path.exists() else None
    except OSError:  # a name too long for the file system (or otherwise unusable as a path) is no file
        return None


def _looks_like_path(ref: str) -> bool:
    return ref.startswith((".", "/", "~")) or ref.endswith((".yaml", ".yml", ".json"))


def from_converted_config(path: Path, raw: Mapping) -> Resolved:
    """A model folder whose config.json is not a Hugging Face one (a TensorRT-LLM engine directory) described by `raw`,
    the Hugging Face config mapping its reader converted it to."""
    return _from_path(path, kind=FILE, location=str(path / "config.json"), name=path.name, raw_config=raw)


def _from_path(path: Path, *, kind: str, location: str, name: str | None = None, repo_id: str | None = None,
               revision: str | None = None, weights=None, raw_config: Mapping | None = None) -> Resolved:
    # a model given as a file: the config.json reader with what it imports (params, weights, config_keys) costs
    # about 40 ms at start-up (python -X importtime, this loaded 2-core machine), which a bundled model never pays
    from kvplan.core import yamlio
    from kvplan.model import hf_config

    config = hf_config.find_config_json(path)
    if path.is_dir() and config is None:
        raise InputError("folder holds no config.json", where=str(path), hint="point at a model folder or a config.json")
    if config is None:
        spec = spec_from_mapping(yamlio.load_yaml(path), source=str(path))
        return Resolved(spec, ModelSource(kind, location, weights=spec.weights_source))
    raw = yamlio.load_json(config) if raw_config is None else raw_config
    try:
        spec = hf_config.spec_from_config_file(config, raw, name=name, weights=weights)
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as err:
        # hf_config.validate_config checks every field kvplan reads by type first; a value that still has a type
        # the reading code does not expect is the file's fault, said in one line, never a traceback (issue 26)
        raise InputError(f"holds a value of a type kvplan does not read ({type(err).__name__}: {err})",
                         where=str(config), hint="the file is damaged or not a Hugging Face config.json") from None
    tokenizer = None
    tok = config.parent / "tokenizer_config.json"
    if tok.is_file():
        try:
            tokenizer = yamlio.load_json(tok)
        except InputError:
            tokenizer = None  # the tokenizer only caps vLLM's default length; a broken one is not the model
    return Resolved(spec, ModelSource(kind, location, repo_id=repo_id, revision=revision, weights=spec.weights_source),
                    raw if isinstance(raw, Mapping) else None, tokenizer if isinstance(tokenizer, Mapping) else None)


# ------------------------------------------------------------------ --models-dir

def _in_models_dirs(names: list[str], lookup: Lookup) -> tuple[Path, Path] | None:
    """(models dir, the model folder) for the first folder name found under a --models-dir."""
    for base in lookup.models_dirs:
        for wanted in names:
            candidate = base / wanted
            if (candidate / "config.json").is_file():
                return base, candidate
    return None


def _host_path(ref: str, lookup: Lookup, *, host_paths: bool, base_dir: Path | None) -> Resolved:
    """A path that is not here: bad input in kvplan's own files and on the command line; in a deployment's
    engine command line a folder of the serving host, found under --models-dir by its name, else cannot judge."""
    parts = [p for p in ref.replace("\\", "/").rstrip("/").split("/") if p not in ("", ".", "..", "~")]
    names = ([f"{parts[-2]}--{parts[-1]}"] if len(parts) >= 2 else []) + parts[-1:]
    found = _in_models_dirs(names, lookup)
    if found is not None:
        base, folder = found
        return _from_path(folder, kind=MODELS_DIR, location=f"{base.as_posix()}: {folder.name} (for {ref})",
                          name=folder.name)
    if not host_paths:
        path = Path(ref).expanduser()
        if not path.is_absolute() and base_dir is not None:
            raise InputError(f"no such file or folder: {(base_dir / path).as_posix()}",
                             hint="relative model paths are read from the deployment file's folder")
        raise InputError("no such file or folder", where=str(path), hint="check the path")
    wanted = names[-1] if names else ref
    raise UnsupportedError(f"model {ref!r} is on the serving host (a path, a volume or a bucket), not readable here",
                           where="MODEL", hint=f"pass --models-dir DIR with a copy of its config.json in DIR/{wanted}/")


# ------------------------------------------------------------------ Hugging Face ids

def _repository(repo_id: str, revision: str | None, lookup: Lookup) -> Resolved:
    """A Hugging Face id, once per run inside remembering() whatever file or folder names it (the answer does not
    depend on where the name was written): one Hub lookup per model and revision, a failure remembered too."""
    memo = _memo.get()
    if memo is None:
        return _find_repository(repo_id, revision, lookup)
    hf_cache, hub = _remote()
    key = ("repository", repo_id, revision, lookup, str(hf_cache.cache_dir()), lookup.offline or hub.offline_by_environment())
    return _remembered(memo, key, lambda: _find_repository(repo_id, revision, lookup))


def _find_repository(repo_id: str, revision: str | None, lookup: Lookup) -> Resolved:
    hf_cache, hub = _remote()
    at = f"{repo_id}@{revision}" if revision else repo_id
    found = _in_models_dirs([repo_id.replace("/", "--"), repo_id, repo_id.split("/")[-1]], lookup) if not revision else None
    if found is not None:
        base, folder = found
        return _from_path(folder, kind=MODELS_DIR, location=f"{base.as_posix()}: {folder.relative_to(base).as_posix()}",
                          name=repo_id, repo_id=repo_id)
    for base in lookup.models_dirs:  # a --models-dir that is itself a Hugging Face cache
        snapshot = hf_cache.find_snapshot(repo_id, revision, base)
        if snapshot is not None:
            return _from_snapshot(snapshot, kind=MODELS_DIR, location=base.as_posix())
    cache = hf_cache.cache_dir()
    snapshot = hf_cache.find_snapshot(repo_id, revision, cache)
    if snapshot is not None:
        return _from_snapshot(snapshot, kind=HF_CACHE, location=cache.as_posix())
    if lookup.offline or hub.offline_by_environment():
        why = "--offline" if lookup.offline else "HF_HUB_OFFLINE=1"
        raise UnsupportedError(f"model {at!r} is not bundled, not under --models-dir and not in the Hugging Face cache "
                               f"({cache.as_posix()}); the Hub is not asked ({why})", where="MODEL",
                               hint="drop " + why + " to fetch its config.json, or " + hub._hint(repo_id, revision))
    fetched = hub.fetch(repo_id, revision, cache)
    return _from_snapshot(fetched.snapshot, kind=HUB, location=fetched.endpoint)


def _from_snapshot(snapshot, *, kind: str, location: str) -> Resolved:
    """A snapshot of the Hugging Face cache (or one just fetched from the Hub). A file there that cannot be read is
    not the deployment's fault: cannot judge, naming the file."""
    _, hub = _remote()
    weights = hub.cached_weights(snapshot.repo_id, snapshot.commit)
    try:
        return _from_path(snapshot.path, kind=kind, location=location, name=snapshot.repo_id, repo_id=snapshot.repo_id,
                          revision=snapshot.commit, weights=weights)
    except InputError as err:
        origin = "the Hub's" if kind == HUB else "the cached"
        raise UnsupportedError(f"{origin} files of {snapshot.repo_id}@{snapshot.commit[:12]} cannot be read: {err.one_line()}",
                               where="MODEL", hint=f"remove {snapshot.path} from the cache, or give a good config.json "
                                                   "with --models-dir") from None
