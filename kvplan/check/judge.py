"""The verdict on one deployment: would it start and serve one request of max_model_len, and does it meet its
requirements (concurrency, headroom)? The judge reads the engine's typed pool view (engines/result.py
PoolView), never an engine's own fields, and searches fixes with engines/fixes.py, the search estimate uses.
Pure of typer and rich."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING

from kvplan.check.deployment import Deployment, setting
from kvplan.check.report import CANNOT_JUDGE, FAIL, FORMAT_KVPLAN, FORMAT_VLLM_ARGS, PASS, Check, Figures, Verdict, short_tokens
from kvplan.core.errors import KvplanError, UnsupportedError
from kvplan import engines
from kvplan.engines.api import Engine
from kvplan.engines import fixes
from kvplan.engines import lazy
from kvplan.core.units import format_bytes

if TYPE_CHECKING:
    from kvplan.engines import pool_view
else:  # why an engine does not start: built by a result's pool_view() only, loaded with it (benchmarks/cold_start.py)
    pool_view = lazy.module("kvplan.engines.pool_view")

# an engine's error about one of these flags is reported at the deployment's own key
_ENGINE_WHERE = {"--seq": "max_model_len", "--tp": "tensor_parallel_size", "--pp": "pipeline_parallel_size",
                 "--kv-dtype": "kv_cache_dtype", "--block-size": "block_size", "--gpu-util": "gpu_memory_utilization",
                 "--kv-cache-memory": "kv_cache_memory_bytes", "--max-num-seqs": "max_num_seqs",
                 "--max-num-batched-tokens": "max_num_batched_tokens", "--dtype": "dtype", "--engine": "engine",
                 "--enable-prefix-caching": "enable_prefix_caching", "--engine-version": "vllm_version",
                 "--engine-option": "engine_option", "--gpu-reserved": "gpu_reserved"}


def _engine(dep: Deployment) -> Engine:
    try:
        return engines.get(dep.engine)
    except KvplanError as err:
        err.where = f"{dep.place}: {dep.key('engine')}" if dep.format == FORMAT_KVPLAN else dep.place
        raise


def _run(engine: Engine, dep: Deployment, request, *, search_max_seq: bool = True):
    """The engine's result; its errors located at the deployment's own keys. `search_max_seq` False leaves out the
    longest context that fits (a binary search of estimates): a fix candidate or a headroom figure needs only the
    pass or fail, and searching made that half of `kvplan check`'s time."""
    try:
        return engine.estimate(request, search_max_seq=search_max_seq)
    except KvplanError as err:
        flag, _, option = (err.where or "").partition(" ")
        if flag == "--engine-option" and option:
            # one engine option's value ('--engine-option max_tokens'): the file's own key for it where the reader
            # knows it (kv_cache_config.max_tokens), else the deployment's engine options
            err.where = f"{dep.place}: {dep.written(option) if dep.written is not None else dep.key('engine_option')}"
            raise
        name = _ENGINE_WHERE.get(err.where or "")
        err.where = f"{dep.place}: {dep.written_as(name)}" if name else (f"{dep.place}: {err.where}" if err.where else dep.place)
        raise


def judge(dep: Deployment, *, suggest: bool = True, optimistic: bool = False) -> Verdict:
    """The verdict: would it start and serve one request of max_model_len, and does it meet the requirements.

    A modelled budget is judged by the low edge of its band (the measured error of its terms; engines/result.py
    available_kv_bytes_low), unless `optimistic`: a deployment that passes with the modelled value but not at the
    low edge fails, and its reason says it is marginal. A wrong "yes" is the worst answer a CI gate can give.

    A deployment whose file allows several GPUs (a label every form of a card carries: Ray's "H100") is judged on
    each: it passes when it passes on all, fails when it fails on all, and cannot be judged when they disagree."""
    if not dep.alternatives:
        return _judge_on(dep, suggest=suggest, optimistic=optimistic)
    options = (dep.request.hardware, *dep.alternatives)
    verdicts = [_judge_on(replace(dep, request=replace(dep.request, hardware=h), alternatives=()), suggest=suggest,
                          optimistic=optimistic)
                for h in options]
    names = ", ".join(h.name or "custom" for h in options)
    statuses = {v.status for v in verdicts}
    if len(statuses) == 1:
        first = verdicts[0]
        word = {PASS: "passes", FAIL: "fails"}.get(first.status, "is judged alike")
        return replace(first, notes=(f"the file's GPU label allows {names}: it {word} on each",) + first.notes)
    passed = [h.name for h, v in zip(options, verdicts) if v.status == PASS]
    failed = [h.name for h, v in zip(options, verdicts) if v.status != PASS]
    err = UnsupportedError(f"the file's GPU label allows {names}: it passes on {', '.join(passed)} and not on "
                           f"{', '.join(failed)}", where=dep.place, hint="pass --gpu NAME for the GPU it runs on")
    first = verdicts[0]
    return replace(first, status=CANNOT_JUDGE, reason=err.one_line(), suggestions=(),
                   notes=tuple(f"on {h.name}: {v.status} — {v.reason}" for h, v in zip(options, verdicts)) + first.notes)


def _judge_on(dep: Deployment, *, suggest: bool, optimistic: bool) -> Verdict:
    engine = _engine(dep)
    base, checks, headroom = _evaluate(engine, dep, dep.request)
    edge_note = None
    marginal = False
    low = getattr(base, "available_kv_bytes_low", None) if getattr(base, "budget_source", None) == "model" else None
    if not optimistic and low is not None and low != base.available_kv_bytes:
        nominal_passes = all(c.passed for c in checks)
        modelled, high = base.available_kv_bytes, base.available_kv_bytes_high
        low_dep = replace(dep, request=replace(dep.request, budget_edge="low"))
        low_base, low_checks, low_headroom = _evaluate(engine, low_dep, low_dep.request)
        if low_base.available_kv_bytes == low:  # an engine that sizes its pool at the edge asked for (vLLM)
            dep, base, checks, headroom = low_dep, low_base, low_checks, low_headroom
            marginal = nominal_passes and not all(c.passed for c in checks)
            edge_note = (f"judged by the low edge of the modelled budget's band: {format_bytes(low)} of KV memory per "
                         f"GPU ({format_bytes(modelled)} modelled, {format_bytes(high)} at the high edge; "
                         "docs/engines/calibration.md); --optimistic judges by the modelled value")
    failed = [c for c in checks if not c.passed]
    # a pass is explained by its requirements when it has any, else by the start
    required = [c for c in checks if c.name in ("concurrency", "headroom")]
    reason = "; ".join(c.detail for c in (failed or required or checks[:1]))
    if marginal:
        reason = ("marginal: passes with the modelled budget but not at the low edge of its band (the measured error "
                  f"of its terms): {reason}")
    suggestions = tuple(_fix_words(engine, dep, base)) if failed and suggest else ()
    g = base.per_gpu
    pool = base.pool_view()
    longest = pool.estimated_max_model_len if pool is not None and pool.estimated_max_model_len is not None else base.max_seq
    figures = Figures(
        capacity_bytes=g.capacity_bytes if g else None, usable_bytes=g.usable_bytes if g else None,
        weights_bytes=g.weights_bytes if g else None, cache_bytes=g.cache_bytes if g else None,
        free_bytes=g.free_bytes if g else None,
        # data parallelism: the deployment's replicas together (one pool's figure x replicas)
        max_concurrency=pool.concurrency * pool.replicas if pool and pool.concurrency is not None else (pool.concurrency if pool else None),
        max_batch=base.max_batch, longest_context=longest,
        headroom_bytes=headroom[0] if headroom else None,
        headroom_percent=float(round(headroom[1] * 100, 2)) if headroom else None,
        available_kv_bytes=pool.available_kv_bytes if pool else None,
        num_gpu_blocks=pool.num_gpu_blocks if pool else None, kv_cache_tokens=pool.kv_cache_tokens if pool else None)
    req = dep.request
    notes = list(dep.notes) + list(base.notes)
    pin = getattr(base, "pinned_kv_cache_memory_bytes", None)
    if pin is not None:
        spare = base.pinned_spare_bytes
        beside = (f"weights, activations and graphs fit beside it ({format_bytes(spare)} to spare)" if spare >= 0 else
                  f"weights, activations and graphs do NOT fit beside it (short by {format_bytes(-spare)})")
        notes.insert(0, f"pin it: {dep.key('kv_cache_memory_bytes')} {pin} makes vLLM's pool exactly the "
                        f"{base.num_gpu_blocks:,} blocks judged here; {beside}")
    if edge_note:
        notes.insert(0, edge_note)
    release_note = engines.get(dep.engine).release_note
    if release_note is not None:  # the engine names the rules a verdict was judged by (vLLM: the release's line)
        notes.insert(0, release_note(req.engine_version))
    return Verdict(
        source=dep.source, document=dep.document, name=dep.name, format=dep.format, status=FAIL if failed else PASS,
        reason=reason, engine=dep.engine, model=req.spec.name, gpu=req.hardware.name or "custom", gpus=dep.gpus,
        tensor_parallel_size=req.tp, pipeline_parallel_size=req.pp, max_model_len=base.seq,  # vLLM auto: its pick
        kv_cache_dtype=base.kv_dtype, figures=figures, checks=tuple(checks),
        suggestions=suggestions, notes=tuple(dict.fromkeys(notes)), origins=dep.origins)


def _start_detail(result, request) -> str:
    """Why it starts, or why not, in figures."""
    g = result.per_gpu
    tokens = short_tokens(result.seq)  # the request's length, or the one vLLM picks (--max-model-len auto)
    pool = result.pool_view()
    if result.fits:
        detail = f"starts at max_model_len {tokens}"
        if pool is not None and pool.concurrency is not None:
            return detail + f", {pool.concurrency:.2f}x concurrency"
        return detail + (f", {result.max_batch:,} at once" if result.max_batch is not None else "")
    problem = pool.problem if pool is not None else None
    if isinstance(problem, pool_view.NoKvMemory):
        return (f"no memory is left for the KV cache: weights ({format_bytes(g.weights_bytes)}) and runtime buffers take "
                f"all {format_bytes(g.usable_bytes)} the engine may use per GPU")
    if isinstance(problem, pool_view.RequestTooLong):
        # vLLM's own start-up error, in figures (v1/core/kv_cache_utils.py check_enough_kv_cache_memory)
        detail = (f"one request of {tokens} tokens needs {format_bytes(problem.needed_kv_bytes)} of KV cache per GPU, "
                  f"{format_bytes(problem.available_kv_bytes)} available")
        if problem.longest:
            detail += f"; longest that fits: {problem.longest:,} tokens"
        return detail
    if isinstance(problem, pool_view.Refused):
        return problem.message
    if isinstance(problem, pool_view.PoolTooShort):
        detail = (f"the KV cache ({format_bytes(problem.available_kv_bytes)} per GPU) holds at most {problem.longest:,} "
                  f"tokens per request, max_model_len is {tokens}")
        # the engine starts anyway with the shorter length: say so rather than "does not start"
        return f"{problem.action}: {detail}" if problem.action else detail
    if g is not None and g.weights_bytes > g.usable_bytes:
        return f"weights alone need {format_bytes(g.weights_bytes)} per GPU, has {format_bytes(g.usable_bytes)}"
    if g is not None:
        return (f"needs {format_bytes(g.usable_bytes - g.free_bytes)} per GPU for one request of {tokens} tokens, "
                f"has {format_bytes(g.usable_bytes)}")
    return "does not fit"


def _headroom(engine: Engine, dep: Deployment, request, base, n: int) -> tuple[int, Fraction]:
    """Bytes of usable GPU memory still free with n requests of max_model_len resident, and the fraction.

    Paged engines (vLLM, SGLang, TensorRT-LLM) preallocate their whole KV pool at start-up, so it is never
    "free" to the allocator; what is left for more load is the part of the pool n requests do not take, plus
    whatever the engine left outside the pool (per_gpu.free_bytes). A contiguous engine (static) allocates per
    sequence: its free bytes with n sequences allocated."""
    pool = base.pool_view()
    if pool is not None and pool.pool_bytes is not None and pool.per_request_bytes is not None:
        free = pool.pool_bytes - n * pool.per_request_bytes + base.per_gpu.free_bytes
        return free, Fraction(free, base.per_gpu.usable_bytes)
    at = base if n == 1 else _run(engine, dep, replace(request, batch=n), search_max_seq=False)
    g = at.per_gpu
    return g.free_bytes, Fraction(g.free_bytes, g.usable_bytes)


def _evaluate(engine: Engine, dep: Deployment, request, *, search_max_seq: bool = True):
    """(the engine's result for one request, the checks, (headroom bytes, fraction) or None)."""
    base = _run(engine, dep, replace(request, batch=1), search_max_seq=search_max_seq)
    tokens = short_tokens(request.seq)
    checks = [Check("starts", bool(base.fits), None, None, _start_detail(base, request))]
    pool = base.pool_view()
    if dep.gpus_available is not None:
        # the parallel layout needs its GPUs: the engine refuses to start on fewer (vLLM, SGLang and TensorRT-LLM
        # each check the world size against the devices they see)
        replicas = max(1, dep.gpus // (dep.request.tp * dep.request.pp))
        needed = request.tp * request.pp * replicas
        if needed > dep.gpus_available:
            layout = f"tensor x pipeline parallel {request.tp} x {request.pp}" + (f" x {replicas} replicas" if replicas > 1 else "")
            checks.append(Check("gpus", False, needed, dep.gpus_available,
                                f"{layout} needs {needed} GPUs, {dep.gpus_available_origin or 'the file'} gives {dep.gpus_available}"))

    need = dep.requirements.concurrency
    if need is not None:
        # data parallelism: `replicas` engines, each with a pool like this one, serve the deployment's requests
        replicas = pool.replicas if pool is not None else 1
        concurrency = pool.concurrency * replicas if pool is not None and pool.concurrency is not None else None
        actual: int | float = (concurrency if concurrency is not None else (base.max_batch or 0) * replicas) or 0
        if not base.fits:
            actual = 0
        shown = f"{actual:.2f}" if isinstance(actual, float) else f"{actual:,}"
        passed = actual >= need
        across = f" across {replicas} data-parallel replicas" if replicas > 1 else ""
        detail = f"{shown} requests of {tokens} at once{across}, {need:,} required"
        held = pool.held_at_once * replicas if pool is not None and concurrency is not None and pool.held_at_once is not None else None
        if passed and held is not None and held < need:
            passed = False
            detail = (f"{shown} requests of {tokens} at once as vLLM logs it, but block 0 is its null block: {held:,} "
                      f"held at once, {need:,} required")
        # the engine's limit on running requests (vLLM: max_num_seqs, its default resolved by the engine)
        cap = request.max_num_seqs or (pool.running_limit if pool is not None else None)
        cap = cap * replicas if cap is not None else None
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
            headroom = _headroom(engine, dep, request, base, n)
            percent = float(round(headroom[1] * 100, 1))
            detail = (f"{percent:.1f}% headroom ({format_bytes(headroom[0])} free) with {n:,} of {tokens} resident, "
                      f"{float(wanted * 100):g}% required")
            passed = headroom[1] >= wanted
        else:
            detail, passed = f"no headroom: it does not start, {float(wanted * 100):g}% required", False
        checks.append(Check("headroom", passed, float(wanted * 100),
                            float(round(headroom[1] * 100, 2)) if headroom else None, detail))
    return base, checks, headroom


def _passes(engine: Engine, dep: Deployment, request) -> bool:
    _, checks, _ = _evaluate(engine, dep, request, search_max_seq=False)
    return all(c.passed for c in checks)


def _fix_words(engine: Engine, dep: Deployment, base) -> list[str]:
    """engines/fixes.py's single changes that make every check pass, spelled as the deployment's source does."""
    out = []
    for fix in fixes.search(engine, dep.request, base, lambda r: _passes(engine, dep, r)):
        if fix.setting == fixes.TP:
            out.append(setting(dep, fix.setting, fix.value) + f" ({fix.gpus} GPUs)")
        elif fix.setting == fixes.KV_DTYPE:
            out.append(setting(dep, fix.setting, engine.flags.kv_fp8_name if engine.flags else "fp8"))
        elif fix.setting == fixes.UTIL:
            out.append(setting(dep, fix.setting, f"{float(fix.value):.2f}"))
        elif fix.setting == fixes.ROPE:
            value = fixes.rope_overrides(fix)
            out.append(setting(dep, "hf_overrides", f"'{value}'" if dep.format == FORMAT_VLLM_ARGS or dep.flag_style else value))
        elif fix.setting == fixes.WEIGHTS:
            out.append(_weights_words(dep, fix.value))
        elif fix.setting == fixes.GPU:
            out.append(f"gpu: {fix.value}" if dep.format == FORMAT_KVPLAN else f"--gpu {fix.value}")
        else:
            out.append(setting(dep, fix.setting, fix.value))
    return out



def _weights_words(dep: Deployment, fmt: str) -> str:
    """Quantized weights as the deployment would ask for them: kvplan's own file by its `dtype`, an engine's launch by
    the engine's online fp8 (vLLM --quantization fp8), and a 4-bit checkpoint as another checkpoint to serve."""
    if dep.format == FORMAT_KVPLAN:
        return setting(dep, "dtype", "fp8" if fmt == fixes.WEIGHTS_FP8 else fmt)
    if fmt == fixes.WEIGHTS_FP8:
        return setting(dep, "quantization", "fp8")
    return "a 4-bit (AWQ/GPTQ) checkpoint of the model"


__all__ = ["judge"]
