"""Helm values files of the two charts that deploy vLLM engines, read through each chart's own template (the values
become the command line the chart renders):

- vLLM production-stack (`servingEngineSpec.modelSpec[]`; helm/templates/deployment-vllm-multi.yaml at
  vllm-project/production-stack@a6c01db0): `vllm serve MODELURL --host 0.0.0.0 --port 8000`, then
  --enable-lora (enableLoRA), and from `vllmConfig`: --enable-chunked-prefill / --no-enable-chunked-prefill when
  enableChunkedPrefill is set, --enable-prefix-caching when enablePrefixCaching is true and
  --no-enable-prefix-caching otherwise, --max-model-len, --dtype, --tensor-parallel-size, --max-num-seqs,
  --gpu_memory_utilization, --max_loras, extraArgs; an enabled lmcacheConfig adds --kv-transfer-config
  (LMCacheConnectorV1); `v0: 1` sets VLLM_USE_V1=0. The image is repository:tag; GPUs are `requestGPU` of
  `requestGPUType` (nvidia.com/gpu), the kind from `nodeSelectorTerms` (required node affinity).
- llm-d-modelservice (`modelArtifacts` + `decode` / `prefill`; charts/llm-d-modelservice/templates/_helpers.tpl at
  llm-d-incubation/llm-d-modelservice@3051935): a container with `modelCommand: vllmServe` or `imageDefault` runs
  `vllm serve MODEL --port P [--tensor-parallel-size T] [--data-parallel-size D] [--data-parallel-size-local L]
  --served-model-name NAME ARGS`; the chart gives each pod dataLocal x tensor GPUs of `accelerator.type`
  (nvidia.com/gpu for nvidia) unless the container sets its own, on the nodes `acceleratorTypes` (labelKey In
  labelValues) or `nodeSelector` pick; `custom` runs the container's command.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from kvplan.check.gpus import GpuEvidence, whole_count
from kvplan.check.items import Skip, Workload
from kvplan.check.readers import kubernetes as k8s
from kvplan.check.report import FORMAT_HELM_LLMD, FORMAT_HELM_PRODSTACK
from kvplan.core.errors import InputError
from kvplan.check.readers import claims as formats

# the format test, apart from the reader (readers/claims.py), still answers here
claims_prodstack = formats.helm_prodstack
claims_llmd = formats.helm_llmd

# kvplan's names for what a fix changes -> the values key that sets it (production-stack)
_PRODSTACK_KEYS = {"max_model_len": "vllmConfig.maxModelLen", "tensor_parallel_size": "vllmConfig.tensorParallelSize",
                   "gpu_memory_utilization": "vllmConfig.gpuMemoryUtilization", "max_num_seqs": "vllmConfig.maxNumSeqs",
                   "dtype": "vllmConfig.dtype", "model": "modelURL"}


def prodstack_key(name: str) -> str:
    return _PRODSTACK_KEYS.get(name, "vllmConfig.extraArgs --" + name.replace("_", "-"))


def read_prodstack(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    engine = doc["servingEngineSpec"]
    specs = engine.get("modelSpec") or []
    if not isinstance(specs, list) or not specs:
        return [Skip(source, document, Path(source).stem, FORMAT_HELM_PRODSTACK, "servingEngineSpec has no modelSpec")]
    items = []
    for index, spec in enumerate(specs):
        at = f"{where}: servingEngineSpec.modelSpec[{index}]"
        if not isinstance(spec, Mapping):
            raise InputError("a modelSpec must be a mapping", where=at)
        name = str(spec.get("name") or index)
        words = ["vllm", "serve", str(spec.get("modelURL") or ""), "--host", "0.0.0.0", "--port", "8000"]
        if spec.get("enableLoRA"):
            words.append("--enable-lora")
        config = spec.get("vllmConfig") if isinstance(spec.get("vllmConfig"), Mapping) else None
        env = {}
        if config is not None:
            if "enableChunkedPrefill" in config:
                words.append("--enable-chunked-prefill" if config["enableChunkedPrefill"] else "--no-enable-chunked-prefill")
            words.append("--enable-prefix-caching" if config.get("enablePrefixCaching") else "--no-enable-prefix-caching")
            for key, flag in (("maxModelLen", "--max-model-len"), ("dtype", "--dtype"), ("tensorParallelSize", "--tensor-parallel-size"),
                              ("maxNumSeqs", "--max-num-seqs"), ("gpuMemoryUtilization", "--gpu_memory_utilization"),
                              ("maxLoras", "--max_loras"), ("runner", "--runner"), ("convert", "--convert")):
                if key in config:
                    words += [flag, str(config[key])]
            words += [str(a) for a in config.get("extraArgs") or []]
            if str(config.get("v0")) == "1":
                env["VLLM_USE_V1"] = "0"
        lmcache = spec.get("lmcacheConfig") if isinstance(spec.get("lmcacheConfig"), Mapping) else {}
        if lmcache.get("enabled"):
            words += ["--kv-transfer-config", '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}']
        for item in spec.get("env") or []:
            if isinstance(item, Mapping) and "name" in item:
                env[str(item["name"])] = str(item["value"]) if item.get("value") is not None else None
        image = f"{spec.get('repository')}:{spec.get('tag')}" if spec.get("repository") else None
        gpus = _prodstack_gpus(spec, at)
        items.append(Workload(source=source, document=document, name=name, fmt=FORMAT_HELM_PRODSTACK, where=at,
                              base_dir=base_dir, words=tuple(words), image=image, env=env, gpus=gpus,
                              notes=("production-stack's chart renders these values into `vllm serve ...`",),
                              key=prodstack_key, flag_style=False, requests_gpus=True))
    return items


def _prodstack_gpus(spec: Mapping, at: str) -> GpuEvidence:
    count = spec.get("requestGPU")
    kind = str(spec.get("requestGPUType") or "nvidia.com/gpu")
    labels = k8s.selector_terms(spec.get("nodeSelectorTerms"), "nodeSelectorTerms")
    if count is None:
        return GpuEvidence(labels=labels)
    count = whole_count(count, where=f"{at}.requestGPU")
    other = k8s.OTHER_ACCELERATORS.get(kind)
    vendor = k8s.GPU_RESOURCES.get(kind)
    return GpuEvidence(count=count if count > 0 else None, count_where=f"requestGPU: {count} ({kind})", labels=labels,
                       vendor=vendor, vendor_where=f"requestGPUType {kind}" if vendor else None,
                       other=f"{other} ({kind})" if other else None)


def _pod_of(section: Mapping) -> Mapping:
    """The pod spec the chart renders for a role: its nodeSelector, and `acceleratorTypes` (labelKey In labelValues)
    as required node affinity (_helpers.tpl llm-d-modelservice.acceleratorTypes)."""
    types = section.get("acceleratorTypes")
    if not isinstance(types, Mapping) or not types.get("labelKey"):
        return section
    expression = {"key": str(types["labelKey"]), "operator": "In", "values": list(types.get("labelValues") or [])}
    return {**section, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expression]}]}}}}


def _int(value: Any, default: int = 1, *, where: str) -> int:
    """A parallelism size: absent (or 0, as the chart's templates read it) is the default; anything but a whole
    number is bad input (it became 1 before: tensor parallel 1 where the file meant something else)."""
    if value is None or value == 0:
        return default
    return whole_count(value, where=where)


def read_llmd(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    artifacts = doc["modelArtifacts"]
    model_name = str(artifacts.get("name") or "")
    uri = str(artifacts.get("uri") or "")
    if uri.startswith("hf://") and "{{" not in uri:
        model = uri[len("hf://"):].strip('"/')
    elif uri.startswith("pvc://"):
        model = uri
    else:
        model = model_name  # hf://"{{ .Values.modelArtifacts.name }}" renders to the name
    accelerator = (doc.get("accelerator") or {}).get("type", "nvidia") if isinstance(doc.get("accelerator"), Mapping) else "nvidia"
    routing = doc.get("routing") if isinstance(doc.get("routing"), Mapping) else {}
    proxy = routing.get("proxy") if isinstance(routing.get("proxy"), Mapping) else {}
    items = []
    for role in ("decode", "prefill"):
        section = doc.get(role)
        if not isinstance(section, Mapping) or section.get("create") is False:
            continue
        par = section.get("parallelism") if isinstance(section.get("parallelism"), Mapping) else {}
        tp = _int(par.get("tensor"), where=f"{where}: {role}.parallelism.tensor")
        data_local = _int(par.get("dataLocal"), where=f"{where}: {role}.parallelism.dataLocal")
        data = _int(par.get("data"), data_local * _int(par.get("workers"), where=f"{where}: {role}.parallelism.workers"),
                    where=f"{where}: {role}.parallelism.data")
        role_accelerator = (section.get("accelerator") or {}).get("type", accelerator) \
            if isinstance(section.get("accelerator"), Mapping) else accelerator
        for index, container in enumerate(section.get("containers") or []):
            if not isinstance(container, Mapping):
                continue
            at = f"{where}: {role}.containers[{index}]"
            command = str(container.get("modelCommand") or "custom")
            port = str(routing.get("servicePort", 8000) if role == "prefill" or proxy.get("enabled") is False
                       else proxy.get("targetPort", 8200))
            if command in ("vllmServe", "imageDefault"):
                words = ["vllm", "serve", model, "--port", port]
                if tp > 1:
                    words += ["--tensor-parallel-size", str(tp)]
                if data > 1:
                    words += ["--data-parallel-size", str(data)]
                if data_local > 1:
                    words += ["--data-parallel-size-local", str(data_local)]
                words += ["--served-model-name", model_name, *[str(a) for a in container.get("args") or []]]
                rendered = dict(container, command=None, args=None)
            else:
                rendered = dict(container)
                words = None
            limits = ((container.get("resources") or {}).get("limits") or {}) if isinstance(container.get("resources"), Mapping) else {}
            resource = "nvidia.com/gpu" if role_accelerator == "nvidia" else "amd.com/gpu" if role_accelerator == "amd" else None
            if resource and resource not in limits:
                rendered["resources"] = {"limits": {**limits, resource: str(tp * data_local)}}
            workload = k8s.container_workload(rendered, _pod_of(section), source=source, document=document,
                                              name=f"{role}/{container.get('name', index)}", fmt=FORMAT_HELM_LLMD,
                                              where=at, base_dir=base_dir)
            other = workload.gpus.other or (f"{role_accelerator} accelerators (accelerator.type)"
                                            if role_accelerator not in ("nvidia", "amd") else None)
            gpus = GpuEvidence(count=workload.gpus.count, count_where=(workload.gpus.count_where or "")
                               .replace("resources.limits", "the chart's resources.limits") or None,
                               labels=workload.gpus.labels, vendor=workload.gpus.vendor,
                               vendor_where=f"accelerator.type {role_accelerator}", other=other)
            notes = (f"llm-d-modelservice renders modelCommand {command} into `vllm serve ...`",) if words else ()
            items.append(replace(workload, words=tuple(words) if words else workload.words, gpus=gpus,
                                 notes=notes + workload.notes, requests_gpus=True))
    return items or [Skip(source, document, Path(source).stem, FORMAT_HELM_LLMD, "no decode or prefill containers")]
