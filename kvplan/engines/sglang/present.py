"""How people launch an SGLang plan (kvplan plan, analysis/emit.py): the `python -m sglang.launch_server` command
line with the pool pinned and the running cap set. Pure: text out."""

from __future__ import annotations

import shlex


def launch_command(plan, ref: str) -> tuple[str, str | None, str]:
    """(the command that starts one replica of `plan`, no options file, the pool pin in words). The pool is pinned
    with --max-total-tokens, the running cap with --max-running-requests; a replica over nodes names its head."""
    args = ["python", "-m", "sglang.launch_server", "--model-path", ref, "--tp-size", str(plan.tp)]
    if plan.pp > 1:
        args += ["--pp-size", str(plan.pp)]
    args += ["--context-length", str(plan.max_model_len)]
    if plan.kv_dtype_flag != "auto":
        args += ["--kv-cache-dtype", plan.kv_dtype_flag]
    if plan.pool_tokens:
        args += ["--max-total-tokens", str(plan.pool_tokens)]
    args += ["--max-running-requests", str(plan.batch_limit)]
    if plan.expert_parallel:
        args += ["--ep-size", str(plan.tp)]
    if plan.nodes_per_replica > 1:
        args += ["--nnodes", str(plan.nodes_per_replica), "--node-rank", "0", "--dist-init-addr", "HEAD_NODE_IP:5000"]
    pinned = (f"--max-total-tokens {plan.pool_tokens:,} tokens" if plan.pool_tokens
              else "the pool is SGLang's own (mem_fraction_static)")
    return shlex.join(args), None, pinned
