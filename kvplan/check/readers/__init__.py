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
- verl_config: a verl trainer config (`actor_rollout_ref:`), read as main_ppo's rollout (rl_rollout.py);
- kvplan_yaml: kvplan's own format (a key vLLM has no option for: engine, gpu, require, ...);
- vllm_serve: a `vllm serve --config` file (its keys are vLLM options).
Text files: scripts (shell scripts by name or shebang, Dockerfiles by name), nomad (Nomad job files in HCL). The engine command lines found in
any of them are read by vllm_serve, sglang_launch and trtllm_serve.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from kvplan.check import report
from kvplan.check.readers import claims
from kvplan.engines.lazy import deferred


def _reader(module: str, name: str = "read") -> Callable[..., list]:
    """A reader's function, imported when a document of its format is read: READERS asks each format's claims test
    (readers/claims.py) in order, and only the reader that claims a document loads (benchmarks/cold_start.py)."""
    return deferred(f"kvplan.check.readers.{module}", name)


# (format, claims(doc), read(doc, source=, document=, where=, base_dir=)); kvplan_yaml and vllm_serve come last, in run.py
READERS: tuple[tuple[str, Callable[[Any], bool], Callable[..., list]], ...] = (
    (report.FORMAT_GITHUB_ACTIONS, claims.github_actions, _reader("github_actions")),
    (report.FORMAT_KSERVE, claims.kserve, _reader("kserve")),
    (report.FORMAT_KUBEAI, claims.kubeai, _reader("kubeai")),
    (report.FORMAT_KUBEAI, claims.kubeai_catalog, _reader("kubeai", "read_catalog")),
    (report.FORMAT_RAY, claims.rayserve, _reader("rayserve")),
    (report.FORMAT_KUBERNETES, claims.kubernetes, _reader("kubernetes")),
    (report.FORMAT_COMPOSE, claims.compose, _reader("compose")),
    (report.FORMAT_HELM_PRODSTACK, claims.helm_prodstack, _reader("helm", "read_prodstack")),
    (report.FORMAT_HELM_LLMD, claims.helm_llmd, _reader("helm", "read_llmd")),
    (report.FORMAT_HELM_VLLM, claims.vllm_chart, _reader("vllm_chart")),
    (report.FORMAT_SKYPILOT, claims.skypilot, _reader("skypilot")),
    (report.FORMAT_TRUSS, claims.truss, _reader("truss")),
    (report.FORMAT_RECIPES, claims.recipes, _reader("recipes")),
    (report.FORMAT_TRTLLM_DISAGG, claims.trtllm_disagg, _reader("trtllm_disagg")),
    (report.FORMAT_TRTLLM_OPTIONS, lambda d: isinstance(d, Mapping) and claims.trtllm_options(d),
     _reader("trtllm_serve", "read_options_file")),
    (report.FORMAT_VERL, claims.verl_config, _reader("verl_config")),
)

LOOKED_FOR = ("jobs + on (a GitHub Actions workflow)", "apiVersion + kind (Kubernetes, KServe, KubeAI, Ray)", "services: (docker compose)",
              "servingEngineSpec or modelArtifacts (Helm values of production-stack, llm-d)",
              "applications or llm_configs (Ray Serve)", "resources + run (SkyPilot)",
              "docker_server or trt_llm (Truss)", "meta + model.model_id (vllm-project/recipes)",
              "kv_cache_config or context_servers (TensorRT-LLM)", "actor_rollout_ref (a verl trainer config)",
              "engine + model (kvplan)",
              "vllm serve options (a --config file)")

# what `kvplan check` reads, for the message of a file it cannot read as any of them (docs/check.md lists each)
FORMATS = ("kvplan YAML, vllm serve --config YAML, Kubernetes manifests (Deployment, StatefulSet, LeaderWorkerSet, "
           "RayCluster and other pod templates), KServe, KubeAI, Ray Serve, docker compose, Helm values "
           "(production-stack, llm-d), SkyPilot, TensorRT-LLM options and disaggregated configs, GitHub Actions "
           "workflows, Truss config.yaml, vllm-project/recipes YAML, verl trainer configs, shell scripts, Dockerfiles, README code blocks, Nomad "
           "job files, Python programs that build vllm.LLM(...) with literal arguments; "
           "BentoML, Modal and Ray Serve Python, BentoML pyproject.toml and Terraform helm_release are recognised)")
