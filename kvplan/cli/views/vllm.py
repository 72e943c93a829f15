"""The vLLM view of `kvplan estimate --engine vllm`: every figure of the estimate as a table.

The result is the engine's own (engines/vllm/engine.py VllmEstimate), read by its field names as the registry
hands it back: the view never imports the engine's modules (docs/architecture.md)."""

from __future__ import annotations

from typing import Any

from kvplan.cli.views.common import budget_head, total_row, verdict_row, view_end, view_start


def tables(result: Any) -> list:
    """The human view: layout, budget (every term), pool, verdict, the fix."""
    from kvplan.cli.plain import Styled

    from kvplan.cli.render import size
    from kvplan.core.units import format_tokens

    r = result

    def gib(n: int) -> str:
        return f"{n / 2**30:.2f}"

    out = view_start(r, f"{r.model} · vLLM {r.vllm_release} ({r.vllm_version} rules) · max_model_len "
                        f"{format_tokens(r.seq)} · batch {r.batch} · KV {r.kv_dtype} · block {r.block_size}")
    t = out[1]
    t.add_row(Styled("KV cache layout (one GPU of the pool-sizing stage)", style="bold"), "")
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
    if r.features is not None:
        t.add_section()
        _feature_rows(t, r)
    if r.budget_source == "model" and r.requested_bytes is not None:
        budget_head(t, r, "modelled, vLLM profiles it")
        total_row(t, r)
        t.add_row(f"  requested = total × gpu_memory_utilization {r.gpu_memory_utilization}", size(r.requested_bytes))
        added = r.features.weights_added_per_gpu_bytes if r.features is not None else 0
        t.add_row("  − weights" + (" (launch options included)" if added else ""), size(r.weights_per_gpu_bytes))
        t.add_row("  − activation peak (profile run)"
                  + (f", fused-MoE workspace {size(r.moe_workspace_bytes)}" if r.moe_workspace_bytes else ""),
                  size(r.activation_peak_bytes))
        t.add_row("  − non-torch memory" + (" (NCCL buffers)" if r.tp > 1 else ""), size(r.non_torch_bytes))
        eager = r.features is not None and "enforce_eager" in r.features.options
        if r.cuda_graph_subtracted:
            t.add_row("  − CUDA graphs" + (" (none: --enforce-eager)" if eager else " (estimate)"), size(r.cuda_graph_bytes))
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
                      Styled(f"do NOT fit: {gib(-r.pinned_spare_bytes)} GiB short", style="bold red"))
    elif r.budget_source == "--kv-cache-memory":
        t.add_section()
        t.add_row("available KV cache memory (--kv-cache-memory)", size(r.available_kv_bytes))
    if r.num_gpu_blocks is not None:
        t.add_section()
        if r.available_kv_bytes is not None and r.available_kv_bytes > 0:
            head = ("what vLLM logs" if r.starts else "the pool (vLLM stops before building it)") if not r.budget_edge else (
                f"the pool at the {r.budget_edge} edge" + ("" if r.starts else " (vLLM stops before building it)"))
            t.add_row(Styled(head, style="bold"), "")
            t.add_row("  num_gpu_blocks", f"{r.num_gpu_blocks:,}")
            t.add_row("  GPU KV cache size", f"{r.kv_cache_tokens:,} tokens")
            t.add_row(f"  maximum concurrency for {r.seq:,} tokens", f"{r.max_concurrency:.2f}x")
        else:
            t.add_row(Styled("vLLM fails: no available memory for the cache blocks", style="bold red"), "")
        t.add_section()
        marginal = " — marginal: not at the low edge of the band" if r.marginal and r.fits else (
            " — marginal: it does at the high edge of the band" if r.marginal else "")
        if r.fits:
            verdict = f"fits: starts and holds {r.batch} sequence{'s' if r.batch > 1 else ''} of max_model_len{marginal}"
        elif r.starts:
            verdict = f"does NOT fit: starts, but holds {r.max_batch} of the {r.batch} sequences at once{marginal}"
        else:
            verdict = "does NOT start" + marginal
        verdict_row(t, verdict, r.fits, marginal=r.marginal)
        if r.auto_max_model_len is not None:
            band = r.auto_max_model_len_low, r.auto_max_model_len_high
            t.add_row("  --max-model-len auto: vLLM will pick",
                      (format_tokens(r.auto_max_model_len) if r.auto_max_model_len else "nothing (not one token fits)")
                      + (f" (band {band[0]:,} … {band[1]:,})" if None not in band and band[0] != band[1] else ""))
        t.add_row(f"sequences of {format_tokens(r.seq)} held at once", f"{r.max_batch:,}")
        # one longest figure: vLLM's own estimate when max_model_len does not start (what its error message says),
        # else the longest that holds `batch` sequences
        if r.estimated_max_model_len is not None:
            t.add_row("longest max_model_len (vLLM's estimated maximum model length)",
                      format_tokens(r.estimated_max_model_len))
        else:
            t.add_row(f"longest max_model_len for {r.batch} sequence{'s' if r.batch > 1 else ''}",
                      format_tokens(r.max_seq) if r.max_seq else "none")
    return view_end(r, out)


def _feature_rows(t, r: Any) -> None:
    """The terms of the launch's extra options (speculative decoding, LoRA, offload, parallelism, KV connectors)."""
    from kvplan.cli.plain import Styled

    from kvplan.cli.render import size

    f = r.features
    t.add_row(Styled("launch options (docs/engines/features/)", style="bold"), "")
    if "enforce_eager" in f.options:
        t.add_row("  --enforce-eager: CUDA graphs captured", "none")
    if f.attention_backend is not None and f.attention_backend.block_size != 16:
        t.add_row(f"  attention backend {f.attention_backend.backend}", f"block {f.attention_backend.block_size}")
    s = f.speculative
    if s is not None:
        t.add_row(f"  speculative decoding: {s.method}, {s.num_speculative_tokens} tokens", s.draft or "")
        if s.uses_gpu:
            t.add_row("    drafter KV layers in the pool", f"{s.draft_kv_layers} ({s.draft_kv_dtype})")
            t.add_row("    drafter weights per GPU", size(s.draft_weights_per_gpu_bytes))
            t.add_row("    lookahead slots per running request", f"{s.lookahead_tokens} tokens (capped at max_model_len)")
            if s.decode_requests_per_step is not None:
                t.add_row("    requests one decode step verifies", f"{s.decode_requests_per_step:,}")
        else:
            t.add_row("    GPU memory", "none (runs on the host)")
    if f.lora is not None:
        lo = f.lora
        t.add_row(f"  LoRA slots: {lo.max_loras} x rank {lo.max_lora_rank}", size(lo.gpu_bytes_per_rank) + " per GPU")
        t.add_row(f"    host adapter cache ({lo.cpu_loras} adapters, one worker)", size(lo.cpu_cache_bytes))
    if f.weight_offload is not None:
        t.add_row("  weights offloaded to the host per GPU", size(f.weight_offload.offloaded_bytes))
    if f.kv_offload is not None:
        for tier in f.kv_offload.tiers:
            t.add_row(f"  KV {tier.name} tier ({f.kv_offload.backend})", f"{tier.tokens:,} tokens, {size(tier.host_bytes)}")
    p = f.parallel
    if p is not None and (p.gpus != r.tp * r.pp or p.kv_shards > 1 or p.expert_share is not None):
        t.add_row("  GPUs / data-parallel replicas", f"{p.gpus:,} / {p.replicas}")
        if f.expert_weights_per_gpu_bytes is not None:
            t.add_row("    routed experts per GPU", size(f.expert_weights_per_gpu_bytes))
        if p.kv_shards > 1:
            t.add_row("    KV split along the sequence over", f"{p.kv_shards} ranks")
    x = f.kv_transfer
    if x is not None:
        t.add_row(f"  KV connector {x.connector}" + (f" ({x.role})" if x.role else ""),
                  "hybrid manager off" if x.hybrid_manager_off else "")
        t.add_row("    KV per prompt token, one TP rank / all", f"{x.bytes_per_token_per_rank:,} / {x.bytes_per_token:,} B")
        if x.gpu_runtime_bytes:
            t.add_row("    GPU receive buffers (after the pool)", size(x.gpu_runtime_bytes))
    if f.link is not None:
        ln = f.link
        t.add_row(f"    at {ln.rate:g} req/s x {ln.prompt_tokens:,} prompt tokens", f"{ln.bytes_per_s_per_gpu / 1e9:,.2f} GB/s per GPU")
        if ln.utilisation is not None:
            t.add_row(f"    of the link ({ln.link})", f"{ln.utilisation * 100:.1f}%")
    if f.host_memory_bytes:
        t.add_row("  host memory (one replica)", size(f.host_memory_bytes))
    if f.replicas > 1 and f.deployment_concurrency is not None:
        t.add_row(f"  deployment concurrency ({f.replicas} replicas)", f"{f.deployment_concurrency:.2f}x")
