"""One probe: plan this process's shard, allocate and measure it (or grow it, or time it), gather the
ranks, and merge them into a ProbeResult. torch arrives only through `load_torch` or the caller."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from kvplan.core.cache import CacheModel
from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.probe import load_torch
from kvplan.probe.device import Device, select_device
from kvplan.probe.dist import DistEnv, Group, Outcome, from_env
from kvplan.probe.layout import (DEFAULT_BLOCK_SIZE, PAGED, STATIC, BlockPlan, engine_rank_plan, growth_unit, most_loaded_stage,
                                 rank_plan, stage_layers)
from kvplan.probe.result import BenchGroup, BenchResult, Deltas, FindMaxResult, GroupResult, ProbeResult, RankResult
from kvplan.core.units import format_bytes
from kvplan import engines
from kvplan.probe.measure import measure_rank, rank_match
from kvplan.probe.findmax import find_max
from kvplan.probe.bench import bench, catalog_gpu
from kvplan.engines.api import Hardware

DEFAULT_MAX_FRACTION = Fraction(95, 100)


@dataclass(frozen=True)
class ProbeOptions:
    layout: str = STATIC
    device: str = "auto"
    stage: int | None = None  # single process: which pipeline stage (default: the most loaded)
    find_max: bool = False
    max_bytes: int | None = None
    max_fraction: Fraction = DEFAULT_MAX_FRACTION
    bench: bool = False
    touch: bool = True
    block_size: int | None = None
    num_blocks: int | None = None  # paged: blocks in every attention pool (else what the request needs)
    engine: str = "static"


def _budget(device: Device, opts: ProbeOptions) -> tuple[int, str]:
    free = device.free_bytes()
    if device.kind in ("cpu", "meta") and opts.max_bytes is None:
        raise InputError(f"--find-max on {device.kind} needs --max-bytes",
                         where="--find-max", hint="the OS does not refuse host memory, it kills processes; e.g. --max-bytes 1GiB")
    if free is None:
        return opts.max_bytes, "--max-bytes"
    capped = free * opts.max_fraction
    capped = capped.numerator // capped.denominator
    if opts.max_bytes is not None and opts.max_bytes <= capped:
        return opts.max_bytes, "--max-bytes"
    return capped, f"{float(opts.max_fraction):g} x free {format_bytes(free)}"


def _probe_rank(request, cache: CacheModel, opts: ProbeOptions, device: Device, stage: int, tp_rank: int,
                engine_result: Any) -> tuple[RankResult, list[str], tuple[int | None, str | None]]:
    notes: list[str] = []
    rank = stage * cache.tp + tp_rank
    layers = stage_layers(cache, stage)
    span = f"{min(layers)}-{max(layers)}" if layers else "-"
    start = time.perf_counter()
    if opts.find_max:
        unit = growth_unit(cache, layout=opts.layout, stage=stage, seq=request.seq, block_size=opts.block_size)
        if unit.name == "blocks" and any(layer.recurrent for layer in layers.values()):
            notes.append("paged --find-max grows the attention pools only; state layers hold a fixed slot per sequence")
        budget, source = _budget(device, opts)
        fm = find_max(unit, device, budget=budget, budget_source=source, touch=opts.touch)
        estimated = fm.predicted_max * fm.unit_bytes
        return RankResult(rank=rank, stage=stage, tp_rank=tp_rank, device=device.label, layers=span, estimated_bytes=estimated,
                          measured_bytes=fm.measured_bytes, match=fm.match, tensor_bytes=fm.measured_bytes, tensors=0,
                          groups=(), deltas=Deltas(), seconds=round(time.perf_counter() - start, 6), find_max=fm), notes, \
            (unit.block_size, None if unit.block_size is None else f"grown in blocks of {unit.block_size} tokens")
    blocks = None
    if opts.layout == PAGED and opts.num_blocks is not None:
        bs = opts.block_size or DEFAULT_BLOCK_SIZE
        blocks = BlockPlan.uniform(layers, opts.num_blocks, bs, f"--num-blocks {opts.num_blocks} of {bs} tokens in every pool")
    if opts.layout == PAGED and blocks is None and engine_result is not None:
        plan = engine_rank_plan(cache, engine_result, stage=stage, tp_rank=tp_rank, engine=opts.engine)
    else:
        plan = rank_plan(cache, seq=request.seq, batch=request.batch, layout=opts.layout, stage=stage, tp_rank=tp_rank,
                         blocks=blocks, block_size=opts.block_size)
    hook = None
    if opts.bench:
        hook = lambda held: bench(held, plan, cache.spec, device)  # noqa: E731 - runs while the cache is held
    groups, deltas, tensor_bytes, count, seconds, bench_result = measure_rank(plan, device, touch=opts.touch, while_held=hook)
    ok, measured, why = rank_match(plan, groups, deltas, tensor_bytes)
    notes += why
    if plan.layout == PAGED and blocks is None and plan.estimated_bytes != plan.footprint_bytes:
        notes.append(f"rank {rank}: the pools hold whole blocks of {plan.block_size} tokens: {plan.estimated_bytes - plan.footprint_bytes:+,} B "
                     f"beside the static estimate {plan.footprint_bytes:,} B")
    return RankResult(rank=rank, stage=stage, tp_rank=tp_rank, device=device.label, layers=span,
                      estimated_bytes=plan.estimated_bytes, measured_bytes=measured, match=ok, tensor_bytes=tensor_bytes,
                      tensors=count, groups=groups, deltas=deltas, seconds=round(seconds, 6), bench=bench_result), notes, \
        (plan.block_size, plan.block_source)


def _check_bench(cache: CacheModel, opts: ProbeOptions) -> None:
    if not opts.bench:
        return
    if opts.layout != STATIC:
        raise InputError("--bench times attention over the static layout", where="--bench", hint="drop --layout paged")
    if opts.find_max:
        raise InputError("--bench and --find-max are separate runs", where="--bench")
    if cache.kv_dtype.bits < 16 or cache.kv_dtype.name == "int8":
        raise UnsupportedError(f"--bench needs a 16- or 32-bit KV dtype, not {cache.kv_dtype.name}", where="--bench",
                               hint="add --kv-dtype bf16 (torch's attention has no fp8/int KV path)")


def _engine_result(request, device: Device, engine_estimate, engine: str):
    """Run the engine's estimate; without a GPU budget from the user, the probed device's own memory is it."""
    if request.hardware is None and request.kv_cache_memory is None:
        total = device.total_bytes()
        if total is None:
            raise InputError(f"--engine {engine} sizes its pool from a GPU budget", where="--engine",
                             hint="add --gpu NAME, --gpu-mem SIZE or --kv-cache-memory SIZE (or probe on a GPU)")

        gpu = catalog_gpu(device)
        request = replace(request, hardware=Hardware(gpu.name if gpu else None, total))
    return engine_estimate(request)


def run_probe(request, opts: ProbeOptions, *, engine_estimate=None, engine_result: Any = None, torch=None,
              device: Device | None = None, dist_env: DistEnv | None | bool = None) -> ProbeResult:
    """Probe the request's cache. engine_estimate: the engine's estimate(request) (paged pools as that engine
    sizes them); dist_env: None reads torchrun's environment, False forces one process."""
    start = time.perf_counter()
    torch = torch or load_torch()
    if opts.layout not in (STATIC, PAGED):
        raise InputError(f"unknown layout {opts.layout!r}", where="--layout", hint="static or paged")
    cache = CacheModel(request.spec, engines.get("static").kv_dtype(request), request.tp, request.pp)
    _check_bench(cache, opts)
    env = from_env() if dist_env is None else (dist_env or None)
    if env is not None and env.world_size != cache.tp * cache.pp:
        raise InputError(f"torchrun started {env.world_size} processes but --tp {cache.tp} x --pp {cache.pp} = {cache.tp * cache.pp}",
                         where="--tp", hint="make --nproc-per-node (x nodes) equal tp x pp")
    device = device or select_device(torch, opts.device, local_rank=env.local_rank if env else None)
    notes: list[str] = []
    if engine_estimate is not None and engine_result is None and opts.layout == PAGED and opts.num_blocks is None \
            and not opts.find_max:
        engine_result = _engine_result(request, device, engine_estimate, opts.engine)
    if env is not None:
        if opts.stage is not None:
            raise InputError("under torchrun every rank holds its own stage", where="--stage", hint="drop --stage")
        stage, tp_rank = env.rank // cache.tp, env.rank % cache.tp
    else:
        stage = opts.stage if opts.stage is not None else most_loaded_stage(cache, request.seq, request.batch)
        tp_rank = 0
        if cache.tp * cache.pp > 1:
            notes.append(f"one process: probed stage {stage} (TP rank 0 of {cache.tp}), one of {cache.tp * cache.pp} shards; "
                         "run under torchrun to allocate every shard")
    group = Group(torch, env, device.kind) if env is not None else None
    try:
        try:
            mine = Outcome(rank=stage * cache.tp + tp_rank, result=_probe_rank(request, cache, opts, device, stage, tp_rank, engine_result))
        except KvplanError as err:
            if group is None:
                raise
            mine = Outcome(rank=env.rank, error=err.one_line(), exit_code=err.exit_code)
        outcomes = group.gather(mine) if group is not None else [mine]
    finally:
        if group is not None:
            group.close()
    failed = [o for o in outcomes if o.error]
    if failed:
        worst = max(failed, key=lambda o: o.exit_code)
        texts = list(dict.fromkeys(o.error for o in failed))
        if len(texts) == 1 and len(failed) == len(outcomes):
            what = f"every rank: {texts[0]}"
        else:
            what = "; ".join(f"rank {o.rank}: {o.error}" for o in failed)
        err = KvplanError(what, where="kvplan probe")
        err.exit_code = worst.exit_code
        raise err
    ranks = tuple(o.result[0] for o in outcomes)
    for o in outcomes:
        notes += o.result[1]
    blocks = outcomes[0].result[2]
    return _merge(request, cache, opts, device, ranks, notes, blocks, torch, env, time.perf_counter() - start)


def _sum_optional(values) -> int | None:
    values = list(values)
    return None if not values or any(v is None for v in values) else sum(values)


def _merge_groups(ranks: tuple[RankResult, ...]) -> tuple[GroupResult, ...]:
    merged: dict[str, GroupResult] = {}
    for r in ranks:
        for g in r.groups:
            if g.label not in merged:
                merged[g.label] = g
                continue
            m = merged[g.label]
            merged[g.label] = GroupResult(label=g.label, kind=g.kind, layers=m.layers + g.layers, tensors=m.tensors + g.tensors,
                                          shapes=tuple(dict.fromkeys(m.shapes + g.shapes)),
                                          estimated_bytes=m.estimated_bytes + g.estimated_bytes,
                                          measured_bytes=m.measured_bytes + g.measured_bytes, match=m.match and g.match)
    return tuple(merged.values())


def _merge_find_max(ranks: tuple[RankResult, ...]) -> FindMaxResult | None:
    results = [r.find_max for r in ranks if r.find_max is not None]
    if not results:
        return None
    if len(results) == 1:
        return results[0]
    # the deployment holds as many units as its most constrained rank
    limiting = min(results, key=lambda f: (f.measured_max, f.predicted_max))
    return replace(limiting, predicted_max=min(f.predicted_max for f in results), match=all(f.match for f in results),
                   steps=sum(f.steps for f in results))


def _stage_max(ranks, value) -> dict[int, float]:
    out: dict[int, float] = {}
    for r in ranks:
        out[r.stage] = max(out.get(r.stage, 0), value(r))
    return out


def _merge_bench(ranks: tuple[RankResult, ...], cache: CacheModel) -> BenchResult | None:
    results = [r for r in ranks if r.bench is not None]
    if not results:
        return None
    if len(results) == 1:
        return results[0].bench
    # TP ranks of a stage run side by side (the slowest decides); stages run one after another
    per_stage = _stage_max(results, lambda r: r.bench.seconds_per_token)
    kv_bytes = sum(r.bench.kv_bytes_per_step for r in results)
    groups: dict[str, BenchGroup] = {}
    for r in results:
        for g in r.bench.groups:
            if g.label in groups:
                prev = groups[g.label]
                g = replace(prev, layers=prev.layers + g.layers, seconds_per_layer=max(prev.seconds_per_layer, g.seconds_per_layer))
            groups[g.label] = g
    first = results[0].bench
    merged = replace(first, groups=tuple(groups.values()), kv_bytes_per_step=kv_bytes, seconds_per_token=sum(per_stage.values()),
                     achieved_bytes_per_s=int(kv_bytes / sum(per_stage.values())) if per_stage else 0,
                     iterations=sum(r.bench.iterations for r in results))
    if first.catalog_bytes_per_s:
        bw = first.catalog_bytes_per_s * len(results)  # every rank has its own HBM
        merged = replace(merged, catalog_fraction=merged.achieved_bytes_per_s / bw,
                         catalog_seconds_per_token=sum(_stage_max(results, lambda r: r.bench.kv_bytes_per_step).values())
                         / first.catalog_bytes_per_s)
    return merged


def _merge(request, cache: CacheModel, opts: ProbeOptions, device: Device, ranks: tuple[RankResult, ...], notes: list[str],
           blocks: tuple[int | None, str | None], torch, env: DistEnv | None, seconds: float) -> ProbeResult:
    ranks = tuple(sorted(ranks, key=lambda r: r.rank))
    return ProbeResult(
        model=request.spec.name, engine=opts.engine, layout=opts.layout, device=device.kind, device_name=device.name,
        torch_version=str(torch.__version__), seq=request.seq, batch=request.batch, kv_dtype=cache.kv_dtype.name,
        tp=cache.tp, pp=cache.pp, world_size=env.world_size if env else 1, stages=tuple(sorted({r.stage for r in ranks})),
        block_size=blocks[0], blocks_source=blocks[1],
        estimated_bytes=sum(r.estimated_bytes for r in ranks), measured_bytes=sum(r.measured_bytes for r in ranks),
        match=all(r.match for r in ranks), whole_model_estimated_bytes=cache.footprint(request.seq, request.batch).cache_bytes,
        groups=_merge_groups(ranks), ranks=ranks,
        requested_delta_bytes=_sum_optional(r.deltas.requested_bytes for r in ranks if not r.find_max),
        allocated_delta_bytes=_sum_optional(r.deltas.allocated_bytes for r in ranks if not r.find_max),
        reserved_delta_bytes=_sum_optional(r.deltas.reserved_bytes for r in ranks if not r.find_max),
        driver_delta_bytes=_sum_optional(r.deltas.driver_bytes for r in ranks if not r.find_max),
        rss_delta_bytes=_sum_optional(r.deltas.rss_bytes for r in ranks if not r.find_max),
        find_max=_merge_find_max(ranks), bench=_merge_bench(ranks, cache), seconds=round(seconds, 6),
        notes=tuple(dict.fromkeys(notes)),
    )


