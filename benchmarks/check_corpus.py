"""`kvplan check` on the 78 public deployment files of tests/data/deployments, with the models local (bundled specs
and the config.json copies of tests/data/public_models, --models-dir, --offline).

Prints, per format folder of the corpus, the files read directly (by a reader of their format, not refused as
unrecognised), and the verdicts: judged (pass + fail), pass, fail, cannot judge, invalid, skipped; then the wall
time of the whole `kvplan check` process against two baselines measured in the same run, as fresh interpreter
processes (best of N, to keep scheduler noise out):
- `python -c 'import typer, rich.table, yaml'`: what any typer CLI costs to start;
- `kvplan check` of one kvplan deployment file (examples/deploy/prod/chat-8b.yaml): kvplan's fixed cost.
Target: the corpus in under 2 s. Asserts nothing.

    python benchmarks/check_corpus.py [--runs 5] [--gpu h100]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "deployments"
MODELS = ROOT / "tests" / "data" / "public_models"
ONE_FILE = ROOT / "examples" / "deploy" / "prod" / "chat-8b.yaml"
UNRECOGNISED = "not a deployment file kvplan reads"


def timed(cmd: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return times


def counts(gpu: str | None) -> None:
    sys.path.insert(0, str(ROOT))
    from kvplan.check import deployment, run

    report = run.run_check([str(CORPUS)], deployment.CheckOptions(gpu=gpu, models_dirs=(str(MODELS),), offline=True))
    files: dict[str, set[str]] = collections.defaultdict(set)
    unread: dict[str, set[str]] = collections.defaultdict(set)
    tally: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for v in report.verdicts:
        folder = Path(v.source).relative_to(CORPUS).parts[0]
        files[folder].add(v.source)
        if UNRECOGNISED in v.reason:
            unread[folder].add(v.source)
        tally[folder][v.status] += 1
    header = ("format", "files", "read", "verdicts", "judged", "pass", "fail", "cannot judge", "invalid", "skipped")
    rows = []
    for folder in sorted(files):
        t = tally[folder]
        rows.append((folder, len(files[folder]), len(files[folder]) - len(unread[folder]), sum(t.values()),
                     t["pass"] + t["fail"], t["pass"], t["fail"], t["cannot_judge"], t["invalid"], t["skipped"]))
    total = tuple(["all"] + [sum(r[i] for r in rows) for i in range(1, len(header))])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, total)]
    for row in (header, *rows, total):
        print("  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(row, widths))))
    read = total[2] / total[1]
    print(f"read directly: {total[2]}/{total[1]} files ({read:.0%}); exit code {report.exit_code}"
          + (f"; judged on --gpu {gpu} where a file names none" if gpu else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--gpu", default=None, help="also judge the files that name no GPU on this one")
    args = parser.parse_args()
    counts(args.gpu)
    print()
    kvplan = [sys.executable, "-m", "kvplan", "check"]
    local = ["--models-dir", str(MODELS), "--offline"] + (["--gpu", args.gpu] if args.gpu else [])
    cases = {
        "baseline: import typer, rich.table, yaml": [sys.executable, "-c", "import typer, rich.table, yaml"],
        "baseline: check one kvplan file": kvplan + [str(ONE_FILE)],
        f"check the corpus ({len([p for p in CORPUS.rglob('*') if p.is_file() and p.suffix != '.md'])} files)":
            kvplan + [str(CORPUS)] + local,
    }
    results = {}
    for name, cmd in cases.items():
        timed(cmd, 1)  # warm: bytecode and the file cache
        results[name] = timed(cmd, args.runs)
    base_import, base_one = (min(results[k]) for k in list(cases)[:2])
    for name, t in results.items():
        print(f"{name:42s} best {min(t):.2f} s, median {statistics.median(t):.2f} s, "
              f"x{min(t) / base_import:.2f} of the import baseline, x{min(t) / base_one:.2f} of one file")
    corpus = min(results[list(cases)[2]])
    print(f"target: the corpus in under 2 s: {'met' if corpus < 2 else 'NOT met'} ({corpus:.2f} s)")


if __name__ == "__main__":
    main()
