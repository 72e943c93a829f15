"""Kubernetes manifests: one deployment per container that starts vLLM, SGLang or TensorRT-LLM, in Pods,
Deployments, StatefulSets, DaemonSets, Jobs, CronJobs, LeaderWorkerSets and any other resource that embeds a pod
template; multi-document files hold them beside Services, ConfigMaps and Secrets, which are skipped (nothing to
judge). KServe, KubeAI and Ray resources have readers of their own (kserve.py, kubeai.py, rayserve.py); NVIDIA
Dynamo's DynamoGraphDeployment is read here (its workers run Dynamo's own launchers).

A container is read as the kubelet runs it:
- `command` replaces the image's entrypoint, `args` follow (vLLM's images run `vllm serve`);
- `$(VAR)` in command and args is the container's `env` value (`value:` entries; `valueFrom` is known only at run
  time), `$$(VAR)` a literal; a `sh -c` script is then read as the shell would read it, with the same variables;
  LeaderWorkerSet's LWS_GROUP_SIZE and LWS_WORKER_INDEX are the group's size and 0 (the leader);
- GPUs: resources.limits (else requests) `nvidia.com/gpu` or `amd.com/gpu`, times the pods of a LeaderWorkerSet
  group; the kind from the pod's nodeSelector and required node affinity (kvplan/data/gpu_labels.yaml).
  `aws.amazon.com/neuron`, `habana.ai/gaudi`, `google.com/tpu` and `gpu.intel.com/*` are not GPUs kvplan models.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from kvplan.check import launch, marks
from kvplan.check.gpus import GpuEvidence, Label, whole_count
from kvplan.check.items import Skip, Workload, runs_engine, Failure
from kvplan.check.report import FORMAT_KUBERNETES
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.engines import lazy
from kvplan.check.readers import claims as formats

# the format test, apart from the reader (readers/claims.py), still answers here
claims = formats.kubernetes

if TYPE_CHECKING:
    from kvplan.check import gpu_labels
else:  # the label table loads with the first manifest that asks for its keys, not with the claims test
    gpu_labels = lazy.module("kvplan.check.gpu_labels")

# resources with nothing to judge: they run no container
SKIPPED_KINDS = {
    "Service", "ConfigMap", "Secret", "Namespace", "ServiceAccount", "PersistentVolumeClaim", "PersistentVolume",
    "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Ingress", "IngressClass", "HorizontalPodAutoscaler",
    "PodDisruptionBudget", "NetworkPolicy", "StorageClass", "RuntimeClass", "PriorityClass", "CustomResourceDefinition",
    "Gateway", "GatewayClass", "HTTPRoute", "GRPCRoute", "InferencePool", "InferenceModel", "InferenceObjective",
    "ServiceMonitor", "PodMonitor", "PrometheusRule", "Endpoints", "EndpointSlice", "LimitRange", "ResourceQuota",
    "Certificate", "Issuer", "ClusterIssuer", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
    "ResourceClaimTemplate", "DeviceClass", "Kustomization", "ScaledObject", "ClusterServingRuntime", "ServingRuntime",
    "LLMInferenceServiceConfig", "NIMCache",  # NVIDIA NIM operator's cache: a job that downloads the model, no server
}
# keys by which an operator's resource names the model it serves (NVIDIA NIMService, production-stack's VLLMRuntime, ...)
_MODEL_KEYS = {"model", "modelURL", "modelName", "modelId", "model_id", "modelPath", "models", "modelSpec"}
# accelerators that are not GPUs kvplan models: resource name -> how the report says it
OTHER_ACCELERATORS = {"aws.amazon.com/neuron": "AWS Neuron devices", "aws.amazon.com/neuroncore": "AWS Neuron cores",
                      "aws.amazon.com/neurondevice": "AWS Neuron devices", "habana.ai/gaudi": "Intel Gaudi HPUs",
                      "google.com/tpu": "Google TPUs", "gpu.intel.com/i915": "Intel GPUs", "gpu.intel.com/xe": "Intel GPUs"}
GPU_RESOURCES = {"nvidia.com/gpu": "nvidia", "amd.com/gpu": "amd"}


def resource_name(doc: Mapping, fallback: str) -> str:
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return str(name) if name else fallback


# ------------------------------------------------------------------ pods and containers

def expand_k8s(text: str, env: Mapping[str, str | None], *, open_env: bool = False) -> str:
    """$(VAR) as the kubelet expands it in command/args (kubernetes/third_party/forked/golang/expansion). With
    `open_env` (the container has envFrom: a ConfigMap or Secret kvplan cannot see defines more variables) a name
    not in `env` is unknown, not the literal text the kubelet leaves for an undefined one (issue 26: `$(MAX_LEN)`
    from envFrom was read as the literal word)."""
    def sub(m: re.Match) -> str:
        if m.group(1):
            return "$(" + m.group(2) + ")"  # $$(VAR) is the literal $(VAR)
        name = m.group(2)
        if name in env:
            return env[name] if env[name] is not None else marks.marker(name)
        return marks.marker(name) if open_env else m.group(0)
    return re.sub(r"(\$)?\$\(([A-Za-z_][A-Za-z0-9_]*)\)", sub, text)


def container_env(container: Mapping) -> dict[str, str | None]:
    """`env:` as the kubelet resolves it: values (themselves $(VAR)-expanded in order); valueFrom unknown here."""
    out: dict[str, str | None] = {}
    for item in container.get("env") or []:
        if not isinstance(item, Mapping) or "name" not in item:
            continue
        name = str(item["name"])
        if "value" in item and item["value"] is not None:
            value = item["value"]
            text = "true" if value is True else "false" if value is False else str(value)
            out[name] = expand_k8s(text, out)
        else:
            out[name] = None
    return out


def gpu_resources(container: Mapping) -> tuple[int | None, str | None, str | None, str | None]:
    """(count, where, vendor, other accelerator) from a container's resources."""
    resources = container.get("resources") if isinstance(container.get("resources"), Mapping) else {}
    for part in ("limits", "requests"):
        block = resources.get(part) if isinstance(resources.get(part), Mapping) else {}
        for name, vendor in GPU_RESOURCES.items():
            if name in block:
                count = whole_count(block[name], where=f"resources.{part} {name}")
                return count, f"resources.{part} {name}: {count}", vendor, None
        for name, words in OTHER_ACCELERATORS.items():
            if name in block:
                return None, None, None, f"{words} ({name})"
    return None, None, None, None


# What puts a pod on part of a GPU (issue 26): a MIG profile as the resource (NVIDIA device plugin, mixed strategy:
# nvidia.com/mig-<g>g.<mem>gb), GKE's partition and sharing node labels (cloud.google.com/gke-gpu-partition-size,
# gke-gpu-sharing-strategy, gke-max-shared-clients-per-gpu: GKE "Running multi-instance GPUs", "GPU time-sharing").
_MIG_RESOURCE = re.compile(r"nvidia\.com/mig-\S+")
_SHARING_LABELS = ("cloud.google.com/gke-gpu-partition-size", "cloud.google.com/gke-gpu-sharing-strategy",
                   "cloud.google.com/gke-max-shared-clients-per-gpu")


def gpu_share(container: Mapping, pod: Mapping) -> tuple[str | None, int | None]:
    """(what part of a GPU the pod gets, how many such parts) when it is not whole GPUs, else (None, None)."""
    resources = container.get("resources") if isinstance(container.get("resources"), Mapping) else {}
    for part in ("limits", "requests"):
        block = resources.get(part) if isinstance(resources.get(part), Mapping) else {}
        for name, value in block.items():
            if _MIG_RESOURCE.fullmatch(str(name)):
                return (f"a MIG slice (resources.{part} {name}: {value})",
                        whole_count(value, where=f"resources.{part} {name}"))
    selector = pod.get("nodeSelector") if isinstance(pod.get("nodeSelector"), Mapping) else {}
    for key in _SHARING_LABELS:
        if key in selector:
            return f"a partitioned or shared GPU (nodeSelector {key}: {selector[key]})", None
    affinity = pod.get("affinity") if isinstance(pod.get("affinity"), Mapping) else {}
    if any(key in repr(affinity) for key in _SHARING_LABELS):
        return "a partitioned or shared GPU (node affinity on " + next(k for k in _SHARING_LABELS if k in repr(affinity)) + ")", None
    return None, None


def node_labels(pod: Mapping) -> tuple[Label, ...]:
    """The GPU labels a pod's nodeSelector and required node affinity pin (keys of kvplan/data/gpu_labels.yaml)."""
    keys = set(gpu_labels.label_keys())
    out: list[Label] = []
    selector = pod.get("nodeSelector")
    if isinstance(selector, Mapping):
        out += [Label(str(k), str(v), "nodeSelector") for k, v in selector.items() if str(k) in keys]
    affinity = ((pod.get("affinity") or {}).get("nodeAffinity") or {}) if isinstance(pod.get("affinity"), Mapping) else {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(affinity, Mapping) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    return tuple(out) + selector_terms(terms, "node affinity")


def selector_terms(terms: Any, where: str) -> tuple[Label, ...]:
    """The GPU labels of required nodeSelectorTerms. Expressions of one term must all hold (their labels are
    intersected); several terms are alternatives Kubernetes ORs, read only when there is one."""
    keys = set(gpu_labels.label_keys())
    if not isinstance(terms, list) or len(terms) != 1 or not isinstance(terms[0], Mapping):
        return ()
    out = []
    for expr in terms[0].get("matchExpressions") or []:
        if not isinstance(expr, Mapping) or str(expr.get("key")) not in keys or expr.get("operator") != "In":
            continue
        values = [str(v) for v in expr.get("values") or []]
        if values:
            out.append(Label(str(expr["key"]), values[0], where, also=tuple(values[1:])))
    return tuple(out)


def container_workload(container: Mapping, pod: Mapping, *, source: str, document: int | None, name: str, fmt: str,
                       where: str, base_dir: Path, extra_env: Mapping[str, str | None] | None = None,
                       pods: int = 1, pods_where: str | None = None, notes: tuple[str, ...] = ()) -> Workload:
    """One container as the kubelet runs it (see the module docstring)."""
    env = {**(extra_env or {}), **container_env(container)}
    image = str(container.get("image")) if container.get("image") else None
    command = container.get("command")
    args = container.get("args")
    for part, value in (("command", command), ("args", args)):
        if value is not None and not isinstance(value, list):
            raise InputError(f"{part} must be a list of strings", where=f"{where}.{part}")
    open_env = bool(container.get("envFrom"))
    command = [expand_k8s(str(w), env, open_env=open_env) for w in command] if command else None
    args = [expand_k8s(str(w), env, open_env=open_env) for w in args] if args else None
    words, note = launch.container_words(image, command, args)
    count, count_where, vendor, other = gpu_resources(container)
    shared, slices = gpu_share(container, pod)
    if count is None and slices is not None:
        count, count_where, vendor = slices, shared, "nvidia"
    if count is not None and pods > 1:
        count, count_where = count * pods, f"{count_where} x {pods} pods ({pods_where})"
    other = other or launch.non_gpu_accelerator(image)
    gpus = GpuEvidence(count=count, count_where=count_where, labels=node_labels(pod), vendor=vendor,
                       vendor_where=count_where.split(":")[0] if count_where else None, other=other, shared=shared)
    return Workload(source=source, document=document, name=name, fmt=fmt, where=where, base_dir=base_dir,
                    words=tuple(words) if words is not None else None, image=image, env=env, gpus=gpus,
                    notes=tuple(notes) + ((note,) if note else ()), requests_gpus=bool(count) or bool(other and image))


def _pod_templates(doc: Mapping) -> Iterator[tuple[str, Mapping, int, str | None, dict]]:
    """(path, pod spec, pods in the group, where that number is from, extra env) of each pod template."""
    kind = doc.get("kind")
    spec = doc.get("spec") if isinstance(doc.get("spec"), Mapping) else {}
    if kind == "Pod":
        yield "spec", spec, 1, None, {}
        return
    if kind == "CronJob":
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        template = (job.get("template") or {}).get("spec")
        if isinstance(template, Mapping):
            yield "spec.jobTemplate.spec.template.spec", template, 1, None, {}
        return
    if kind == "LeaderWorkerSet":
        group = spec.get("leaderWorkerTemplate") if isinstance(spec.get("leaderWorkerTemplate"), Mapping) else {}
        size = group.get("size", 1)
        size = size if isinstance(size, int) and size > 0 else 1
        env = {"LWS_GROUP_SIZE": str(size), "LWS_WORKER_INDEX": "0", "LWS_LEADER_ADDRESS": None}
        leader = (group.get("leaderTemplate") or {}).get("spec") if isinstance(group.get("leaderTemplate"), Mapping) else None
        worker = (group.get("workerTemplate") or {}).get("spec") if isinstance(group.get("workerTemplate"), Mapping) else None
        if isinstance(leader, Mapping):
            yield "spec.leaderWorkerTemplate.leaderTemplate.spec", leader, size, f"LeaderWorkerSet size {size}", env
        if isinstance(worker, Mapping):
            yield ("spec.leaderWorkerTemplate.workerTemplate.spec", worker, size if leader is None else 0,
                   f"LeaderWorkerSet size {size}", env)
        return
    template = spec.get("template")
    if isinstance(template, Mapping) and isinstance(template.get("spec"), Mapping) and "containers" in template["spec"]:
        yield "spec.template.spec", template["spec"], 1, None, {}
        return
    # any other resource (AIBrix StormService roles, operators' CRDs): every pod spec inside it, however deep
    yield from _embedded(doc, "")


def _embedded(value: Any, path: str) -> Iterator[tuple[str, Mapping, int, str | None, dict]]:
    """Pod specs anywhere in an unknown resource: a mapping with a `containers` list of containers."""
    if isinstance(value, Mapping):
        containers = value.get("containers")
        if isinstance(containers, list) and containers and all(isinstance(c, Mapping) for c in containers):
            yield path or "spec", value, 1, None, {}
            return
        for key, child in value.items():
            yield from _embedded(child, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _embedded(child, f"{path}[{i}]")


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    kind = str(doc.get("kind"))
    name = resource_name(doc, Path(source).stem)
    if kind in SKIPPED_KINDS:
        return [Skip(source, document, name, FORMAT_KUBERNETES, f"{kind} {name}: runs no container, nothing to judge")]
    if kind == "DynamoGraphDeployment":
        return _dynamo(doc, source=source, document=document, where=where, base_dir=base_dir, name=name)
    cluster, cluster_path = ray_cluster_spec(doc)
    if cluster is not None:
        items = ray_cluster_workloads(cluster, source=source, document=document, name=name, where=f"{where}: {cluster_path}",
                                      base_dir=base_dir)
        return items or [Skip(source, document, name, FORMAT_KUBERNETES, f"{kind} {name}: a Ray cluster whose pods start "
                              "no engine (`ray start` only); the models are in the Serve config it is given")]
    items = []
    quiet: list[str] = []
    templates = list(_pod_templates(doc))
    for path, pod, pods, pods_where, extra in templates:
        for index, container in enumerate(pod.get("containers") or []):
            if not isinstance(container, Mapping):
                continue
            cname = str(container.get("name") or index)
            at = f"{where}: {path}.containers[{cname}]"
            if pods == 0:
                continue  # a LeaderWorkerSet's workers: counted with the leader, which starts the engine
            workload = container_workload(container, pod, source=source, document=document,
                                          name=f"{name}/{cname}", fmt=FORMAT_KUBERNETES, where=at, base_dir=base_dir,
                                          extra_env=extra, pods=pods, pods_where=pods_where)
            if workload.requests_gpus or runs_engine(workload):
                items.append(workload)
            else:
                quiet.append(cname)
    image = _find_key(doc.get("spec"), {"image"}) if not items and not quiet else None
    image = _find_key(image, {"repository"}) if isinstance(image, Mapping) else image
    server = launch.other_server_image(image) if isinstance(image, str) else None
    if not items and not quiet and (server or _names_a_model(doc.get("spec"))):
        # no pod template: an operator starts the server from settings of its own; never passed over as "nothing"
        return [Failure(source, document, name, FORMAT_KUBERNETES, UnsupportedError(
            f"{kind} {name}: an operator's resource that starts " + (server or "a model server") + " from its own settings"
            + (f" (image {image})" if isinstance(image, str) else "") + "; kvplan does not read this kind",
            where=where, hint="judge the engine command line it runs (or the rendered pods) instead"))]
    if not items:
        what = f"containers {', '.join(quiet)}" if quiet else "no containers"
        return [Skip(source, document, name, FORMAT_KUBERNETES,
                     f"{kind} {name}: nothing starts vLLM, SGLang or TensorRT-LLM or asks for a GPU ({what})")]
    return items


def _find_key(value: Any, keys: set[str], depth: int = 0) -> Any:
    """The first value under one of `keys`, anywhere in a document's spec (breadth of a manifest, bounded depth)."""
    if depth > 12:
        return None
    if isinstance(value, Mapping):
        for key, child in value.items():
            if str(key) in keys and child not in (None, "", {}, []):
                return child
        for child in value.values():
            found = _find_key(child, keys, depth + 1)
            if found is not None:
                return found
    elif isinstance(value, list):
        for child in value:
            found = _find_key(child, keys, depth + 1)
            if found is not None:
                return found
    return None


def _names_a_model(spec: Any) -> bool:
    return _find_key(spec, _MODEL_KEYS) is not None


def ray_cluster_spec(doc: Mapping) -> tuple[Mapping | None, str]:
    """The RayCluster spec a resource holds (KubeRay's RayCluster, AIBrix's RayClusterFleet template), with its path."""
    spec = doc.get("spec") if isinstance(doc.get("spec"), Mapping) else {}
    for path, value in (("spec", spec), ("spec.template.spec", (spec.get("template") or {}).get("spec")
                                         if isinstance(spec.get("template"), Mapping) else None),
                        ("spec.rayClusterSpec", spec.get("rayClusterSpec"))):
        if isinstance(value, Mapping) and isinstance(value.get("headGroupSpec"), Mapping):
            return value, path
    return None, ""


def ray_cluster_workloads(cluster: Mapping, *, source: str, document: int | None, name: str, where: str,
                          base_dir: Path) -> list:
    """The engines a Ray cluster's pods start themselves (`ray start ...; vllm serve ... --distributed-executor-backend
    ray` in the head's command): each is judged with the GPUs of the whole cluster (the head's and every worker
    group's replicas x GPUs), which Ray places its workers on; the kind from the head's node labels, else the
    workers' when they agree."""
    groups = [("headGroupSpec", cluster.get("headGroupSpec"), 1)]
    for i, group in enumerate(cluster.get("workerGroupSpecs") or []):
        if isinstance(group, Mapping):
            replicas = group.get("replicas", group.get("minReplicas", 1))
            groups.append((f"workerGroupSpecs[{i}]", group, replicas if isinstance(replicas, int) else 1))
    total, parts, labels, vendor, pods = 0, [], (), None, []
    for path, group, replicas in groups:
        pod = ((group or {}).get("template") or {}).get("spec") if isinstance(group, Mapping) else None
        if not isinstance(pod, Mapping):
            continue
        for index, container in enumerate(pod.get("containers") or []):
            if not isinstance(container, Mapping):
                continue
            count, _, v, _ = gpu_resources(container)
            if count:
                total += count * replicas
                parts.append(f"{path.split('[')[0].removesuffix('Spec').removesuffix('Specs')}"
                             f"{'[' + path.split('[')[1] if '[' in path else ''}: {replicas} x {count}")
                vendor = vendor or v
                labels = labels or node_labels(pod)
            if container.get("command") or container.get("args"):
                pods.append((path, pod, index, container))  # without either KubeRay makes it run `ray start`
    items: list = []
    for path, pod, index, container in pods:
        cname = str(container.get("name") or index)
        workload = container_workload(container, pod, source=source, document=document, name=f"{name}/{cname}",
                                      fmt=FORMAT_KUBERNETES, where=f"{where}.{path}.template.spec.containers[{cname}]",
                                      base_dir=base_dir)
        if not runs_engine(workload):
            continue  # a pod that runs `ray start` only: its GPUs are counted with the cluster's
        gpus = GpuEvidence(count=total or None, count_where=("Ray cluster " + ", ".join(parts) + " GPUs") if parts else None,
                           labels=node_labels(pod) or labels, vendor=vendor,
                           vendor_where="Ray cluster" if vendor else None, other=workload.gpus.other)
        from dataclasses import replace

        items.append(replace(workload, gpus=gpus, requests_gpus=bool(total)))
    return items


def _dynamo(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path, name: str) -> list:
    """NVIDIA Dynamo's DynamoGraphDeployment: services with an extraPodSpec.mainContainer; GPUs at resources.limits.gpu."""
    items: list = []
    services = ((doc.get("spec") or {}).get("services") or {}) if isinstance(doc.get("spec"), Mapping) else {}
    for sname, service in services.items() if isinstance(services, Mapping) else []:
        if not isinstance(service, Mapping):
            continue
        if service.get("componentType") == "frontend":
            continue  # Dynamo's frontend routes requests to the workers (the operator runs dynamo.frontend): no engine
        pod = (service.get("extraPodSpec") or {}) if isinstance(service.get("extraPodSpec"), Mapping) else {}
        main = pod.get("mainContainer") if isinstance(pod.get("mainContainer"), Mapping) else {}
        limits = ((service.get("resources") or {}).get("limits") or {}) if isinstance(service.get("resources"), Mapping) else {}
        container = dict(main)
        if "gpu" in limits:
            container["resources"] = {"limits": {"nvidia.com/gpu": limits["gpu"]}}
        at = f"{where}: spec.services.{sname}.extraPodSpec.mainContainer"
        workload = container_workload(container, pod, source=source, document=document, name=f"{name}/{sname}",
                                      fmt=FORMAT_KUBERNETES, where=at, base_dir=base_dir)
        if workload.requests_gpus or runs_engine(workload):
            items.append(workload)
    if not items:
        return [Skip(source, document, name, FORMAT_KUBERNETES, "DynamoGraphDeployment: no service starts an engine")]
    return items
