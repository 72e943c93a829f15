"""`kvplan plan`: the cheapest deployments that hold a load. Pure of typer and rich: a model, a load, targets and the
candidate axes in; a PlanResult (ranked plans, the reason each rejected family failed) out.

For every candidate (GPU kind x engine x KV dtype x TP x PP) the search asks the engine's own memory model through the
registry, exactly as `kvplan estimate` does (`engines.get(name).estimate(request)`):
- does it start with one request of max_model_len (the longest request of the load)?
- how many requests does its pool hold at once: requests of the load's mean final length (prompt + output: a
  request keeps its whole length until it finishes), capped at the engine's running limit. Where the engine's budget
  carries a measured band (available_kv_bytes_low), the pool is pinned at the band's low edge and held there, so the
  plan survives the budget model's error;
then how fast one replica serves (analysis/serving.py: lower bounds times fitted achieved-efficiency factors):
- the most sequences a replica may run while its TPOT estimate meets the target, and TTFT at that point;
- requests per second a replica sustains at that concurrency (Little's law: batch / (TTFT + (output - 1) x TPOT));
and from the load: replicas (concurrency: ceil(N / per replica); rate: ceil(R / per-replica rate)), GPUs, nodes,
dollars per hour, dollars per million output tokens and headroom.

Layouts: tensor parallelism inside a node (powers of two up to the node's GPUs, dividing the attention heads), pipeline
stages across nodes; for each TP, PP from the smallest that starts to one more (a deeper pipeline adds memory, never
speed: replicas are the cheaper way to add concurrency), at most --max-gpus in all.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from kvplan.core.io import JsonResult
from kvplan.analysis import serving
from kvplan.analysis.targets import Z, Target, Targets  # noqa: F401  (plan.Targets is the API's name for them)
from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.engines.pool import NoKvMemory, PoolTooShort, Refused, RequestTooLong
from kvplan.core.cache import CacheModel
from kvplan.engines.api import Hardware
from kvplan.engines.runtime.weights import model_weights

TP_SIZES = (1, 2, 4, 8, 16, 32, 64)
# pipeline depths tried (deeper ones only add memory; the search stops one past the first that starts)
PP_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
MEMORY, TP_HEADS, TTFT, TPOT, GPUS, UNSUPPORTED, NOT_MODELLED, NO_LATENCY = (
    "memory", "tp_heads", "ttft", "tpot", "gpus", "unsupported", "not_modelled", "no_latency")
REASONS = {
    MEMORY: "memory: does not start (the weights, or one request of max_model_len, do not fit)",
    TP_HEADS: "TP does not divide the model's heads",
    UNSUPPORTED: "the engine does not run on this GPU (or this KV dtype on it)",
    TTFT: "TTFT target missed",
    TPOT: "TPOT target missed",
    GPUS: "needs more GPUs than --max-gpus",
    NOT_MODELLED: "not modelled",
    NO_LATENCY: "no latency estimate (the GPU's bandwidth or FLOP/s are not in the catalog, or the layout is not in the latency model)",
}
# the same in a word or two, for tables
REASON_LABELS = {MEMORY: "memory", TP_HEADS: "TP vs heads", TTFT: "TTFT", TPOT: "TPOT", GPUS: "GPU count",
                 UNSUPPORTED: "engine support", NOT_MODELLED: "not modelled", NO_LATENCY: "no latency"}


# ------------------------------------------------------------------ the load

@dataclass(frozen=True)
class Load:
    """What the deployment must hold. Lengths in tokens; `rate` in requests per second."""

    kind: str  # "concurrency" (N sequences at once) or "rate" (R requests per second)
    concurrency: int | None
    rate: float | None
    max_model_len: int  # the longest request, prompt + output (the engines' max_model_len)
    prompt_mean: int
    output_mean: int
    prompt_p50: int  # a TTFT target at a percentile is estimated for the prompt of that percentile
    prompt_p90: int
    prompt_p95: int
    prompt_p99: int
    prompt_spread: float  # E[P^2] / E[P]^2 of the prompts: how much a request's TPOT varies (serving.prefills_at)
    tokens_mean: int  # mean prompt + output: what a request holds of the pool at its end
    requests: int  # requests in the workload sample (1 for a fixed shape)
    description: str


def _percentile(ordered: list[int], q: int) -> int:
    """The nearest-rank percentile of sorted values."""
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def load_of(requests, *, concurrency: int | None, rate: float | None, max_model_len: int | None, description: str) -> Load:
    """A Load from (prompt, output) requests (workload.Request); max_model_len defaults to the longest request."""
    if (concurrency is None) == (rate is None):
        raise InputError("give the load as --concurrency N or as --rate R", where="--concurrency/--rate",
                         hint="e.g. --concurrency 64 --seq 8K, or --workload FILE --rate 5")
    if concurrency is not None and concurrency < 1:
        raise InputError(f"must be at least 1, got {concurrency}", where="--concurrency")
    if rate is not None and (not (0 < rate < 1e7) or rate != rate):
        raise InputError(f"must be above 0 requests per second, got {rate}", where="--rate")
    totals = [r.prompt + r.output for r in requests]
    longest = max(totals)
    if max_model_len is not None and longest > max_model_len:
        raise InputError(f"the workload's longest request has {longest:,} tokens, more than --seq {max_model_len:,}",
                         where="--seq", hint="raise --seq or leave it out (the longest request sets max_model_len)")
    n = len(requests)
    prompts = sorted(r.prompt for r in requests)
    mean = sum(prompts) / n
    return Load(kind="concurrency" if concurrency is not None else "rate", concurrency=concurrency, rate=rate,
                max_model_len=max_model_len or longest,
                prompt_mean=max(1, round(sum(r.prompt for r in requests) / n)),
                output_mean=max(1, round(sum(r.output for r in requests) / n)),
                prompt_p50=_percentile(prompts, 50), prompt_p90=_percentile(prompts, 90),
                prompt_p95=_percentile(prompts, 95), prompt_p99=_percentile(prompts, 99),
                prompt_spread=sum(p * p for p in prompts) / n / (mean * mean), tokens_mean=max(2, math.ceil(sum(totals) / n)),
                requests=n, description=description)


def prompt_at(load: Load, percentile: int) -> int:
    return {50: load.prompt_p50, 90: load.prompt_p90, 95: load.prompt_p95, 99: load.prompt_p99}[percentile]


# ------------------------------------------------------------------ results

@dataclass(frozen=True)
class Latency:
    """An estimate in milliseconds at a percentile of the load's requests, with its band and its floor, and how it
    stands against the target at that percentile."""

    percentile: int
    estimate_ms: float
    low_ms: float
    high_ms: float
    floor_ms: float
    target_ms: float | None
    meets: str | None  # yes | band (the estimate meets it, the band's slow edge not) | None without a target


@dataclass(frozen=True)
class Plan:
    rank: int  # 1 = the chosen plan; plans that tie (ties) share a rank
    gpu: str
    engine: str
    engine_version: str
    kv_dtype: str  # as the engine stores it
    kv_dtype_flag: str  # as the user and the engine's flag spell it
    dtype: str  # weights
    tp: int
    pp: int
    expert_parallel: bool
    gpus_per_replica: int
    nodes_per_replica: int
    replicas: int
    gpus: int
    nodes: int
    gpus_per_node: int
    link: str | None  # the TP link inside a node
    max_model_len: int
    available_kv_bytes: int  # per GPU, as the engine's budget gives it
    available_kv_bytes_low: int | None
    available_kv_bytes_high: int | None
    pinned_kv_bytes: int  # per GPU: the pool the launch flags pin (the band's low edge when there is one)
    pool_tokens: int | None  # tokens the pinned pool holds (SGLang max_total_num_tokens, TRT-LLM max_tokens, vLLM blocks x block)
    pool_requests: int  # requests of max_model_len the pool holds at once
    held_per_replica: int  # requests of the load's mean length one replica holds at once (memory and the running cap)
    batch_limit: int  # the most sequences per replica within the TPOT target (= held without one)
    concurrency_per_replica: float  # the load's share at the operating point
    requests_per_s_per_replica: float | None  # what one replica sustains at batch_limit
    output_tokens_per_s: float | None  # the whole deployment, at the load
    usd_per_gpu_hour: float | None
    price_source: str | None
    usd_per_hour: float | None
    usd_per_million_output_tokens: float | None
    headroom: float  # share of the deployment's capacity the load leaves unused
    ttft: Latency | None  # at the load's operating point, P99 prompt
    tpot: Latency | None
    latency_basis: str | None  # the data behind the factors
    within_band: bool  # a target is met by the estimate but not by its band's slow edge
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Rejected:
    """A family of candidates that failed for one reason on one GPU kind."""

    reason: str  # one of REASONS
    gpu: str
    engines: tuple[str, ...]
    layouts: tuple[str, ...]
    kv_dtypes: tuple[str, ...]
    candidates: int
    detail: str  # the closest candidate's figures


@dataclass(frozen=True)
class ParetoPoint:
    rank: int
    engine: str
    usd_per_million_output_tokens: float
    tpot_ms: float
    concurrency_per_replica: float
    label: str
    front: bool  # no other plan is both cheaper per token and faster


@dataclass(frozen=True)
class PlanResult(JsonResult):
    model: str
    load: Load
    targets: Targets
    engines: tuple[str, ...]
    gpus_considered: tuple[str, ...]
    kv_dtypes: tuple[str, ...]
    dtype: str
    max_gpus: int
    candidates: int
    viable: int
    plans: tuple[Plan, ...]
    rejected: tuple[Rejected, ...]
    pareto: tuple[ParetoPoint, ...]
    interconnect: str  # what the plans assume between and inside nodes
    notes: tuple[str, ...]
    launch: tuple = ()  # emit.Launch of the best plan of each engine, the chosen plan's first (set by the command)

    @property
    def chosen(self) -> Plan | None:
        return self.plans[0] if self.plans else None


# ------------------------------------------------------------------ search

@dataclass(frozen=True)
class Axes:
    gpus: tuple  # catalog.Gpu entries
    engines: tuple[str, ...]
    kv_dtypes: tuple[str, ...]
    max_gpus: int = 64
    gpus_per_node: int | None = None  # None: data/nodes.yaml per GPU kind
    expert_parallel: bool = False


@dataclass
class _Failure:
    reason: str
    gpu: str
    engine: str
    layout: str
    kv: str
    detail: str
    score: float  # which candidate's detail the family shows (the lowest score: the closest to passing)


def _gib(n: int) -> str:
    return f"{n / 2**30:,.2f} GiB"


def search(base, load: Load, targets: Targets, axes: Axes, *, prices: dict, get_engine: Callable,
           factors_for: Callable, node_of: Callable) -> PlanResult:
    """Every candidate of `axes` for the request `base` (an EngineRequest: model, weight format; no GPU), ranked.

    prices: catalog name -> fleet.Price; get_engine: the engine registry's get; factors_for(gpu, architecture) ->
    serving Factors; node_of(gpu) -> fleet.Node or None."""
    spec = base.spec
    if not axes.engines:
        raise InputError("names no engine", where="--engine", hint="vllm, sglang, trtllm")
    for name in axes.engines:
        engine = get_engine(name)
        if engine.flags is None:
            raise InputError(f"the {engine.name} engine has no launch flags to plan with", where="--engine",
                             hint="plan with vllm, sglang or trtllm")
    weight_dtype = base.weight_fmt.name if base.weight_fmt else (spec.weight_dtype or spec.dtype)
    _FLOPS_MEMO.clear()
    plans: list[Plan] = []
    failures: list[_Failure] = []
    considered = 0
    for gpu in axes.gpus:
        if getattr(gpu, "unified_memory", False):
            # GH200, GB200, GB10: what an engine finds free at start-up is not the capacity; a plan sized on it would
            # be a wrong yes
            failures += [_Failure(NOT_MODELLED, gpu.name, name, "-", "-",
                                  f"{gpu.name} shares its memory with the CPU: what an engine finds free at start-up is "
                                  "not its capacity, and kvplan does not model how much that is", 0) for name in axes.engines]
            continue
        node = node_of(gpu.name)
        per_node = axes.gpus_per_node or (node.gpus_per_node if node else 8)
        for engine_name in axes.engines:
            engine = get_engine(engine_name)
            seen_kv: set = set()
            for kv_flag in axes.kv_dtypes:
                spelled = engine.flags.kv_fp8_name if kv_flag.strip().lower() == "fp8" else kv_flag
                probe = dataclasses.replace(base, kv_dtype=spelled)
                try:
                    kv = engine.kv_dtype(probe)
                except KvplanError as err:
                    failures.append(_Failure(NOT_MODELLED, gpu.name, engine.name, "-", kv_flag, err.what, 0))
                    continue
                if kv.name in seen_kv:
                    continue  # 'auto' and the model's own dtype are one candidate
                seen_kv.add(kv.name)
                why = unsupported(engine, gpu, kv)
                if why:
                    failures.append(_Failure(UNSUPPORTED, gpu.name, engine.name, "-", kv_flag, why, 0))
                    continue
                for tp in TP_SIZES:
                    if tp > per_node or tp > axes.max_gpus:
                        break
                    considered_here, _ = _layouts(base, load, targets, axes, gpu, engine, spelled, kv_flag, tp, per_node,
                                                      node, prices, factors_for, failures, plans, weight_dtype)
                    considered += considered_here
    # cost first (dollars per hour; among equal hourly costs the plan that serves the load's tokens cheaper), then
    # fewer GPUs, then more headroom
    plans.sort(key=lambda p: (p.usd_per_hour if p.usd_per_hour is not None else math.inf,
                              p.usd_per_million_output_tokens if p.usd_per_million_output_tokens is not None else math.inf,
                              p.gpus, -p.headroom, p.gpu, p.engine, p.kv_dtype, p.tp, p.pp))
    plans = _ranked(plans)
    notes = []
    unpriced = sorted({p.gpu for p in plans if p.usd_per_hour is None})
    if unpriced:
        notes.append(f"no price for {', '.join(unpriced)}: their plans rank after the priced ones (give --price NAME=DOLLARS)")
    if any(not p.latency_basis or "no measurement" in (p.latency_basis or "") for p in plans[:5]):
        notes.append("some GPU kinds have no published measurement: their latency uses the factors of their architecture "
                     "or of all GPUs (docs/plan.md, 'Latency')")
    return PlanResult(
        model=spec.name, load=load, targets=targets, engines=tuple(axes.engines), gpus_considered=tuple(g.name for g in axes.gpus),
        kv_dtypes=tuple(axes.kv_dtypes), dtype=weight_dtype, max_gpus=axes.max_gpus, candidates=considered, viable=len(plans),
        plans=tuple(plans), rejected=tuple(_families(failures)), pareto=tuple(pareto(plans)),
        interconnect=("tensor parallelism inside one node over the node's GPU link (NVLink/NVSwitch, Infinity Fabric or "
                      "PCIe, per GPU kind: data/nodes.yaml); pipeline stages and replicas across nodes over the cluster "
                      "network (InfiniBand or RoCE assumed; its transfers, hidden x 2 bytes per token per stage, are not "
                      "timed)"),
        notes=tuple(notes))


# Latencies closer than this share of each other are one figure to kvplan: its estimates' median error is near a third
# (docs/plan.md, "Out of sample"), and engines at one layout differ by hundredths of a millisecond (their page sizes)
TIE_SHARE = 0.01


def ties(a: Plan, b: Plan) -> bool:
    """Two plans tie when they have the same GPUs, KV dtype, layout, replicas and cost, and latency estimates within
    TIE_SHARE of each other. kvplan's latency model times every engine alike, so engines at one layout and batch tie;
    they differ only where their pools hold different batches."""
    if (a.gpu, a.kv_dtype, a.tp, a.pp, a.replicas, a.usd_per_hour) != (b.gpu, b.kv_dtype, b.tp, b.pp, b.replicas,
                                                                        b.usd_per_hour):
        return False
    for x, y in ((a.ttft, b.ttft), (a.tpot, b.tpot)):
        if (x is None) != (y is None) or (x is not None and abs(x.estimate_ms - y.estimate_ms) > TIE_SHARE * x.estimate_ms):
            return False
    return True


def _ranked(plans: list[Plan]) -> list[Plan]:
    """Ranks in the sorted order, one rank per tie: a plan that ties the first plan of an earlier rank joins it."""
    groups: list[list[Plan]] = []
    for p in plans:
        group = next((g for g in groups if ties(g[0], p)), None)
        if group is None:
            groups.append([p])
        else:
            group.append(p)
    return [dataclasses.replace(p, rank=rank) for rank, group in enumerate(groups, 1) for p in group]


def unsupported(engine, gpu, kv) -> str | None:
    """Why `engine` cannot serve a `kv` cache on `gpu` at all, or None: the engine's record says which GPU vendors it
    runs on and whether its FP8 KV cache needs FP8 tensor cores (TensorRT-LLM: NVIDIA only, and it does)."""
    if engine.gpu_vendors is not None and gpu.vendor not in engine.gpu_vendors:
        vendors = " or ".join(v.upper() for v in engine.gpu_vendors)
        return f"{engine.title} runs on {vendors} GPUs only ({gpu.name} is {gpu.vendor})"
    if engine.fp8_kv_needs_fp8_cores and kv.bits == 8 and kv.name.startswith("fp8") and not gpu.fp8_dense_flops:
        return f"{engine.title}'s FP8 KV cache needs FP8 tensor cores, which {gpu.architecture} GPUs lack"
    return None


def _why_not(result, engine, layout: str, load: Load) -> tuple[str, bool]:
    """Why an engine does not start, in its own terms, and whether a deeper pipeline could help (a memory shortage
    can; a refusal at start-up cannot)."""
    view = result.pool_view()
    problem = view.problem if view else None
    if isinstance(problem, Refused):
        # a refusal with no room left for the KV cache (SGLang: the weights take it all) is a memory shortage a deeper
        # pipeline relieves; one with room (vLLM: the fraction asked is more than is free after the CUDA context) is not
        no_room = view.available_kv_bytes is None or view.available_kv_bytes <= 0
        return f"at {layout}: {problem.message}", no_room
    if isinstance(problem, RequestTooLong):
        return (f"at {layout} one request of {load.max_model_len:,} tokens needs {_gib(problem.needed_kv_bytes)} of KV cache "
                f"per GPU, {engine.title} has {_gib(max(problem.available_kv_bytes, 0))}"
                + (f" (longest that fits: {problem.longest:,} tokens)" if problem.longest else "")), True
    if isinstance(problem, PoolTooShort):
        return (f"at {layout} {engine.title}'s pool ({_gib(max(problem.available_kv_bytes, 0))} per GPU) is shorter than one "
                f"request of {load.max_model_len:,} tokens (longest: {problem.longest:,})"), True
    if isinstance(problem, NoKvMemory) or (view is not None and (view.available_kv_bytes or 0) <= 0):
        return f"at {layout} the weights and {engine.title}'s runtime leave no memory for the KV cache", True
    notes = "; ".join(result.notes[:1]) if result.notes else "it does not start"
    return f"at {layout}: {notes}", True


def _layouts(base, load, targets, axes, gpu, engine, kv_spelled, kv_flag, tp, per_node, node, prices, factors_for,
             failures, plans, weight_dtype) -> tuple[int, bool]:
    """PP from 1 up for one TP: skip layouts whose weights cannot fit, stop one past the first that starts."""
    spec = base.spec
    if any(layer.attends for layer in spec.layer_specs) and spec.attention_heads % tp:
        failures.append(_Failure(TP_HEADS, gpu.name, engine.name, f"TP{tp}", kv_flag,
                                 f"TP {tp} does not divide the {spec.attention_heads} attention heads", 0))
        return 1, False
    considered, started_at = 0, None
    weights = _weights_bytes(base)
    depths = [pp for pp in PP_SIZES if tp * pp <= axes.max_gpus and pp <= spec.layers]
    for i, pp in enumerate(depths):
        if started_at is not None and i > depths.index(started_at) + 1:
            break
        considered += 1
        layout = f"TP{tp}xPP{pp}"
        req = dataclasses.replace(base, hardware=_hardware(gpu), tp=tp, pp=pp, kv_dtype=kv_spelled, seq=load.max_model_len,
                                  batch=1)
        weights_per_gpu = weights / (tp * pp)
        if weights_per_gpu >= gpu.capacity_bytes:
            failures.append(_Failure(MEMORY, gpu.name, engine.name, layout, kv_flag,
                                     f"the weights alone take {_gib(int(weights_per_gpu))} per GPU at {layout} "
                                     f"({gpu.name}: {_gib(gpu.capacity_bytes)})", -tp * pp))
            continue
        try:
            result = engine.estimate(req, search_max_seq=False)
        except UnsupportedError as err:
            failures.append(_Failure(NOT_MODELLED, gpu.name, engine.name, layout, kv_flag, err.one_line(), 0))
            return considered, False
        except InputError as err:
            reason = TP_HEADS if err.where in ("--tp",) else NOT_MODELLED
            failures.append(_Failure(reason, gpu.name, engine.name, layout, kv_flag, err.what, 0))
            return considered, False
        if not result.fits:
            detail, deeper = _why_not(result, engine, layout, load)
            failures.append(_Failure(MEMORY, gpu.name, engine.name, layout, kv_flag, detail, -tp * pp))
            if deeper:
                continue
            break
        started_at = started_at or pp
        plan = _evaluate(req, result, load, targets, axes, gpu, engine, kv_flag, per_node, node, prices, factors_for,
                         failures, weight_dtype)
        if plan is not None:
            plans.append(plan)
        # a deeper pipeline only adds memory: it cannot help a layout that latency already limits, or one replica that
        # already holds the whole concurrency
        if plan is None or plan.batch_limit < plan.held_per_replica or (
                load.kind == "concurrency" and plan.held_per_replica >= load.concurrency):
            break
    return considered, started_at is not None


_FLOPS_MEMO: dict = {}  # id(spec) -> its FLOP counts by token count (serving.Replica.flops_memo); cleared per search


@lru_cache(maxsize=4096)
def _cache_model(spec, kv, tp: int, pp: int):
    return CacheModel(spec, kv, tp, pp)


def _hardware(gpu):
    return Hardware(gpu.name, gpu.runtime_capacity())


def _weights_bytes(base) -> int:
    key = ("weights", id(base.spec), base.weight_fmt)
    if key not in _FLOPS_MEMO:
        _FLOPS_MEMO[key] = model_weights(base.spec, base.weight_fmt)[0]
    return _FLOPS_MEMO[key]


def _pool_tokens(result) -> int | None:
    for name in ("max_total_num_tokens", "max_tokens", "kv_cache_tokens"):
        value = getattr(result, name, None)
        if value:
            return value
    return None


def _latency(e: serving.Estimate, target: Target | None, percentile: int) -> Latency:
    ms = 1e3
    return Latency(percentile, e.seconds * ms, e.low_s * ms, e.high_s * ms, e.floor_s * ms,
                   target.ms if target else None, e.meets(target.ms / ms if target else None))


def _tpot_at(replica, factors, load: Load, batch: int, percentile: int) -> serving.Estimate:
    """TPOT at a percentile of the load's requests: the decode step every running request shares, plus the prefills
    that land during one request's decode at that percentile (serving.prefills_at; docs/plan.md, "Latency targets")."""
    z = Z[percentile]
    return serving.tpot(replica, factors, batch=batch, prompt=load.prompt_mean, output=load.output_mean,
                        prefills=serving.prefills_at(batch, z, load.prompt_spread))


def _ttft_at(replica, factors, load: Load, batch: int, percentile: int) -> serving.Estimate:
    """TTFT at a percentile of the load's requests: that percentile's prompt (prefill grows with the prompt)."""
    return serving.ttft(replica, factors, prompt=prompt_at(load, percentile), batch=batch,
                        context=load.prompt_mean + load.output_mean // 2)


def _evaluate(req, result, load: Load, targets: Targets, axes: Axes, gpu, engine, kv_flag, per_node, node, prices,
              factors_for, failures, weight_dtype) -> Plan | None:
    layout = f"TP{req.tp}xPP{req.pp}"
    notes: list[str] = []
    avail = result.available_kv_bytes
    low = getattr(result, "available_kv_bytes_low", None)
    pinned = low if low is not None and low < avail else avail
    sized = result
    if pinned != avail:
        # the band's low edge: hold what the plan pins, not the budget model's middle
        sized = engine.estimate(dataclasses.replace(req, kv_cache_memory=pinned), search_max_seq=False)
        notes.append(f"pool pinned at the budget band's low edge ({_gib(pinned)} per GPU, the model says {_gib(avail)})")
    pool_requests = sized.max_batch or 0
    if load.tokens_mean < load.max_model_len:
        # the same pool (the budget at max_model_len, pinned), counted in requests of the mean final length: the budget
        # must not be re-modelled at the shorter length (its activation terms follow max_model_len)
        mean = engine.estimate(dataclasses.replace(req, seq=load.tokens_mean, kv_cache_memory=pinned), search_max_seq=False)
        held = mean.max_batch or 0
    else:
        held = pool_requests
    if held < 1:
        failures.append(_Failure(MEMORY, gpu.name, engine.name, layout, kv_flag,
                                 f"at {layout} the pool holds no request of {load.max_model_len:,} tokens", -req.tp * req.pp))
        return None
    price = prices.get(gpu.name)

    # latency: a replica at up to `held` sequences
    replica = factors = None
    try:
        replica = serving.replica_of(engine, req, result.weights_bytes, gpu=gpu,
                                     cache=_cache_model(req.spec, engine.kv_dtype(req), req.tp, req.pp),
                                     flops_memo=_FLOPS_MEMO.setdefault(id(req.spec), {}))
        factors = factors_for(gpu.name, gpu.architecture)
        replica.prefill_floor(1)  # raises for layer kinds the latency model does not time
    except UnsupportedError as err:
        replica = None
        # a target the user gave, or a rate (replicas follow from the latency), cannot be judged without one; the default
        # interactivity target is noted as not checked
        if targets.ttft or (targets.tpot and not targets.tpot_is_default) or load.kind == "rate":
            failures.append(_Failure(NO_LATENCY, gpu.name, engine.name, layout, kv_flag, err.what, 0))
            return None
        notes.append(f"no latency estimate: {err.what}")
    P, O = load.prompt_mean, load.output_mean
    limit = held
    ttft = tpot = None
    within = False
    rate_max = None
    if replica is not None:
        for target in targets.tpot:
            limit = serving.largest_batch(replica, factors, limit=limit, prompt=P, output=O, tpot_target_s=target.ms / 1e3,
                                          z=target.z, spread=load.prompt_spread)
            if limit < 1:
                one = _tpot_at(replica, factors, load, 1, target.percentile)
                state = one.meets(target.ms / 1e3)
                failures.append(_Failure(TPOT, gpu.name, engine.name, layout, kv_flag,
                                         (f"TPOT floor {one.floor_s * 1e3:,.1f} ms at one sequence is above "
                                          f"{target.words('TPOT')}" if state == "floor" else
                                          f"P{target.percentile} TPOT estimate {one.seconds * 1e3:,.1f} ms at one sequence "
                                          f"(floor {one.floor_s * 1e3:,.1f} ms) misses {target.words('TPOT')}"), one.seconds))
                return None
        for target in targets.ttft:
            limit, first = _ttft_limit(replica, factors, load, limit, target)
            if limit < 1:
                state = first.meets(target.ms / 1e3)
                prompt = prompt_at(load, target.percentile)
                failures.append(_Failure(TTFT, gpu.name, engine.name, layout, kv_flag,
                                         (f"prefill of the P{target.percentile} prompt ({prompt:,} tokens) takes at least "
                                          f"{first.floor_s * 1e3:,.1f} ms" if state == "floor" else
                                          f"TTFT estimate {first.seconds * 1e3:,.1f} ms for the P{target.percentile} prompt "
                                          f"({prompt:,} tokens; floor {first.floor_s * 1e3:,.1f} ms)")
                                         + f", above {target.ms:,.6g} ms", first.seconds))
                return None
        rate_max = serving.operating_point(replica, factors, batch=limit, prompt=P, output=O,
                                           ttft_prompt=load.prompt_p99).requests_per_s

    # replicas for the load
    if load.kind == "concurrency":
        replicas = -(-load.concurrency // limit)
        per_replica = load.concurrency / replicas
        headroom = 1 - load.concurrency / (replicas * limit)
        batch = math.ceil(per_replica)
    else:
        replicas = max(1, math.ceil(load.rate / rate_max - 1e-12))
        rate_each = load.rate / replicas
        batch = _batch_for_rate(replica, factors, load, limit, rate_each)
        per_replica = batch
        headroom = 1 - rate_each / rate_max
    gpus_per_replica = req.tp * req.pp
    total = replicas * gpus_per_replica
    if total > axes.max_gpus:
        failures.append(_Failure(GPUS, gpu.name, engine.name, layout, kv_flag,
                                 f"{replicas:,} replicas of {gpus_per_replica} GPUs ({total:,} GPUs) at {layout}; "
                                 f"one replica holds {limit:,}", total))
        return None
    out_tps = None
    if replica is not None:
        op = serving.operating_point(replica, factors, batch=batch, prompt=P, output=O, ttft_prompt=load.prompt_p99)
        # every target is checked at the operating point; the table shows the highest percentile of each (TTFT P99 and
        # the mean TPOT without one)
        checked = ([("ttft", t, _ttft_at(replica, factors, load, batch, t.percentile)) for t in targets.ttft]
                   + [("tpot", t, _tpot_at(replica, factors, load, batch, t.percentile)) for t in targets.tpot])
        within = any(e.meets(t.ms / 1e3) == "band" for _, t, e in checked)
        ttft_at = targets.ttft[-1] if targets.ttft else None
        tpot_at = targets.tpot[-1] if targets.tpot else None
        ttft = _latency(_ttft_at(replica, factors, load, batch, ttft_at.percentile if ttft_at else 99), ttft_at,
                        ttft_at.percentile if ttft_at else 99)
        tpot = _latency(op.tpot if tpot_at is None else _tpot_at(replica, factors, load, batch, tpot_at.percentile),
                        tpot_at, tpot_at.percentile if tpot_at else 50)
        out_tps = replicas * op.output_tokens_per_s if load.kind == "concurrency" else load.rate * O
        if not factors.measured:
            notes.append(f"latency: {factors.basis}")
    stages_per_node = max(1, per_node // req.tp)
    nodes_per_replica = -(-req.pp // stages_per_node)
    nodes = replicas * nodes_per_replica if nodes_per_replica > 1 else -(-total // per_node)
    usd_hour = price.usd_per_gpu_hour * total if price else None
    per_mtok = usd_hour / (out_tps * 3600) * 1e6 if usd_hour is not None and out_tps else None
    return Plan(
        rank=0, gpu=gpu.name, engine=engine.name, engine_version=result.engine_version, kv_dtype=result.kv_dtype,
        kv_dtype_flag=req.kv_dtype, dtype=weight_dtype, tp=req.tp, pp=req.pp,
        expert_parallel=bool(axes.expert_parallel and req.spec.active_params and req.spec.active_params < req.spec.params),
        gpus_per_replica=gpus_per_replica, nodes_per_replica=nodes_per_replica, replicas=replicas, gpus=total, nodes=nodes,
        gpus_per_node=per_node, link=node.link if node else None, max_model_len=load.max_model_len, available_kv_bytes=avail,
        available_kv_bytes_low=low, available_kv_bytes_high=getattr(result, "available_kv_bytes_high", None),
        pinned_kv_bytes=pinned, pool_tokens=_pool_tokens(sized), pool_requests=pool_requests, held_per_replica=held,
        batch_limit=limit, concurrency_per_replica=per_replica,
        requests_per_s_per_replica=rate_max, output_tokens_per_s=out_tps,
        usd_per_gpu_hour=price.usd_per_gpu_hour if price else None, price_source=(f"{price.offer} ({price.source}, {price.date})"
                                                                              if price else None),
        usd_per_hour=usd_hour, usd_per_million_output_tokens=per_mtok, headroom=headroom, ttft=ttft, tpot=tpot,
        latency_basis=factors.basis if factors else None, within_band=within, notes=tuple(notes))


def _ttft_limit(replica, factors, load: Load, limit: int, target: Target) -> tuple[int, serving.Estimate]:
    """The largest batch (<= limit) at which the TTFT estimate of the target percentile's prompt meets the target
    (TTFT grows with the batch through the decode step a new request waits behind)."""
    target_s = target.ms / 1e3

    def at(b: int) -> serving.Estimate:
        return _ttft_at(replica, factors, load, b, target.percentile)

    first = at(1)
    if first.seconds > target_s:
        return 0, first
    if at(limit).seconds <= target_s:
        return limit, first
    lo, hi = 1, limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if at(mid).seconds <= target_s else (lo, mid)
    return lo, first


def _batch_for_rate(replica, factors, load: Load, limit: int, rate: float) -> int:
    """The concurrency at which a replica serves `rate` requests per second (Little's law; the smallest batch whose
    sustained rate reaches it). A smaller batch has a shorter latency, so the batch is at most rate x the latency at
    `limit`: the search starts from there."""
    def sustained(b: int) -> float:
        return serving.requests_per_s(replica, factors, batch=b, prompt=load.prompt_mean, output=load.output_mean)

    if sustained(1) >= rate:
        return 1
    hi = min(limit, max(2, math.ceil(rate * limit / sustained(limit))))
    lo = 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if sustained(mid) < rate else (lo, mid)
    return hi


def _families(failures: list[_Failure]) -> list[Rejected]:
    groups: dict[tuple[str, str], list[_Failure]] = {}
    for f in failures:
        groups.setdefault((f.gpu, f.reason), []).append(f)
    out = []
    for (gpu, reason), group in groups.items():
        best = min(group, key=lambda f: f.score)
        out.append(Rejected(reason=reason, gpu=gpu, engines=tuple(sorted({f.engine for f in group})),
                            layouts=tuple(sorted({f.layout for f in group if f.layout != "-"}, key=_layout_key)),
                            kv_dtypes=tuple(sorted({f.kv for f in group})), candidates=len(group), detail=best.detail))
    order = list(REASONS)
    out.sort(key=lambda r: (r.gpu, order.index(r.reason)))
    return out


def _layout_key(text: str):
    import re

    return tuple(int(n) for n in re.findall(r"\d+", text)) or (0,)


def pareto(plans: list[Plan]) -> list[ParetoPoint]:
    """Cost per million output tokens against TPOT for every priced plan with a latency estimate; `front` marks the
    plans no other is both cheaper per token and faster than (at least as good in both, better in one). One sweep in
    cost order: a plan is on the front when it is the fastest of its cost and faster than every cheaper plan."""
    points = [p for p in plans if p.usd_per_million_output_tokens is not None and p.tpot is not None]
    fastest_of_cost: dict[float, float] = {}
    for p in points:
        cost = p.usd_per_million_output_tokens
        fastest_of_cost[cost] = min(fastest_of_cost.get(cost, math.inf), p.tpot.estimate_ms)
    best_cheaper: dict[float, float] = {}
    running = math.inf
    for cost in sorted(fastest_of_cost):
        best_cheaper[cost] = running
        running = min(running, fastest_of_cost[cost])
    return [ParetoPoint(p.rank, p.engine, p.usd_per_million_output_tokens, p.tpot.estimate_ms, p.concurrency_per_replica,
                        f"#{p.rank} {p.gpu} {p.engine} TP{p.tp}xPP{p.pp} {p.kv_dtype} x{p.replicas}",
                        p.tpot.estimate_ms == fastest_of_cost[p.usd_per_million_output_tokens]
                        and p.tpot.estimate_ms < best_cheaper[p.usd_per_million_output_tokens])
            for p in points]
