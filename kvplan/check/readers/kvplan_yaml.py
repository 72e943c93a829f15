"""kvplan's own deployment YAML: one deployment per YAML document, keys named as vLLM names them
(tensor_parallel_size, max_model_len, ...), the GPU and the engine in the file, and optional requirements
(`require: {concurrency, headroom}`). Schema: kvplan/data/deployment.schema.json.

A document is this format when it has a key vLLM has no option for (engine, gpu, gpu_memory, require, name,
reserve, vllm_version)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from kvplan.check.deployment import (MAX_PARALLEL, Defaults, Deployment, Requirements, check_vllm_max_len,
                                     default_max_len, engine_request, located, parse_headroom, resolve_model, text,
                                     tp_from_gpus, whole)
from kvplan.check.report import FORMAT_KVPLAN
from kvplan.core.errors import InputError, check_name, did_you_mean
from kvplan.core.units import shown

KVPLAN_KEYS = (
    "name", "model", "engine", "gpu", "gpu_memory", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len",
    "kv_cache_dtype", "dtype", "gpu_memory_utilization", "kv_cache_memory_bytes", "block_size", "max_num_seqs",
    "max_num_batched_tokens", "reserve", "vllm_version", "require",
)
REQUIRE_KEYS = ("concurrency", "headroom")
# keys vLLM has no option for: their presence marks kvplan's own format
KVPLAN_ONLY = frozenset({"name", "engine", "gpu", "gpu_memory", "require", "reserve", "vllm_version"})


def key(name: str) -> str:
    """kvplan's files spell settings as vLLM's option names with underscores."""
    return name


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path, defaults: Defaults) -> Deployment:
    from kvplan.core import dtypes, units
    from kvplan.engines import ENGINE_NAMES
    from kvplan.engines.request import Hardware
    from kvplan.engines.vllm import releases
    from kvplan.model import catalog

    data: dict[str, Any] = {}
    for raw_key, value in doc.items():
        k = str(raw_key).replace("-", "_")
        if k not in KVPLAN_KEYS:
            raise InputError(f"unknown key {raw_key!r}", where=f"{where}: {raw_key}",
                             hint=did_you_mean(k, KVPLAN_KEYS) or "keys: " + ", ".join(KVPLAN_KEYS))
        if k in data:
            raise InputError(f"{k!r} is given twice", where=f"{where}: {raw_key}")
        data[k] = value
    at = lambda k: f"{where}: {k}"  # noqa: E731
    for k in ("model", "engine"):
        if k not in data:
            raise InputError(f"missing key {k!r}", where=where,
                             hint="engine: static | vllm | sglang | trtllm" if k == "engine" else "a bundled model name, a model folder or a config.json")
    name = check_name(text(data["name"], where=at("name")), where=at("name")) if "name" in data else (
        f"{Path(source).stem}#{document}" if document else Path(source).stem)
    engine = text(data["engine"], where=at("engine"))
    if engine not in ENGINE_NAMES:
        raise InputError(f"unknown engine {data['engine']!r}", where=at("engine"),
                         hint=did_you_mean(engine, ENGINE_NAMES) or "one of " + ", ".join(ENGINE_NAMES))

    if "gpu" in data and "gpu_memory" in data:
        raise InputError("give gpu or gpu_memory, not both", where=at("gpu_memory"))
    if "gpu" in data:
        entry = located(at("gpu"), catalog.find_gpu, text(data["gpu"], where=at("gpu")))
        gpu = Hardware(entry.name, entry.capacity_bytes)
    elif "gpu_memory" in data:
        gpu = Hardware(None, located(at("gpu_memory"), units.parse_size, data["gpu_memory"], what="gpu_memory"))
    elif defaults.gpu is not None:
        gpu = defaults.gpu
    else:
        raise InputError("no GPU", where=where, hint="add `gpu: NAME` (kvplan gpus) or `gpu_memory: SIZE`, or pass --gpu/--gpu-mem")

    spec, raw_config = resolve_model(text(data["model"], where=at("model")), base_dir=base_dir, where=at("model"))
    tp = whole(data["tensor_parallel_size"], where=at("tensor_parallel_size"), high=MAX_PARALLEL) if "tensor_parallel_size" in data else None
    pp = whole(data["pipeline_parallel_size"], where=at("pipeline_parallel_size"), high=MAX_PARALLEL) if "pipeline_parallel_size" in data else 1
    tp = tp_from_gpus(tp, pp, defaults.gpus, where=at("tensor_parallel_size"))
    if "max_model_len" in data:
        seq = located(at("max_model_len"), units.parse_tokens, data["max_model_len"], what="max_model_len")
    else:
        seq = default_max_len(engine, spec, raw_config, where=where, key="max_model_len")
    kv_name = text(data["kv_cache_dtype"], where=at("kv_cache_dtype")) if "kv_cache_dtype" in data else "auto"
    located(at("kv_cache_dtype"), dtypes.resolve_kv_dtype, kv_name, dtypes.dtype(spec.dtype))
    weight_fmt = located(at("dtype"), dtypes.weight_format, text(data["dtype"], where=at("dtype"))) if "dtype" in data else None
    util = located(at("gpu_memory_utilization"), units.parse_fraction, data["gpu_memory_utilization"],
                   what="gpu_memory_utilization") if "gpu_memory_utilization" in data else None
    kv_mem = located(at("kv_cache_memory_bytes"), units.parse_size, data["kv_cache_memory_bytes"],
                     what="kv_cache_memory_bytes") if "kv_cache_memory_bytes" in data else None
    reserve = located(at("reserve"), units.parse_size, data["reserve"], what="reserve") if "reserve" in data else None
    ints = {k: whole(data[k], where=at(k)) for k in ("block_size", "max_num_seqs", "max_num_batched_tokens") if k in data}
    requirements = _requirements(data.get("require"), where=at("require"), defaults=defaults.requirements)
    version = None
    if "vllm_version" in data:
        if engine != "vllm":
            raise InputError(f"vllm_version applies to engine vllm, not {engine}", where=at("vllm_version"))
        version = str(data["vllm_version"])
        located(at("vllm_version"), releases.release, version)
    elif engine == "vllm":
        version = defaults.vllm_version
    if engine == "vllm":
        check_vllm_max_len(seq, spec, raw_config, where=at("max_model_len"))
    request = engine_request(spec, seq=seq, kv_name=kv_name, weight_fmt=weight_fmt, tp=tp, pp=pp, gpu=gpu, util=util,
                             reserve=reserve, kv_mem=kv_mem, where=where, key=key, engine_version=version, **ints)
    return Deployment(source=source, document=document, name=name, format=FORMAT_KVPLAN, engine=engine, request=request,
                      requirements=requirements, key=key, gpus=tp * pp)


def _requirements(value: Any, *, where: str, defaults: Requirements) -> Requirements:
    if value is None:
        return defaults
    if not isinstance(value, Mapping):
        raise InputError(f"must be a mapping with concurrency and/or headroom, got {shown(value)}", where=where)
    for k in value:
        if k not in REQUIRE_KEYS:
            raise InputError(f"unknown requirement {k!r}", where=f"{where}.{k}",
                             hint=did_you_mean(str(k), REQUIRE_KEYS) or "concurrency or headroom")
    concurrency = whole(value["concurrency"], where=f"{where}.concurrency") if "concurrency" in value else defaults.concurrency
    headroom = parse_headroom(value["headroom"], where=f"{where}.headroom") if "headroom" in value else defaults.headroom
    return Requirements(concurrency, headroom)
