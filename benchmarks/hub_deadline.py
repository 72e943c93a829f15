"""How long one Hub lookup takes against a misbehaving server on loopback (tests/hub_standin.py), as a ratio to
KVPLAN_HUB_TIMEOUT. Target: every lookup ends within the timeout plus one second (ratio <= 1 + 1/timeout), with
one cannot-judge line. Measured in-process around kvplan.model.resolve.resolve (interpreter start-up left out).
Prints the figures; asserts nothing.

    python benchmarks/hub_deadline.py [--timeout 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "tests"))
sys.path.insert(0, str(HERE))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=3.0)
    args = parser.parse_args()
    import hub_standin
    from kvplan.core.errors import KvplanError
    from kvplan.model import resolve

    os.environ.pop("HF_HUB_OFFLINE", None)
    os.environ["KVPLAN_HUB_TIMEOUT"] = str(args.timeout)
    print(f"KVPLAN_HUB_TIMEOUT={args.timeout:g} s; target: each lookup <= {args.timeout + 1:g} s")
    for how in ("silent", "trickle", "500", "endless"):
        with hub_standin.serve() as state, tempfile.TemporaryDirectory() as cache:
            os.environ["HF_HUB_CACHE"] = cache
            os.environ["KVPLAN_CACHE_DIR"] = cache + "-kvplan"
            os.environ["HF_ENDPOINT"] = state.url
            state.add_public("Qwen/Qwen3-0.6B")
            state.misbehave = how
            start = time.monotonic()
            try:
                resolve.resolve("Qwen/Qwen3-0.6B")
                outcome = "answered (unexpected)"
            except KvplanError as err:
                outcome = f"exit {err.exit_code}: {err.what[:90]}"
            took = time.monotonic() - start
            print(f"{how:8s} {took:6.2f} s  ratio {took / args.timeout:4.2f}  {outcome}")


if __name__ == "__main__":
    main()
