"""TensorRT-LLM deployments: `trtllm-serve` command lines with their `--extra_llm_api_options` YAML, and a
standalone LLM-API options YAML (judged only with a command that names its model: alone it is skipped, its keys
checked). Read with the trtllm engine record's option part (its serve_args.py) and judged with kvplan's TensorRT-LLM
engine (PyTorch backend). `trtllm-serve disaggregated` configs are trtllm_disagg.py's; each of their server groups
comes here as an LLM-API mapping (read_llm_api)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from kvplan.check.deployment import (MAX_PARALLEL, Deployment, LaunchContext, default_max_len, engine_request,
                                     config_loader, pinned_rules, resolve_model, tp_from_gpus, whole, count_origin)
from kvplan.check.items import Skip, Workload
from kvplan.check.report import FORMAT_TRTLLM_OPTIONS, Origins
from kvplan import engines
from kvplan.core import dtypes, yamlio
from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.model.resolve import from_converted_config
from kvplan.check.readers import claims as formats

# the format test, apart from the reader (readers/claims.py), still answers here
MARKERS = formats.TRTLLM_MARKERS
SHARED_KEYS = formats.TRTLLM_SHARED_KEYS
_KVPLAN_KEYS = formats.TRTLLM_KVPLAN_KEYS
is_options = formats.trtllm_options

_FLAGS = {"max_model_len": "--max_seq_len", "tensor_parallel_size": "--tp_size", "pipeline_parallel_size": "--pp_size",
          "kv_cache_dtype": "kv_cache_config.dtype", "gpu_memory_utilization": "--kv_cache_free_gpu_memory_fraction",
          "max_num_seqs": "--max_batch_size", "block_size": "kv_cache_config.tokens_per_block",
          "max_num_batched_tokens": "--max_num_tokens", "model": "MODEL"}
_KEYS = {"max_model_len": "max_seq_len", "tensor_parallel_size": "tensor_parallel_size",
         "pipeline_parallel_size": "pipeline_parallel_size", "kv_cache_dtype": "kv_cache_config.dtype",
         "gpu_memory_utilization": "kv_cache_config.free_gpu_memory_fraction", "max_num_seqs": "max_batch_size",
         "block_size": "kv_cache_config.tokens_per_block", "max_num_batched_tokens": "max_num_tokens", "model": "model"}
# the engine options kvplan reads from kv_cache_config (serve_args.py engine_options) -> their key in the file
_KV_CAPS = {name: f"kv_cache_config.{name}" for name in ("max_tokens", "max_gpu_total_bytes", "max_attention_window")}


def flag_key(name: str) -> str:
    return _FLAGS.get(name, "--" + name)


def yaml_key(name: str) -> str:
    return _KEYS.get(name, name)


def read_llm_api(llm_api: Mapping[str, Any], ctx: LaunchContext, *, written: Mapping[str, str] | None = None,
                 notes: tuple[str, ...] = ()) -> Deployment:
    """An effective LLM-API mapping (flags with the YAML over them, or a disaggregated server's) -> Deployment."""
    trtllm = engines.get("trtllm")
    kv_dtypes, options = trtllm.kv_dtype_names, trtllm.options
    where = ctx.where
    written = dict(written or {})
    key = ctx.key or flag_key

    def at(dest: str) -> str:
        return f"{where}: {written.get(dest, yaml_key(dest) if ctx.key is yaml_key else dest)}"

    def as_written(name: str) -> str:
        # a setting as the launch wrote it (a flag, the options file's key); kv_cache_config's caps, read as engine
        # options (serve_args.py engine_options), by their place in the file
        dest = yaml_key(name)
        cap = _KV_CAPS.get(name)
        return (written.get(cap or dest) or written.get(dest.removeprefix("kv_cache_config.")) or cap
                or key(name))

    version, release_text = ctx.version, pinned_rules("trtllm", ctx)
    model_ref = llm_api.get("model")
    if not model_ref:
        raise ctx.no_model("trtllm-serve MODEL, or `model:` in the file")
    engine_dir = None
    built_here: tuple[tuple[str, str], ...] | None = None  # the engine trtllm-serve builds at start-up: its settings
    serve_notes: list[str] = []
    if _engine_backend(llm_api.get("backend"), version):
        # MODEL is an engine directory, whose config.json is the engine's (pretrained_config, build_config), or a
        # Hugging Face model that LLM(...) builds into an engine at start-up with the flags' BuildConfig
        engine_dir, found, builds = _engine_dir(str(model_ref), llm_api, ctx, at)
        llm_api = {k: v for k, v in llm_api.items() if k != "backend"}
        if engine_dir is not None and version is None and engine_dir.version:
            version, release_text = engine_dir.version, f"TensorRT-LLM {engine_dir.version} rules (the engine's config.json)"
        if builds:
            built_here, serve_notes = _serve_build(llm_api, found, where=where)
    else:
        found = resolve_model(str(model_ref), base_dir=ctx.base_dir, where=at("model"), lookup=ctx.defaults.lookup,
                              host_paths=ctx.host_paths)
    spec = found.spec
    blocked = options.unmodelled(llm_api)
    if blocked:
        field, why = blocked[0]
        raise UnsupportedError(f"{field} is set ({why}); kvplan does not model it", where=f"{where}: {field}",
                               hint="kvplan refuses rather than guesses; `kvplan probe` measures such a launch on the GPU")
    tp = llm_api.get("tensor_parallel_size")
    pp = llm_api.get("pipeline_parallel_size")
    if pp is None:  # TensorRT-LLM's default (llm_args.py pipeline_parallel_size = 1); a 0 given is checked below
        pp = 1
    if engine_dir is not None:  # an engine (or a checkpoint) runs on the layout it was built for
        # llm_args.py _load_config_from_engine / _load_config_from_ckpt: a size other than 1 (the flags' default) and
        # the file's is refused; 1 takes the file's
        for dest, value, built in (("tensor_parallel_size", tp, engine_dir.tp), ("pipeline_parallel_size", pp,
                                                                                  engine_dir.pp)):
            if value not in (None, 1, built):
                raise InputError(f"{value} does not match the engine's {built} (its config.json mapping)", where=at(dest))
        tp, pp = engine_dir.tp, engine_dir.pp
    for dest, value in (("tensor_parallel_size", tp), ("pipeline_parallel_size", pp)):
        if value is not None:
            whole(value, where=at(dest), high=MAX_PARALLEL)
    tp, gpus_note = tp_from_gpus(tp, pp, ctx.defaults.gpus, where=at("tensor_parallel_size"), launch=ctx.whole_launch)
    ep = llm_api.get("moe_expert_parallel_size")
    if ep not in (None, 1, tp):
        raise UnsupportedError(f"moe_expert_parallel_size {ep} over tensor parallel {tp}: the expert layout is not modelled",
                               where=at("moe_expert_parallel_size"))
    seq = llm_api.get("max_seq_len")
    if seq is None and engine_dir is not None and engine_dir.max_seq_len:
        seq = engine_dir.max_seq_len
    if seq is None and built_here is not None:
        seq = engines.get("trtllm").options.deduced_max_seq_len(found.config)  # None for a bundled spec: its max_context, said so
    if seq is None:
        seq = default_max_len("trtllm", spec, None, where=where, key=key("max_model_len"))
    else:
        seq = whole(seq, where=at("max_seq_len"))
    kv = llm_api.get("kv_cache_config") or {}
    kv_name = str(kv.get("dtype", engine_dir.kv_dtype if engine_dir is not None else "auto"))
    if kv_name not in kv_dtypes:
        raise UnsupportedError(f"kv_cache_config.dtype {kv_name} is not modelled",
                               where=f"{where}: {written.get('kv_cache_config.dtype', 'kv_cache_config.dtype')}",
                               hint="auto and fp8 are")
    util = kv.get("free_gpu_memory_fraction")
    if util is not None:
        if isinstance(util, bool) or not isinstance(util, (int, float, Fraction)) or not 0 < util < 1:
            raise InputError(f"free_gpu_memory_fraction must be above 0 and below 1, got {util!r}",
                             where=f"{where}: {as_written('gpu_memory_utilization')}")
        if isinstance(util, float):
            from decimal import Decimal

            util = Fraction(Decimal(repr(util)))
    ints = {}
    for dest, field in (("max_batch_size", "max_num_seqs"), ("max_num_tokens", "max_num_batched_tokens")):
        if llm_api.get(dest) is not None:
            ints[field] = whole(llm_api[dest], where=at(dest))
    if kv.get("tokens_per_block") is not None:
        ints["block_size"] = whole(kv["tokens_per_block"],
                                   where=f"{where}: {written.get('kv_cache_config.tokens_per_block', 'kv_cache_config.tokens_per_block')}")
    elif engine_dir is not None and engine_dir.tokens_per_block:
        ints["block_size"] = engine_dir.tokens_per_block  # a build setting of the engine (plugin_config)
    choice = ctx.gpu_choice()  # after the checks that need no GPU: a wrong file is invalid whatever it runs on
    out_notes = list(ctx.notes) + list(notes) + list(choice.notes) + ([gpus_note] if gpus_note else []) + serve_notes
    for field in ("cuda_graph_config", "moe_config", "attn_backend"):
        if llm_api.get(field):
            out_notes.append(f"{field}: judged with TensorRT-LLM's defaults for it")
    weight_fmt = None
    if engine_dir is not None and engine_dir.weight_dtype:
        weight_fmt = dtypes.weight_format(engine_dir.weight_dtype)
    request = engine_request(spec, seq=seq, kv_name=kv_name, weight_fmt=weight_fmt, tp=tp, pp=pp,
                             gpu=choice.hardware[0], util=util, reserve=None, kv_mem=None, where=where, key=as_written,
                             engine_version=version, **ints)
    # attention DP, speculative decoding, the cache transceiver, kv_cache_config's caps: the engine's option keys;
    # an engine directory's backend and build settings first
    launch = tuple(built_here or (engine_dir.options if engine_dir is not None else ())) + \
        tuple(options.engine_options(llm_api, where=where, base_dir=ctx.base_dir).items())
    if launch:
        from dataclasses import replace

        request = replace(request, engine_options=launch)
    origins = Origins(gpu=choice.origin, gpus=count_origin(choice.count_origin, tp, pp, gpus_note, ctx.defaults.gpus),
                      model=found.source.describe(), engine_release=release_text)
    return Deployment(source=ctx.source, document=ctx.document, name=ctx.name, format=ctx.fmt, engine="trtllm",
                      request=request, requirements=ctx.defaults.requirements, key=key, gpus=tp * pp,
                      notes=tuple(dict.fromkeys(out_notes)), origins=origins, alternatives=choice.hardware[1:],
                      gpus_available=choice.count, gpus_available_origin=choice.count_origin,
                      flag_style=ctx.key is not yaml_key, written=as_written)


def _engine_backend(backend, version: str | None) -> bool:
    """Whether the launch runs the TensorRT-engine backend: `--backend tensorrt` (or trt), or no --backend on a
    release whose trtllm-serve defaulted to the engine path (before 1.0: serve.py's `--backend` was
    Choice(["pytorch"]) with default None, "Default is cpp path")."""
    if backend is not None:
        return str(backend) in ("tensorrt", "trt")
    if version is None:
        return False
    try:
        # the TensorRT-LLM release table's own field (releases.py DEFAULT_BACKEND), beyond the Rules protocol
        return getattr(engines.release("trtllm", version), "default_backend", None) == "tensorrt"
    except (KvplanError, AttributeError, ValueError):  # a release not read: the engine says so when it is judged
        return False


def _engine_dir(ref: str, llm_api: Mapping[str, Any], ctx: LaunchContext, at):
    """(build_settings.EngineDir or None, the model, whether trtllm-serve builds the engine at start-up) for the
    engine backend's MODEL, read as TensorRT-LLM's _ModelWrapper tells them apart: a folder whose config.json is an
    engine's (pretrained_config, build_config) is an engine directory, read only inside the repository
    (files.read_text refuses a path outside it); a TensorRT-LLM checkpoint folder (its model, layout and quantization
    in an EngineDir without build settings), a Hugging Face checkpoint folder, or a name that is no local path (a Hub
    model) is built at start-up."""
    options = engines.get("trtllm").options
    path = Path(ref) if Path(ref).is_absolute() else ctx.base_dir / ref
    config = path / "config.json"

    def cannot_judge(why: str):
        field, reason = next(b for b in options.unmodelled({**llm_api, "backend": "tensorrt"}) if b[0] == "backend")
        return UnsupportedError(f"{field} is set ({reason}); {ref} is not an engine directory in the repository "
                                f"({why})", where=at("backend"),
                                hint="keep the engine's config.json in the repository, or judge it with `kvplan estimate "
                                     "--engine trtllm --engine-option backend=tensorrt` and its build settings")

    if not Path(ref).is_absolute() and config.is_file():
        doc = yamlio.load_json(config)
        shown = f"{ctx.where}: {ref}/config.json"
        if isinstance(doc, dict) and ("build_config" in doc or "pretrained_config" in doc):
            built = options.engine_dir_config(doc, where=shown)
            return built, from_converted_config(path, built.hf_config), False
        if options.is_checkpoint_config(doc):
            # a TensorRT-LLM checkpoint (convert_checkpoint.py's output): its model, layout and quantization are the
            # engine's; the build is the flags' (built at start-up)
            built = options.checkpoint_config(doc, where=shown)
            return built, from_converted_config(path, built.hf_config), True
        # a Hugging Face checkpoint in the repository: built into an engine at start-up
        return None, resolve_model(ref, base_dir=ctx.base_dir, where=at("model"), lookup=ctx.defaults.lookup,
                                   host_paths=ctx.host_paths), True
    if Path(ref).is_absolute() or ref.startswith((".", "~")) or path.exists():
        raise cannot_judge("a path on the serving host: an engine directory or a checkpoint kvplan cannot read")
    try:  # no local path: TensorRT-LLM takes it for a Hugging Face Hub model and builds it at start-up
        return None, resolve_model(ref, base_dir=ctx.base_dir, where=at("model"), lookup=ctx.defaults.lookup,
                                   host_paths=ctx.host_paths), True
    except KvplanError as err:
        raise cannot_judge(f"nor a model kvplan resolves: {err.what}") from None


def _serve_build(llm_api: Mapping[str, Any], found, *, where: str) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """The build settings of the engine trtllm-serve builds from a Hugging Face model (build_settings.py
    serve_build_options) and what kvplan says of them. What that build takes elsewhere is refused by name (exit 3)."""
    known = engines.get("trtllm").options.engine_architectures()
    if found.spec.architecture not in known:
        raise UnsupportedError(f"{found.spec.architecture}: kvplan models the engine trtllm-serve builds for "
                               + ", ".join(known) + " (the TensorRT-LLM conversions it read)",
                               where=f"{where}: MODEL", hint="--backend pytorch, if that is what runs")
    kv = llm_api.get("kv_cache_config") or {}
    if kv.get("dtype") not in (None, "auto"):
        # TrtLlmArgs.validate_kv_cache_dtype: "KvCacheConfig.dtype is not supported by the TensorRT backend"; the
        # engine's KV dtype is the checkpoint's quantization, which kvplan does not read through this path
        raise UnsupportedError(f"kv_cache_config.dtype {kv['dtype']} on the TensorRT backend (TrtLlmArgs asserts "
                               "auto; the engine's KV dtype comes from the checkpoint's quantization)",
                               where=f"{where}: kv_cache_config.dtype", hint="kvplan refuses rather than guesses")
    if kv.get("tokens_per_block") is not None:
        raise UnsupportedError("kv_cache_config.tokens_per_block on an engine trtllm-serve builds: the engine's block "
                               "is its build's plugin_config.tokens_per_block, which kvplan did not see this option "
                               "reach", where=f"{where}: kv_cache_config.tokens_per_block",
                               hint="kvplan refuses rather than guesses")
    built = engines.get("trtllm").options.serve_build_options(max_batch_size=llm_api.get("max_batch_size"),
                                              max_num_tokens=llm_api.get("max_num_tokens"),
                                              max_beam_width=llm_api.get("max_beam_width"))
    settings = dict(built)
    notes = [f"trtllm-serve builds the engine at start-up with BuildConfig(max_batch_size={settings['max_batch_size']}, "
             f"max_num_tokens={settings['max_num_tokens']}) from its flags (serve.py get_llm_args; a flag not given is "
             "BuildConfig's default), so no build setting is left open"]
    if llm_api.get("max_seq_len") is None and engines.get("trtllm").options.deduced_max_seq_len(found.config) is None:
        notes.append(f"max_seq_len: the engine deduces it from the checkpoint's config.json (max_position_embeddings "
                     f"x a rope scaling factor other than llama3 / longrope, builder.py _init_max_seq_len); kvplan's "
                     f"description of this model records no rope scaling, so {found.spec.max_context:,} is assumed; "
                     "give --max_seq_len if the checkpoint scales it")
    return built, notes


def read_argv(words, ctx: LaunchContext) -> Deployment:
    """`trtllm-serve [serve] MODEL ...` words, with --extra_llm_api_options read from the file's folder."""
    load = config_loader(ctx, "--extra_llm_api_options", kind="options",
                         unknown="the LLM-API options it sets (they override the flags) are unknown here")

    try:
        args = engines.get("trtllm").options.parse_argv(list(words), where=ctx.where, load_config=load,
                                                        model_later=ctx.args_at_run is not None)
    except InputError as err:
        # the option table is trtllm-serve's of the 1.x line; a launch pinned to an older release may use an
        # option of its own, so a refusal is not a verdict on the file
        if ctx.version is not None and _before_one(ctx.version):
            raise UnsupportedError(f"{err.what}; the file pins TensorRT-LLM {ctx.version}, whose trtllm-serve options "
                                   "kvplan does not have (it reads the 1.x line's)", where=err.where,
                                   hint="check the option against that release's trtllm-serve --help") from None
        raise
    return read_llm_api(args.llm_api, ctx, written=args.written, notes=args.notes)


def _before_one(version: str) -> bool:
    try:
        return not engines.release("trtllm", version).at_least("1.0.0")
    except (KvplanError, AttributeError, ValueError):  # not a version, or a release not read (engines/releases.py)
        return True


# ------------------------------------------------------------------ files

def read_options_file(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    """A standalone `--extra_llm_api_options` file: its keys are checked; with no model it is judged only through
    the command that uses it, so alone it is skipped."""
    engines.get("trtllm").options.check_llm_api(doc, where=where)
    name = Path(source).stem
    if not doc.get("model"):
        return [Skip(source, document, name, FORMAT_TRTLLM_OPTIONS,
                     "a TensorRT-LLM LLM-API options file names no model: it is judged with the trtllm-serve command "
                     "that passes it (--extra_llm_api_options)")]
    return [Workload(source=source, document=document, name=name, fmt=FORMAT_TRTLLM_OPTIONS, where=where,
                     base_dir=base_dir, engine_config=("trtllm", dict(doc)), key=yaml_key, flag_style=False,
                     requests_gpus=True)]
