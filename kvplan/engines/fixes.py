"""The fix, not just the verdict: when a deployment does not fit, what would, as flags for that engine.

Each candidate is checked by running the same engine model again with one thing changed (never a rule of
thumb): the longest context that fits, the smallest tensor-parallel size, an fp8 KV cache, a higher memory
fraction, another GPU from the catalog. Pure: engine estimate functions in, strings out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

from kvplan.core.dtypes import dtype
from kvplan.engines import EngineRequest
from kvplan.core.errors import KvplanError
from kvplan.core.units import format_bytes, format_tokens

TP_CANDIDATES = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True)
class EngineFlags:
    """How one engine spells the knobs kvplan turns."""

    name: str
    max_len: str  # e.g. "--max-model-len"
    tp: str
    kv_fp8: str  # the whole flag with its value
    util: str | None  # the memory-fraction flag, None when the engine has no such knob
    kv_memory: str | None  # an explicit cache-size flag
    kv_fp8_name: str = "fp8"  # the engine's spelling of an fp8 (e4m3) KV cache
    util_limit: Fraction = Fraction(99, 100)

    def util_flag(self, value: str) -> str:
        return self.util.replace("{F}", value) if "{F}" in self.util else f"{self.util} {value}"


VLLM = EngineFlags("vLLM", "--max-model-len", "--tensor-parallel-size", "--kv-cache-dtype fp8",
                   "--gpu-memory-utilization", "--kv-cache-memory-bytes")
SGLANG = EngineFlags("SGLang", "--context-length", "--tp-size", "--kv-cache-dtype fp8_e4m3", "--mem-fraction-static",
                     None, kv_fp8_name="fp8_e4m3")
TRTLLM = EngineFlags("TensorRT-LLM", "--max_seq_len", "--tp_size", "kv_cache_config: {dtype: fp8} (extra LLM API options)",
                     "kv_cache_config: {free_gpu_memory_fraction: {F}} (extra LLM API options)", None)


def _ok(result) -> bool:
    serves = getattr(result, "serves_batch", None)
    return bool(result.fits) and serves is not False


def _try(run: Callable[[EngineRequest], object], req: EngineRequest):
    try:
        return run(req)
    except KvplanError:
        return None  # a candidate the engine or the model rejects is simply not a fix


def suggestions(req: EngineRequest, result, run: Callable[[EngineRequest], object], flags: EngineFlags, *,
                util_of: Callable[[object], Fraction | None], util_max: Fraction | None = None,
                needed_kv_bytes: int | None = None) -> list[str]:
    """Concrete flags that would make `req` fit on this engine; `run` re-estimates without suggestions."""
    out: list[str] = []
    # 1. the longest context that fits as deployed
    if result.max_seq:
        if result.max_seq < req.seq:
            out.append(f"{flags.max_len} {result.max_seq}: the longest context that fits "
                       f"{req.batch} sequence{'s' if req.batch > 1 else ''} with these flags")
    elif getattr(result, "estimated_max_model_len", None):
        # the engine's own estimate (one worker, one request) is a fix only when it fits: not when the engine
        # refuses to start anyway, holds fewer than `batch`, or another pipeline stage is shorter
        r = _try(run, dataclasses.replace(req, seq=result.estimated_max_model_len))
        if r is not None and _ok(r):
            out.append(f"{flags.max_len} {result.estimated_max_model_len}: the estimated maximum model length")
    # 2. the smallest tensor-parallel size
    heads = req.spec.attention_heads
    for tp in TP_CANDIDATES:
        if tp <= req.tp or heads % tp:
            continue
        r = _try(run, dataclasses.replace(req, tp=tp))
        if r is not None and _ok(r):
            out.append(f"{flags.tp} {tp}: {tp * req.pp} GPUs" + _held(r))
            break
    # 3. an fp8 KV cache
    if req.kv_dtype.bits > 8:
        r = _try(run, dataclasses.replace(req, kv_dtype=dtype("fp8_e4m3"), kv_dtype_name=flags.kv_fp8_name))
        if r is not None and _ok(r):
            out.append(f"{flags.kv_fp8}: half the KV bytes per token" + _held(r))
    # 4. a higher memory fraction
    current = util_of(result)
    if flags.util and current is not None and req.hardware is not None and req.kv_cache_memory is None:
        top = min(util_max or flags.util_limit, flags.util_limit)
        step = Fraction(1, 100)
        u = (current // step + 1) * step
        found = None
        while u <= top:
            r = _try(run, dataclasses.replace(req, gpu_util=u))
            if r is not None and _ok(r):
                found = u
                break
            u += step
        if found is not None:
            out.append(f"{flags.util_flag(f'{float(found):.2f}')}: the smallest fraction that fits")
    # 5. an explicit cache size, when the user gave one
    if req.kv_cache_memory is not None and needed_kv_bytes and flags.kv_memory:
        out.append(f"{flags.kv_memory} {needed_kv_bytes}: the cache {req.batch} request{'s' if req.batch > 1 else ''} "
                   f"of {format_tokens(req.seq)} need ({format_bytes(needed_kv_bytes)} per GPU)")
    # 6. another GPU from the catalog
    if req.hardware is not None:
        from kvplan.model.catalog import gpus

        for g in sorted(gpus(), key=lambda g: g.capacity_bytes):
            if g.capacity_bytes <= req.hardware.capacity_bytes:
                continue
            hw = dataclasses.replace(req.hardware, name=g.name, capacity_bytes=g.capacity_bytes)
            r = _try(run, dataclasses.replace(req, hardware=hw))
            if r is not None and _ok(r):
                out.append(f"--gpu {g.name} ({format_bytes(g.capacity_bytes)}) with the same flags" + _held(r))
                break
    if not out:
        out.append("nothing kvplan tried fits (longer context, more TP, fp8 KV, a higher memory fraction, a larger "
                   "GPU): add pipeline stages or use a smaller model")
    return out


def _held(r) -> str:
    n = getattr(r, "max_batch", None)
    return f"; holds {n:,} sequences of {format_tokens(r.seq)}" if n else ""


def suggest_vllm(req: EngineRequest, result, version: str) -> list[str]:
    from kvplan.engines import vllm

    def run(r: EngineRequest):
        return vllm.estimate(r, version=version, suggest=False)

    util_max = None
    w = result.workers[0] if result.workers else None
    if w is not None and w.budget is not None:
        # vLLM refuses utilizations above what is free at start-up (total minus CUDA context / NCCL)
        b = w.budget
        util_max = Fraction((b.total_bytes - b.context_bytes) * 100 // b.total_bytes, 100)

    def util_of(res):
        return None if res.gpu_memory_utilization is None else Fraction(res.gpu_memory_utilization)

    need = None
    if req.kv_cache_memory is not None and result.workers:
        # batch requests of max_model_len beside the null block (v1/core/block_pool.py)
        need = max(w.bytes_per_block * (req.batch * result.blocks_per_request + 1) for w in result.workers)
    return suggestions(req, result, run, VLLM, util_of=util_of, util_max=util_max, needed_kv_bytes=need)


def suggest_sglang(req: EngineRequest, result) -> list[str]:
    from kvplan.engines import sglang

    def util_of(res):
        return None if res.mem_fraction_static is None else Fraction(res.mem_fraction_static)

    return suggestions(req, result, lambda r: sglang.estimate(r, suggest=False), SGLANG, util_of=util_of,
                       util_max=Fraction(95, 100))


def suggest_trtllm(req: EngineRequest, result) -> list[str]:
    from kvplan.engines import trtllm

    def util_of(res):
        return None if res.free_gpu_memory_fraction is None else Fraction(res.free_gpu_memory_fraction)

    return suggestions(req, result, lambda r: trtllm.estimate(r, suggest=False), TRTLLM, util_of=util_of,
                       util_max=Fraction(95, 100))
