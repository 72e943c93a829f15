"""What a `vllm serve` launch's extra options mean for kvplan: ServeArgs (serve_args.py) -> the Features record every
command judges with (kvplan/engines/features/), and the model as the launch changes it (--hf-overrides).

One function for every way a launch reaches kvplan: `kvplan check` (a vLLM config file, a command line, kvplan's own
deployment YAML with vLLM's option names) and `kvplan estimate / sweep / explain --vllm-args`. Pure of typer and rich;
the draft model of a speculative_config is found the way MODEL is (bundled name, spec YAML, config.json, folder).
"""

from __future__ import annotations

import dataclasses
import json
import math
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping

from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.core.spec import ModelSpec, spec_from_mapping
from kvplan.engines.features import Features
from kvplan.engines.features import disagg, lora, offload, parallel, speculative
from kvplan.engines.vllm import option_rules, serve_args, quant_methods
from kvplan.model import catalog, hf_config
from kvplan.core import dtypes

GIB = 2**30

# the options this module turns into Features (removed from serve_args.NOT_MODELLED)
FEATURE_OPTIONS = (
    "speculative_config", "spec_method", "spec_model", "spec_tokens", "enable_lora", "max_loras", "max_lora_rank",
    "lora_dtype", "max_cpu_loras", "fully_sharded_loras", "lora_target_modules", "cpu_offload_gb", "cpu_offload_params",
    "kv_offloading_size", "kv_offloading_backend", "kv_transfer_config", "data_parallel_size", "enable_expert_parallel",
    "decode_context_parallel_size", "prefill_context_parallel_size", "enable_eplb", "eplb_config", "all2all_backend",
    "nnodes", "data_parallel_size_local", "quantization", "kv_cache_dtype_skip_layers", "mamba_cache_dtype",
    "mamba_ssm_cache_dtype", "disable_sliding_window", "hf_overrides", "num_gpu_blocks_override", "attention_backend",
    "attention_config", "language_model_only", "limit_mm_per_prompt",
)


def _json(value: Any, *, where: str) -> Any:
    if value is None or isinstance(value, (Mapping, list)):
        return value
    try:
        return json.loads(value)
    except (TypeError, json.JSONDecodeError) as err:
        raise InputError(f"is not JSON: {err}", where=where) from None


def _gib(value: Any, *, where: str) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"must be a number of GiB, got {value!r}", where=where) from None
    if not math.isfinite(number) or number < 0:  # a YAML .nan or .inf reaches here as a float
        # shown as written: an exact value is a Fraction, whose str is '-3/2'
        raise InputError(f"must be a finite number of GiB, not negative, got {number:g}", where=where)
    return int(number * GIB)


def read(args: serve_args.ServeArgs, spec: ModelSpec, raw_config: tuple | None, *, where: str, tp: int,
         base_dir: Path | None = None, resolve: Callable[[str], ModelSpec] | None = None) -> tuple[Features, ModelSpec, list[str]]:
    """The Features of a launch, the model as the launch builds it, and notes. `where` names the source; each option's
    errors name its own key. The options are read a group at a time, in the order below."""
    at = partial(_where, args, where)
    notes: list[str] = []
    fields: dict[str, Any] = {}

    if _given(args, "hf_overrides"):
        spec = apply_hf_overrides(spec, raw_config, _json(args.get("hf_overrides"), where=at("hf_overrides")),
                                  where=at("hf_overrides"))
        notes.append("hf_overrides applied to the model's config.json")
    _read_speculative(args, where, spec, tp, base_dir, resolve, fields)
    if args.get("enforce_eager"):
        fields["enforce_eager"] = True
    _read_lora(args, where, fields, notes)
    _read_offload(args, where, tp, fields)
    _read_connectors(args, where, fields, notes)
    _read_parallel(args, where, tp, fields)
    _read_rest(args, where, fields, notes)
    return Features(**fields), spec, notes


def _where(args: serve_args.ServeArgs, where: str, dest: str) -> str:
    """Where an option's error points: the source, and the option as the launch wrote it."""
    return f"{where}: {args.written.get(dest, dest)}"


def _given(args: serve_args.ServeArgs, dest: str) -> bool:
    """The launch sets the option to something (not left out, not empty)."""
    return args.given(dest) and args.get(dest) not in (None, False, [], "", "{}")


def _read_speculative(args: serve_args.ServeArgs, where: str, spec: ModelSpec, tp: int, base_dir: Path | None,
                      resolve: Callable[[str], ModelSpec] | None, fields: dict[str, Any]) -> None:
    """Speculative decoding: --speculative-config, or the --spec-* flags over it."""
    at = partial(_where, args, where)
    given = partial(_given, args)
    spec_config = None
    if given("speculative_config"):
        value = args.get("speculative_config")
        if value == "<set by sub-keys>":
            raise UnsupportedError("speculative_config given by dotted sub-keys is not read", where=at("speculative_config"),
                                   hint="give it as one JSON object")
        spec_config = speculative.read_config(value, where=at("speculative_config"))
    if any(given(d) for d in ("spec_method", "spec_model", "spec_tokens")):
        spec_config = dict(spec_config or {})
        for dest, key in (("spec_method", "method"), ("spec_model", "model"), ("spec_tokens", "num_speculative_tokens")):
            if given(dest):
                spec_config[key] = args.get(dest)
    if spec_config is not None:
        fields["speculative"] = speculative_options(spec_config, spec, tp=tp, where=at("speculative_config"),
                                                    base_dir=base_dir, resolve=resolve)


def _read_lora(args: serve_args.ServeArgs, where: str, fields: dict[str, Any], notes: list[str]) -> None:
    """LoRA adapter slots (--enable-lora and its sizes)."""
    at = partial(_where, args, where)
    given = partial(_given, args)
    if args.get("enable_lora"):
        targets = args.get("lora_target_modules")
        fields["lora"] = lora.LoraOptions(
            max_loras=args.get("max_loras", lora.DEFAULT_SLOTS), max_lora_rank=args.get("max_lora_rank", lora.DEFAULT_RANK),
            lora_dtype=args.get("lora_dtype"), fully_sharded=bool(args.get("fully_sharded_loras")),
            max_cpu_loras=args.get("max_cpu_loras"), target_modules=tuple(targets) if targets else None,
            where=at("enable_lora"))
        lora.validate(fields["lora"])
    elif any(given(d) for d in ("max_loras", "max_lora_rank", "max_cpu_loras", "fully_sharded_loras")):
        notes.append("LoRA sizes are set but --enable-lora is not: vLLM allocates no adapter slots")


def _read_offload(args: serve_args.ServeArgs, where: str, tp: int, fields: dict[str, Any]) -> None:
    """Weight offload (--cpu-offload-gb) and KV offload (--kv-offloading-size)."""
    at = partial(_where, args, where)
    given = partial(_given, args)
    # a negative size is refused as vLLM refuses it (config/offload.py cpu_offload_gb: Field(ge=0), 0.13+; 0.10's
    # CacheConfig raised "CPU offload space must be non-negative")
    offload_bytes = _gib(args.get("cpu_offload_gb"), where=at("cpu_offload_gb")) if given("cpu_offload_gb") else 0
    if offload_bytes > 0:
        fields["weight_offload"] = offload.WeightOffloadOptions(
            cpu_offload_bytes=offload_bytes, params=tuple(args.get("cpu_offload_params") or ()),
            where=at("cpu_offload_gb"))
    if given("kv_offloading_size"):
        backend = args.get("kv_offloading_backend") or "native"
        size = _gib(args.get("kv_offloading_size"), where=at("kv_offloading_size"))
        if backend == "lmcache":
            rules = option_rules.rules(args.version)
            if rules.lmcache_offload == "LMCacheConnectorV1":
                # 0.11.2-0.23 config/vllm.py _post_init_kv_transfer_config: LMCacheConnectorV1 with
                # lmcache.max_local_cpu_size = size / (TP x PP) per rank
                ranks = tp * int(args.get("pipeline_parallel_size") or 1)
                fields["kv_offload"] = offload.KvOffloadOptions(backend="lmcache", lmcache_cpu_bytes=size // ranks,
                                                                where=at("kv_offloading_size"))
            else:
                rules.refuse("--kv-offloading-backend lmcache starts LMCacheMPConnector (0.24+), whose size the LMCache "
                             "server sets (kv_offloading_size is not passed on)", where=at("kv_offloading_backend"),
                             hint="describe the LMCache tier in kvplan's YAML")
        else:
            fields["kv_offload"] = offload.KvOffloadOptions(backend="native", size_bytes=size, where=at("kv_offloading_size"))


def _read_connectors(args: serve_args.ServeArgs, where: str, fields: dict[str, Any], notes: list[str]) -> None:
    """KV connectors (--kv-transfer-config: disaggregated prefill / decode, LMCache, offloading connectors)."""
    at = partial(_where, args, where)
    given = partial(_given, args)
    if given("kv_transfer_config"):
        value = args.get("kv_transfer_config")
        if value == "<set by sub-keys>":
            raise UnsupportedError("kv_transfer_config given by dotted sub-keys is not read", where=at("kv_transfer_config"),
                                   hint="give it as one JSON object")
        rules = option_rules.rules(args.version)
        transfer = disagg.read_config(value, where=at("kv_transfer_config"), connectors=rules.connectors,
                                      release=rules.version)
        fields["kv_transfer"] = transfer
        if transfer.connector.startswith("LMCache") and "kv_offload" not in fields:
            extra = dict(transfer.extra)
            cpu = extra.get("lmcache.max_local_cpu_size")
            fields["kv_offload"] = offload.KvOffloadOptions(
                backend="lmcache", lmcache_cpu_bytes=_gib(cpu, where=at("kv_transfer_config")) if cpu is not None else None,
                lmcache_disk_bytes=_gib(extra.get("lmcache.max_local_disk_size", 0), where=at("kv_transfer_config")),
                where=at("kv_transfer_config"))
            if cpu is None:
                notes.append("LMCache's max_local_cpu_size is not in the launch (its LMCACHE_* environment or config "
                             "file sets it): LMCache's default of 5 GiB per worker assumed")
        if transfer.connector in ("OffloadingConnector", "SimpleCPUOffloadConnector") and "kv_offload" not in fields:
            cpu = transfer.extra_value("cpu_bytes_to_use")
            if cpu is None:
                raise InputError("the offloading connector needs cpu_bytes_to_use in kv_connector_extra_config",
                                 where=at("kv_transfer_config"))
            fields["kv_offload"] = offload.KvOffloadOptions(
                backend="native", size_bytes=int(float(cpu)),
                blocks_per_chunk=int(transfer.extra_value("blocks_per_chunk", 1)), where=at("kv_transfer_config"))


def _read_parallel(args: serve_args.ServeArgs, where: str, tp: int, fields: dict[str, Any]) -> None:
    """Data, expert and context parallelism, EPLB's redundant experts, nodes."""
    at = partial(_where, args, where)
    given = partial(_given, args)
    redundant = 0
    if given("eplb_config"):
        eplb = _json(args.get("eplb_config"), where=at("eplb_config")) or {}
        redundant = int(eplb.get("num_redundant_experts", 0)) if isinstance(eplb, Mapping) else 0
    par = parallel.ParallelOptions(
        data_parallel_size=int(args.get("data_parallel_size") or 1),
        expert_parallel=bool(args.get("enable_expert_parallel")),
        decode_context_parallel_size=int(args.get("decode_context_parallel_size") or 1),
        prefill_context_parallel_size=int(args.get("prefill_context_parallel_size") or 1),
        redundant_experts=redundant if args.get("enable_eplb") else 0,
        all2all_backend=args.get("all2all_backend") if given("all2all_backend") else None,
        nodes=int(args.get("nnodes")) if given("nnodes") else None,
        # --data-parallel-size-local: the DP ranks on this node, each TP x PP x PCP GPUs
        gpus_per_node=(int(args.get("data_parallel_size_local")) * tp * int(args.get("pipeline_parallel_size") or 1)
                       * int(args.get("prefill_context_parallel_size") or 1)) if given("data_parallel_size_local") else None,
        where=where)
    if not par.default:
        fields["parallel"] = par


def _read_rest(args: serve_args.ServeArgs, where: str, fields: dict[str, Any], notes: list[str]) -> None:
    """The rest of the list: quantization, KV dtypes, sliding window, block override, attention backend, multimodal limits."""
    at = partial(_where, args, where)
    given = partial(_given, args)
    quant = args.get("quantization") if given("quantization") else None
    if quant is not None:
        fields["quantization"] = str(quant)
    if given("kv_cache_dtype_skip_layers"):
        fields["kv_cache_dtype_skip_layers"] = tuple(str(x) for x in args.get("kv_cache_dtype_skip_layers"))
    for dest in ("mamba_cache_dtype", "mamba_ssm_cache_dtype"):
        if given(dest) and args.get(dest) != "auto":
            fields[dest] = args.get(dest)
    if args.get("disable_sliding_window"):
        fields["disable_sliding_window"] = True
    if given("num_gpu_blocks_override"):
        fields["num_gpu_blocks_override"] = int(args.get("num_gpu_blocks_override"))
    backend_name = args.get("attention_backend") if given("attention_backend") else None
    if given("attention_config"):
        cfg = _json(args.get("attention_config"), where=at("attention_config")) or {}
        if not isinstance(cfg, Mapping) or set(cfg) - {"backend"}:
            raise UnsupportedError("attention_config keys other than backend are not modelled", where=at("attention_config"))
        backend_name = cfg.get("backend") or backend_name
    if backend_name:
        fields["attention_backend"] = str(backend_name)
    if args.get("language_model_only"):
        fields["language_model_only"] = True
    if given("limit_mm_per_prompt"):
        limits = _json(args.get("limit_mm_per_prompt"), where=at("limit_mm_per_prompt"))
        if isinstance(limits, Mapping) and limits and all(_zero_limit(v) for v in limits.values()):
            fields["text_only"] = True
        else:
            notes.append("limit_mm_per_prompt: the encoder profile is counted as with vLLM's defaults")


def _zero_limit(value: Any) -> bool:
    if isinstance(value, Mapping):
        return value.get("count", 1) == 0
    return value == 0


def speculative_options(config: Mapping, spec: ModelSpec, *, tp: int, where: str, base_dir: Path | None = None,
                        resolve: Callable[[str], ModelSpec] | None = None) -> speculative.SpeculativeOptions:
    """A speculative_config with its method resolved and its draft found."""
    model = config.get("model")
    method = speculative.resolve_method(config.get("method"), model, where=where)
    k = config.get("num_speculative_tokens")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise InputError(f"num_speculative_tokens must be a whole number of at least 1, got {k!r}",
                         where=f"{where}: num_speculative_tokens")
    draft_tp = config.get("draft_tensor_parallel_size")
    base = dict(method=method, model=model, draft_tensor_parallel_size=draft_tp,
                kv_cache_dtype=config.get("kv_cache_dtype"), where=where)
    if method in speculative.HOST_METHODS:
        if k is None:
            raise InputError("num_speculative_tokens is required for n-gram and suffix methods", where=where)
        return speculative.SpeculativeOptions(num_speculative_tokens=k, **base)
    if method == "mtp":
        if spec.mtp is None:
            raise UnsupportedError(f"{spec.name}'s config names no multi-token-prediction layers (num_nextn_predict_layers)",
                                   where=f"{where}: method", hint="MTP needs a checkpoint that ships them (DeepSeek-V3)")
        if k is not None and k > spec.mtp.layers and k % spec.mtp.layers:
            raise InputError(f"vLLM refuses num_speculative_tokens:{k}: it must be divisible by n_predict="
                             f"{spec.mtp.layers}", where=f"{where}: num_speculative_tokens")
        return speculative.SpeculativeOptions(num_speculative_tokens=k or spec.mtp.layers, **base)
    if not model:
        raise InputError("num_speculative_tokens was provided but without speculative model (vLLM refuses it)",
                         where=where, hint="name the draft with `model`")
    if k is None:
        raise InputError("a speculative model was provided, but num_speculative_tokens was not (vLLM refuses it)",
                         where=where, hint="add num_speculative_tokens")
    if method == "draft_model":
        draft = _resolve_draft(str(model), base_dir=base_dir, resolve=resolve, where=f"{where}: model")
        if draft.vocab_size and spec.vocab_size and draft.vocab_size != spec.vocab_size:
            raise InputError(f"vLLM refuses a draft model whose vocabulary ({draft.vocab_size}) differs from the target's "
                             f"({spec.vocab_size})", where=f"{where}: model")
        return speculative.SpeculativeOptions(num_speculative_tokens=k, draft_spec=draft, **base)

    what = "the DFlash drafter" if method == "dflash" else "the EAGLE head"
    raw = hf_config.load_draft_config(str(model), base_dir=base_dir, where=f"{where}: model", what=what,
                                      hint="give the head's folder or config.json")
    read = speculative.dflash_head(raw, where=f"{where}: model") if method == "dflash" else \
        speculative.eagle_head(raw, method=method, where=f"{where}: model")
    head = dataclasses.replace(read, name=str(model))
    return speculative.SpeculativeOptions(num_speculative_tokens=k, head=head, **base)


def _resolve_draft(ref: str, *, base_dir: Path | None, resolve, where: str) -> ModelSpec:
    path = Path(ref).expanduser()
    if base_dir is not None and not path.is_absolute() and (base_dir / path).exists():
        ref = str(base_dir / path)
    try:
        return (resolve or catalog.resolve_model)(ref)
    except KvplanError as err:
        raise UnsupportedError(f"the draft model {ref!r} cannot be found offline: {err.what}", where=where,
                               hint="name a bundled model (kvplan models) or give the draft's config.json or folder") from None


# hf_overrides keys that move positions, not the cache: RoPE's scaling (and base) stretch the length a model takes;
# no layer, head or head size changes (transformers' rope_scaling / rope_parameters, rope_theta)
ROPE_KEYS = frozenset({"rope_scaling", "rope_parameters", "rope_theta"})


def _merged(config: Mapping, overrides: Mapping) -> dict:
    """config.json with hf_overrides applied as vLLM applies them: a mapping merges into the sub-config of its name."""
    out = json.loads(json.dumps(config))

    def merge(target: dict, changes: Mapping) -> None:
        for key, value in changes.items():
            if isinstance(value, Mapping) and isinstance(target.get(key), dict):
                merge(target[key], value)
            else:
                target[key] = value

    merge(out, overrides)
    return out


def overridden_config(spec: ModelSpec, raw_config: tuple | None, overrides: Any) -> tuple | None:
    """(config.json, tokenizer_config) as the launch's hf_overrides change it, for the length vLLM derives from it
    (serve_args.derived_max_model_len). A bundled model has no config.json: with RoPE-only overrides its length is
    derived from its own maximum context and the overrides' scaling (the cache's shape does not change)."""
    if not isinstance(overrides, Mapping) or not overrides:
        return raw_config
    if raw_config is not None:
        return _merged(raw_config[0], overrides), raw_config[1]
    if set(map(str, overrides)) <= ROPE_KEYS and spec.max_context:
        return _merged({"max_position_embeddings": spec.max_context}, overrides), None
    return None


def apply_hf_overrides(spec: ModelSpec, raw_config: tuple | None, overrides: Any, *, where: str) -> ModelSpec:
    """vLLM's hf_overrides (transformers_utils/config.py): each key set on the config, a mapping merged into the
    sub-config of that name; the spec is then derived again from the changed config.json, its maximum context the
    length vLLM derives from it (a RoPE scaling override lengthens it)."""
    if not isinstance(overrides, Mapping):
        raise InputError("hf_overrides must be a JSON object", where=where)
    if not overrides:
        return spec
    if raw_config is None:
        if set(map(str, overrides)) <= ROPE_KEYS:
            _, limit = serve_args.derived_max_model_len(overridden_config(spec, None, overrides)[0])
            return dataclasses.replace(spec, max_context=int(limit)) if limit else spec
        raise UnsupportedError("hf_overrides need the model's config.json to apply them to", where=where,
                               hint="name the model by its folder or config.json rather than a bundled name "
                                    "(RoPE-only overrides are read for a bundled model)")
    config = _merged(raw_config[0], overrides)
    try:
        mapping = hf_config.spec_mapping_from_config(config, name=spec.name, where=where)
    except KvplanError as err:
        raise type(err)(err.what, where=where, hint=err.hint) from None

    new = spec_from_mapping(mapping, source=spec.source)
    _, limit = serve_args.derived_max_model_len(config, raw_config[1])
    if limit and set(map(str, overrides)) & ROPE_KEYS:
        new = dataclasses.replace(new, max_context=int(limit))
    # the checkpoint's bytes still hold when the overrides leave the parameters alone (a longer context, a window)
    same = new.params == spec.params
    return dataclasses.replace(new, aliases=spec.aliases, weights_bytes=spec.weights_bytes if same else new.weights_bytes,
                               weights_source=spec.weights_source if same else new.weights_source)


# vLLM --quantization methods that quantize a 16-bit checkpoint's linear layers when it loads, and the format kvplan
# counts them in (model_executor/layers/quantization/fp8.py Fp8LinearMethod: fp8 weights with a scale per tensor;
# embeddings, norms and the output head stay in the model dtype -- the calibration log with --quantization fp8,
# tests/data/vllm_logs, loads Llama-3.1-8B in 8.49 GiB)
ONLINE_QUANTIZATION = {"fp8": "fp8_e4m3"}


def online_quantization(args: serve_args.ServeArgs, spec, raw_config, weight_fmt, *, where: str,
                        capability: str | None = None):
    """The weight format a --quantization gives: the checkpoint's own method, or one of its kernels (awq_marlin,
    gptq_marlin, marlin: kvplan/engines/vllm/quant_methods.py), changes nothing (the checkpoint's bytes); fp8 on a
    16-bit checkpoint quantizes its linear layers; anything else is not modelled. `capability`: the GPU's SM
    version where known (vLLM's Marlin GPU rule before its Auto* configs)."""
    method = args.get("quantization")
    if not method:
        return weight_fmt
    method = str(method).lower()
    quant = (raw_config[0].get("quantization_config") or {}) if raw_config is not None else {}
    checkpoint = str(quant.get("quant_method", "")).lower() if isinstance(quant, Mapping) else ""
    if not checkpoint and raw_config is None and spec.quant_method:  # a bundled spec or a resolved model's record
        checkpoint, quant = str(spec.quant_method).lower(), None
    if checkpoint and quant_methods.accepts(checkpoint, method):
        quant_methods.check(checkpoint, method, quant, version=serve_args.check_version(args.version),
                            capability=capability, where=where)
        return weight_fmt
    if spec.weights_bytes is not None or (spec.weight_dtype or spec.dtype) not in ("bf16", "fp16", "fp32"):
        raise UnsupportedError(f"--quantization {method} on a checkpoint that is already quantized is not modelled",
                               where=where, hint="vLLM reads a checkpoint's own quantization from its config.json")
    if method not in ONLINE_QUANTIZATION:
        raise UnsupportedError(f"online quantization {method!r} is not modelled", where=where,
                               hint="kvplan models --quantization fp8 on a 16-bit checkpoint")
    return dtypes.weight_format(ONLINE_QUANTIZATION[method])
