"""Latency targets for `kvplan plan`: `--ttft` and `--tpot` as percentile:time pairs ('p95:2s', 'p50:400ms,p99:1s',
a bare '60' being P99 in milliseconds), and the default interactivity target a plan is held to when none is given.

Pure: text in, Targets out. How a percentile is estimated is analysis/plan.py's (docs/plan.md, "Latency targets").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from kvplan.core.errors import InputError

# The percentiles a target may name, and the standard normal quantile of each (the TPOT spread is a normal
# approximation of a compound Poisson sum: docs/plan.md, "Latency targets")
Z = {50: 0.0, 90: 1.2816, 95: 1.6449, 99: 2.3263}

# The default interactivity target: P99 TPOT of 100 ms, ten tokens a second for each user. MLPerf Inference holds
# its Server scenarios to P99 TPOT bounds (mlcommons/inference loadgen/mlperf.conf, commit 001712e9): 200 ms for
# Llama-2-70B and Mixtral-8x7B, which MLCommons chose as human reading speed; 175 ms for Llama-3.1-405B; 100 ms for
# Llama-3.1-8B; 80 ms for DeepSeek-R1; the "interactive" variants 30-80 ms. 100 ms keeps a stream ahead of a reader
# with the latency estimate's error to spare (a median error near a third: docs/plan.md, "Out of sample").
DEFAULT_TPOT_MS = 100.0
DEFAULT_TPOT_PERCENTILE = 99
BARE_PERCENTILE = 99  # a target given as a bare number is a P99 (what --ttft/--tpot meant before percentiles)
OFF = ("none", "off")


@dataclass(frozen=True)
class Target:
    """Time to first token or time per output token at one percentile of the load's requests, in milliseconds."""

    percentile: int  # one of Z
    ms: float

    @property
    def z(self) -> float:
        return Z[self.percentile]

    def words(self, metric: str) -> str:
        return f"P{self.percentile} {metric} ≤ {_ms_words(self.ms)}"


@dataclass(frozen=True)
class Targets:
    ttft: tuple[Target, ...] = ()
    tpot: tuple[Target, ...] = ()
    tpot_is_default: bool = False  # the default interactivity target, not one the user gave

    @property
    def any(self) -> bool:
        return bool(self.ttft or self.tpot)


def _ms_words(ms: float) -> str:
    return f"{ms / 1000:,.6g} s" if ms >= 1000 and ms % 100 == 0 else f"{ms:,.6g} ms"


_ITEM = re.compile(r"^(?:p(?P<p>\d+(?:\.\d+)?)\s*[:=]\s*)?(?P<n>[0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*(?P<unit>ms|s)?$", re.I)


def parse(value, flag: str) -> tuple[Target, ...] | None:
    """`--ttft`/`--tpot` as given: None (not given), 'none'/'off' (no target: an empty tuple), a number of
    milliseconds (P99), or comma-separated 'pNN:TIME' items where TIME is '400ms', '2s' or a bare number of
    milliseconds. Each percentile at most once."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"must be a time, got {value!r}", where=flag)
    if isinstance(value, (int, float)):
        return (_target(BARE_PERCENTILE, float(value), flag),)
    text = str(value).strip()
    if text.lower() in OFF:
        return ()
    out: dict[int, Target] = {}
    for item in (part.strip() for part in text.split(",")):
        got = _ITEM.match(item)
        if not got:
            raise InputError(f"cannot read {item!r} as a target", where=flag,
                             hint=f"a percentile and a time, e.g. {flag} p95:2s or {flag} p50:300ms,p99:1s; a bare "
                                  "number is P99 in milliseconds, none is no target")
        percentile = _percentile(got.group("p"), flag)
        if percentile in out:
            raise InputError(f"names P{percentile} twice", where=flag)
        ms = float(got.group("n")) * (1000.0 if (got.group("unit") or "ms").lower() == "s" else 1.0)
        out[percentile] = _target(percentile, ms, flag)
    return tuple(sorted(out.values(), key=lambda t: t.percentile))


def _percentile(text: str | None, flag: str) -> int:
    if text is None:
        return BARE_PERCENTILE
    value = float(text)
    if value not in Z:
        raise InputError(f"P{text} is not a percentile kvplan estimates", where=flag,
                         hint="p50, p90, p95 or p99")
    return int(value)


def _target(percentile: int, ms: float, flag: str) -> Target:
    if not (math.isfinite(ms) and 0 < ms < 1e9):
        raise InputError(f"must be a positive time, got {ms:g} ms", where=flag)
    return Target(percentile, ms)


def targets(ttft, tpot) -> Targets:
    """The targets of a plan: `--tpot` not given is the default interactivity target (P99 100 ms)."""
    ttft_t = parse(ttft, "--ttft") or ()
    tpot_t = parse(tpot, "--tpot")
    if tpot_t is None:
        return Targets(ttft_t, (Target(DEFAULT_TPOT_PERCENTILE, DEFAULT_TPOT_MS),), tpot_is_default=True)
    return Targets(ttft_t, tpot_t)
