"""`kvplan plan`'s tables: the ranked plans, the rejected families, the chosen plan and its launch commands; the same
as Markdown."""

from __future__ import annotations

from kvplan.analysis.plan import REASON_LABELS, PlanResult


def _load_words(r: PlanResult) -> str:
    load = r.load
    what = (f"{load.concurrency:,} sequences at once" if load.kind == "concurrency" else f"{load.rate:,.6g} requests/s")
    shape = (f"{load.description}" if load.requests == 1 else
             f"{load.description} ({load.requests:,} requests: mean prompt {load.prompt_mean:,}, mean output "
             f"{load.output_mean:,}, P99 prompt {load.prompt_p99:,} tokens)")
    return f"{what} · {shape} · max_model_len {load.max_model_len:,}"


def _targets(r: PlanResult) -> str:
    parts = []
    if r.targets.ttft_ms is not None:
        parts.append(f"TTFT ≤ {r.targets.ttft_ms:,.6g} ms")
    if r.targets.tpot_ms is not None:
        parts.append(f"TPOT ≤ {r.targets.tpot_ms:,.6g} ms")
    return ("P99 " + ", ".join(parts)) if parts else "no latency target"


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


def plan_rows(r: PlanResult, top: int) -> list[list[str]]:
    rows = []
    for p in r.plans[:top]:
        nodes = f"{p.gpus:,} ({p.nodes:,} node{'s' if p.nodes > 1 else ''})"
        rows.append([str(p.rank), p.gpu, p.engine, p.kv_dtype, f"TP{p.tp}×PP{p.pp}", f"{p.replicas:,}", nodes,
                     _money(p.usd_per_hour), _money(p.usd_per_million_output_tokens, 3), f"{p.held_per_replica:,}",
                     f"{p.batch_limit:,}", _ms(p.ttft, 0), _ms(p.tpot, 1), f"{100 * p.headroom:.0f}%", _mark(p)])
    return rows


PLAN_HEADERS = ["#", "GPU", "engine", "KV", "layout", "replicas", "GPUs", "$/hour", "$/M out tok", "held", "batch limit",
                "TTFT ms (band)", "TPOT ms (band)", "headroom", ""]
REJECT_HEADERS = ["GPU", "why", "engines", "layouts", "closest candidate"]


def reject_rows(r: PlanResult) -> list[list[str]]:
    return [[x.gpu, REASON_LABELS[x.reason], ", ".join(x.engines), _layouts(x.layouts), x.detail] for x in r.rejected]


def _layouts(layouts) -> str:
    if not layouts:
        return "all"
    if len(layouts) > 4:
        return f"{layouts[0]} … {layouts[-1]} ({len(layouts)})"
    return ", ".join(layouts)


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


def tables(r: PlanResult, *, top: int = 10) -> list:
    from rich.text import Text

    from kvplan.cli import render

    out = [Text(f"{r.model} · {_load_words(r)} · {_targets(r)} · {r.candidates:,} candidates, {r.viable:,} hold the load",
                style="bold")]
    if r.plans:
        out.append(render.figures_table(f"the {min(top, len(r.plans))} cheapest of {len(r.plans):,} plans (dollars at each "
                                        "GPU's on-demand price; ≈ a target met only inside the band, ? no measurement of "
                                        "this GPU kind)", PLAN_HEADERS, plan_rows(r, top), text=(1, 2, 3, 14)))
    if r.rejected:
        out.append(render.figures_table("rejected families", REJECT_HEADERS, reject_rows(r), text=(0, 1, 2, 3, 4)))
    out += [Text(line) for line in chosen_lines(r)]
    return out


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    esc = [[c.replace("|", "\\|") for c in row] for row in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in esc]
    return "\n".join(lines) + "\n"


def markdown(r: PlanResult, *, top: int = 10) -> str:
    parts = [f"**{r.model}** · {_load_words(r)} · {_targets(r)} · {r.candidates:,} candidates, {r.viable:,} hold the load\n"]
    if r.plans:
        parts.append(_md_table(PLAN_HEADERS[:-1] + ["mark"], plan_rows(r, top)))
    if r.rejected:
        parts.append("Rejected families:\n\n" + _md_table(REJECT_HEADERS, reject_rows(r)))
    parts.append("\n".join(f"- {line.strip()}" if not line.startswith("chosen") else line for line in chosen_lines(r)) + "\n")
    return "\n".join(parts)
