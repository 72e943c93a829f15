"""How far kvplan is from the public ROCm (AMD Instinct) figures, out of sample, every option unset.

The figures (tests/data/rocm_logs/SOURCES.md lists them and where they came from):
- vllm-project/recipes#273: MiniMax-M2 series on 2x MI300X, vLLM 0.17.1, "KV cache: 497,600 tokens";
- tests/data/vllm_logs_public idx-mi300x-gemma4-e2b-wrapped: vLLM's requested memory on an MI300X (its total
  x 0.9), the only term of that log kvplan can compare (Gemma-4 E2B shares KV across layers);
- tests/data/sglang_logs sglang-3219: SGLang 0.4.2.post2 on 8x MI300X, DeepSeek-V3, A ("Load weight end ...
  avail mem"), the lowest rank, and the pool that A gives with kvplan's P against kvplan's band;
- tests/data/rocm_logs sglangci-*: AMD's SGLang nightly sanity runs on 8x MI300X / MI355X (0.5.3 ... 0.5.6),
  Qwen3-30B-A3B-Thinking-2507 at TP 8, the pool.
No figure here set a constant or a band (kvplan/engines/vllm/budget.py, sglang/budget.py ROCM_*).

    python benchmarks/rocm_error.py
"""

from __future__ import annotations

import json
import re
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "tests"))

from engine_requests import engine_request  # noqa: E402
from kvplan.engines import sglang, vllm  # noqa: E402
from kvplan.engines.vllm.engine import budgets_for  # noqa: E402
from kvplan.engines.vllm.log import parse_vllm_log  # noqa: E402
from kvplan.model.catalog import resolve_model  # noqa: E402

GIB = 2**30
DATA = HERE / "tests" / "data"


def _record(folder: str, rid: str) -> dict:
    lines = (DATA / folder / "index.jsonl").read_text(encoding="utf-8").splitlines()
    return next(r for r in map(json.loads, lines) if r["id"] == rid)


def _minimax_run():
    """recipes#273 (MiniMax-M2 on 2x MI300X, vLLM 0.17.1): (its id, logged tokens, the estimate, logged KV bytes,
    modelled KV bytes)."""
    rec = _record("rocm_logs", "recipes-pr273-minimax-m2-2xmi300x-v0171")
    text = (HERE / rec["raw_file"]).read_text(encoding="utf-8")
    tokens = int(re.search(r"KV cache: ([\d,]+) tokens", text).group(1).replace(",", ""))
    spec = resolve_model(str(HERE / rec["config"]))
    req = engine_request(spec, seq=spec.max_context, gpu="mi300x", tp=2, engine_version="0.17.1")
    r = vllm.estimate(req)
    logged = tokens // r.block_size * r.bytes_per_block
    return rec, tokens, r, logged, budgets_for(req)[0].available_bytes


def minimax_record() -> dict:
    """The recipes#273 run as band_coverage.py's rows take it."""
    rec, tokens, r, logged, modelled = _minimax_run()
    return dict(engine="vLLM", version="0.17.1", log=rec["id"], error=100 * (modelled - logged) / logged,
                covered=r.available_kv_bytes_low <= logged <= r.available_kv_bytes_high,
                low=r.available_kv_bytes_low / GIB, high=r.available_kv_bytes_high / GIB, logged=f"{tokens:,} tokens")


def sglang_records() -> list[dict]:
    """AMD's SGLang CI runs as band_coverage.py's rows take them (the pool, in tokens)."""
    out = []
    for rec in map(json.loads, (DATA / "rocm_logs" / "index.jsonl").read_text(encoding="utf-8").splitlines()):
        if rec["engine"] != "sglang":
            continue
        text = (HERE / rec["raw_file"]).read_text(encoding="utf-8", errors="replace")
        tokens = int(re.search(r"max_total_num_tokens=(\d+)", text).group(1))
        version = rec["engine_version"].split()[0]
        q = rec["kvplan_request"]
        model = str(HERE / q["model"]) if q["model"].endswith(".json") else q["model"]
        r = sglang.estimate(engine_request(
            model, seq=q["seq"], gpu=rec["gpu_catalog"], tp=q["tp"], engine_version=version,
            gpu_util=Fraction(q["gpu_util"]), max_num_batched_tokens=q.get("max_num_batched_tokens"),
            max_num_seqs=q.get("max_num_seqs"), engine_options=tuple((q.get("engine_options") or {}).items()) or None))
        logged = tokens * r.cell_size
        out.append(dict(engine="SGLang", version=version, log=rec["id"],
                        error=100 * (r.max_total_num_tokens - tokens) / tokens,
                        covered=r.available_kv_bytes_low - r.cell_size <= logged <= r.available_kv_bytes_high + r.cell_size,
                        low=r.available_kv_bytes_low / GIB, high=r.available_kv_bytes_high / GIB,
                        logged=f"{tokens:,} tokens", modelled=r.max_total_num_tokens, tokens=tokens,
                        gpu=rec["gpu_catalog"]))
    return out


def minimax() -> tuple[str, float, bool, str]:
    _, tokens, r, logged, modelled = _minimax_run()
    predicted = modelled // r.bytes_per_block * r.block_size
    covered = r.available_kv_bytes_low <= logged <= r.available_kv_bytes_high
    return (f"recipes#273 MiniMax-M2 TP 2, vLLM 0.17.1: {tokens:,} tokens logged, {predicted:,} modelled",
            100 * (predicted - tokens) / tokens, covered, "pool")


def gemma_total() -> tuple[str, float, bool, str]:
    rec = _record("vllm_logs_public", "idx-mi300x-gemma4-e2b-wrapped")
    f = parse_vllm_log("".join((DATA / "vllm_logs_public" / p).read_text(encoding="utf-8")
                               for p in rec["raw_files"]))
    b = budgets_for(engine_request("llama-3.1-8b", gpu="mi300x", engine_version="0.27.1", gpu_util=Fraction(9, 10)))[0]
    logged = float(f.requested_memory_gib) * GIB
    half = float(b.requested_bytes * Fraction(3, 1000))
    covered = abs(b.requested_bytes - logged) <= half + 0.005 * GIB
    return (f"MI300X Gemma-4 E2B: requested {f.requested_memory_gib} GiB logged, {b.requested_bytes / GIB:.2f} modelled",
            100 * (b.requested_bytes - logged) / logged, covered, "term")


def deepseek_a() -> tuple[str, float, bool, str]:
    rec = _record("sglang_logs", "sglang-3219-deepseek-v3-8xmi300x-rocm-v0.4.2")
    text = (HERE / rec["raw_file"]).read_text(encoding="utf-8")
    a_logged = min(Decimal(x) for x in re.findall(r"avail mem=([\d.]+) GB", text)) * GIB
    spec = resolve_model(str(HERE / rec["config"]))
    r = sglang.estimate(engine_request(spec, seq=4096, gpu="mi300x", tp=8, engine_version="0.4.2.post2"))
    mfs = Fraction(r.mem_fraction_static)
    pool = int(Fraction(a_logged) - r.free_before_load_bytes * (1 - mfs))  # the rest A gives with kvplan's P
    covered = r.available_kv_bytes_low <= pool <= r.available_kv_bytes_high
    return (f"sglang#3219 DeepSeek-V3 TP 8, SGLang 0.4.2: A {a_logged / GIB:.2f} GiB logged, "
            f"{r.free_after_load_bytes / GIB:.2f} modelled (pool from the logged A {pool / GIB:.2f} GiB, band "
            f"{r.available_kv_bytes_low / GIB:.2f}-{r.available_kv_bytes_high / GIB:.2f})",
            100 * (r.free_after_load_bytes - float(a_logged)) / float(a_logged), covered, "pool")


def sglang_ci() -> list[tuple[str, float, bool, str]]:
    """AMD's SGLang nightly logs (michael-amd/sglang-ci): the pool of each stored run, launched as its record says."""
    return [(f"sglang-ci {r['log'].split('-tp8-')[0].replace('sglangci-', '')} SGLang {r['version']}: "
             f"{r['tokens']:,} tokens logged, {r['modelled']:,} modelled", r["error"], r["covered"], "pool")
            for r in sglang_records()]


def main() -> int:
    rows = [minimax(), gemma_total(), deepseek_a()] + sglang_ci()
    for what, err, covered, kind in rows:
        print(f"{err:+6.2f}%  band {'covers' if covered else 'MISSES'}  [{kind}]  {what}")
    pools = [abs(err) for _, err, _, kind in rows if kind == "pool"]
    print(f"MAE over the {len(pools)} pool-sized figures: {sum(pools) / len(pools):.2f}%; "
          f"band covers {sum(c for _, _, c, _ in rows)}/{len(rows)} figures")
    for engine in ("vLLM", "SGLang"):
        mine = [(abs(err), c) for what, err, c, kind in rows if kind == "pool" and engine.lower() in what.lower()]
        print(f"  {engine}: MAE {sum(e for e, _ in mine) / len(mine):.2f}% over {len(mine)}, band {sum(c for _, c in mine)}/{len(mine)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
