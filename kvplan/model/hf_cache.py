"""The local Hugging Face cache, read as the Hugging Face client lays it out. Pure file reading: no network, no
huggingface_hub import (start-up time). A refs/ file is read bounded and must hold a commit, so it can name no
folder outside the cache.

The layout (huggingface_hub, file_download.py and the "Manage the cache" guide):

    $HF_HUB_CACHE/models--<org>--<name>/
        refs/<branch or tag>          one line: the commit the ref points to
        snapshots/<commit>/config.json, model.safetensors.index.json, *.safetensors   (links into blobs/)
        blobs/<etag>

The cache folder is $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE (the older name), else $HF_HOME/hub, else
$XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (huggingface_hub constants.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kvplan.core import files
# the two cache folders live apart so that `kvplan check`, which confines its reads to them, does not load this
# reader (benchmarks/cold_start.py); they still answer here
from kvplan.model.cache_dirs import cache_dir as cache_dir, kvplan_cache_dir as kvplan_cache_dir
from kvplan.core.errors import UnsupportedError

# a Hub repository id (huggingface_hub validate_repo_id: letters, digits, '-', '_', '.'; at most one '/')
REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
COMMIT = re.compile(r"[0-9a-f]{40}")
# a path into a cache snapshot, as deployment files name models (.../models--org--name/snapshots/<commit>/...)
_SNAPSHOT_PATH = re.compile(r"(?:^|/)models--([A-Za-z0-9][A-Za-z0-9._-]*)--([A-Za-z0-9][A-Za-z0-9._-]*)/snapshots/([^/]+)")


def repo_folder(repo_id: str) -> str:
    """'Qwen/Qwen3-32B' -> 'models--Qwen--Qwen3-32B'."""
    return "models--" + repo_id.replace("/", "--")


@dataclass(frozen=True)
class Snapshot:
    repo_id: str
    commit: str  # the snapshot folder's name
    path: Path  # the snapshot folder (holds config.json)
    ref: str | None  # the ref it was found through ('main'), None for a commit


def find_snapshot(repo_id: str, revision: str | None, cache: Path | None = None) -> Snapshot | None:
    """The snapshot of `repo_id` at `revision` (a branch, tag or commit; None: main) that holds a config.json."""
    root = (cache or cache_dir()) / repo_folder(repo_id)
    if not root.is_dir():
        return None
    ref = revision or "main"
    if any(part in ("", ".", "..") for part in ref.split("/")):
        return None  # not a ref name (refs/../../x would name a file outside the cache)
    commit = None
    ref_file = root / "refs" / ref
    if ref_file.is_file():
        commit = _commit_of(ref_file)
    elif COMMIT.fullmatch(ref):
        commit, ref = ref, None
    if not commit:
        return None
    folder = root / "snapshots" / commit
    if not (folder / "config.json").is_file():
        return None
    return Snapshot(repo_id=repo_id, commit=commit, path=folder, ref=ref)


def _commit_of(ref_file: Path) -> str:
    """The commit a refs/ file names. The client writes 40 hex digits and nothing else; anything else (binary, a
    path, megabytes) is refused without being quoted: the snapshot folder is named by it."""
    data = files.read_bytes(ref_file, prefix=128).strip()
    if not COMMIT.fullmatch(data.decode("ascii", errors="replace")):
        raise UnsupportedError("does not hold a commit (40 hexadecimal digits)", where=str(ref_file),
                               hint="the cache is damaged: remove the repository's folder from it and download again")
    return data.decode("ascii")


def snapshot_reference(path: str) -> tuple[str, str] | None:
    """('org/name', revision) for a path into a cache snapshot (the folder name is the commit), else None."""
    match = _SNAPSHOT_PATH.search(path.replace("\\", "/"))
    if not match:
        return None
    return f"{match.group(1)}/{match.group(2)}", match.group(3)
