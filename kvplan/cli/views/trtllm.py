"""The TensorRT-LLM view of `kvplan estimate --engine trtllm`: every figure of the estimate as a table.

The result is the engine's own (engines/trtllm/engine.py TrtllmEstimate), read by its field names as the registry
hands it back: the view never imports the engine's modules (docs/architecture.md)."""

from __future__ import annotations

from typing import Any

from kvplan.cli.views.common import (band_rows, budget_head, in_use_row, total_row, verdict_row, view_end,
                                     view_start)


def tables(result: Any) -> list:
    from kvplan.cli.plain import Styled

    from kvplan.cli.render import size
    from kvplan.core.units import format_tokens

    r = result
    out = view_start(r, f"{r.model} · TensorRT-LLM {r.trtllm_version} {r.backend} backend · max_seq_len "
                        f"{format_tokens(r.seq)} · batch {r.batch} · KV {r.kv_dtype} · {r.tokens_per_block} tokens/block")
    t = out[1]
    t.add_row("bytes per token (one GPU; pool)", size(r.bytes_per_token))
    if r.estimator_bytes_per_token != r.bytes_per_token:
        t.add_row("bytes per token (estimator, T3)", size(r.estimator_bytes_per_token))
    if r.budget_source == "model" and r.backend == "tensorrt":
        budget_head(t, r, "modelled: the engine's buffers come first")
        total_row(t, r)
        t.add_row("  − engine (weights)", size(r.weights_per_gpu_bytes))
        t.add_row("  − execution context (activations, fixed at build)", size(r.activation_peak_bytes))
        t.add_row(f"  − runtime + decoder buffers (max_batch_size {r.max_batch_size:,} × vocab)",
                  size(r.engine_buffers_bytes))
        t.add_row("  − CUDA context" + (" and NCCL" if r.tp > 1 else ""), size(r.non_torch_bytes))
        in_use_row(t, r)
        t.add_row(f"  × free_gpu_memory_fraction {r.free_gpu_memory_fraction}", size(r.kv_budget_bytes))
    elif r.budget_source == "model":
        budget_head(t, r, "modelled, TensorRT-LLM profiles it")
        total_row(t, r)
        t.add_row("  − weights (and load buffers)", size(r.weights_per_gpu_bytes))
        t.add_row(f"  − activation peak (warm-up of max_num_tokens {r.max_num_tokens:,})", size(r.activation_peak_bytes))
        t.add_row("  − outside torch (context, cuBLAS, CUDA graphs" + (", NCCL" if r.tp > 1 else "") + "; measured)",
                  size(r.non_torch_bytes))
        in_use_row(t, r)
        t.add_row(f"  × free_gpu_memory_fraction {r.free_gpu_memory_fraction}", size(r.kv_budget_bytes))
        t.add_row("  (temporary warm-up pool, freed)", size(r.temporary_pool_bytes))
    band_rows(t, r)
    f = r.features
    if f is not None:
        t.add_section()
        t.add_row(Styled("launch options (docs/engines/features/)", style="bold"), "")
        if f.attention_dp:
            t.add_row("  attention DP: pools (one per rank, every KV head)", f"{f.pools}")
        if f.speculative is not None:
            s = f.speculative
            t.add_row(f"  {s.decoding_type}: layers added to the KV cache manager", f"{s.kv_layers}")
            t.add_row("  drafter weights per GPU", size(s.weights_per_gpu_bytes))
        if f.weights_added_per_gpu_bytes:
            t.add_row("  weights added per GPU", size(f.weights_added_per_gpu_bytes))
        if f.transceiver is not None:
            tr = f.transceiver
            t.add_row(f"  cache transceiver ({tr.backend}): {tr.buffers} buffers after the pool", size(tr.total_bytes))
        if f.lora is not None:
            t.add_row(f"  LoRA device cache ({f.lora.max_loras} adapters, rank {f.lora.max_lora_rank}) after the pool",
                      size(f.lora.device_bytes))
        if f.deployment_concurrency is not None and f.pools > 1:
            t.add_row("  requests of max_seq_len, whole deployment", f"{f.deployment_concurrency:,}")
    if r.num_blocks is not None:
        t.add_section()
        t.add_row("primary blocks", f"{r.num_blocks:,}")
        t.add_row("KV cache tokens", f"{r.kv_cache_tokens:,}")
        for w, n in r.window_blocks:
            t.add_row(f"  window {w:,}: blocks", f"{n:,}")
        t.add_row(f"requests of {format_tokens(r.seq)} at once", f"{r.max_concurrency:,}")
        t.add_section()
        f = r.features
        if r.fits:
            verdict = f"fits: holds {r.batch} request{'s' if r.batch > 1 else ''} of max_seq_len"
        elif f is not None and f.after_pool_fits is False:
            verdict = "does NOT start: what is built after the pool (transceiver, LoRA cache) does not fit beside it"
        elif r.starts:
            verdict = f"does NOT fit: holds {r.max_batch} of the {r.batch} requests at once"
        elif r.estimated_max_model_len is not None and r.num_blocks:
            verdict = f"does NOT fit max_seq_len {format_tokens(r.seq)}: starts with it reduced"
        else:
            verdict = "does NOT fit"
        verdict_row(t, verdict, r.fits)
        if r.estimated_max_model_len is not None:
            t.add_row("  max_seq_len TensorRT-LLM starts with", format_tokens(r.estimated_max_model_len))
    return view_end(r, out)
