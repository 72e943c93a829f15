"""Workload-aware concurrency: admit a mix of requests into one GPU's KV pool under different allocation
policies and measure sustained concurrency, memory utilisation and waste. Pure: no typer, rich or yaml
(parametric workload files in YAML are read by the caller and passed in as mappings).

Workloads are lists of (prompt_tokens, output_tokens): read from CSV or JSON lines, or drawn
deterministically from a distribution given by percentiles.

The simulation (docs/workloads.md has the full rules):
- time runs in engine steps; each step every running request stores one more token's K/V and emits one
  token (iteration-level scheduling: Orca, OSDI 2022; vLLM, SOSP 2023). A request admitted at step t
  stores its prompt at t (prefill) and finishes at t + output - 1; it then holds prompt + output - 1
  tokens (the last sampled token's K/V is never written);
- every request is queued at step 0 (a saturated backlog): the question is how many run at once when
  the pool is the limit; requests are admitted first come, first served, and admission stops at the
  first that does not fit (vLLM's scheduler: vllm/v1/core/sched/scheduler.py, waiting loop);
- policies: contiguous (each request reserves max_model_len tokens up front, like a static
  preallocated cache or Orca "Max"), pow2 (the next power of two of its final length, Orca "Pow2"),
  oracle (exactly its final length, Orca "Oracle"), paged (blocks of block_size tokens allocated as the
  request grows, vLLM's PagedAttention) and exact (token-granular, the lower limit);
- growing policies preempt the most recently admitted request when a step needs memory the pool does
  not have; it returns to the front of the queue and is recomputed with its generated tokens as part of
  its prompt (vLLM's default recompute preemption);
- figures are averaged over the saturated steps (while requests are still waiting), so the drain at
  the end does not dilute them: sustained concurrency = mean running requests; utilisation = bytes
  holding K/V / pool; waste = (allocated - holding K/V) / allocated.
- prefix sharing (--shared-prefix N): the same N-token system prompt is put before every request's
  prompt. paged stores the prefix's whole blocks once (vLLM's automatic prefix caching shares full
  blocks only); exact stores the N tokens once (a radix tree, SGLang's RadixAttention); contiguous
  policies hold a copy per request.

The cost of one request's tokens on the pool's GPU is the cache layout of the most loaded pipeline stage:
state + sum over layer groups of count x token_bytes x min(tokens, window). The paged policy rounds
each layer group up to whole blocks, and sliding layers hold at most cdiv(window - 1, B) + 1 blocks.
"""

from __future__ import annotations

import csv
import io
import math
import random
from collections import defaultdict, deque
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Mapping

from kvplan.core import files, jsonio
from kvplan.core.errors import DoesNotFitError, InputError, UnsupportedError, did_you_mean
from kvplan.core.text import visible
from kvplan.core.units import MAX_TOKENS, parse_decimal, parse_int, shown

MAX_REQUESTS = 1_000_000
# a million requests of CSV is ~15 MB; the cap keeps a wrong file (a log, a dump) from filling memory
MAX_WORKLOAD_BYTES = 256 * 2**20
POLICIES = ("contiguous", "pow2", "oracle", "paged", "exact")
_PROMPT_KEYS = ("prompt_tokens", "prompt_len", "input_tokens", "input_len", "num_prompt_tokens", "prompt", "input")
_OUTPUT_KEYS = ("output_tokens", "output_len", "completion_tokens", "num_output_tokens", "max_tokens", "output", "completion")


@dataclass(frozen=True)
class Request:
    prompt: int
    output: int


# ------------------------------------------------------------------ reading workloads

def _count(value, where: str, *, unit: str = "token") -> int:
    """A positive whole number from a file cell, a JSON/YAML value or inline text; None is a missing cell."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise InputError("is missing", where=where, hint=f"give a whole number of {unit}s")
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON writers print 512.0
    try:  # the one number parser: ASCII digits, no commas (kvplan.core.units)
        n = parse_int(value, what=where, minimum=None)
    except InputError:
        raise InputError(f"must be a whole number of {unit}s, got {_shown(value)}", where=where, hint="e.g. 512") from None
    if n < 1:
        raise InputError(f"must be at least 1 {unit}, got {shown(n)}", where=where)
    # far above any context length (or workload size); also keeps a typo from driving the simulation into huge integers
    limit = MAX_REQUESTS if unit == "request" else MAX_TOKENS
    if n > limit:
        raise InputError(f"{_shown(value)} {unit}s is more than the limit of {limit:,}", where=where,
                         hint="sample the workload" if unit == "request" else "a prompt or output length in tokens")
    return n


def _shown(value) -> str:
    return shown(value.strip() if isinstance(value, str) else value)


def _pick(keys: Iterable[str], wanted: tuple[str, ...]) -> str | None:
    lowered = {k.strip().lower(): k for k in keys if isinstance(k, str)}
    for name in wanted:
        if name in lowered:
            return lowered[name]
    return None


def _check_work(n: int, max_requests: int | None, where: str) -> None:
    """Refuse, before a distribution's requests are even drawn, a count no simulation of the chosen policies can
    finish in seconds (max_requests from max_requests_for)."""
    if max_requests is not None and n > max_requests:
        raise InputError(f"simulating {n:,} requests would take minutes (at most {max_requests:,} for the policies "
                         "chosen)", where=where, hint="sample fewer requests, or simulate fewer --policies")


def _check_size(n: int, where: str) -> None:
    if n > MAX_REQUESTS:
        raise InputError(f"more than {MAX_REQUESTS:,} requests", where=where, hint="sample the workload")


def read_csv_text(text: str, *, where: str) -> list[Request]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        if not reader.fieldnames:
            raise InputError("is empty", where=where, hint="a header line such as prompt_tokens,output_tokens, then one row per request")
        p_key, o_key = _pick(reader.fieldnames, _PROMPT_KEYS), _pick(reader.fieldnames, _OUTPUT_KEYS)
        if p_key is None or o_key is None:
            raise InputError(f"no {'prompt' if p_key is None else 'output'} length column among {reader.fieldnames}", where=where,
                             hint="name the columns prompt_tokens and output_tokens")
        out = []
        for row in reader:
            line = reader.line_num
            out.append(Request(_count(row.get(p_key), f"{where}:{line} {p_key}"), _count(row.get(o_key), f"{where}:{line} {o_key}")))
            _check_size(len(out), where)
    except csv.Error as err:  # an overlong field (csv.field_size_limit), a NUL byte, a broken quote
        raise InputError(f"is not a CSV file: {err}", where=where,
                         hint="a header line such as prompt_tokens,output_tokens, then one row per request") from None
    if not out:
        raise InputError("holds no requests", where=where, hint="one row per request below the header")
    return out


def read_jsonl_text(text: str, *, where: str) -> list[Request]:
    out = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        obj = jsonio.loads(line, where=f"{where}:{line_no}",
                           hint='one object per line, e.g. {"prompt_tokens": 100, "output_tokens": 200}')
        if not isinstance(obj, Mapping):
            raise InputError("each line must be a JSON object", where=f"{where}:{line_no}", hint='{"prompt_tokens": 100, "output_tokens": 200}')
        p_key, o_key = _pick(obj.keys(), _PROMPT_KEYS), _pick(obj.keys(), _OUTPUT_KEYS)
        if p_key is None or o_key is None:
            raise InputError(f"no {'prompt' if p_key is None else 'output'} length key", where=f"{where}:{line_no}",
                             hint="use prompt_tokens and output_tokens")
        out.append(Request(_count(obj[p_key], f"{where}:{line_no} {p_key}"), _count(obj[o_key], f"{where}:{line_no} {o_key}")))
        _check_size(len(out), where)
    if not out:
        raise InputError("holds no requests", where=where, hint='one object per line, e.g. {"prompt_tokens": 100, "output_tokens": 200}')
    return out


# ------------------------------------------------------------------ parametric workloads

@dataclass(frozen=True)
class Percentiles:
    """A length distribution given by some of its percentiles: ((percent, tokens), ...), increasing."""

    points: tuple[tuple[Fraction, int], ...]

    def quantile(self, u: float) -> int:
        """Tokens at cumulative probability u in (0, 1): linear in log(tokens) between the given
        percentiles (lengths are roughly log-normal in chat traces), flat beyond the first and last."""
        return self.quantiles((u,))[0]

    def quantiles(self, us) -> list[int]:
        """quantile(u) for each u, with the segment constants computed once and float arithmetic: a million
        draws in about a second (Fraction arithmetic per draw took ~10 s). The result is continuous in u, so
        float rounding near a given percentile moves no length (tests compare with the exact Fraction form)."""
        pts = [(float(p), t) for p, t in self.points]
        segments = [(p0, p1, p1 - p0, math.log(t0), math.log(t1) - math.log(t0)) for (p0, t0), (p1, t1) in zip(pts, pts[1:])]
        (first_p, first_t), (last_p, last_t) = pts[0], pts[-1]
        out = []
        for u in us:
            q = u * 100.0
            if q <= first_p:
                out.append(first_t)
                continue
            if q >= last_p:
                out.append(last_t)
                continue
            for p0, p1, width, log0, span in segments:
                if q <= p1:
                    out.append(max(1, round(math.exp(log0 + (q - p0) / width * span))))
                    break
        return out


def parse_percentiles(value, *, where: str) -> Percentiles:
    """{p10: 20, p50: 100, p99: 2000} (min and max allowed as p0 and p100)."""
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        n = _count(value, where)
        return Percentiles(((Fraction(50), n),))
    if not isinstance(value, Mapping) or not value:
        raise InputError(f"must map percentiles to token counts, got {_shown(value)}", where=where,
                         hint="e.g. {p50: 100, p90: 800, p99: 2000}")
    points = []
    for key, tokens in value.items():
        name = str(key).strip().lower()
        name = {"min": "p0", "max": "p100", "median": "p50"}.get(name, name)
        try:  # bounded digits and exponent: 'p1e999999999' must not expand a billion-digit number
            pct = parse_decimal(name[1:], what=where, percent=False)[0] if name.startswith("p") else None
        except InputError:
            pct = None
        if pct is None or not 0 <= pct <= 100:
            raise InputError(f"unknown key {key!r}", where=where, hint="percentiles are written p0..p100 (or min, median, max)")
        points.append((pct, _count(tokens, f"{where}.{key}")))
    points.sort()
    for (p0, t0), (p1, t1) in zip(points, points[1:]):
        if p0 == p1:
            raise InputError(f"percentile p{p0} given twice", where=where, hint="keep one of them (median is p50, min p0, max p100)")
        if t1 < t0:
            raise InputError(f"p{p1} ({t1}) is below p{p0} ({t0}); percentiles must not decrease", where=where,
                             hint="a higher percentile needs at least as many tokens")
    return Percentiles(tuple(points))


def from_distribution(mapping: Mapping, *, where: str, max_requests: int | None = None) -> list[Request]:
    """A deterministic sample: requests at evenly spaced quantiles (i + 0.5) / n of each length, the output
    quantiles shuffled with a fixed seed so that prompt and output lengths are independent."""
    allowed = {"prompt_tokens", "output_tokens", "requests", "seed", "description"}
    if not isinstance(mapping, Mapping):
        raise InputError(f"must be a mapping with prompt_tokens and output_tokens, got {type(mapping).__name__}", where=where,
                         hint="e.g. prompt_tokens: {p50: 100, p99: 2000} and output_tokens: {p50: 200, p99: 1500}")
    unknown = sorted((k for k in mapping if k not in allowed), key=str)
    if unknown:
        key = unknown[0]
        raise InputError(f"unknown key {key!r}", where=f"{where}: {key}",
                         hint=did_you_mean(str(key), allowed) or "known: " + ", ".join(sorted(allowed)))
    for key in ("prompt_tokens", "output_tokens"):
        if key not in mapping:
            raise InputError("is required", where=f"{where}: {key}", hint="e.g. {p50: 100, p90: 800, p99: 2000}")
    prompt = parse_percentiles(mapping["prompt_tokens"], where=f"{where}: prompt_tokens")
    output = parse_percentiles(mapping["output_tokens"], where=f"{where}: output_tokens")
    n = _count(mapping.get("requests", 1000), f"{where}: requests", unit="request")
    _check_size(n, f"{where}: requests")
    _check_work(n, max_requests, f"{where}: requests")
    seed = mapping.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"must be a whole number, got {_shown(seed)}", where=f"{where}: seed", hint="e.g. seed: 0")
    order = list(range(n))
    random.Random(seed).shuffle(order)
    us = [(i + 0.5) / n for i in range(n)]
    prompts, outputs = prompt.quantiles(us), output.quantiles(us)
    return [Request(prompts[i], outputs[order[i]]) for i in range(n)]


def parse_inline(text: str, *, where: str = "--workload", max_requests: int | None = None) -> list[Request]:
    """'prompt=p50:100,p99:2000;output=p50:200,p99:1500;requests=500' -> requests."""
    mapping: dict = {}
    names = {"prompt": "prompt_tokens", "prompt_tokens": "prompt_tokens", "output": "output_tokens",
             "output_tokens": "output_tokens", "requests": "requests", "seed": "seed"}
    for part in text.split(";"):
        if not part.strip():
            continue
        word, sep, value = part.partition("=")
        key = names.get(word.strip().lower())
        if sep and key is None:
            raise InputError(f"unknown key {word.strip()!r}", where=where,
                             hint=did_you_mean(word.strip(), ("prompt", "output", "requests", "seed"))
                             or "keys: prompt, output, requests, seed")
        if not sep:
            raise InputError(f"cannot read {part.strip()!r}", where=where,
                             hint="e.g. prompt=p50:100,p99:2000;output=p50:200,p99:1500;requests=500")
        if key in ("requests", "seed"):
            try:
                mapping[key] = parse_int(value, what=where, minimum=None)
            except InputError:
                raise InputError(f"{key} must be a whole number, got {_shown(value)}", where=where,
                                 hint=f"e.g. {key}=500" if key == "requests" else "e.g. seed=0") from None
            continue
        points = {}
        for item in value.split(","):
            pct, sep, tokens = item.partition(":")
            if not sep:
                raise InputError(f"cannot read {item.strip()!r}", where=where, hint="percentile:tokens, e.g. p50:100")
            points[pct.strip()] = tokens.strip()
        mapping[key] = points
    return from_distribution(mapping, where=where, max_requests=max_requests)


def load(path_or_spec: str, *, load_yaml=None, max_requests: int | None = None) -> tuple[list[Request], str]:
    """Requests and a short description from a CSV, JSONL, YAML/JSON distribution file, or an inline
    distribution. `load_yaml(path)` reads YAML (the caller's, so this module imports no yaml)."""
    what = "a CSV or JSONL of prompt/output lengths, a YAML distribution, or prompt=...;output=..."
    if not str(path_or_spec).strip():
        raise InputError("is empty", where="--workload", hint=what)
    if "=" in path_or_spec and not Path(path_or_spec).expanduser().exists():
        return parse_inline(path_or_spec, max_requests=max_requests), "inline distribution"
    path = Path(path_or_spec).expanduser()
    where = str(path)
    try:
        # the bounded reader (core/files.py): a FIFO or a device is refused, not read forever; utf-8-sig: spreadsheet
        # programs put a byte-order mark before the CSV header
        text = files.read_text(path, limit=MAX_WORKLOAD_BYTES, encoding="utf-8-sig", what="workload files")
    except InputError as err:
        raise InputError(err.what, where=err.where, hint=err.hint or what) from None
    suffix = path.suffix.lower()
    if suffix == ".csv":
        requests = read_csv_text(text, where=where)
        _check_work(len(requests), max_requests, where)
        return requests, path.name
    if suffix in (".jsonl", ".ndjson"):
        requests = read_jsonl_text(text, where=where)
        _check_work(len(requests), max_requests, where)
        return requests, path.name
    if suffix in (".yaml", ".yml", ".json"):
        if suffix == ".json":
            data = jsonio.loads(text, where=where, hint="a mapping of prompt_tokens and output_tokens percentiles")
        else:
            data = load_yaml(path)
        description = data.get("description") if isinstance(data, Mapping) else None
        description = visible(description) if isinstance(description, str) and description.strip() else None
        return from_distribution(data, where=where, max_requests=max_requests), description or path.name
    raise InputError(f"unknown workload format {suffix or '(no extension)'!r}", where=where,
                     hint=".csv or .jsonl of requests, or a .yaml/.json distribution")


# ------------------------------------------------------------------ the cost of tokens on the pool's GPU

@dataclass(frozen=True)
class CostModel:
    """Bytes that one request's tokens take on one GPU: state + sum(per_token x min(tokens, window))."""

    terms: tuple[tuple[int, int | None], ...]  # (bytes per token over the layers of a group, window or None)
    state: int

    def stored(self, tokens: int) -> int:
        return self.state + sum(per * (tokens if w is None or tokens < w else w) for per, w in self.terms)

    def paged(self, tokens: int, block: int) -> int:
        blocks = -(-tokens // block)
        total = self.state
        for per, w in self.terms:
            n = blocks if w is None else min(blocks, -(-(w - 1) // block) + 1)
            total += per * n * block
        return total

    @property
    def linear(self) -> bool:
        return all(w is None for _, w in self.terms)

    @property
    def per_token(self) -> int:
        return sum(per for per, _ in self.terms)


def cost_model(cache, max_model_len: int) -> tuple[CostModel, int]:
    """The most loaded stage's cost (the one that runs out first at max_model_len) and its index."""
    stage = max(range(cache.pp), key=lambda s: (cache.rank_footprint(s, max_model_len, 1).cache_bytes, -s))
    groups = cache.stages[stage]
    terms: dict = {}
    for g in groups:
        if g.token_bytes:
            terms[g.window] = terms.get(g.window, 0) + g.count * g.token_bytes
    return CostModel(terms=tuple((per, w) for w, per in terms.items()),
                     state=sum(g.count * g.state_bytes for g in groups)), stage


# ------------------------------------------------------------------ simulation

@dataclass(frozen=True)
class PolicyResult:
    policy: str
    description: str
    block_size: int | None
    saturated: bool  # requests were still waiting during the measured steps
    measured_steps: int
    sustained_concurrency: float  # mean running requests over the measured steps
    peak_concurrency: int
    mean_tokens: float  # mean tokens held per step (logical: a shared prefix counts for every request)
    utilisation: float  # mean bytes holding K/V / pool
    allocation: float  # mean bytes allocated / pool
    waste: float  # mean (allocated - holding K/V) / mean allocated
    waste_reserved: float | None  # share of allocated memory held for tokens not yet generated
    waste_never_used: float | None  # share of allocated memory no token will ever use
    preemptions: int
    recomputed_tokens: int  # prompt + emitted tokens preempted requests computed again (their prefill is repeated)
    steps: int  # until the last request finished
    tokens_per_step: float  # output tokens / steps: the throughput if every step took the same time
    relative_throughput: float | None  # tokens_per_step / the contiguous policy's
    # with --rate (arrivals over time; the means above are then over time):
    duration_s: float | None = None  # simulated time until the last request finished
    output_tokens_per_s: float | None = None
    wait_p50_s: float | None = None  # from arrival to admission (queueing for room or for the batch cap)
    wait_p99_s: float | None = None


@dataclass(frozen=True)
class LengthStats:
    mean: float
    p50: int
    p90: int
    p99: int
    max: int


@dataclass(frozen=True)
class SimulationResult:
    model: str
    workload: str
    requests: int
    rejected: int  # prompts (with any shared prefix) of max_model_len tokens or more (an engine refuses them)
    truncated: int  # outputs cut so that prompt + output fits max_model_len
    prompt_tokens: LengthStats
    output_tokens: LengthStats
    max_model_len: int
    kv_dtype: str
    tp: int
    pp: int
    gpu: str | None
    pool_bytes: int  # KV budget of the most loaded GPU
    pool_stage: int
    kv_bytes_per_token: int  # on that GPU, before any window is full
    block_size: int
    shared_prefix: int
    policies: tuple[PolicyResult, ...]
    notes: tuple[str, ...] = ()
    rate: float | None = None  # requests per second (Poisson arrivals), or None: all queued at step 0
    seed: int | None = None  # the arrivals' random seed


def _stats(values: list[int]) -> LengthStats:
    ordered = sorted(values)

    def pct(p: int) -> int:  # nearest-rank percentile
        return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]

    return LengthStats(mean=sum(ordered) / len(ordered), p50=pct(50), p90=pct(90), p99=pct(99), max=ordered[-1])


def _next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


class _Run:
    """One policy's simulation. Aggregates are updated in O(1) per step; per-request events (finish,
    next block, window reached) sit in buckets keyed by step, so a run costs O(steps + events)."""

    def __init__(self, policy: str, cost: CostModel, pool: int, max_len: int, block: int, shared: int, max_seqs: int | None):
        self.policy, self.cost, self.pool, self.max_len, self.block, self.max_seqs = policy, cost, pool, max_len, block, max_seqs
        # prefix sharing: tokens at the start of every prompt that are stored once for everybody
        self.share_tokens = 0
        if shared and policy == "paged":
            self.share_tokens = shared // block * block  # only whole blocks are shared (vLLM prefix caching)
        elif shared and policy == "exact":
            self.share_tokens = shared
        self.shared_bytes = cost.per_token * self.share_tokens
        self.windows = sorted({w for _, w in cost.terms if w is not None})
        # a step's growth is full x running + per x below[w] for each windowed term: split once, not per step
        self.full_per_token = sum(per for per, w in cost.terms if w is None)
        self.windowed_terms = tuple((per, w) for per, w in cost.terms if w is not None)

    def share_of(self, prompt: int) -> int:
        share = min(prompt, self.share_tokens)
        return share // self.block * self.block if self.policy == "paged" else share

    def alloc(self, own: int, final_own: int) -> int:
        """Bytes a request holds with `own` tokens of its own stored (`final_own` at its end)."""
        p = self.policy
        if p == "contiguous":
            return self.cost.stored(self.max_len)
        if p == "pow2":
            return self.cost.stored(min(_next_pow2(final_own), self.max_len))
        if p == "oracle":
            return self.cost.stored(final_own)
        if p == "paged":
            return self.cost.paged(own, self.block)
        return self.cost.stored(own)

    def run(self, requests: list[Request], arrivals: list[float] | None = None, clock=None) -> dict:
        """Every request queued at step 0; or, with `arrivals` (seconds, one per request, ascending) and `clock`
        (serving.step_clock: the seconds of a step), each request joins the queue when the clock reaches its arrival,
        and the means are over time."""
        cost, pool, block, policy = self.cost, self.pool, self.block, self.policy
        timed = arrivals is not None
        every = deque((i, r.prompt, r.output) for i, r in enumerate(requests))  # (id, prompt, tokens still to emit)
        queue = every if not timed else deque()
        now = 0.0
        waits: list[float] = []
        admitted_prompts: list[int] = []
        running: dict[int, _Rec] = {}
        # admission order, the last admitted preempted first; a dict is an ordered set with O(1) removal (a list's
        # remove() is O(running), which made runs with tens of thousands of running requests quadratic)
        order: dict[int, None] = {}
        finishing: dict[int, list] = defaultdict(list)  # step -> records whose last token was emitted the step before
        growing: dict[int, list] = defaultdict(list)  # step -> records that need another block at that step (paged)
        windowed: dict[int, list] = defaultdict(list)  # step -> records whose own tokens reach a window at that step
        allocated = stored = self.shared_bytes
        final_bytes = 0  # sum of stored(final length) over running: splits the waste of reserving policies
        tokens = 0  # logical tokens held by running requests
        below = dict.fromkeys(self.windows, 0)  # running requests with fewer own tokens than each window
        sums: list[float] = [0, 0, 0, 0, 0, 0]  # saturated steps: running, stored, allocated, final, tokens, steps
        early = [0, 0, 0, 0, 0, 0]  # the same before the first request finishes (for unsaturated runs)
        peak = preemptions = generated = recomputed = 0
        finished_any = waited = False
        t = 0
        full_per_token, windowed_terms, paged = self.full_per_token, self.windowed_terms, policy == "paged"
        head_need: tuple | None = None  # (queue head, bytes it needs): a saturated pool retries the same head each step

        def remove(rec: _Rec, step: int) -> None:
            nonlocal allocated, stored, final_bytes, tokens
            del running[rec.rid]
            del order[rec.rid]
            rec.live = False
            own = rec.own(step)
            allocated -= cost.stored(own) if policy == "exact" else rec.alloc  # exact grows without updating rec.alloc
            stored -= cost.stored(own)
            final_bytes -= cost.stored(rec.final_own)
            tokens -= rec.share + own
            for w in self.windows:
                below[w] -= own < w

        while queue or running or (timed and every):
            if timed:
                if not queue and not running and arrivals[every[0][0]] > now:
                    sums[5] += arrivals[every[0][0]] - now  # idle until the next request arrives: nothing runs
                    now = arrivals[every[0][0]]
                while every and arrivals[every[0][0]] <= now:
                    queue.append(every.popleft())
            # 1. requests that emitted their last token in the previous step leave
            for rec in finishing.pop(t, ()):
                if rec.live:
                    remove(rec, t - 1)
                    finished_any = True
            if not queue and not running and not (timed and every):
                break  # the last requests finished in the previous step
            # 2. every running request stores one more token; preempt (last admitted first) if the pool is short
            due = [rec for rec in growing.pop(t, ()) if rec.live] if paged else []
            # the blocks each due request needs now; kept per request so that a preemption takes its share off
            # (summing over all of `due` after each preemption was quadratic)
            grow = {rec.rid: cost.paged(rec.own(t), block) - rec.alloc for rec in due} if due else {}
            need_paged = sum(grow.values()) if due else 0
            while True:
                n = len(running)
                delta = full_per_token * n
                for per, w in windowed_terms:
                    delta += per * below[w]
                if paged:
                    need = need_paged
                else:
                    need = delta if policy == "exact" else 0
                if need == 0 or allocated + need <= pool or not order:
                    break
                victim = running[next(reversed(order))]
                remove(victim, t - 1)
                need_paged -= grow.pop(victim.rid, 0)
                emitted = t - victim.t0
                queue.appendleft((victim.rid, victim.prompt + emitted, victim.output - emitted))
                preemptions += 1
                recomputed += victim.prompt + emitted
            stored += delta
            tokens += len(running)
            if policy == "exact":
                allocated += delta
            for rec in due:
                if rec.live:
                    new = cost.paged(rec.own(t), block)
                    allocated += new - rec.alloc
                    rec.alloc = new
                    if t + block <= rec.last:
                        growing[t + block].append(rec)
            for rec in windowed.pop(t, ()):
                if rec.live:
                    below[rec.own(t)] -= 1
            # 3. admit first come, first served; stop at the first request that does not fit
            while queue and (self.max_seqs is None or len(running) < self.max_seqs):
                head = queue[0]
                if head_need is None or head_need[0] is not head:
                    share = self.share_of(head[1])
                    own, final_own = head[1] - share, head[1] - share + head[2] - 1
                    head_need = (head, share, own, final_own, self.alloc(own, final_own))
                _, share, own, final_own, need = head_need
                if allocated + need > pool:
                    break
                rid, prompt, output = head
                queue.popleft()
                if timed:
                    admitted_prompts.append(prompt)
                    if prompt == requests[rid].prompt:  # a first admission (a preempted request comes back longer)
                        waits.append(now - arrivals[rid])
                rec = _Rec(rid, t, prompt, output, share, need)
                running[rid] = rec
                order[rid] = None
                allocated += need
                stored += cost.stored(own)
                final_bytes += cost.stored(final_own)
                tokens += prompt
                finishing[rec.last + 1].append(rec)
                for w in self.windows:
                    if own < w:
                        below[w] += 1
                        if t + (w - own) <= rec.last:
                            windowed[t + (w - own)].append(rec)
                if policy == "paged":
                    step = t + (-(-own // block) * block + 1 - own)  # the first token past the last whole block
                    if step <= rec.last:
                        growing[step].append(rec)
            if queue and not running:  # pragma: no cover - simulate() rejects requests that cannot fit alone
                raise AssertionError("a request cannot fit into an empty pool")
            n = len(running)
            if n > peak:
                peak = n
            generated += n
            if timed:
                # 4. measure over time: every step, weighted by its seconds
                dt = clock(n, admitted_prompts)
                admitted_prompts.clear()
                waited = waited or bool(queue)
                for i, value in enumerate((n, stored, allocated, final_bytes, tokens, 1)):
                    sums[i] += value * dt
                now += dt
                t += 1
                continue
            # 4. measure: while requests wait (saturated), and separately before anything has finished
            target = sums if queue else (early if not finished_any and sums[5] == 0 else None)
            if target is not None:
                target[0] += n
                target[1] += stored
                target[2] += allocated
                target[3] += final_bytes
                target[4] += tokens
                target[5] += 1
            t += 1
        if timed:
            return {"sums": sums, "saturated": waited, "peak": peak, "preemptions": preemptions, "recomputed": recomputed,
                    "steps": t, "generated": generated, "measured": t, "seconds": now, "waits": waits}
        return {"sums": sums if sums[5] else early, "saturated": sums[5] > 0, "peak": peak, "preemptions": preemptions,
                "recomputed": recomputed, "steps": t, "generated": generated, "measured": sums[5] if sums[5] else early[5]}


class _Rec:
    """A running request: admitted at step t0, emits its last token at step `last`."""

    __slots__ = ("rid", "t0", "prompt", "output", "share", "alloc", "last", "final_own", "live")

    def __init__(self, rid: int, t0: int, prompt: int, output: int, share: int, alloc: int):
        self.rid, self.t0, self.prompt, self.output, self.share, self.alloc = rid, t0, prompt, output, share, alloc
        self.last = t0 + output - 1
        self.final_own = prompt - share + output - 1
        self.live = True

    def own(self, step: int) -> int:
        """Tokens of its own (not shared) stored at the end of `step`."""
        return self.prompt - self.share + step - self.t0


# One policy runs ~0.2-0.5 M engine steps a second (tests/test_workload.py keeps the examples far below);
# above this the run takes minutes, which reads as a hang, so it is refused up front.
MAX_SIM_STEPS = 20_000_000
# Admitting and retiring one request costs about as much as 5 engine steps (measured on this code: 200,000 short
# requests under the 5 policies, ~13 us per request and policy, against 2-5 us per step): the work of a run is
# counted in steps with each request weighing this much, so a million short requests are refused as well.
REQUEST_STEPS = 5


def max_requests_for(policies) -> int:
    """The most requests whose admissions alone stay within MAX_SIM_STEPS under these policies."""
    return MAX_SIM_STEPS // (REQUEST_STEPS * max(len(tuple(policies)), 1))


def _estimated_steps(admitted: list[Request], runs: dict, pool: int, max_seqs: int | None) -> int:
    """Engine steps all policies together will take, roughly: each runs until the total output is emitted
    at its typical concurrency (the pool over the bytes a request holds halfway through), and at least
    as long as the longest output. Within a small factor, which is all a refusal needs."""
    sample = admitted[:: max(1, len(admitted) // 10_000)]
    total = sum(r.output for r in admitted)
    longest = max(r.output for r in admitted)
    steps = 0
    for run in runs.values():
        held = 0
        for r in sample:
            own = r.prompt - run.share_of(r.prompt)
            held += run.alloc(own + r.output // 2, own + r.output - 1)
        mean = held / len(sample)
        room = max(pool - run.shared_bytes, 0)
        concurrency = min(len(admitted), max_seqs or len(admitted), max(1, int(room // mean)) if mean else len(admitted))
        steps += max(longest, total // concurrency)
    return steps


def poisson_arrivals(n: int, rate: float, seed: int) -> list[float]:
    """Arrival times (seconds) of `n` requests at `rate` per second at random: exponential gaps, a seeded generator
    (the same seed, the same arrivals on every machine: Python's Mersenne Twister)."""
    draw = random.Random(seed)
    now, out = 0.0, []
    for _ in range(n):
        now += draw.expovariate(rate)
        out.append(now)
    return out


def _nearest_rank(values: list[float], q: int) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def simulate(requests: list[Request], cache, *, pool_bytes: int, max_model_len: int, block_size: int = 16,
             shared_prefix: int = 0, policies: tuple[str, ...] = POLICIES, max_num_seqs: int | None = None,
             model: str | None = None, workload: str = "", gpu: str | None = None, rate: float | None = None,
             seed: int = 0, clock=None) -> SimulationResult:
    """Run every policy over the same requests on the pool of the most loaded GPU: all queued at step 0, or with
    `rate` arriving at random (Poisson, `seed`) while `clock` (serving.step_clock) times each step."""
    if block_size < 1:
        raise InputError(f"must be at least 1, got {block_size}", where="--block-size")
    if pool_bytes <= 0:
        raise DoesNotFitError("no memory is left for the KV cache on this GPU", where="--gpu",
                         hint="a larger GPU, more --tp/--pp, or --kv-cache-memory SIZE")
    for p in policies:
        if p not in POLICIES:
            raise InputError(f"unknown policy {p!r}", where="--policies", hint=did_you_mean(p, POLICIES) or "one of " + ", ".join(POLICIES))
    if shared_prefix >= max_model_len:
        raise InputError(f"a shared prefix of {shared_prefix:,} tokens leaves no room for a prompt under max_model_len "
                         f"({max_model_len:,})", where="--shared-prefix", hint="shorten --shared-prefix or raise --seq")
    cost, stage = cost_model(cache, max_model_len)
    if shared_prefix and not cost.linear:
        raise UnsupportedError("prefix sharing with sliding-window layers is not modelled (shared blocks leave the window)",
                               where="--shared-prefix", hint="drop --shared-prefix for this model")
    notes = []
    admitted, rejected, truncated = [], 0, 0
    for r in requests:
        prompt = shared_prefix + r.prompt  # the system prompt goes first
        if prompt >= max_model_len:
            rejected += 1
            continue
        output = min(r.output, max_model_len - prompt)
        truncated += output < r.output
        admitted.append(Request(prompt, output))
    if not admitted:
        raise InputError(f"every prompt{' with the shared prefix' if shared_prefix else ''} has {max_model_len:,} "
                         f"token{'s' if max_model_len != 1 else ''} or more (max_model_len)", where="--seq", hint="raise --seq (max_model_len)")
    runs = {p: _Run(p, cost, pool_bytes, max_model_len, block_size, shared_prefix, max_num_seqs) for p in policies}
    # refused up front, from the request count and the policies' costs on a sample, before anything walks every
    # request (issue 15: a million requests ran 21 s before the refusal)
    steps = _estimated_steps(admitted, runs, pool_bytes, max_num_seqs) + REQUEST_STEPS * len(admitted) * len(runs)
    if steps > MAX_SIM_STEPS:
        raise InputError(f"simulating {len(admitted):,} requests would take about {steps:,} engine steps (minutes)",
                         where="--workload", hint="sample fewer requests, shorten the outputs, or lower --seq")
    # each policy must be able to hold any one request at its longest alone, or it could never run it (and a
    # growing request would preempt itself forever)
    for policy, run in runs.items():
        def peak(r: Request) -> int:
            own_final = r.prompt - run.share_of(r.prompt) + r.output - 1
            return run.shared_bytes + run.alloc(own_final, own_final)

        worst = max(admitted, key=peak)
        if peak(worst) > pool_bytes:
            raise InputError(f"a request of {worst.prompt:,} + {worst.output:,} tokens needs {peak(worst):,} B under {policy}, "
                             f"more than the pool's {pool_bytes:,} B", where="--seq", hint="lower --seq (max_model_len) or add memory")
    if rejected:
        notes.append(f"{rejected:,} requests have prompts of max_model_len tokens or more and were rejected")
    if truncated:
        notes.append(f"{truncated:,} outputs were cut so that prompt + output <= max_model_len")
    if not cost.linear and "paged" in policies:
        notes.append("sliding layers: paged blocks per request capped at cdiv(window - 1, block) + 1, as vLLM's sliding-window manager frees blocks")
    if cache.pp > 1:
        notes.append(f"PP {cache.pp}: simulated on stage {stage}, the most loaded at max_model_len")

    if rate is not None and (clock is None or not (0 < rate < 1e9)):
        raise InputError(f"must be above 0 requests per second, got {rate:g}" if clock is not None else
                         "arrivals over time need each step's time", where="--rate")
    arrivals = poisson_arrivals(len(admitted), rate, seed) if rate is not None else None
    raw = {policy: run.run(admitted, arrivals, clock) for policy, run in runs.items()}
    results = []
    base = raw.get("contiguous")
    base_rate = base["generated"] / base["steps"] if base else None
    for policy in policies:
        sim = raw[policy]
        saturated = sim["saturated"]
        n, stored, alloc, final, tokens, steps = sim["sums"]
        reserving = policy in ("contiguous", "pow2", "oracle")
        per_step = sim["generated"] / sim["steps"]
        results.append(PolicyResult(
            policy=policy, description=_DESCRIPTIONS[policy].format(block=block_size), block_size=block_size if policy == "paged" else None,
            saturated=saturated, measured_steps=sim["measured"], sustained_concurrency=n / steps, peak_concurrency=sim["peak"],
            mean_tokens=tokens / steps, utilisation=stored / steps / pool_bytes, allocation=alloc / steps / pool_bytes,
            waste=(alloc - stored) / alloc if alloc else 0.0,
            waste_reserved=(final - stored) / alloc if reserving and alloc else None,
            waste_never_used=(alloc - final) / alloc if reserving and alloc else None,
            preemptions=sim["preemptions"], recomputed_tokens=sim["recomputed"], steps=sim["steps"], tokens_per_step=per_step,
            relative_throughput=per_step / base_rate if base_rate else None,
            duration_s=sim.get("seconds"), output_tokens_per_s=sim["generated"] / sim["seconds"] if sim.get("seconds") else None,
            wait_p50_s=_nearest_rank(sim.get("waits", []), 50), wait_p99_s=_nearest_rank(sim.get("waits", []), 99),
        ))
    if shared_prefix:
        notes.append(f"a {shared_prefix:,}-token system prompt precedes every prompt; paged stores its whole blocks once, exact "
                     "all of it once; contiguous policies hold a copy per request")
    if any(not p.saturated for p in results) and rate is None:
        notes.append("some policies fit every request at once (not saturated): figures are for the steps before the first finished")
    return SimulationResult(
        model=model or cache.spec.name, workload=workload, requests=len(requests), rejected=rejected, truncated=truncated,
        prompt_tokens=_stats([r.prompt for r in requests]), output_tokens=_stats([r.output for r in requests]),
        max_model_len=max_model_len, kv_dtype=cache.kv_dtype.name, tp=cache.tp, pp=cache.pp, gpu=gpu, pool_bytes=pool_bytes,
        pool_stage=stage, kv_bytes_per_token=cost.per_token, block_size=block_size, shared_prefix=shared_prefix,
        policies=tuple(results), notes=tuple(notes), rate=rate, seed=seed if rate is not None else None,
    )


_DESCRIPTIONS = {
    "contiguous": "reserve max_model_len tokens per request up front (static cache, Orca Max)",
    "pow2": "reserve the next power of two of the final length (Orca Pow2)",
    "oracle": "reserve exactly the final length, known in advance (Orca Oracle)",
    "paged": "blocks of {block} tokens allocated on demand (vLLM PagedAttention)",
    "exact": "token-granular allocation on demand (the lower limit)",
}


# ------------------------------------------------------------------ a host tier beside the pool

@dataclass(frozen=True)
class TierView:
    """What a KV tier in host memory (or on disk) adds beside the GPU pool, in tokens and requests: capacity
    arithmetic over the simulation's figures, not a cache-eviction simulation (docs/workloads.md)."""

    policy: str  # the policy whose GPU figures are used (paged when simulated)
    gpu_pool_tokens: int  # the pool in tokens of the most loaded GPU
    gpu_free_tokens: int  # the pool's mean free part while saturated: what prefix caching keeps warm on the GPU
    host_tokens: int  # the host tier in tokens (its bytes over the bytes one token takes on this GPU)
    disk_tokens: int
    mean_request_tokens: float  # mean final length (prompt + output - 1)
    warm_requests_gpu: float  # finished requests' KV the free pool can keep, at the mean length
    warm_requests_host: float  # ... the host (and disk) tier can keep
    prefix_hit_rate: float | None  # share of prompt tokens found cached (given)
    prefill_tokens_saved_per_request: float | None  # hit rate x mean prompt
    recompute_share_saved: float | None  # of all prompt tokens: the hit rate, while the warm prefixes fit the tiers


def tiers(result: SimulationResult, *, host_bytes: int, disk_bytes: int = 0, prefix_hit_rate: float | None = None) -> TierView:
    """The tier view of a simulation: the GPU pool's free part and a host tier of `host_bytes` (bytes on this GPU's
    share), in tokens and in requests of the workload's mean length."""
    if host_bytes < 0 or disk_bytes < 0:
        raise InputError("a tier's size must not be negative", where="--kv-host")
    if prefix_hit_rate is not None and not 0 <= prefix_hit_rate <= 1:
        raise InputError(f"must be from 0 to 1, got {prefix_hit_rate}", where="--prefix-hit-rate")
    by_name = {p.policy: p for p in result.policies}
    policy = by_name.get("paged") or by_name.get("exact") or result.policies[0]
    per_token = result.kv_bytes_per_token
    pool_tokens = result.pool_bytes // per_token if per_token else 0
    free = max(0, int(result.pool_bytes * (1 - policy.allocation)) // per_token) if per_token else 0
    mean_len = result.prompt_tokens.mean + result.output_tokens.mean - 1
    host = host_bytes // per_token if per_token else 0
    disk = disk_bytes // per_token if per_token else 0
    saved = prefix_hit_rate * result.prompt_tokens.mean if prefix_hit_rate is not None else None
    return TierView(policy=policy.policy, gpu_pool_tokens=pool_tokens, gpu_free_tokens=free, host_tokens=host,
                    disk_tokens=disk, mean_request_tokens=mean_len,
                    warm_requests_gpu=free / mean_len if mean_len > 0 else 0.0,
                    warm_requests_host=(host + disk) / mean_len if mean_len > 0 else 0.0,
                    prefix_hit_rate=prefix_hit_rate, prefill_tokens_saved_per_request=saved,
                    recompute_share_saved=prefix_hit_rate)
