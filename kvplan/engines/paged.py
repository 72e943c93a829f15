"""Arithmetic shared by the paged engines (vLLM, SGLang, TensorRT-LLM). Pure.

Blocks (pages) of a fixed number of tokens, pipeline stages, the dtypes an engine runs in, and a binary search
for the longest length that passes a monotone test. (The result fields every engine shares: result.py.)
"""

from __future__ import annotations

from typing import Callable

from kvplan.core.dtypes import DType, dtype
from kvplan.engines.request import EngineRequest
from kvplan.core.errors import InputError
from kvplan.core.spec import LayerSpec


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def stage_layers(layers: tuple[LayerSpec, ...], counts: list[int]) -> list[tuple[int, int]]:
    """[start, end) layer indices of each pipeline stage, given the layers per stage."""
    out, start = [], 0
    for n in counts:
        out.append((start, start + n))
        start += n
    if start != len(layers):
        raise AssertionError("stage layer counts do not add up to the model's layers")
    return out


def model_dtype(req: EngineRequest) -> DType:
    """The activation dtype the engine runs in: --dtype when it names a float format (vLLM's --dtype),
    else the model's own (a quantized --dtype changes the weights, not the activations)."""
    if req.weight_fmt is not None and req.weight_fmt.name in ("fp32", "fp16", "bf16"):
        return dtype(req.weight_fmt.name)
    return dtype(req.spec.dtype)


def kv_dtype(req: EngineRequest, accepted: dict[str, str], *, engine: str, flag: str) -> DType:
    """The KV-cache dtype an engine would use for the user's --kv-dtype spelling.

    `accepted` maps the spellings the engine takes (lower case) to kvplan dtype names ('' = the model's
    activation dtype, the engine's 'auto')."""
    name = (req.kv_dtype or "auto").strip().lower()
    if name not in accepted:
        raise InputError(f"{engine} has no KV-cache dtype {req.kv_dtype!r}", where="--kv-dtype",
                         hint=f"{engine} takes {flag} " + ", ".join(sorted(accepted)))
    target = accepted[name]
    return model_dtype(req) if not target else dtype(target)


def longest(fits: Callable[[int], bool], low: int, high: int) -> int:
    """The largest m in [low, high] with fits(m), for a monotone fits (true up to some m); low - 1 if none."""
    if high < low or not fits(low):
        return low - 1
    if fits(high):
        return high
    lo, hi = low, high  # fits(lo), not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo
