"""The contract fuzzer of tests/test_fuzz.py, run longer (before a release): every command on generated hostile
files and flag values, and on real configs and deployments with one value changed or a shell idiom inserted
(tests/fuzzing.py), then a Hub lookup against each misbehaving loopback server (silent, trickling, 500s, endless
body); reports the inputs tried, per command, and every contract violation.

    python scripts/fuzz.py                 # 500 inputs
    python scripts/fuzz.py --examples 5000 --seed 7

Exit 1 when any input broke the contract (each is printed with its command line and file bytes).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    from hypothesis import HealthCheck, given, seed, settings

    import fuzzing

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--progress", type=int, default=0, help="print a line every N inputs (and each violation as found)")
    opts = ap.parse_args()
    invoke = fuzzing.invoker()
    tried: collections.Counter[str] = collections.Counter()
    failures: list[tuple[str, bytes]] = []
    folder = Path(tempfile.mkdtemp(prefix="kvplan-fuzz-"))

    @seed(opts.seed)
    @settings(max_examples=opts.examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=fuzzing.INPUTS)
    def run(case):
        call, content, suffix = case
        path = folder / f"input{suffix}"
        path.write_bytes(content)
        tried[call.args[0]] += 1
        for problem in fuzzing.violations(invoke, call, path):
            failures.append((problem, content[:200]))
            print(f"violation: {problem}\n    file: {content[:200]!r}", flush=True)
        done = sum(tried.values())
        if opts.progress and done % opts.progress == 0:
            print(f"{done} inputs, {len(failures)} violations", flush=True)

    run()
    for how in fuzzing.HUB_MISBEHAVIOURS:
        tried["hub"] += 1
        failures += [(problem, b"") for problem in fuzzing.hub_violations(how)]
    print(f"inputs tried: {sum(tried.values())} ({', '.join(f'{c} {n}' for c, n in sorted(tried.items()))})")
    print(f"contract violations: {len(failures)}")
    for problem, content in failures[:50]:
        print(f"  {problem}\n    file: {content!r}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
