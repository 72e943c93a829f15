"""The vLLM view of `kvplan estimate --engine vllm`: every figure of the estimate as a table."""

from __future__ import annotations

from kvplan.cli.views.common import view_end, view_start
from kvplan.engines.vllm.engine import VllmEstimate


def tables(result: VllmEstimate) -> list:
    """The human view: layout, budget (every term), pool, verdict, the fix."""
    from rich.text import Text

    from kvplan.cli.render import size
    from kvplan.core.units import format_tokens

    r = result

    def gib(n: int) -> str:
        return f"{n / 2**30:.2f}"

    out = view_start(r, f"{r.model} · vLLM {r.vllm_release} ({r.vllm_version} rules) · max_model_len "
                        f"{format_tokens(r.seq)} · batch {r.batch} · KV {r.kv_dtype} · block {r.block_size}")
    t = out[1]
    t.add_row(Text("KV cache layout (one GPU of the pool-sizing stage)", style="bold"), "")
    for g in r.kv_cache_groups[:8]:
        kind = f"{g.kind}" + (f" (window {g.window:,})" if g.window else "")
        pad = f", {g.padding_layers} padding" if g.padding_layers else ""
        t.add_row(f"  group: {g.layers} {kind} layers{pad}",
                  f"page {size(g.page_bytes)}, {g.blocks_per_request:,} blocks/request")
    if len(r.kv_cache_groups) > 8:
        t.add_row(f"  … {len(r.kv_cache_groups) - 8} more groups", "")
    for w in r.padding_warnings:
        t.add_row(f"  vLLM warns: {w}", "")
    t.add_row("  KV per token (whole model)", size(r.kv_bytes_per_token))
    if r.bytes_per_block is not None:
        t.add_row(f"  bytes per block ({r.group_size} layer slots)", size(r.bytes_per_block))
    t.add_row(f"  blocks per request of {format_tokens(r.seq)}", f"{r.blocks_per_request:,}")
    t.add_row("  max_num_batched_tokens / max_num_seqs", f"{r.max_num_batched_tokens:,} / {r.max_num_seqs:,}")
    if r.budget_source == "model" and r.requested_bytes is not None:
        t.add_section()
        t.add_row(Text(f"budget per GPU ({r.gpu or 'custom GPU'}; modelled, vLLM profiles it)", style="bold"), "")
        t.add_row("  total memory", size(r.per_gpu.capacity_bytes if r.per_gpu else None))
        t.add_row(f"  requested = total × gpu_memory_utilization {r.gpu_memory_utilization}", size(r.requested_bytes))
        t.add_row("  − weights", size(r.weights_per_gpu_bytes))
        t.add_row("  − activation peak (profile run)"
                  + (f", fused-MoE workspace {size(r.moe_workspace_bytes)}" if r.moe_workspace_bytes else ""),
                  size(r.activation_peak_bytes))
        t.add_row("  − non-torch memory" + (" (NCCL buffers)" if r.tp > 1 else ""), size(r.non_torch_bytes))
        if r.cuda_graph_subtracted:
            t.add_row("  − CUDA graphs (estimate)", size(r.cuda_graph_bytes))
        elif r.cuda_graph_bytes:
            t.add_row("  − CUDA graphs (logged, not subtracted before 0.20)", f"({size(r.cuda_graph_bytes)})")
        t.add_row("  = available KV cache memory" + (f" (at the {r.budget_edge} edge)" if r.budget_edge else ""),
                  size(r.available_kv_bytes))
        if r.available_kv_bytes_low is not None and r.available_kv_bytes_high is not None:
            t.add_row("    band (the terms' measured leave-out error)",
                      f"{gib(r.available_kv_bytes_low)} … {gib(r.available_kv_bytes_high)} GiB")
        if r.pinned_kv_cache_memory_bytes is not None:
            t.add_row(f"  pin it: --kv-cache-memory-bytes {r.pinned_kv_cache_memory_bytes}",
                      f"exactly {r.num_gpu_blocks:,} blocks")
            t.add_row("    weights, activations, graphs beside that pool",
                      f"fit, {gib(r.pinned_spare_bytes)} GiB to spare" if r.pinned_fits_beside else
                      Text(f"do NOT fit: {gib(-r.pinned_spare_bytes)} GiB short", style="bold red"))
    elif r.budget_source == "--kv-cache-memory":
        t.add_section()
        t.add_row("available KV cache memory (--kv-cache-memory)", size(r.available_kv_bytes))
    if r.num_gpu_blocks is not None:
        t.add_section()
        if r.available_kv_bytes is not None and r.available_kv_bytes > 0:
            t.add_row(Text("what vLLM logs" if r.starts else "the pool (vLLM stops before building it)", style="bold"), "")
            t.add_row("  num_gpu_blocks", f"{r.num_gpu_blocks:,}")
            t.add_row("  GPU KV cache size", f"{r.kv_cache_tokens:,} tokens")
            t.add_row(f"  maximum concurrency for {r.seq:,} tokens", f"{r.max_concurrency:.2f}x")
        else:
            t.add_row(Text("vLLM fails: no available memory for the cache blocks", style="bold red"), "")
        t.add_section()
        marginal = " — marginal: not at the low edge of the band" if r.marginal and r.fits else (
            " — marginal: it does at the high edge of the band" if r.marginal else "")
        if r.fits:
            verdict = f"fits: starts and holds {r.batch} sequence{'s' if r.batch > 1 else ''} of max_model_len{marginal}"
        elif r.starts:
            verdict = f"does NOT fit: starts, but holds {r.max_batch} of the {r.batch} sequences at once{marginal}"
        else:
            verdict = "does NOT start" + marginal
        t.add_row("verdict", Text(verdict, style=("bold yellow" if r.marginal else "bold green") if r.fits else "bold red"))
        if r.estimated_max_model_len is not None:
            t.add_row("  estimated maximum model length", format_tokens(r.estimated_max_model_len))
        t.add_row(f"sequences of {format_tokens(r.seq)} held at once", f"{r.max_batch:,}")
        t.add_row(f"longest max_model_len for {r.batch} sequence{'s' if r.batch > 1 else ''}",
                  format_tokens(r.max_seq) if r.max_seq else "none")
    return view_end(r, out)
