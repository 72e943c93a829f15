"""How people launch a vLLM plan (kvplan plan, analysis/emit.py): the `vllm serve` command line with the pool pinned
and the running cap set. Pure: text out."""

from __future__ import annotations

import shlex

from kvplan.engines.vllm import releases


def launch_command(plan, ref: str) -> tuple[str, str | None, str]:
    """(the command that starts one replica of `plan`, no options file, the pool pin in words). The pool is pinned
    per GPU with --kv-cache-memory-bytes, the running cap with --max-num-seqs; a replica over nodes runs on Ray."""
    args = ["vllm", "serve", ref, "--tensor-parallel-size", str(plan.tp)]
    if plan.pp > 1:
        args += ["--pipeline-parallel-size", str(plan.pp)]
    args += ["--max-model-len", str(plan.max_model_len)]
    if plan.kv_dtype_flag != "auto":
        args += ["--kv-cache-dtype", plan.kv_dtype_flag]
    args += ["--kv-cache-memory-bytes", str(plan.pinned_kv_bytes), "--max-num-seqs", str(plan.batch_limit)]
    if plan.expert_parallel:
        args.append("--enable-expert-parallel")
    if plan.nodes_per_replica > 1:
        args += ["--distributed-executor-backend", "ray"]
    return shlex.join(args), None, f"--kv-cache-memory-bytes {plan.pinned_kv_bytes:,} B per GPU"


def release_note(version: str | None) -> str:
    """The note a `kvplan check` verdict carries: the release whose rules judged it and the line of releases they
    hold for (engines/vllm/releases.py)."""
    rel = releases.release(version)
    return f"judged by vLLM {rel.version} rules (line {rel.line})"
