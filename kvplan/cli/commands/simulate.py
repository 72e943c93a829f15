"""`kvplan simulate MODEL --workload FILE`: admit a real mix of request lengths into one GPU's KV pool under
contiguous preallocation, paged blocks and exact allocation; report sustained concurrency, utilisation
and waste (docs/workloads.md)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kvplan.cli.options import ModelsDirOpt, OfflineOpt, with_model_lookup, DtypeOpt, GpuMemOpt, GpuUtilOpt, KvDtypeOpt, ModelArg, PpOpt, TpOpt, whole_number


def register(app) -> None:
    from kvplan.cli.edge import guarded

    app.command(name="simulate")(guarded(with_model_lookup(simulate)))


def simulate(
    model: ModelArg,
    workload: Annotated[str, typer.Option("--workload", "-w", help="CSV or JSONL of prompt_tokens,output_tokens per request; a YAML/JSON distribution by percentiles; or inline: 'prompt=p50:100,p99:2000;output=p50:200,p99:1500;requests=1000'.", show_default=False)],
    seq: Annotated[Optional[str], typer.Option("--seq", "-s", help="max_model_len: the length contiguous policies reserve and the cap on prompt + output. Default: the model's max context.", show_default=False)] = None,
    kv_dtype: KvDtypeOpt = "auto",
    dtype: DtypeOpt = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="GPU from the catalog (kvplan gpus).", show_default=False)] = None,
    gpu_mem: GpuMemOpt = None,
    tp: TpOpt = None,
    pp: PpOpt = 1,
    gpu_util: GpuUtilOpt = None,
    reserve: Annotated[Optional[str], typer.Option("--reserve", help="Memory per GPU kept back for runtime overhead; overrides --gpu-util.", show_default=False)] = None,
    kv_cache_memory: Annotated[Optional[str], typer.Option("--kv-cache-memory", help="Bytes per GPU for the KV pool; skips the budget model (no GPU needed).", show_default=False)] = None,
    block_size: Annotated[int, typer.Option("--block-size", help="Paged block size in tokens (vLLM default 16).", parser=whole_number)] = 16,
    shared_prefix: Annotated[int, typer.Option("--shared-prefix", help="Tokens of a system prompt put before every request's prompt; stored once by paged (whole blocks) and exact (prefix caching).", parser=whole_number)] = 0,
    policies: Annotated[str, typer.Option("--policies", help="Comma list of: contiguous, pow2, oracle, paged, exact.")] = "contiguous,pow2,oracle,paged,exact",
    rate: Annotated[Optional[float], typer.Option("--rate", "-r", help="Requests arriving per second at random (Poisson), each step timed by kvplan's latency estimate on the --gpu; the report adds the wait from arrival to admission. Default: every request queued at once.", show_default=False)] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the --rate arrivals (the same seed, the same run).", parser=whole_number)] = 0,
    max_num_seqs: Annotated[Optional[int], typer.Option("--max-num-seqs", help="Cap on running requests (vLLM max_num_seqs). Default: vLLM's default for the GPU and release, as a deployment runs it.", show_default=False, parser=whole_number)] = None,
    kv_host: Annotated[Optional[str], typer.Option("--kv-host", help="Host memory for offloaded KV blocks, this GPU's share (vLLM --kv-offloading-size / TP ranks, LMCache's max_local_cpu_size): the tier view in tokens and warm requests (docs/workloads.md).", show_default=False)] = None,
    kv_disk: Annotated[Optional[str], typer.Option("--kv-disk", help="Disk for offloaded KV blocks, this GPU's share (LMCache's max_local_disk_size).", show_default=False)] = None,
    prefix_hit_rate: Annotated[Optional[float], typer.Option("--prefix-hit-rate", help="Share of prompt tokens found in a cache tier (0-1): the prefill tokens that reuse saves.", show_default=False)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    models_dir: ModelsDirOpt = None,
    offline: OfflineOpt = False,
):
    """Simulate admission of a workload into the KV pool of the most loaded GPU: how many requests run at
    once, how much of the pool holds K/V, and how much is wasted, per allocation policy."""
    from kvplan.cli import render
    from kvplan.analysis import workload as wl
    from kvplan.core import yamlio
    from kvplan.core.cache import CacheModel
    from kvplan.requests.build import build_request
    from kvplan import engines
    from kvplan.core.errors import InputError

    if gpu is None and gpu_mem is None and kv_cache_memory is None:
        raise InputError("the pool size needs a GPU", where="--gpu", hint="add --gpu NAME, --gpu-mem SIZE or --kv-cache-memory SIZE")
    if shared_prefix < 0:
        raise InputError(f"must be 0 or more, got {shared_prefix}", where="--shared-prefix")
    if max_num_seqs is not None and max_num_seqs < 1:
        raise InputError(f"must be at least 1, got {max_num_seqs}", where="--max-num-seqs")
    chosen = tuple(dict.fromkeys(p.strip().lower() for p in policies.split(",") if p.strip()))
    if not chosen:
        raise InputError("names no policy", where="--policies", hint="e.g. contiguous,paged")
    # a count no simulation of these policies finishes in seconds is refused before the requests are drawn
    requests, description = wl.load(workload, load_yaml=yamlio.load_yaml, max_requests=wl.max_requests_for(chosen))
    request = build_request(model, seq=seq, batch=1, kv_dtype=kv_dtype, dtype=dtype, gpu=gpu, gpu_mem=gpu_mem, gpus=None, tp=tp,
                            pp=pp, gpu_util=gpu_util, reserve=reserve, kv_cache_memory=kv_cache_memory, block_size=block_size)
    static = engines.get("static")  # the contiguous layout: its pool is the GPU less the weights
    est = static.estimate(request)
    pool = est.per_gpu.usable_bytes - est.per_gpu.weights_bytes
    cache = CacheModel(request.spec, static.kv_dtype(request), request.tp, request.pp)
    cap_note = None
    if max_num_seqs is None:
        # the engine's own batch cap, as a deployment runs it: vLLM's default max_num_seqs for this GPU and release
        # (engine/arg_utils.py, engines/vllm/budget.py resolve_batch_limits), not memory alone
        from kvplan.core.errors import KvplanError

        try:
            max_num_seqs = engines.get("vllm").estimate(request, search_max_seq=False).max_num_seqs
            cap_note = (f"running requests capped at {max_num_seqs:,}, vLLM's default max_num_seqs for this GPU "
                        "(--max-num-seqs N to change it)")
        except KvplanError:
            cap_note = "no batch cap: vLLM cannot judge this launch, so memory is the only limit (--max-num-seqs N sets one)"
    clock = _clock(request, est, cache, requests) if rate is not None else None
    result = wl.simulate(requests, cache, pool_bytes=pool, max_model_len=request.seq, block_size=block_size,
                         shared_prefix=shared_prefix, policies=chosen, max_num_seqs=max_num_seqs, model=request.spec.name,
                         workload=description, gpu=est.gpu, rate=rate, seed=seed, clock=clock)
    tier = None
    if kv_host is not None or kv_disk is not None or prefix_hit_rate is not None:
        from kvplan.core import units

        host = units.parse_size(kv_host, what="--kv-host") if kv_host is not None else 0
        disk = units.parse_size(kv_disk, what="--kv-disk") if kv_disk is not None else 0
        tier = wl.tiers(result, host_bytes=host, disk_bytes=disk, prefix_hit_rate=prefix_hit_rate)
    if json_out:
        import dataclasses

        out = dataclasses.asdict(result)
        out["tiers"] = dataclasses.asdict(tier) if tier is not None else None
        print(render.to_json(out))
        return
    _print(result)
    if tier is not None:
        _print_tiers(tier)
    if cap_note:
        render.console(stderr=True).print(f"note: {cap_note}")


def _clock(request, est, cache, requests):
    """The seconds of one engine step on the request's catalog GPU (serving.step_clock), every running sequence at
    the workload's mean context (its mean prompt and half its mean output)."""
    from kvplan import engines
    from kvplan.analysis import serving
    from kvplan.core.errors import InputError
    from kvplan.model.efficiency import factors_for

    gpu = request.hardware.facts if request.hardware is not None else None
    if gpu is None:
        raise InputError("arrivals per second need each step's time, which needs a GPU from the catalog", where="--rate",
                         hint="name one with --gpu (kvplan gpus), or leave --rate out")
    static = engines.get("static")
    replica = serving.replica_of(static, request, est.weights_bytes, gpu=gpu, cache=cache)
    context = round(sum(r.prompt + r.output / 2 for r in requests) / len(requests))
    return serving.step_clock(replica, factors_for(gpu.name, gpu.architecture), context=context)


def _print_tiers(t) -> None:
    from kvplan.cli import render

    rows = [["GPU pool", f"{t.gpu_pool_tokens:,}", f"{t.gpu_free_tokens:,} free on average ({t.policy})",
             f"{t.warm_requests_gpu:,.1f}"],
            ["host (and disk)", f"{t.host_tokens + t.disk_tokens:,}", f"{t.host_tokens:,} host + {t.disk_tokens:,} disk",
             f"{t.warm_requests_host:,.1f}"]]
    table = render.figures_table(f"KV tiers: finished requests kept warm at the mean length of {t.mean_request_tokens:,.0f} tokens",
                                 ["tier", "tokens", "of which", "warm requests"], rows, text=(0, 2))
    render.print_fitting(render.console(), table)
    if t.prefix_hit_rate is not None:
        render.console(stderr=True).print(
            f"note: a prefix hit rate of {t.prefix_hit_rate:.0%} saves {t.prefill_tokens_saved_per_request:,.1f} prefill tokens "
            "per request while the reused prefixes fit the tiers above")


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _print(r) -> None:
    from kvplan.cli import render
    from kvplan.core.units import format_bytes, format_tokens

    out = render.console()
    where = f"{r.gpu or 'GPU'}" + (f" (TP {r.tp} x PP {r.pp}, most loaded GPU)" if r.tp * r.pp > 1 else "")
    head = render.quantity_table(f"{r.model} · workload {r.workload} · max_model_len {format_tokens(r.max_model_len)} · "
                                 f"KV {r.kv_dtype}")
    head.add_column("quantity")
    head.add_column("value", justify="right")
    head.add_row("requests", f"{r.requests:,}" + (f" ({r.rejected:,} rejected, {r.truncated:,} outputs cut)" if r.rejected or r.truncated else ""))
    for name, s in (("prompt tokens", r.prompt_tokens), ("output tokens", r.output_tokens)):
        head.add_row(name, f"mean {s.mean:,.1f} · p50 {s.p50:,} · p90 {s.p90:,} · p99 {s.p99:,} · max {s.max:,}")
    head.add_row(f"KV pool on {where}", f"{format_bytes(r.pool_bytes)} ({r.pool_bytes:,} B)")
    head.add_row("K/V bytes per token on that GPU", f"{r.kv_bytes_per_token:,} B")
    head.add_row("pool in tokens (full length)", f"{r.pool_bytes // r.kv_bytes_per_token:,}" if r.kv_bytes_per_token else "—")
    if r.shared_prefix:
        head.add_row("shared prefix", f"{r.shared_prefix:,} tokens")
    render.print_fitting(out, head)

    # two tables of few columns rather than one of eleven: at 100 columns rich would cut the figures ("546,…")
    names = [p.policy + (f" ({p.block_size})" if p.block_size else "") + ("" if p.saturated or r.rate else " *")
             for p in r.policies]
    if r.rate is not None:
        render.print_table(
            out, f"requests running at once under each allocation policy ({r.rate:,.6g} requests/s arriving at random, "
                 f"seed {r.seed}; means over time)",
            ["policy", "running (mean)", "peak", "wait P50", "wait P99", "preempted", "output tok/s"],
            [[name, f"{p.sustained_concurrency:,.1f}", f"{p.peak_concurrency:,}", f"{p.wait_p50_s:,.2f} s",
              f"{p.wait_p99_s:,.2f} s", f"{p.preemptions:,}", f"{p.output_tokens_per_s:,.0f}"]
             for name, p in zip(names, r.policies)])
    else:
        render.print_table(
            out, "requests running at once under each allocation policy (all queued at step 0; means over the saturated steps)",
            ["policy", "running (mean)", "peak", "preempted", "recomputed tokens", "throughput"],
            [[name, f"{p.sustained_concurrency:,.1f}", f"{p.peak_concurrency:,}", f"{p.preemptions:,}", f"{p.recomputed_tokens:,}",
              f"{p.relative_throughput:.2f}x" if p.relative_throughput is not None else f"{p.tokens_per_step:,.1f} tok/step"]
             for name, p in zip(names, r.policies)])
    render.print_table(
        out, f"the {format_bytes(r.pool_bytes)} pool under each policy (shares of the pool, then of the allocated bytes)",
        ["policy", "K/V in pool", "allocated", "waste", "of which reserved", "never used"],
        [[name, _pct(p.utilisation), _pct(p.allocation), _pct(p.waste), _pct(p.waste_reserved), _pct(p.waste_never_used)]
         for name, p in zip(names, r.policies)])
    err = render.console(stderr=True)
    if r.rate is not None:
        err.print("waste = allocated bytes not holding K/V, of the allocated; wait = from arrival to admission (room in the "
                  "pool or under the running cap); each step timed by kvplan's latency estimate (docs/plan.md: typically "
                  "within a third)")
    else:
        err.print("waste = allocated bytes not holding K/V, of the allocated; throughput = output tokens per step relative to "
                  "contiguous (recomputation after preemption not charged)"
                  + ("; * = never saturated (every request fit at once)" if any(not p.saturated for p in r.policies) else ""))
    for p in r.policies:
        err.print(f"  {p.policy}: {p.description}")
    for note in r.notes:
        err.print(f"note: {note}")
