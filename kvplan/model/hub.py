"""The Hugging Face Hub, asked for what sizing needs and nothing more: a model's config.json and the bytes of its
weights, read from the safetensors index (`metadata.total_size`) or, for a single-file checkpoint, from the
header of model.safetensors through an HTTP range read (the first bytes only, as hf-mem does). No weight is
downloaded.

Everything goes through huggingface_hub (imported here only, and only when the Hub is asked: `kvplan estimate`
of a bundled model never imports it), so the Hub's own conventions hold: files land in the Hugging Face cache
laid out as every other tool lays it out (kvplan/model/hf_cache.py reads it back offline), HF_TOKEN (or the
token `hf auth login` stored) authenticates gated repositories, HF_ENDPOINT names a mirror. kvplan reads
HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE itself at each call and passes them on, so a change of the environment
after start-up counts. The one thing huggingface_hub cannot cache for us, a single file's safetensors header,
is kept as a small JSON file under kvplan's own cache folder (weights_cache_file).

Every failure is "cannot judge" (exit 3), never "invalid": the deployment file is not wrong because the Hub is
slow, the repository gated or the network absent. Each message says how to give the model instead.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from kvplan.core.errors import UnsupportedError
from kvplan.model.hf_cache import Snapshot, repo_folder

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT_S = 10.0  # huggingface_hub's own default for its metadata requests (HF_HUB_ETAG_TIMEOUT)
_TRUE = {"1", "on", "yes", "true"}  # huggingface_hub utils._is_true


def offline_by_environment() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def timeout() -> float:
    raw = os.environ.get("KVPLAN_HUB_TIMEOUT")
    try:
        return float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        return DEFAULT_TIMEOUT_S


def kvplan_cache_dir() -> Path:
    """$KVPLAN_CACHE_DIR, else $XDG_CACHE_HOME/kvplan, else ~/.cache/kvplan."""
    if os.environ.get("KVPLAN_CACHE_DIR"):
        return Path(os.environ["KVPLAN_CACHE_DIR"]).expanduser()
    base = Path(os.environ["XDG_CACHE_HOME"]).expanduser() if os.environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "kvplan"


def weights_cache_file(repo_id: str, commit: str) -> Path:
    """Where the header-derived weight bytes of a single-file checkpoint are kept (one small JSON per commit)."""
    return kvplan_cache_dir() / "hub-weights" / repo_folder(repo_id) / f"{commit}.json"


def cached_weights(repo_id: str, commit: str) -> tuple[int, str] | None:
    """(bytes, source) read earlier from the Hub for this commit, or None."""
    path = weights_cache_file(repo_id, commit)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return int(data["bytes"]), str(data["source"])
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


def fetch(repo_id: str, revision: str | None, cache: Path) -> HubModel:
    """config.json (and the safetensors index, or a single file's header) of `repo_id` into the cache."""
    try:
        import huggingface_hub
        from huggingface_hub import errors as hf_errors
    except ImportError:  # pragma: no cover - a dependency; an install without it still works offline
        raise UnsupportedError(f"model {repo_id!r} is not bundled or cached, and huggingface_hub is not installed",
                               hint="pip install huggingface_hub, or " + _hint(repo_id, revision)) from None
    # kvplan decided to ask the Hub (not --offline, not HF_HUB_OFFLINE now); huggingface_hub read those settings
    # when it was first imported, so its own copy is brought in line. Telemetry stays off: with it, huggingface_hub
    # builds its user agent by asking {its endpoint}/api/agent-harnesses, a request that is not for the model.
    from huggingface_hub import constants as hf_constants

    hf_constants.HF_HUB_OFFLINE = False
    hf_constants.HF_HUB_DISABLE_TELEMETRY = True
    url = endpoint()
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or None
    wait = timeout()
    common = dict(cache_dir=cache, endpoint=url, token=token, etag_timeout=wait)
    where = f"{repo_id}{'@' + revision if revision else ''}"
    try:
        config = Path(huggingface_hub.hf_hub_download(repo_id, "config.json", revision=revision, **common))
        commit = config.parent.name
        try:
            huggingface_hub.hf_hub_download(repo_id, "model.safetensors.index.json", revision=commit, **common)
        except hf_errors.EntryNotFoundError as err:
            if isinstance(err, hf_errors.LocalEntryNotFoundError):
                raise
            _single_file_header(huggingface_hub, hf_errors, repo_id, commit, url, token, wait)
    except hf_errors.GatedRepoError:
        raise UnsupportedError(f"{where} is a gated repository on {url}", where="MODEL",
                               hint="accept its licence on the Hub and set HF_TOKEN, or " + _hint(repo_id, revision)) from None
    except hf_errors.RevisionNotFoundError:
        raise UnsupportedError(f"{url} has no revision {revision!r} of {repo_id}", where="MODEL",
                               hint=_hint(repo_id, None)) from None
    except hf_errors.RepositoryNotFoundError:
        raise UnsupportedError(f"{url} has no repository {repo_id} (or it is private)", where="MODEL",
                               hint="check the name; for a private repository set HF_TOKEN; or " + _hint(repo_id, revision)) from None
    except hf_errors.EntryNotFoundError as err:
        if isinstance(err, hf_errors.LocalEntryNotFoundError):  # no answer (offline, unreachable, too slow)
            raise UnsupportedError(f"the Hugging Face Hub at {url} did not answer for {where} within {wait:g} s "
                                   "and it is not in the local cache", where="MODEL",
                                   hint="retry online, set KVPLAN_HUB_TIMEOUT, or " + _hint(repo_id, revision)) from None
        raise UnsupportedError(f"{where} on {url} has no config.json: not a transformers model repository",
                               where="MODEL", hint=_hint(repo_id, revision)) from None
    except hf_errors.HfHubHTTPError as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        raise UnsupportedError(f"the Hugging Face Hub at {url} answered {status or 'an error'} for {where}",
                               where="MODEL", hint=_hint(repo_id, revision)) from None
    except Exception as err:  # noqa: BLE001 - connection refused, timeouts, a malformed answer: no usable answer
        if "timeout" in type(err).__name__.lower() or "timed out" in str(err):
            raise UnsupportedError(f"the Hugging Face Hub at {url} did not answer for {where} within {wait:g} s",
                                   where="MODEL", hint="retry, set KVPLAN_HUB_TIMEOUT, or " + _hint(repo_id, revision)) from None
        raise UnsupportedError(f"the Hugging Face Hub at {url} gave no usable answer for {where} "
                               f"({type(err).__name__})", where="MODEL", hint=_hint(repo_id, revision)) from None
    from kvplan.model.hf_cache import find_snapshot

    snapshot = find_snapshot(repo_id, commit, cache)
    if snapshot is None:  # pragma: no cover - hf_hub_download wrote it there
        raise UnsupportedError(f"{where}: the download did not land in {cache}", where="MODEL", hint=_hint(repo_id, revision))
    return HubModel(snapshot=Snapshot(repo_id, commit, snapshot.path, revision or "main"), endpoint=url)


def _single_file_header(huggingface_hub, hf_errors, repo_id: str, commit: str, url: str, token, wait: float) -> None:
    """The weight bytes of model.safetensors from its header (a range read), kept in kvplan's cache."""
    from kvplan.model.weights import header_bytes

    api = huggingface_hub.HfApi(endpoint=url, token=token)
    try:
        meta = api.parse_safetensors_file_metadata(repo_id, "model.safetensors", revision=commit, timeout=wait)
    except hf_errors.EntryNotFoundError as err:
        if isinstance(err, hf_errors.LocalEntryNotFoundError):
            raise
        return  # no safetensors weights (a .bin checkpoint): the sizes come from config.json
    except hf_errors.SafetensorsParsingError:
        return  # a header kvplan cannot read is no figure; config.json still gives the parameter inventory
    tensors = {name: {"dtype": info.dtype, "shape": list(info.shape), "data_offsets": list(info.data_offsets)}
               for name, info in meta.tensors.items()}
    total, count = header_bytes(tensors, where=f"{url}/{repo_id}/model.safetensors")
    path = weights_cache_file(repo_id, commit)
    path.parent.mkdir(parents=True, exist_ok=True)
    source = f"model.safetensors header on {url} at {commit[:12]} ({count} tensors: sum of numel x dtype size)"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"bytes": total, "source": source}), encoding="utf-8")
    tmp.replace(path)
