"""kvplan.explain: `kvplan explain MODEL` as a function (docs/api.md)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from kvplan.api import args
from kvplan.analysis.explain import EngineExplanation
from kvplan.api.estimate import run as estimate_run
from kvplan.core.errors import InputError, KvplanError
from kvplan.analysis import explain as ex, latency
from kvplan.core import units
from kvplan.core.cache import CacheModel
from kvplan import engines
from kvplan.requests.build import at_origins, build_request
from kvplan.model import catalog

if TYPE_CHECKING:
    from kvplan.analysis.explain import Explanation
    from kvplan.engines.result import ContractEstimate


def explain(model: str, *, seq: str | int | None = None, batch: int = 1, kv_dtype: str = "auto", dtype: str | None = None,
            gpu: str | None = None, gpu_mem: str | int | None = None, tp: int | None = None, pp: int = 1,
            gpu_util: str | float | None = None, window: int = 4096, prompt: str | int | None = None,
            output: str | int | None = None, vllm_args: str | None = None, sglang_args: str | None = None,
            engine_option: list[str] | dict[str, str] | str | None = None, engine: str | None = None,
            models_dir: list[str] | str | None = None, offline: bool = False) -> Explanation:
    """The cache bill of `model` derived layer group by layer group, the what-ifs beside it and, with a GPU from the
    catalog, lower bounds on prefill and decode time: the result `kvplan explain --json` prints. With `engine`
    (vllm, sglang, trtllm) the engine's estimate of the same launch rides along as `engine_estimate`."""
    options = dict(seq=seq, batch=batch, kv_dtype=kv_dtype, dtype=dtype, gpu=gpu, gpu_mem=gpu_mem, tp=tp, pp=pp,
                   gpu_util=gpu_util, vllm_args=vllm_args, sglang_args=sglang_args, engine_option=engine_option,
                   models_dir=models_dir, offline=offline)
    explained = run(model, window=window, prompt=prompt, output=output, **options)[0]
    by_engine = engine_estimate(engine, model, **options)
    if by_engine is None:
        return explained

    return EngineExplanation(**{f.name: getattr(explained, f.name) for f in dataclasses.fields(explained)},
                             engine_estimate=by_engine)


def engine_estimate(engine: str | None, model: str, **options):
    """The engine's estimate of the launch explain derives (None without an engine): the same request, judging edge
    and fixes as `kvplan estimate --engine`, so the figure explained is the figure estimate and check give."""
    if engine is None:
        return None

    if not engines.get(engine).paged:  # the static engine: its figure is the derivation itself
        raise InputError("the textbook derivation above is the static engine's", where="--engine",
                         hint="give vllm, sglang or trtllm, or leave --engine out")
    if options["gpu"] is None and options["gpu_mem"] is None:
        raise InputError("an engine's figure needs a GPU", where="--engine", hint="add --gpu NAME or --gpu-mem SIZE")
    return estimate_run(model, engine=engine, engine_version=None, gpus=None, gpu_reserved=None, reserve=None,
                        kv_cache_memory=None, block_size=None, max_num_seqs=None, max_num_batched_tokens=None,
                        kv_heads=None, head_dim=None, rate=None, prompt=None, calibration=None, **options)[1]


def run(model, *, seq, batch, kv_dtype, dtype, gpu, gpu_mem, tp, pp, gpu_util, window, prompt, output, vllm_args,
        sglang_args, engine_option, models_dir, offline) -> tuple[Explanation, ContractEstimate]:
    """The explanation and the static estimate it was checked against (the command's table shows both)."""
    import dataclasses

    seq, gpu_mem, gpu_util = args.text(seq, "--seq"), args.text(gpu_mem, "--gpu-mem"), args.text(gpu_util, "--gpu-util")
    prompt, output = args.text(prompt, "--prompt"), args.text(output, "--output")
    batch, tp, pp = args.count(batch, "--batch"), args.count(tp, "--tp"), args.count(pp, "--pp")
    engine_option = args.engine_options(engine_option)
    with args.model_lookup(models_dir, offline):
        window = args.count(window, "--window")
        if window < 1:
            raise InputError(f"must be at least 1, got {window}", where="--window")
        request = build_request(model, seq=seq, batch=batch, kv_dtype=kv_dtype, dtype=dtype, gpu=gpu, gpu_mem=gpu_mem,
                                gpus=None, tp=tp, pp=pp, gpu_util=gpu_util)
        static = engines.get("static")
        est = static.estimate(request)
        spec = request.spec
        cache = CacheModel(spec, static.kv_dtype(request), request.tp, request.pp)
        room = est.per_gpu.usable_bytes - est.per_gpu.weights_bytes if est.per_gpu else None

        bounds, notes = None, []
        if gpu is not None:
            p = units.parse_tokens(prompt, what="--prompt") if prompt is not None else max(est.seq // 2, 1)
            o = units.parse_tokens(output, what="--output") if output is not None else max(est.seq - p, 1)
            try:
                bounds = latency.bounds(spec, cache, gpu=catalog.find_gpu(gpu), weights_bytes=est.weights_bytes,
                                        weight_dtype=est.dtype, prompt=p, output=o,
                                        batch=_max_batch(cache, room, p + o) or None)
            except KvplanError as err:
                notes.append(f"no latency bounds: {err.one_line()}")
        elif prompt is not None or output is not None:
            raise InputError("latency bounds need a GPU from the catalog", where="--prompt" if prompt is not None else "--output",
                             hint="add --gpu NAME")
        result = ex.explain(spec, cache, seq=est.seq, batch=est.batch, window=window, room=room, latency=bounds)
        if result.cache_bytes != est.cache_bytes:  # pragma: no cover - the derivation and the estimate share CacheModel
            raise AssertionError(f"explain total {result.cache_bytes} != estimate {est.cache_bytes}")
        if sglang_args is not None and (vllm_args is not None or engine_option):
            raise InputError("--sglang-args takes SGLang's options: give one engine's launch options", where="--sglang-args",
                             hint="drop --vllm-args / --engine-option")
        if sglang_args is not None:
            sreq = build_request(model, seq=seq, batch=batch, kv_dtype=kv_dtype, dtype=dtype, gpu=gpu, gpu_mem=gpu_mem,
                                 gpus=None, tp=tp, pp=pp, gpu_util=gpu_util, sglang_args=sglang_args)
            with at_origins(sreq):
                terms = ex.sglang_extra_terms(engines.get("sglang").estimate(sreq))
            result = dataclasses.replace(result, extra_terms=terms)
        if vllm_args is not None:
            vreq = build_request(model, seq=seq, batch=batch, kv_dtype=kv_dtype, dtype=dtype, gpu=gpu, gpu_mem=gpu_mem, gpus=None,
                                 tp=tp, pp=pp, gpu_util=gpu_util, vllm_args=vllm_args)
            with at_origins(vreq):
                terms = ex.extra_terms(engines.get("vllm").estimate(vreq))
            result = dataclasses.replace(result, extra_terms=terms)
        if engine_option:
            if vllm_args is not None:
                raise InputError("--engine-option takes TensorRT-LLM's options, --vllm-args vLLM's: give one",
                                 where="--engine-option")
            treq = build_request(model, seq=seq, batch=batch, kv_dtype=kv_dtype, dtype=dtype, gpu=gpu, gpu_mem=gpu_mem,
                                 gpus=None, tp=tp, pp=pp, gpu_util=gpu_util, engine_options=engine_option)
            terms = ex.trtllm_extra_terms(engines.get("trtllm").estimate(treq, search_max_seq=False))
            result = dataclasses.replace(result, extra_terms=terms)
        if notes:
            result = dataclasses.replace(result, notes=result.notes + tuple(notes))
        return result, est


def _max_batch(cache, room, tokens: int) -> int:
    if room is None:
        return 0
    per = cache.max_rank_footprint(tokens, 1).cache_bytes
    return max(room, 0) // per if per else 0
