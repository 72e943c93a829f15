"""A site profile: the budget terms a site's own start-up logs measured (`kvplan calibrate LOG... --save FILE`),
applied by every engine's budget model (`--calibration FILE` on estimate, check, sweep, plot). One format for
vLLM, SGLang and TensorRT-LLM: YAML or JSON, keys as below, validated strictly (docs/engines/calibration.md;
JSON Schema: kvplan/data/site-profile.schema.json).

A term left None keeps the engine's own model of it. What each term replaces, per engine (`adjusted_available`
is the one statement of it, for the engines' budgets and for calibrate's leave-one-log-out score):
- non_torch_bytes: the memory outside torch the engine sees appear during its profile run (vLLM's "non-torch
  forward increase", TensorRT-LLM's "Memory used outside torch"); measured at the (tp, pp) layouts listed in
  `layouts` and applied to those only (it is mostly communication buffers, which scale with the layout);
- activation_scale: multiplies the modelled activation peak of the profile run;
- cuda_graph_bytes: replaces the modelled CUDA-graph memory where the engine subtracts it from the budget;
- memory_in_use_bytes: memory already taken on each GPU before the engine starts (drivers, a desktop's display,
  WSL2, other processes), beyond the CUDA context kvplan models; it lowers what the engine sees free, and so the
  budget by the share of free memory the engine's budget takes (SGLang's mem_fraction_static, TensorRT-LLM's
  free_gpu_memory_fraction; vLLM's v1 budget is a fraction of the total, so only its start-up check sees it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path
from typing import Any

from kvplan.core.errors import InputError, did_you_mean
from kvplan.core import units, yamlio
from kvplan.core.yamlio import dump_yaml

FORMAT = "kvplan-site-profile/1"
ENGINES = ("vllm", "sglang", "trtllm")


@dataclass(frozen=True)
class SiteProfile:
    engine: str | None  # the engine the logs came from; None: applies to any
    memory_in_use_bytes: int = 0  # taken on each GPU before the engine starts
    non_torch_bytes: int | None = None  # replaces the modelled non-torch memory (CUDA context, NCCL, all-reduce)
    activation_scale: Fraction = Fraction(1)  # multiplies the modelled activation peak of the profile run
    cuda_graph_bytes: int | None = None  # replaces the modelled CUDA-graph memory
    fitted_on: tuple[str, ...] = ()  # the logs the terms were fitted on
    source: str | None = None  # the profile file
    layouts: tuple[tuple[int, int], ...] = ()  # (tp, pp) non_torch_bytes was measured at; empty: any layout
    leave_one_out_error_percent: float | None = None  # mean |error| of the available KV memory, each log left out
    leave_one_out_logs: int = 0  # logs in that mean

    def non_torch_for(self, tp: int, pp: int) -> int | None:
        """The non-torch memory to use for a (tp, pp) deployment, None to keep the engine's model."""
        if self.non_torch_bytes is None:
            return None
        if self.layouts and (tp, pp) not in self.layouts:
            return None
        return self.non_torch_bytes

    def activation_bytes(self, modelled: int) -> int:
        return math.ceil(modelled * self.activation_scale)

    def free_bytes(self, free: int) -> int:
        """What the engine sees free at start-up when the site keeps memory_in_use_bytes of it."""
        return free - self.memory_in_use_bytes


def adjusted_available(site: SiteProfile, *, available: int, activation_peak: int | None, non_torch: int | None,
                       cuda_graph: int | None, graphs_subtracted: bool, tp: int, pp: int,
                       term_share: Fraction | float = 1, in_use_share: Fraction | float = 0) -> int:
    """A modelled KV budget with the site's terms in place of the modelled ones: each term replaced moves the
    budget by what it adds or removes, times `term_share` (vLLM subtracts the terms from its budget: 1;
    TensorRT-LLM takes free_gpu_memory_fraction of what they leave); CUDA graphs only where the engine subtracts
    them; memory in use moves it by `in_use_share` of itself (see the module docstring)."""
    delta = 0
    if activation_peak is not None and site.activation_scale != 1:
        delta += site.activation_bytes(activation_peak) - activation_peak
    nt = site.non_torch_for(tp, pp)
    if nt is not None and non_torch is not None:
        delta += nt - non_torch
    if site.cuda_graph_bytes is not None and cuda_graph is not None and graphs_subtracted:
        delta += site.cuda_graph_bytes - cuda_graph
    out = available - int(delta * Fraction(term_share))
    if site.memory_in_use_bytes:
        out -= int(site.memory_in_use_bytes * Fraction(in_use_share))
    return out


@dataclass(frozen=True)
class SiteObservation:
    """The budget terms a log measured that a site profile is fitted from (engines/sitefit.py; each engine's calibrate.py fills it from a log), in bytes, each
    beside kvplan's modelled value where the model is known. None where the log does not print the term."""

    engine: str
    tp: int | None
    pp: int | None
    non_torch_bytes: int | None = None
    activation_peak_bytes: int | None = None
    modelled_activation_peak_bytes: int | None = None
    cuda_graph_bytes: int | None = None
    memory_in_use_bytes: int | None = None  # taken before the engine started: total - free - kvplan's context
    available_kv_bytes: int | None = None  # the logged budget (the error is scored on it)
    modelled_available_kv_bytes: int | None = None
    # the modelled terms the available memory was computed with (to re-score it under a profile)
    modelled_non_torch_bytes: int | None = None
    modelled_cuda_graph_bytes: int | None = None
    cuda_graph_subtracted: bool | None = None
    memory_fraction: float | None = None  # the share of freed memory the pool gets (SGLang, TensorRT-LLM)
    term_share: float | None = None  # the share of a change in the profiled terms that reaches the budget (None: 1)
    weights_bytes: int | None = None  # the weights the log says it loaded (not a profile term: explains a difference)
    modelled_weights_bytes: int | None = None



# ------------------------------------------------------------------------------------------ the file

_KEYS = {
    "format": "the format tag, " + FORMAT,
    "engine": "vllm, sglang or trtllm",
    "memory_in_use_bytes": "bytes (integer >= 0) or a size such as 600MiB",
    "non_torch_bytes": "bytes (integer >= 0), a size, or null",
    "layouts": "a list of [tp, pp] pairs",
    "activation_scale": "a positive number",
    "cuda_graph_bytes": "bytes (integer >= 0), a size, or null",
    "fitted_on": "a list of log names",
    "leave_one_out_error_percent": "a number >= 0 or null",
    "leave_one_out_logs": "an integer >= 0",
}


def profile_from_mapping(data: Any, *, where: str) -> SiteProfile:
    """Validate a loaded profile file: unknown keys, wrong types and negative sizes are InputErrors naming the key."""
    if not isinstance(data, dict):
        raise InputError("a site profile is a mapping of keys", where=where, hint="see docs/engines/calibration.md")
    for key in data:
        if key not in _KEYS:
            raise InputError(f"unknown key {key!r}", where=f"{where}: {key}",
                             hint=did_you_mean(str(key), list(_KEYS)) or "keys: " + ", ".join(_KEYS))
    if data.get("format") != FORMAT:
        raise InputError(f"format is {data.get('format')!r}, expected {FORMAT!r}", where=f"{where}: format",
                         hint="write it with `kvplan calibrate LOG... --save FILE`")
    engine = data.get("engine")
    if engine is not None and engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}", where=f"{where}: engine", hint="vllm, sglang or trtllm")

    def size(key: str, *, optional: bool) -> int | None:
        value = data.get(key)
        if value is None:
            if optional:
                return None
            return 0
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise InputError(f"must be {_KEYS[key]}, got {value!r}", where=f"{where}: {key}")
        if isinstance(value, int):
            if value < 0:
                raise InputError(f"must not be negative, got {value}", where=f"{where}: {key}")
            return value

        if value.strip() in ("0", "0B"):
            return 0
        return units.parse_size(value, what=f"{where}: {key}")

    scale = data.get("activation_scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, (int, float, str)):
        raise InputError(f"must be {_KEYS['activation_scale']}, got {scale!r}", where=f"{where}: activation_scale")
    try:
        scale_f = Fraction(Decimal(str(scale)))
    except (InvalidOperation, ValueError):
        raise InputError(f"must be {_KEYS['activation_scale']}, got {scale!r}", where=f"{where}: activation_scale") from None
    if scale_f <= 0:
        raise InputError(f"must be positive, got {scale}", where=f"{where}: activation_scale")
    layouts = data.get("layouts") or []
    if not isinstance(layouts, list) or not all(isinstance(x, list) and len(x) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in x) for x in layouts):
        raise InputError(f"must be {_KEYS['layouts']}, got {layouts!r}", where=f"{where}: layouts")
    fitted = data.get("fitted_on") or []
    if not isinstance(fitted, list) or not all(isinstance(x, str) for x in fitted):
        raise InputError(f"must be {_KEYS['fitted_on']}, got {fitted!r}", where=f"{where}: fitted_on")
    loo = data.get("leave_one_out_error_percent")
    if loo is not None and (isinstance(loo, bool) or not isinstance(loo, (int, float)) or loo < 0):
        raise InputError(f"must be {_KEYS['leave_one_out_error_percent']}, got {loo!r}",
                         where=f"{where}: leave_one_out_error_percent")
    n = data.get("leave_one_out_logs", 0)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InputError(f"must be {_KEYS['leave_one_out_logs']}, got {n!r}", where=f"{where}: leave_one_out_logs")
    return SiteProfile(engine=engine, memory_in_use_bytes=size("memory_in_use_bytes", optional=False),
                       non_torch_bytes=size("non_torch_bytes", optional=True), activation_scale=scale_f,
                       cuda_graph_bytes=size("cuda_graph_bytes", optional=True), fitted_on=tuple(fitted),
                       source=where, layouts=tuple((a, b) for a, b in layouts),
                       leave_one_out_error_percent=None if loo is None else float(loo), leave_one_out_logs=n)


def profile_to_mapping(site: SiteProfile) -> dict:
    """The file's keys (profile_from_mapping reads them back to an equal profile, source aside)."""
    scale = site.activation_scale
    return {
        "format": FORMAT,
        "engine": site.engine,
        "memory_in_use_bytes": site.memory_in_use_bytes,
        "non_torch_bytes": site.non_torch_bytes,
        "layouts": [list(x) for x in site.layouts],
        "activation_scale": str(Decimal(scale.numerator) / Decimal(scale.denominator)) if scale.denominator != 1
        else scale.numerator,
        "cuda_graph_bytes": site.cuda_graph_bytes,
        "fitted_on": list(site.fitted_on),
        "leave_one_out_error_percent": site.leave_one_out_error_percent,
        "leave_one_out_logs": site.leave_one_out_logs,
    }


def read_profile(path: str, *, engine: str | None = None) -> SiteProfile:
    """Load and validate a profile file (YAML, or JSON by its .json name); a profile fitted on another engine's
    logs is refused for `engine`."""
    p = Path(path).expanduser()
    data = yamlio.load_json(p) if p.suffix.lower() == ".json" else yamlio.load_yaml(p)
    site = profile_from_mapping(data, where=str(path))
    if engine is not None and site.engine is not None and site.engine != engine:
        raise InputError(f"the profile was fitted on {site.engine} logs; it does not apply to --engine {engine}",
                         where=f"--calibration {path}", hint=f"fit one from {engine} logs with kvplan calibrate --save")
    return site


def dump_profile(site: SiteProfile, path: str) -> str:
    """The file text for `path` (JSON for a .json name, else YAML)."""
    import json

    data = profile_to_mapping(site)
    if path.lower().endswith(".json"):
        return json.dumps(data, indent=2) + "\n"

    return "# kvplan site profile: written by `kvplan calibrate --save` (docs/engines/calibration.md)\n" + dump_yaml(data)
