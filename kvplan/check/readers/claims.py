"""Which format a YAML document is: each reader's claims test (readers/__init__.py READERS asks them in order, the
first that claims a document reads it), kept apart from the readers so that asking them loads only the reader that
claims the document (benchmarks/cold_start.py). Each reader still answers its test under its old name. Pure."""

from __future__ import annotations

from typing import Any, Mapping

# kserve.py: the KServe kinds it reads
KSERVE_KINDS = {"InferenceService", "ServingRuntime", "ClusterServingRuntime", "LLMInferenceService", "LLMInferenceServiceConfig"}
# compose.py: a compose file's top-level keys, and the service keys one of which a service has
COMPOSE_TOP_LEVEL = {"version", "name", "services", "volumes", "networks", "configs", "secrets", "include", "models"}
COMPOSE_SERVICE_KEYS = {"image", "build", "command", "entrypoint", "deploy", "environment", "ports", "volumes"}
# skypilot.py: a SkyPilot task's top-level keys
SKYPILOT_KEYS = {"name", "resources", "num_nodes", "envs", "secrets", "setup", "run", "workdir", "file_mounts",
                 "service", "config", "volumes"}
# truss.py: the keys of Truss's config schema
TRUSS_KEYS = {"model_name", "resources", "base_image", "model_metadata", "runtime", "secrets", "build_commands",
              "environment_variables", "requirements", "python_version", "model_cache", "weights", "system_packages",
              "cache_internal", "external_data", "model_class_name", "model_module_dir", "description"}
# trtllm_disagg.py: the server groups of a disaggregated config
TRTLLM_ROLES = ("context_servers", "generation_servers")
# trtllm_serve.py: the LLM-API markers of an options file (keys vLLM, SGLang and kvplan's own format do not have)
TRTLLM_MARKERS = frozenset({"kv_cache_config", "cuda_graph_config", "enable_attention_dp", "moe_expert_parallel_size",
                            "disable_overlap_scheduler", "cache_transceiver_config", "moe_config", "speculative_config",
                            "print_iter_log", "enable_autotuner", "max_seq_len", "max_num_tokens", "backend"})
# keys a vLLM --config file or a kvplan deployment writes too: alone they do not make a TensorRT-LLM options file
TRTLLM_SHARED_KEYS = frozenset({"speculative_config"})
# kvplan's own deployment keys (check/readers/kvplan_yaml.py KVPLAN_ONLY): such a document is kvplan's
TRTLLM_KVPLAN_KEYS = frozenset({"engine", "gpu", "gpu_memory", "require", "reserve", "vllm_version"})


def github_actions(doc: Any) -> bool:
    """A workflow (`jobs:` beside `on:`), or a composite action's action.yml (`runs: {using: composite, steps}`)."""
    if not isinstance(doc, Mapping):
        return False
    runs = doc.get("runs")
    return (isinstance(doc.get("jobs"), Mapping) and ("on" in doc or True in doc)) or (
        isinstance(runs, Mapping) and runs.get("using") == "composite" and isinstance(runs.get("steps"), list))


def kserve(doc: Any) -> bool:
    return kubernetes(doc) and str(doc.get("apiVersion", "")).startswith("serving.kserve.io/") and doc.get("kind") in KSERVE_KINDS


def kubeai(doc: Any) -> bool:
    return kubernetes(doc) and str(doc["apiVersion"]).startswith("kubeai.org/") and doc["kind"] == "Model"


def kubeai_catalog(doc: Any) -> bool:
    """The Helm values of KubeAI's models chart (charts/models/values.yaml): `catalog:` of Model specs by name."""
    catalog = doc.get("catalog") if isinstance(doc, Mapping) and "apiVersion" not in doc else None
    return isinstance(catalog, Mapping) and bool(catalog) and all(
        isinstance(m, Mapping) and ("url" in m or "engine" in m) for m in catalog.values())


def rayserve(doc: Any) -> bool:
    if kubernetes(doc):
        return str(doc["apiVersion"]).startswith("ray.io/") and doc["kind"] in ("RayService", "RayCluster", "RayJob")
    return isinstance(doc, Mapping) and (
        (isinstance(doc.get("applications"), list) and all(isinstance(a, Mapping) and "import_path" in a for a in doc["applications"]))
        or isinstance(doc.get("llm_configs"), list) or isinstance(doc.get("model_loading_config"), Mapping))


def kubernetes(doc: Any) -> bool:
    return isinstance(doc, Mapping) and isinstance(doc.get("apiVersion"), str) and isinstance(doc.get("kind"), str)


def compose(doc: Any) -> bool:
    if not isinstance(doc, Mapping) or "apiVersion" in doc:
        return False
    services = doc.get("services")
    if not isinstance(services, Mapping) or not services:
        return False
    if not all(str(k) in COMPOSE_TOP_LEVEL or str(k).startswith("x-") for k in doc):
        return False
    return any(isinstance(s, Mapping) and set(map(str, s)) & COMPOSE_SERVICE_KEYS for s in services.values())


def helm_prodstack(doc: Any) -> bool:
    return isinstance(doc, Mapping) and isinstance(doc.get("servingEngineSpec"), Mapping) and "apiVersion" not in doc


def helm_llmd(doc: Any) -> bool:
    return isinstance(doc, Mapping) and isinstance(doc.get("modelArtifacts"), Mapping) and \
        any(isinstance(doc.get(r), Mapping) for r in ("decode", "prefill")) and "apiVersion" not in doc


def vllm_chart(doc: Any) -> bool:
    image = doc.get("image") if isinstance(doc, Mapping) and "apiVersion" not in doc else None
    return isinstance(image, Mapping) and isinstance(image.get("command"), list) and "gpuModels" in doc


def skypilot(doc: Any) -> bool:
    if not isinstance(doc, Mapping) or "apiVersion" in doc or "services" in doc:
        return False
    keys = set(map(str, doc))
    if not keys <= SKYPILOT_KEYS:
        return False
    resources = doc.get("resources")
    return isinstance(doc.get("run"), str) or (isinstance(resources, Mapping) and bool(set(resources) & {
        "accelerators", "cloud", "infra", "instance_type", "any_of", "ordered", "image_id"}))


def truss(doc: Any) -> bool:
    return (isinstance(doc, Mapping) and "apiVersion" not in doc and (
        isinstance(doc.get("docker_server"), Mapping) or isinstance(doc.get("trt_llm"), Mapping))
        and bool(set(map(str, doc)) & TRUSS_KEYS))


def recipes(doc: Any) -> bool:
    if not isinstance(doc, Mapping) or "apiVersion" in doc:
        return False
    model = doc.get("model")
    recipe = isinstance(doc.get("meta"), Mapping) and isinstance(model, Mapping) and "model_id" in model
    strategy = "deploy_type" in doc and "hardware_match" in doc
    return recipe or strategy


def trtllm_disagg(doc: Any) -> bool:
    return isinstance(doc, Mapping) and any(role in doc for role in TRTLLM_ROLES)


def trtllm_options(doc: Mapping) -> bool:
    keys = set(map(str, doc))
    return bool(keys & (TRTLLM_MARKERS - TRTLLM_SHARED_KEYS)) and not keys & TRTLLM_KVPLAN_KEYS and "model_loading_config" not in doc


def verl_config(doc: Any) -> bool:
    """A verl trainer config (Hydra YAML: verl/trainer/config/ppo_trainer.yaml and files over it): an
    `actor_rollout_ref` mapping, verl's own key for its actor, rollout and reference."""
    return isinstance(doc, Mapping) and isinstance(doc.get("actor_rollout_ref"), Mapping) and "apiVersion" not in doc
