"""Fit a site profile (engines/calibration.py) to a site's own start-up logs, and score it out of sample. Pure.

Every term is the median of what the logs measured (a median, not a mean: one odd log should not move a site's
profile): the non-torch memory at the layout most of the logs ran (other layouts keep the engine's model), the
activation peak as a ratio to kvplan's modelled peak, the CUDA-graph memory, and the memory in use at start-up
beyond the CUDA context kvplan models. A term no log measured stays None (the engine's own model).

The score is leave-one-log-out: for each log that prints its KV budget, the profile is fitted on the other logs
only and applied to kvplan's modelled budget of the left-out one; the error of that budget against the logged
one is the profile's error on a log it never saw. A log no other log can fit a term for is scored with the terms
the others give (the engine's model where none does).
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from fractions import Fraction

from kvplan.core.errors import InputError
from kvplan.engines.calibration import SiteObservation, SiteProfile, adjusted_available

SCALE_DIGITS = 4  # the activation scale is stored to four decimals (a ratio of GiB figures printed to two)


@dataclass(frozen=True)
class LeftOut:
    """One log scored with the profile fitted on the others."""

    log: str
    logged_kv_bytes: int
    modelled_kv_bytes: int  # kvplan's budget without a profile
    fitted_kv_bytes: int  # with the profile fitted on the other logs
    error_percent_before: float
    error_percent_after: float


@dataclass(frozen=True)
class SiteFit:
    profile: SiteProfile
    left_out: tuple[LeftOut, ...]
    mean_error_percent_before: float | None  # kvplan's own budget on the same logs
    mean_error_percent_after: float | None  # leave-one-log-out, with the profile
    max_error_percent_after: float | None
    notes: tuple[str, ...]


def _median_int(values: list[int]) -> int | None:
    return int(statistics.median(values)) if values else None


def fit_profile(observations: list[tuple[str, SiteObservation]], *, engine: str) -> tuple[SiteProfile, list[str]]:
    """The profile of the observations (log name, terms), and notes on what was left out."""
    notes: list[str] = []
    by_layout: dict[tuple[int, int], list[int]] = {}
    for _, o in observations:
        if o.non_torch_bytes is not None and o.tp is not None and o.pp is not None:
            by_layout.setdefault((o.tp, o.pp), []).append(o.non_torch_bytes)
    non_torch = layouts = None
    if by_layout:
        layout = max(by_layout, key=lambda k: (len(by_layout[k]), k))
        non_torch, layouts = _median_int(by_layout[layout]), (layout,)
        others = sorted(set(by_layout) - {layout})
        if others:
            notes.append("non-torch memory fitted at TP {} x PP {} ({} logs); logs of {} keep the engine's model".format(
                layout[0], layout[1], len(by_layout[layout]),
                ", ".join(f"TP {t} x PP {p}" for t, p in others)))
    ratios = [Fraction(o.activation_peak_bytes, o.modelled_activation_peak_bytes) for _, o in observations
              if o.activation_peak_bytes is not None and o.modelled_activation_peak_bytes]
    scale = Fraction(1)
    if ratios:
        scale = Fraction(round(float(statistics.median(ratios)), SCALE_DIGITS)).limit_denominator(10**SCALE_DIGITS)
    graphs = _median_int([o.cuda_graph_bytes for _, o in observations if o.cuda_graph_bytes is not None])
    in_use = _median_int([o.memory_in_use_bytes for _, o in observations if o.memory_in_use_bytes is not None])
    profile = SiteProfile(engine=engine, memory_in_use_bytes=in_use or 0, non_torch_bytes=non_torch,
                          activation_scale=scale, cuda_graph_bytes=graphs,
                          fitted_on=tuple(name for name, _ in observations), layouts=layouts or ())
    return profile, notes


def predict(profile: SiteProfile, o: SiteObservation) -> int:
    """kvplan's modelled KV budget of an observed log with the profile's terms in place of the modelled ones."""
    return adjusted_available(profile, available=o.modelled_available_kv_bytes,
                              activation_peak=o.modelled_activation_peak_bytes, non_torch=o.modelled_non_torch_bytes,
                              cuda_graph=o.modelled_cuda_graph_bytes, graphs_subtracted=bool(o.cuda_graph_subtracted),
                              tp=o.tp or 1, pp=o.pp or 1, term_share=1 if o.term_share is None else o.term_share,
                              in_use_share=o.memory_fraction or 0)


# a difference between the logged and the modelled KV budget below this share of the logged one is not explained
EXPLAIN_SHARE = Fraction(1, 100)


def attribute(o: SiteObservation) -> tuple[int, list[tuple[str, int]]] | None:
    """The logged KV budget less kvplan's, and what each term the log prints contributes to it, in bytes: a term the
    log shows larger than kvplan's model lowers the budget by the excess (times the share of a term that reaches the
    budget: 1 for vLLM, TensorRT-LLM's free_gpu_memory_fraction); memory in use at start lowers it by the share of
    free memory the budget takes (SGLang, TensorRT-LLM; not vLLM's v1 budget, a fraction of the total). The rest is
    in no term the log prints. None where the log or kvplan gives no budget."""
    if o.available_kv_bytes is None or o.modelled_available_kv_bytes is None:
        return None
    share = Fraction(1) if o.term_share is None else Fraction(o.term_share)
    parts: list[tuple[str, int]] = []
    for name, logged, modelled, counts in (
            ("weights", o.weights_bytes, o.modelled_weights_bytes, True),
            ("activation peak", o.activation_peak_bytes, o.modelled_activation_peak_bytes, True),
            ("non-torch memory", o.non_torch_bytes, o.modelled_non_torch_bytes, True),
            ("CUDA-graph memory", o.cuda_graph_bytes, o.modelled_cuda_graph_bytes, bool(o.cuda_graph_subtracted))):
        if logged is not None and modelled is not None and counts:
            parts.append((name, -int((logged - modelled) * share)))
    if o.memory_in_use_bytes and o.memory_fraction:
        parts.append(("memory in use at start", -int(o.memory_in_use_bytes * Fraction(o.memory_fraction))))
    return o.available_kv_bytes - o.modelled_available_kv_bytes, parts


def explain(o: SiteObservation) -> str | None:
    """One sentence putting a KV-budget difference of at least EXPLAIN_SHARE on the terms (attribute), the term that
    explains most of it first; None for a smaller difference or where there is no budget to compare."""
    got = attribute(o)
    if got is None:
        return None
    total, parts = got
    if o.available_kv_bytes <= 0 or abs(total) < EXPLAIN_SHARE * o.available_kv_bytes:
        return None
    rest = total - sum(b for _, b in parts)
    shown = 2**30 // 100  # a hundredth of a GiB: what the sentence prints
    terms = [(name, b) for name, b in parts if abs(b) >= shown]
    if abs(rest) >= shown:
        terms.append((NO_TERM, rest))
    terms.sort(key=lambda t: -abs(t[1]))

    def said(name: str, b: int) -> str:
        if name == NO_TERM:
            return f"{b / 2**30:+.2f} GiB {name}"
        return f"{name} {b / 2**30:+.2f} GiB ({'the log' if b < 0 else 'kvplan'}'s is larger)"

    where = "above" if total > 0 else "below"
    head = f"the logged KV budget is {abs(total) / 2**30:.2f} GiB {where} kvplan's"
    if not terms:
        return head
    return f"{head}, mostly from the {terms[0][0] if terms[0][0] != NO_TERM else 'terms the log does not print'}: " + \
        "; ".join(said(name, b) for name, b in terms)


NO_TERM = "in no term the log prints"


def changes_nothing(profile: SiteProfile, observations: list[tuple[str, SiteObservation]]) -> bool | None:
    """Whether the profile leaves kvplan's modelled KV budget of every log as it was (None: no log has one to
    check): a profile whose terms equal the engine's model, or reach no budget (memory in use under vLLM's v1 budget,
    a fraction of the total), would be written and applied for nothing."""
    checked = [o for _, o in observations if o.modelled_available_kv_bytes is not None]
    if not checked:
        return None
    return all(predict(profile, o) == o.modelled_available_kv_bytes for o in checked)


def fit_site(observations: list[tuple[str, SiteObservation]]) -> SiteFit:
    """Fit on all the logs and score leave-one-log-out (see the module docstring)."""
    if not observations:
        raise InputError("no log measured a budget term to fit", where="--save",
                         hint="pass start-up logs that print the memory profile (vLLM at INFO, DEBUG for every term)")
    engines = sorted({o.engine for _, o in observations})
    if len(engines) > 1:
        raise InputError(f"the logs come from {' and '.join(engines)}: a profile is fitted on one engine's logs",
                         where="--save", hint="save one profile per engine")
    engine = engines[0]
    profile, notes = fit_profile(observations, engine=engine)
    left: list[LeftOut] = []
    for i, (name, o) in enumerate(observations):
        if not o.available_kv_bytes or o.available_kv_bytes <= 0 or o.modelled_available_kv_bytes is None:
            continue
        others = observations[:i] + observations[i + 1:]
        if not others:
            continue
        held_out, _ = fit_profile(others, engine=engine)
        fitted = predict(held_out, o)
        logged = o.available_kv_bytes
        left.append(LeftOut(log=name, logged_kv_bytes=logged, modelled_kv_bytes=o.modelled_available_kv_bytes,
                            fitted_kv_bytes=fitted,
                            error_percent_before=abs(o.modelled_available_kv_bytes - logged) / logged * 100,
                            error_percent_after=abs(fitted - logged) / logged * 100))
    before = after = worst = None
    if left:
        before = sum(x.error_percent_before for x in left) / len(left)
        after = sum(x.error_percent_after for x in left) / len(left)
        worst = max(x.error_percent_after for x in left)
    else:
        notes.append("no two logs print a KV budget and a modelled one: the profile is not scored out of sample")
    scored = dataclasses.replace(profile, leave_one_out_error_percent=None if after is None else round(after, 3),
                                 leave_one_out_logs=len(left))
    return SiteFit(profile=scored, left_out=tuple(left), mean_error_percent_before=before,
                   mean_error_percent_after=after, max_error_percent_after=worst, notes=tuple(notes))
