"""Fit the achieved-efficiency factors of kvplan's latency estimate on the published measurements of
tests/data/latency, score them leave-one-source-out, and (with --write) store them in kvplan/data/latency_factors.yaml.

    PYTHONPATH=. python scripts/fit_latency.py            # print the factors and the leave-one-source-out table
    PYTHONPATH=. python scripts/fit_latency.py --write    # and write kvplan/data/latency_factors.yaml

tests/test_latency_fit.py refits and checks the stored file and the table in docs/plan.md against this.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency_data import measurements  # noqa: E402

from kvplan.analysis import latency_fit  # noqa: E402

OUT = ROOT / "kvplan" / "data" / "latency_factors.yaml"
HEADER = """\
# Achieved-efficiency factors of kvplan's latency estimate (kvplan/analysis/serving.py):
#   estimate = prefill x prefill floor + decode x decode floor + step_s x engine steps + sequence_step_s x sequence-steps
# FITTED by scripts/fit_latency.py on the published measurements in tests/data/latency (SOURCES.md there says where
# each comes from); do not edit by hand: re-run `PYTHONPATH=. python scripts/fit_latency.py --write`.
# band_low / band_high: the 5th and 95th percentile of measured / estimate over the level's own measurements.
# A GPU kind uses its own level, else its architecture's, else `all` (then its estimate is marked unmeasured).
# leave_one_source_out: each source predicted by the factors fitted without it (errors are |measured / estimate - 1|);
# docs/plan.md shows the same table. tests/test_latency_fit.py refits and compares.
"""


def _num(x: float) -> float:
    return float(f"{x:.6g}")


def render(fitted, errors, overall) -> str:
    import yaml

    levels = {}
    for key, f in fitted.levels.items():
        levels[key] = {"prefill": _num(f.prefill), "decode": _num(f.decode), "step_s": _num(f.step_s),
                       "sequence_step_s": _num(f.sequence_step_s), "band_low": _num(f.band_low),
                       "band_high": _num(f.band_high), "rows": fitted.rows[key], "basis": f.basis}
    table = [{"source": e.source, "rows": e.rows, "median_error": _num(e.median_error), "p90_error": _num(e.p90_error),
              "bias": _num(e.bias), "in_band": _num(e.in_band)} for e in [*errors, overall]]
    body = {"levels": levels, "leave_one_source_out": table}
    return HEADER + yaml.safe_dump(body, sort_keys=False, width=120)


def markdown(errors, overall) -> str:
    lines = ["| source | measurements | median error | 90th percentile error | bias | inside the band |",
             "|---|---|---|---|---|---|"]
    for e in [*errors, overall]:
        lines.append(f"| {e.source} | {e.rows:,} | {100 * e.median_error:.0f}% | {100 * e.p90_error:.0f}% | "
                     f"{100 * e.bias:+.0f}% | {100 * e.in_band:.0f}% |")
    return "\n".join(lines)


def main() -> int:
    data, skipped = measurements()
    fitted = latency_fit.fit(data)
    errors, scored = latency_fit.leave_one_source_out(data)
    overall = latency_fit.summary(scored)
    for key, f in fitted.levels.items():
        print(f"{key:28} rows {fitted.rows[key]:5}  prefill {f.prefill:.3f}  decode {f.decode:.3f}  step {1e3 * f.step_s:.2f} ms"
              f"  per sequence-step {1e3 * f.sequence_step_s:.4f} ms  band {f.band_low:.2f}-{f.band_high:.2f}")
    print()
    print(markdown(errors, overall))
    if "--write" in sys.argv[1:]:
        OUT.write_text(render(fitted, errors, overall), encoding="utf-8")
        print(f"\nwrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
