"""Python values as the command-line options read them: the API takes 32768 or "32K", 0.9 or "90%", ["a", "b"] or
"a", and hands the request builder the same text a shell would, so both paths validate in one place."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from os import PathLike

from kvplan.core.errors import InputError
from kvplan.core.units import parse_int
from kvplan.model import resolve

Text = str | int | float | None


def text(value: Text, flag: str) -> str | None:
    """A number or a string as an option's text; None stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"must be a number or a string, got {type(value).__name__}", where=flag)
    return str(value)


def count(value, flag: str) -> int | None:
    """A whole number (an int, or its digits as a string); None stays None. The range is the builder's to check."""
    return None if value is None else parse_int(value, what=flag, minimum=None)


def names(value, flag: str) -> list[str] | None:
    """A repeatable option: one string or path, or several; None stays None."""
    if value is None:
        return None
    if isinstance(value, (str, PathLike)):
        return [str(value)]
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise InputError(f"must be a string or a list of strings, got {type(value).__name__}", where=flag)
    out = []
    for item in value:
        if not isinstance(item, (str, PathLike)):
            raise InputError(f"must hold strings, got {type(item).__name__}", where=flag)
        out.append(str(item))
    return out


def engine_options(value, flag: str = "--engine-option") -> list[str] | None:
    """--engine-option as KEY=VALUE strings, from those strings or from a mapping {key: value}."""
    if isinstance(value, Mapping):
        return [f"{key}={text(item, f'{flag} {key}')}" for key, item in value.items()]
    return names(value, flag)


def path(value, flag: str) -> str | None:
    """One file or folder option: a string or a path; None stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, PathLike):
        return str(value)
    raise InputError(f"must be a path, got {type(value).__name__}", where=flag)


def model_lookup(models_dir, offline: bool):
    """The resolver --models-dir and --offline make, with each model read once inside (kvplan/model/resolve.py)."""
    from contextlib import ExitStack

    stack = ExitStack()
    stack.enter_context(resolve.using(resolve.lookup_from_options(names(models_dir, "--models-dir"), bool(offline))))
    stack.enter_context(resolve.remembering())
    return stack


# the engine estimate, sweep and plot run when a GPU is given and no engine named (default_engine)
GPU_DEFAULT_ENGINE = "vllm"
DEFAULT_ENGINE_NOTE = ("judged by vLLM, the default engine with a GPU; --engine static gives the textbook figures (one "
                       "contiguous cache, no engine overhead), docs/engines/README.md")


def default_engine(engine: str | None, *, gpu=None, gpu_mem=None, kv_cache_memory=None, reserve=None,
                   vllm_only: bool = False, sglang_args=None) -> str:
    """The engine estimate, sweep and plot run when none is named: with a GPU, vLLM, so that a "fits" is never the
    textbook's alone where the engine most deployments run would not start; without one, the textbook cache figures
    (static). Options only one engine reads choose that engine (--reserve: static, --sglang-args: sglang,
    `vllm_only`: --vllm-args and the like: vllm)."""
    if engine is not None:
        return engine
    if sglang_args is not None:
        return "sglang"
    if reserve is not None:
        return "static"
    if gpu is not None or gpu_mem is not None or kv_cache_memory is not None or vllm_only:
        return GPU_DEFAULT_ENGINE
    return "static"
