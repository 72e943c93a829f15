"""SGLang launch commands (`python -m sglang.launch_server ...`, `sglang serve ...`), read with SGLang's own option
table (the sglang engine record's option part: its launch_args.py) and judged with kvplan's SGLang engine. The GPU
and the release come from the file around the command (LaunchContext)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from kvplan.check.deployment import (MAX_PARALLEL, Deployment, LaunchContext, default_max_len, engine_request,
                                     config_loader, pinned_rules, resolve_model, tp_from_gpus, whole, count_origin)
from kvplan.check import marks
from kvplan.check.report import Origins
from kvplan import engines
from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.core import dtypes
from kvplan.engines import lazy

if TYPE_CHECKING:
    from kvplan.engines import features
else:  # the launch options' record (engines/features): built for a launch that sets SGLang options, loaded then
    features = lazy.module("kvplan.engines.features")

# kvplan's names for the settings a fix turns -> SGLang's flags (kvplan/engines/sglang/__init__.py EngineFlags)
_FLAGS = {"max_model_len": "--context-length", "tensor_parallel_size": "--tp-size", "pipeline_parallel_size": "--pp-size",
          "kv_cache_dtype": "--kv-cache-dtype", "gpu_memory_utilization": "--mem-fraction-static",
          "max_num_seqs": "--max-running-requests", "block_size": "--page-size",
          "max_num_batched_tokens": "--chunked-prefill-size", "dtype": "--dtype", "model": "--model-path"}
# kvplan's setting -> SGLang's dest for it (server_args.py), to name an option as the launch wrote it (`--tp`, not
# `--tp-size`)
_DESTS = {"max_model_len": "context_length", "tensor_parallel_size": "tp_size", "pipeline_parallel_size": "pp_size",
          "gpu_memory_utilization": "mem_fraction_static", "max_num_seqs": "max_running_requests",
          "block_size": "page_size", "max_num_batched_tokens": "chunked_prefill_size", "model": "model_path"}
_DTYPES = {"half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32"}


def key(name: str) -> str:
    return _FLAGS.get(name, "--" + name.replace("_", "-"))


def read(args, ctx: LaunchContext) -> Deployment:
    """SGLang's launch arguments (its option part's parse_argv: the engine's LaunchArgs) -> Deployment."""
    sglang = engines.get("sglang")
    options = sglang.options
    where = ctx.where
    at = lambda dest: f"{where}: {args.written.get(dest, key(dest))}"  # noqa: E731
    version, release_text = ctx.version, pinned_rules("sglang", ctx)
    model_ref = args.get("model_path")
    if not model_ref:
        raise ctx.no_model("SGLang needs --model-path NAME_OR_PATH")
    found = resolve_model(model_ref, base_dir=ctx.base_dir, where=at("model_path"), lookup=ctx.defaults.lookup,
                          host_paths=ctx.host_paths)
    spec = found.spec
    # the GPUs of one replica as tp_from_gpus below will judge it: the launch's own TP x PP, or --gpus where a
    # launch given in part names no TP
    gpus = ctx.defaults.gpus
    ranks = gpus if gpus is not None and not ctx.whole_launch and not args.given("tp_size") else None
    blocked = options.unmodelled(args, ranks=ranks)
    if found.config is not None and args.get("quantization"):
        quant = found.config.get("quantization_config") or {}
        if isinstance(quant, Mapping) and str(quant.get("quant_method", "")).lower() == str(args.get("quantization")).lower():
            blocked = [b for b in blocked if b[0] != args.written.get("quantization")]
    ep = args.get("ep_size", 1)
    tp = args.get("tp_size") if args.given("tp_size") else None
    if ep not in (1, tp):
        blocked.append((args.written.get("ep_size", "--ep-size"), f"expert parallelism {ep} over a tensor parallel size {tp or 1}"))
    if blocked:
        written, why = blocked[0]
        raise UnsupportedError(f"{written} is set ({why}); kvplan does not model it", where=f"{where}: {written}",
                               hint="kvplan refuses rather than guesses; `kvplan probe` measures such a launch on the GPU")

    # disaggregation and speculative decoding: modelled from SGLang 0.5.23 (engines/sglang/features.py), which
    # refuses the algorithms and backends it does not model
    sglang.launch.refuse_environment({name: None if value is None or marks.MARK in value else value
                                      for name, value in ctx.env.items()}, where=where)
    sglang_opts = sglang.launch.read(args, spec, where=where, base_dir=ctx.base_dir)
    launch_features = features.Features(sglang=sglang_opts) if sglang_opts is not None else None
    pp = args.get("pp_size", 1)
    for dest, value in (("tp_size", tp), ("pp_size", pp), ("dp_size", args.get("dp_size", 1))):
        if value is not None:
            whole(value, where=at(dest), high=MAX_PARALLEL)
    tp, gpus_note = tp_from_gpus(tp, pp, ctx.defaults.gpus, where=at("tp_size"), launch=ctx.whole_launch)
    seq = args.get("context_length")
    if seq is None:
        seq = default_max_len("sglang", spec, None, where=where, key=key("max_model_len"))
    elif seq < 1:
        raise InputError(f"must be positive, got {seq}", where=at("context_length"))
    longer_note = None
    env_options: tuple[tuple[str, str], ...] | None = None
    if args.given("context_length"):
        env = {name: None if value is None or marks.MARK in value else value for name, value in ctx.env.items()}
        longer_note = sglang.check_length(seq, spec, found.config, version=version, env=env, where=at("context_length"))
        # the variables the engine reads as options (an option key is the variable's name in lower case) go with the
        # request, so the estimate judges the launch with the environment this file gives it
        env_options = tuple((name.lower(), value) for name, value in env.items()
                            if value is not None and name.lower() in sglang.option_keys) or None
    kv_name = args.get("kv_cache_dtype", "auto")
    rules = sglang.releases.release(version)  # SGLang's own rules, beyond the shape every registry shares
    kv_table = rules.kv_dtypes  # the release's own choices (engines/sglang/releases.py R9)
    if kv_name not in kv_table:
        raise InputError(f"SGLang {rules.version} has no --kv-cache-dtype {kv_name}", where=at("kv_cache_dtype"),
                         hint="it takes " + ", ".join(sorted(kv_table)))
    if kv_table[kv_name] is None:
        raise UnsupportedError(f"--kv-cache-dtype {kv_name} (scales stored with the cache) is not modelled",
                               where=at("kv_cache_dtype"), hint="fp8_e4m3, fp8_e5m2, bf16 and auto are")
    weight_fmt = None
    dtype = args.get("dtype", "auto")
    if dtype != "auto" and spec.weights_bytes is None and (spec.weight_dtype or spec.dtype) in ("bf16", "fp16", "fp32"):
        weight_fmt = dtypes.weight_format(_DTYPES[dtype])
    util = args.get("mem_fraction_static")
    if util is not None and not (0 < util < 1):
        raise InputError(f"--mem-fraction-static must be between 0 and 1, got {float(util):g}", where=at("mem_fraction_static"))
    ints = {}
    for dest, field in (("page_size", "block_size"), ("max_running_requests", "max_num_seqs"),
                        ("chunked_prefill_size", "max_num_batched_tokens")):
        if args.given(dest) and args.get(dest) is not None and not (dest == "chunked_prefill_size" and args.get(dest) == -1):
            ints[field] = whole(args.get(dest), where=at(dest))
    choice = ctx.gpu_choice()  # after the checks that need no GPU: a wrong file is invalid whatever it runs on
    notes = list(ctx.notes) + list(args.notes) + list(choice.notes) + ([gpus_note] if gpus_note else [])
    notes += [longer_note] if longer_note else []
    dp = args.get("dp_size", 1)
    if sglang_opts is not None and sglang_opts.attn_dp_size > 1:
        dp = 1  # attention data parallelism runs inside the TP group (parallel_hook.py handle_deprecated_dp_attention)
    if dp > 1:
        notes.append(f"--dp-size {dp}: {dp} replicas of {tp * pp} GPUs each; judged per replica")
    if args.get("nnodes", 1) > 1:
        notes.append(f"--nnodes {args.get('nnodes')}: tensor parallel {tp} spans the nodes")
    written = lambda name: args.written.get(_DESTS.get(name, name)) or key(name)  # noqa: E731
    request = engine_request(spec, seq=seq, kv_name=kv_name, weight_fmt=weight_fmt, tp=tp, pp=pp, gpu=choice.hardware[0],
                             util=util, reserve=None, kv_mem=None, where=where, key=written, engine_version=version,
                             features=launch_features, engine_options=env_options, **ints)
    origins = Origins(gpu=choice.origin, gpus=count_origin(choice.count_origin, tp, pp, gpus_note, ctx.defaults.gpus),
                      model=found.source.describe(), engine_release=release_text)
    served = args.get("served_model_name")
    return Deployment(source=ctx.source, document=ctx.document, name=str(served or ctx.name), format=ctx.fmt, engine="sglang",
                      request=request, requirements=ctx.defaults.requirements, key=key, gpus=tp * pp * dp,
                      notes=tuple(dict.fromkeys(notes)), origins=origins, alternatives=choice.hardware[1:],
                      gpus_available=choice.count, gpus_available_origin=choice.count_origin, flag_style=True,
                      written=written)


def read_argv(words, ctx: LaunchContext) -> Deployment:
    load = config_loader(ctx)

    options = engines.get("sglang").options
    try:
        args = options.parse_argv(list(words), where=ctx.where, load_config=load)
    except InputError as err:
        # kvplan has SGLang 0.5.23's option table only: a launch pinned to another release may use an option
        # that release had (or spell a value as it did), so its refusal is not a verdict on the file
        removed = options.removed_in(list(words)) if ctx.version is None else None
        if removed is not None:  # an older SGLang took it, and the file pins no release: it may run that one
            raise UnsupportedError(f"{err.what}; SGLang {removed[1]} still took {removed[0]}, and the file pins no "
                                   "SGLang release: it may run one that starts", where=err.where,
                                   hint="pin the image (lmsysorg/sglang:vX) to judge it by that release, or drop the "
                                        "option for SGLang " + options.MIRRORS) from None
        if ctx.version is not None and _other_release(ctx.version):
            raise UnsupportedError(f"{err.what}; the file pins SGLang {ctx.version}, whose options kvplan does not have "
                                   f"(it reads SGLang {options.MIRRORS}'s)", where=err.where,
                                   hint="judge it on SGLang 0.5.23 (a newer image tag) or check the option against "
                                        "that release") from None
        raise
    return read(args, ctx)


def _other_release(version: str) -> bool:
    try:
        mirrored = engines.get("sglang").options.MIRRORS
        return engines.release("sglang", version).version != engines.release("sglang", mirrored).version
    except KvplanError:  # not a version, or a release not read (engines/releases.py)
        return True
