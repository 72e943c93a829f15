"""Deployment configs -> engine requests -> verdicts: the logic behind `kvplan check`.

Three inputs describe a deployment:
  - kvplan's deployment YAML (schema: kvplan/data/deployment.schema.json): one deployment per YAML
    document, keys named as vLLM names them (tensor_parallel_size, max_model_len, ...), the GPU and the
    engine in the file, and optional requirements (`require: {concurrency, headroom}`);
  - a `vllm serve --config` YAML, read as vLLM reads it (kvplan.vllm_args), judged with the vllm engine;
  - a `vllm serve` command line (--vllm-args), the same settings.
A document is kvplan's own format when it has one of the keys vLLM does not know (engine, gpu,
gpu_memory, require, name, reserve); otherwise it is a vLLM config.

Each deployment gets a Verdict: pass / fail (with the one-line reason, the figures and a fix) /
invalid (bad input, exit 2) / cannot_judge (something kvplan does not model, exit 3). A bad file or
document is reported and the others are still judged.

Pure of typer and rich: paths and options in, a CheckReport (frozen dataclasses) out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Mapping

from kvplan.engines.vllm import serve_args as vllm_args
from kvplan.core.errors import EXIT_INPUT, EXIT_NO, EXIT_OK, EXIT_UNSUPPORTED, InputError, KvplanError, UnsupportedError, did_you_mean

PASS, FAIL, INVALID, CANNOT_JUDGE = "pass", "fail", "invalid", "cannot_judge"
STATUSES = (PASS, FAIL, INVALID, CANNOT_JUDGE)

# Exit code of a whole check: the worst verdict by this precedence. Invalid input comes first (the
# contract's "2: any invalid file"): until it is fixed nothing else is certain. A definite "no" (1)
# outranks "cannot judge" (3): it is an answer, and the fix it names is actionable now.
_EXIT_PRECEDENCE = ((INVALID, EXIT_INPUT), (FAIL, EXIT_NO), (CANNOT_JUDGE, EXIT_UNSUPPORTED))

FORMAT_KVPLAN, FORMAT_VLLM, FORMAT_VLLM_ARGS = "kvplan", "vllm-config", "vllm-args"

# kvplan deployment keys and what each holds; vLLM's names where vLLM has the setting.
KVPLAN_KEYS = (
    "name", "model", "engine", "gpu", "gpu_memory", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len",
    "kv_cache_dtype", "dtype", "gpu_memory_utilization", "kv_cache_memory_bytes", "block_size", "max_num_seqs",
    "max_num_batched_tokens", "reserve", "vllm_version", "require",
)
REQUIRE_KEYS = ("concurrency", "headroom")
# keys vLLM has no option for: their presence marks kvplan's own format
_KVPLAN_ONLY = frozenset({"name", "engine", "gpu", "gpu_memory", "require", "reserve", "vllm_version"})

# A deployment's GPUs: TP x PP of the largest real node groups; beyond this a typo is likelier.
_MAX_PARALLEL = 4096


# ------------------------------------------------------------------ results

@dataclass(frozen=True)
class Check:
    """One criterion of a verdict: whether it passed, what was required and what was found."""

    name: str  # "starts", "concurrency", "headroom"
    passed: bool
    required: int | float | None
    actual: int | float | None
    detail: str


@dataclass(frozen=True)
class Figures:
    """The numbers behind a verdict, per GPU (the most loaded one), one request of max_model_len resident."""

    capacity_bytes: int | None
    usable_bytes: int | None
    weights_bytes: int | None
    cache_bytes: int | None
    free_bytes: int | None
    max_concurrency: float | None  # paged engines: requests of max_model_len at once, as the engine logs it
    max_batch: int | None  # whole sequences of max_model_len that fit
    longest_context: int | None  # the longest max_model_len that fits one request
    headroom_bytes: int | None  # free with the required concurrency resident
    headroom_percent: float | None  # of usable memory, 2 decimals
    available_kv_bytes: int | None = None
    num_gpu_blocks: int | None = None
    kv_cache_tokens: int | None = None


@dataclass(frozen=True)
class Verdict:
    source: str  # the file as named on the command line (or "--vllm-args")
    document: int | None  # 1-based YAML document, when the file holds several
    name: str
    format: str | None  # kvplan | vllm-config | vllm-args; None when the file could not be read
    status: str
    reason: str  # one line
    engine: str | None = None
    model: str | None = None
    gpu: str | None = None
    gpus: int | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    max_model_len: int | None = None
    kv_cache_dtype: str | None = None
    figures: Figures | None = None
    checks: tuple[Check, ...] = ()
    suggestions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """'deploy/prod.yaml#2' — file and document, how people find it."""
        return f"{self.source}#{self.document}" if self.document else self.source


@dataclass(frozen=True)
class CheckReport:
    verdicts: tuple[Verdict, ...]
    total: int
    passed: int
    failed: int
    invalid: int
    cannot_judge: int
    exit_code: int
    vllm_version: str  # the vLLM release whose options and rules vLLM deployments are judged by (unless they name one)


def exit_code(verdicts) -> int:
    statuses = {v.status for v in verdicts}
    for status, code in _EXIT_PRECEDENCE:
        if status in statuses:
            return code
    return EXIT_OK


def make_report(verdicts, vllm_version: str | None = None) -> CheckReport:
    verdicts = tuple(verdicts)
    count = {s: sum(1 for v in verdicts if v.status == s) for s in STATUSES}
    version = vllm_args.VERSIONS[vllm_args.check_version(vllm_version)]
    return CheckReport(verdicts=verdicts, total=len(verdicts), passed=count[PASS], failed=count[FAIL],
                       invalid=count[INVALID], cannot_judge=count[CANNOT_JUDGE], exit_code=exit_code(verdicts),
                       vllm_version=version)


# ------------------------------------------------------------------ inputs

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


@dataclass(frozen=True)
class _Gpu:
    name: str | None
    capacity_bytes: int


@dataclass(frozen=True)
class _Defaults:
    """CheckOptions, validated once."""

    gpu: _Gpu | None
    gpus: int | None
    requirements: Requirements
    vllm_version: str


@dataclass(frozen=True)
class Deployment:
    """A validated deployment, ready for its engine."""

    source: str
    document: int | None
    name: str
    format: str
    engine: str
    request: Any  # kvplan.engines.EngineRequest
    requirements: Requirements
    key: Callable[[str], str]  # how this deployment's source spells a setting: 'tensor_parallel_size' -> ...
    gpus: int
    notes: tuple[str, ...] = ()
    vllm_version: str | None = None  # for engine vllm: the release whose rules judge it


def parse_headroom(value: Any, *, where: str) -> Fraction:
    """'10%' or 0.1 -> Fraction(1, 10); 0% allowed, 100% not."""
    from decimal import Decimal, InvalidOperation

    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"headroom must be a percentage, got {value!r}", where=where, hint="e.g. 10%")
    raw = str(value).strip()
    try:
        number = Fraction(Decimal(raw.rstrip("%").strip()))
    except (InvalidOperation, ValueError):
        raise InputError(f"headroom {value!r} is not a percentage", where=where, hint="e.g. 10% (or 0.1)") from None
    if raw.endswith("%"):
        number /= 100
    elif number >= 1:
        raise InputError(f"headroom {value!r} is ambiguous", where=where, hint=f"write {raw}% for a percentage, or a fraction below 1")
    if not 0 <= number < 1:
        raise InputError(f"headroom must be from 0% to below 100%, got {value!r}", where=where)
    return number


def _defaults(options: CheckOptions) -> _Defaults:
    """Validate the command-line settings up front: a bad flag is a usage error for the whole run."""
    from kvplan.model import catalog
    from kvplan.core import units

    gpu = None
    if options.gpu and options.gpu_mem:
        raise InputError("give --gpu or --gpu-mem, not both", where="--gpu-mem")
    if options.gpu:
        entry = catalog.find_gpu(options.gpu)
        gpu = _Gpu(entry.name, entry.capacity_bytes)
    elif options.gpu_mem:
        gpu = _Gpu(None, units.parse_size(options.gpu_mem, what="--gpu-mem"))
    for flag, value in (("--gpus", options.gpus), ("--require-concurrency", options.require_concurrency)):
        if value is not None and value < 1:
            raise InputError(f"must be at least 1, got {value}", where=flag)
    headroom = parse_headroom(options.require_headroom, where="--require-headroom") if options.require_headroom is not None else None
    return _Defaults(gpu=gpu, gpus=options.gpus, requirements=Requirements(options.require_concurrency, headroom),
                     vllm_version=vllm_args.check_version(options.vllm_version))


# ------------------------------------------------------------------ finding files

def collect(paths) -> list[tuple[str, Path | None, InputError | None]]:
    """Each path given, folders expanded to their *.yaml / *.yml files (sorted, hidden ones skipped)."""
    out: list[tuple[str, Path | None, InputError | None]] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(
                (p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
                 and not any(part.startswith(".") for part in p.relative_to(path).parts)),
                key=lambda p: p.relative_to(path).as_posix())
            if not found:
                out.append((str(given), None, InputError("holds no *.yaml or *.yml files", where=str(given))))
            out.extend(((path / p.relative_to(path)).as_posix(), p, None) for p in found)
        elif path.exists():
            out.append((Path(given).as_posix(), path, None))
        else:
            out.append((str(given), None, InputError("no such file or folder", where=str(given), hint="check the path")))
    return out


# ------------------------------------------------------------------ the check

def run_check(paths, options: CheckOptions = CheckOptions(), vllm_command_lines=()) -> CheckReport:
    """Judge every deployment in `paths` (files or folders) and in the vLLM command lines."""
    from kvplan.core import yamlio

    defaults = _defaults(options)
    verdicts: list[Verdict] = []
    for display, path, problem in collect(paths):
        if problem is not None:
            verdicts.append(_failed_verdict(display, None, display, None, problem))
            continue
        try:
            docs = yamlio.load_yaml_documents(path)
        except KvplanError as err:
            verdicts.append(_failed_verdict(display, None, Path(display).stem, None, err))
            continue
        many = len(docs) > 1
        for index, doc in enumerate(docs, start=1):
            document = index if many else None
            where = f"{display}#{index}" if many else display
            verdicts.append(_judge_document(doc, display=display, path=path, document=document, where=where,
                                            many=many, defaults=defaults))
    for i, text in enumerate(vllm_command_lines, start=1):
        where = "--vllm-args" if len(vllm_command_lines) == 1 else f"--vllm-args#{i}"
        verdicts.append(_judge_command_line(text, where=where, defaults=defaults))
    if not verdicts:
        raise InputError("nothing to check", where="CONFIG", hint="name deployment files or folders, or give --vllm-args")
    return make_report(verdicts, defaults.vllm_version)


def _judge_document(doc, *, display, path, document, where, many, defaults) -> Verdict:
    name = Path(display).stem if not many else f"{Path(display).stem}#{document}"
    fmt = None
    try:
        fmt = document_format(doc, where=where)
        if fmt == FORMAT_KVPLAN:
            dep = kvplan_deployment(doc, source=display, document=document, where=where, base_dir=path.parent,
                                    defaults=defaults)
        else:
            if many:
                raise InputError("vLLM reads one YAML document per --config file", where=where,
                                 hint="split the file, or add `engine: vllm` and a GPU to make it a kvplan deployment")
            args = vllm_args.parse_config(doc, where=where, version=defaults.vllm_version)
            dep = vllm_deployment(args, source=display, document=document, where=where, base_dir=path.parent,
                                  defaults=defaults, fmt=FORMAT_VLLM, default_name=name)
        return judge(dep)
    except KvplanError as err:
        if isinstance(doc, Mapping) and isinstance(doc.get("name"), str) and fmt == FORMAT_KVPLAN:
            name = doc["name"]
        return _failed_verdict(display, document, name, fmt, err)


def _judge_command_line(text: str, *, where: str, defaults: _Defaults) -> Verdict:
    from kvplan.core import yamlio

    def load(p: str):
        return yamlio.load_yaml(Path(p))

    try:
        args = vllm_args.parse_command_line(text, where=where, load_config=load, version=defaults.vllm_version)
        dep = vllm_deployment(args, source=where, document=None, where=where, base_dir=Path.cwd(), defaults=defaults,
                              fmt=FORMAT_VLLM_ARGS, default_name=args.model or "vllm serve")
        return judge(dep)
    except KvplanError as err:
        return _failed_verdict(where, None, "vllm serve", FORMAT_VLLM_ARGS, err)


def _failed_verdict(source, document, name, fmt, err: KvplanError) -> Verdict:
    status = CANNOT_JUDGE if isinstance(err, UnsupportedError) else INVALID
    return Verdict(source=source, document=document, name=name, format=fmt, status=status, reason=err.one_line())


def document_format(doc: Any, *, where: str) -> str:
    if not isinstance(doc, Mapping):
        raise InputError(f"a deployment is a YAML mapping of key: value, got {type(doc).__name__}", where=where)
    keys = {str(k).replace("-", "_") for k in doc}
    return FORMAT_KVPLAN if keys & _KVPLAN_ONLY else FORMAT_VLLM


# ------------------------------------------------------------------ kvplan's own format

def _kvplan_key(name: str) -> str:
    return name


def _int(value: Any, *, where: str, low: int = 1, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"must be a whole number, got {value!r}", where=where)
    if value < low or (high is not None and value > high):
        raise InputError(f"must be from {low} to {high}, got {value}" if high else f"must be at least {low}, got {value}", where=where)
    return value


def _text(value: Any, *, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"must be text, got {value!r}", where=where)
    return value.strip()


def _at(where: str, fn, *args, **kwargs):
    """Run a parser from units/dtypes/catalog; its error is located at the file and key."""
    try:
        return fn(*args, **kwargs)
    except KvplanError as err:
        err.where = where
        raise
    except (ValueError, OverflowError, TypeError):  # e.g. YAML's .inf reaching an exact-number parser
        raise InputError(f"invalid value {args[0]!r}", where=where) from None


def kvplan_deployment(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path,
                      defaults: _Defaults) -> Deployment:
    from kvplan.model import catalog
    from kvplan.core import dtypes, units
    from kvplan.engines import ENGINE_NAMES

    data: dict[str, Any] = {}
    for raw_key, value in doc.items():
        key = str(raw_key).replace("-", "_")
        if key not in KVPLAN_KEYS:
            raise InputError(f"unknown key {raw_key!r}", where=f"{where}: {raw_key}",
                             hint=did_you_mean(key, KVPLAN_KEYS) or "keys: " + ", ".join(KVPLAN_KEYS))
        if key in data:
            raise InputError(f"{key!r} is given twice", where=f"{where}: {raw_key}")
        data[key] = value
    at = lambda key: f"{where}: {key}"  # noqa: E731
    for key in ("model", "engine"):
        if key not in data:
            raise InputError(f"missing key {key!r}", where=where,
                             hint="engine: static | vllm | sglang | trtllm" if key == "engine" else "a bundled model name, a model folder or a config.json")
    name = _text(data["name"], where=at("name")) if "name" in data else (
        f"{Path(source).stem}#{document}" if document else Path(source).stem)
    engine = _text(data["engine"], where=at("engine"))
    if engine not in ENGINE_NAMES:
        raise InputError(f"unknown engine {data['engine']!r}", where=at("engine"),
                         hint=did_you_mean(engine, ENGINE_NAMES) or "one of " + ", ".join(ENGINE_NAMES))

    if "gpu" in data and "gpu_memory" in data:
        raise InputError("give gpu or gpu_memory, not both", where=at("gpu_memory"))
    if "gpu" in data:
        entry = _at(at("gpu"), catalog.find_gpu, _text(data["gpu"], where=at("gpu")))
        gpu = _Gpu(entry.name, entry.capacity_bytes)
    elif "gpu_memory" in data:
        gpu = _Gpu(None, _at(at("gpu_memory"), units.parse_size, data["gpu_memory"], what="gpu_memory"))
    elif defaults.gpu is not None:
        gpu = defaults.gpu
    else:
        raise InputError("no GPU", where=where, hint="add `gpu: NAME` (kvplan gpus) or `gpu_memory: SIZE`, or pass --gpu/--gpu-mem")

    spec, raw_config = _resolve_model(_text(data["model"], where=at("model")), base_dir=base_dir, where=at("model"))
    tp = _int(data["tensor_parallel_size"], where=at("tensor_parallel_size"), high=_MAX_PARALLEL) if "tensor_parallel_size" in data else None
    pp = _int(data["pipeline_parallel_size"], where=at("pipeline_parallel_size"), high=_MAX_PARALLEL) if "pipeline_parallel_size" in data else 1
    tp = _tp_from_gpus(tp, pp, defaults.gpus, where=at("tensor_parallel_size"))
    if "max_model_len" in data:
        seq = _at(at("max_model_len"), units.parse_tokens, data["max_model_len"], what="max_model_len")
    else:
        seq = _default_max_len(engine, spec, raw_config, where=where, key="max_model_len")
    kv_name = _text(data["kv_cache_dtype"], where=at("kv_cache_dtype")) if "kv_cache_dtype" in data else "auto"
    kv = _at(at("kv_cache_dtype"), dtypes.resolve_kv_dtype, kv_name, dtypes.dtype(spec.dtype))
    weight_fmt = _at(at("dtype"), dtypes.weight_format, _text(data["dtype"], where=at("dtype"))) if "dtype" in data else None
    util = _at(at("gpu_memory_utilization"), units.parse_fraction, data["gpu_memory_utilization"],
               what="gpu_memory_utilization") if "gpu_memory_utilization" in data else None
    kv_mem = _at(at("kv_cache_memory_bytes"), units.parse_size, data["kv_cache_memory_bytes"],
                 what="kv_cache_memory_bytes") if "kv_cache_memory_bytes" in data else None
    reserve = _at(at("reserve"), units.parse_size, data["reserve"], what="reserve") if "reserve" in data else None
    ints = {k: _int(data[k], where=at(k)) for k in ("block_size", "max_num_seqs", "max_num_batched_tokens") if k in data}
    requirements = _requirements(data.get("require"), where=at("require"), defaults=defaults.requirements)
    version = None
    if "vllm_version" in data:
        if engine != "vllm":
            raise InputError(f"vllm_version applies to engine vllm, not {engine}", where=at("vllm_version"))
        version = _at(at("vllm_version"), vllm_args.check_version, str(data["vllm_version"]))
    elif engine == "vllm":
        version = defaults.vllm_version
    if engine == "vllm":
        _check_vllm_max_len(seq, spec, raw_config, where=at("max_model_len"))
    request = _request(spec, seq=seq, kv=kv, kv_name=kv_name, weight_fmt=weight_fmt, tp=tp, pp=pp, gpu=gpu, util=util,
                       reserve=reserve, kv_mem=kv_mem, where=where, key=_kvplan_key, **ints)
    return Deployment(source=source, document=document, name=name, format=FORMAT_KVPLAN, engine=engine, request=request,
                      requirements=requirements, key=_kvplan_key, gpus=tp * pp, vllm_version=version)


def _requirements(value: Any, *, where: str, defaults: Requirements) -> Requirements:
    if value is None:
        return defaults
    if not isinstance(value, Mapping):
        raise InputError(f"must be a mapping with concurrency and/or headroom, got {value!r}", where=where)
    for key in value:
        if key not in REQUIRE_KEYS:
            raise InputError(f"unknown requirement {key!r}", where=f"{where}.{key}",
                             hint=did_you_mean(str(key), REQUIRE_KEYS) or "concurrency or headroom")
    concurrency = _int(value["concurrency"], where=f"{where}.concurrency") if "concurrency" in value else defaults.concurrency
    headroom = parse_headroom(value["headroom"], where=f"{where}.headroom") if "headroom" in value else defaults.headroom
    return Requirements(concurrency, headroom)


# ------------------------------------------------------------------ vLLM's format

def _vllm_key(style: str) -> Callable[[str], str]:
    def spell(name: str) -> str:
        flag = name.replace("_", "-")
        return f"--{flag}" if style == FORMAT_VLLM_ARGS else flag

    return spell


def setting(dep: Deployment, name: str, value: Any) -> str:
    """A setting as the deployment's own source writes it: 'max_model_len: 8192', 'max-model-len: 8192'
    in a vLLM config, '--max-model-len 8192' on a vLLM command line."""
    if dep.format == FORMAT_VLLM_ARGS:
        return f"{dep.key(name)} {value}"
    return f"{dep.key(name)}: {value}"


def short_tokens(n: int) -> str:
    """'32K' when exact, else '32,000': short enough for a one-line reason."""
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else f"{n:,}"


# vLLM's --dtype names -> kvplan's (vllm/config/model.py _STR_DTYPE_TO_TORCH_DTYPE)
_VLLM_DTYPES = {"half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32"}
# vLLM's --kv-cache-dtype names -> kvplan's dtypes (vllm/config/cache.py CacheDType); fp8 is e4m3 on CUDA
_VLLM_KV_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}


def vllm_deployment(args: vllm_args.ServeArgs, *, source: str, document: int | None, where: str, base_dir: Path,
                    defaults: _Defaults, fmt: str, default_name: str) -> Deployment:
    from kvplan.core import dtypes

    at = lambda dest: f"{where}: {args.written.get(dest, dest)}"  # noqa: E731
    key = _vllm_key(fmt)
    model_ref = args.get("hf_config_path") or args.model
    if not model_ref:
        raise InputError("no model", where=where, hint="vLLM needs `model: NAME_OR_PATH` (or the positional model on a command line)")
    spec, raw_config = _resolve_model(model_ref, base_dir=base_dir,
                                      where=at("hf_config_path" if args.get("hf_config_path") else "model"))
    blocked = vllm_args.unmodelled(args)
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
            _int(value, where=at(dest), high=_MAX_PARALLEL)
    tp = _tp_from_gpus(tp, pp, defaults.gpus, where=at("tensor_parallel_size"))
    seq = args.get("max_model_len")
    if seq == -1:
        raise UnsupportedError("max-model-len auto: vLLM fits the length to the memory it finds at start-up", where=at("max_model_len"),
                               hint="give a number to judge that length")
    if seq is None:
        seq = _default_max_len("vllm", spec, raw_config, where=where, key=key("max_model_len"))
    elif seq < 1:
        raise InputError(f"must be positive, got {seq}", where=at("max_model_len"))
    _check_vllm_max_len(seq, spec, raw_config, where=at("max_model_len"))

    model_dtype = dtypes.dtype(spec.dtype)
    weight_fmt = None
    vllm_dtype = args.get("dtype", "auto")
    if vllm_dtype != "auto":
        model_dtype = dtypes.dtype(_VLLM_DTYPES[vllm_dtype])
        # --dtype sets the activation dtype; it changes the weight bytes only of an unquantized checkpoint
        if spec.weights_bytes is None and (spec.weight_dtype or spec.dtype) in ("bf16", "fp16", "fp32", "bfloat16", "float16", "float32"):
            weight_fmt = dtypes.weight_format(model_dtype.name)
    kv_name = args.get("kv_cache_dtype", "auto")
    if kv_name == "auto":
        kv = model_dtype
    elif kv_name in _VLLM_KV_DTYPES:
        kv = dtypes.dtype(_VLLM_KV_DTYPES[kv_name])
    else:
        raise UnsupportedError(f"kv-cache-dtype {kv_name} is not modelled", where=at("kv_cache_dtype"),
                               hint="auto, bfloat16, float16, fp8, fp8_e4m3 and fp8_e5m2 are")
    ints = {}
    for dest in ("block_size", "max_num_seqs", "max_num_batched_tokens"):
        if args.given(dest) and args.get(dest) is not None:
            ints[dest] = _int(args.get(dest), where=at(dest))
    util = args.get("gpu_memory_utilization")
    if util is not None and not (0 < util <= 1):
        raise InputError(f"vLLM requires 0 < gpu-memory-utilization <= 1, got {float(util):g}", where=at("gpu_memory_utilization"))
    kv_mem = args.get("kv_cache_memory_bytes")
    if kv_mem is not None and kv_mem < 1:
        raise InputError(f"must be positive, got {kv_mem}", where=at("kv_cache_memory_bytes"))
    notes = list(args.notes)
    graph = [args.written[d] for d in vllm_args.CUDA_GRAPH_OPTIONS if args.given(d)]
    if graph:
        notes.append(f"{', '.join(graph)}: CUDA-graph memory is counted as with vLLM's defaults")
    dp = args.get("data_parallel_size", 1)
    if dp > 1:
        notes.append(f"data-parallel-size {dp}: {dp} replicas of {tp * pp} GPUs each; judged per replica")
    # prefix caching decides how many Mamba state blocks a hybrid's request holds (kvplan/engines/vllm.py)
    prefix_caching = args.get("enable_prefix_caching") if args.given("enable_prefix_caching") else None
    request = _request(spec, seq=seq, kv=kv, kv_name=kv_name, weight_fmt=weight_fmt, tp=tp, pp=pp, gpu=defaults.gpu,
                       util=util, reserve=None, kv_mem=kv_mem, where=where, key=key, prefix_caching=prefix_caching, **ints)
    served = args.get("served_model_name")
    name = served[0] if served else default_name
    return Deployment(source=source, document=document, name=str(name), format=fmt, engine="vllm", request=request,
                      requirements=defaults.requirements, key=key, gpus=tp * pp * dp, notes=tuple(notes),
                      vllm_version=args.version)


# ------------------------------------------------------------------ shared by both formats

def _tp_from_gpus(tp: int | None, pp: int, gpus: int | None, *, where: str) -> int:
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


def _resolve_model(ref: str, *, base_dir: Path, where: str):
    """A ModelSpec, and the raw config.json when the model is one (vLLM's length limit is read from it).

    A relative path is read from the deployment file's folder; a name that is not a path there is a
    bundled spec name or alias (a Hugging Face id a bundled spec carries).
    """
    from kvplan.model import catalog, hf_config
    from kvplan.core import yamlio

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


def _default_max_len(engine: str, spec, raw_config, *, where: str, key: str) -> int:
    """The length a deployment that names none gets: vLLM derives it from config.json, others use max_context."""
    if engine == "vllm" and raw_config is not None:
        default, _ = vllm_args.derived_max_model_len(*raw_config)
        if default is not None:
            return default
    if spec.max_context:
        return spec.max_context
    raise InputError("the model names no maximum context", where=where, hint=f"set {key}")


def _check_vllm_max_len(seq: int, spec, raw_config, *, where: str) -> None:
    """vLLM refuses a max_model_len above the model's derived limit (vllm/config/model.py _get_and_verify_max_len)."""
    if raw_config is not None:
        _, limit = vllm_args.derived_max_model_len(*raw_config)
    else:
        limit = spec.max_context
    if limit is not None and seq > limit:
        raise InputError(f"max_model_len {seq:,} is above the model's limit of {int(limit):,} tokens: vLLM refuses to start",
                         where=where, hint="lower it; vLLM allows more only with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")


def _request(spec, *, seq, kv, kv_name, weight_fmt, tp, pp, gpu: _Gpu, util, reserve, kv_mem, where, key,
             block_size=None, max_num_seqs=None, max_num_batched_tokens=None, prefix_caching=None):
    from kvplan.core import cache
    from kvplan.engines import plan
    from kvplan.engines import EngineRequest

    if spec.attention_heads % tp and any(layer.kind in ("full", "sliding", "chunked", "mla") for layer in spec.layer_specs):
        # vLLM: "Total number of attention heads must be divisible by tensor parallel size"
        # (vllm/config/model.py verify_with_parallel_config); every engine splits heads this way
        raise InputError(f"tensor parallel size {tp} does not divide the model's {spec.attention_heads} attention heads",
                         where=f"{where}: {key('tensor_parallel_size')}", hint="choose a divisor of the heads")
    try:
        cache.CacheModel(spec, kv, tp, pp)  # validates tp against the KV heads and pp against the layers
    except InputError as err:
        err.where = f"{where}: {key({'--tp': 'tensor_parallel_size', '--pp': 'pipeline_parallel_size'}.get(err.where or '', 'model'))}"
        raise
    hardware = plan.Hardware(gpu.name, gpu.capacity_bytes, gpu_util=util or plan.DEFAULT_GPU_UTIL, reserve_bytes=reserve)
    if hardware.reserved_bytes >= gpu.capacity_bytes:
        raise InputError(f"reserve {hardware.reserved_bytes} B leaves nothing of {gpu.capacity_bytes} B", where=f"{where}: reserve")
    return EngineRequest(spec=spec, seq=seq, batch=1, kv_dtype=kv, kv_dtype_name=kv_name, weight_fmt=weight_fmt, tp=tp, pp=pp,
                         hardware=hardware, gpu_util=util, kv_cache_memory=kv_mem, block_size=block_size,
                         max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
                         prefix_caching=prefix_caching)


# ------------------------------------------------------------------ judging

_ENGINE_WHERE = {"--tp": "tensor_parallel_size", "--pp": "pipeline_parallel_size", "--seq": "max_model_len",
                 "--kv-dtype": "kv_cache_dtype", "--block-size": "block_size", "--gpu-util": "gpu_memory_utilization",
                 "--kv-cache-memory": "kv_cache_memory_bytes", "--max-num-seqs": "max_num_seqs",
                 "--max-num-batched-tokens": "max_num_batched_tokens", "--dtype": "dtype", "--engine": "engine",
                 "--enable-prefix-caching": "enable_prefix_caching"}


def _place(dep: Deployment) -> str:
    return dep.source if dep.document is None else f"{dep.source}#{dep.document}"


def _run(module, dep: Deployment, request, *, suggest: bool = False):
    """The engine's result; its errors located at the deployment's own keys.

    Engines that take a release (vllm: version=) or can skip their own fix search (suggest=) get them;
    kvplan searches fixes itself (_fixes), checking every requirement, not only the start."""
    import inspect

    params = inspect.signature(module.estimate).parameters
    kwargs: dict[str, Any] = {}
    if "version" in params and dep.vllm_version is not None:
        kwargs["version"] = dep.vllm_version
    if "suggest" in params:
        kwargs["suggest"] = suggest
    try:
        return module.estimate(request, **kwargs)
    except KvplanError as err:
        name = _ENGINE_WHERE.get(err.where or "")
        err.where = f"{_place(dep)}: {dep.key(name)}" if name else (f"{_place(dep)}: {err.where}" if err.where else _place(dep))
        raise


def _engine(dep: Deployment):
    from kvplan.engines import engine_module

    try:
        return engine_module(dep.engine)
    except KvplanError as err:
        err.where = f"{_place(dep)}: {dep.key('engine')}" if dep.format == FORMAT_KVPLAN else _place(dep)
        raise


def judge(dep: Deployment, *, suggest: bool = True) -> Verdict:
    """The verdict: would it start and serve one request of max_model_len, and does it meet the requirements."""
    module = _engine(dep)
    base, checks, headroom = _evaluate(module, dep, dep.request)
    failed = [c for c in checks if not c.passed]
    # a pass is explained by its requirements when it has any, else by the start
    reason = "; ".join(c.detail for c in (failed or checks[1:] or checks))
    suggestions = tuple(_fixes(module, dep)) if failed and suggest else ()
    g = base.per_gpu
    figures = Figures(
        capacity_bytes=g.capacity_bytes if g else None, usable_bytes=g.usable_bytes if g else None,
        weights_bytes=g.weights_bytes if g else None, cache_bytes=g.cache_bytes if g else None,
        free_bytes=g.free_bytes if g else None, max_concurrency=getattr(base, "max_concurrency", None),
        max_batch=base.max_batch, longest_context=_longest_context(base),
        headroom_bytes=headroom[0] if headroom else None,
        headroom_percent=float(round(headroom[1] * 100, 2)) if headroom else None,
        available_kv_bytes=getattr(base, "available_kv_bytes", None), num_gpu_blocks=getattr(base, "num_gpu_blocks", None),
        kv_cache_tokens=getattr(base, "kv_cache_tokens", None))
    req = dep.request
    notes = list(dep.notes) + list(base.notes)
    if dep.vllm_version is not None:
        notes.insert(0, f"judged by vLLM {vllm_args.VERSIONS[dep.vllm_version]} rules")
    return Verdict(
        source=dep.source, document=dep.document, name=dep.name, format=dep.format, status=FAIL if failed else PASS,
        reason=reason, engine=dep.engine, model=req.spec.name, gpu=req.hardware.name or "custom", gpus=dep.gpus,
        tensor_parallel_size=req.tp, pipeline_parallel_size=req.pp, max_model_len=req.seq,
        kv_cache_dtype=getattr(base, "kv_dtype", req.kv_dtype.name), figures=figures, checks=tuple(checks),
        suggestions=suggestions, notes=tuple(dict.fromkeys(notes)))


def _paged(result) -> bool:
    """A paged engine's result: a pool of blocks preallocated at start-up (vLLM)."""
    return all(getattr(result, a, None) is not None for a in ("num_gpu_blocks", "blocks_per_request", "bytes_per_block"))


def _longest_context(result) -> int | None:
    estimated = getattr(result, "estimated_max_model_len", None)
    return estimated if estimated is not None else result.max_seq


def _start_detail(result, request) -> str:
    from kvplan.core.units import format_bytes

    g = result.per_gpu
    tokens = short_tokens(request.seq)
    if result.fits:
        detail = f"starts at max_model_len {tokens}"
        if getattr(result, "max_concurrency", None) is not None:
            return detail + f", {result.max_concurrency:.2f}x concurrency"
        return detail + (f", {result.max_batch:,} at once" if result.max_batch is not None else "")
    workers = getattr(result, "workers", None) or ()
    if any(getattr(w, "available_kv_bytes", 1) <= 0 for w in workers):
        return (f"no memory is left for the KV cache: weights ({format_bytes(g.weights_bytes)}) and runtime buffers take "
                f"all {format_bytes(g.usable_bytes)} the engine may use per GPU")
    failing = next((w for w in workers if not w.fits), None)
    if failing is not None:
        # vLLM's own start-up error, in figures (v1/core/kv_cache_utils.py check_enough_kv_cache_memory)
        detail = (f"one request of {tokens} tokens needs {format_bytes(failing.needed_kv_bytes)} of KV cache per GPU, "
                  f"{format_bytes(failing.available_kv_bytes)} available")
        if failing.estimated_max_model_len:
            detail += f"; longest that fits: {failing.estimated_max_model_len:,} tokens"
        return detail
    refusal = next((n for n in result.notes if "refuse" in n), None)
    if refusal is not None:
        return refusal
    available = getattr(result, "available_kv_bytes", None)
    if available is not None:  # a pool engine without per-worker figures (SGLang, TensorRT-LLM)
        if available <= 0:
            return (f"no memory is left for the KV cache: weights ({format_bytes(g.weights_bytes)}) and runtime buffers "
                    f"take all {format_bytes(g.usable_bytes)} the engine may use per GPU")
        estimated = getattr(result, "estimated_max_model_len", None)
        if estimated:
            return (f"the KV cache ({format_bytes(available)} per GPU) holds at most {estimated:,} tokens per request, "
                    f"max_model_len is {tokens}")
    if g is not None and g.weights_bytes > g.usable_bytes:
        return f"weights alone need {format_bytes(g.weights_bytes)} per GPU, has {format_bytes(g.usable_bytes)}"
    if g is not None:
        return (f"needs {format_bytes(g.usable_bytes - g.free_bytes)} per GPU for one request of {tokens} tokens, "
                f"has {format_bytes(g.usable_bytes)}")
    return "does not fit"


def _pool_unused(base, seq: int, n: int) -> int | None:
    """Bytes of a preallocated KV pool that n requests of seq tokens leave unused, per GPU; None if the
    result describes no pool. Read from the engine's own figures:
      vLLM (blocks): (num_gpu_blocks - n x blocks_per_request) x bytes_per_block;
      SGLang (token slots) and TensorRT-LLM (blocks of tokens), without sliding-window or state pools:
        pool - n x (seq rounded up to the page / block) x bytes per token slot;
      with those extra pools: the pool less n shares of it, a share being pool / (requests it holds)."""
    if _paged(base):
        return (base.num_gpu_blocks - n * base.blocks_per_request) * base.bytes_per_block
    pool = base.per_gpu.cache_bytes
    slots = getattr(base, "max_total_num_tokens", None)  # SGLang
    unit = getattr(base, "page_size", None)
    if slots is None:
        slots, unit = getattr(base, "kv_cache_tokens", None), getattr(base, "tokens_per_block", None)  # TensorRT-LLM
    simple = not getattr(base, "swa_tokens", None) and not getattr(base, "mamba_state_per_request_bytes", 0) \
        and not getattr(base, "window_blocks", ())
    if slots and unit and simple and pool % slots == 0:
        per_request = -(-seq // unit) * unit * (pool // slots)
        return pool - n * per_request
    held = base.max_batch
    return pool - n * -(-pool // held) if held else None


def _headroom(module, dep: Deployment, request, base, n: int) -> tuple[int, Fraction]:
    """Bytes of usable GPU memory still free with n requests of max_model_len resident, and the fraction.

    Paged engines (vLLM, SGLang, TensorRT-LLM) preallocate their whole KV pool at start-up, so it is
    never "free" to the allocator; what is left for more load is the part of the pool n requests do not
    take, plus whatever the engine left outside the pool (per_gpu.free_bytes). A contiguous engine
    (static) allocates per sequence: its free bytes with n sequences allocated."""
    if getattr(base, "available_kv_bytes", None) is not None:
        unused = _pool_unused(base, request.seq, n)
        if unused is not None:
            free = unused + base.per_gpu.free_bytes
            return free, Fraction(free, base.per_gpu.usable_bytes)
    at = base if n == 1 else _run(module, dep, replace(request, batch=n))
    g = at.per_gpu
    return g.free_bytes, Fraction(g.free_bytes, g.usable_bytes)


def _evaluate(module, dep: Deployment, request):
    """(the engine's result for one request, the checks, (headroom bytes, fraction) or None)."""
    from kvplan.core.units import format_bytes

    base = _run(module, dep, replace(request, batch=1))
    tokens = short_tokens(request.seq)
    checks = [Check("starts", bool(base.fits), None, None, _start_detail(base, request))]

    need = dep.requirements.concurrency
    if need is not None:
        concurrency = getattr(base, "max_concurrency", None)
        actual: int | float = (concurrency if concurrency is not None else base.max_batch) or 0
        if not base.fits:
            actual = 0
        shown = f"{actual:.2f}" if isinstance(actual, float) else f"{actual:,}"
        passed = actual >= need
        detail = f"{shown} requests of {tokens} at once, {need:,} required"
        # vLLM's concurrency counts block 0, its null block (v1/core/block_pool.py), which no request can take:
        # a pool of exactly k requests' blocks logs k.00x and holds k - 1 at once (the engine's max_batch)
        held = (base.num_gpu_blocks - 1) // base.blocks_per_request if concurrency is not None and _paged(base) else None
        if passed and held is not None and held < need:
            passed = False
            detail = (f"{shown} requests of {tokens} at once as vLLM logs it, but block 0 is its null block: {held:,} "
                      f"held at once, {need:,} required")
        # the engine's limit on running requests (vLLM: max_num_seqs, its default resolved by the engine)
        cap = request.max_num_seqs or getattr(base, "max_num_seqs", None)
        if passed and cap is not None and cap < need:
            passed = False
            default = " (the engine's default)" if request.max_num_seqs is None else ""
            detail = f"{dep.key('max_num_seqs')} {cap}{default} runs fewer than the {need:,} requests required at once"
        checks.append(Check("concurrency", passed, need, actual, detail))

    headroom = None
    wanted = dep.requirements.headroom
    if wanted is not None:
        n = need or 1
        if base.fits:
            headroom = _headroom(module, dep, request, base, n)
            percent = float(round(headroom[1] * 100, 1))
            detail = (f"{percent:.1f}% headroom ({format_bytes(headroom[0])} free) with {n:,} of {tokens} resident, "
                      f"{float(wanted * 100):g}% required")
            passed = headroom[1] >= wanted
        else:
            detail, passed = f"no headroom: it does not start, {float(wanted * 100):g}% required", False
        checks.append(Check("headroom", passed, float(wanted * 100),
                            float(round(headroom[1] * 100, 2)) if headroom else None, detail))
    return base, checks, headroom


def _passes(module, dep: Deployment, request) -> bool:
    try:
        _, checks, _ = _evaluate(module, dep, request)
    except KvplanError:
        return False
    return all(c.passed for c in checks)


def _fixes(module, dep: Deployment) -> list[str]:
    """Single changes that each make the deployment pass every check, found by asking the engine itself
    (never a rule of thumb): the longest max_model_len, the smallest larger tensor parallel size, an fp8
    KV cache, a higher memory fraction, the smallest larger GPU of the catalog. Spelled as the source does."""
    from kvplan.model import catalog
    from kvplan.core import dtypes
    from kvplan.engines import plan

    req = dep.request
    out = []
    # every check is monotone in the length: binary search for the longest that passes
    if _passes(module, dep, replace(req, seq=1)):
        lo, hi = 1, req.seq
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if _passes(module, dep, replace(req, seq=mid)) else (lo, mid)
        out.append(setting(dep, "max_model_len", lo))
    for tp in (2, 4, 8, 16, 32, 64):
        if tp > req.tp and not req.spec.attention_heads % tp and _passes(module, dep, replace(req, tp=tp)):
            out.append(setting(dep, "tensor_parallel_size", tp) + f" ({tp * req.pp} GPUs)")
            break
    if req.kv_dtype.bits > 8 and _passes(module, dep, replace(req, kv_dtype=dtypes.dtype("fp8_e4m3"), kv_dtype_name="fp8")):
        out.append(setting(dep, "kv_cache_dtype", "fp8"))
    hw = req.hardware
    util = req.gpu_util if req.gpu_util is not None else getattr(module, "DEFAULT_GPU_UTIL", None)
    if req.kv_cache_memory is None and hw.reserve_bytes is None:
        target = Fraction(95, 100)
        current = req.gpu_util if req.gpu_util is not None else hw.gpu_util
        if current < target and util != target:
            higher = plan.Hardware(hw.name, hw.capacity_bytes, gpu_util=target)
            if _passes(module, dep, replace(req, gpu_util=target, hardware=higher)):
                out.append(setting(dep, "gpu_memory_utilization", 0.95))
    if hw.name is not None:
        vendor = next((g.vendor for g in catalog.gpus() if g.name == hw.name), None)
        for gpu in sorted(catalog.gpus(), key=lambda g: (g.capacity_bytes, g.name)):
            if gpu.capacity_bytes <= hw.capacity_bytes or gpu.vendor != vendor:
                continue  # a larger card of the same vendor: the software stack stays the same
            bigger = plan.Hardware(gpu.name, gpu.capacity_bytes, gpu_util=hw.gpu_util, reserve_bytes=hw.reserve_bytes)
            if _passes(module, dep, replace(req, hardware=bigger)):
                out.append(f"gpu: {gpu.name}" if dep.format == FORMAT_KVPLAN else f"--gpu {gpu.name}")
                break
    return out


def to_dict(report: CheckReport) -> dict:
    """The report as plain data (the JSON output): the dataclass fields, nothing hand-built."""
    return dataclasses.asdict(report)


__all__ = ["run_check", "judge", "CheckOptions", "CheckReport", "Verdict", "Check", "Figures", "exit_code", "make_report",
           "PASS", "FAIL", "INVALID", "CANNOT_JUDGE", "KVPLAN_KEYS", "REQUIRE_KEYS"]
