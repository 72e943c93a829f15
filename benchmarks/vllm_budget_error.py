"""How far kvplan's modelled vLLM budget is from what vLLM measured, over the real start-up logs.

End to end, from GPU memory and flags only: for every log whose model kvplan can describe, kvplan predicts
the available KV-cache memory of the same launch (vLLM 0.19 rules; the GPU from the logged total memory;
tp, pp, max_model_len, gpu_memory_utilization, dtype, quantization and scheduler limits from the log) and
compares it with the logged "Available KV cache memory" of the worker that sizes the pool. Prints every
run, the mean absolute error (target <= 3%), and the five worst runs with each budget term's residual,
so the error can be traced to weights, activation peak or non-torch memory.

    python benchmarks/vllm_budget_error.py [--logs DIR] [--models DIR] [--markdown]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

GIB = 2**30


def main() -> int:
    from kvplan.engines.vllm.calibrate import calibrate_log

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", default=str(HERE / "tests" / "data" / "vllm_logs" / "raw"))
    ap.add_argument("--models", default=str(HERE / "tests" / "data" / "vllm_models"))
    ap.add_argument("--markdown", action="store_true", help="print the per-log table as markdown (for docs)")
    args = ap.parse_args()

    rows, skipped = [], []
    for path in sorted(Path(args.logs).glob("*.log")):
        c = calibrate_log(path, models_dir=args.models)
        if c.status != "ok" or c.available_error_percent is None:
            skipped.append((path.name, c.reason or "no available KV memory in the log"))
            continue
        fig = {f.name.split(" (")[0] if f.name.startswith("weights") else f.name: f for f in c.figures}
        terms = {k: fig[k] for k in ("weights", "activation peak", "non-torch memory", "available KV cache memory")}
        rows.append((path.name, c, terms))

    def resid(f) -> str:
        return f.difference.split(" ")[0] if f.difference else "—"

    sep = "|" if args.markdown else " "
    head = ["log", "tp", "pp", "logged KV GiB", "kvplan GiB", "error %", "Δweights", "Δpeak", "Δnon-torch"]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    else:
        print(f"{'log':52s} {'tp':>2s} {'pp':>2s} {'logged':>8s} {'kvplan':>8s} {'error%':>7s} {'Δweights':>9s} {'Δpeak':>7s} {'Δnontorch':>9s}")
    for name, c, t in rows:
        a = t["available KV cache memory"]
        cells = [name.removesuffix(".log"), str(c.tp), str(c.pp), a.logged, a.predicted, f"{c.available_error_percent:.2f}",
                 resid(t["weights"]), resid(t["activation peak"]), resid(t["non-torch memory"])]
        if args.markdown:
            print("| " + " | ".join(cells) + " |")
        else:
            print(f"{cells[0][:52]:52s} {cells[1]:>2s} {cells[2]:>2s} {cells[3]:>8s} {cells[4]:>8s} {cells[5]:>7s} "
                  f"{cells[6]:>9s} {cells[7]:>7s} {cells[8]:>9s}")
    errors = [c.available_error_percent for _, c, _ in rows]
    mae = sum(errors) / len(errors)
    print()
    print(f"{len(rows)} logs compared, {len(skipped)} skipped (model not describable)")
    for name, why in skipped:
        print(f"  skipped {name}: {why}")
    print(f"mean absolute error of available KV memory: {mae:.2f}% (target <= 3%)")
    print(f"max: {max(errors):.2f}%   runs within 1%: {sum(e <= 1 for e in errors)}/{len(errors)}")
    print("five worst (the term that explains each: predicted - logged, GiB):")
    for name, c, t in sorted(rows, key=lambda r: -r[1].available_error_percent)[:5]:
        parts = ", ".join(f"{k} {resid(v)}" for k, v in t.items() if k != "available KV cache memory")
        a = t["available KV cache memory"]
        print(f"  {c.available_error_percent:5.2f}%  {name}: logged {a.logged} GiB, kvplan {a.predicted} ({parts})")
    return 0 if mae <= 3.0 else 1


if __name__ == "__main__":
    sys.exit(main())
