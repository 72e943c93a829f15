"""`trtllm-serve` command lines and the LLM-API options YAML of `--extra_llm_api_options` / `--config`, read the way
TensorRT-LLM 1.x reads them.

The command line is a click command (tensorrt_llm/commands/serve.py, `serve`, read at commit 00209af of
NVIDIA/TensorRT-LLM): the options below are its options, with click's rules: `--opt value` or `--opt=value`,
flags take no value, no abbreviations (click does not expand prefixes), underscores as written (`--tp_size`;
click does not turn dashes into underscores), one positional MODEL. `trtllm-serve MODEL` runs `serve` (the
group's default command); `trtllm-serve disaggregated -c FILE` starts a disaggregated server from a config file.

The YAML overrides the flags (serve(): `update_llm_args_with_extra_dict(llm_args, yaml.safe_load(f))`, which
merges the two mappings with the file winning): a `kv_cache_config:` in the file replaces the one the flags
built, so `--kv_cache_free_gpu_memory_fraction` is lost when the file's kv_cache_config names no fraction.
The LLM-API fields kvplan knows are listed in LLM_API below, each with what it does to GPU memory; a field not
listed cannot be judged (it is not read from TensorRT-LLM's own parser here, so an unknown field is "kvplan does
not know it", not "TensorRT-LLM refuses it").

This module imports no yaml, typer or rich.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from kvplan.core.errors import InputError, did_you_mean, UnsupportedError
from kvplan.engines.trtllm.build_settings import EngineConfigError, read_engine_config
# the engine `trtllm-serve HF_MODEL --backend tensorrt` builds at start-up, for check's reader (the record's part)
from kvplan.engines.trtllm.build_settings import deduced_max_seq_len as deduced_max_seq_len
from kvplan.engines.trtllm.build_settings import serve_build_options as serve_build_options
from kvplan.engines.trtllm.build_settings import ENGINE_ARCHITECTURES, read_checkpoint_config
from kvplan.engines.trtllm.build_settings import is_checkpoint_config as is_checkpoint_config
from kvplan.engines.runtime.options import exact_float

# `kind  flags...`: int, float, str (one value), flag (no value), multi (repeatable)
_SERVE = """
    str    --tokenizer
    str    --custom_tokenizer
    str    --host
    int    --port
    str    --backend
    multi  --custom_module_dirs
    str    --log_level
    int    --max_beam_width
    int    --max_batch_size
    int    --max_num_tokens
    int    --max_seq_len
    int    --tensor_parallel_size --tp_size
    int    --pipeline_parallel_size --pp_size
    int    --context_parallel_size --cp_size
    int    --moe_expert_parallel_size --ep_size
    int    --moe_cluster_parallel_size --cluster_size
    int    --gpus_per_node
    float  --free_gpu_memory_fraction --kv_cache_free_gpu_memory_fraction
    int    --num_postprocess_workers
    flag   --trust_remote_code
    str    --revision
    str    --config --extra_llm_api_options
    str    --reasoning_parser
    str    --tool_parser
    str    --metadata_server_config_file
    str    --server_role
    flag   --fail_fast_on_attention_window_too_large
    str    --otlp_traces_endpoint
    str    --disagg_cluster_uri
    flag   --enable_chunked_prefill
    str    --media_io_kwargs
    str    --chat_template
"""
BACKENDS = ("pytorch", "tensorrt", "trt", "_autodeploy")  # serve.py ChoiceWithAlias, trt = tensorrt


@dataclass(frozen=True)
class Option:
    dest: str
    kind: str
    flags: tuple[str, ...]


def _options() -> dict[str, Option]:
    out = {}
    for line in _SERVE.strip().splitlines():
        kind, *flags = line.split()
        dest = "extra_llm_api_options" if flags[0] == "--config" else flags[0][2:]
        for flag in flags:
            out[flag] = Option(dest, kind, tuple(flags))
    return out


OPTIONS = _options()

# the trtllm-serve flags whose values change what kvplan judges (the rest: the server, the tokenizer, logging)
_RELEVANT = frozenset({"tensor_parallel_size", "pipeline_parallel_size", "context_parallel_size",
                       "moe_expert_parallel_size", "max_batch_size", "max_num_tokens", "max_seq_len",
                       "free_gpu_memory_fraction", "backend", "extra_llm_api_options"})


def option_info(version: str | None = None) -> Callable[[str], tuple[bool | None, bool]]:
    """flag -> (whether it takes a value, None for an option trtllm-serve lacks; whether its value changes what
    kvplan judges), for `kvplan check` to tell which values a file leaves to the environment it can drop. The table
    is the 1.x line's whatever the release (`version` is not read)."""
    def info(flag: str) -> tuple[bool | None, bool]:
        opt = OPTIONS.get(flag)
        if opt is None:
            return None, True
        return opt.kind != "flag", opt.dest in _RELEVANT
    return info

# LLM-API fields (tensorrt_llm/llmapi/llm_args.py TorchLlmArgs) seen in deployment files, and what each does to
# GPU memory in kvplan's TensorRT-LLM model (kvplan/engines/trtllm/engine.py):
#   "modelled": read onto the engine request;  "none": no effect on the KV pool or the budget;
#   "note": judged with the engine's defaults for it, and said so;  a reason string: not modelled (cannot judge)
LLM_API: dict[str, str] = {
    "model": "modelled", "tokenizer": "none", "backend": "modelled", "tensor_parallel_size": "modelled",
    "pipeline_parallel_size": "modelled", "moe_expert_parallel_size": "modelled", "max_batch_size": "modelled",
    "max_num_tokens": "modelled", "max_seq_len": "modelled", "kv_cache_config": "modelled",
    "trust_remote_code": "none", "revision": "none", "enable_chunked_prefill": "none", "disable_overlap_scheduler": "none",
    "print_iter_log": "none", "enable_autotuner": "none", "stream_interval": "none", "num_postprocess_workers": "none",
    "return_perf_metrics": "none", "enable_iter_perf_stats": "none", "reasoning_parser": "none", "gpus_per_node": "none",
    "max_beam_width": "none", "scheduler_config": "none", "cuda_graph_config": "note",
    "moe_config": "note", "attn_backend": "note",
    # read onto --engine-option keys (engine_options below; kvplan/engines/trtllm/features.py)
    "enable_attention_dp": "modelled", "speculative_config": "modelled", "cache_transceiver_config": "modelled",
    # context parallelism skips the profiled estimate (_util.py KvCacheCreator.try_prepare_estimation: no estimation
    # with a cp_type) and splits the KV over the ranks (Helix, star attention)
    "context_parallel_size": "the KV cache split across context-parallel ranks, sized without the profiling run",
    # lora_config: the PEFT cache (features.py lora_terms) when max_loras and lora_target_modules are given
    "lora_config": "modelled",
    "quant_config": "quantization set at load time",
    # its fields (num_device_module_layer, device_cache_percent, optimal/max adapter sizes) override lora_config's
    "peft_cache_config": "the PEFT cache's own sizing fields (kvplan sizes it from lora_config alone)",
}
KV_CACHE_CONFIG: dict[str, str] = {
    "free_gpu_memory_fraction": "modelled", "dtype": "modelled", "tokens_per_block": "modelled",
    "enable_block_reuse": "none", "host_cache_size": "none", "onboard_blocks": "none", "event_buffer_max_size": "none",
    "enable_partial_reuse": "none", "copy_on_partial_reuse": "none",
    # KvCacheCreator.configure_kv_cache_capacity: the smaller of each and the fraction's budget
    "max_tokens": "modelled", "max_gpu_total_bytes": "modelled",
    "max_attention_window": "modelled",  # at or above max_seq_len; shorter windows exit 3 (features.py)
    "use_kv_cache_manager_v2": "KVCacheManager V2 (kvplan models V1)",
}


@dataclass(frozen=True)
class ServeArgs:
    """A trtllm-serve launch: the flags given, and the LLM-API mapping after the YAML was merged over them."""

    model: str | None
    flags: Mapping[str, Any]  # dest -> value, for the flags the command line gives
    written: Mapping[str, str]  # dest -> the flag or key as written (for error locations)
    llm_api: Mapping[str, Any]  # the effective LLM-API options (flags, with the YAML over them)
    extra_file: str | None = None
    notes: tuple[str, ...] = field(default=())


def parse_argv(tokens: list[str], *, where: str, load_config: Callable[[str], Any] | None = None,
               model_later: bool = False) -> ServeArgs:
    """`trtllm-serve [serve] MODEL --flag value ...` words (after the program name) -> ServeArgs. `model_later`: the
    words may end before MODEL, which comes with arguments given where the container starts (its llm_api then names
    no model, which the caller says)."""
    tokens = list(tokens)
    if tokens[:1] == ["serve"]:
        tokens = tokens[1:]
    values: dict[str, Any] = {}
    written: dict[str, str] = {}
    model = None
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("--"):
            if model is not None:
                raise InputError(f"trtllm-serve would refuse it: got unexpected extra argument ({token})", where=where)
            model = token
            continue
        name, eq, inline = token.partition("=")
        opt = OPTIONS.get(name)
        if opt is None:
            names = sorted({f[2:] for f in OPTIONS})
            raise InputError(f"trtllm-serve has no option {name!r}", where=f"{where}: {name}",
                             hint=did_you_mean(name[2:], names) or "see `trtllm-serve serve --help`")
        written.setdefault(opt.dest, name)
        if opt.kind == "flag":
            if eq:
                raise InputError(f"{name} is a flag and takes no value", where=f"{where}: {name}")
            values[opt.dest] = True
            continue
        if eq:
            raw = inline
        else:
            if i >= len(tokens):
                raise InputError(f"trtllm-serve would refuse it: option {name} requires an argument", where=f"{where}: {name}")
            raw = tokens[i]
            i += 1
        values[opt.dest] = _convert(opt, raw, where=f"{where}: {name}") if opt.kind != "multi" else \
            tuple(values.get(opt.dest, ())) + (raw,)
    if model is None and not model_later:
        raise InputError("trtllm-serve would refuse it: missing argument 'MODEL'", where=where,
                         hint="trtllm-serve MODEL [options]")
    backend = values.get("backend")
    if backend is not None and backend not in BACKENDS:
        raise InputError(f"trtllm-serve would refuse it: {backend!r} is not one of pytorch, tensorrt, _autodeploy",
                         where=f"{where}: {written['backend']}")
    llm_api = _from_flags(model, values)
    notes: list[str] = []
    extra_file = values.get("extra_llm_api_options")
    if extra_file is not None:
        if load_config is None:
            raise InputError(f"{written['extra_llm_api_options']} is not readable here", where=where)
        extra = load_config(extra_file)
        check_llm_api(extra, where=extra_file)
        if "kv_cache_config" in (extra or {}) and "free_gpu_memory_fraction" in values \
                and "free_gpu_memory_fraction" not in (extra.get("kv_cache_config") or {}):
            notes.append(f"{extra_file}: kv_cache_config replaces the one {written['free_gpu_memory_fraction']} built "
                         "(update_llm_args_with_extra_dict): the fraction is TensorRT-LLM's default 0.9")
        llm_api = {**llm_api, **(extra or {})}
        # the file's values win over the flags (update_llm_args_with_extra_dict): an error about one names its key there
        for dest in extra or {}:
            written[str(dest)] = f"{extra_file}: {dest}"
        for dest in (extra or {}).get("kv_cache_config") or {}:
            written[f"kv_cache_config.{dest}"] = f"{extra_file}: kv_cache_config.{dest}"
    return ServeArgs(model=model, flags=values, written=written, llm_api=llm_api, extra_file=extra_file, notes=tuple(notes))


def _convert(opt: Option, raw: str, *, where: str) -> Any:
    try:
        if opt.kind == "int":
            return int(raw)
        if opt.kind == "float":
            return exact_float(raw)
    except ValueError:
        raise InputError(f"trtllm-serve would refuse it: {raw!r} is not a valid {opt.kind}", where=where) from None
    return raw


def _from_flags(model: str | None, values: Mapping[str, Any]) -> dict[str, Any]:
    """The LLM-API mapping serve() builds from its flags (get_llm_args): kv_cache_config from the fraction."""
    out: dict[str, Any] = {"model": model}
    for dest in ("tensor_parallel_size", "pipeline_parallel_size", "context_parallel_size", "moe_expert_parallel_size",
                 "max_batch_size", "max_num_tokens", "max_seq_len", "backend", "trust_remote_code", "max_beam_width",
                 "enable_chunked_prefill", "gpus_per_node", "revision"):
        if dest in values:
            out[dest] = values[dest]
    if "free_gpu_memory_fraction" in values:
        out["kv_cache_config"] = {"free_gpu_memory_fraction": values["free_gpu_memory_fraction"]}
    return out


def check_llm_api(data: Any, *, where: str) -> None:
    """An LLM-API options mapping: a mapping of known shapes (values are checked where they are read)."""
    if data is None:
        return
    if not isinstance(data, Mapping):
        raise InputError(f"LLM-API options are a mapping of field: value, got {type(data).__name__}", where=where)
    kv = data.get("kv_cache_config")
    if kv is not None and not isinstance(kv, Mapping):
        raise InputError("kv_cache_config must be a mapping", where=f"{where}: kv_cache_config")


# speculative_config fields (llm_args.py MTPDecodingConfig / EagleDecodingConfig / DecodingBaseConfig): the
# --engine-option key each is read onto, "none" for those that change no memory
SPECULATIVE_KEYS: dict[str, str] = {
    "decoding_type": "speculative_config.decoding_type",
    "num_nextn_predict_layers": "speculative_config.num_nextn_predict_layers",
    "max_draft_len": "speculative_config.max_draft_len", "num_eagle_layers": "speculative_config.num_eagle_layers",
    "eagle3_one_model": "speculative_config.eagle3_one_model",
    "speculative_model_dir": "speculative_config.speculative_model_dir",
    "speculative_model": "speculative_config.speculative_model_dir",
    "use_relaxed_acceptance_for_thinking": "none", "relaxed_topk": "none", "relaxed_delta": "none",
    "greedy_sampling": "none", "posterior_threshold": "none", "load_format": "none", "acceptance_length_threshold": "none",
}
# lora_config fields (lora_helper.py LoraConfig)
LORA_KEYS: dict[str, str] = {
    "max_lora_rank": "lora_config.max_lora_rank", "max_loras": "lora_config.max_loras",
    "max_cpu_loras": "lora_config.max_cpu_loras", "lora_target_modules": "lora_config.lora_target_modules",
    "lora_dir": "none", "lora_ckpt_source": "none", "trtllm_modules_to_hf_modules": "none",
    "swap_gate_up_proj_lora_b_weight": "none",
}
# cache_transceiver_config fields (llm_args.py CacheTransceiverConfig)
TRANSCEIVER_KEYS: dict[str, str] = {
    "backend": "cache_transceiver_config.backend", "max_tokens_in_buffer": "cache_transceiver_config.max_tokens_in_buffer",
    "transceiver_runtime": "cache_transceiver_config.transceiver_runtime", "kv_transfer_timeout_ms": "none",
    "kv_transfer_sender_future_timeout_ms": "none",
}


def engine_options(llm_api: Mapping[str, Any], *, where: str, base_dir=None) -> dict[str, str]:
    """The LLM-API options kvplan's TensorRT-LLM engine reads as --engine-option keys (enable_attention_dp, the
    fields of speculative_config and cache_transceiver_config, kv_cache_config's caps), as text. A nested field
    kvplan does not know is "cannot judge" (exit 3)."""
    from pathlib import Path

    out: dict[str, str] = {}
    if llm_api.get("enable_attention_dp"):
        out["enable_attention_dp"] = "true"
    for field_name, table in (("speculative_config", SPECULATIVE_KEYS), ("cache_transceiver_config", TRANSCEIVER_KEYS),
                              ("lora_config", LORA_KEYS)):
        value = llm_api.get(field_name)
        if not value:
            continue
        if not isinstance(value, Mapping):
            raise InputError(f"{field_name} must be a mapping", where=f"{where}: {field_name}")
        for key, item in value.items():
            target = table.get(str(key))
            if target is None:
                raise UnsupportedError(f"{field_name}.{key} is set (a field kvplan's table does not know); kvplan does "
                                       "not model it", where=f"{where}: {field_name}.{key}",
                                       hint="kvplan refuses rather than guesses")
            if target == "none" or item is None:
                continue
            text = (str(item).lower() if isinstance(item, bool) else
                    ",".join(map(str, item)) if isinstance(item, (list, tuple)) else str(item))
            if target.endswith("speculative_model_dir") and base_dir is not None and not Path(text).is_absolute():
                text = str(Path(base_dir) / text)
            out[target] = text
    kv = llm_api.get("kv_cache_config") or {}
    for key in ("max_tokens", "max_gpu_total_bytes"):
        if kv.get(key) is not None:
            out[key] = str(kv[key])
    if kv.get("max_attention_window") is not None:
        windows = kv["max_attention_window"]
        out["max_attention_window"] = ",".join(map(str, windows)) if isinstance(windows, (list, tuple)) else str(windows)
    return out


def unmodelled(llm_api: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, why) for each LLM-API option kvplan cannot judge: not modelled, or not known to kvplan."""
    out = []
    for key, value in llm_api.items():
        kind = LLM_API.get(key)
        if kind is None:
            out.append((key, "an LLM-API option kvplan's table does not know"))
        elif kind not in ("modelled", "none", "note"):
            if key == "enable_attention_dp" and not value:
                continue
            if key == "context_parallel_size" and value in (None, 1):
                continue
            if key in ("speculative_config", "lora_config", "quant_config", "cache_transceiver_config") and not value:
                continue
            out.append((key, kind))
    kv = llm_api.get("kv_cache_config") or {}
    for key in kv:
        kind = KV_CACHE_CONFIG.get(key)
        if kind is None:
            out.append((f"kv_cache_config.{key}", "a kv_cache_config field kvplan's table does not know"))
        elif kind not in ("modelled", "none"):
            out.append((f"kv_cache_config.{key}", kind))
    backend = llm_api.get("backend")
    if backend not in (None, "pytorch"):
        why = (f"the {backend} backend: MODEL is an engine directory, whose config.json holds the model as built, its "
               "quantization, TP and build settings, which kvplan reads only inside the repository, or a Hugging Face "
               "model that trtllm-serve builds into an engine at start-up") \
            if backend in ("tensorrt", "trt") else \
            f"the {backend} backend (kvplan models the PyTorch and TensorRT-engine backends)"
        out.append(("backend", why))
    # what kvplan knows not to model first: it is the better reason than an option it does not know
    return sorted(out, key=lambda item: "does not know" in item[1])


def checkpoint_config(doc: Any, *, where: str):
    """A TensorRT-LLM checkpoint's config.json (trtllm-serve CKPT_DIR --backend tensorrt builds it at start-up) read as
    build_settings.EngineDir without build settings, its errors located at the file's key like engine_dir_config's."""
    try:
        return read_checkpoint_config(doc)
    except EngineConfigError as err:
        raise (UnsupportedError if err.unmodelled else InputError)(str(err), where=f"{where}: {err.key}") from None


def engine_dir_config(doc: Any, *, where: str):
    """An engine directory's config.json (trtllm-serve ENGINE_DIR --backend tensorrt) read as build_settings.EngineDir,
    its errors located at the file's key: a setting kvplan does not model exits 3, a file that is no engine config 2."""
    try:
        return read_engine_config(doc)
    except EngineConfigError as err:
        raise (UnsupportedError if err.unmodelled else InputError)(str(err), where=f"{where}: {err.key}") from None


def engine_architectures() -> tuple[str, ...]:
    """The architectures whose TensorRT-LLM conversion kvplan reads (build_settings.ENGINE_ARCHITECTURES): an engine's
    config.json of another, or a Hugging Face model of another that trtllm-serve would build, is refused by name."""
    return tuple(ENGINE_ARCHITECTURES)
