"""The one builder that validates a user's values into an EngineRequest (kvplan/engines/api.py). `estimate`,
`check`, `sweep`, `plot`, `explain`, `simulate`, `probe` and `calibrate` all build requests here, so a flag means
the same everywhere. It sits above the engines: --vllm-args and --sglang-args are read by the engine they launch.
Pure of typer and rich.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from kvplan import engines
from kvplan.core.dtypes import WeightFormat
from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.core.spec import ModelSpec, spec_from_mapping, spec_to_mapping
from kvplan.core.units import shown
from kvplan.engines.api import EngineRequest, Hardware
from kvplan.core import dtypes, units
from kvplan.model import catalog

if TYPE_CHECKING:  # annotations only: `estimate` of a plain request does not import it (benchmarks/cold_start.py)
    from kvplan.engines.calibration import SiteProfile


# --seq values that ask the engine to fit the length to its memory (vLLM's --max-model-len auto / -1)
AUTO_LENGTH = ("auto", "-1")

# Upper bounds far beyond any deployment: they catch typos and keep every loop and table finite.
LIMITS = {"--batch": 2**31, "--pp": 4096, "--tp": 4096, "--gpus": 2**20, "--block-size": 2**20,
          "--max-num-seqs": 2**31, "--max-num-batched-tokens": 2**40}


def check_count(value: int | None, flag: str, *, where: str | None = None) -> None:
    """A whole-number option is at least 1 and below its plausibility bound. `where`: what the user wrote when it is
    not the flag (an option pasted in --vllm-args)."""
    if value is None:
        return
    if value < 1:
        raise InputError(f"must be at least 1, got {shown(value)}", where=where or flag)
    if value > LIMITS[flag]:
        raise InputError(f"{shown(value)} is implausibly large (limit {LIMITS[flag]})", where=where or flag)


# flags that size a paged engine's pool or scheduler: the static engine (one contiguous cache per sequence) has none
PAGED_ONLY_FLAGS = ("--block-size", "--max-num-seqs", "--max-num-batched-tokens")


def refuse_paged_flags(names, **given) -> None:
    """Refuse the paged engines' flags when no engine asked for sizes a paged pool (the static engine): they would
    change nothing and say nothing (issue 15). `given` maps flag names (block_size=...) to their values."""
    if any(engines.get(name).paged for name in names):
        return
    for flag in PAGED_ONLY_FLAGS:
        if given.get(flag.lstrip("-").replace("-", "_")) is not None:
            raise InputError(f"the static engine has no {flag[2:].replace('-', ' ')} to set", where=flag,
                             hint="it applies to --engine vllm, sglang or trtllm")


def split_gpus(gpus: int | None, tp: int | None, pp: int, *, where: str = "--gpus", tp_name: str = "--tp",
               pp_name: str = "--pp") -> int:
    """The tensor parallel size when --gpus N is given: TP x PP = N (TP from N when not given). `tp_name`,
    `pp_name`: the options as the user wrote them (a size pasted in --vllm-args is named so)."""
    if gpus is None:
        return tp or 1
    if tp is None:
        if gpus % pp:
            raise InputError(f"--gpus {gpus} is not a multiple of {pp_name} {pp}", where="--gpus")
        return gpus // pp
    if tp * pp != gpus:
        raise InputError(f"--gpus {gpus} but {tp_name} {tp} x {pp_name} {pp} = {tp * pp}", where=where,
                         hint="drop --gpus or make them agree")
    return tp


def hardware_for(gpu: str | None, gpu_mem: str | None) -> Hardware | None:
    """--gpu NAME (the catalog) or --gpu-mem SIZE, not both; None when neither is given."""
    if gpu is not None and gpu_mem is not None:
        raise InputError("give --gpu or --gpu-mem, not both", where="--gpu-mem")
    if gpu is not None:  # an empty name is an error (catalog.find_gpu), not "no GPU"
        entry = catalog.find_gpu(gpu)
        return Hardware(entry.name, entry.runtime_capacity())
    if gpu_mem is not None:
        return Hardware(None, units.parse_size(gpu_mem, what="--gpu-mem"))
    return None


def build_request(model: str, *, seq: str | None, batch: int, kv_dtype: str, dtype: str | None, gpu: str | None,
                  gpu_mem: str | None, gpus: int | None, tp: int | None, pp: int, gpu_util: str | None = None,
                  reserve: str | None = None, kv_cache_memory: str | None = None, block_size: int | None = None,
                  max_num_seqs: int | None = None, max_num_batched_tokens: int | None = None,
                  kv_heads: int | None = None, head_dim: int | None = None,
                  engine_version: str | None = None, gpu_reserved: str | None = None,
                  engine_options: list[str] | tuple[str, ...] | None = None, vllm_args: str | None = None,
                  rate: str | None = None, prompt: str | None = None, site: SiteProfile | None = None,
                  sglang_args: str | None = None) -> EngineRequest:
    """Turn command-line values into an EngineRequest, validating each (every command builds its requests here).
    `site`: a site profile already read (engines/calibration.py read_profile: --calibration FILE)."""
    spec = catalog.resolve_model(model)
    # kvplan's flag -> the pasted engine option that gave its value ('--vllm-args --gpu-memory-utilization'): an
    # error about the value names what the user typed, not a kvplan flag they never wrote
    origins: dict[str, str] = {}
    if vllm_args is not None or sglang_args is not None:
        # the engine's options that kvplan's own flags also give, taken as pasted (one value; two that differ: error)
        given = dict(seq=seq, tp=tp, pp=pp, gpu_util=gpu_util, kv_dtype=kv_dtype, kv_cache_memory=kv_cache_memory,
                     block_size=block_size, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
                     dtype=dtype)
        merged, origins = (_merge_vllm_core(vllm_args, given, spec, engine_version=engine_version)
                           if vllm_args is not None else _merge_sglang_core(sglang_args or "", given, spec))
        seq, tp, pp, gpu_util, kv_dtype = merged["seq"], merged["tp"], merged["pp"], merged["gpu_util"], merged["kv_dtype"]
        kv_cache_memory, block_size, max_num_seqs = merged["kv_cache_memory"], merged["block_size"], merged["max_num_seqs"]
        max_num_batched_tokens, dtype = merged["max_num_batched_tokens"], merged["dtype"]

    def at(flag: str) -> str:
        return origins.get(flag, flag)

    if kv_heads is not None or head_dim is not None:
        spec = override_spec(spec, kv_heads=kv_heads, head_dim=head_dim)
    if gpu is not None and gpu_mem is not None:
        raise InputError("give --gpu or --gpu-mem, not both", where="--gpu-mem")
    for flag, value in (("--batch", batch), ("--pp", pp), ("--tp", tp), ("--gpus", gpus), ("--block-size", block_size),
                        ("--max-num-seqs", max_num_seqs), ("--max-num-batched-tokens", max_num_batched_tokens)):
        check_count(value, flag, where=at(flag))
    tp = split_gpus(gpus, tp, pp, tp_name=at("--tp"), pp_name=at("--pp"))
    seq_auto = seq is not None and seq.strip().lower() in AUTO_LENGTH
    if seq_auto:
        # vLLM starts the search from the model's derived length (vllm/config/model.py _get_and_verify_max_len)
        if not spec.max_context:
            raise InputError("the model names no maximum length to start the search from", where=at("--seq"),
                             hint="give a length")
        seq_tokens = spec.max_context
    else:
        seq_tokens = units.parse_tokens(seq, what=at("--seq")) if seq is not None else (spec.max_context or 8192)
    try:
        try:
            dtypes.resolve_kv_dtype(kv_dtype, dtypes.dtype(spec.dtype))  # a spelling no engine takes fails here, once
        except InputError:
            # vLLM's own packed formats (its record's kv_formats): its engine judges them; the engine is not known
            # here. Asked only for a spelling the plain dtypes refuse: the other engines' starts never load vLLM's
            if kv_dtype.strip().lower() not in engines.get("vllm").kv_formats:
                raise
    except InputError as err:
        # another engine's own format (SGLang's mxfp8, ...): that engine judges it; the records load on this path only
        if not any(kv_dtype.strip().lower() in engines.get(name).kv_formats for name in engines.ENGINE_NAMES):
            raise err.located(at("--kv-dtype")) from None
    try:
        weight_fmt = dtypes.weight_format(dtype) if dtype else None
    except InputError as err:
        raise err.located(at("--dtype")) from None
    util = units.parse_fraction(gpu_util, what=at("--gpu-util")) if gpu_util is not None else None
    hardware = hardware_for(gpu, gpu_mem)
    if util is not None and hardware is None:
        # a share of no GPU's memory means nothing: said, not ignored (issue 15)
        raise InputError(f"{at('--gpu-util').split()[-1]} needs a GPU", where=at("--gpu-util"),
                         hint="add --gpu NAME or --gpu-mem SIZE")
    reserve_bytes = None
    if reserve is not None:
        if hardware is None:
            raise InputError("--reserve needs a GPU", where="--reserve", hint="add --gpu NAME or --gpu-mem SIZE")
        reserve_bytes = units.parse_size(reserve, what="--reserve")
        if reserve_bytes >= hardware.capacity_bytes:
            raise InputError(f"reserve {reserve_bytes} B leaves nothing of {hardware.capacity_bytes} B", where="--reserve")
    reserved_bytes = None
    if gpu_reserved is not None:  # "0" is an answer (nothing else holds memory), not a flag left out
        if hardware is None:
            raise InputError("--gpu-reserved needs a GPU", where="--gpu-reserved", hint="add --gpu NAME or --gpu-mem SIZE")
        reserved_bytes = units.parse_size(gpu_reserved, what="--gpu-reserved", zero_ok=True)
        if reserved_bytes >= hardware.capacity_bytes:
            raise InputError(f"{reserved_bytes} B in use leaves nothing of the GPU's {hardware.capacity_bytes} B",
                             where="--gpu-reserved")
    features = None
    if sglang_args is not None:
        features = sglang_features(model, spec, sglang_args, rate=rate, prompt=prompt, ranks=tp * pp,
                                   fraction=gpu_util is not None)
    elif vllm_args is not None or rate is not None or prompt is not None:
        facts = hardware.facts if hardware is not None else None
        spec, features, weight_fmt = launch_features(
            model, spec, vllm_args, tp=tp, engine_version=engine_version, weight_fmt=weight_fmt, rate=rate,
            prompt=prompt, capability=facts.compute_capability if facts is not None and not facts.rocm else None)
    return EngineRequest(
        spec=spec, seq=seq_tokens, seq_auto=seq_auto, batch=batch, kv_dtype=kv_dtype, weight_fmt=weight_fmt, tp=tp, pp=pp,
        hardware=hardware, gpu_util=util, reserve_bytes=reserve_bytes,
        kv_cache_memory=(units.parse_size(kv_cache_memory, what=at("--kv-cache-memory")) if kv_cache_memory is not None
                         else None),
        block_size=block_size, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
        engine_version=engine_version, gpu_reserved_bytes=reserved_bytes,
        engine_options=parse_engine_options(engine_options), features=features, site=site,
        origins=tuple(origins.items()),
    )


def parse_engine_options(items: list[str] | tuple[str, ...] | None) -> tuple[tuple[str, str], ...] | None:
    """--engine-option KEY=VALUE (repeatable) -> ((key, value), ...); a key given twice is an error."""
    if not items:
        return None
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        key, value = key.strip().lower().replace("-", "_"), value.strip()
        if not sep or not key or not value:
            raise InputError(f"{item!r} is not KEY=VALUE", where="--engine-option", hint="e.g. --engine-option backend=tensorrt")
        if key in out:
            raise InputError(f"{key} given twice", where="--engine-option")
        out[key] = value
    return tuple(out.items())


# the model is kvplan's MODEL argument: --vllm-args refuses it
_MODEL_OPTIONS = {"model": "MODEL", "hf_config_path": "MODEL"}
# `vllm serve` options that a kvplan flag also gives: vLLM's dest -> (build_request's parameter, the flag, its
# default); --vllm-args may give them as vLLM spells them (a pasted launch is not sent back to be rewritten)
_VLLM_CORE = {"max_model_len": ("seq", "--seq", None), "tensor_parallel_size": ("tp", "--tp", None),
              "pipeline_parallel_size": ("pp", "--pp", 1), "gpu_memory_utilization": ("gpu_util", "--gpu-util", None),
              "kv_cache_dtype": ("kv_dtype", "--kv-dtype", "auto"),
              "kv_cache_memory_bytes": ("kv_cache_memory", "--kv-cache-memory", None),
              "block_size": ("block_size", "--block-size", None), "max_num_seqs": ("max_num_seqs", "--max-num-seqs", None),
              "max_num_batched_tokens": ("max_num_batched_tokens", "--max-num-batched-tokens", None),
              "dtype": ("dtype", "--dtype", None)}


def _vllm_value(dest: str, value, spec: ModelSpec):
    """A parsed `vllm serve` value as the kvplan flag takes it (None: the flag stays at its default)."""
    from decimal import Decimal, localcontext
    from fractions import Fraction

    if dest == "max_model_len":
        return "auto" if value == -1 else str(value)
    if dest == "gpu_memory_utilization":
        if isinstance(value, Fraction):  # exact (serve_args keeps decimal text exact): its decimal digits
            with localcontext() as ctx:
                ctx.prec = 60
                return str(Decimal(value.numerator) / Decimal(value.denominator))
        return str(value)
    if dest == "kv_cache_memory_bytes":
        return str(value)
    if dest == "dtype":
        # it sets the weight bytes only of an unquantized checkpoint (as check's vLLM reader reads it)
        if value == "auto" or spec.weights_bytes is not None or (spec.weight_dtype or spec.dtype) not in (
                "bf16", "fp16", "fp32", "bfloat16", "float16", "float32"):
            return None
        return engines.get("vllm").options.DTYPE_WEIGHTS[value]
    return value


def _merge_vllm_core(vllm_args: str, given: dict, spec: ModelSpec, *,
                     engine_version: str | None) -> tuple[dict, dict[str, str]]:
    """kvplan's flag values with the `vllm serve` options of --vllm-args that give the same setting; a setting given
    both ways with two values is an error (exit 2)."""
    args = engines.get("vllm").options.parse_command_line(vllm_args, where="--vllm-args", version=engine_version)
    return _merge_core(args, _VLLM_CORE, given, lambda dest, value: _vllm_value(dest, value, spec), where="--vllm-args",
                       same=lambda ours, value: False)


def _merge_core(args, table: dict, given: dict, value_of, *, where: str, same) -> tuple[dict, dict[str, str]]:
    """kvplan's flag values with the launch's options that give the same setting (`table`: the engine's dest ->
    (build_request's parameter, the flag, its default)); the same setting given both ways with two values is bad
    input naming both (exit 2). `same(ours, theirs)`: two spellings of one value the plain comparison misses.
    Returns (the values, kvplan's flag -> the launch option that gave its value as written: '--vllm-args -tp')."""
    out = dict(given)
    origins: dict[str, str] = {}
    for dest, (param, flag, default) in table.items():
        if not args.given(dest):
            continue
        value = value_of(dest, args.get(dest))
        if value is None:
            continue
        ours = given[param]
        if (ours is not None and ours != default and str(ours).strip().lower() != str(value).lower()
                and not same(ours, value)):
            raise InputError(f"{args.written.get(dest, dest)} {value} and {flag} {ours} disagree", where=where,
                             hint="give the setting once")
        out[param] = value
        origins[flag] = f"{where} {args.written.get(dest, dest)}"
    return out, origins


def _refuse_launch_options(args, core: dict[str, str], unmodelled: list[tuple[str, str]], *, where: str) -> None:
    """An engine launch given as --vllm-args / --sglang-args may not restate what kvplan's own flags say (exit 2:
    one place for each figure) nor set an option kvplan does not model (exit 3: refuse rather than guess)."""
    for dest, flag in core.items():
        if args.given(dest):
            raise InputError(f"{args.written.get(dest, dest)} is kvplan's {flag}", where=where, hint=f"give it as {flag}")
    if unmodelled:
        written, why = unmodelled[0]
        raise UnsupportedError(f"{written} is set ({why}); kvplan does not model it", where=f"{where}: {written}",
                               hint="kvplan refuses rather than guesses")


def launch_features(model: str, spec: ModelSpec, vllm_args: str | None, *, tp: int, engine_version: str | None,
                    weight_fmt: WeightFormat | None, rate: str | None, prompt: str | None,
                    capability: str | None = None):
    """--vllm-args: the extra options of a `vllm serve` launch (speculative decoding, LoRA, offload, parallelism, KV
    connectors, ...), read by vLLM's own option table; and --rate / --prompt for a KV connector's link.
    Returns (the model as the launch builds it, Features, the weight format)."""
    import dataclasses
    from pathlib import Path

    # --engine vllm only, and the config.json reader only with --vllm-args: the features record, yamlio and hf_config
    # (about 45 ms together, python -X importtime) stay off the other engines' and the static estimate's start-up
    from kvplan.core import yamlio
    from kvplan.engines.features import Features
    from kvplan.model import hf_config

    features = Features()
    if vllm_args is not None:
        vllm = engines.get("vllm")
        launch = vllm.launch
        args = vllm.options.parse_command_line(vllm_args, where="--vllm-args", version=engine_version)
        _refuse_launch_options(args, _MODEL_OPTIONS, vllm.options.unmodelled(args), where="--vllm-args")
        raw = None
        path = Path(model).expanduser()
        config = hf_config.find_config_json(path) if path.exists() else None
        if config is not None:
            raw = (yamlio.load_json(config), None)
        features, spec, _ = launch.read(args, spec, raw, where="--vllm-args", tp=tp)
        if features.quantization is not None:
            weight_fmt = launch.online_quantization(args, spec, raw, weight_fmt, where="--vllm-args: --quantization",
                                                    capability=capability)
    if rate is not None:
        features = dataclasses.replace(features, rate=_rate(rate))
    if prompt is not None:
        features = dataclasses.replace(features, prompt_tokens=units.parse_tokens(prompt, what="--prompt"))
    return spec, (features if features.any else None), weight_fmt


# `launch_server` options that kvplan's own flags also give: SGLang's dest -> (build_request's parameter, the flag,
# its default); --sglang-args may give them as SGLang spells them (a pasted launch is not sent back to be rewritten)
_SGLANG_CORE = {"context_length": ("seq", "--seq", None), "tp_size": ("tp", "--tp", None), "pp_size": ("pp", "--pp", 1),
                "mem_fraction_static": ("gpu_util", "--gpu-util", None), "kv_cache_dtype": ("kv_dtype", "--kv-dtype", "auto"),
                "page_size": ("block_size", "--block-size", None),
                "max_running_requests": ("max_num_seqs", "--max-num-seqs", None),
                "chunked_prefill_size": ("max_num_batched_tokens", "--max-num-batched-tokens", None),
                "dtype": ("dtype", "--dtype", None)}
# the model is kvplan's MODEL argument: --sglang-args refuses it
_SGLANG_MODEL = {"model_path": "MODEL"}
# SGLang's --dtype choices (server_args.py) in kvplan's names
_SGLANG_DTYPES = {"half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32"}


def _sglang_args(sglang_args: str):
    import shlex

    try:
        words = shlex.split(sglang_args)
    except ValueError as err:
        raise InputError(f"is not a command line: {err}", where="--sglang-args") from None
    return engines.get("sglang").options.parse_argv(words, where="--sglang-args")


def _sglang_value(dest: str, value, spec: ModelSpec):
    """A parsed launch_server value as the kvplan flag takes it (None: the flag stays at its default)."""
    if dest == "context_length":
        return str(value)
    if dest == "mem_fraction_static":
        return _vllm_value("gpu_memory_utilization", value, spec)  # the same exact decimal text
    if dest == "chunked_prefill_size" and value == -1:
        return None  # -1 turns chunking off; read as check reads it (kvplan/check/readers/sglang_launch.py)
    if dest == "dtype":
        # it sets the weight bytes only of an unquantized checkpoint (as check's SGLang reader reads it)
        if value == "auto" or spec.weights_bytes is not None or (spec.weight_dtype or spec.dtype) not in (
                "bf16", "fp16", "fp32"):
            return None
        return _SGLANG_DTYPES[value]
    return value


def _merge_sglang_core(sglang_args: str, given: dict, spec: ModelSpec) -> tuple[dict, dict[str, str]]:
    """kvplan's flag values with the launch_server options of --sglang-args that give the same setting; kvplan's
    generic --kv-dtype fp8 and SGLang's fp8_e4m3 are one setting (the engine record's kv_fp8_name)."""
    fp8 = engines.get("sglang").flags.kv_fp8_name
    return _merge_core(_sglang_args(sglang_args), _SGLANG_CORE, given,
                       lambda dest, value: _sglang_value(dest, value, spec), where="--sglang-args",
                       same=lambda ours, value: str(ours).strip().lower() == "fp8" and value == fp8)


def sglang_features(model: str, spec: ModelSpec, sglang_args: str, *, rate: str | None, prompt: str | None,
                    ranks: int | None, fraction: bool | None = None):
    """--sglang-args: the extra options of a `python -m sglang.launch_server` launch (disaggregation, speculative
    decoding), read by SGLang's own option table (the sglang record's option part); --rate / --prompt size a
    disaggregated server's link; `ranks`: TP x PP as kvplan's flags give them (None: unknown, read as more than one
    GPU); `fraction`: whether kvplan's flags give --mem-fraction-static. Returns Features (None when the options set
    nothing kvplan models)."""
    import dataclasses

    from kvplan.engines.features import Features  # --sglang-args only (see launch_features)

    sglang = engines.get("sglang")
    args = _sglang_args(sglang_args)
    blocked = sglang.options.unmodelled(args, ranks=2 if ranks is None else ranks, fraction=fraction)
    _refuse_launch_options(args, _SGLANG_MODEL, blocked, where="--sglang-args")
    opts = sglang.launch.read(args, spec, where="--sglang-args")
    features = Features(sglang=opts)
    if rate is not None or prompt is not None:
        if opts is None or opts.disaggregation_mode is None:
            raise InputError("a link is sized for a disaggregated server", where="--rate" if rate is not None else "--prompt",
                             hint="add --disaggregation-mode prefill|decode to --sglang-args")
        if rate is not None:
            features = dataclasses.replace(features, rate=_rate(rate))
        if prompt is not None:
            features = dataclasses.replace(features, prompt_tokens=units.parse_tokens(prompt, what="--prompt"))
    return features if features.any else None


def _rate(rate: str) -> float:
    try:
        value = float(rate)
    except ValueError:
        raise InputError(f"must be a number of requests per second, got {rate!r}", where="--rate") from None
    if not value > 0 or value != value or value == float("inf"):
        raise InputError(f"must be a positive number of requests per second, got {rate!r}", where="--rate")
    return value


def override_spec(spec: ModelSpec, *, kv_heads: int | None, head_dim: int | None) -> ModelSpec:
    """What-if: the same model with other KV heads or head dim on every attention layer."""
    mapping = spec_to_mapping(spec)
    if kv_heads is not None:
        mapping["kv_heads"] = kv_heads
        (mapping.get("layout") or {}).pop("kv_heads", None)
    if head_dim is not None:
        mapping["head_dim"] = head_dim
        mapping.pop("v_head_dim", None)
    try:
        return spec_from_mapping(mapping, source="--kv-heads/--head-dim")
    except InputError as err:
        raise InputError(err.what, where="--kv-heads" if kv_heads is not None else "--head-dim", hint=err.hint) from None


@contextmanager
def at_origins(req: EngineRequest) -> Iterator[None]:
    """An engine's error about a setting the user pasted in the engine's own spelling (--vllm-args -tp 3) is located
    at that option, not at the kvplan flag the engine names (--tp): the same relocation `kvplan check` makes to a
    file's keys (check/judge.py)."""
    try:
        yield
    except KvplanError as err:
        pasted = dict(req.origins).get(err.where or "")
        if pasted is not None:
            err.where = pasted
        raise
