"""The Helm values of vLLM's example chart (vllm-project/vllm examples/online_serving/chart-helm): the chart's
Deployment runs `image.repository:tag` with `image.command` as the container's command, `resources` as its
resources, and pins the pods by node affinity to `nvidia.com/gpu.product` In `gpuModels` (templates/deployment.yaml).
The container is then read as any Kubernetes container is (readers/kubernetes.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from kvplan.check.items import Skip
from kvplan.check.readers import kubernetes as k8s
from kvplan.check.report import FORMAT_HELM_VLLM
from kvplan.check.readers import claims as formats

# the format test, apart from the reader (readers/claims.py), still answers here
claims = formats.vllm_chart


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    image = doc["image"]
    ref = f"{image.get('repository')}:{image.get('tag')}" if image.get("tag") else str(image.get("repository") or "")
    container = {"name": "vllm", "image": ref or None, "command": image["command"],
                 "resources": doc.get("resources") if isinstance(doc.get("resources"), Mapping) else {}}
    models = [str(m) for m in doc.get("gpuModels") or []]
    pod = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": models}]}]}}}} if models else {}
    workload = k8s.container_workload(container, pod, source=source, document=document, name=Path(source).stem,
                                      fmt=FORMAT_HELM_VLLM, where=f"{where}: image.command", base_dir=base_dir)
    if workload.words is None:
        return [Skip(source, document, Path(source).stem, FORMAT_HELM_VLLM, "the chart's values give no command")]
    return [workload]
