"""A deployment as `kvplan check` judges it: the engine request a file describes, the requirements on it, how
that file spells each setting (so a fix reads like the file), and where each input came from (so the report can
say). Shared by every reader in readers/.

Pure of typer and rich."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from kvplan import engines
from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.core.units import shown, parse_decimal, parse_size
from kvplan.engines.api import EngineRequest, Hardware
from kvplan.requests.build import hardware_for, parse_engine_options
from kvplan.model import resolve
from kvplan.check.report import FORMAT_VLLM_ARGS
from kvplan.core import cache, dtypes, yamlio
from kvplan.check.gpus import choose, GpuEvidence
from kvplan.engines.lazy import deferred

if TYPE_CHECKING:
    from kvplan.engines.calibration import SiteProfile

# --calibration's site-profile reader (engines/calibration.py, with its strict YAML reader): loaded when a run names a
# profile, not on every check's start (benchmarks/cold_start.py)
read_profile = deferred("kvplan.engines.calibration", "read_profile")

# A deployment's GPUs: TP x PP of the largest real node groups; beyond this a typo is likelier.
MAX_PARALLEL = 4096


@dataclass(frozen=True, eq=False, repr=False)
class Requirements:
    """What a deployment must hold beyond starting: concurrent requests, free headroom."""

    concurrency: int | None = None  # at least this many requests of max_model_len at once
    headroom: Fraction | None = None  # of usable GPU memory still free with them resident


@dataclass(frozen=True, eq=False, repr=False)
class CheckOptions:
    """Command-line settings: the GPU and requirements for deployments that do not name their own."""

    gpu: str | None = None
    gpu_mem: str | None = None
    gpus: int | None = None
    require_concurrency: int | None = None
    require_headroom: str | None = None
    vllm_version: str | None = None  # None: the vllm engine's default release (for files that pin none)
    optimistic: bool = False  # judge a modelled budget by its value, not by the low edge of its band
    models_dirs: tuple[str, ...] = ()  # --models-dir
    offline: bool = False  # --offline: never ask the Hugging Face Hub
    gpu_reserved: str | None = None  # memory in use on each GPU before the engine starts (engines that read it)
    engine_options: tuple[str, ...] = ()  # KEY=VALUE, applied to the deployments whose engine reads the key
    calibration: str | None = None  # a site profile file (--calibration)
    allow_paths: tuple[str, ...] = ()  # --allow-path: folders outside the repository a deployment may name


@dataclass(frozen=True, eq=False, repr=False)
class Defaults:
    """CheckOptions, validated once."""

    gpu: Hardware | None
    gpus: int | None
    requirements: Requirements
    vllm_version: str | None  # as given (validated against the release registry)
    optimistic: bool = False
    lookup: Any = None  # kvplan.model.resolve.Lookup (--models-dir, --offline)
    gpu_origin: str | None = None  # '--gpu h100-sxm-80gb' / '--gpu-mem 80GiB'
    gpu_reserved_bytes: int | None = None
    engine_options: tuple[tuple[str, str], ...] | None = None
    site: SiteProfile | None = None  # --calibration, read once

    def site_for(self, engine: str) -> SiteProfile | None:
        """The site profile for a deployment of `engine`: only the engine it was fitted on (or any, when it says none)."""
        if self.site is None or self.site.engine not in (None, engine):
            return None
        return self.site


@dataclass(frozen=True, eq=False, repr=False)
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
    origins: Any = None  # report.Origins: where the GPU, the model and the release came from
    alternatives: tuple[Hardware, ...] = ()  # the other GPUs the file's label allows: judged too, a verdict only if all agree
    gpus_available: int | None = None  # GPUs the file gives one instance (None: it does not say)
    gpus_available_origin: str | None = None
    flag_style: bool = False  # settings are written as command-line flags (`--max-model-len 8192`), not `key: value`
    # how the file itself wrote a setting it gives (`-tp`, a --config file's key), for an error about its value;
    # None: as `key` spells it (a fix is still worded in `key`'s spelling)
    written: Callable[[str], str] | None = None

    def written_as(self, name: str) -> str:
        """The setting as the file wrote it, where an error about its value is located."""
        return (self.written or self.key)(name)

    @property
    def place(self) -> str:
        return self.source if self.document is None else f"{self.source}#{self.document}"


@dataclass(frozen=True, eq=False, repr=False)
class LaunchContext:
    """What a file says around one engine command line: where it is, the GPUs it gets, the engine release it is
    judged by (and why), and notes the reader made on the way. The engine readers (vllm_serve, sglang_launch,
    trtllm_serve) turn the command line and this context into a Deployment."""

    source: str
    document: int | None
    where: str
    name: str  # the deployment's name when the command line gives none
    fmt: str
    base_dir: Path
    defaults: Defaults
    gpu: Any = None  # check.gpus.GpuEvidence from the file; None: --gpu / --gpu-mem decide (a vLLM config, --vllm-args)
    version: str | None = None  # the engine release to judge by, as the file or --vllm-version gives it
    release_origin: str | None = None  # 'image vllm/vllm-openai:v0.10.0', '--vllm-version 0.19'
    host_paths: bool = True  # a model path in the command line is a folder of the serving host
    notes: tuple[str, ...] = ()
    key: Callable[[str], str] | None = None  # how the file spells a setting; None: the engine's own flags
    flag_style: bool = True  # a fix reads `--flag value` (else `key: value`)
    env: Mapping[str, Any] = field(default_factory=dict)  # the engine process's environment, as far as the file says
    whole_launch: bool = False  # the command line is all the engine gets (a container, a script): --gpus sets nothing
    args_at_run: str | None = None  # items.Workload.args_at_run: more arguments come where the container starts

    def no_model(self, hint: str) -> KvplanError:
        """The launch names no model: bad input, unless the model is given where the container starts (a Dockerfile
        whose ENTRYPOINT is the engine with no CMD), which the file cannot say: then cannot judge."""
        if self.args_at_run is not None:
            return UnsupportedError(f"no model: {self.args_at_run}", where=self.where,
                                    hint="judge the command that runs the image (docker run, compose, Kubernetes), "
                                         "or the launch with --vllm-args")
        return InputError("no model", where=self.where, hint=hint)

    def gpu_choice(self):
        """The GPUs to judge on: the file's, else --gpu / --gpu-mem, else cannot judge naming --gpu."""
        missing = "no GPU for a vLLM config" if self.fmt in ("vllm-config", "vllm-args") else "the file names no GPU"
        return choose(self.gpu or GpuEvidence(), self.defaults.gpu, self.defaults.gpu_origin, where=self.where,
                      missing=missing)


def pinned_rules(engine: str, ctx: LaunchContext) -> str:
    """How the report names the rules a launch of `engine` is judged by: the release its file pins (ctx.version, from
    ctx.release_origin) or the engine's default. A pinned release the engine's registry has not read, or text that is
    no release, cannot be judged (exit 3, engines/releases.py): the file's pin is not the user's typing."""
    title = engines.get(engine).title
    try:
        chosen = engines.release(engine, ctx.version)
    except KvplanError as err:  # the engine's release registry says which releases it mirrors
        raise UnsupportedError(f"{title} {ctx.version} ({ctx.release_origin}) is not modelled", where=ctx.where,
                               hint=err.hint) from None
    origin = ctx.release_origin or "kvplan's default: the file pins no release"
    return f"{title} {chosen.mirrors} rules ({origin})"


def config_loader(ctx: LaunchContext, flag: str = "--config", *,
                  unknown: str = "its options are unknown here", kind: str = "config") -> Callable[[str], Any]:
    """How a launch reads the options file its `flag` names: from the deployment file's folder (an absolute path as
    given), YAML; a file that is not there cannot be judged (exit 3), since what it sets is unknown."""
    def load(p: str):
        path = Path(p) if Path(p).is_absolute() else ctx.base_dir / p
        if not path.is_file():
            raise UnsupportedError(f"{flag} {p} is not beside the deployment file: {unknown}", where=ctx.where,
                                   hint=f"keep the {kind} file in the repository, next to this file")
        return yamlio.load_yaml(path)

    return load


def parse_headroom(value: Any, *, where: str) -> Fraction:
    """'10%' or 0.1 -> Fraction(1, 10); 0% allowed, 100% not."""
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
    gpu = hardware_for(options.gpu, options.gpu_mem)
    for flag, value in (("--gpus", options.gpus), ("--require-concurrency", options.require_concurrency)):
        if value is not None and value < 1:
            raise InputError(f"must be at least 1, got {shown(value)}", where=flag)
    headroom = parse_headroom(options.require_headroom, where="--require-headroom") if options.require_headroom is not None else None

    if options.vllm_version is not None:  # None is the default release: nothing to refuse, no table to load
        engines.release("vllm", options.vllm_version, where="--vllm-version")

    reserved = (parse_size(options.gpu_reserved, what="--gpu-reserved", zero_ok=True)
                if options.gpu_reserved is not None else None)
    opts = parse_engine_options(list(options.engine_options))
    readers = {name: engines.get(name).option_keys for name in engines.ENGINE_NAMES} if opts else {}
    for key, _ in opts or ():
        if not any(key in keys for keys in readers.values()):
            raise InputError(f"no engine reads {key!r}", where="--engine-option",
                             hint="; ".join(f"{n}: {', '.join(k)}" for n, k in readers.items() if k))
    site = None
    if options.calibration is not None:
        site = read_profile(options.calibration)
    origin = (f"--gpu {gpu.name}" if options.gpu else f"--gpu-mem {options.gpu_mem}") if gpu is not None else None
    return Defaults(gpu=gpu, gpus=options.gpus, requirements=Requirements(options.require_concurrency, headroom),
                    vllm_version=options.vllm_version, lookup=resolve.lookup_from_options(options.models_dirs, options.offline),
                    gpu_origin=origin, gpu_reserved_bytes=reserved, engine_options=opts, optimistic=options.optimistic,
                    site=site)


def with_command_line(dep: Deployment, defaults: Defaults) -> Deployment:
    """The deployment with --gpu-reserved, the --engine-option keys its engine reads (an option meant for one
    engine leaves the others' deployments alone) and the --calibration profile of its engine."""
    from dataclasses import replace

    site = defaults.site_for(dep.engine)
    if site is not None and dep.request.site is not site:
        dep = replace(dep, request=replace(dep.request, site=site))
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
    if dep.format == FORMAT_VLLM_ARGS or dep.flag_style:
        return f"{dep.key(name)} {value}"
    return f"{dep.key(name)}: {value}"


def tp_from_gpus(tp: int | None, pp: int, gpus: int | None, *, where: str, launch: bool = False) -> tuple[int, str | None]:
    """(the tensor parallel size, a note when --gpus is not used). --gpus N means TP x PP = N, as in `kvplan
    estimate`, for a deployment that names no tensor parallel size; the file's own size always wins, and a launch
    the file gives whole (`launch`: a container's or script's command line) runs the engine's default, 1, when it
    names none, so --gpus does not change it either."""
    if gpus is None:
        return tp or 1, None
    if tp is None and not launch:
        if gpus % pp:
            raise InputError(f"--gpus {gpus} is not a multiple of the pipeline parallel size {pp}", where="--gpus")
        return gpus // pp, None
    used = tp or 1
    if used * pp == gpus:
        return used, None
    said = (f"the file's tensor x pipeline parallel = {used} x {pp}" if tp is not None else
            f"the file's launch names no tensor parallel size, so the engine runs its default 1 (x pipeline {pp})")
    return used, f"--gpus {gpus} is not used: {said}, and a file's own layout always wins"


def count_origin(file_count: str | None, tp: int, pp: int, gpus_note: str | None, gpus: int | None) -> str:
    """Where a deployment's GPU count came from, saying when --gpus was given and not used (every format shows it)."""
    base = file_count or f"tensor x pipeline parallel = {tp} x {pp} (the file names no count)"
    return base + (f" (--gpus {gpus} not used)" if gpus_note else "")


# ------------------------------------------------------------------ the model a deployment names

def resolve_model(ref: str, *, base_dir: Path, where: str, lookup=None, host_paths: bool = False):
    """The model a deployment names (kvplan/model/resolve.py: bundled, a file beside the deployment, --models-dir,
    the Hugging Face cache, the Hub), its error located at the deployment's key. `host_paths`: the name comes from
    an engine command line, where a path is a folder on the serving host (cannot judge, not invalid)."""
    try:
        return resolve.resolve(ref, base_dir=base_dir, host_paths=host_paths, lookup=lookup)
    except KvplanError as err:
        inner = err.one_line() if err.where not in (None, "MODEL") else err.what + (f" ({err.hint})" if err.hint else "")
        raise type(err)(inner, where=where) from None


def default_max_len(engine: str, spec, raw_config, *, where: str, key: str) -> int:
    """The length a deployment that names none gets: an engine that derives it from config.json does (vLLM:
    Engine.derived_max_len), the others use max_context."""
    derive = engines.get(engine).derived_max_len
    if derive is not None and raw_config is not None:
        default, _ = derive(*raw_config)
        if default is not None:
            return default
    if spec.max_context:
        return spec.max_context
    raise InputError("the model names no maximum context", where=where, hint=f"set {key}")


def check_vllm_max_len(seq: int, spec, raw_config, *, where: str, allow_long: bool | None = False) -> None:
    """vLLM refuses a max_model_len above the model's derived limit (vllm/config/model.py _get_and_verify_max_len)
    unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is on (`allow_long`; None: set outside the file, so not known)."""
    vllm = engines.get("vllm")
    releases = vllm.releases
    if raw_config is not None:
        _, limit = vllm.derived_max_len(*raw_config)
    else:
        limit = spec.max_context
    if limit is None or seq <= limit or allow_long:
        return
    if allow_long is None:
        raise UnsupportedError(f"max_model_len {seq:,} is above the model's limit of {int(limit):,} tokens: vLLM starts only "
                               f"if {releases.ALLOW_LONG_ENV}, set outside the file, is 1", where=where,
                               hint=f"give --engine-option {releases.ALLOW_LONG_ENV}=1 (or 0) to say which")
    raise InputError(f"max_model_len {seq:,} is above the model's limit of {int(limit):,} tokens: vLLM refuses to start",
                     where=where, hint="lower it, or extend the model's context with RoPE scaling as its card gives it (--hf-overrides "
                          f"rope_scaling, YaRN); {releases.ALLOW_LONG_ENV}=1 only lifts the check")


def engine_request(spec, *, seq, kv_name, weight_fmt, tp, pp, gpu: Hardware, util, reserve, kv_mem, where, key,
                   engine_version=None, block_size=None, max_num_seqs=None, max_num_batched_tokens=None,
                   prefix_caching=None, features=None, site: SiteProfile | None = None,
                   engine_options: tuple[tuple[str, str], ...] | None = None) -> EngineRequest:
    """The engine request of a deployment, with the checks every engine needs located at the file's own keys."""
    if spec.attention_heads % tp and any(layer.attends for layer in spec.layer_specs):
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
                         engine_version=engine_version, features=features, site=site, engine_options=engine_options)


def mapping_keys(doc: Mapping) -> set[str]:
    return {str(k).replace("-", "_") for k in doc}
