"""`kvplan calibrate`: one log's figures beside kvplan's, for any engine, and the verdict on a set of logs. Pure
(apart from reading the log files it is given).

Each engine package has a `calibrate.py` that reads one log (its `log.py`) and compares every figure it can
(engines/vllm/calibrate.py, engines/sglang/calibrate.py, engines/trtllm/calibrate.py). This module holds what
they share: the Figure and LogCalibration records, the verdict rules, the engine detection and dispatch, and the
summary with its exit code.

A figure is compared on one of three bases:
- "logged pool": from the pool the log states (blocks, tokens, the KV memory it printed): the engine's own
  block arithmetic, exact (within the rounding of the printed figure);
- "logged budget": from the budget terms the log states (free memory before and after loading, the memory
  fraction): the engine's budget formula, exact within the rounding;
- "modelled": end to end, from the GPU and the flags alone (what `kvplan estimate` says before the run); judged
  against the band the engine's estimate carries (available_kv_bytes_low/_high) when it has one, else shown
  with its difference and not judged.

Verdicts (never a silent pass): "match" when at least one figure was judged and every judged figure agrees and
nothing had to be assumed; "mismatch" when a figure disagrees and it rests on nothing assumed; "cannot judge"
when nothing could be judged, when an input had to be assumed (TP or PP not stated, the release's rules not
mirrored, the model not known), or when a disagreement rests on such an assumption; "invalid" when the file is
unreadable or not a start-up log. The run exits 2 if any log is invalid, else 1 if any mismatches, else 3 if
any cannot be judged, else 0 (the same precedence as `kvplan check`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from kvplan.core.errors import EXIT_INPUT, EXIT_NO, EXIT_OK, EXIT_UNSUPPORTED, InputError
from kvplan.engines.calibration import SiteObservation
from kvplan.core import files
from kvplan.engines.logtext import detect_engine
from kvplan.engines.sitefit import explain, predict

GIB = 2**30
# half the last digit of a GiB figure the engines print to two places ("61.17 GiB": 61.165 ... 61.175 GiB)
HALF = Decimal("0.005")
MATCH, MISMATCH, CANNOT_JUDGE, INVALID = "match", "mismatch", "cannot judge", "invalid"
LOGGED_POOL, LOGGED_BUDGET, MODELLED, CONSISTENCY = "logged pool", "logged budget", "modelled", "consistency"
ENGINES = ("vllm", "sglang", "trtllm")
MAX_LOG_BYTES = 64 * 2**20  # a start-up log is a few MiB at DEBUG level; a larger file is not one


@dataclass(frozen=True)
class Figure:
    """One figure of the log beside kvplan's prediction."""

    name: str
    unit: str  # "GiB", "GB", "count", "x"
    logged: str | None
    predicted: str | None  # one value, or "low–high" where the printed input allows several
    difference: str | None  # predicted - logged, in the unit; percent for memory
    match: bool | None  # judged where the engine is deterministic (or a band is measured); None: shown only
    basis: str = MODELLED  # LOGGED_POOL, LOGGED_BUDGET, MODELLED or CONSISTENCY
    assumed: tuple[str, ...] = ()  # inputs the prediction rests on that the log does not state


@dataclass(frozen=True)
class LogCalibration:
    log: str
    engine: str | None
    model_id: str | None  # as the log names it
    model: str | None  # the kvplan spec used
    engine_version: str | None  # as logged
    rules: str | None  # the release rules kvplan applied
    gpu: str | None
    tp: int | None
    pp: int | None
    max_model_len: int | None
    status: str  # MATCH | MISMATCH | CANNOT_JUDGE | INVALID
    reason: str | None  # why the status is what it is, in one sentence
    figures: tuple[Figure, ...] = ()
    available_error_percent: float | None = None  # |modelled - logged| / logged x 100 (logged > 0 only)
    available_error_gib: float | None = None  # modelled - logged, GiB (also when logged <= 0)
    assumed: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    read: tuple[str, ...] = ()  # what the reader found in the paste: labels, wraps, parts, excerpt
    explained: str | None = None  # a KV-budget difference of 1% or more, put on the budget's terms (sitefit.explain)
    site: SiteObservation | None = field(default=None, compare=False)


def verdict(figures, assumed, *, described: bool, why_not: str | None = None) -> tuple[str, str]:
    """(status, reason) by the rules of the module docstring."""
    clean_miss = [f for f in figures if f.match is False and not f.assumed]
    if clean_miss:
        return MISMATCH, "; ".join(f"{f.name}: logged {f.logged}, kvplan {f.predicted}" for f in clean_miss[:3])
    judged = [f for f in figures if f.match is not None]
    if not described:
        return CANNOT_JUDGE, why_not or "kvplan cannot describe the log's model"
    if not judged:
        return CANNOT_JUDGE, (why_not or "nothing in the log could be compared") + (
            "; assumed " + "; ".join(assumed) if assumed else "")
    if assumed:
        shaky = [f for f in figures if f.match is False]
        extra = f" ({len(shaky)} figure(s) disagree under the assumption)" if shaky else ""
        return CANNOT_JUDGE, "assumed " + "; ".join(assumed) + extra
    shaky = [f for f in figures if f.match is False]  # each rests on an input of its own that was assumed
    if shaky:
        return CANNOT_JUDGE, "; ".join(f"{f.name} differs under an assumed {', '.join(f.assumed)}" for f in shaky[:3])
    return MATCH, f"{len(judged)} figure(s) agree"


# ------------------------------------------------------------------------------------------ figures

def band_of(result) -> tuple[int, int] | None:
    """The band of a paged estimate's modelled KV budget (available_kv_bytes_low, _high), None where it has none."""
    if result.available_kv_bytes_low is not None and result.available_kv_bytes_high is not None:
        return (result.available_kv_bytes_low, result.available_kv_bytes_high)
    return None


def gib_text(b: int | None) -> str | None:
    return None if b is None else f"{b / GIB:.2f}"


def memory_figure(name: str, logged, predicted: int | None, *, band: tuple[int, int] | None = None,
                  basis: str = MODELLED, assumed: tuple[str, ...] = ()) -> Figure:
    """A memory term in GiB: logged (as printed) beside kvplan's bytes; judged only against a band."""
    if logged is None or predicted is None:
        return Figure(name, "GiB", None if logged is None else str(logged), gib_text(predicted), None, None, basis,
                      assumed)
    diff = predicted / GIB - float(logged)
    pct = f" ({diff / float(logged) * 100:+.1f}%)" if float(logged) > 0 else ""  # of a negative figure: no meaning
    match = None
    if band is not None:
        lo, hi = band
        match = lo <= float(logged) * GIB <= hi
    return Figure(name, "GiB", str(logged), gib_text(predicted), f"{diff:+.2f}{pct}", match, basis, assumed)


def count_figure(name: str, logged: int | None, predicted, *, judged: bool = True, basis: str = LOGGED_POOL,
                 assumed: tuple[str, ...] = ()) -> Figure:
    """A count; `predicted` one int or the sorted set/range of ints the printed input allows."""
    values = _values(predicted)
    shown = _range_text(values, "{:,}")
    if logged is None or not values:
        return Figure(name, "count", None if logged is None else f"{logged:,}", shown, None, None, basis, assumed)
    inside = values[0] <= logged <= values[-1] if isinstance(predicted, range) else logged in values
    nearest = min(values, key=lambda v: abs(v - logged))
    diff = "0" if inside else f"{nearest - logged:+,}"
    return Figure(name, "count", f"{logged:,}", shown, diff, inside if judged else None, basis, assumed)


def ratio_figure(name: str, logged: float | None, predicted, *, judged: bool = True, basis: str = LOGGED_POOL,
                 assumed: tuple[str, ...] = ()) -> Figure:
    """A concurrency as the engine prints it ("%.2fx"); `predicted` one float or several."""
    values = sorted({f"{p:.2f}" for p in _values(predicted)}, key=float)
    shown = values[0] if len(values) == 1 else (f"{values[0]}–{values[-1]}" if values else None)
    if logged is None or not values:
        return Figure(name, "x", None if logged is None else f"{logged:.2f}", shown, None, None, basis, assumed)
    text = f"{logged:.2f}"
    inside = text in values
    nearest = min(values, key=lambda v: abs(float(v) - logged))
    return Figure(name, "x", text, shown, "+0.00" if inside else f"{float(nearest) - logged:+.2f}",
                  inside if judged else None, basis, assumed)


def _values(predicted) -> list:
    if predicted is None:
        return []
    if isinstance(predicted, range):
        return [predicted.start, predicted.stop - 1] if len(predicted) else []
    if isinstance(predicted, (list, tuple, set, frozenset)):
        return sorted(predicted)
    return [predicted]


def _range_text(values: list, fmt: str) -> str | None:
    if not values:
        return None
    if values[0] == values[-1]:
        return fmt.format(values[0])
    return f"{fmt.format(values[0])}–{fmt.format(values[-1])}"


# ------------------------------------------------------------------------------------------ reading

def given_pool(estimate, req, kv_cache_memory: int):
    """An engine's figures for a log's launch with the pool given (`kv_cache_memory` bytes and no GPU: what else the
    GPU holds is the log's to say), without searching the longest length."""
    return estimate(dataclasses.replace(req, kv_cache_memory=kv_cache_memory, hardware=None), search_max_seq=False)


def read_log(path: str | Path) -> str:
    """A log file's text (UTF-8, undecodable bytes replaced: logs carry progress-bar glyphs and mojibake), through
    the bounded reader (core/files.py): a FIFO, a device or a socket named as a log is refused, never read forever."""
    if str(path) == "-":  # a log piped in (`docker logs vllm 2>&1 | kvplan calibrate -`), bounded as a file is
        import sys

        data = sys.stdin.buffer.read(MAX_LOG_BYTES + 1)
        if len(data) > MAX_LOG_BYTES:
            raise InputError(f"cannot read the file (more than {MAX_LOG_BYTES:,} bytes)", where="-",
                             hint="pass the start-up part of the log")
        return data.decode("utf-8", errors="replace")
    p = Path(path)
    if p.is_dir():
        raise InputError("cannot read the file (it is a directory)", where=str(path))
    try:
        return files.read_text(p, limit=MAX_LOG_BYTES, where=str(path), errors="replace", what="start-up logs")
    except InputError as err:
        raise InputError(f"cannot read the file ({err.what})", where=str(path), hint=err.hint) from None


def invalid(path: str, what: str, engine: str | None = None) -> LogCalibration:
    return LogCalibration(log=str(path), engine=engine, model_id=None, model=None, engine_version=None, rules=None,
                          gpu=None, tp=None, pp=None, max_model_len=None, status=INVALID, reason=what)


def calibrate_path(path: str | Path, *, engine: str | None = None, model: str | None = None,
                   models_dir: str | None = None, site=None, hardware=None) -> LogCalibration:
    """One log file, its engine detected from the text unless given; unreadable or unrecognised: INVALID."""
    try:
        text = read_log(path)
    except InputError as err:
        return invalid(str(path), err.what if not err.hint else f"{err.what} ({err.hint})")
    chosen = engine or detect_engine(text)
    if chosen is None:
        return invalid(str(path), "not an engine start-up log: none of the start-up lines vLLM, SGLang or "
                                  "TensorRT-LLM print was found (give --engine to read it as one)")
    module = _module(chosen)
    result = module.calibrate_text(text, log=str(path), model=model, models_dir=models_dir, site=site, hardware=hardware)
    if result.site is not None:
        result = dataclasses.replace(result, explained=explain(result.site))
    if site is not None:
        result = _with_profile(result, site)
    return result


def _with_profile(result: LogCalibration, site) -> LogCalibration:
    """The modelled KV budget again with a site profile's terms (engines/calibration.py adjusted_available)."""
    o = result.site
    if o is None or o.modelled_available_kv_bytes is None or (site.engine not in (None, o.engine)):
        return result
    logged = o.available_kv_bytes
    fig = memory_figure("available KV memory (modelled, site profile)",
                        None if logged is None else f"{logged / GIB:.2f}", predict(site, o),
                        assumed=next((f.assumed for f in result.figures if f.basis == MODELLED), ()))
    return dataclasses.replace(result, figures=result.figures + (fig,))


def _module(engine: str):
    import importlib

    return importlib.import_module(f"kvplan.engines.{engine}.calibrate")


# ------------------------------------------------------------------------------------------ summary

@dataclass(frozen=True)
class Summary:
    logs: int
    matched: int
    mismatched: int
    cannot_judge: int
    invalid: int
    by_engine: dict = field(hash=False)
    available_kv_mean_abs_error_percent: float | None  # over the logs with a logged budget > 0 and a modelled one
    scored: int  # logs in that mean
    exit_code: int
    described: int  # logs whose model kvplan could describe (the keys before the verdicts, kept)
    cannot_describe: int
    deterministic_mismatches: int  # = mismatched


def summarize(results: list[LogCalibration]) -> Summary:
    counts = {s: sum(1 for r in results if r.status == s) for s in (MATCH, MISMATCH, CANNOT_JUDGE, INVALID)}
    errors = [r.available_error_percent for r in results if r.available_error_percent is not None]
    by_engine: dict[str, int] = {}
    for r in results:
        by_engine[r.engine or "unknown"] = by_engine.get(r.engine or "unknown", 0) + 1
    return Summary(logs=len(results), matched=counts[MATCH], mismatched=counts[MISMATCH],
                   cannot_judge=counts[CANNOT_JUDGE], invalid=counts[INVALID], by_engine=by_engine,
                   available_kv_mean_abs_error_percent=round(sum(errors) / len(errors), 3) if errors else None,
                   scored=len(errors), exit_code=exit_code(results),
                   described=sum(1 for r in results if r.model is not None),
                   cannot_describe=sum(1 for r in results if r.model is None and r.status != INVALID),
                   deterministic_mismatches=counts[MISMATCH])


def exit_code(results: list[LogCalibration]) -> int:
    statuses = {r.status for r in results}
    if INVALID in statuses:
        return EXIT_INPUT
    if MISMATCH in statuses:
        return EXIT_NO
    if CANNOT_JUDGE in statuses or not results:
        return EXIT_UNSUPPORTED
    return EXIT_OK


def with_site(result: LogCalibration, site: SiteObservation | None) -> LogCalibration:
    return dataclasses.replace(result, site=site)
