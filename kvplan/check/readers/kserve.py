"""KServe resources (serving.kserve.io):

- InferenceService: a predictor `model:` with `modelFormat: huggingface` runs KServe's Hugging Face server, which
  hands its vLLM arguments to vLLM when the backend is vllm (the default `auto` picks vLLM for architectures vLLM
  serves; python/huggingfaceserver/huggingfaceserver/__main__.py at kserve@aaac4e294); the model is
  `--model_id`, else `storageUri` (hf://org/name; other storage is the serving host's). `--backend=huggingface` is
  transformers, which kvplan does not model. A predictor with `containers:` is read as a Kubernetes container.
- ServingRuntime / ClusterServingRuntime: a template for InferenceServices (`{{.Name}}`, /mnt/models): skipped.
- LLMInferenceService (v1alpha1/v1alpha2): KServe's llm-d template runs `vllm serve /mnt/models --served-model-name
  NAME --port 8000 [--tensor-parallel-size T] ${VLLM_ADDITIONAL_ARGS} ARGS...`
  (config/llmisvcconfig/config-llm-template.yaml; with `parallelism.data` / a `worker`, the data-parallel template
  adds --enable-expert-parallel, --data-parallel-size, --data-parallel-size-local); /mnt/models holds `spec.model.uri`
  (hf://org/name, else storage of the cluster); `kvCacheOffloading` adds an OffloadingConnector --kv-transfer-config.
  `template` (decode, or the only role) and `prefill` are judged separately.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from kvplan.check import launch
from kvplan.check.items import Skip
from kvplan.check.readers import kubernetes as k8s
from kvplan.check.report import FORMAT_KSERVE
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.check.readers import claims as formats

# the format test, apart from the reader (readers/claims.py), still answers here
KINDS = formats.KSERVE_KINDS
claims = formats.kserve

# the predictor modelFormat names KServe's Hugging Face server takes (its vLLM backend); any other is another runtime
_HUGGINGFACE_FORMATS = frozenset({"huggingface", "vllm"})
# the Hugging Face server's own options and KServe's model-server options (everything else goes to vLLM)
_HF_SERVER_OPTIONS = {
    "--model_name", "--model_dir", "--model_id", "--model_revision", "--tokenizer_revision", "--max_length",
    "--disable_lower_case", "--disable_special_tokens", "--tensor_input_names", "--backend", "--return_token_type_ids",
    "--return_offsets_mapping", "--return_probabilities", "--return_raw_logits", "--disable_log_requests", "--task",
    "--http_port", "--grpc_port", "--workers", "--max_threads", "--max_asyncio_workers", "--enable_grpc",
    "--enable_docs_url", "--enable_latency_logging", "--configure_logging", "--log_config_file", "--access_log_format",
}
_HF_SERVER_FLAGS = {"--disable_lower_case", "--disable_special_tokens", "--return_token_type_ids",
                    "--return_offsets_mapping", "--return_probabilities", "--return_raw_logits", "--disable_log_requests",
                    "--enable_docs_url", "--enable_latency_logging"}


def storage_model(uri: str | None) -> tuple[str | None, str | None]:
    """(a model reference kvplan can resolve, or None; how the storage is described)."""
    if not uri:
        return None, None
    uri = str(uri).strip().strip('"')
    if uri.startswith("hf://"):
        return uri[len("hf://"):].strip("/"), None
    return None, uri


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    kind = doc["kind"]
    name = k8s.resource_name(doc, Path(source).stem)
    if kind in ("ServingRuntime", "ClusterServingRuntime", "LLMInferenceServiceConfig"):
        return [Skip(source, document, name, FORMAT_KSERVE,
                     f"{kind} {name}: a template for the services that use it; they are judged, not the template")]
    if kind == "InferenceService":
        return _inference_service(doc, source=source, document=document, where=where, base_dir=base_dir, name=name)
    return _llm_inference_service(doc, source=source, document=document, where=where, base_dir=base_dir, name=name)


def _inference_service(doc, *, source, document, where, base_dir, name) -> list:
    spec = doc.get("spec") if isinstance(doc.get("spec"), Mapping) else {}
    predictor = spec.get("predictor") if isinstance(spec.get("predictor"), Mapping) else {}
    model = predictor.get("model") if isinstance(predictor.get("model"), Mapping) else None
    at = f"{where}: spec.predictor"
    if model is None:
        items = []
        for container in predictor.get("containers") or []:
            if isinstance(container, Mapping):
                cname = str(container.get("name") or "container")
                items.append(k8s.container_workload(container, predictor, source=source, document=document,
                                                    name=f"{name}/{cname}", fmt=FORMAT_KSERVE,
                                                    where=f"{at}.containers[{cname}]", base_dir=base_dir))
        return items or [Skip(source, document, name, FORMAT_KSERVE, f"InferenceService {name}: no predictor model or container")]
    fmt_name = str(((model.get("modelFormat") or {}).get("name") or "")).lower()
    container = dict(model)
    args = [str(a) for a in model.get("args") or []]
    base = k8s.container_workload(container, predictor, source=source, document=document, name=name, fmt=FORMAT_KSERVE,
                                  where=f"{at}.model", base_dir=base_dir)
    if fmt_name not in _HUGGINGFACE_FORMATS:
        return [replace(base, blocker=UnsupportedError(
            f"modelFormat {fmt_name or '(none)'}: a KServe runtime kvplan does not read", where=f"{at}.model.modelFormat",
            hint="kvplan reads the huggingface runtime (its vLLM backend)"))]
    own, vllm_args, model_id, backend = _split_hf_server_args(args, where=f"{at}.model.args")
    if backend == "huggingface":
        return [replace(base, blocker=UnsupportedError(
            "--backend=huggingface serves the model with transformers, which kvplan does not model",
            where=f"{at}.model.args", hint="the vllm backend (the default for architectures vLLM serves) is judged"))]
    ref, storage = storage_model(model.get("storageUri"))
    ref = model_id or ref or (storage or "/mnt/models")
    words = ["vllm", "serve", ref, *vllm_args]
    notes = [f"KServe's Hugging Face runtime hands these arguments to vLLM (backend {backend or 'auto'})"]
    if storage and not model_id:
        notes.append(f"storageUri {storage} is copied to /mnt/models")
    return [replace(base, words=tuple(words), notes=tuple(notes) + base.notes)]


def _split_hf_server_args(args: list[str], *, where: str) -> tuple[list[str], list[str], str | None, str | None]:
    own, rest, model_id, backend = [], [], None, None
    i = 0
    while i < len(args):
        token = args[i]
        flag, eq, value = token.partition("=")
        if flag in _HF_SERVER_OPTIONS:
            if not eq and flag not in _HF_SERVER_FLAGS:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            own.append(token)
            if flag == "--model_id":
                model_id = value
            elif flag == "--backend":
                backend = value
        else:
            rest.append(token)
        i += 1
    return own, rest, model_id, backend


# Kubernetes resource quantities (apimachinery resource.Quantity): binary Ki..Ei, decimal k..E, or plain bytes
_QUANTITY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18, "": 1}


def _quantity_bytes(value: Any, *, where: str) -> int:
    """'10Gi' -> 10737418240, as Kubernetes reads a memory quantity; whole bytes only."""
    import re
    from fractions import Fraction

    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|)\s*", str(value))
    if m is None or isinstance(value, bool):
        raise InputError(f"{value!r} is not a Kubernetes memory quantity", where=where, hint="e.g. 10Gi or 500Mi")
    size = Fraction(m.group(1)) * _QUANTITY[m.group(2)]
    if size.denominator != 1 or size < 1:
        raise InputError(f"{value!r} is not a whole, positive number of bytes", where=where, hint="e.g. 10Gi")
    return int(size)


def _offloading_connector(offloading: Any, *, where: str) -> str:
    """The --kv-transfer-config KServe's controller gives vLLM for `kvCacheOffloading`: vLLM's OffloadingConnector
    with the CPU tier's size (`cpu`, e.g. 10Gi) as its cpu_bytes_to_use. The disk tiers (`secondary`) hold no GPU
    memory. Without a `cpu` size the controller's default decides it, which the file does not say."""
    import json

    cpu = offloading.get("cpu") if isinstance(offloading, Mapping) else None
    if cpu is None:
        raise UnsupportedError("kvCacheOffloading names no cpu size: KServe's controller picks the CPU tier",
                               where=where, hint="give kvCacheOffloading.cpu (e.g. 10Gi)")
    size = _quantity_bytes(cpu, where=f"{where}.cpu")
    return json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                       "kv_connector_extra_config": {"cpu_bytes_to_use": size}})


def _llm_inference_service(doc, *, source, document, where, base_dir, name) -> list:
    spec = doc.get("spec") if isinstance(doc.get("spec"), Mapping) else {}
    model = spec.get("model") if isinstance(spec.get("model"), Mapping) else {}
    ref, storage = storage_model(model.get("uri"))
    served = str(model.get("name") or name)
    parallel = spec.get("parallelism") if isinstance(spec.get("parallelism"), Mapping) else {}
    offloading = spec.get("kvCacheOffloading")
    if offloading is None:
        offloading = next((v["kvCacheOffloading"] for v in spec.values() if isinstance(v, Mapping) and "kvCacheOffloading" in v),
                          None)
    items: list = []
    roles = [("template", spec.get("template"), parallel, spec.get("worker"))]
    prefill = spec.get("prefill") if isinstance(spec.get("prefill"), Mapping) else None
    if prefill is not None:
        roles.append(("prefill", prefill.get("template"), prefill.get("parallelism") or parallel, prefill.get("worker")))
    for role, template, par, worker in roles:
        if not isinstance(template, Mapping):
            continue
        containers = [c for c in template.get("containers") or [] if isinstance(c, Mapping)]
        main = next((c for c in containers if c.get("name") == "main"), containers[0] if containers else {})
        at = f"{where}: spec.{'prefill.' if role == 'prefill' else ''}template.containers[main]"
        env = k8s.container_env(main)
        words = ["vllm", "serve", ref or (storage or "/mnt/models"), "--served-model-name", served, "--port", "8000"]
        par = par if isinstance(par, Mapping) else {}
        if par.get("tensor"):
            words += ["--tensor-parallel-size", str(par["tensor"])]
        data_parallel = worker is not None or par.get("data")
        if data_parallel:
            if par.get("expert"):
                words.append("--enable-expert-parallel")
            words += ["--data-parallel-size", str(par.get("data") or 1), "--data-parallel-size-local", str(par.get("dataLocal") or 1)]
        if offloading is not None:
            words += ["--kv-transfer-config", _offloading_connector(offloading, where=f"{where}: spec.workload.kvCacheOffloading")]
        extra = env.get("VLLM_ADDITIONAL_ARGS")
        if "VLLM_ADDITIONAL_ARGS" in env and extra is None:
            words.append(launch.marks.marker("VLLM_ADDITIONAL_ARGS"))
        elif extra:
            try:
                words += shlex.split(extra)
            except ValueError as err:
                raise InputError(f"VLLM_ADDITIONAL_ARGS cannot be split into words: {err}", where=at) from None
        words += [str(a) for a in main.get("args") or []]
        pods = 1
        pods_where = None
        if data_parallel and par.get("data") and par.get("dataLocal"):
            pods = max(1, int(par["data"]) // int(par["dataLocal"]))
            pods_where = f"parallelism data {par['data']} / dataLocal {par['dataLocal']}"
        workload = k8s.container_workload({**main, "command": None, "args": None}, template, source=source,
                                          document=document, name=f"{name}/{role}", fmt=FORMAT_KSERVE, where=at,
                                          base_dir=base_dir, pods=pods, pods_where=pods_where)
        notes = ["KServe's LLMInferenceService template runs `vllm serve /mnt/models ... ${VLLM_ADDITIONAL_ARGS}` "
                 f"(image {main.get('image') or 'ghcr.io/llm-d/llm-d-cuda (the template default)'})"]
        if storage:
            notes.append(f"spec.model.uri {storage} is the model: storage of the cluster")
        if spec.get("baseRefs"):
            notes.append("baseRefs " + ", ".join(str(r.get("name")) for r in spec["baseRefs"] if isinstance(r, Mapping))
                         + ": configs kvplan does not see may add arguments")
        items.append(replace(workload, words=tuple(words), notes=tuple(notes)))
    return items or [Skip(source, document, name, FORMAT_KSERVE, f"LLMInferenceService {name}: no template")]
