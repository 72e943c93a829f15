"""`kvplan plan`'s views: the short answer (the default: the target, the cheapest plans with tied engines on one row,
the rejected families in a line, the chosen plan and its launch command, at most 40 lines), the detail (`--detail`:
bands, pools, every engine's launch command), the rejected families as a table (`--rejected all`); the same as
Markdown."""

from __future__ import annotations

from kvplan.analysis.plan import REASON_LABELS, REASONS, PlanResult
from kvplan.analysis.targets import DEFAULT_TPOT_MS

REJECTED = ("none", "summary", "all")
TOP = 10  # ranks shown by default
LINES = 40  # the most lines the default answer takes (fewer ranks where more would pass it)


def _load_words(r: PlanResult) -> str:
    load = r.load
    what = (f"{load.concurrency:,} sequences at once" if load.kind == "concurrency" else f"{load.rate:,.6g} requests/s")
    fixed = load.requests == 1 or load.prompt_p50 == load.prompt_p99 == load.prompt_mean and load.prompt_spread == 1
    shape = (f"{load.description}" if fixed else
             f"{load.description} (mean prompt {load.prompt_mean:,}, output {load.output_mean:,}; P99 prompt "
             f"{load.prompt_p99:,} tokens)")
    return f"{what} · {shape} · max_model_len {load.max_model_len:,}"


def _targets(r: PlanResult) -> str:
    t = r.targets
    parts = [x.words("TTFT") for x in t.ttft] + [x.words("TPOT") for x in t.tpot]
    if not parts:
        return "no latency target"
    text = ", ".join(parts)
    if t.tpot_is_default:
        text += (f" (the default, interactive: {1000 / DEFAULT_TPOT_MS:g} tokens a second per user; --tpot sets it, "
                 "--tpot none drops it)")
    return text


def _pct(lat, metric: str, default: int) -> str:
    return f"{metric} P{lat.percentile if lat else default}"


def _ms(lat, digits: int) -> str:
    if lat is None:
        return "—"
    return f"{lat.estimate_ms:,.{digits}f} ({lat.low_ms:,.{digits}f}–{lat.high_ms:,.{digits}f})"


def _money(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"${x:,.{digits}f}"


def _mark(p) -> str:
    marks = []
    if p.within_band:
        marks.append("≈")
    if p.latency_basis and p.latency_basis.startswith("no measurement"):
        marks.append("?")
    return "".join(marks)


def _shown(r: PlanResult, top: int) -> list:
    """The plans of the first `top` ranks."""
    return [p for p in r.plans if p.rank <= top]


def _groups(r: PlanResult, top: int) -> list[list]:
    """The plans of the first `top` ranks, tied plans (one rank) together."""
    groups: dict[int, list] = {}
    for p in _shown(r, top):
        groups.setdefault(p.rank, []).append(p)
    return list(groups.values())


def short_rows(r: PlanResult, top: int) -> list[list[str]]:
    """One row per rank: tied engines on one row ('sglang = vllm'), their headroom as a range."""
    rows = []
    for group in _groups(r, top):
        p = group[0]
        rooms = sorted({round(100 * q.headroom) for q in group})
        room = f"{rooms[0]}%" if len(rooms) == 1 else f"{rooms[0]}–{rooms[-1]}%"
        marks = "".join(sorted({m for q in group for m in _mark(q)}, key="≈?".index))
        layout = f"{p.replicas:,}×TP{p.tp}" + (f"×PP{p.pp}" if p.pp > 1 else "")
        rows.append([f"{p.rank}{marks}", p.gpu, " = ".join(q.engine for q in group), _kv_short(p.kv_dtype), layout,
                     f"{p.gpus:,}", _money(p.usd_per_hour),
                     _money(p.usd_per_million_output_tokens, 3), "—" if p.ttft is None else f"{p.ttft.estimate_ms:,.0f}",
                     "—" if p.tpot is None else f"{p.tpot.estimate_ms:,.1f}", room])
    return rows


def _kv_short(kv: str) -> str:
    """fp8_e4m3 as fp8 (every engine's fp8 flag stores e4m3; --detail and --json spell it out)."""
    return "fp8" if kv == "fp8_e4m3" else kv


def short_headers(r: PlanResult) -> list[str]:
    first = r.plans[0] if r.plans else None
    return ["#", "GPU", "engine", "KV", "replicas × layout", "GPUs", "$/hour", "$/M out tok",
            f"{_pct(first.ttft if first else None, 'TTFT', 99)} ms", f"{_pct(first.tpot if first else None, 'TPOT', 50)} ms",
            "headroom"]


def tie_line(r: PlanResult, top: int) -> str | None:
    """Said once where engines tie among the shown ranks: kvplan does not rank what it cannot tell apart."""
    tied = [g for g in _groups(r, top) if len(g) > 1]
    if not tied:
        return None
    return ("a = b: the engines tie (the same GPUs, layout, cost and latency; kvplan times every engine with one latency "
            "model, so engines rank apart only where their pools hold different batches)")


def rejected_summary(r: PlanResult) -> str | None:
    if not r.rejected:
        return None
    counts: dict[str, set] = {}
    for x in r.rejected:
        counts.setdefault(x.reason, set()).add(x.gpu)
    order = list(REASONS)
    parts = [f"{REASON_LABELS[reason]} ({len(gpus):,} GPU kind{'s' if len(gpus) > 1 else ''})"
             for reason, gpus in sorted(counts.items(), key=lambda kv: order.index(kv[0]))]
    return f"rejected: {', '.join(parts)}; --rejected all lists each family and its closest candidate"


def plan_rows(r: PlanResult, top: int) -> list[list[str]]:
    rows = []
    for p in _shown(r, top):
        nodes = f"{p.gpus:,} ({p.nodes:,} node{'s' if p.nodes > 1 else ''})"
        rows.append([str(p.rank), p.gpu, p.engine, p.kv_dtype, f"TP{p.tp}×PP{p.pp}", f"{p.replicas:,}", nodes,
                     _money(p.usd_per_hour), _money(p.usd_per_million_output_tokens, 3), f"{p.held_per_replica:,}",
                     f"{p.batch_limit:,}", _ms(p.ttft, 0), _ms(p.tpot, 1), f"{100 * p.headroom:.0f}%", _mark(p)])
    return rows


def plan_headers(r: PlanResult) -> list[str]:
    first = r.plans[0] if r.plans else None
    return ["#", "GPU", "engine", "KV", "layout", "replicas", "GPUs", "$/hour", "$/M out tok", "held", "batch limit",
            f"{_pct(first.ttft if first else None, 'TTFT', 99)} ms (band)",
            f"{_pct(first.tpot if first else None, 'TPOT', 50)} ms (band)", "headroom", ""]


REJECT_HEADERS = ["GPU", "why", "engines", "layouts", "closest candidate"]


def reject_rows(r: PlanResult) -> list[list[str]]:
    return [[x.gpu, REASON_LABELS[x.reason], ", ".join(x.engines), _layouts(x.layouts), x.detail] for x in r.rejected]


def _layouts(layouts) -> str:
    if not layouts:
        return "all"
    if len(layouts) > 4:
        return f"{layouts[0]} … {layouts[-1]} ({len(layouts)})"
    return ", ".join(layouts)


def chosen_short(r: PlanResult) -> list[str]:
    """The chosen plan in a few lines: the fleet, the pool, and the launch command of each engine tied at its rank."""
    p = r.chosen
    if p is None:
        return ["no candidate holds the load"]
    tied = [q.engine for q in r.plans if q.rank == p.rank]
    across = f", each across {p.nodes_per_replica} nodes" if p.nodes_per_replica > 1 else ""
    lines = [f"chosen: #{p.rank} {p.gpus:,} x {p.gpu} on {p.nodes:,} node{'s' if p.nodes > 1 else ''}: {p.replicas:,} "
             f"replica{'s' if p.replicas > 1 else ''} of TP {p.tp} x PP {p.pp}{across}, KV {p.kv_dtype}; "
             f"{_money(p.usd_per_hour)}/hour; each replica holds {p.held_per_replica:,} requests and runs at most "
             f"{p.batch_limit:,}"]
    if p.nodes_per_replica > 1:
        lines.append(f"  interconnect: {r.interconnect}")
    for launch in r.launch:
        if launch.engine in tied:
            lines.append(f"  {launch.engine}: {launch.command}")
            if launch.extra_options:
                lines.append(f"    extra-llm-api-options.yaml: {launch.extra_options.strip()}")
    return lines


def chosen_lines(r: PlanResult) -> list[str]:
    p = r.chosen
    if p is None:
        return ["no candidate holds the load"]
    span = (f"{p.replicas} replica(s) of {p.gpus_per_replica} GPUs, each across {p.nodes_per_replica} nodes"
            if p.nodes_per_replica > 1 else f"{p.replicas} replica(s) of {p.gpus_per_replica} GPU(s)")
    lines = [f"chosen: #{p.rank} {p.gpus} x {p.gpu} on {p.nodes} node(s) of {p.gpus_per_node} ({span}); {p.engine} "
             f"TP {p.tp} x PP {p.pp}, KV {p.kv_dtype}; {_money(p.usd_per_hour)}/hour",
             f"  pool pinned at {p.pinned_kv_bytes:,} B per GPU ({p.pinned_kv_bytes / 2**30:,.2f} GiB)"
             + (f", {p.pool_tokens:,} tokens" if p.pool_tokens else "")
             + f"; holds {p.pool_requests:,} requests of {p.max_model_len:,} tokens",
             f"  interconnect: {r.interconnect}"]
    if p.link:
        lines.append(f"  inside a node: {p.link}")
    for launch in r.launch:
        lines.append(f"  {launch.engine}: {launch.command}")
        if launch.extra_options:
            lines.append(f"    extra-llm-api-options.yaml: {launch.extra_options.strip()}")
    return lines


def _header(r: PlanResult) -> str:
    return f"{r.model} · {_load_words(r)}"


def _title(r: PlanResult, top: int) -> str:
    ranks = len({p.rank for p in r.plans})
    return (f"{r.candidates:,} candidates, {r.viable:,} hold the load; the {min(top, ranks)} cheapest of {ranks:,} ranks "
            "(on-demand prices; ≈ a target met only inside the band, ? no measurement of this GPU kind)")


def tables(r: PlanResult, *, top: int = 10, detail: bool = False, rejected: str = "summary") -> list:
    """What the text view prints, in order: rich renderables and Text lines."""
    from rich.text import Text

    from kvplan.cli import render

    out = [Text(_header(r), style="bold"), Text(f"target: {_targets(r)}", style="bold")]
    if r.plans and detail:
        out.append(render.figures_table(_title(r, top), plan_headers(r), plan_rows(r, top), text=(1, 2, 3, 14)))
    elif r.plans:
        out.append(render.figures_table(_title(r, top), short_headers(r), short_rows(r, top), text=(1, 2, 3),
                                        simple=True))
        tie = tie_line(r, top)
        if tie:
            out.append(Text(tie))
    else:
        out.append(Text(f"{r.candidates:,} candidates, none holds the load"))
    if r.rejected and rejected == "all":
        out.append(render.figures_table("rejected families", REJECT_HEADERS, reject_rows(r), text=(0, 1, 2, 3, 4)))
    elif r.rejected and rejected == "summary":
        out.append(Text(rejected_summary(r)))
    out += [Text(line) for line in (chosen_lines(r) if detail else chosen_short(r))]
    return out


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    esc = [[c.replace("|", "\\|") for c in row] for row in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in esc]
    return "\n".join(lines) + "\n"


def markdown(r: PlanResult, *, top: int = 10, rejected: str = "summary") -> str:
    parts = [f"**{r.model}** · {_load_words(r)} · {_targets(r)} · {r.candidates:,} candidates, {r.viable:,} hold the load\n"]
    if r.plans:
        parts.append(_md_table(plan_headers(r)[:-1] + ["mark"], plan_rows(r, top)))
    if r.rejected and rejected == "all":
        parts.append("Rejected families:\n\n" + _md_table(REJECT_HEADERS, reject_rows(r)))
    elif r.rejected and rejected == "summary":
        parts.append(rejected_summary(r) + "\n")
    parts.append("\n".join(f"- {line.strip()}" if not line.startswith("chosen") else line for line in chosen_lines(r)) + "\n")
    return "\n".join(parts)
