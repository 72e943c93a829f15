"""How long `kvplan plan` takes over the whole catalog x three engines x every layout x two KV dtypes, against one
`kvplan estimate` measured in the same run.

Prints the search's seconds (in-process, imports warm, best of 3), the seconds of one estimate the way the
`estimate` command computes it (request, engine estimate, fix search), their ratio, how many candidates the search
tried, and both commands end to end in a subprocess (Python start-up included). The target is under a second for
the search; the ratio says what the search costs in estimates, whatever the machine.

    python benchmarks/plan_speed.py [MODEL]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOADS = (
    ("--concurrency 64 --seq 8K --tpot 50", dict(concurrency=64, rate=None, prompt=4096, output=4096, seq=8192, tpot=50.0)),
    ("--rate 5 --prompt 1000 --output 500 --ttft 2000 --tpot 60",
     dict(concurrency=None, rate=5.0, prompt=1000, output=500, seq=None, tpot=60.0, ttft=2000.0)),
)


def best_of(n: int, fn) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    model = sys.argv[1] if len(sys.argv) > 1 else "llama-3.1-8b"
    from kvplan import engines
    from kvplan.analysis import plan, workload as wl
    from kvplan.analysis.targets import targets as plan_targets
    from kvplan.engines import fixes
    from kvplan.requests.build import build_request
    from kvplan.model import catalog, efficiency, fleet

    for name in ("vllm", "sglang", "trtllm"):
        engines.get(name)
    prices = fleet.price_table(None, [], load_yaml=None)

    def one_estimate():
        req = build_request(model, seq="8K", batch=1, kv_dtype="auto", dtype=None, gpu="h100", gpu_mem=None, gpus=None,
                            tp=None, pp=1)
        eng = engines.get("vllm")
        fixes.attach(eng, req, eng.estimate(req))

    estimate_s = best_of(20, one_estimate)
    print(f"one estimate (vllm, h100, in-process): {estimate_s * 1e3:.2f} ms")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for words, spec in LOADS:
        load = plan.load_of([wl.Request(spec["prompt"], spec["output"])], concurrency=spec["concurrency"], rate=spec["rate"],
                            max_model_len=spec["seq"], description=words)
        base = build_request(model, seq=str(load.max_model_len), batch=1, kv_dtype="auto", dtype=None, gpu=None,
                             gpu_mem=None, gpus=None, tp=None, pp=1)
        axes = plan.Axes(gpus=catalog.gpus(), engines=("vllm", "sglang", "trtllm"), kv_dtypes=("auto", "fp8"))
        targets = plan_targets(spec.get("ttft"), spec.get("tpot"))  # as the command reads them
        result = []

        def run():
            result[:] = [plan.search(base, load, targets, axes, prices=prices, get_engine=engines.get,
                                     factors_for=efficiency.factors_for, node_of=fleet.node)]

        search_s = best_of(3, run)
        r = result[0]
        print(f"plan {model} {words}: {len(catalog.gpus())} GPU kinds x 3 engines x 2 KV dtypes, {r.candidates} layouts "
              f"tried, {r.viable} plans: {search_s:.3f} s in-process = {search_s / estimate_s:,.0f} estimates")
        cmd = [sys.executable, "-m", "kvplan", "plan", model, *words.split()]
        start = time.perf_counter()
        subprocess.run(cmd, env=env, capture_output=True, check=False)
        plan_cmd = time.perf_counter() - start
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kvplan", "estimate", model, "--seq", "8K", "--gpu", "h100", "--engine", "vllm"],
                       env=env, capture_output=True, check=False)
        est_cmd = time.perf_counter() - start
        print(f"  end to end: kvplan plan {plan_cmd:.2f} s, kvplan estimate {est_cmd:.2f} s (ratio {plan_cmd / est_cmd:.1f})")


if __name__ == "__main__":
    main()
