"""How fast one replica serves: kvplan's lower bounds on time (latency.py: FLOPs over peak FLOP/s, bytes over HBM
bandwidth) plus the tensor-parallel all-reduce over the node's link, scaled by achieved-efficiency factors fitted
on published measurements (docs/plan.md; the fit is analysis/latency_fit.py, the factors data/latency_factors.yaml).
Pure: a ModelSpec, its cache layout, the GPU's figures and the factors in; seconds out.

The floors, for a replica of TP x PP GPUs (every term is one the hardware cannot beat):

  prefill of n prompts of P tokens   max(n F_pre(P) / (TP peak), (W + n cache(P)) / (TP HBM)) + allreduce(n P)
  decode step of B sequences at c    max(B F_dec(c) / (TP peak), (W_B + B cache(c)) / (TP HBM)) + allreduce(B)
  allreduce(t tokens)                2 L t h 2 B x 2 (TP - 1) / TP / link      (h hidden size, 2-byte activations)

F_pre, F_dec are latency.py's FLOP counts; cache(c) the exact bytes `kvplan estimate` gives for one sequence of c
tokens. Tensor parallelism all-reduces the activations twice per layer (after attention and after the MLP:
Shoeybi et al. 2019, "Megatron-LM", section 3); a ring all-reduce moves 2 (TP - 1) / TP of the message through
each GPU's link (Patarasuk and Yuan 2009). W_B is the weight bytes one decode step reads: all of them for a dense
model; for MoE the routed experts of B tokens, taken as min(all, B x active) (each sequence's experts counted apart
until every expert is read: an upper estimate; latency.py's floor keeps the active bytes).

Pipeline stages run one after another for one sequence (no speed for a single request); with PP stages a replica
keeps PP micro-batches in flight, so B sequences decode as micro-batches of ceil(B / PP) on the whole model.

The estimate of a piece of work is

  a x prefill floor + b x decode floor + s x engine steps + q x sequence-steps

a and b are achieved-efficiency factors per GPU kind (how far real kernels stay from the floor), s the fixed time
of an engine step (launch, scheduling) and q the time per sequence per step (sampling, detokenizing, bookkeeping).
All four are fitted on measured TTFT, TPOT and throughput (docs/plan.md, "Latency"); the band is the spread of the
measurements around the fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from kvplan.analysis.latency import AttentionTerm, attention_terms, decode_flops, matmul_params, prefill_flops
from kvplan.core.cache import CacheModel
from kvplan.core.errors import UnsupportedError
from kvplan.model.efficiency import Factors
from kvplan.model import fleet

ACTIVATION_BYTES = 2  # 16-bit activations cross the all-reduce (engines keep them in bf16/fp16 even with fp8 weights)


@dataclass(frozen=True)
class Floor:
    """One piece of work's floors in seconds; `seconds` = max(compute, memory) + communication."""

    compute_s: float
    memory_s: float
    comm_s: float

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s) + self.comm_s

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


@dataclass(frozen=True)
class Estimate:
    """An estimated time with its band (seconds) and its floor."""

    seconds: float
    low_s: float
    high_s: float
    floor_s: float

    def meets(self, target_s: float | None) -> str | None:
        """'yes' (even the slow edge of the band meets it), 'band' (the estimate meets it, the slow edge does not),
        'estimate' (the floor meets it, the estimate does not), 'floor' (not even the floor does); None: no target."""
        if target_s is None:
            return None
        if self.high_s <= target_s:
            return "yes"
        if self.seconds <= target_s:
            return "band"
        if self.floor_s <= target_s:
            return "estimate"
        return "floor"


@dataclass(frozen=True)
class Replica:
    """What the time model needs of one replica: the model, its cache layout, its weights and its GPUs' figures."""

    cache: CacheModel  # the model on this replica's TP x PP layout, at the KV dtype the engine stores
    weights_bytes: int  # whole model, as the engine loads it
    weight_dtype: str  # selects the fp8 peak for fp8 weights
    peak_flops: int  # per GPU, dense, for the weights' dtype (bf16 unless fp8 weights meet fp8 tensor cores)
    hbm_bytes_per_s: int  # per GPU
    link_bytes_per_s: int | None  # per GPU, one direction; None: communication not timed
    # FLOP counts by token count, shared by the replicas of one model (the search asks for the same few thousands of times)
    flops_memo: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def tp(self) -> int:
        return self.cache.tp

    @property
    def pp(self) -> int:
        return self.cache.pp

    @cached_property
    def terms(self) -> tuple[AttentionTerm, ...]:
        return attention_terms(self.cache.spec)

    @cached_property
    def active_weights_bytes(self) -> int:
        spec = self.cache.spec
        return -(-self.weights_bytes * matmul_params(spec) // spec.params)

    def weights_read(self, batch: int) -> int:
        """Weight bytes one forward of `batch` tokens (one per sequence) reads."""
        return min(self.weights_bytes, batch * self.active_weights_bytes)

    @cached_property
    def _allreduce_per_token_s(self) -> float:
        spec = self.cache.spec
        if self.tp == 1 or self.link_bytes_per_s is None or not spec.hidden_size:
            return 0.0
        return 2 * spec.layers * spec.hidden_size * ACTIVATION_BYTES * 2 * (self.tp - 1) / self.tp / self.link_bytes_per_s

    def allreduce_s(self, tokens: int) -> float:
        """The tensor-parallel all-reduces of `tokens` tokens through every layer (0 without TP or a known link)."""
        return tokens * self._allreduce_per_token_s

    @cached_property
    def _rates(self) -> tuple[int, int]:
        return self.tp * self.peak_flops, self.tp * self.hbm_bytes_per_s

    @cached_property
    def _cache_terms(self) -> tuple[tuple[tuple[int, int | None], ...], int]:
        """(bytes per token over every rank and layer of a group, its window) and the per-sequence state bytes: the
        terms of CacheModel.footprint, gathered once (the search asks for thousands of contexts)."""
        terms: dict[int | None, int] = {}
        state = 0
        for stage in self.cache.stages:
            for g in stage:
                terms[g.window] = terms.get(g.window, 0) + g.count * g.token_bytes * self.tp
                state += g.count * g.state_bytes * self.tp
        return tuple((per, w) for w, per in terms.items()), state

    def cache_bytes(self, tokens: int) -> int:
        """CacheModel.footprint(tokens, 1).cache_bytes: one sequence's cache on every GPU of the replica."""
        terms, state = self._cache_terms
        return state + sum(per * (tokens if w is None or tokens < w else w) for per, w in terms)

    @cached_property
    def _per_length(self) -> dict:
        return {}  # (phase, tokens) -> (FLOPs, cache bytes) of one sequence on this replica

    def _one(self, phase: str, tokens: int) -> tuple[int, int]:
        key = (phase, tokens)
        got = self._per_length.get(key)
        if got is None:
            memo_key = (phase, tokens)
            if memo_key not in self.flops_memo:
                count = prefill_flops if phase == "prefill" else decode_flops
                self.flops_memo[memo_key] = count(self.cache.spec, tokens, terms=self.terms)
            got = self._per_length[key] = (self.flops_memo[memo_key], self.cache_bytes(tokens))
        return got

    def prefill_parts(self, prompt: int, prompts: int = 1) -> tuple[float, float, float]:
        """(compute, memory, communication) seconds of `prompts` prompts of `prompt` tokens from an empty cache."""
        flops, cache = self._one("prefill", prompt)
        compute, memory = self._rates
        tokens = prompts * prompt
        return (prompts * flops / compute, (self.weights_read(tokens) + prompts * cache) / memory,
                tokens * self._allreduce_per_token_s)

    def decode_parts(self, batch: int, context: int) -> tuple[float, float, float]:
        """(compute, memory, communication) seconds of one decode step of `batch` sequences at `context` tokens; with
        PP, one micro-batch of ceil(batch / PP) through every stage (the time one sequence waits between its tokens)."""
        micro = -(-batch // self.pp)
        flops, cache = self._one("decode", context)
        compute, memory = self._rates
        return (micro * flops / compute, (self.weights_read(micro) + micro * cache) / memory,
                micro * self._allreduce_per_token_s)

    def prefill_s(self, prompt: int, prompts: int = 1) -> float:
        c, m, a = self.prefill_parts(prompt, prompts)
        return (c if c > m else m) + a

    def decode_s(self, batch: int, context: int) -> float:
        c, m, a = self.decode_parts(batch, context)
        return (c if c > m else m) + a

    def prefill_floor(self, prompt: int, prompts: int = 1) -> Floor:
        """`prompts` prompts of `prompt` tokens from an empty cache, on this replica."""
        return Floor(*self.prefill_parts(prompt, prompts))

    def decode_floor(self, batch: int, context: int) -> Floor:
        """One decode step of `batch` sequences with `context` tokens cached each (see decode_parts)."""
        return Floor(*self.decode_parts(batch, context))


def replica_of(engine, req, weights_bytes: int, *, gpu=None, cache: CacheModel | None = None,
               flops_memo: dict | None = None) -> Replica:
    """The Replica of an engine request on a catalog GPU (the KV dtype as this engine stores it); `gpu` (the catalog
    entry) and `cache` may be passed when the caller has them."""
    if gpu is None:
        gpu = req.hardware.facts if req.hardware is not None else None
    if gpu is None:
        raise UnsupportedError("latency estimates need a GPU from the catalog (its bandwidth and FLOP/s)", where="--gpu",
                               hint="name a GPU from `kvplan gpus`")
    spec = req.spec
    weight_dtype = req.weight_fmt.name if req.weight_fmt else (spec.weight_dtype or spec.dtype)
    node = fleet.node(gpu.name)
    cache = cache or CacheModel(spec, engine.kv_dtype(req), req.tp, req.pp)
    return Replica(cache, weights_bytes, weight_dtype, peak_flops(gpu, weight_dtype), gpu.hbm_bandwidth_bytes_per_s,
                   node.link_bytes_per_s if node else None, {} if flops_memo is None else flops_memo)


def peak_flops(gpu, weight_dtype: str) -> int:
    """The dense peak that applies: fp8 tensor cores for fp8 weights where the GPU has them, else bf16 (latency.py)."""
    if not gpu.hbm_bandwidth_bytes_per_s or not gpu.bf16_dense_flops:
        raise UnsupportedError(f"the catalog has no HBM bandwidth or bf16 FLOP/s for {gpu.name}", where="--gpu",
                               hint="latency estimates need both (kvplan gpus)")
    if weight_dtype.startswith("fp8") and gpu.fp8_dense_flops:
        return gpu.fp8_dense_flops
    return gpu.bf16_dense_flops


# ------------------------------------------------------------------ the estimates a plan uses

def _scaled(f: Factors, seconds: float, floor: float) -> Estimate:
    return Estimate(seconds, seconds * f.band_low, seconds * f.band_high, floor)


def ttft(replica: Replica, f: Factors, *, prompt: int, batch: int, context: int) -> Estimate:
    """Time to first token of a `prompt`-token request arriving at a replica that decodes `batch` sequences at
    `context`: its own prefill, plus the decode step in flight that it waits behind (one whole step: the slow case
    a P99 target is about). Queueing behind other prompts is not counted (docs/plan.md)."""
    pre = replica.prefill_s(prompt)
    seconds = f.prefill * pre + f.step_s
    if batch > 0:
        seconds += f.decode * replica.decode_s(batch, context) + f.step_s + f.sequence_step_s * batch
    return _scaled(f, seconds, pre)


def tpot(replica: Replica, f: Factors, *, batch: int, prompt: int, output: int, prefills: int | None = None) -> Estimate:
    """Time per output token with `batch` sequences running in steady state (continuous batching): one decode step at
    the mean context, plus this replica's share of the prefills that keep the batch full (`batch` new prompts for
    every `output` tokens a sequence generates, interleaved with the decode steps; `prefills` prompts instead, for a
    request that meets more of them than the mean: prefills_at)."""
    context = prompt + output // 2
    step = replica.decode_s(batch, context)
    prefill_seconds = replica.prefill_s(prompt, batch if prefills is None else prefills)
    seconds = f.decode * step + f.step_s + f.sequence_step_s * batch + f.prefill * prefill_seconds / max(output, 1)
    return _scaled(f, seconds, step)


def prefills_at(batch: int, z: float, spread: float) -> int:
    """The prompts (of the mean length) whose prefills share the decode steps of one request, at the percentile of
    standard normal quantile `z`. In steady state `batch` requests join while one request decodes its output (each
    running slot turns over once); with arrivals at random (Poisson) their number is Poisson with mean `batch`, and
    the prompt tokens they bring a compound Poisson sum with variance batch x E[P^2], i.e. batch x `spread` x E[P]^2
    (`spread` = E[P^2] / E[P]^2, 1 for one fixed prompt length). Its normal approximation's quantile, in prompts of
    the mean length: batch + z sqrt(batch x spread). z = 0 is the mean (tpot's default)."""
    return batch + math.ceil(z * math.sqrt(batch * spread)) if z > 0 and batch > 0 else batch


def step_clock(replica: Replica, f: Factors, *, context: int):
    """The seconds of one engine step, as a function of the sequences it decodes and the prompts it admits:
    s + b x decode floor(n, context) + q n, plus a x prefill floor of each admitted prompt (the estimate's terms,
    one step at a time; every running sequence taken at the workload's mean `context`). For `kvplan simulate
    --rate`, which advances a clock by it (docs/workloads.md)."""
    decodes: dict[int, float] = {}
    prefills: dict[int, float] = {}

    def seconds(running: int, admitted) -> float:
        t = f.step_s
        if running:
            if running not in decodes:
                decodes[running] = f.decode * replica.decode_s(running, context) + f.sequence_step_s * running
            t += decodes[running]
        for prompt in admitted:
            if prompt not in prefills:
                prefills[prompt] = f.prefill * replica.prefill_s(prompt)
            t += prefills[prompt]
        return t

    return seconds


@dataclass(frozen=True)
class OperatingPoint:
    """A replica serving `batch` sequences of `prompt` + `output` tokens at once, in steady state."""

    batch: int
    ttft: Estimate
    tpot: Estimate
    requests_per_s: float  # Little's law: batch / (TTFT + (output - 1) x TPOT)
    output_tokens_per_s: float


def operating_point(replica: Replica, f: Factors, *, batch: int, prompt: int, output: int,
                    ttft_prompt: int | None = None) -> OperatingPoint:
    """The replica at `batch` concurrent sequences; TTFT is taken for a `ttft_prompt`-token prompt (a P99 length)."""
    t_pot = tpot(replica, f, batch=batch, prompt=prompt, output=output)
    t_ttft = ttft(replica, f, prompt=ttft_prompt or prompt, batch=batch, context=prompt + output // 2)
    mean_ttft = (ttft(replica, f, prompt=prompt, batch=batch, context=prompt + output // 2)
                 if ttft_prompt and ttft_prompt != prompt else t_ttft)
    latency = mean_ttft.seconds + (output - 1) * t_pot.seconds
    rate = batch / latency
    return OperatingPoint(batch, t_ttft, t_pot, rate, rate * output)


def requests_per_s(replica: Replica, f: Factors, *, batch: int, prompt: int, output: int) -> float:
    """operating_point(...).requests_per_s for a mean-length prompt, without the bands (the search asks it often)."""
    t_pot = tpot(replica, f, batch=batch, prompt=prompt, output=output).seconds
    t_ttft = ttft(replica, f, prompt=prompt, batch=batch, context=prompt + output // 2).seconds
    return batch / (t_ttft + (output - 1) * t_pot)


def largest_batch(replica: Replica, f: Factors, *, limit: int, prompt: int, output: int, tpot_target_s: float | None,
                  edge: str = "estimate", z: float = 0.0, spread: float = 1.0) -> int:
    """The most sequences (at most `limit`) whose TPOT estimate meets the target; 0 when not even one does. TPOT grows
    with the batch, so a binary search finds it ('high': the band's slow edge must meet it). `z`, `spread`: the
    target's percentile (prefills_at; 0: the mean)."""
    if tpot_target_s is None:
        return limit

    def ok(b: int) -> bool:
        t = tpot(replica, f, batch=b, prompt=prompt, output=output, prefills=prefills_at(b, z, spread))
        return (t.high_s if edge == "high" else t.seconds) <= tpot_target_s

    if limit < 1 or not ok(1):
        return 0
    lo, hi = 1, limit
    if ok(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def geometric_mean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))
