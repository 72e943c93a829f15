"""The TensorRT-LLM view of `kvplan estimate --engine trtllm`: every figure of the estimate as a table."""

from __future__ import annotations

from kvplan.cli.views.common import view_end, view_start
from kvplan.engines.trtllm.engine import TrtllmEstimate


def tables(result: TrtllmEstimate) -> list:
    from rich.text import Text

    from kvplan.cli.render import size
    from kvplan.core.units import format_tokens

    r = result
    out = view_start(r, f"{r.model} · {r.engine_version} · max_seq_len {format_tokens(r.seq)} · batch {r.batch} · "
                        f"KV {r.kv_dtype} · {r.tokens_per_block} tokens/block")
    t = out[1]
    t.add_row("bytes per token (one GPU; pool)", size(r.bytes_per_token))
    if r.estimator_bytes_per_token != r.bytes_per_token:
        t.add_row("bytes per token (estimator, T3)", size(r.estimator_bytes_per_token))
    if r.budget_source == "model":
        t.add_section()
        t.add_row(Text(f"budget per GPU ({r.gpu or 'custom GPU'}; modelled, TensorRT-LLM profiles it)", style="bold"), "")
        t.add_row("  total memory", size(r.per_gpu.capacity_bytes if r.per_gpu else None))
        t.add_row("  − weights", size(r.weights_per_gpu_bytes))
        t.add_row("  − activation peak (prefill of max_num_tokens)", size(r.activation_peak_bytes))
        t.add_row("  − non-torch (context, cuBLAS, CUDA graphs; assumed)", size(r.non_torch_bytes))
        t.add_row(f"  × free_gpu_memory_fraction {r.free_gpu_memory_fraction}", size(r.kv_budget_bytes))
        t.add_row("  (temporary warm-up pool, freed)", size(r.temporary_pool_bytes))
    if r.num_blocks is not None:
        t.add_section()
        t.add_row("primary blocks", f"{r.num_blocks:,}")
        t.add_row("KV cache tokens", f"{r.kv_cache_tokens:,}")
        for w, n in r.window_blocks:
            t.add_row(f"  window {w:,}: blocks", f"{n:,}")
        t.add_row(f"requests of {format_tokens(r.seq)} at once", f"{r.max_concurrency:,}")
        t.add_section()
        verdict = (f"fits: holds {r.batch} request{'s' if r.batch > 1 else ''} of max_seq_len" if r.fits else
                   f"does NOT fit: holds {r.max_batch} of the {r.batch} requests at once" if r.starts else "does NOT fit")
        t.add_row("verdict", Text(verdict, style="bold green" if r.fits else "bold red"))
        if r.estimated_max_model_len is not None:
            t.add_row("  max_seq_len TensorRT-LLM lowers to", format_tokens(r.estimated_max_model_len))
    return view_end(r, out)
