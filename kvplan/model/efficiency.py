"""The fitted achieved-efficiency factors of kvplan's latency estimate (data/latency_factors.yaml, written by
scripts/fit_latency.py from the published measurements in tests/data/latency; docs/plan.md has their
leave-one-source-out error)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from kvplan.core import packaged


@dataclass(frozen=True)
class Factors:
    """Achieved-efficiency factors for one GPU kind (fitted: analysis/latency_fit.py, data/latency_factors.yaml)."""

    prefill: float  # a: measured / floor for prefill work
    decode: float  # b: measured / floor for decode work
    step_s: float  # s: seconds per engine step
    sequence_step_s: float  # q: seconds per sequence per step
    band_low: float  # measured / estimate at the 5th percentile of the fitted data
    band_high: float  # ... and at the 95th
    basis: str  # which data the factors come from: a GPU kind, an architecture, or every GPU
    measured: bool  # False: no measurement of this GPU kind; the factors of its architecture or of all GPUs apply


@lru_cache(maxsize=None)
def _table() -> dict:
    import yaml

    text = packaged.data_file("latency_factors.yaml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@lru_cache(maxsize=None)
def factors_for(gpu: str, architecture: str | None) -> Factors:
    """The factors of the GPU kind, else of its architecture, else of every GPU (`measured` False for the last two)."""
    levels = _table()["levels"]
    for key, measured in ((f"gpu:{gpu}", True), (f"arch:{architecture}", False), ("all", False)):
        if key in levels:
            e = levels[key]
            basis = e["basis"] if measured else f"no measurement of {gpu}: {e['basis']}"
            return Factors(e["prefill"], e["decode"], e["step_s"], e["sequence_step_s"], e["band_low"], e["band_high"],
                           basis, measured)
    raise KeyError("latency_factors.yaml has no `all` level")


def leave_one_source_out() -> list[dict]:
    return list(_table()["leave_one_source_out"])
