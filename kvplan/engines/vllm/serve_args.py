"""`vllm serve` arguments read the way the vLLM release a file pins reads them: from a `--config` YAML file or a
command line.

vLLM builds its `serve` parser from EngineArgs, FrontendArgs and the serve subcommand
(vllm/engine/arg_utils.py EngineArgs.add_cli_args, vllm/entrypoints/openai/cli_args.py
make_arg_parser, vllm/entrypoints/cli/serve.py). Its option list (every action's option strings, value type,
choices and default) is data here, one table per studied release in kvplan/data/vllm_options/<release>.json,
dumped from that release's own parser object by scripts/vllm_option_table.py (torch stubbed; see its docstring
to regenerate or add a release). A launch is read by the table of the newest studied release at or before the
release it names (0.19.5 -> 0.19.1's table), so an option that release accepts is accepted here and anything else
is refused with a suggestion.

How vLLM turns a config file into arguments (vllm/utils/argparse_utils.py
FlexibleArgumentParser.load_config_file and parse_args), mirrored here:
  - each key becomes `--key`; underscores in the name become dashes (`max_model_len` works);
  - `true` adds the bare flag, `false` adds nothing (so `enforce-eager: false` is vLLM's default; 0.28+ pass
    `--no-KEY` where that flag exists);
  - a list adds its items as separate values, a mapping is passed as JSON, anything else as str(value),
    which is why `tensor-parallel-size: 4.0` is refused (int('4.0') fails in vLLM too);
  - argparse accepts an unambiguous prefix of an option (`--max-model` for `--max-model-len`).
Token counts use vLLM's human_readable_int: 1k = 1000, 1K = 1024, 25.6k = 25600, no decimals with
binary suffixes.

This module imports no yaml, typer or rich; it turns text and mappings into a ServeArgs record.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from kvplan.core import packaged
from typing import Any, Callable, Mapping

from kvplan.core.errors import InputError, KvplanError, did_you_mean
from kvplan.engines.runtime.options import exact_float as _exact_float
from kvplan.engines.runtime.options import human_readable_int
from kvplan.engines.runtime.options import ParseError as _ParseError, Parser as _Parser
from kvplan.engines.vllm import releases
from kvplan.core.units import parse_int
from kvplan.model.config_keys import text_config  # not hf_config: estimate of a bundled model never loads it

# a `version` below is any vLLM release string ("0.19.5"); DEFAULT_VERSION is the newest line's release
DEFAULT_VERSION = releases.DEFAULT.version

# Kinds of the tables (scripts/vllm_option_table.py names them after the argparse action and type):
#   flag: an on/off switch (BooleanOptionalAction, EnableDisableAction)   true: store_true
#   int, float, str, bool: one value     hint: vLLM's human_readable_int    hint_auto: that, or -1 / auto
#   opt_*: also "None" or "" for None    json: a JSON object (a mapping in YAML)
#   list_*: one or more values           optarg: zero or one value    append: repeatable    config: a config file
# EnableDisableAction (0.33, vllm/utils/argparse_utils.py FlexibleArgumentParser.__init__) also takes --disable-x
# for --enable-x and --enable-x for --disable-x: the tables list those among the negative spellings.
# Choices the table marks "checked_by config" (0.33's `Literal | str` options) parse as any string in vLLM and are
# refused by its config dataclass at start-up; kvplan refuses them at the key, which is where vLLM fails.


@dataclass(frozen=True)
class Option:
    dest: str
    kind: str
    flags: tuple[str, ...]  # positive spellings, then "!--no-x" negatives
    choices: tuple[str, ...] | None
    default: Any = None  # the release's parser default (None where it has none)

    @property
    def name(self) -> str:
        """The long option without dashes, as written in a config file: 'max-model-len'."""
        return self.flags[0][2:]


def check_version(version: str | None) -> str:
    """Any vLLM release ('0.19', '0.19.5', 'v0.33.0') -> the release as kvplan names it ('0.19.5'); None -> the
    newest line's. InputError for what is not a version, UnsupportedError for releases kvplan does not model."""
    return releases.release(version, where="--vllm-version").version


@lru_cache(maxsize=None)
def table_releases() -> tuple[str, ...]:
    """The studied releases whose option tables ship (kvplan/data/vllm_options/<release>.json), oldest first."""
    names = [e.name[:-5] for e in packaged.data_file("vllm_options").iterdir()
             if e.name.endswith(".json")]
    return tuple(sorted(names, key=releases.sort_key))


def table_release(version: str = DEFAULT_VERSION) -> str:
    """The studied release whose parser reads a launch of `version`: the newest one at or before it."""
    version = check_version(version)
    older = [t for t in table_releases() if releases.at_least(version, t)]
    return older[-1] if older else table_releases()[0]


def options(version: str = DEFAULT_VERSION) -> dict[str, Option]:
    """Every `vllm serve` option of that vLLM release, by dest ('max_model_len')."""
    return _table(table_release(version))


@lru_cache(maxsize=None)
def _table(table: str) -> dict[str, Option]:
    text = packaged.data_file("vllm_options", f"{table}.json").read_text(encoding="utf-8")
    out = {}
    for entry in json.loads(text)["options"]:
        flags = tuple(entry["flags"])
        negatives = tuple("!" + n for n in entry.get("negative", ()))
        choices = tuple(entry["choices"]) if "choices" in entry else None
        out[entry["dest"]] = Option(entry["dest"], entry["kind"], flags + negatives, choices, entry.get("default"))
    return out


def _by_flag(version: str) -> dict[str, Option]:
    return _flags(table_release(version))


@lru_cache(maxsize=None)
def _flags(table: str) -> dict[str, Option]:
    return {flag.lstrip("!"): opt for opt in _table(table).values() for flag in opt.flags}


# ------------------------------------------------------------------ vLLM's value parsers

# --dtype (the activation dtype; config/model.py _STR_DTYPE_TO_TORCH_DTYPE) -> the weight format it gives an
# unquantized checkpoint
DTYPE_WEIGHTS = {"half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32"}


def human_readable_int_or_auto(value: str) -> int:
    """max-model-len: a human_readable_int, or -1 / 'auto' (fit the length to the memory)."""
    value = value.strip()
    if value == "-1" or value.lower() == "auto":
        return -1
    return human_readable_int(value)


def _optional(inner: Callable[[str], Any]) -> Callable[[str], Any]:
    """vLLM's optional_type: '' and 'None' mean None."""

    def parse(value: str):
        return None if value in ("", "None") else inner(value)

    parse.__name__ = getattr(inner, "__name__", "value")
    return parse


def _int(value: str) -> int:
    """vLLM's int(value), read by kvplan's number parser (ASCII digits, bounded length)."""
    try:
        return parse_int(value, what=None, minimum=None)
    except InputError:
        raise ValueError(value) from None  # argparse words it as vLLM's parser does: "invalid int value: '4.0'"


_int.__name__ = "int"

def _bool(value: str) -> bool:
    """argparse's `type=bool` (a few 0.11 guided-decoding options): every non-empty string is True."""
    return bool(value)


_bool.__name__ = "bool"

_TYPES: dict[str, Callable[[str], Any]] = {
    "int": _int, "float": _exact_float, "str": str, "bool": _bool, "hint": human_readable_int,
    "hint_auto": human_readable_int_or_auto, "opt_int": _optional(_int), "opt_float": _optional(_exact_float),
    "opt_hint": _optional(human_readable_int), "opt_str": _optional(str), "json": str, "opt_json": _optional(str),
    "list_str": str, "list_int": _int, "list_opt_str": _optional(str), "list_opt_int": _optional(_int),
    "list_opt_float": _optional(_exact_float), "optarg": str, "append": str, "config": str,
}


def _parser(version: str) -> _Parser:
    return _table_parser(table_release(version))


@lru_cache(maxsize=None)
def _table_parser(table: str) -> _Parser:
    parser = _Parser(prog="vllm serve", add_help=False, argument_default=argparse.SUPPRESS, exit_on_error=False)
    parser.add_argument("model_tag", nargs="?")
    for opt in _table(table).values():
        kwargs: dict[str, Any] = {"dest": opt.dest}
        if opt.kind == "flag":
            on = [f for f in opt.flags if not f.startswith("!")]
            off = [f[1:] for f in opt.flags if f.startswith("!")]
            parser.add_argument(*on, dest=opt.dest, action="store_const", const=True)
            if off:
                parser.add_argument(*off, dest=opt.dest, action="store_const", const=False)
            continue
        if opt.kind == "true":
            kwargs["action"] = "store_true"
        else:
            kwargs["type"] = _TYPES[opt.kind]
            if opt.kind.startswith("list_"):
                kwargs["nargs"] = "+"
            elif opt.kind == "optarg":
                kwargs.update(nargs="?", const=True)
            elif opt.kind == "append":
                kwargs["action"] = "append"
            if opt.choices is not None:
                kwargs["choices"] = [_TYPES[opt.kind](c) for c in opt.choices]
        parser.add_argument(*opt.flags, **kwargs)
    return parser


# ------------------------------------------------------------------ the parsed result

@dataclass(frozen=True)
class ServeArgs:
    """The options a `vllm serve` launch sets explicitly (absent ones take vLLM's defaults)."""

    values: Mapping[str, Any]  # dest -> value as vLLM's parser produces it
    written: Mapping[str, str]  # dest -> the key or flag as the user wrote it (for error locations)
    notes: tuple[str, ...] = field(default=())
    version: str = DEFAULT_VERSION  # the vLLM release whose parser read it

    def get(self, dest: str, default: Any = None) -> Any:
        return self.values.get(dest, default)

    def given(self, dest: str) -> bool:
        return dest in self.values

    @property
    def model(self) -> str | None:
        return self.values.get("model")


def lookup(key: str, *, where: str, version: str = DEFAULT_VERSION) -> tuple[Option, str, str | None]:
    """The option a config key or command-line flag names, as vLLM's parser resolves it.

    Returns the option, the flag to hand to the parser ('--no-x' stays negative) and a note when the
    key was an abbreviation; refuses unknown and ambiguous keys.
    """
    flag = key if key.startswith("-") else "--" + key
    if flag.startswith("--"):
        # vLLM's parse_args turns underscores into dashes up to the first '.'
        flag = "--" + re.sub(r"^[^.]*", lambda m: m.group(0).replace("_", "-"), flag[2:], count=1)
    base = flag.split(".", 1)[0] if flag.startswith("--") else flag
    index = _by_flag(version)
    if base in index:
        opt = index[base]
        if base != flag and opt.kind != "json":
            raise InputError(f"{key!r}: only JSON options take dotted sub-keys", where=where)
        return opt, base, None
    if flag.startswith("--") and len(base) > 2:
        # argparse's allow_abbrev, which vLLM leaves on: a unique prefix selects the option
        starts = sorted(f for f in index if f.startswith(base))
        if len(starts) == 1:
            return index[starts[0]], starts[0], f"{key!r} is an abbreviation of {starts[0][2:]!r} (vLLM's parser accepts it)"
        if len(starts) > 1:
            raise InputError(f"{key!r} is ambiguous: it could be " + ", ".join(s[2:] for s in starts[:6])
                             + (", ..." if len(starts) > 6 else ""), where=where, hint="write the full option name")
    longs = sorted({o.name for o in options(version).values()})
    plain = key.lstrip("-").replace("_", "-")
    raise InputError(f"vLLM {table_release(version)} has no serve option {key!r}", where=where,
                     hint=did_you_mean(plain, longs) or "see `vllm serve --help`")


def _argv_from_mapping(data: Any, *, where: str, version: str) -> tuple[list[str], dict[str, str], list[str]]:
    """vLLM's load_config_file: a mapping -> argv; also the key each flag came from, and notes."""
    if not isinstance(data, Mapping):
        raise InputError(f"a vLLM config file holds a mapping of option: value, got {type(data).__name__}", where=where)
    argv: list[str] = []
    written: dict[str, str] = {}
    notes: list[str] = []
    for key, value in data.items():
        if not isinstance(key, str):
            raise InputError(f"option names are text, got {key!r}", where=where)
        opt, flag, note = lookup(key, where=f"{where}: {key}", version=version)
        if note:
            notes.append(note)
        if opt.dest in written:
            raise InputError(f"{opt.name!r} is given twice (as {written[opt.dest]!r} and {key!r})", where=f"{where}: {key}")
        written[opt.dest] = key
        if "." in key:
            argv.append(_DOTTED + opt.dest)  # a sub-key of a JSON option: vLLM merges it into the JSON
            continue
        if opt.kind in ("flag", "true") and not isinstance(value, bool):
            # vLLM would pass the value on as a stray positional argument (the model name!)
            raise InputError(f"{key!r} is a switch: write true or false, got {value!r}", where=f"{where}: {key}")
        if isinstance(value, list) and not opt.kind.startswith("list_"):
            raise InputError(f"{key!r} takes one value, got a list", where=f"{where}: {key}")
        if isinstance(value, bool):
            if value:
                argv.append(flag)
            elif releases.release(version).config_false_as_no_flag and f"--no-{key}" in _by_flag(version):
                argv.append(f"--no-{key}")  # 0.28+ pass false on as --no-KEY when that flag exists
        elif isinstance(value, list):
            if value:
                argv.append(flag)
                argv.extend(str(item) for item in value)
        elif isinstance(value, Mapping):
            argv += [flag, json.dumps(value)]
        else:
            argv += [flag, str(value)]
    return argv, written, notes


def _argv_from_command_line(tokens: list[str], *, where: str, load_config: Callable[[str], Any] | None, version: str
                            ) -> tuple[list[str], dict[str, str], list[str]]:
    """Normalise a `vllm serve ...` token list as vLLM's parse_args does; validate every option name."""
    if tokens[:1] == ["vllm"]:
        tokens = tokens[1:]
        if tokens[:1] != ["serve"]:
            raise InputError(f"only `vllm serve` command lines are understood, got `vllm {' '.join(tokens[:1])}`", where=where)
    if tokens[:1] == ["serve"]:
        tokens = tokens[1:]
    argv: list[str] = []
    written: dict[str, str] = {}
    notes: list[str] = []
    config_argv: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("-") or re.fullmatch(r"-\d+(\.\d+)?", token) or token == "-":
            argv.append(token)
            continue
        if token.startswith("-O") and token not in ("-O",):
            level = token[3:] if token[2:3] == "=" else token[2:]  # vLLM: -O3, -O=3 -> --optimization-level 3
            argv += ["--optimization-level", level]
            written["optimization_level"] = token
            continue
        if token == "-O":
            token = "--optimization-level"
        name, eq, inline = token.partition("=")
        opt, flag, note = lookup(name, where=f"{where}: {name}", version=version)
        if note:
            notes.append(note)
        written.setdefault(opt.dest, name)
        if "." in name and name.startswith("--"):
            if not eq and i < len(tokens):
                i += 1  # skip the sub-key's value
            argv.append(_DOTTED + opt.dest)
            continue
        if opt.kind == "config":
            if load_config is None:
                raise InputError("--config is not allowed here", where=f"{where}: --config")
            path = inline if eq else (tokens[i] if i < len(tokens) else None)
            if not eq:
                i += 1
            if path is None:
                raise InputError("--config needs a file", where=f"{where}: --config")
            sub_argv, sub_written, sub_notes = _argv_from_mapping(load_config(path), where=path, version=version)
            config_argv += sub_argv
            for dest, key in sub_written.items():
                written.setdefault(dest, f"{path}: {key}")
            notes += sub_notes
            continue
        argv.append(f"{flag}={inline}" if eq else flag)
    # vLLM inserts a config file's arguments before the command line's, so the command line wins
    return config_argv + argv, written, notes


_DOTTED = "\0dotted:"  # marks a JSON option set through a dotted sub-key (kvplan needs only that it is set)


def _parse(argv: list[str], written: dict[str, str], notes: list[str], *, where: str, positional: bool,
           version: str) -> ServeArgs:
    dotted = [a[len(_DOTTED):] for a in argv if a.startswith(_DOTTED)]
    argv = [a for a in argv if not a.startswith(_DOTTED)]
    try:
        namespace, extra = _parser(version).parse_known_args(argv)
    except (_ParseError, argparse.ArgumentError) as err:
        message = str(err)
        match = re.match(r"argument ([^:]+): (.*)", message)
        key = where
        if match:
            flag = match.group(1).split("/")[0]
            opt = _by_flag(version).get(flag)
            key = f"{where}: {written.get(opt.dest, opt.name) if opt else flag}"
            message = match.group(2)
            if opt is not None and opt.choices and "invalid choice" in message:
                bad = re.search(r"invalid choice: '?([^' ]*)'?", message)
                hint = did_you_mean(bad.group(1), opt.choices) if bad else None
                raise InputError(f"vLLM would refuse it: {message}", where=key, hint=hint) from None
        raise InputError(f"vLLM would refuse it: {message}", where=key) from None
    if extra:
        raise InputError(f"vLLM would refuse it: unrecognized arguments: {' '.join(extra)}", where=where)
    values = dict(vars(namespace))
    tag = values.pop("model_tag", None)
    if tag is not None and not positional:
        raise InputError(f"vLLM would take {tag!r} as the model name: a config file gives every value under its option",
                         where=where)
    if tag is not None:
        if "model" in values and values["model"] != tag:
            raise InputError(f"model given twice: {tag!r} and {values['model']!r}", where=where)
        values["model"] = tag
        written.setdefault("model", "model")
    for dest in dotted:
        values.setdefault(dest, "<set by sub-keys>")
    return ServeArgs(values=values, written=dict(written), notes=tuple(notes), version=version)


def parse_config(data: Any, *, where: str, version: str | None = None) -> ServeArgs:
    """A `vllm serve --config` file's contents (one YAML mapping) -> ServeArgs."""
    version = check_version(version)
    argv, written, notes = _argv_from_mapping(data, where=where, version=version)
    return _parse(argv, written, notes, where=where, positional=False, version=version)


def parse_command_line(text: str, *, where: str = "--vllm-args", load_config: Callable[[str], Any] | None = None,
                       version: str | None = None) -> ServeArgs:
    """'vllm serve meta-llama/Llama-3.1-8B --max-model-len 32K -tp 2' (with or without 'vllm serve')."""
    try:
        tokens = shlex.split(text)
    except ValueError as err:
        raise InputError(f"cannot split the command line: {err}", where=where, hint="check the quotes") from None
    if not tokens:
        raise InputError("empty command line", where=where, hint="e.g. \"serve meta-llama/Llama-3.1-8B --max-model-len 32K\"")
    return parse_argv(tokens, where=where, load_config=load_config, version=version)


def parse_argv(tokens: list[str], *, where: str, load_config: Callable[[str], Any] | None = None,
               version: str | None = None, positional: bool = True) -> ServeArgs:
    """A `vllm serve` argument list already split into words (a Kubernetes container's command + args, a compose
    `command:` list). `positional=False` for vllm.entrypoints.openai.api_server, which takes --model only."""
    version = check_version(version)
    argv, written, notes = _argv_from_command_line(list(tokens), where=where, load_config=load_config, version=version)
    return _parse(argv, written, notes, where=where, positional=positional, version=version)


# ------------------------------------------------------------------ what each option does to GPU memory

# Set onto kvplan's EngineRequest (or its model / GPU count) by the readers (kvplan/check/readers/vllm_serve.py);
# the extra options that change memory become EngineRequest.features (kvplan/engines/vllm/launch.py FEATURE_OPTIONS).
MODELLED = frozenset({
    "model", "hf_config_path", "served_model_name", "dtype", "max_model_len", "tensor_parallel_size",
    "pipeline_parallel_size", "data_parallel_size", "gpu_memory_utilization", "kv_cache_memory_bytes",
    "kv_cache_dtype", "block_size", "max_num_seqs", "max_num_batched_tokens", "enable_prefix_caching",
    # kvplan/engines/features/ (docs/engines/features/)
    "speculative_config", "spec_method", "spec_model", "spec_tokens", "enable_lora", "max_loras", "max_lora_rank",
    "lora_dtype", "max_cpu_loras", "fully_sharded_loras", "lora_target_modules", "cpu_offload_gb", "cpu_offload_params",
    "kv_offloading_size", "kv_offloading_backend", "kv_transfer_config", "enable_expert_parallel",
    "decode_context_parallel_size", "prefill_context_parallel_size", "enable_eplb", "eplb_config", "all2all_backend",
    "nnodes", "data_parallel_size_local", "quantization", "kv_cache_dtype_skip_layers", "mamba_cache_dtype",
    "mamba_ssm_cache_dtype", "disable_sliding_window", "hf_overrides", "num_gpu_blocks_override", "attention_backend",
    "attention_config", "language_model_only", "limit_mm_per_prompt",
})

# Options that change what vLLM puts in GPU memory in ways kvplan does not model, with vLLM 0.19.0's
# default (from its parser). A launch that sets one to anything else cannot be judged (exit 3): kvplan
# refuses rather than guesses. The reason is given per option.
NOT_MODELLED: dict[str, tuple[Any, str]] = {
    # the prefetch offloader moves whole layers in groups, with prefetch buffers on the GPU
    "offload_group_size": (0, "weights offloaded to CPU memory in prefetched layer groups (prefetch buffers)"),
    "offload_params": ([], "weights offloaded to CPU memory in prefetched layer groups (prefetch buffers)"),
    "mamba_block_size": (None, "Mamba state block size"),
    "mamba_cache_mode": ("none", "Mamba prefix-cache states"),
    # 0.33: FlashInfer's GDN prefill (the Hopper default) aligns Qwen3-Next / Qwen3.5 blocks to its 64-token
    # checkpoints; kvplan takes the backend from the GPU (kvplan/engines/vllm.py), not from this option
    "gdn_prefill_backend": (None, "the GDN prefill kernel sets Qwen3-Next's attention block and state blocks"),
    "mm_encoder_only": (False, "only the multimodal encoder is loaded"),
    "runner": ("auto", "pooling and draft runners allocate no generation KV cache"),
    "convert": ("auto", "a converted (pooling) model"),
    "override_attention_dtype": (None, "attention computed in another dtype"),
    # 0.33.0 only
    "quantization_config": (None, "online or forced weight quantization changes the weight bytes by layer type"),
    "mm_ipc_gpu_memory_gb": (0, "GPU memory for multimodal IPC"),
    "use_replayssm": (False, "Mamba replay buffers"),
    "enable_mamba_shared_prefix_checkpoint": (False, "Mamba prefix-cache states"),
    "engram_config": (None, "engram memory"),
    "max_num_scheduled_tokens": (None, "a token budget kvplan's activation model does not take"),
    "max_num_active_seqs": (None, "a sequence limit kvplan's activation model does not take"),
}

# Options that move only CUDA-graph capture memory, which kvplan's vLLM budget counts with vLLM's
# defaults: judged, with a note that the figure assumes the defaults. (--enforce-eager is modelled: no graphs,
# launch.read / Features.enforce_eager.)
CUDA_GRAPH_OPTIONS = ("compilation_config", "cudagraph_capture_sizes", "max_cudagraph_capture_size",
                      "optimization_level")


def _is_default(value: Any, default: Any) -> bool:
    if default is None and value is False:
        return True  # a switch whose default is "unset" (None) turned off explicitly: still off
    if isinstance(default, list):
        return not value
    if isinstance(default, str) and default.startswith("{"):
        return value in (None, "", "{}")
    return value == default


def unmodelled(args: ServeArgs) -> list[tuple[str, str]]:
    """(key as written, why) for each set option that changes memory in ways kvplan does not model."""
    out = []
    for dest, (default, why) in NOT_MODELLED.items():
        if not args.given(dest) or _is_default(args.get(dest), default):
            continue
        if dest == "runner" and args.get(dest) == "generate":
            continue
        if dest == "convert" and args.get(dest) == "none":
            continue
        out.append((args.written.get(dest, dest), why))
    return out


def option_info(version: str | None) -> Callable[[str], tuple[bool | None, bool]]:
    """flag -> (whether it takes a value, None for an option the release lacks; whether its value changes what
    kvplan judges), for `kvplan check` to tell which values a file leaves to the environment it can drop."""
    line = releases.release(version).line if version else DEFAULT_VERSION
    relevant = (set(MODELLED) | set(NOT_MODELLED) | set(CUDA_GRAPH_OPTIONS) | {"config"}) - {"served_model_name"}

    def info(flag: str) -> tuple[bool | None, bool]:
        try:
            opt, _, _ = lookup(flag, where="", version=line)
        except KvplanError:
            return None, True
        return opt.kind not in ("flag", "true"), opt.dest in relevant
    return info


# ------------------------------------------------------------------ vLLM's maximum model length

# vllm/transformers_utils/model_arch_config_convertor.py: the smallest of these keys is the model's length
_MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                 "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")


def derived_max_model_len(config: Mapping, tokenizer_config: Mapping | None = None) -> tuple[int | None, float | None]:
    """(the max_model_len vLLM uses when none is given, the largest it accepts) for a config.json.

    vllm/config/model.py _get_and_verify_max_len: the smallest length key of the (text) config, capped by
    the tokenizer's model_max_length, times the RoPE scaling factor (not for su/longrope/llama3 types,
    nor Gemma-3, whose length is already scaled; yarn starts from original_max_position_embeddings).
    LongRoPE models default to original_max_position_embeddings. A length above the limit is refused
    unless it is within config.json's model_max_length. (None, None) when the config names no length.
    """
    cfg = text_config(config)
    lengths = [cfg[k] for k in _MAX_LEN_KEYS if isinstance(cfg.get(k), (int, float)) and not isinstance(cfg.get(k), bool)]
    if not lengths:
        return None, None
    derived: float = min(lengths)
    if tokenizer_config and isinstance(tokenizer_config.get("model_max_length"), (int, float)):
        derived = min(derived, tokenizer_config["model_max_length"])
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling")
    longrope = False
    if isinstance(rope, Mapping) and "gemma3" not in str(cfg.get("model_type", "")):
        groups = list(rope.values()) if rope and all(isinstance(v, Mapping) for v in rope.values()) else [rope]
        factor = 1.0
        for rp in groups:
            kind = rp.get("rope_type") or rp.get("type") or "default"
            longrope = longrope or kind == "longrope"
            if kind not in ("su", "longrope", "llama3"):
                factor = rp.get("factor", factor)
                if kind == "yarn":
                    derived = rp.get("original_max_position_embeddings") or cfg.get("original_max_position_embeddings") or derived
        derived *= factor if factor is not None else 1.0
    limit = derived
    if isinstance(cfg.get("model_max_length"), (int, float)):
        limit = max(limit, cfg["model_max_length"])
    default = int(cfg.get("original_max_position_embeddings", derived)) if longrope else int(derived)
    return default, limit
