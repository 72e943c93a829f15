"""How people launch a TensorRT-LLM plan (kvplan plan, analysis/emit.py): the `trtllm-serve` command line and the
LLM-API options file that pins the pool. Pure: text out."""

from __future__ import annotations

import json
import shlex


def launch_command(plan, ref: str) -> tuple[str, str | None, str]:
    """(the command that starts one replica of `plan`, its --extra_llm_api_options YAML, the pool pin in words). The
    pool is pinned with kv_cache_config.max_tokens, the running cap with --max_batch_size."""
    args = ["trtllm-serve", ref, "--tp_size", str(plan.tp)]
    if plan.pp > 1:
        args += ["--pp_size", str(plan.pp)]
    if plan.expert_parallel:
        args += ["--ep_size", str(plan.tp)]
    args += ["--max_seq_len", str(plan.max_model_len), "--max_batch_size", str(plan.batch_limit),
             "--extra_llm_api_options", "extra-llm-api-options.yaml"]
    cfg: dict[str, object] = {}
    if plan.kv_dtype_flag != "auto":
        cfg["dtype"] = plan.kv_dtype_flag
    if plan.pool_tokens:
        cfg["max_tokens"] = plan.pool_tokens
    extra = f"kv_cache_config: {json.dumps(cfg)}\n"
    pinned = (f"kv_cache_config.max_tokens {plan.pool_tokens:,} tokens" if plan.pool_tokens
              else "the pool is TensorRT-LLM's own (free_gpu_memory_fraction)")
    return shlex.join(args), extra, pinned
