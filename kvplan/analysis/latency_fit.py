"""Fitting serving.py's achieved-efficiency factors on measured timings, and scoring them out of sample. Pure.

Every measurement is one timed piece of work (a TTFT, a TPOT, a whole batch's latency, one "round" of a
max-throughput run) with the four features of serving.py's estimate: the prefill floor and the decode floor it
contains (seconds), the engine steps and the sequence-steps it takes. The estimate is linear in the factors,

  estimate = a x prefill_floor + b x decode_floor + s x steps + q x sequence_steps

so the fit is a least-squares problem on the relative error (estimate / measured - 1), solved exactly with the
factors kept non-negative (every subset of free factors tried). Each source (publication) weighs the same however
many rows it has.

Levels: s and q are software overheads and are fitted once on every GPU; a and b are fitted per GPU kind, per
architecture and on all GPUs, and a GPU kind uses the most specific level with data (a factor a level's data cannot
pin, because its phase makes under 5% of that level's time, is taken from the level above). The band of a level is
the 5th and 95th percentile of measured / estimate over its own data.

Leave-one-source-out: each source is predicted from the factors fitted on all the others (with the level fallback a
GPU kind without other data needs), and its errors and the share of its rows inside the band are reported
(docs/plan.md). Nothing here is scored on the data it was fitted on.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from kvplan.model.efficiency import Factors

MIN_ROWS = 5  # a level with fewer rows borrows its parent's factors
MIN_SHARE = 0.05  # a factor whose phase is under this share of a level's time is not fitted there


@dataclass(frozen=True)
class Measurement:
    source: str  # the publication: a key of tests/data/latency/SOURCES.md
    gpu: str  # catalog name
    architecture: str
    what: str  # ttft, tpot, latency (a whole batch), round (max-throughput: B requests through prefill and decode)
    label: str  # the configuration in words
    prefill_s: float  # floor seconds of prefill work inside the measured time
    decode_s: float  # floor seconds of decode work
    steps: float
    sequence_steps: float
    measured_s: float

    def features(self) -> tuple[float, float, float, float]:
        return (self.prefill_s, self.decode_s, self.steps, self.sequence_steps)


@dataclass(frozen=True)
class Fitted:
    """Factors per level: 'gpu:NAME', 'arch:NAME', 'all'."""

    levels: dict
    rows: dict  # level -> rows fitted

    def factors(self, gpu: str, architecture: str) -> Factors:
        for key in (f"gpu:{gpu}", f"arch:{architecture}", "all"):
            if key in self.levels:
                return self.levels[key]
        raise KeyError("no level fitted")


def predict(f: Factors, m: Measurement) -> float:
    return f.prefill * m.prefill_s + f.decode * m.decode_s + f.step_s * m.steps + f.sequence_step_s * m.sequence_steps


# ------------------------------------------------------------------ weighted non-negative least squares

def _solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when singular."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-300:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col:
                k = m[r][col] / m[col][col]
                for c in range(col, n + 1):
                    m[r][c] -= k * m[col][c]
    return [m[i][n] / m[i][i] for i in range(n)]


def nnls(rows: list[tuple[list[float], float, float]], free: list[int], fixed: dict[int, float], size: int) -> list[float]:
    """min sum w (x . theta - y)^2 over theta >= 0 for the `free` indices, the others fixed; rows are (x, y, w).
    Exact for a handful of factors: every subset of the free ones is solved and the best feasible one kept."""
    best, best_loss = None, math.inf
    for k in range(len(free), -1, -1):
        for subset in itertools.combinations(free, k):
            theta = [0.0] * size
            for i, v in fixed.items():
                theta[i] = v
            if subset:
                ata = [[0.0] * k for _ in range(k)]
                atb = [0.0] * k
                for x, y, w in rows:
                    rest = y - sum(x[i] * theta[i] for i in fixed)
                    for p, i in enumerate(subset):
                        atb[p] += w * x[i] * rest
                        for q, j in enumerate(subset):
                            ata[p][q] += w * x[i] * x[j]
                sol = _solve(ata, atb)
                if sol is None or any(v < 0 for v in sol):
                    continue
                for p, i in enumerate(subset):
                    theta[i] = sol[p]
            loss = sum(w * (sum(xi * t for xi, t in zip(x, theta)) - y) ** 2 for x, y, w in rows)
            if loss < best_loss - 1e-15:
                best, best_loss = theta, loss
    return best


def _system(data: list[Measurement]) -> list[tuple[list[float], float, float]]:
    """Relative-error rows: x = features / measured, y = 1, each source weighing the same."""
    per_source: dict[str, int] = {}
    for m in data:
        per_source[m.source] = per_source.get(m.source, 0) + 1
    return [([v / m.measured_s for v in m.features()], 1.0, 1.0 / per_source[m.source]) for m in data]


def _weighted_quantile(values: list[float], weights: list[float], q: float) -> float:
    pairs = sorted(zip(values, weights))
    total = sum(w for _, w in pairs)
    acc = 0.0
    for v, w in pairs:
        acc += w
        if acc >= q * total:
            return v
    return pairs[-1][0]


def _band(data: list[Measurement], f: Factors) -> tuple[float, float]:
    per_source: dict[str, int] = {}
    for m in data:
        per_source[m.source] = per_source.get(m.source, 0) + 1
    ratios = [m.measured_s / predict(f, m) for m in data]
    weights = [1.0 / per_source[m.source] for m in data]
    return _weighted_quantile(ratios, weights, 0.05), _weighted_quantile(ratios, weights, 0.95)


def _share(data: list[Measurement], f: Factors, index: int) -> float:
    """The mean share of the estimate that feature `index` makes over `data`."""
    theta = (f.prefill, f.decode, f.step_s, f.sequence_step_s)
    shares = []
    for m in data:
        parts = [t * x for t, x in zip(theta, m.features())]
        total = sum(parts) or 1.0
        shares.append(parts[index] / total)
    return sum(shares) / len(shares)


def _level(data: list[Measurement], parent: Factors, basis: str) -> Factors:
    """a and b refitted on `data` with the parent's s and q; a factor the data cannot pin stays the parent's."""
    free = [i for i in (0, 1) if _share(data, parent, i) >= MIN_SHARE]
    fixed = {2: parent.step_s, 3: parent.sequence_step_s}
    theta_parent = (parent.prefill, parent.decode)
    for i in (0, 1):
        if i not in free:
            fixed[i] = theta_parent[i]
    theta = nnls(_system(data), free, fixed, 4)
    draft = Factors(theta[0] or theta_parent[0], theta[1] or theta_parent[1], theta[2], theta[3], 1.0, 1.0, basis, True)
    low, high = _band(data, draft)
    return Factors(draft.prefill, draft.decode, draft.step_s, draft.sequence_step_s, low, high, basis, True)


def fit(data: list[Measurement]) -> Fitted:
    """Factors on every GPU, per architecture and per GPU kind (levels with at least MIN_ROWS rows)."""
    theta = nnls(_system(data), [0, 1, 2, 3], {}, 4)
    draft = Factors(*theta, 1.0, 1.0, "all GPUs", True)
    low, high = _band(data, draft)
    pooled = Factors(*theta, low, high, "all GPUs", True)
    levels: dict[str, Factors] = {"all": pooled}
    rows = {"all": len(data)}
    for key, attr in (("arch", "architecture"), ("gpu", "gpu")):
        groups: dict[str, list[Measurement]] = {}
        for m in data:
            groups.setdefault(getattr(m, attr), []).append(m)
        for name, group in sorted(groups.items()):
            if len(group) < MIN_ROWS:
                continue
            parent = levels.get(f"arch:{group[0].architecture}", pooled) if key == "gpu" else pooled
            levels[f"{key}:{name}"] = _level(group, parent, f"{name} ({len({m.source for m in group})} source(s), "
                                                            f"{len(group)} measurements)")
            rows[f"{key}:{name}"] = len(group)
    return Fitted(levels, rows)


# ------------------------------------------------------------------ leave one source out

@dataclass(frozen=True)
class Scored:
    measurement: Measurement
    predicted_s: float
    level: str  # the level whose factors predicted it
    in_band: bool

    @property
    def ratio(self) -> float:
        """measured / predicted"""
        return self.measurement.measured_s / self.predicted_s


@dataclass(frozen=True)
class SourceError:
    source: str
    rows: int
    median_error: float  # |measured / predicted - 1| at the median of |log ratio|
    p90_error: float
    bias: float  # geometric mean of measured / predicted, minus 1 (positive: kvplan too fast)
    in_band: float  # share of rows inside the band


def _error(log_abs: float) -> float:
    return math.exp(log_abs) - 1


def _quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def leave_one_source_out(data: list[Measurement]) -> tuple[list[SourceError], list[Scored]]:
    """Each source predicted by the factors fitted on the others."""
    sources = sorted({m.source for m in data})
    errors, scored = [], []
    for source in sources:
        train = [m for m in data if m.source != source]
        test = [m for m in data if m.source == source]
        fitted = fit(train)
        here = []
        for m in test:
            level = next(k for k in (f"gpu:{m.gpu}", f"arch:{m.architecture}", "all") if k in fitted.levels)
            f = fitted.levels[level]
            p = predict(f, m)
            here.append(Scored(m, p, level, f.band_low <= m.measured_s / p <= f.band_high))
        scored += here
        logs = [abs(math.log(s.ratio)) for s in here]
        errors.append(SourceError(source, len(here), _error(_quantile(logs, 0.5)), _error(_quantile(logs, 0.9)),
                                  math.exp(sum(math.log(s.ratio) for s in here) / len(here)) - 1,
                                  sum(s.in_band for s in here) / len(here)))
    return errors, scored


def summary(scored: list[Scored]) -> SourceError:
    """All held-out rows together, each source weighing the same."""
    logs = [abs(math.log(s.ratio)) for s in scored]
    return SourceError("all", len(scored), _error(_quantile(logs, 0.5)), _error(_quantile(logs, 0.9)),
                       math.exp(sum(math.log(s.ratio) for s in scored) / len(scored)) - 1,
                       sum(s.in_band for s in scored) / len(scored))
