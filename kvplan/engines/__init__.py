"""Memory models of serving engines behind one interface, and their registry.

Every engine package (static.py, vllm/, sglang/, trtllm/) defines `ENGINE`, an `Engine`: its name, how it
reads a request's KV-cache dtype, its estimate, and how it spells the knobs a fix turns. Commands ask the
registry (`get`) and never import an engine by hand; adding an engine is its package plus a line in
`_PACKAGES` (and its view in kvplan/cli/views/). Results are frozen dataclasses extending
engines/result.py's ContractEstimate; the paged engines' results also give check a typed `pool_view()`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from kvplan.core.dtypes import DType
from kvplan.core.errors import InputError, did_you_mean
from kvplan.engines.request import EngineRequest, Hardware

# name -> the module that defines ENGINE; imported on first use (start-up time)
_PACKAGES = {"static": "kvplan.engines.static", "vllm": "kvplan.engines.vllm", "sglang": "kvplan.engines.sglang",
             "trtllm": "kvplan.engines.trtllm"}
ENGINE_NAMES = tuple(_PACKAGES)


def refuse_unread_options(req: EngineRequest, title: str, keys: tuple[str, ...]) -> None:
    """InputError (at --engine-option, which check relocates to a file's engine_options) for a key the engine does
    not read. Engine.accepts runs it for the CLI; an engine whose options a deployment file also gives runs it too."""
    for key, _ in req.engine_options or ():
        if key not in keys:
            hint = f"{title} reads " + ", ".join(keys) if keys else f"{title} takes no --engine-option"
            raise InputError(f"{title} has no engine option {key!r}", where="--engine-option", hint=hint)


@dataclass(frozen=True)
class EngineFlags:
    """How one engine spells the knobs a fix turns (engines/fixes.py), as its users type them."""

    max_len: str  # e.g. "--max-model-len"
    tp: str
    kv_fp8: str  # the whole flag with its value
    util: str | None  # the memory-fraction flag ("{F}" where the value goes), None when the engine has none
    kv_memory: str | None  # an explicit cache-size flag
    kv_fp8_name: str = "fp8"  # the engine's spelling of an fp8 (e4m3) KV cache
    util_limit: Fraction = Fraction(99, 100)

    def util_flag(self, value: str) -> str:
        return self.util.replace("{F}", value) if "{F}" in self.util else f"{self.util} {value}"


@dataclass(frozen=True)
class Engine:
    """One serving engine's memory model."""

    name: str  # registry key: static, vllm, sglang, trtllm
    title: str  # as people write it: vLLM, SGLang, TensorRT-LLM
    estimate: Callable[..., Any]  # (EngineRequest, *, search_max_seq=True) -> its result dataclass
    kv_dtype: Callable[[EngineRequest], DType]  # the request's KV-cache dtype as this engine reads its spelling
    flags: EngineFlags | None  # None: no launch flags to suggest (static)
    # the memory fraction a request's result was judged at (None: the engine has no such knob or it was not
    # used, e.g. --kv-cache-memory); the fix search starts above it
    util_of: Callable[[EngineRequest, Any], Fraction | None] = lambda req, result: None
    # the highest memory fraction this engine accepts for the request behind a result (vLLM: what is free after
    # the CUDA context at start-up); None: flags.util_limit
    util_max: Callable[[Any], Fraction | None] = lambda result: None
    # the --engine-option keys this engine reads, and whether its budget subtracts --gpu-reserved
    option_keys: tuple[str, ...] = ()
    takes_gpu_reserved: bool = False
    # whether the estimate reads EngineRequest.features (speculative decoding, LoRA, offload, parallelism, KV
    # connectors: kvplan/engines/features/); an engine that does not refuses a request carrying them
    takes_features: bool = False

    def accepts(self, req: EngineRequest) -> None:
        """InputError for an --engine-option key, --gpu-reserved or launch features this engine does not read (never
        ignored)."""
        refuse_unread_options(req, self.title, self.option_keys)
        if req.features is not None and not self.takes_features:
            raise InputError(f"the {self.name} engine does not model speculative decoding, LoRA, offload tiers, expert, "
                             "data or context parallelism or KV connectors", where="--vllm-args",
                             hint="they apply to --engine vllm")
        if req.gpu_reserved_bytes is not None and not self.takes_gpu_reserved:
            raise InputError(f"the {self.name} engine's budget does not read it", where="--gpu-reserved",
                             hint="it applies to --engine sglang and trtllm")


def get(name: str) -> Engine:
    """The engine registered under `name` (case and spaces forgiven); InputError at --engine otherwise."""
    key = name.strip().lower()
    if key not in _PACKAGES:
        raise InputError(f"unknown engine {name!r}", where="--engine",
                         hint=did_you_mean(name, ENGINE_NAMES) or "one of " + ", ".join(ENGINE_NAMES))
    return importlib.import_module(_PACKAGES[key]).ENGINE


__all__ = ["Engine", "EngineFlags", "EngineRequest", "Hardware", "ENGINE_NAMES", "get"]
