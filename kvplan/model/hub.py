"""The Hugging Face Hub, asked for what sizing needs and nothing more: a model's config.json and the bytes of its
weights, read from the safetensors index (`metadata.total_size`) or, for a single-file checkpoint, from the
header of model.safetensors through an HTTP range read (the first bytes only, as hf-mem does). No weight is
downloaded.

The requests are kvplan's own (kvplan/model/hub_http.py: one total deadline per lookup, bodies capped), made as
huggingface_hub makes them (GET {endpoint}/{repo}/resolve/{revision}/{file}; the commit in X-Repo-Commit, the
blob name in X-Linked-Etag or ETag; the Hub's error in X-Error-Code), and the answers are laid out in the Hugging
Face cache as huggingface_hub lays them out (refs/, snapshots/ linking into blobs/), so every other tool, and
kvplan/model/hf_cache.py offline, reads them back. huggingface_hub's client retries for about 15 s per request
past any timeout and logs each retry on stderr; a lookup here ends when KVPLAN_HUB_TIMEOUT says, with one line.
HF_TOKEN (or the token `hf auth login` stored) authenticates gated repositories, HF_ENDPOINT names a mirror;
both and HF_HUB_OFFLINE are read at each call, so a change of the environment after start-up counts. The one thing
the Hugging Face cache has no place for, a single file's safetensors header figures, is kept as a small JSON
file under kvplan's own cache folder (weights_cache_file).

Every failure of the Hub is "cannot judge" (exit 3), never "invalid": the deployment file is not wrong because the
Hub is slow, the repository gated or the network absent. Each message says how to give the model instead. A bad
KVPLAN_HUB_TIMEOUT or HF_ENDPOINT is bad input (exit 2) naming the variable.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.model.hf_cache import COMMIT, Snapshot, kvplan_cache_dir, repo_folder
from kvplan.core import jsonio
from kvplan.model.weights import MAX_HEADER_BYTES, WeightBytes, header_bytes

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT_S = 10.0  # huggingface_hub's own default for its metadata requests (HF_HUB_ETAG_TIMEOUT)
_TRUE = {"1", "on", "yes", "true"}  # huggingface_hub utils._is_true
# Caps on what one answer may hold. A config.json is a few KiB (the largest in tests/data/hf_configs is under
# 100 KiB); an index names every tensor (a trillion-parameter MoE's is a few MiB); a safetensors header is refused
# past the same limit a local one is (weights.MAX_HEADER_BYTES).
CONFIG_CAP = 16 * 2**20
INDEX_CAP = 64 * 2**20
HEADER_PROBE = 100_000  # the first range read of a single file, as huggingface_hub's parse_safetensors_file_metadata


def offline_by_environment() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def endpoint() -> str:
    """HF_ENDPOINT (an http or https URL), else the Hub."""
    from urllib.parse import urlsplit

    raw = os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT
    url = raw.strip().rstrip("/")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in url):
        raise InputError(f"{raw!r} is not an http(s) URL", where="HF_ENDPOINT",
                         hint="e.g. HF_ENDPOINT=https://hf-mirror.example, or unset it for huggingface.co")
    return url


def timeout() -> float:
    """KVPLAN_HUB_TIMEOUT: the seconds one lookup may take, all requests and retries together."""
    raw = os.environ.get("KVPLAN_HUB_TIMEOUT")
    if raw is None or not raw.strip():
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or value > 3600:
        raise InputError(f"{raw!r} is not a number of seconds between 0 and 3600", where="KVPLAN_HUB_TIMEOUT",
                         hint=f"e.g. KVPLAN_HUB_TIMEOUT=30, or unset it for {DEFAULT_TIMEOUT_S:g} s")
    return value


def weights_cache_file(repo_id: str, commit: str) -> Path:
    """Where the header-derived weight bytes of a single-file checkpoint are kept (one small JSON per commit)."""
    return kvplan_cache_dir() / "hub-weights" / repo_folder(repo_id) / f"{commit}.json"


def cached_weights(repo_id: str, commit: str) -> WeightBytes | None:
    """The weight bytes read earlier from the Hub for this commit, or None."""
    path = weights_cache_file(repo_id, commit)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return WeightBytes(int(data["bytes"]), str(data["source"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class HubModel:
    snapshot: Snapshot  # the cache snapshot now holding config.json (and the index, when the repository has one)
    endpoint: str


def _hint(repo_id: str, revision: str | None) -> str:
    at = f"@{revision}" if revision else ""
    return (f"download its config.json (`hf download {repo_id}{' --revision ' + revision if revision else ''} "
            f"--include config.json model.safetensors.index.json`), point --models-dir at a folder holding "
            f"{repo_id.replace('/', '--')}/config.json, or name a local copy instead of {repo_id}{at}")


def _token() -> str | None:
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    if token:
        return token.strip() or None
    try:  # the token `hf auth login` stored (its file, found as huggingface_hub finds it)
        from huggingface_hub import get_token
    except ImportError:  # pragma: no cover - a dependency; without it only HF_TOKEN authenticates
        return None
    try:
        return get_token()
    except Exception:  # noqa: BLE001 - an unreadable token file is no token
        return None


class _Refused(Exception):
    """The Hub answered with an error for one file."""

    def __init__(self, status: int, code: str | None):
        super().__init__(f"{status} {code}")
        self.status, self.code = status, code


def fetch(repo_id: str, revision: str | None, cache: Path) -> HubModel:
    """config.json (and the safetensors index, or a single file's header) of `repo_id` into the cache, within one
    deadline of KVPLAN_HUB_TIMEOUT seconds."""
    # the HTTP client (urllib, http.client, ssl: about 45 ms at start-up, python -X importtime) loads when the Hub is
    # asked; `kvplan check` imports this module for the cache's layout and most runs never ask
    from kvplan.model import hub_http

    wait = timeout()
    url = endpoint()
    deadline = hub_http.Deadline(wait)
    token = _token()
    where = f"{repo_id}{'@' + revision if revision else ''}"
    if revision is not None and any(part in ("", ".", "..") for part in revision.split("/")):
        raise InputError(f"revision {revision!r} is not a branch, tag or commit name", where="MODEL",
                         hint="name it as the Hub does: main, v1.0, refs/pr/1 or a 40-character commit")
    files = {}
    try:
        config, commit = _file(url, repo_id, revision or "main", "config.json", CONFIG_CAP, deadline, token)
        files["config.json"] = config
        try:
            files["model.safetensors.index.json"] = _file(url, repo_id, commit, "model.safetensors.index.json",
                                                          INDEX_CAP, deadline, token)[0]
        except _Refused as err:
            if err.code != "EntryNotFound":
                raise
            _single_file_header(url, repo_id, commit, deadline, token)
    except _Refused as err:
        raise _refusal(err, url, repo_id, revision, where) from None
    except hub_http.TooLarge:
        raise UnsupportedError(f"the Hugging Face Hub at {url} sent more for {where} than a model's metadata holds "
                               f"(over {CONFIG_CAP // 2**20} MiB for config.json, {INDEX_CAP // 2**20} MiB for the "
                               "index); nothing was kept", where="MODEL", hint=_hint(repo_id, revision)) from None
    except hub_http.NoAnswer as err:
        raise UnsupportedError(f"the Hugging Face Hub at {url} {err} for {where}", where="MODEL",
                               hint="retry, set KVPLAN_HUB_TIMEOUT, or " + _hint(repo_id, revision)) from None
    folder = _store(cache, repo_id, revision, commit, files)
    return HubModel(snapshot=Snapshot(repo_id, commit, folder, revision or "main"), endpoint=url)


def _refusal(err: _Refused, url: str, repo_id: str, revision: str | None, where: str) -> UnsupportedError:
    """The Hub's error codes (huggingface_hub utils/_http.py hf_raise_for_status reads the same X-Error-Code)."""
    if err.code == "GatedRepo":
        return UnsupportedError(f"{where} is a gated repository on {url}", where="MODEL",
                                hint="accept its licence on the Hub and set HF_TOKEN, or " + _hint(repo_id, revision))
    if err.code == "RevisionNotFound":
        return UnsupportedError(f"{url} has no revision {revision!r} of {repo_id}", where="MODEL", hint=_hint(repo_id, None))
    if err.code == "RepoNotFound" or err.status == 401:  # the Hub answers 401 for a private repository without a token
        return UnsupportedError(f"{url} has no repository {repo_id} (or it is private)", where="MODEL",
                                hint="check the name; for a private repository set HF_TOKEN; or " + _hint(repo_id, revision))
    if err.code == "EntryNotFound":
        return UnsupportedError(f"{where} on {url} has no config.json: not a transformers model repository",
                                where="MODEL", hint=_hint(repo_id, revision))
    return UnsupportedError(f"the Hugging Face Hub at {url} answered {err.status} for {where}", where="MODEL",
                            hint=_hint(repo_id, revision))


def _file(url: str, repo_id: str, revision: str, name: str, cap: int, deadline, token: str | None,
          *, byte_range: str | None = None) -> tuple[bytes, str]:
    """(body, commit) of one file at `revision`; an error answer raises _Refused."""
    from urllib.parse import quote

    from kvplan.model import hub_http  # the HTTP client, when the Hub is asked (see fetch)

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if byte_range:
        headers["Range"] = byte_range
    answer = hub_http.get(f"{url}/{repo_id}/resolve/{quote(revision, safe='')}/{name}", deadline=deadline, cap=cap,
                          headers=headers)
    if answer.status >= 400:
        raise _Refused(answer.status, answer.headers.get("first:x-error-code") or answer.headers.get("x-error-code"))
    if answer.status not in (200, 206):
        raise hub_http.NoAnswer(f"answered {answer.status} for {name}")
    commit = (answer.headers.get("first:x-repo-commit") or "").strip()
    if not COMMIT.fullmatch(commit):  # the snapshot folder is named by it: nothing else may land in the cache
        raise hub_http.NoAnswer(f"gave no commit for {name} (X-Repo-Commit {commit[:50]!r})")
    return answer.body, commit


def _single_file_header(url: str, repo_id: str, commit: str, deadline, token: str | None) -> None:
    """The weight bytes of model.safetensors from its header (range reads), kept in kvplan's cache."""
    import struct

    name = "model.safetensors"
    try:
        head, _ = _file(url, repo_id, commit, name, HEADER_PROBE + 1, deadline, token, byte_range=f"bytes=0-{HEADER_PROBE}")
    except _Refused as err:
        if err.code == "EntryNotFound":
            return  # no safetensors weights (a .bin checkpoint): the sizes come from config.json
        raise
    if len(head) < 8:
        return  # a header kvplan cannot read is no figure; config.json still gives the parameter inventory
    (length,) = struct.unpack("<Q", head[:8])
    if length > MAX_HEADER_BYTES:
        return
    if len(head) < 8 + length:
        head = head[:8] + _file(url, repo_id, commit, name, length, deadline, token,
                                byte_range=f"bytes=8-{7 + length}")[0]
    try:
        tensors = jsonio.loads(head[8:8 + length].decode("utf-8"), where=f"{url}/{repo_id}/{name}")
        if not isinstance(tensors, dict):
            return
        total, count = header_bytes(tensors, where=f"{url}/{repo_id}/{name}")
    except (UnicodeDecodeError, InputError):
        return
    source = f"model.safetensors header on {url} at {commit[:12]} ({count} tensors: sum of numel x dtype size)"
    _write_atomically(weights_cache_file(repo_id, commit), json.dumps({"bytes": total, "source": source}).encode())


def _store(cache: Path, repo_id: str, revision: str | None, commit: str, files: dict[str, bytes]) -> Path:
    """Lay the answers out as huggingface_hub does: blobs/<sha>, snapshots/<commit>/<name> linking to the blob (a
    copy where links are not allowed), refs/<revision> holding the commit. The config is written last, since a
    snapshot with a config.json is what the cache reader takes as complete."""
    root = cache / repo_folder(repo_id)
    folder = root / "snapshots" / commit
    try:
        for name in sorted(files, key=lambda n: n == "config.json"):
            data = files[name]
            # the blob is named as the Hub's ETag names a file kept in git: sha1 of "blob <size>\0" + content
            blob = root / "blobs" / hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
            if not blob.is_file():
                _write_atomically(blob, data)
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{name}.kvplan-tmp")
            if tmp.is_symlink() or tmp.exists():
                tmp.unlink()
            try:
                tmp.symlink_to(os.path.relpath(blob, target.parent))
            except OSError:
                tmp.write_bytes(data)
            tmp.replace(target)
        if revision is None or revision != commit:
            _write_atomically(root / "refs" / (revision or "main"), commit.encode())
    except OSError as err:
        raise UnsupportedError(f"the Hub's answer for {repo_id} cannot be kept in {cache}: {err.strerror or err}",
                               where="MODEL", hint="make the Hugging Face cache writable (HF_HUB_CACHE), or "
                                                   + _hint(repo_id, revision)) from None
    return folder


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.kvplan-tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
