"""Grids of estimates: one row per combination of seq, batch, KV dtype, GPU, TP, PP and engine.

Pure: no typer, rich or yaml. The command (kvplan/cli/commands/sweep.py) parses the flags, supplies a
`make_request` that builds an EngineRequest the way `kvplan estimate` does, and writes the rows as
they come.

Speed: a sweep of 10,000 rows must take well under a second, so the per-row work for the static
engine is a handful of integer operations. The model is resolved and the engine request validated
once per (engine, gpu, tp, pp, kv_dtype) combination, the CacheModel is built once per
(kv_dtype, tp, pp), and per-sequence cache sizes once per seq. Every cache figure is linear in the
batch (cache.CacheModel multiplies per-sequence bytes by the batch, and the most loaded stage stays
the most loaded when all are scaled by the same batch), so a row is a multiplication and a compare.
The longest context that fits depends on the batch but not on seq: it is taken from the engine's own
estimate once per batch value. Other engines are asked for every row through their `estimate`.
tests/test_sweep.py checks that the fast rows equal the engine's estimate field by field.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

from kvplan.core.errors import InputError, KvplanError
from kvplan.core.text import csv_cell
from kvplan.core.units import MAX_TOKENS, parse_int
from kvplan.engines.fixes import at_judging_edge
from kvplan.core.cache import CacheModel

# A grid is expanded eagerly (its axes are short lists); this bounds one axis and the whole product so
# that a typo such as 1..1000000000 fails fast instead of streaming forever.
MAX_AXIS_VALUES = 100_000
MAX_ROWS = 50_000_000

_RANGE = re.compile(r"^(?P<lo>[^.]+?)\s*\.\.\s*(?P<hi>[^*+]+?)\s*(?:(?P<op>[*+])\s*(?P<step>[^*+]+))?$")


def parse_axis(text: str, parse_one: Callable[[str], object], *, where: str, default_step: str | None = None) -> tuple:
    """'4K,8K,32K', '4K..128K*2' (geometric), '1..64+8' (arithmetic), or a mix: '1,2..8*2,100'.

    Each range includes its first value and every step up to and including its last value when
    a step lands on it. `default_step` ('*2', '+1') applies to a range written without one.
    Duplicates keep their first position.
    """
    if text is None or not str(text).strip():
        raise InputError("is empty", where=where, hint="give a value, a comma list, or a range such as 4K..128K*2")

    def one(part: str):
        try:
            return parse_one(part)
        except InputError as err:
            if err.where is None:
                err.located(where)
            raise err from None

    out: list = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            raise InputError(f"empty entry in {text!r}", where=where, hint="remove the doubled comma")
        if ".." not in part:
            out.append(one(part))
            continue
        match = _RANGE.match(part)
        if not match:
            raise InputError(f"range {part!r} is not of the form A..B, A..B*k or A..B+k", where=where,
                             hint="e.g. 4K..128K*2 (doubling) or 1..64+8 (steps of 8)")
        lo, hi = one(match.group("lo")), one(match.group("hi"))
        if not isinstance(lo, int) or not isinstance(hi, int):
            raise InputError(f"range {part!r} needs numbers at both ends", where=where)
        op, step = match.group("op"), match.group("step")
        if op is None:
            if default_step is None:
                raise InputError(f"range {part!r} needs a step", where=where, hint="write A..B*k or A..B+k")
            op, step = default_step[0], default_step[1:]
        step = parse_int(step, what=where, minimum=None)  # the one number parser: ASCII digits, bounded length
        if hi < lo:
            raise InputError(f"range {part!r} runs backwards", where=where, hint=f"write {match.group('hi')}..{match.group('lo')}")
        if (op == "*" and step < 2) or (op == "+" and step < 1):
            raise InputError(f"range {part!r} has a step that never advances", where=where,
                             hint="multiply by 2 or more (*2), or add 1 or more (+1)")
        value = lo
        while value <= hi:
            out.append(value)
            if len(out) > MAX_AXIS_VALUES:
                raise InputError(f"expands to more than {MAX_AXIS_VALUES:,} values", where=where, hint="use a coarser step")
            value = value * step if op == "*" else value + step
    seen: set = set()
    unique = [v for v in out if not (v in seen or seen.add(v))]
    return tuple(unique)


@dataclass(frozen=True)
class Grid:
    """The values of every axis; rows run over their product, batch varying fastest."""

    seq: tuple[int, ...]
    batch: tuple[int, ...] = (1,)
    kv_dtype: tuple[str, ...] = ("auto",)
    gpu: tuple[str | None, ...] = (None,)
    tp: tuple[int, ...] = (1,)
    pp: tuple[int, ...] = (1,)
    engine: tuple[str, ...] = ("static",)

    def __post_init__(self):
        for field in dataclasses.fields(self):
            if not getattr(self, field.name):
                raise InputError("has no values", where=f"--{field.name.replace('_', '-')}")
        if len(self) > MAX_ROWS:
            raise InputError(f"the grid has {len(self):,} rows, more than {MAX_ROWS:,}", where="sweep",
                             hint="narrow an axis or use a coarser step")

    def __len__(self) -> int:
        n = 1
        for field in dataclasses.fields(self):
            n *= len(getattr(self, field.name))
        return n


@dataclass(frozen=True)
class Combo:
    """The slow-changing part of a row: what identifies one engine request."""

    engine: str
    gpu: str | None
    tp: int
    pp: int
    kv_dtype: str


@dataclass(frozen=True)
class SweepRow:
    """One grid point. Bytes are integers; the gpu_* figures are for the most loaded GPU and are None
    without a GPU (as are fits, max_batch and max_seq). `error` is set, and the figures None, when the
    engine refused this combination (an unmodelled engine, a TP size that does not divide the KV heads)."""

    model: str
    engine: str
    gpu: str | None
    tp: int
    pp: int
    kv_dtype: str
    seq: int
    batch: int
    kv_bytes_per_token: int | None
    cache_bytes: int | None  # whole model, every rank
    gpu_weights_bytes: int | None
    gpu_cache_bytes: int | None
    gpu_free_bytes: int | None
    fits: bool | None
    max_batch: int | None
    max_seq: int | None
    max_concurrency: float | None  # the paged engines' figure (vLLM's "Maximum concurrency"); None for static
    error: str | None = None


COLUMNS = tuple(f.name for f in dataclasses.fields(SweepRow))

# make_request(combo, seq, batch) -> EngineRequest; engine(name) -> the registry's Engine (kvplan.engines.get)
RequestFactory = Callable[[Combo, int, int], object]


def combos(grid: Grid) -> Iterator[Combo]:
    for engine, gpu, tp, pp, kv in itertools.product(grid.engine, grid.gpu, grid.tp, grid.pp, grid.kv_dtype):
        yield Combo(engine, gpu, tp, pp, kv)


def rows(grid: Grid, make_request: RequestFactory, engine: Callable[[str], object], *, model: str,
         on_refusal: Callable[[KvplanError], None] | None = None) -> Iterator[SweepRow]:
    """Every row of the grid, in order (engine, gpu, tp, pp, kv_dtype, seq, batch), lazily. A combination
    the engine refuses yields rows whose `error` holds the one-line reason; on_refusal sees the error."""
    note = on_refusal or (lambda err: None)
    caches: dict = {}
    for combo in combos(grid):
        try:
            module = engine(combo.engine)
            request = make_request(combo, grid.seq[0], grid.batch[0])
            if not module.paged:  # the textbook cache: one per sequence, no pool
                block = _static_rows(grid, combo, module, request, caches)
            else:
                block = _engine_rows(grid, combo, module, request, note)
        except KvplanError as err:
            note(err)
            yield from _refused(grid, combo, model, err)
            continue
        yield from block


def _refused(grid: Grid, combo: Combo, model: str, err: KvplanError) -> Iterator[SweepRow]:
    message = err.one_line()
    kv = combo.kv_dtype
    for seq in grid.seq:
        for batch in grid.batch:
            yield SweepRow(model=model, engine=combo.engine, gpu=combo.gpu, tp=combo.tp, pp=combo.pp, kv_dtype=kv,
                           seq=seq, batch=batch, kv_bytes_per_token=None, cache_bytes=None, gpu_weights_bytes=None,
                           gpu_cache_bytes=None, gpu_free_bytes=None, fits=None, max_batch=None, max_seq=None,
                           max_concurrency=None, error=message)


def row_from_result(result, combo: Combo) -> SweepRow:
    """A row from any engine's estimate result: the contract fields, and the concurrency its pool view logs."""
    per_gpu = result.per_gpu
    pool = result.pool_view()
    concurrency = pool.concurrency if pool is not None else None
    return SweepRow(
        model=result.model, engine=combo.engine, gpu=combo.gpu, tp=combo.tp, pp=combo.pp, kv_dtype=result.kv_dtype,
        seq=result.seq, batch=result.batch, kv_bytes_per_token=result.kv_bytes_per_token, cache_bytes=result.cache_bytes,
        gpu_weights_bytes=per_gpu.weights_bytes if per_gpu else None, gpu_cache_bytes=per_gpu.cache_bytes if per_gpu else None,
        gpu_free_bytes=per_gpu.free_bytes if per_gpu else None, fits=result.fits, max_batch=result.max_batch,
        max_seq=result.max_seq,
        max_concurrency=float(concurrency) if concurrency is not None else None,
    )


def _engine_rows(grid: Grid, combo: Combo, module, request, note) -> Iterator[SweepRow]:
    replace = dataclasses.replace
    for seq in grid.seq:
        for batch in grid.batch:
            try:
                # judged where estimate and check judge (the low edge of a modelled budget's band): one verdict
                req = replace(request, seq=seq, batch=batch)
                _, result = at_judging_edge(module, req, module.estimate(req))
            except KvplanError as err:
                note(err)
                yield from _refused(Grid(seq=(seq,), batch=(batch,)), combo, request.spec.name, err)
                continue
            yield row_from_result(result, combo)


def _static_rows(grid: Grid, combo: Combo, module, request, caches: dict) -> Iterator[SweepRow]:
    """Validates and precomputes now (errors surface to rows()), then returns the row generator."""
    spec = request.spec
    key = (id(spec), request.kv_dtype, request.tp, request.pp)
    entry = caches.get(key)
    if entry is None:
        cache = CacheModel(spec, module.kv_dtype(request), request.tp, request.pp)
        per_seq = {s: (cache.max_rank_footprint(s, 1).cache_bytes, cache.footprint(s, 1).cache_bytes) for s in grid.seq}
        entry = caches[key] = (cache, per_seq, spec)  # spec kept alive so its id stays unique
    cache, per_seq, _ = entry

    first = module.estimate(request)  # validates the request and gives the per-GPU budget
    kv_per_token, kv_name = first.kv_bytes_per_token, first.kv_dtype
    room = weights = None
    if first.per_gpu is not None:
        weights = first.per_gpu.weights_bytes
        room = first.per_gpu.usable_bytes - weights
    # the longest context depends on the batch only (the engine's binary search, in closed form here)
    cap = spec.max_context or MAX_TOKENS
    max_seq = {b: longest_context(cache, b, room, cap) for b in grid.batch} if room is not None else {}
    return _static_block(grid, combo, first.model, kv_per_token, kv_name, per_seq, room, weights, max_seq)


def _static_block(grid, combo, model, kv_per_token, kv_name, per_seq, room, weights, max_seq) -> Iterator[SweepRow]:
    positive_room = max(room, 0) if room is not None else 0
    engine, gpu, tp, pp = combo.engine, combo.gpu, combo.tp, combo.pp
    for seq in grid.seq:
        rank_one, whole_one = per_seq[seq]
        max_batch = (positive_room // rank_one if rank_one else None) if room is not None else None
        for batch in grid.batch:
            if room is None:
                yield SweepRow(model, engine, gpu, tp, pp, kv_name, seq, batch, kv_per_token, batch * whole_one,
                               None, None, None, None, None, None, None)
            else:
                on_gpu = batch * rank_one
                yield SweepRow(model, engine, gpu, tp, pp, kv_name, seq, batch, kv_per_token, batch * whole_one,
                               weights, on_gpu, room - on_gpu, room >= on_gpu, max_batch, max_seq[batch], None)


def longest_context(cache, batch: int, room: int, cap: int) -> int:
    """The longest sequence of which `batch` fit in `room` bytes on the most loaded GPU, capped at `cap`:
    what plan.estimate finds by binary search, solved on the piecewise-linear cache curve instead.

    On one stage, one sequence of s tokens costs f(s) = state + sum(count x token_bytes x min(s, window));
    between consecutive windows f is linear, so the crossing with room // batch is one division.
    batch x f(s) <= room exactly when f(s) <= room // batch (integers). Every stage must fit: take the min.
    """
    if room < 0:
        return 0
    budget = room // batch
    best = cap
    for groups in cache.stages:
        best = min(best, _stage_longest(groups, budget, cap))
        if best == 0:
            break
    return best


def _stage_longest(groups, budget: int, cap: int) -> int:
    state = sum(g.count * g.state_bytes for g in groups)
    terms = [(g.count * g.token_bytes, g.window) for g in groups if g.token_bytes]

    def f(s: int) -> int:
        return state + sum(per * (s if w is None or s < w else w) for per, w in terms)

    if f(1) > budget:
        return 0
    lo = 1
    for hi in sorted({w for _, w in terms if w is not None and 1 < w < cap}) + [cap]:
        f_hi = f(hi)
        if f_hi <= budget:
            lo = hi
            continue
        slope = sum(per for per, w in terms if w is None or w >= hi)  # windows at or past hi still grow on [lo, hi]
        return lo + (budget - f(lo)) // slope
    return cap


# ------------------------------------------------------------------ machine formats (no rich)

def csv_value(value) -> str:
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):  # model, engine, GPU, KV dtype, error: a spreadsheet must not run them as formulas
        return csv_cell(value)
    return str(value)


def iter_csv(rows_: Iterable[SweepRow]) -> Iterator[str]:
    """CSV lines (header first), RFC 4180 quoting where a field needs it (error messages)."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    yield buffer.getvalue()
    for row in rows_:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow([csv_value(v) for v in _values(row)])
        yield buffer.getvalue()


def _values(row: SweepRow) -> Sequence:
    # dataclasses.astuple deep-copies; the fields are flat, so read them directly (10x faster)
    return [getattr(row, name) for name in COLUMNS]


def iter_jsonl(rows_: Iterable[SweepRow]) -> Iterator[str]:
    import json

    dumps = json.dumps
    for row in rows_:
        yield dumps(dict(zip(COLUMNS, _values(row)))) + "\n"
