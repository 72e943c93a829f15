"""Cold-start time of every main path (`estimate` on each engine, table and JSON; `check` of one file; `import
kvplan`) as a ratio to importing what any typer+rich+yaml CLI imports.

Both are measured in this run, on this machine, as fresh interpreter processes (best of N, to keep
scheduler noise out). Target: ratio <= 1.5. Prints the figures; asserts nothing.

Both sides start with their bytecode cached, as an installed package does (pip compiles what it installs):
PYTHONDONTWRITEBYTECODE is cleared for the runs, so the warm-up runs write kvplan's __pycache__. With it set (as
on some CI machines) every start recompiles kvplan's modules from source while typer, rich and yaml load from
their compiled files, and the ratio measures the compiler, not kvplan.

    python benchmarks/cold_start.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
CONFIG = HERE / "tests" / "data" / "hf_configs" / "llama-3.1-8b.json"
CHECKED = HERE / "tests" / "data" / "deployments" / "compose" / "sglang-llama31-8b-device0.yaml"


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], runs: int) -> list[float]:
    """Wall-clock seconds of each run."""
    return [run_once(cmd)[0] for _ in range(runs)]


def run_once(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run. The CPU time (user + system) is printed beside the wall clock: on a
    machine shared with other work the wall clock also measures the waits for the scheduler."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    baseline_cmd = [sys.executable, "-c", "import typer, rich.table, yaml"]
    kvplan = [sys.executable, "-m", "kvplan"]
    shape = ["llama-3.1-8b", "--seq", "32K", "--gpu", "h100"]
    cases = {}
    for engine in ("static", "vllm", "sglang", "trtllm"):  # every engine, table and JSON
        cases[f"estimate {engine} (table)"] = [*kvplan, "estimate", *shape, "--engine", engine]
        cases[f"estimate {engine} (--json)"] = [*kvplan, "estimate", *shape, "--engine", engine, "--json"]
    cases.update({
        "estimate (config.json)": [*kvplan, "estimate", str(CONFIG), "--seq", "32K", "--json"],
        "check (one file)": [*kvplan, "check", str(CHECKED), "--gpu", "h100"],
        "--help": [*kvplan, "--help"],
        # the Python API (docs/api.md): the import alone, and one estimate through it
        "import kvplan": [sys.executable, "-c", "import kvplan"],
        "kvplan.estimate (API)": [sys.executable, "-c", "import kvplan; kvplan.estimate('llama-3.1-8b', seq='32K', "
                                  "gpu='h100', engine='vllm')"],
    })
    timed(baseline_cmd, 2)  # warm the file cache
    runs = [run_once(baseline_cmd) for _ in range(args.runs)]
    base, base_cpu = [w for w, _ in runs], [c for _, c in runs]
    print(f"baseline  python -c 'import typer, rich.table, yaml': best {min(base) * 1000:.0f} ms, median "
          f"{statistics.median(base) * 1000:.0f} ms; CPU median {statistics.median(base_cpu) * 1000:.0f} ms")
    for name, cmd in cases.items():
        timed(cmd, 2)  # warm: the first run may compile bytecode that later starts reuse
        runs = [run_once(cmd) for _ in range(args.runs)]
        t, cpu = [w for w, _ in runs], [c for _, c in runs]
        print(f"{name:28s} best {min(t) * 1000:.0f} ms, median {statistics.median(t) * 1000:.0f} ms, "
              f"ratio (best) {min(t) / min(base):.2f}x, ratio (median) {statistics.median(t) / statistics.median(base):.2f}x, "
              f"CPU ratio (median) {statistics.median(cpu) / statistics.median(base_cpu):.2f}x")


if __name__ == "__main__":
    main()
