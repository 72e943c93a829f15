"""A deployment as `kvplan check` judges it: the engine request a file describes, the requirements on it, and
how that file spells each setting (so a fix reads like the file). Shared by every reader in readers/.

Pure of typer and rich."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Mapping

from kvplan.core.errors import InputError, KvplanError
from kvplan.core.units import shown
from kvplan.engines.request import EngineRequest, Hardware

# A deployment's GPUs: TP x PP of the largest real node groups; beyond this a typo is likelier.
MAX_PARALLEL = 4096


@dataclass(frozen=True)
class Requirements:
    concurrency: int | None = None  # at least this many requests of max_model_len at once
    headroom: Fraction | None = None  # of usable GPU memory still free with them resident


@dataclass(frozen=True)
class CheckOptions:
    """Command-line settings: the GPU and requirements for deployments that do not name their own."""

    gpu: str | None = None
    gpu_mem: str | None = None
    gpus: int | None = None
    require_concurrency: int | None = None
    require_headroom: str | None = None
    vllm_version: str | None = None  # None: the vllm engine's default release
    optimistic: bool = False  # judge a modelled budget by its value, not by the low edge of its band
    gpu_reserved: str | None = None  # memory in use on each GPU before the engine starts (engines that read it)
    engine_options: tuple[str, ...] = ()  # KEY=VALUE, applied to the deployments whose engine reads the key


@dataclass(frozen=True)
class Defaults:
    """CheckOptions, validated once."""

    gpu: Hardware | None
    gpus: int | None
    requirements: Requirements
    vllm_version: str | None  # as given (validated against the release registry)
    optimistic: bool = False
    gpu_reserved_bytes: int | None = None
    engine_options: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class Deployment:
    """A validated deployment, ready for its engine."""

    source: str
    document: int | None
    name: str
    format: str
    engine: str
    request: EngineRequest  # request.engine_version: the release whose rules judge it
    requirements: Requirements
    key: Callable[[str], str]  # how this deployment's source spells a setting: 'tensor_parallel_size' -> ...
    gpus: int
    notes: tuple[str, ...] = ()

    @property
    def place(self) -> str:
        return self.source if self.document is None else f"{self.source}#{self.document}"


def parse_headroom(value: Any, *, where: str) -> Fraction:
    """'10%' or 0.1 -> Fraction(1, 10); 0% allowed, 100% not."""
    from kvplan.core.units import parse_decimal

    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"headroom must be a percentage, got {shown(value)}", where=where, hint="e.g. 10%")
    try:  # the one number parser: bounded digits and exponent, ASCII, no commas
        number, percent = parse_decimal(value, what=where)
    except InputError:
        raise InputError(f"headroom {shown(value)} is not a percentage", where=where, hint="e.g. 10% (or 0.1)") from None
    raw = str(value).strip()
    if not percent and number >= 1:
        raise InputError(f"headroom {shown(value)} is ambiguous", where=where, hint=f"write {raw}% for a percentage, or a fraction below 1")
    if not 0 <= number < 1:
        raise InputError(f"headroom must be from 0% to below 100%, got {shown(value)}", where=where)
    return number


def defaults(options: CheckOptions) -> Defaults:
    """Validate the command-line settings up front: a bad flag is a usage error for the whole run."""
    from kvplan.engines.request import hardware_for
    from kvplan.engines.vllm import releases

    gpu = hardware_for(options.gpu, options.gpu_mem)
    for flag, value in (("--gpus", options.gpus), ("--require-concurrency", options.require_concurrency)):
        if value is not None and value < 1:
            raise InputError(f"must be at least 1, got {shown(value)}", where=flag)
    headroom = parse_headroom(options.require_headroom, where="--require-headroom") if options.require_headroom is not None else None
    releases.release(options.vllm_version, where="--vllm-version")
    from kvplan import engines
    from kvplan.core.units import parse_size
    from kvplan.engines.request import parse_engine_options

    reserved = parse_size(options.gpu_reserved, what="--gpu-reserved") if options.gpu_reserved else None
    opts = parse_engine_options(list(options.engine_options))
    readers = {name: engines.get(name).option_keys for name in engines.ENGINE_NAMES} if opts else {}
    for key, _ in opts or ():
        if not any(key in keys for keys in readers.values()):
            raise InputError(f"no engine reads {key!r}", where="--engine-option",
                             hint="; ".join(f"{n}: {', '.join(k)}" for n, k in readers.items() if k))
    return Defaults(gpu=gpu, gpus=options.gpus, requirements=Requirements(options.require_concurrency, headroom),
                    vllm_version=options.vllm_version, gpu_reserved_bytes=reserved, engine_options=opts,
                    optimistic=options.optimistic)


def with_command_line(dep: Deployment, defaults: Defaults) -> Deployment:
    """The deployment with --gpu-reserved and the --engine-option keys its engine reads (an option meant for one
    engine leaves the others' deployments alone)."""
    from dataclasses import replace

    from kvplan import engines

    if defaults.gpu_reserved_bytes is None and not defaults.engine_options:
        return dep
    try:
        engine = engines.get(dep.engine)
    except KvplanError:
        return dep  # the judge reports the engine at the deployment's own key
    req = dep.request
    if defaults.gpu_reserved_bytes is not None and engine.takes_gpu_reserved:
        req = replace(req, gpu_reserved_bytes=defaults.gpu_reserved_bytes)
    mine = tuple((k, v) for k, v in defaults.engine_options or () if k in engine.option_keys)
    if mine:
        req = replace(req, engine_options=tuple((dict(req.engine_options or ()) | dict(mine)).items()))
    return dep if req is dep.request else replace(dep, request=req)


# ------------------------------------------------------------------ values as files write them

def whole(value: Any, *, where: str, low: int = 1, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"must be a whole number, got {shown(value)}", where=where)
    if value < low or (high is not None and value > high):
        raise InputError(f"must be from {low} to {high}, got {shown(value)}" if high else
                         f"must be at least {low}, got {shown(value)}", where=where)
    return value


def text(value: Any, *, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"must be text, got {shown(value)}", where=where)
    return value.strip()


def located(where: str, fn, *args, **kwargs):
    """Run a parser from units/dtypes/catalog; its error is located at the file and key."""
    try:
        return fn(*args, **kwargs)
    except KvplanError as err:
        err.where = where
        raise
    except (ValueError, OverflowError, TypeError):  # e.g. YAML's .inf reaching an exact-number parser
        raise InputError(f"invalid value {args[0]!r}", where=where) from None


def setting(dep: Deployment, name: str, value: Any) -> str:
    """A setting as the deployment's own source writes it: 'max_model_len: 8192', 'max-model-len: 8192'
    in a vLLM config, '--max-model-len 8192' on a vLLM command line."""
    from kvplan.check.report import FORMAT_VLLM_ARGS

    if dep.format == FORMAT_VLLM_ARGS:
        return f"{dep.key(name)} {value}"
    return f"{dep.key(name)}: {value}"


def tp_from_gpus(tp: int | None, pp: int, gpus: int | None, *, where: str) -> int:
    """--gpus N means TP x PP = N, as in `kvplan estimate`."""
    if gpus is None:
        return tp or 1
    if tp is None:
        if gpus % pp:
            raise InputError(f"--gpus {gpus} is not a multiple of the pipeline parallel size {pp}", where="--gpus")
        return gpus // pp
    if tp * pp != gpus:
        raise InputError(f"--gpus {gpus} but tensor x pipeline parallel = {tp} x {pp} = {tp * pp}", where=where,
                         hint="drop --gpus or make them agree")
    return tp


# ------------------------------------------------------------------ the model a deployment names

def resolve_model(ref: str, *, base_dir: Path, where: str):
    """A ModelSpec, and the raw config.json when the model is one (vLLM's length limit is read from it).

    A relative path is read from the deployment file's folder; a name that is not a path there is a
    bundled spec name or alias (a Hugging Face id a bundled spec carries).
    """
    from kvplan.core import yamlio
    from kvplan.model import catalog, hf_config

    path = Path(ref).expanduser()
    local = path if path.is_absolute() else base_dir / path
    looks_like_path = ref.startswith((".", "/", "~")) or ref.endswith((".yaml", ".yml", ".json"))
    if local.exists():
        target = str(local)
    elif looks_like_path:
        raise InputError(f"no such file or folder: {local.as_posix()}", where=where,
                         hint="relative model paths are read from the deployment file's folder")
    else:
        target = ref
    try:
        spec = catalog.resolve_model(target)
    except KvplanError as err:
        inner = err.one_line() if err.where not in (None, "MODEL") else err.what + (f" ({err.hint})" if err.hint else "")
        raise type(err)(inner, where=where) from None
    raw = tokenizer = None
    config = hf_config.find_config_json(local) if local.exists() else None
    if config is not None:
        raw = yamlio.load_json(config)
        tok = config.parent / "tokenizer_config.json"
        if tok.is_file():
            tokenizer = yamlio.load_json(tok)
    return spec, (raw, tokenizer) if raw is not None else None


def default_max_len(engine: str, spec, raw_config, *, where: str, key: str) -> int:
    """The length a deployment that names none gets: vLLM derives it from config.json, others use max_context."""
    from kvplan.engines.vllm import serve_args

    if engine == "vllm" and raw_config is not None:
        default, _ = serve_args.derived_max_model_len(*raw_config)
        if default is not None:
            return default
    if spec.max_context:
        return spec.max_context
    raise InputError("the model names no maximum context", where=where, hint=f"set {key}")


def check_vllm_max_len(seq: int, spec, raw_config, *, where: str) -> None:
    """vLLM refuses a max_model_len above the model's derived limit (vllm/config/model.py _get_and_verify_max_len)."""
    from kvplan.engines.vllm import serve_args

    if raw_config is not None:
        _, limit = serve_args.derived_max_model_len(*raw_config)
    else:
        limit = spec.max_context
    if limit is not None and seq > limit:
        raise InputError(f"max_model_len {seq:,} is above the model's limit of {int(limit):,} tokens: vLLM refuses to start",
                         where=where, hint="lower it; vLLM allows more only with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")


def engine_request(spec, *, seq, kv_name, weight_fmt, tp, pp, gpu: Hardware, util, reserve, kv_mem, where, key,
                   engine_version=None, block_size=None, max_num_seqs=None, max_num_batched_tokens=None,
                   prefix_caching=None) -> EngineRequest:
    """The engine request of a deployment, with the checks every engine needs located at the file's own keys."""
    from kvplan.core import cache, dtypes

    if spec.attention_heads % tp and any(layer.kind in ("full", "sliding", "chunked", "mla") for layer in spec.layer_specs):
        # vLLM: "Total number of attention heads must be divisible by tensor parallel size"
        # (vllm/config/model.py verify_with_parallel_config); every engine splits heads this way
        raise InputError(f"tensor parallel size {tp} does not divide the model's {spec.attention_heads} attention heads",
                         where=f"{where}: {key('tensor_parallel_size')}", hint="choose a divisor of the heads")
    try:
        cache.CacheModel(spec, dtypes.dtype(spec.dtype), tp, pp)  # validates tp against the KV heads, pp against the layers
    except InputError as err:
        err.where = f"{where}: {key({'--tp': 'tensor_parallel_size', '--pp': 'pipeline_parallel_size'}.get(err.where or '', 'model'))}"
        raise
    if reserve is not None and reserve >= gpu.capacity_bytes:
        raise InputError(f"reserve {reserve} B leaves nothing of {gpu.capacity_bytes} B", where=f"{where}: reserve")
    return EngineRequest(spec=spec, seq=seq, batch=1, kv_dtype=kv_name, weight_fmt=weight_fmt, tp=tp, pp=pp,
                         hardware=gpu, gpu_util=util, reserve_bytes=reserve, kv_cache_memory=kv_mem,
                         block_size=block_size, max_num_seqs=max_num_seqs,
                         max_num_batched_tokens=max_num_batched_tokens, prefix_caching=prefix_caching,
                         engine_version=engine_version)


def mapping_keys(doc: Mapping) -> set[str]:
    return {str(k).replace("-", "_") for k in doc}
