"""kvplan's own deployment YAML: one deployment per YAML document, keys named as vLLM names them
(tensor_parallel_size, max_model_len, ...), the GPU and the engine in the file, and optional requirements
(`require: {concurrency, headroom}`). Schema: kvplan/data/deployment.schema.json.

A document is this format when it has a key vLLM has no option for (engine, gpu, gpu_memory, require, name,
reserve, vllm_version)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

from kvplan.check.deployment import (MAX_PARALLEL, Defaults, Deployment, Requirements, check_vllm_max_len,
                                     default_max_len, engine_request, located, parse_headroom, resolve_model, text,
                                     tp_from_gpus, whole)
from kvplan import engines
from kvplan.check.report import FORMAT_KVPLAN, Origins
from kvplan.core.errors import InputError, KvplanError, UnsupportedError, check_name, did_you_mean
from kvplan.core.units import shown
from kvplan.requests.build import AUTO_LENGTH, sglang_features
from kvplan.core import dtypes, units
from kvplan.engines import ENGINE_NAMES
from kvplan.engines.api import Hardware
from kvplan.model import catalog

# vLLM's extra options (speculative decoding, LoRA, offload, parallelism, KV connectors, ...: docs/engines/features/),
# read by vLLM's own option table and kvplan/engines/vllm/launch.py, with kvplan's keys for what a launch leaves to
# other programs (LMCache's sizes) or to the load (the rate a prefill -> decode link carries)
FEATURE_KEYS = ("speculative_config", "spec_method", "spec_model", "spec_tokens", "enable_lora", "max_loras",
                "max_lora_rank", "lora_dtype", "max_cpu_loras", "fully_sharded_loras", "lora_target_modules",
                "cpu_offload_gb", "cpu_offload_params", "kv_offloading_size", "kv_offloading_backend", "kv_transfer_config",
                "data_parallel_size", "enable_expert_parallel", "decode_context_parallel_size",
                "prefill_context_parallel_size", "enable_eplb", "eplb_config", "all2all_backend", "nnodes",
                "data_parallel_size_local", "quantization", "kv_cache_dtype_skip_layers", "mamba_cache_dtype",
                "mamba_ssm_cache_dtype", "disable_sliding_window", "hf_overrides", "num_gpu_blocks_override",
                "attention_backend", "attention_config", "language_model_only", "limit_mm_per_prompt")
KVPLAN_KEYS = (
    "name", "model", "engine", "gpu", "gpu_memory", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len",
    "kv_cache_dtype", "dtype", "gpu_memory_utilization", "kv_cache_memory_bytes", "block_size", "max_num_seqs",
    "max_num_batched_tokens", "reserve", "vllm_version", "require", "engine_options", "sglang_args",
) + FEATURE_KEYS + ("lmcache", "request_rate", "prompt_tokens")
LMCACHE_KEYS = ("max_local_cpu_size", "max_local_disk_size", "chunk_size")
REQUIRE_KEYS = ("concurrency", "headroom")
# keys vLLM has no option for: their presence marks kvplan's own format
KVPLAN_ONLY = frozenset({"name", "engine", "gpu", "gpu_memory", "require", "reserve", "vllm_version", "lmcache",
                         "request_rate", "prompt_tokens", "engine_options", "sglang_args"})


def key(name: str) -> str:
    """kvplan's files spell settings as vLLM's option names with underscores; the engine's own settings (the CLI's
    repeatable --engine-option KEY=VALUE) are one mapping, `engine_options`."""
    return "engine_options" if name == "engine_option" else name


def _engine_options(value: Any, *, where: str) -> tuple[tuple[str, str], ...]:
    """`engine_options: {KEY: VALUE}`, as --engine-option KEY=VALUE would give them: the settings kvplan has no
    shared key for (TensorRT-LLM's max_batch_size, enable_attention_dp, ...; SGLang's attention_backend); each engine
    reads its own keys and refuses the others."""
    if not isinstance(value, Mapping) or not value:
        raise InputError(f"must be a mapping of engine settings, got {shown(value)}", where=where,
                         hint="e.g. engine_options: {max_batch_size: 64}")
    out = []
    for k, v in value.items():
        if not isinstance(k, str) or not k.strip():
            raise InputError(f"a setting's name must be text, got {shown(k)}", where=where)
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, (int, float, str)):
            v = str(v)
        else:
            raise InputError(f"must be one value (text, a number, true or false), got {shown(v)}", where=f"{where}.{k}")
        out.append((k.strip().lower().replace("-", "_"), v))  # spelled as --engine-option reads them (requests/build.py)
    return tuple(out)


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path, defaults: Defaults) -> Deployment:
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
    try:
        record = engines.get(engine)
    except KvplanError as err:  # an engine this build does not model: said at the file's own key, as check/judge.py does
        err.where = at("engine")
        raise

    gpu_note = None
    if "gpu" in data and "gpu_memory" in data:
        raise InputError("give gpu or gpu_memory, not both", where=at("gpu_memory"))
    if "gpu" in data:
        entry = located(at("gpu"), catalog.find_gpu, text(data["gpu"], where=at("gpu")))
        gpu = Hardware(entry.name, entry.runtime_capacity(where=at("gpu")))
        gpu_origin = f"gpu: {data['gpu']} (the file)"
    elif "gpu_memory" in data:
        gpu = Hardware(None, located(at("gpu_memory"), units.parse_size, data["gpu_memory"], what="gpu_memory"))
        gpu_origin = f"gpu_memory: {data['gpu_memory']} (the file)"
    elif defaults.gpu is not None:
        gpu, gpu_origin = defaults.gpu, defaults.gpu_origin
    else:
        raise UnsupportedError("no GPU named", where=where,
                               hint="add `gpu: NAME` (kvplan gpus) or `gpu_memory: SIZE`, or pass --gpu NAME / --gpu-mem SIZE")
    if defaults.gpu is not None and gpu != defaults.gpu:  # the file's own GPU always wins; a different --gpu is said
        gpu_note = (f"{defaults.gpu_origin} is not used: the file names its own GPU ({gpu_origin.removesuffix(' (the file)')}), "
                    "and a file's own GPU always wins")
        gpu_origin = gpu_origin.replace("(the file)", f"(the file's own; {defaults.gpu_origin} not used)")

    found = resolve_model(text(data["model"], where=at("model")), base_dir=base_dir, where=at("model"), lookup=defaults.lookup)
    spec = found.spec
    raw_config = (found.config, found.tokenizer_config) if found.config is not None else None
    tp = whole(data["tensor_parallel_size"], where=at("tensor_parallel_size"), high=MAX_PARALLEL) if "tensor_parallel_size" in data else None
    pp = whole(data["pipeline_parallel_size"], where=at("pipeline_parallel_size"), high=MAX_PARALLEL) if "pipeline_parallel_size" in data else 1
    tp, gpus_note = tp_from_gpus(tp, pp, defaults.gpus, where=at("tensor_parallel_size"))
    # vLLM's --max-model-len auto / -1: the derived length, fitted to the KV memory by the engine (engine._auto_fit)
    seq_auto = record.fits_length and str(data.get("max_model_len", "")).strip().lower() in AUTO_LENGTH
    if "max_model_len" in data and not seq_auto:
        seq = located(at("max_model_len"), units.parse_tokens, data["max_model_len"], what="max_model_len")
    else:
        seq = default_max_len(engine, spec, raw_config, where=where, key="max_model_len")
    kv_name = text(data["kv_cache_dtype"], where=at("kv_cache_dtype")) if "kv_cache_dtype" in data else "auto"
    if kv_name.strip().lower() not in record.kv_formats:  # the engine's own formats: the engine judges
        located(at("kv_cache_dtype"), dtypes.resolve_kv_dtype, kv_name, dtypes.dtype(spec.dtype))
    weight_fmt = located(at("dtype"), dtypes.weight_format, text(data["dtype"], where=at("dtype"))) if "dtype" in data else None
    quantized_note = None
    if weight_fmt is not None and not record.loads_weights_as(weight_fmt.name) \
            and weight_fmt.name != (spec.weight_dtype or spec.dtype):
        # the engine cannot make these weights from the checkpoint named (it loads a float dtype, or fp8 as vLLM and
        # SGLang quantize at load): `dtype` stands for another checkpoint of the model, quantized so. Said on the
        # verdict, never silently (issue 26: the bf16 checkpoint was sized as int4 without a word)
        quantized_note = (f"dtype: {weight_fmt.name} is judged as a {weight_fmt.name} checkpoint of the model: {engine} "
                          f"cannot make {weight_fmt.name} weights from the {spec.weight_dtype or spec.dtype} checkpoint "
                          f"named ({spec.name}); deploy a checkpoint quantized so")
    util = located(at("gpu_memory_utilization"), units.parse_fraction, data["gpu_memory_utilization"],
                   what="gpu_memory_utilization") if "gpu_memory_utilization" in data else None
    kv_mem = located(at("kv_cache_memory_bytes"), units.parse_size, data["kv_cache_memory_bytes"],
                     what="kv_cache_memory_bytes") if "kv_cache_memory_bytes" in data else None
    reserve = located(at("reserve"), units.parse_size, data["reserve"], what="reserve") if "reserve" in data else None
    ints = {k: whole(data[k], where=at(k)) for k in ("block_size", "max_num_seqs", "max_num_batched_tokens") if k in data}
    requirements = _requirements(data.get("require"), where=at("require"), defaults=defaults.requirements)
    version = None
    releases = record.releases  # the release a file pins (its version_key) and the engine's environment flags
    if "vllm_version" in data:
        if record.version_key != "vllm_version":  # the key is vLLM's: the engine whose record reads it
            raise InputError(f"vllm_version applies to engine vllm, not {engine}", where=at("vllm_version"))
        version = str(data["vllm_version"])
        located(at("vllm_version"), releases.release, version)
    elif record.version_key is not None:  # --vllm-version: the command line's value of the same key
        version = defaults.vllm_version
    options = _engine_options(data["engine_options"], where=at("engine_options")) if "engine_options" in data else None
    given = dict(options or ()) | dict(defaults.engine_options or ())  # the command line outranks the file
    if record.derived_max_len is not None:  # an engine that refuses a length past the one it derives (vLLM)
        check_vllm_max_len(seq, spec, raw_config, where=at("max_model_len"),
                           allow_long=releases.allow_long_flag(given.get(releases.ALLOW_LONG_OPTION)))
    check_length = engines.get(engine).check_length
    if check_length is not None and "max_model_len" in data and not seq_auto:
        # kvplan's own file has no environment: the engine's override variables are unset, as in a bare launch,
        # unless engine_options (or --engine-option) give one (an option key is its variable's name in lower case)
        check_length(seq, spec, raw_config[0] if raw_config else None, version=version,
                     env={key.upper(): value for key, value in given.items()}, where=at("max_model_len"))
    if "sglang_args" in data:
        features, notes = _sglang_features(data, spec, record=record, ranks=tp * pp, fraction=util is not None,
                                           where=where)
    else:
        features, spec, weight_fmt, notes = _features(data, spec, raw_config, weight_fmt, record=record, tp=tp, pp=pp,
                                                      version=version, where=where, base_dir=base_dir)
    request = engine_request(spec, seq=seq, kv_name=kv_name, weight_fmt=weight_fmt, tp=tp, pp=pp, gpu=gpu, util=util,
                             reserve=reserve, kv_mem=kv_mem, where=where, key=key, engine_version=version,
                             features=features, site=defaults.site_for(engine), engine_options=options, **ints)
    if seq_auto:
        request = dataclasses.replace(request, seq_auto=True)
    release = None
    if record.version_key is not None:  # an engine whose release the file (or --vllm-version) pins: said which
        rules = f"{record.title} {releases.release(version).mirrors} rules"
        option = "--" + record.version_key.replace("_", "-")
        release = (f"{rules} ({record.version_key}: {data[record.version_key]})" if record.version_key in data else
                   f"{rules} ({option} {defaults.vllm_version})" if defaults.vllm_version else
                   f"{rules} (kvplan's default)")
    gpus = tp * pp
    if features is not None and features.parallel is not None:
        gpus *= features.parallel.data_parallel_size * features.parallel.prefill_context_parallel_size
    notes = list(notes) + [n for n in (gpu_note, gpus_note, quantized_note) if n]
    origins = Origins(gpu=gpu_origin, gpus=f"tensor x pipeline parallel = {tp} x {pp}" + (
        f" (--gpus {defaults.gpus} not used)" if gpus_note else ""), model=found.source.describe(),
                      engine_release=release)
    return Deployment(source=source, document=document, name=name, format=FORMAT_KVPLAN, engine=engine, request=request,
                      requirements=requirements, key=key, gpus=gpus, origins=origins, notes=tuple(notes))


def _features(data: Mapping, spec, raw_config, weight_fmt, *, record: engines.Engine, tp: int, pp: int, version, where: str,
              base_dir: Path):
    """The vLLM options of the document (FEATURE_KEYS), read as `vllm serve` reads them, and kvplan's lmcache,
    request_rate and prompt_tokens. Returns (Features or None, the model as the launch builds it, the weight format,
    notes)."""
    import dataclasses

    # a document with vLLM launch options only: the offload module is loaded by no other part of a check of a
    # plain kvplan YAML (about 20 ms with what it imports, python -X importtime)
    from kvplan.engines.features import offload

    options = {k: data[k] for k in FEATURE_KEYS if k in data}
    extra = {k: data[k] for k in ("lmcache", "request_rate", "prompt_tokens") if k in data}
    if not options and not extra:
        return None, spec, weight_fmt, []
    if record.launch_args_flag != "--vllm-args":  # FEATURE_KEYS are the options --vllm-args gives: vLLM's record's
        first = next(iter(options or extra))
        own = record.launch_args_flag  # the engine's own launch options go in the key named as its CLI flag
        raise InputError(f"{first} is a vLLM option; this deployment's engine is {record.name}", where=f"{where}: {first}",
                         hint=f"write {record.title}'s launch options in {own[2:].replace('-', '_')}" if own else
                         "TensorRT-LLM's settings go in engine_options (its option spellings are read from its own files)")
    launch = record.launch
    args = record.options.parse_config({"pipeline_parallel_size": pp, **options}, where=where, version=version)
    features, spec, notes = launch.read(args, spec, raw_config, where=where, tp=tp, base_dir=base_dir)
    weight_fmt = launch.online_quantization(args, spec, raw_config, weight_fmt, where=f"{where}: quantization")
    if "lmcache" in extra:
        value = extra["lmcache"]
        if not isinstance(value, Mapping):
            raise InputError("must be a mapping of max_local_cpu_size, max_local_disk_size, chunk_size", where=f"{where}: lmcache")
        for k in value:
            if k not in LMCACHE_KEYS:
                raise InputError(f"unknown key {k!r}", where=f"{where}: lmcache.{k}", hint=", ".join(LMCACHE_KEYS))
        base = features.kv_offload
        if base is None or base.backend != "lmcache":
            raise InputError("lmcache sizes need an LMCache connector (kv_transfer_config) or --kv-offloading-backend lmcache",
                             where=f"{where}: lmcache")
        gib = lambda k, d: int(float(value.get(k, d)) * offload.GIB)  # noqa: E731  LMCache sizes: x 1024**3
        features = dataclasses.replace(features, kv_offload=dataclasses.replace(
            base, lmcache_cpu_bytes=gib("max_local_cpu_size", offload.LMCACHE_CPU_GIB_DEFAULT),
            lmcache_disk_bytes=gib("max_local_disk_size", 0),
            lmcache_chunk_tokens=whole(value.get("chunk_size", offload.LMCACHE_CHUNK_TOKENS), where=f"{where}: lmcache.chunk_size")))
        notes = [n for n in notes if "max_local_cpu_size is not in the launch" not in n]
    if "request_rate" in extra:
        rate = extra["request_rate"]
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
            raise InputError(f"must be a positive number of requests per second, got {rate!r}", where=f"{where}: request_rate")
        features = dataclasses.replace(features, rate=float(rate))
    if "prompt_tokens" in extra:
        features = dataclasses.replace(features, prompt_tokens=located(f"{where}: prompt_tokens", units.parse_tokens,
                                                                      extra["prompt_tokens"], what="prompt_tokens"))
    return (features if features.any else None), spec, weight_fmt, notes


def _sglang_features(data: Mapping, spec, *, record: engines.Engine, ranks: int, fraction: bool, where: str):
    """`sglang_args`: the extra options of a `python -m sglang.launch_server` launch, as the CLI's --sglang-args reads
    them (disaggregation, speculative decoding, DP attention, LoRA, HiCache), with request_rate / prompt_tokens for a
    disaggregated server's link. Returns (Features or None, notes)."""
    at = f"{where}: sglang_args"
    if record.launch_args_flag != "--sglang-args":  # the key carries what --sglang-args does: SGLang's record's
        raise InputError(f"sglang_args applies to engine sglang, not {record.name}", where=at)
    vllm_keys = [k for k in (*FEATURE_KEYS, "lmcache") if k in data]
    if vllm_keys:
        raise InputError(f"{vllm_keys[0]} is a vLLM option; this deployment's engine is sglang", where=f"{where}: {vllm_keys[0]}",
                         hint="write SGLang's options in sglang_args")
    value = data["sglang_args"]
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"must be the launch options as one line of text, got {shown(value)}", where=at,
                         hint='e.g. sglang_args: "--speculative-algorithm EAGLE3 --speculative-draft-model-path ..."')
    rate = str(data["request_rate"]) if "request_rate" in data else None
    prompt = str(data["prompt_tokens"]) if "prompt_tokens" in data else None
    try:
        return sglang_features(text(data["model"], where=f"{where}: model"), spec, value, rate=rate, prompt=prompt,
                               ranks=ranks, fraction=fraction), []
    except KvplanError as err:  # the CLI's flags named back as this file's keys
        err.where = f"{where}: " + {"--rate": "request_rate", "--prompt": "prompt_tokens"}.get(err.where or "", "sglang_args")
        raise


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
