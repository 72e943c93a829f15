"""Ray Serve: KubeRay's RayService (its `serveConfigV2`, a Serve config in a string), a Serve config file
(`applications:`), or a Ray Serve LLM config (`llm_configs:` / a single LLMConfig with `model_loading_config:`).

Applications built by `ray.serve.llm` (build_openai_app, build_llm_deployment) are judged per LLMConfig: the model is
`model_loading_config.model_source` (else model_id), `engine_kwargs` are vLLM's EngineArgs (read like a vLLM config
file), one replica takes tensor x pipeline parallel GPUs, `accelerator_type` is Ray's accelerator label
(kvplan/data/gpu_labels.yaml), `runtime_env.env_vars` is the engine's environment. Without an accelerator_type the
GPU kind comes from the RayService's GPU worker groups when they agree; their GPUs (replicas x nvidia.com/gpu) are
the cluster's. Any other application is its own code (an import path): it cannot be judged, and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from kvplan.check import launch
from kvplan.check.gpus import GpuEvidence, Label, whole_count
from kvplan.check.items import Skip, Workload
from kvplan.check.readers import kubernetes as k8s
from kvplan.check.report import FORMAT_RAY
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core import yamlio
from kvplan.check.readers import claims as formats

# the format test, apart from the reader (readers/claims.py), still answers here
claims = formats.rayserve

_LLM_BUILDERS = ("ray.serve.llm:build_openai_app", "ray.serve.llm:build_llm_deployment",
                 "ray.serve.llm.builders:build_openai_app", "ray.serve.llm.builders:build_vllm_deployment")
# LLMConfig.llm_engine values that run vLLM, case forgiven (Ray Serve LLM's LLMEngine enum: vLLM = "vLLM")
_RAY_VLLM = frozenset({"vllm"})


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    if not k8s.claims(doc):
        cluster = GpuEvidence()
        if "applications" in doc:
            return _applications(doc["applications"], cluster, None, source=source, document=document,
                                 where=f"{where}: applications", base_dir=base_dir)
        configs = doc.get("llm_configs") if "llm_configs" in doc else [doc]
        return _llm_configs(configs, cluster, None, {}, source=source, document=document,
                            where=f"{where}: {'llm_configs' if 'llm_configs' in doc else 'llm_config'}", base_dir=base_dir)
    name = k8s.resource_name(doc, Path(source).stem)
    spec = doc.get("spec") if isinstance(doc.get("spec"), Mapping) else {}
    if doc["kind"] == "RayCluster":
        launches = k8s.ray_cluster_workloads(spec, source=source, document=document, name=name, where=f"{where}: spec",
                                             base_dir=base_dir)
        if launches:  # its pods start an engine themselves
            return launches
    if doc["kind"] != "RayService":
        return [Skip(source, document, name, FORMAT_RAY, f"{doc['kind']} {name}: a Ray cluster's pods run `ray start`; "
                                                          "the models are in the Serve config it is given")]
    cluster, image = _cluster(spec.get("rayClusterConfig") or {}, where=f"{where}: spec.rayClusterConfig")
    text = spec.get("serveConfigV2")
    if not isinstance(text, str):
        return [Skip(source, document, name, FORMAT_RAY, f"RayService {name}: no serveConfigV2")]
    docs = yamlio.load_yaml_text(text, where=f"{where}: spec.serveConfigV2")
    serve = docs[0] if docs else {}
    if not isinstance(serve, Mapping) or not isinstance(serve.get("applications"), list):
        raise InputError("serveConfigV2 must hold `applications:`", where=f"{where}: spec.serveConfigV2")
    return _applications(serve["applications"], cluster, image, source=source, document=document,
                         where=f"{where}: spec.serveConfigV2.applications", base_dir=base_dir)


def _cluster(config: Mapping, *, where: str) -> tuple[GpuEvidence, str | None]:
    """The GPUs of a RayCluster's worker groups (replicas x the GPU limit), their node labels when all agree."""
    total, parts, labels, vendor, image, other = 0, [], None, None, None, None
    for group in config.get("workerGroupSpecs") or []:
        if not isinstance(group, Mapping):
            continue
        pod = (group.get("template") or {}).get("spec") or {}
        containers = [c for c in pod.get("containers") or [] if isinstance(c, Mapping)]
        replicas = group.get("replicas", group.get("minReplicas", 1)) or 0
        for container in containers[:1]:
            count, _, v, acc = k8s.gpu_resources(container)
            image = image or container.get("image")
            other = other or acc
            if count:
                total += count * whole_count(replicas, where=f"{where}: workerGroupSpecs.replicas")
                parts.append(f"{group.get('groupName', 'workers')}: {replicas} x {count}")
                vendor = vendor or v
                found = k8s.node_labels(pod)
                labels = found if labels is None else tuple(l for l in labels if l in found)
    head = ((config.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    for container in head.get("containers") or []:
        image = image or (container.get("image") if isinstance(container, Mapping) else None)
    evidence = GpuEvidence(count=total or None, count_where=("worker groups " + ", ".join(parts) + " GPUs") if parts else None,
                           labels=tuple(Label(l.key, l.value, "worker group " + l.where) for l in labels or ()),
                           vendor=vendor, vendor_where="worker groups" if vendor else None, other=other)
    return evidence, str(image) if image else None


def _applications(apps: list, cluster: GpuEvidence, image: str | None, *, source: str, document: int | None, where: str,
                  base_dir: Path) -> list:
    items: list = []
    for index, app in enumerate(apps):
        if not isinstance(app, Mapping):
            continue
        at = f"{where}[{index}]"
        name = str(app.get("name") or index)
        path = str(app.get("import_path") or "")
        runtime = app.get("runtime_env") if isinstance(app.get("runtime_env"), Mapping) else {}
        env = {str(k): None if v is None else str(v) for k, v in (runtime.get("env_vars") or {}).items()}
        if path in _LLM_BUILDERS:
            configs = ((app.get("args") or {}).get("llm_configs")) if isinstance(app.get("args"), Mapping) else None
            items += _llm_configs(configs or [], cluster, image, env, source=source, document=document,
                                  where=f"{at}.args.llm_configs", base_dir=base_dir, app=name)
            continue
        pins = tuple(p for p in [launch.pip_release(" ".join(f"pip install {x}" for x in runtime.get("pip") or []))] if p)
        shown = ", ".join(f"{k}={v}" for k, v in env.items() if v is not None and not k.startswith(("LD_", "PATH")))
        items.append(Workload(source=source, document=document, name=name, fmt=FORMAT_RAY, where=at, base_dir=base_dir,
                              image=image, env=env, gpus=cluster, pins=pins, requests_gpus=True,
                              blocker=UnsupportedError(
                                  f"a custom Ray Serve application ({path}): its engine settings are in its own code"
                                  + (f" (it is given {shown})" if shown else ""), where=at,
                                  hint="kvplan reads applications built by ray.serve.llm (llm_configs)")))
    return items or [Skip(source, document, Path(source).stem, FORMAT_RAY, "no Serve application")]


def _llm_configs(configs: list, cluster: GpuEvidence, image: str | None, app_env: dict, *, source: str,
                 document: int | None, where: str, base_dir: Path, app: str | None = None) -> list:
    items: list = []
    for index, config in enumerate(configs):
        at = f"{where}[{index}]"
        if not isinstance(config, Mapping):
            raise InputError("an LLMConfig must be a mapping", where=at)
        loading = config.get("model_loading_config") if isinstance(config.get("model_loading_config"), Mapping) else {}
        source_ref = loading.get("model_source")
        if isinstance(source_ref, Mapping):
            source_ref = source_ref.get("bucket_uri")
        model = str(source_ref or loading.get("model_id") or "")
        engine = str(config.get("llm_engine") or "vLLM")
        kwargs = dict(config.get("engine_kwargs") or {}) if isinstance(config.get("engine_kwargs"), Mapping) else {}
        kwargs["model"] = model
        runtime = config.get("runtime_env") if isinstance(config.get("runtime_env"), Mapping) else {}
        env = {**app_env, **{str(k): None if v is None else str(v) for k, v in (runtime.get("env_vars") or {}).items()}}
        gpus = cluster
        if config.get("accelerator_type"):
            gpus = GpuEvidence(count=cluster.count, count_where=cluster.count_where,
                               labels=(Label("accelerator_type", str(config["accelerator_type"]), f"llm_configs[{index}]"),),
                               vendor=cluster.vendor, vendor_where=cluster.vendor_where, other=cluster.other)
        notes = ["Ray Serve LLM: engine_kwargs are vLLM's engine arguments; one replica takes tensor x pipeline parallel GPUs"]
        if image:
            notes.append(f"image {image}: the vLLM release it bundles is Ray's choice; the file pins none")
        deployment = config.get("deployment_config") if isinstance(config.get("deployment_config"), Mapping) else {}
        scaling = deployment.get("autoscaling_config") if isinstance(deployment.get("autoscaling_config"), Mapping) else {}
        replicas = deployment.get("num_replicas") or scaling.get("max_replicas")
        if replicas and replicas != 1:
            notes.append(f"{replicas} replicas: judged per replica")
        blocker = None if engine.lower() in _RAY_VLLM else UnsupportedError(f"llm_engine {engine}: kvplan reads vLLM", where=at)
        name = str(loading.get("model_id") or model or app or index)
        items.append(Workload(source=source, document=document, name=name, fmt=FORMAT_RAY, where=at, base_dir=base_dir,
                              image=image, env=env, gpus=gpus, notes=tuple(notes), engine_config=("vllm", kwargs),
                              key=lambda n: f"engine_kwargs.{n}", flag_style=False, requests_gpus=True, blocker=blocker))
    return items
