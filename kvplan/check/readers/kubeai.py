"""KubeAI `Model` resources (kubeai.org/v1): `spec.url` names the model (hf://org/name; pvc://, s3://, gs:// are the
cluster's storage), `spec.engine: VLLM` runs vLLM's OpenAI server with `--model` and `spec.args`
(internal/modelcontroller/engine_vllm.go: python3 -m vllm.entrypoints.openai.api_server --model ... --served-model-name
NAME --port 8000 ARGS), `spec.env` is its environment, and `resourceProfile: NAME:COUNT` gives the GPUs of one
replica, the NAME resolved through kvplan/data/gpu_labels.yaml (KubeAI's own profiles). The vLLM image is the KubeAI
installation's choice (its Helm values `modelServers.VLLM.images`), not the file's: the file pins no release."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from kvplan.check.gpus import GpuEvidence, Label
from kvplan.check.items import Skip, Workload
from kvplan.check.readers import kubernetes as k8s
from kvplan.check.report import FORMAT_KUBEAI
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.check.readers import claims as formats

# the format test, apart from the reader (readers/claims.py), still answers here
claims = formats.kubeai
claims_catalog = formats.kubeai_catalog


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    name = k8s.resource_name(doc, Path(source).stem)
    spec = doc.get("spec") if isinstance(doc.get("spec"), Mapping) else {}
    at = f"{where}: spec"
    url = str(spec.get("url") or "")
    ref = url[len("hf://"):] if url.startswith("hf://") else url
    env = {str(k): (None if v is None else str(v)) for k, v in (spec.get("env") or {}).items()} \
        if isinstance(spec.get("env"), Mapping) else {}
    args = [str(a) for a in spec.get("args") or []]
    engine = str(spec.get("engine") or "")
    profile = str(spec.get("resourceProfile") or "")
    gpus = _profile(profile, at)
    notes = ["KubeAI runs `python3 -m vllm.entrypoints.openai.api_server --model MODEL ... ARGS`; its vLLM image is "
             "the KubeAI installation's (modelServers.VLLM.images), so the file pins no vLLM release"]
    if not url.startswith("hf://"):
        notes.append(f"spec.url {url} is storage of the cluster")
    blocker = None
    if engine != "VLLM":
        blocker = UnsupportedError(f"engine {engine or '(none)'}: kvplan reads KubeAI models served by VLLM",
                                   where=f"{at}.engine")
    words = ("python3", "-m", "vllm.entrypoints.openai.api_server", "--model", ref or url, "--served-model-name", name,
             "--port", "8000", *args)
    return [Workload(source=source, document=document, name=name, fmt=FORMAT_KUBEAI, where=at, base_dir=base_dir,
                     words=words, env=env, gpus=gpus, notes=tuple(notes), requests_gpus=True, blocker=blocker)]


def read_catalog(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    """Each enabled catalog entry (`enabled: true`, or every one under `all.enabled: true`) is the Model the chart
    renders from it (metadata.name the key, spec the entry's fields); a values file that enables none renders none."""
    every = isinstance(doc.get("all"), Mapping) and doc["all"].get("enabled") is True
    items: list = []
    for key, entry in doc["catalog"].items():
        if not (every or entry.get("enabled") is True):
            continue
        spec = {k: v for k, v in entry.items() if k not in ("enabled", "features", "labels")}
        model = {"apiVersion": "kubeai.org/v1", "kind": "Model", "metadata": {"name": str(key)}, "spec": spec}
        items += read(model, source=source, document=document, where=f"{where}: catalog.{key}", base_dir=base_dir)
    if not items:
        return [Skip(source, document, Path(source).stem, FORMAT_KUBEAI,
                     f"KubeAI models chart values: none of its {len(doc['catalog'])} catalog models is enabled")]
    return items


def _profile(profile: str, at: str) -> GpuEvidence:
    if not profile:
        return GpuEvidence()
    name, _, count = profile.partition(":")
    try:
        n = int(count) if count else 1
    except ValueError:
        raise InputError(f"resourceProfile {profile!r}: the count after ':' must be a whole number", where=f"{at}.resourceProfile") from None
    if name == "cpu":
        return GpuEvidence(other=f"the CPU (resourceProfile {profile})")
    if name.startswith("google-tpu"):
        return GpuEvidence(other=f"Google TPUs (resourceProfile {profile})")
    vendor = "amd" if name.startswith("amd-") else "nvidia" if name.startswith("nvidia-") else None
    return GpuEvidence(count=n, count_where=f"resourceProfile {profile}", labels=(Label("resourceProfile", name, "spec"),),
                       vendor=vendor, vendor_where=f"resourceProfile {profile}")
