"""`vllm serve` deployments: a `--config` YAML file, or a command line (--vllm-args), read as vLLM reads them
(kvplan/engines/vllm/serve_args.py) and judged with the vllm engine. The GPU comes from --gpu/--gpu-mem."""

from __future__ import annotations

import dataclasses

from pathlib import Path
from typing import Callable, Mapping

from kvplan.check.deployment import (MAX_PARALLEL, Defaults, Deployment, check_vllm_max_len, default_max_len,
                                     engine_request, resolve_model, tp_from_gpus, whole)
from kvplan.check.report import FORMAT_VLLM_ARGS
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.text import visible
from kvplan.engines.vllm import serve_args

# vLLM's --dtype names -> kvplan's (vllm/config/model.py _STR_DTYPE_TO_TORCH_DTYPE)
_VLLM_DTYPES = {"half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32"}


def key_style(fmt: str) -> Callable[[str], str]:
    """How a vLLM config (max-model-len) or command line (--max-model-len) spells a setting."""
    def spell(name: str) -> str:
        flag = name.replace("_", "-")
        return f"--{flag}" if fmt == FORMAT_VLLM_ARGS else flag

    return spell


def read(args: serve_args.ServeArgs, *, source: str, document: int | None, where: str, base_dir: Path,
         defaults: Defaults, fmt: str, default_name: str) -> Deployment:
    from kvplan.core import dtypes
    from kvplan.engines.vllm.engine import KV_DTYPES

    at = lambda dest: f"{where}: {args.written.get(dest, dest)}"  # noqa: E731
    key = key_style(fmt)
    model_ref = args.get("hf_config_path") or args.model
    if not model_ref:
        raise InputError("no model", where=where, hint="vLLM needs `model: NAME_OR_PATH` (or the positional model on a command line)")
    spec, raw_config = resolve_model(model_ref, base_dir=base_dir,
                                     where=at("hf_config_path" if args.get("hf_config_path") else "model"))
    blocked = serve_args.unmodelled(args)
    if raw_config is not None and args.get("quantization"):
        # naming the checkpoint's own method changes nothing: vLLM reads it from config.json anyway
        quant = raw_config[0].get("quantization_config") or {}
        if isinstance(quant, Mapping) and str(quant.get("quant_method", "")).lower() == str(args.get("quantization")).lower():
            blocked = [b for b in blocked if b[0] != args.written.get("quantization")]
    if blocked:
        written, why = blocked[0]
        raise UnsupportedError(f"{written} is set ({why}); kvplan does not model it", where=f"{where}: {written}",
                               hint="kvplan refuses rather than guesses; `kvplan probe` measures such a launch on the GPU")
    if defaults.gpu is None:
        raise InputError("no GPU for a vLLM config", where=where, hint="pass --gpu NAME (kvplan gpus) or --gpu-mem SIZE")
    tp = args.get("tensor_parallel_size") if args.given("tensor_parallel_size") else None
    pp = args.get("pipeline_parallel_size", 1)
    for dest, value in (("tensor_parallel_size", tp), ("pipeline_parallel_size", pp), ("data_parallel_size", args.get("data_parallel_size", 1))):
        if value is not None:
            whole(value, where=at(dest), high=MAX_PARALLEL)
    tp = tp_from_gpus(tp, pp, defaults.gpus, where=at("tensor_parallel_size"))
    seq = args.get("max_model_len")
    if seq == -1:
        raise UnsupportedError("max-model-len auto: vLLM fits the length to the memory it finds at start-up", where=at("max_model_len"),
                               hint="give a number to judge that length")
    if seq is None:
        seq = default_max_len("vllm", spec, raw_config, where=where, key=key("max_model_len"))
    elif seq < 1:
        raise InputError(f"must be positive, got {seq}", where=at("max_model_len"))
    check_vllm_max_len(seq, spec, raw_config, where=at("max_model_len"))

    weight_fmt = None
    vllm_dtype = args.get("dtype", "auto")
    if vllm_dtype != "auto":
        # --dtype sets the activation dtype; it changes the weight bytes only of an unquantized checkpoint
        if spec.weights_bytes is None and (spec.weight_dtype or spec.dtype) in ("bf16", "fp16", "fp32", "bfloat16", "float16", "float32"):
            weight_fmt = dtypes.weight_format(_VLLM_DTYPES[vllm_dtype])
    kv_name = args.get("kv_cache_dtype", "auto")
    if kv_name not in KV_DTYPES:
        raise UnsupportedError(f"kv-cache-dtype {kv_name} is not modelled", where=at("kv_cache_dtype"),
                               hint="auto, bfloat16, float16, fp8, fp8_e4m3 and fp8_e5m2 are")
    ints = {}
    for dest in ("block_size", "max_num_seqs", "max_num_batched_tokens"):
        if args.given(dest) and args.get(dest) is not None:
            ints[dest] = whole(args.get(dest), where=at(dest))
    util = args.get("gpu_memory_utilization")
    if util is not None and not (0 < util <= 1):
        raise InputError(f"vLLM requires 0 < gpu-memory-utilization <= 1, got {float(util):g}", where=at("gpu_memory_utilization"))
    kv_mem = args.get("kv_cache_memory_bytes")
    if kv_mem is not None and kv_mem < 1:
        raise InputError(f"must be positive, got {kv_mem}", where=at("kv_cache_memory_bytes"))
    notes = list(args.notes)
    graph = [args.written[d] for d in serve_args.CUDA_GRAPH_OPTIONS if args.given(d)]
    if graph:
        notes.append(f"{', '.join(graph)}: CUDA-graph memory is counted as with vLLM's defaults")
    dp = args.get("data_parallel_size", 1)
    if dp > 1:
        notes.append(f"data-parallel-size {dp}: {dp} replicas of {tp * pp} GPUs each; judged per replica")
    # prefix caching decides how many Mamba state blocks a hybrid's request holds (kvplan/engines/vllm/engine.py)
    prefix_caching = args.get("enable_prefix_caching") if args.given("enable_prefix_caching") else None
    request = engine_request(spec, seq=seq, kv_name=kv_name, weight_fmt=weight_fmt, tp=tp, pp=pp, gpu=defaults.gpu,
                             util=util, reserve=None, kv_mem=kv_mem, where=where, key=key, engine_version=args.version,
                             prefix_caching=prefix_caching, **ints)
    if args.get("enable_expert_parallel") and spec.moe is not None:
        request = dataclasses.replace(request, expert_parallel=True)
    served = args.get("served_model_name")
    name = served[0] if served else default_name
    # vLLM takes any served name; it is shown in every report format, so its control characters are escaped
    return Deployment(source=source, document=document, name=visible(name), format=fmt, engine="vllm", request=request,
                      requirements=defaults.requirements, key=key, gpus=tp * pp * dp, notes=tuple(notes))
