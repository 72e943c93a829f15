"""Arithmetic shared by the paged engines (vLLM, SGLang, TensorRT-LLM). Pure.

Blocks (pages) of a fixed number of tokens, pipeline stages, the dtypes an engine runs in, and a binary search
for the longest length that passes a monotone test. (The result fields every engine shares: result.py.)
"""

from __future__ import annotations

from typing import Callable

from kvplan.core.dtypes import DType, dtype
from kvplan.engines.api import EngineRequest
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


def cap_given_pool(estimate: Callable, req: EngineRequest, *, search_max_seq: bool, engine: str, rule: str):
    """SGLang and TensorRT-LLM with --kv-cache-memory and a GPU: the engine takes the smaller of the pool the user
    gives and the one it profiles (`rule` cites where each says so), so a pool larger than what is left after the
    weights and activations is the profiled one, never more than the GPU holds (issue 15: a 79 GiB pool on an
    80 GB GPU next to 15 GiB of weights was a "yes"). `estimate` is the engine's, called with pool_capped=True."""
    import dataclasses

    given = estimate(req, search_max_seq=search_max_seq, pool_capped=True)
    modelled = estimate(dataclasses.replace(req, kv_cache_memory=None), search_max_seq=search_max_seq, pool_capped=True)
    if given.available_kv_bytes is None or modelled.available_kv_bytes is None:
        return given
    if given.available_kv_bytes <= modelled.available_kv_bytes:
        return given
    note = (f"--kv-cache-memory {req.kv_cache_memory:,} B is more than the {max(modelled.available_kv_bytes, 0):,} B "
            f"{engine} finds for the cache on this GPU after the weights and activations; {rule}")
    return dataclasses.replace(modelled, notes=modelled.notes + (note,))
