"""How fast `kvplan sweep` produces rows, against a plain Python loop over the same grid.

Prints rows/s for the sweep (rows computed and written as CSV into memory, as `kvplan sweep -f csv`
does) and for a baseline measured in the same run: a bare loop that computes
2 x layers x kv_heads x head_dim x seq x batch x bytes for every row and formats it as a CSV line.
The ratio says what the exactness costs (sliding windows, TP/PP shards, budgets, max batch, max
context) over the textbook formula. Also times the whole command in a subprocess (start-up included).

    python benchmarks/sweep_rate.py [MODEL]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = str(ROOT / "tests" / "data" / "hf_configs" / "llama-3.1-8b.json")
ARGS = ["--seq", "1K..128K*2", "--batch", "1..128+1", "--kv-dtype", "bf16,fp8", "--gpu", "h100,a100-80gb,h200,l40s",
        "--tp", "1,2"]


def best_of(n: int, fn) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    model = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL
    from kvplan.model import catalog
    from kvplan.analysis import sweep as sw
    from kvplan.core import units
    from kvplan.requests.build import build_request
    from kvplan import engines

    spec = catalog.resolve_model(model)
    grid = sw.Grid(seq=sw.parse_axis("1K..128K*2", lambda t: units.parse_tokens(t), where="--seq"),
                   batch=sw.parse_axis("1..128+1", int, where="--batch"), kv_dtype=("bf16", "fp8"),
                   gpu=tuple(catalog.find_gpu(g).name for g in ("h100", "a100-80gb", "h200", "l40s")), tp=(1, 2))

    def make_request(combo, seq, batch):
        return build_request(model, seq=str(seq), batch=batch, kv_dtype=combo.kv_dtype, dtype=None, gpu=combo.gpu,
                             gpu_mem=None, gpus=None, tp=combo.tp, pp=combo.pp)

    def run_sweep():
        n = 0
        for line in sw.iter_csv(sw.rows(grid, make_request, engines.get, model=spec.name)):
            n += len(line)
        return n

    layers, kv_heads, head_dim = spec.layers, spec.kv_heads, spec.head_dim
    combos = [(g, tp, kv, 2 if kv == "bf16" else 1) for g in grid.gpu for tp in grid.tp for kv in grid.kv_dtype]

    def run_baseline():
        n = 0
        for gpu, tp, kv, b in combos:
            for seq in grid.seq:
                for batch in grid.batch:
                    cache = 2 * layers * kv_heads * head_dim * seq * batch * b
                    n += len(f"{spec.name},static,{gpu},{tp},1,{kv},{seq},{batch},{cache}\n")
        return n

    rows = len(grid)
    t_sweep = best_of(5, run_sweep)
    t_base = best_of(5, run_baseline)
    print(f"model {spec.name}: {rows:,} rows ({' '.join(ARGS)})")
    print(f"sweep (rows + CSV):      {t_sweep * 1e3:8.1f} ms  {rows / t_sweep:12,.0f} rows/s")
    print(f"baseline (plain loop):   {t_base * 1e3:8.1f} ms  {rows / t_base:12,.0f} rows/s")
    print(f"ratio sweep/baseline:    {t_sweep / t_base:8.2f}x the time of the plain loop")

    def run_cli():
        subprocess.run([sys.executable, "-m", "kvplan", "sweep", model, *ARGS, "--format", "csv"], check=True,
                       stdout=subprocess.DEVNULL)

    t_cli = best_of(3, run_cli)
    print(f"`kvplan sweep ... -f csv` end to end (start-up included): {t_cli * 1e3:.0f} ms for {rows:,} rows")


if __name__ == "__main__":
    main()
