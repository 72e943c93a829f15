"""One reader per deployment format. Each recognises its documents by their own markers and turns them into
deployments (kvplan/check/deployment.py), workloads that start an engine (kvplan/check/workload.py), or skips
(documents with nothing to judge); `kvplan check` judges what they return.

YAML documents, in the order they are asked (the first that claims a document reads it):
- github_actions: a GitHub Actions workflow (`jobs:` beside `on:`, which YAML 1.1 reads as true);
- kserve: serving.kserve.io InferenceService, ServingRuntime, LLMInferenceService;
- kubeai: kubeai.org Model, and the models chart's values (`catalog:`, each enabled entry a Model);
- rayserve: ray.io RayService (and RayCluster, RayJob), Ray Serve configs (`applications:`), Ray Serve LLM configs;
- kubernetes: any other apiVersion + kind (Deployment, StatefulSet, LeaderWorkerSet, Pod, Job, ..., Dynamo);
- compose: a `services:` mapping;
- helm: production-stack values (`servingEngineSpec`), llm-d-modelservice values (`modelArtifacts` + decode/prefill);
- vllm_chart: the values of vLLM's example Helm chart (`image.command` + `gpuModels`);
- skypilot: a task with `run:` and `resources:`;
- truss: a Truss (Baseten) config.yaml with a `docker_server` (or `trt_llm`);
- recipes: a vllm-project/recipes model recipe (`meta` + `model.model_id`) or strategy (`deploy_type`);
- trtllm_disagg: a `trtllm-serve disaggregated` config (`context_servers` / `generation_servers`);
- trtllm_serve: an LLM-API options file (`kv_cache_config`, `cuda_graph_config`, `enable_attention_dp`, ...);
- kvplan_yaml: kvplan's own format (a key vLLM has no option for: engine, gpu, require, ...);
- vllm_serve: a `vllm serve --config` file (its keys are vLLM options).
Text files: scripts (shell scripts by name or shebang, Dockerfiles by name), nomad (Nomad job files in HCL). The engine command lines found in
any of them are read by vllm_serve, sglang_launch and trtllm_serve.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from kvplan.check import report
from kvplan.check.readers import (compose, github_actions, helm, kserve, kubeai, kubernetes, rayserve, skypilot,
                                  recipes, trtllm_disagg, trtllm_serve, truss, vllm_chart)

# (format, claims(doc), read(doc, source=, document=, where=, base_dir=)); kvplan_yaml and vllm_serve come last, in run.py
READERS: tuple[tuple[str, Callable[[Any], bool], Callable[..., list]], ...] = (
    (report.FORMAT_GITHUB_ACTIONS, github_actions.claims, github_actions.read),
    (report.FORMAT_KSERVE, kserve.claims, kserve.read),
    (report.FORMAT_KUBEAI, kubeai.claims, kubeai.read),
    (report.FORMAT_KUBEAI, kubeai.claims_catalog, kubeai.read_catalog),
    (report.FORMAT_RAY, rayserve.claims, rayserve.read),
    (report.FORMAT_KUBERNETES, kubernetes.claims, kubernetes.read),
    (report.FORMAT_COMPOSE, compose.claims, compose.read),
    (report.FORMAT_HELM_PRODSTACK, helm.claims_prodstack, helm.read_prodstack),
    (report.FORMAT_HELM_LLMD, helm.claims_llmd, helm.read_llmd),
    (report.FORMAT_HELM_VLLM, vllm_chart.claims, vllm_chart.read),
    (report.FORMAT_SKYPILOT, skypilot.claims, skypilot.read),
    (report.FORMAT_TRUSS, truss.claims, truss.read),
    (report.FORMAT_RECIPES, recipes.claims, recipes.read),
    (report.FORMAT_TRTLLM_DISAGG, trtllm_disagg.claims, trtllm_disagg.read),
    (report.FORMAT_TRTLLM_OPTIONS, lambda d: isinstance(d, Mapping) and trtllm_serve.is_options(d),
     trtllm_serve.read_options_file),
)

LOOKED_FOR = ("jobs + on (a GitHub Actions workflow)", "apiVersion + kind (Kubernetes, KServe, KubeAI, Ray)", "services: (docker compose)",
              "servingEngineSpec or modelArtifacts (Helm values of production-stack, llm-d)",
              "applications or llm_configs (Ray Serve)", "resources + run (SkyPilot)",
              "docker_server or trt_llm (Truss)", "meta + model.model_id (vllm-project/recipes)",
              "kv_cache_config or context_servers (TensorRT-LLM)", "engine + model (kvplan)",
              "vllm serve options (a --config file)")

# what `kvplan check` reads, for the message of a file it cannot read as any of them (docs/check.md lists each)
FORMATS = ("kvplan YAML, vllm serve --config YAML, Kubernetes manifests (Deployment, StatefulSet, LeaderWorkerSet, "
           "RayCluster and other pod templates), KServe, KubeAI, Ray Serve, docker compose, Helm values "
           "(production-stack, llm-d), SkyPilot, TensorRT-LLM options and disaggregated configs, GitHub Actions "
           "workflows, Truss config.yaml, vllm-project/recipes YAML, shell scripts, Dockerfiles, README code blocks, Nomad "
           "job files, Python programs that build vllm.LLM(...) with literal arguments; "
           "BentoML, Modal and Ray Serve Python, BentoML pyproject.toml and Terraform helm_release are recognised)")
