"""`vllm serve` deployments: a `--config` YAML file, or a command line (--vllm-args, or the command a container,
service or script runs), read as vLLM reads them (the vllm engine record's option part: its serve_args.py) and
judged with the vllm engine. The GPU comes from the file around the command line (LaunchContext.gpu), else --gpu/--gpu-mem."""

from __future__ import annotations

import dataclasses


from typing import Callable, Mapping

from kvplan.check.deployment import (MAX_PARALLEL, Deployment, LaunchContext, check_vllm_max_len, default_max_len,
                                     config_loader, engine_request, resolve_model, tp_from_gpus, whole, count_origin)
from kvplan.check.report import FORMAT_DOCKERFILE, FORMAT_SHELL, FORMAT_VLLM, FORMAT_VLLM_ARGS, Origins
from kvplan import engines
from kvplan.core.errors import InputError, UnsupportedError, KvplanError
from kvplan.core.text import visible
from kvplan.check import marks
from kvplan.check.readers import vllm_env
from kvplan.core import dtypes, packaged

# environment variables that change what vLLM allocates (vllm/envs.py)
_V0 = "VLLM_USE_V1"


def _set_outside(value: str | None) -> bool:
    """Whether an environment value comes from outside the file (a secret, the deploying shell): not known here."""
    return value is None or marks.MARK in value


def _vllm() -> engines.Engine:
    """The vLLM engine's record: its option table, launch reader and release rows (kvplan/engines/api.py)."""
    return engines.get("vllm")


def allow_long(env: Mapping[str, str | None], command_line: Mapping[str, str]) -> bool | None:
    """Whether VLLM_ALLOW_LONG_MAX_MODEL_LEN lets max_model_len pass the model's limit: --engine-option first, then
    the engine's environment; None when the file sets it from outside (its value is not known)."""
    releases = _vllm().releases
    if releases.ALLOW_LONG_OPTION in command_line:
        return releases.allow_long_flag(command_line[releases.ALLOW_LONG_OPTION])
    if releases.ALLOW_LONG_ENV not in env:
        return False
    value = env[releases.ALLOW_LONG_ENV]
    return None if _set_outside(value) else releases.allow_long_flag(value)


# vLLM's integer variables that change the budget: the value judged when the file sets one from outside (a secret,
# the deploying shell), the one that leaves the least for the KV cache, so the verdict holds whatever it turns out
# to be: the native sampler needs more than FlashInfer's on every release (kvplan/engines/vllm/budget.py), and
# subtracting the CUDA-graph estimate leaves less than not
_WORST_CASE = {"VLLM_USE_FLASHINFER_SAMPLER": ("0", "vLLM's native sampler, which needs the most memory"),
               "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": ("1", "the CUDA-graph estimate taken out of the budget")}


def environment_options(env: Mapping[str, str | None], where: str) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """The engine's environment variables that change vLLM's budget, as `--engine-option` passes them, and notes."""
    releases = _vllm().releases
    options: list[tuple[str, str]] = []
    notes = []
    for name, (worst, judged) in _WORST_CASE.items():
        if name not in env:
            continue
        value = env[name]
        if _set_outside(value):
            value = worst
            notes.append(f"{name} is set outside the file: judged with {judged} (--engine-option {name}=VALUE says which)")
        else:
            releases.integer_flag(name, value, where=f"{where}: environment {name}")
        options.append((name.lower(), value))
    # VLLM_ROCM_USE_AITER (ROCm): vLLM reads any value (releases.aiter_flag); set outside the file it stays open, the
    # ROCm band covering both
    aiter = env.get(releases.ROCM_AITER_ENV)
    if aiter is not None and not _set_outside(aiter):
        options.append((releases.ROCM_AITER_OPTION, aiter))
    return tuple(options), notes


def key_style(fmt: str) -> Callable[[str], str]:
    """How a vLLM config (max-model-len) or command line (--max-model-len) spells a setting."""
    def spell(name: str) -> str:
        flag = name.replace("_", "-")
        return f"--{flag}" if fmt != "vllm-config" else flag

    return spell


def release_words(version: str | None, origin: str | None) -> str:
    mirrored = engines.release("vllm", version).mirrors
    if origin:
        return f"vLLM {mirrored} rules ({origin})"
    return f"vLLM {mirrored} rules (kvplan's default: the file pins no release)"


def read(args, ctx: LaunchContext) -> Deployment:
    """vLLM's launch arguments (its option part's parse_argv / parse_config: the engine's ServeArgs) -> Deployment."""
    vllm = _vllm()
    options, launch, releases = vllm.options, vllm.launch, vllm.releases
    where = ctx.where
    at = lambda dest: f"{where}: {args.written.get(dest, dest)}"  # noqa: E731
    key = ctx.key or key_style(ctx.fmt)
    judged = releases.release(ctx.version).mirrors
    ignored = vllm_env.ignored(ctx.env, release=judged, exact=ctx.version == judged)
    if ctx.env.get(_V0) == "0" and _V0 not in ignored:
        raise UnsupportedError(f"{_V0}=0 selects vLLM's V0 engine; kvplan models the V1 engine", where=where,
                               hint="judge the V1 launch (drop VLLM_USE_V1=0)")
    model_ref = args.get("hf_config_path") or args.model
    if not model_ref:
        raise ctx.no_model("vLLM needs `model: NAME_OR_PATH` (or the positional model on a command line)")
    found = resolve_model(model_ref, base_dir=ctx.base_dir, where=at("hf_config_path" if args.get("hf_config_path") else "model"),
                          lookup=ctx.defaults.lookup, host_paths=ctx.host_paths)
    spec = found.spec
    raw_config = (found.config, found.tokenizer_config) if found.config is not None else None
    blocked = options.unmodelled(args)
    if blocked:
        written, why = blocked[0]
        raise UnsupportedError(f"{written} is set ({why}); kvplan does not model it", where=f"{where}: {written}",
                               hint="kvplan refuses rather than guesses; `kvplan probe` measures such a launch on the GPU")
    backend = ctx.env.get("VLLM_ATTENTION_BACKEND") if "VLLM_ATTENTION_BACKEND" not in ignored else None
    if backend and any(layer.mla is not None for layer in spec.layer_specs):  # every latent kind, indexed too
        raise UnsupportedError(f"VLLM_ATTENTION_BACKEND={backend} on an MLA model: the backend sets the KV block size",
                               where=where, hint="drop it to judge vLLM's own choice")
    tp = args.get("tensor_parallel_size") if args.given("tensor_parallel_size") else None
    pp = args.get("pipeline_parallel_size", 1)
    for dest, value in (("tensor_parallel_size", tp), ("pipeline_parallel_size", pp), ("data_parallel_size", args.get("data_parallel_size", 1))):
        if value is not None:
            whole(value, where=at(dest), high=MAX_PARALLEL)
    length_config = raw_config  # the length vLLM derives is the one of the config as --hf-overrides changes it
    if args.given("hf_overrides") and args.get("hf_overrides"):
        length_config = launch.overridden_config(spec, raw_config, launch.json_value(args.get("hf_overrides"),
                                                                                    where=at("hf_overrides")))
    tp, gpus_note = tp_from_gpus(tp, pp, ctx.defaults.gpus, where=at("tensor_parallel_size"), launch=ctx.whole_launch)
    seq = args.get("max_model_len")
    # -1 / auto (0.14+; the option tables of older releases refuse 'auto', and the engine refuses -1 there): vLLM
    # starts from the derived length and fits it to the KV memory (kvplan/engines/vllm/engine.py _auto_fit)
    seq_auto = seq == -1
    if seq is None or seq_auto:
        seq = default_max_len("vllm", spec, length_config, where=where, key=key("max_model_len"))
    elif seq < 1:
        raise InputError(f"must be positive, got {seq}", where=at("max_model_len"))
    long_ok = allow_long(ctx.env, dict(ctx.defaults.engine_options or ()))
    check_vllm_max_len(seq, spec, length_config, where=at("max_model_len"), allow_long=long_ok)

    weight_fmt = None
    vllm_dtype = args.get("dtype", "auto")
    if vllm_dtype != "auto":
        # --dtype sets the activation dtype; it changes the weight bytes only of an unquantized checkpoint
        if spec.weights_bytes is None and (spec.weight_dtype or spec.dtype) in ("bf16", "fp16", "fp32", "bfloat16", "float16", "float32"):
            weight_fmt = dtypes.weight_format(options.DTYPE_WEIGHTS[vllm_dtype])
    features, spec, feature_notes = launch.read(args, spec, raw_config, where=where, tp=tp, base_dir=ctx.base_dir)
    weight_fmt = launch.online_quantization(args, spec, raw_config, weight_fmt, where=at("quantization"))
    kv_name = args.get("kv_cache_dtype", "auto")
    if kv_name not in vllm.kv_dtype_names and kv_name not in vllm.kv_formats:  # the engine judges the packed formats
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
    # every variable of the engine's environment is read, host-side, ignored by the release, or cannot be judged
    env_world_notes = vllm_env.judge(ctx.env, release=judged, exact=ctx.version == judged, where=where)
    env_options, env_notes = environment_options(ctx.env, where)
    if long_ok:  # the estimate refuses a length past max_position_embeddings unless told
        env_options += ((releases.ALLOW_LONG_OPTION, "1"),)
    choice = ctx.gpu_choice()  # after the checks that need no GPU: a wrong file is invalid whatever it runs on
    facts = choice.hardware[0].facts if choice.hardware and choice.hardware[0] is not None else None
    if facts is not None and not facts.rocm and args.given("quantization"):  # Marlin's GPU rule (quant_methods.py)
        launch.online_quantization(args, spec, raw_config, weight_fmt, where=at("quantization"),
                                   capability=facts.compute_capability)
    notes = list(ctx.notes) + list(args.notes) + list(choice.notes) + feature_notes
    notes += env_notes + env_world_notes + ([gpus_note] if gpus_note else [])
    graph = [args.written[d] for d in options.CUDA_GRAPH_OPTIONS if args.given(d)]
    if graph:
        notes.append(f"{', '.join(graph)}: CUDA-graph memory is counted as with vLLM's defaults")
    if backend:
        notes.append(f"VLLM_ATTENTION_BACKEND={backend}: blocks are sized as vLLM's default backend sizes them")
    par = features.parallel
    dp = par.data_parallel_size if par else 1
    pcp = par.prefill_context_parallel_size if par else 1
    # prefix caching decides how many Mamba state blocks a hybrid's request holds (kvplan/engines/vllm/engine.py)
    prefix_caching = args.get("enable_prefix_caching") if args.given("enable_prefix_caching") else None
    alternatives = choice.hardware[1:]
    written = lambda dest: args.written.get(dest) or key(dest)  # noqa: E731  (vLLM's dests are kvplan's names)
    request = engine_request(spec, seq=seq, kv_name=kv_name, weight_fmt=weight_fmt, tp=tp, pp=pp, gpu=choice.hardware[0],
                             util=util, reserve=None, kv_mem=kv_mem, where=where, key=written, engine_version=args.version,
                             prefix_caching=prefix_caching, features=features if features.any else None,
                             engine_options=env_options or None, **ints)  # the site profile: with_command_line
    if seq_auto:
        request = dataclasses.replace(request, seq_auto=True)
    if vllm_dtype != "auto":  # the activations' dtype, also where the weights keep the checkpoint's (gpu_dtypes.py)
        request = dataclasses.replace(request, activation_dtype=options.DTYPE_WEIGHTS[vllm_dtype])
    served = args.get("served_model_name")
    # a --config file, a command line, a script or a Dockerfile has no name of its own; a container, service or
    # resource has
    name = served[0] if served and ctx.fmt in (FORMAT_VLLM, FORMAT_VLLM_ARGS, FORMAT_SHELL, FORMAT_DOCKERFILE) else ctx.name
    # vLLM takes any served name; it is shown in every report format, so its control characters are escaped
    name = visible(str(name))
    origins = Origins(gpu=choice.origin, gpus=count_origin(choice.count_origin, tp, pp, gpus_note, ctx.defaults.gpus),
                      model=found.source.describe(), engine_release=release_words(ctx.version, ctx.release_origin))
    return Deployment(source=ctx.source, document=ctx.document, name=str(name), format=ctx.fmt, engine="vllm", request=request,
                      requirements=ctx.defaults.requirements, key=key, gpus=tp * pp * pcp * dp, notes=tuple(dict.fromkeys(notes)),
                      origins=origins, alternatives=alternatives, gpus_available=choice.count,
                      gpus_available_origin=choice.count_origin, flag_style=ctx.flag_style and ctx.fmt != "vllm-config",
                      written=written)


def read_argv(words, ctx: LaunchContext, *, positional: bool = True) -> Deployment:
    """A vLLM command line's words (after `vllm serve`), with a `--config FILE` read from the file's folder."""
    load = config_loader(ctx)

    args = refused_elsewhere(ctx, lambda version: _vllm().options.parse_argv(
        list(words), where=ctx.where, load_config=load, version=version, positional=positional))
    return read(args, ctx)


def pinned(ctx: LaunchContext) -> bool:
    """Whether the file (or --vllm-version) names the release it is judged by."""
    return ctx.version is not None


def refused_elsewhere(ctx: LaunchContext, parse):
    """parse(version) under the release the deployment is judged by. When that release refuses the options and the
    file pins none, a release kvplan mirrors that accepts them makes it cannot judge (the file may target that
    release), not invalid: an option vLLM dropped or changed is not a mistake in a file that names no release."""
    releases = _vllm().releases
    try:
        return parse(ctx.version)
    except InputError as err:
        if pinned(ctx):
            raise
        judging = releases.release(None).line
        for r in releases.RELEASES:
            if r.line == judging:
                continue
            try:
                parse(r.mirrors)
            except KvplanError:
                continue
            raise UnsupportedError(f"{err.what}; vLLM {r.mirrors} accepts it, and the file pins no release", where=err.where,
                                   hint="pin the release in the image tag (vllm/vllm-openai:vX.Y.Z) or pass --vllm-version") from None
        older = _older_release_accepting(err)
        if older is not None:
            raise UnsupportedError(f"{err.what}; vLLM {older} accepted it (a release kvplan does not model), and the file "
                                   "pins no release", where=err.where,
                                   hint="kvplan cannot judge a launch for that release; pin the release the file targets") from None
        raise


def _older_release_accepting(err: InputError) -> str | None:
    """The newest vLLM release before 0.10 whose `serve` parser took the option an error is about
    (kvplan/data/vllm_options_before_0.10.json, from each release's own parser), or None."""
    import json
    key = (err.where or "").rsplit(": ", 1)[-1].split("=", 1)[0]
    flag = key if key.startswith("-") else "--" + key.replace("_", "-")
    explicit = "ignored explicit argument" in err.what
    if not (explicit or "has no serve option" in err.what):
        return None
    table = json.loads(packaged.data_file("vllm_options_before_0.10.json").read_text(encoding="utf-8"))
    for version, flags in reversed(list(table["releases"].items())):
        kind = flags.get(flag)
        if kind is not None and (not explicit or kind == "optional"):
            return version
    return None
