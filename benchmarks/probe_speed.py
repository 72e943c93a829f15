"""How fast `kvplan probe` plans, allocates and grows caches (not a test: prints numbers).

    python benchmarks/probe_speed.py            # CPU and meta; CUDA too when torch sees a GPU

Planning is pure Python (layer specs -> tensor shapes); allocation speed on the CPU is dominated by
first-touch page faults (zero_), on a GPU by cudaMalloc; `meta` shows the per-tensor overhead alone.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvplan.model import catalog  # noqa: E402
from kvplan.core.cache import CacheModel  # noqa: E402
from kvplan.core.dtypes import dtype  # noqa: E402
from kvplan.engines import EngineRequest  # noqa: E402
from kvplan.probe.layout import rank_plan  # noqa: E402

CONFIGS = ROOT / "tests" / "data" / "hf_configs"


def spec(name):
    return catalog.resolve_model(str(CONFIGS / f"{name}.json"))


def best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    print("planning (pure Python, no torch)")
    for name in ("llama-3.1-8b", "deepseek-v3", "nemotron-h-56b-base-8k", "llama-3.1-405b"):
        s = spec(name)
        cache = CacheModel(s, dtype(s.dtype))
        seconds, plan = best(lambda: rank_plan(cache, seq=32768, batch=8), repeat=20)
        print(f"  {name:26s} {len(plan.tensors):4d} tensors  {seconds * 1e3:7.3f} ms per plan")

    import torch

    from kvplan.probe.device import select_device
    from kvplan.probe.runner import ProbeOptions, run_probe

    devices = ["meta", "cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    cases = [("llama-3.1-8b", 2048, 4, "static"), ("llama-3.1-8b", 2048, 4, "paged"), ("deepseek-v3", 2048, 4, "static"),
             ("jamba-1.5-mini", 2048, 4, "static")]
    print("\nallocate + measure + free (one probe, torch imported)")
    for device_name in devices:
        device = select_device(torch, device_name)
        for name, seq, batch, layout in cases:
            s = spec(name)
            req = EngineRequest(spec=s, seq=seq, batch=batch, kv_dtype="auto", weight_fmt=None)
            seconds, res = best(lambda: run_probe(req, ProbeOptions(layout=layout), torch=torch, device=device, dist_env=False))
            n = sum(r.tensors for r in res.ranks)
            rate = res.measured_bytes / seconds / 2**30
            print(f"  {device_name:5s} {name:16s} {layout:7s} {n:4d} tensors {res.measured_bytes / 2**20:9.1f} MiB "
                  f"{seconds * 1e3:9.2f} ms  {rate:8.2f} GiB/s  match={res.match}")
    print("\nfind-max (grow to a 1 GiB budget, step count and time)")
    for device_name in devices:
        device = select_device(torch, device_name)
        for layout in ("static", "paged"):
            s = spec("llama-3.1-8b")
            req = EngineRequest(spec=s, seq=1024, batch=1, kv_dtype="bf16", weight_fmt=None)
            opts = ProbeOptions(layout=layout, find_max=True, max_bytes=1 << 30)
            seconds, res = best(lambda: run_probe(req, opts, torch=torch, device=device, dist_env=False), repeat=2)
            fm = res.find_max
            print(f"  {device_name:5s} {layout:7s} {fm.measured_max:5d} {fm.unit:9s} in {fm.steps:3d} steps, "
                  f"{seconds * 1e3:8.1f} ms  match={fm.match}")


if __name__ == "__main__":
    main()
