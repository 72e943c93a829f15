"""The fix, not just the verdict: single changes that would make a deployment pass. Pure.

One search serves `kvplan estimate` (does the request shape fit?) and `kvplan check` (does it pass every
requirement?): the caller gives the test, the search tries each change by running the same engine model again
with that one thing changed (never a rule of thumb). They come in the order an operator tries them: a flag on
the same launch first, then the same model with smaller weights, then more of the same GPU, then another GPU:

1. the longest max_model_len that passes (binary search: every test is monotone in the length); where the length
   asked is past the model's limit, YaRN RoPE scaling to reach it (vLLM --hf-overrides), never a variable that
   only lifts the check;
2. an fp8 KV cache, when the cache is wider than 8 bits;
3. the smallest memory fraction above the current one, in steps of 0.01, up to what the engine accepts;
4. the smallest explicit cache size, when the deployment pins one (vLLM --kv-cache-memory-bytes);
5. quantized weights of a 16-bit model: fp8 where the engine quantizes them as it loads (vLLM --quantization fp8),
   else a 4-bit (AWQ/GPTQ) checkpoint of the model;
6. the smallest larger tensor-parallel size that divides the attention heads (more GPUs of the same kind);
7. the smallest larger GPU of the catalog of the same vendor and class (datacenter for datacenter, GeForce for
   GeForce, workstation for workstation: the software stack and the fleet stay the same), with at least 5% more
   memory (a card of another generation with 60 MiB more is no memory fix), never one with unified memory (GH200,
   GB200, DGX Spark): there the host's own use comes out of the capacity, so its size promises nothing.

Each Fix carries the changed request and the engine's result for it; `engine_words` spells it as the engine's
flags (estimate's `suggestions`), check spells it in the deployment's own keys.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable

from kvplan.core.errors import KvplanError
from kvplan.core.text import plural
from kvplan.core.units import format_bytes, format_tokens
from kvplan.engines.api import Engine
from kvplan.engines.api import EngineRequest
from kvplan.model.catalog import gpus
from kvplan.core import dtypes
from kvplan.engines import lazy

if TYPE_CHECKING:
    from kvplan.engines import fix_record
    from kvplan.engines.fix_record import Fix as Fix
else:  # a fix's record (fix_record.py): built when a request does not fit, not by every estimate (start-up time)
    fix_record = lazy.module("kvplan.engines.fix_record")
    __getattr__ = lazy.module_getattr(__name__, {"Fix": "kvplan.engines.fix_record"})

TP_CANDIDATES = (2, 4, 8, 16, 32, 64)
UTIL_STEP = Fraction(1, 100)
MAX_LEN, TP, KV_DTYPE, UTIL, KV_MEMORY, WEIGHTS, GPU = ("max_model_len", "tensor_parallel_size", "kv_cache_dtype",
                                                       "gpu_memory_utilization", "kv_cache_memory_bytes", "quantization",
                                                       "gpu")
ROPE = "hf_overrides"  # a longer context by RoPE scaling (YaRN), where max_model_len is past the model's limit
# a larger GPU is a fix only with this much more memory than the one it replaces
GPU_STEP = Fraction(105, 100)
WEIGHTS_FP8, WEIGHTS_INT4 = "fp8_e4m3", "int4"


def search(engine: Engine, req: EngineRequest, result, passes: Callable[[EngineRequest], bool]) -> list[Fix]:
    """The single changes to `req` for which `passes` holds; `result` is the engine's result for `req`."""
    def ok(candidate: EngineRequest) -> bool:
        try:
            return passes(candidate)
        except KvplanError:
            return False  # a change the engine or the model rejects is simply not a fix

    out: list[Fix] = []
    if req.seq > 1 and ok(dataclasses.replace(req, seq=1)):
        lo, hi = 1, req.seq  # ok(lo), and req itself does not pass
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if ok(dataclasses.replace(req, seq=mid)) else (lo, mid)
        out.append(fix_record.Fix(MAX_LEN, lo, dataclasses.replace(req, seq=lo)))
    out += _rope_scaling(engine, req, ok)
    fp8_name = engine.flags.kv_fp8_name if engine.flags else "fp8"
    if engine.kv_dtype(req).bits > 8 and ok(candidate := dataclasses.replace(req, kv_dtype=fp8_name)):
        out.append(fix_record.Fix(KV_DTYPE, fp8_name, candidate))
    current = engine.util_of(req, result)
    if current is not None and req.kv_cache_memory is None and req.hardware is not None:
        limit = engine.flags.util_limit if engine.flags else Fraction(99, 100)
        top = min(engine.util_max(result) or limit, limit)
        u = (current // UTIL_STEP + 1) * UTIL_STEP
        while u <= top:
            if ok(candidate := dataclasses.replace(req, gpu_util=u)):
                out.append(fix_record.Fix(UTIL, u, candidate))
                break
            u += UTIL_STEP
        # asking for more than is free at start (vLLM's start check; on DGX Spark the host's share of the pool): the
        # largest fraction that is free, where a lower one is the only change that lets the engine start
        below = top // UTIL_STEP * UTIL_STEP
        if current > top and below > 0 and ok(candidate := dataclasses.replace(req, gpu_util=below)):
            out.append(fix_record.Fix(UTIL, below, candidate))
    if req.kv_cache_memory is not None and engine.flags and engine.flags.kv_memory:
        size = _smallest_cache(req, ok)
        if size is not None:
            out.append(fix_record.Fix(KV_MEMORY, size, dataclasses.replace(req, kv_cache_memory=size)))
    out += _quantized_weights(engine, req, ok)
    for tp in TP_CANDIDATES:
        if tp > req.tp and not req.spec.attention_heads % tp and ok(candidate := dataclasses.replace(req, tp=tp)):
            out.append(fix_record.Fix(TP, tp, candidate, gpus=tp * req.pp))
            break
    hw = req.hardware
    if hw is not None:
        vendor = hw.facts.vendor if hw.facts else None
        kind = gpu_class(hw.facts) if hw.facts else None
        # a GPU without a public reading of its total (catalog: capacity_bytes None) is never suggested
        for g in sorted((g for g in gpus() if g.capacity_bytes is not None), key=lambda g: (g.capacity_bytes, g.name)):
            if (g.capacity_bytes < hw.capacity_bytes * GPU_STEP or (vendor is not None and g.vendor != vendor)
                    or g.unified_memory or (kind is not None and gpu_class(g) != kind)):
                continue
            candidate = dataclasses.replace(req, hardware=dataclasses.replace(hw, name=g.name, capacity_bytes=g.capacity_bytes))
            if ok(candidate):
                out.append(fix_record.Fix(GPU, g.name, candidate, capacity_bytes=g.capacity_bytes))
                break
    return out


def _rope_scaling(engine: Engine, req: EngineRequest, ok: Callable[[EngineRequest], bool]) -> list[Fix]:
    """The asked length past the model's limit, reached by YaRN RoPE scaling (the long-context setting model cards
    such as Qwen3's give for vLLM, --hf-overrides rope_scaling), before any variable that lifts the limit check
    (VLLM_ALLOW_LONG_MAX_MODEL_LEN, which vLLM itself warns may give NaNs). The factor is the smallest in hundredths
    that takes the model's limit to the length (vLLM's derived length: original x factor); its cost is the cache
    of the longer context, which the test measures like any other change."""
    limit = req.spec.max_context
    if engine.flags is None or not engine.flags.config_override or not limit or req.seq <= limit:
        return []
    factor = Fraction(-(-req.seq * 100 // limit), 100)
    longer = dataclasses.replace(req, spec=dataclasses.replace(req.spec, max_context=int(limit * factor)))
    return [fix_record.Fix(ROPE, factor, longer, from_len=limit)] if ok(longer) else []


def rope_overrides(fix: Fix) -> str:
    """The --hf-overrides JSON of a ROPE fix."""
    import json

    return json.dumps({"rope_scaling": {"rope_type": "yarn", "factor": float(fix.value),
                                        "original_max_position_embeddings": fix.from_len}}, separators=(",", ":"))


def gpu_class(gpu) -> str:
    """The class of a catalog GPU, as a fleet is bought: "consumer" (GeForce), "workstation" (the RTX
    professional cards sold for desks) or "datacenter" (the rest, and an RTX PRO sold as a Server Edition)."""
    names = " ".join((gpu.name, *gpu.aliases)).lower()
    if "geforce" in names:
        return "consumer"
    if gpu.name.startswith("rtx-") and "server edition" not in names:
        return "workstation"
    return "datacenter"


def _quantized_weights(engine: Engine, req: EngineRequest, ok: Callable[[EngineRequest], bool]) -> list[Fix]:
    """Smaller weights of the same model, the first that passes: fp8 where the engine quantizes a 16-bit checkpoint
    as it loads it (its flags name how), else a 4-bit checkpoint. Only for a 16-bit model whose weights kvplan
    counts from its parameters (a checkpoint already quantized, or read byte-exact from its files, is left as it is)."""
    spec = req.spec
    if spec.weights_bytes is not None or req.weight_fmt is not None or (spec.weight_dtype or spec.dtype) not in ("bf16", "fp16", "fp32"):
        return []
    formats = ((WEIGHTS_FP8,) if engine.flags is not None and engine.flags.weights_fp8 else ()) + (WEIGHTS_INT4,)
    for name in formats:
        candidate = dataclasses.replace(req, weight_fmt=dtypes.weight_format(name))
        if ok(candidate):
            return [fix_record.Fix(WEIGHTS, name, candidate)]
    return []


def _smallest_cache(req: EngineRequest, ok: Callable[[EngineRequest], bool]) -> int | None:
    """The smallest cache size in bytes that passes, by binary search above the one given (None: none up to 1 PiB)."""
    lo, hi = req.kv_cache_memory, 2**50
    if not ok(dataclasses.replace(req, kv_cache_memory=hi)):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(dataclasses.replace(req, kv_cache_memory=mid)) else (mid, hi)
    return hi


# ------------------------------------------------------------------ the judging edge

def at_judging_edge(engine: Engine, req: EngineRequest, result) -> tuple[EngineRequest, Any]:
    """The request and result every verdict is judged by: a modelled budget at the low edge of its band (the
    measured error of its terms, engines/result.py available_kv_bytes_low), so estimate, check and their fixes
    share one edge and one longest context; unchanged where there is no band, or where the engine does not size
    its pool at the edge asked for (then the modelled value is all it gives)."""
    low = getattr(result, "available_kv_bytes_low", None) if getattr(result, "budget_source", None) == "model" else None
    if low is None or low == result.available_kv_bytes:
        return req, result
    low_req = dataclasses.replace(req, budget_edge="low")
    low_result = engine.estimate(low_req)
    if low_result.available_kv_bytes != low:
        return req, result
    note = (f"judged at the low edge of the modelled budget's band ({format_bytes(low)} of KV memory per GPU, "
            f"{format_bytes(result.available_kv_bytes)} modelled), as kvplan check judges; --optimistic: the modelled value")
    return low_req, dataclasses.replace(low_result, notes=(note, *low_result.notes))


# ------------------------------------------------------------------ kvplan estimate

def fits(engine: Engine, req: EngineRequest) -> bool:
    """estimate's test for a paged engine: it starts with `seq` and holds `batch` such sequences."""
    r = engine.estimate(req, search_max_seq=False)
    return bool(r.fits) and r.serves_batch is not False


def attach(engine: Engine, req: EngineRequest, result):
    """The result with its fixes as the engine's flags (`suggestions`) when it does not start or does not hold
    `batch`; unchanged otherwise."""
    if engine.flags is None or not (result.starts is False or result.serves_batch is False):
        return result
    fixes = search(engine, req, result, lambda r: fits(engine, r))
    words = [engine_words(engine, req, result, f) for f in fixes] or [
        "nothing kvplan tried fits (a shorter context, fp8 KV, a higher memory fraction, quantized weights, more "
        "TP, a larger GPU of the same class): add pipeline stages or use a smaller model"]
    return dataclasses.replace(result, suggestions=tuple(words))


def engine_words(engine: Engine, req: EngineRequest, result, fix: Fix) -> str:
    """A fix as the engine's own flags, with what it buys."""
    flags = engine.flags
    n = req.batch
    if fix.setting == MAX_LEN:
        if not result.max_seq and fix.value == result.estimated_max_model_len:
            return f"{flags.max_len} {fix.value}: the estimated maximum model length"
        return f"{flags.max_len} {fix.value}: the longest that fits {plural(n, 'sequence')} with these flags"
    if fix.setting == ROPE:
        return (f"YaRN RoPE scaling x{float(fix.value):g} to {fix.request.spec.max_context:,} tokens: "
                f"{flags.config_override} '{rope_overrides(fix)}'" + _held(engine, fix))
    if fix.setting == TP:
        return f"{flags.tp} {fix.value}: {fix.gpus} GPUs" + _held(engine, fix)
    if fix.setting == KV_DTYPE:
        return f"{flags.kv_fp8}: half the KV bytes per token" + _held(engine, fix)
    if fix.setting == UTIL:
        current = engine.util_of(req, result)
        if current is not None and fix.value < current:
            return (f"{flags.util_flag(f'{float(fix.value):.2f}')}: the largest fraction free at start (the engine "
                    "refuses more than is free)")
        return f"{flags.util_flag(f'{float(fix.value):.2f}')}: the smallest fraction that fits"
    if fix.setting == KV_MEMORY:
        return (f"{flags.kv_memory} {fix.value}: the cache {plural(n, 'request')} of {format_tokens(req.seq)} "
                f"need ({format_bytes(fix.value)} per GPU)")
    if fix.setting == WEIGHTS:
        r = engine.estimate(fix.request, search_max_seq=False)
        weights = f"{format_bytes(r.per_gpu.weights_bytes)} of weights per GPU" if r.per_gpu else "smaller weights"
        how = flags.weights_fp8 if fix.value == WEIGHTS_FP8 else "a 4-bit (AWQ/GPTQ) checkpoint"
        return f"{how}: {weights}" + _held(engine, fix)
    return f"--gpu {fix.value} ({format_bytes(fix.capacity_bytes)})" + _held(engine, fix)


def _held(engine: Engine, fix: Fix) -> str:
    r = engine.estimate(fix.request, search_max_seq=False)
    return f"; holds {plural(r.max_batch, 'sequence')}" if r.max_batch else ""  # of the asked length



__all__ = ["Fix", "search", "attach", "fits", "engine_words", "at_judging_edge", "gpu_class", "rope_overrides"]
