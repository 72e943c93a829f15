"""Lower bounds on prefill and decode time from the same numbers as the cache: FLOPs over peak FLOP/s,
bytes over peak HBM bandwidth. Pure: ModelSpec, cache layout and GPU figures in; integers of FLOPs and
bytes, and seconds as floats, out.

The formulas (docs/latency.md derives them):

  FLOPs to run one token through the linear layers       2 x N                (N = active parameters:
      one multiply-add per parameter; Kaplan et al. 2020, "Scaling Laws for Neural Language Models",
      Table 1, C_forward ~ 2N; MoE counts the routed experts a token uses)
  FLOPs for one query against k cached keys, per layer   2 x k x heads x (d_qk + d_v)
      (Q.K^T: k x d_qk multiply-adds per head, softmax x V: k x d_v; Hoffmann et al. 2022
      "Chinchilla", Appendix F, counts the same two terms; d_qk = d_v = head_dim for MHA/GQA; MLA
      uses qk_nope + qk_rope and v_head_dim, the uncompressed form, which is the smaller count)
  causal prefill of P tokens: query i sees min(i, window) keys, so per layer
      2 x heads x (d_qk + d_v) x sum_{i=1..P} min(i, W)  =  heads x (d_qk + d_v) x P x (P + 1) without a window
  decode step at context c (c tokens cached): 2N + per layer 2 x heads x (d_qk + d_v) x min(c + 1, W)
      and it reads the active weights once plus every cached byte: bytes = W_active + cache(c), or what a sparse or
      compressed layer's query reads of it (LayerSpec.decode_read_bytes)

  time >= max(FLOPs / (TP x peak FLOP/s), bytes / (TP x HBM bandwidth))

Pipeline stages run one after another for a single sequence, so PP adds no speed to these bounds;
TP ranks work in parallel on their shards. They are lower bounds: real kernels reach a fraction of
peak, and launch, communication, sampling and scheduling are not counted. Recurrent (state) layers'
own compute is linear in tokens and already inside 2N; they add no attention term.

Without a KV cache, every generated token re-runs the whole sequence: generating O tokens after a
P-token prompt costs sum_{k=0}^{O-1} prefill(P + k) FLOPs, against prefill(P + O - 1) with a cache
(prefill of P, then one decode step per further token) — O(n^2) linear work and O(n^3) attention
work instead of O(n) and O(n^2).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.cache import CacheModel
from kvplan.core.errors import UnsupportedError
from kvplan.core.spec import ModelSpec


# ------------------------------------------------------------------ sums of min(i, W), closed form

def sum_min(a: int, b: int, window: int | None) -> int:
    """sum_{i=a..b} min(i, window) (window None: no cap); 0 when b < a."""
    if b < a:
        return 0
    if window is None or b <= window:
        return (a + b) * (b - a + 1) // 2
    if a > window:
        return window * (b - a + 1)
    return (a + window) * (window - a + 1) // 2 + window * (b - window)


def _tri(n: int) -> int:
    return n * (n + 1) // 2


def _sum_tri(a: int, b: int) -> int:
    """sum_{n=a..b} n(n+1)/2 (tetrahedral numbers)."""
    if b < a:
        return 0

    def tet(m: int) -> int:
        return m * (m + 1) * (m + 2) // 6 if m > 0 else 0

    return tet(b) - tet(a - 1)


def sum_prefix_min(a: int, b: int, window: int | None) -> int:
    """sum_{n=a..b} sum_{i=1..n} min(i, window): the attention key count of re-running prefixes of length a..b."""
    if b < a:
        return 0
    if window is None or b <= window:
        return _sum_tri(a, b)
    low_end = min(b, window)
    total = _sum_tri(a, low_end) if a <= low_end else 0
    start = max(a, window + 1)
    # for n > W: T(n) = W(W+1)/2 + W(n - W)
    count = b - start + 1
    return total + count * _tri(window) + window * sum_min(start - window, b - window, None)


# ------------------------------------------------------------------ FLOPs and bytes

@dataclass(frozen=True)
class AttentionTerm:
    """Layers that cost the same per (query, key) pair."""

    layers: int
    pair_flops: int  # 2 x heads x (d_qk + d_v), one query against one key, one layer
    window: int | None


def attention_terms(spec: ModelSpec) -> tuple[AttentionTerm, ...]:
    counts: dict[tuple[int, int | None], int] = {}
    heads = spec.attention_heads
    model_dims = spec.head_dim + (spec.v_head_dim or spec.head_dim)
    for layer in spec.layer_specs:
        if layer.latency_gap:  # the kind's keys per query are neither sum (LayerSpec.latency_gap says which)
            raise UnsupportedError(layer.latency_gap, where=spec.source or spec.name,
                                   hint="the memory figures do not depend on it")
        dims = layer.pair_dims(model_dims)
        if not dims:
            continue
        # a query sees min(i, window) keys in a windowed layer, all i of them otherwise
        key = (2 * heads * dims, layer.window if layer.windowed else None)
        counts[key] = counts.get(key, 0) + 1
    return tuple(AttentionTerm(n, pair, window) for (pair, window), n in counts.items())


def matmul_params(spec: ModelSpec) -> int:
    """Parameters one text token multiplies: the active ones (MoE routing), without a vision tower."""
    return (spec.active_params or spec.params) - (spec.vision_params or 0)


def prefill_flops(spec: ModelSpec, tokens: int, *, terms: tuple[AttentionTerm, ...] | None = None) -> int:
    """FLOPs of a causal forward over `tokens` tokens from an empty cache."""
    terms = attention_terms(spec) if terms is None else terms
    attention = sum(t.layers * t.pair_flops * sum_min(1, tokens, t.window) for t in terms)
    return 2 * matmul_params(spec) * tokens + attention


def decode_flops(spec: ModelSpec, context: int, *, terms: tuple[AttentionTerm, ...] | None = None) -> int:
    """FLOPs of one decode step with `context` tokens already cached (the new token sees context + 1 keys)."""
    terms = attention_terms(spec) if terms is None else terms
    attention = sum(t.layers * t.pair_flops * (context + 1 if t.window is None else min(context + 1, t.window)) for t in terms)
    return 2 * matmul_params(spec) + attention


def no_cache_flops(spec: ModelSpec, prompt: int, output: int, *, terms: tuple[AttentionTerm, ...] | None = None) -> int:
    """FLOPs to generate `output` tokens after `prompt` without a KV cache: each step re-runs the whole
    sequence so far, sum_{k=0}^{output-1} prefill(prompt + k)."""
    terms = attention_terms(spec) if terms is None else terms
    last = prompt + output - 1
    linear = 2 * matmul_params(spec) * sum_min(prompt, last, None)
    attention = sum(t.layers * t.pair_flops * sum_prefix_min(prompt, last, t.window) for t in terms)
    return linear + attention


def active_weight_bytes(spec: ModelSpec, weights_bytes: int) -> int:
    """Weight bytes one token must read: all of them for a dense model, the routed share for MoE."""
    used = matmul_params(spec)
    return -(-weights_bytes * used // spec.params)


# ------------------------------------------------------------------ bounds

@dataclass(frozen=True)
class Phase:
    """One piece of work and its two floors; `seconds` is the larger, `bound` says which."""

    flops: int
    bytes: int
    compute_s: float
    memory_s: float
    seconds: float
    bound: str  # "compute" or "memory" (for a whole generation: each phase's)


def phase(flops: int, bytes_: int, flops_per_s: int, bytes_per_s: int) -> Phase:
    compute, memory = flops / flops_per_s, bytes_ / bytes_per_s
    return Phase(flops, bytes_, compute, memory, max(compute, memory), "compute" if compute >= memory else "memory")


@dataclass(frozen=True)
class LatencyBounds:
    """Lower bounds for one deployment (all TP x PP GPUs): never faster than this on this hardware."""

    model: str
    gpu: str
    tp: int
    pp: int
    kv_dtype: str
    prompt_tokens: int
    output_tokens: int
    context: int  # tokens cached at the decode step bounded below (prompt + output - 1, the last step)
    batch: int  # concurrency for the *_batch figures (the most sequences of `context + 1` tokens that fit)
    peak_flops_per_s: int  # per GPU
    peak_flops_dtype: str
    hbm_bytes_per_s: int  # per GPU
    matmul_params: int
    active_weights_bytes: int
    prefill: Phase  # one prompt: time to first token
    decode: Phase  # one step of one sequence at `context`: time per output token
    prefill_batch: Phase | None  # `batch` prompts together
    decode_batch: Phase | None  # one step of `batch` sequences at `context`
    decode_batch_tokens_per_s: float | None
    generate_cached: Phase  # prefill, then output - 1 decode steps (summed work, floors of the sums)
    generate_no_cache: Phase  # output forward passes over the growing sequence
    no_cache_flops_ratio: float
    no_cache_time_ratio: float
    notes: tuple[str, ...] = ()


def bounds(spec: ModelSpec, cache: CacheModel, *, gpu, weights_bytes: int, weight_dtype: str, prompt: int, output: int,
           batch: int | None = None) -> LatencyBounds:
    """gpu: a catalog.Gpu (hbm_bandwidth_bytes_per_s, bf16_dense_flops, fp8_dense_flops)."""
    if not gpu.hbm_bandwidth_bytes_per_s or not gpu.bf16_dense_flops:
        raise UnsupportedError(f"the catalog has no HBM bandwidth or bf16 FLOP/s for {gpu.name}", where="--gpu",
                               hint="latency bounds need both; pick a GPU with them (kvplan gpus)")
    if prompt < 1 or output < 1:
        raise UnsupportedError("prompt and output must be at least 1 token", where="--prompt/--output")
    tp = cache.tp
    # fp8 weights run on fp8 tensor cores where the GPU has them; everything else at the bf16 peak (the
    # highest that applies, so the bound stays a floor; weight-only int8/int4 dequantize to bf16)
    if weight_dtype.startswith("fp8") and gpu.fp8_dense_flops:
        peak, peak_name = gpu.fp8_dense_flops, "fp8"
    else:
        peak, peak_name = gpu.bf16_dense_flops, "bf16"
    flops_per_s, bytes_per_s = tp * peak, tp * gpu.hbm_bandwidth_bytes_per_s
    terms = attention_terms(spec)
    w_active = active_weight_bytes(spec, weights_bytes)
    context = prompt + output - 1

    def cache_at(tokens: int) -> int:
        return cache.footprint(tokens, 1).cache_bytes

    read_at = _decode_read(cache, context)  # what one decode step reads of the cache (every rank)
    pre = phase(prefill_flops(spec, prompt, terms=terms), w_active + cache_at(prompt), flops_per_s, bytes_per_s)
    dec = phase(decode_flops(spec, context, terms=terms), w_active + read_at, flops_per_s, bytes_per_s)

    pre_b = dec_b = None
    rate = None
    if batch:
        pre_b = phase(batch * pre.flops, w_active + batch * cache_at(prompt), flops_per_s, bytes_per_s)
        dec_b = phase(batch * dec.flops, w_active + batch * read_at, flops_per_s, bytes_per_s)
        rate = batch / dec_b.seconds

    # generation with a cache: prefill(P) then decode steps at contexts P .. P+O-2; FLOPs sum to prefill(P+O-1)
    decode_bytes = (output - 1) * w_active + _sum_cache(cache, prompt, context - 1)
    cached_flops = prefill_flops(spec, context, terms=terms)
    decode_only = phase(cached_flops - pre.flops, decode_bytes, flops_per_s, bytes_per_s)
    # each phase has its own floor: prefill is compute-bound, decode steps memory-bound (usually)
    gen = Phase(cached_flops, pre.bytes + decode_bytes, pre.compute_s + decode_only.compute_s, pre.memory_s + decode_only.memory_s,
                pre.seconds + decode_only.seconds, f"prefill {pre.bound}, decode {decode_only.bound}")
    nc = phase(no_cache_flops(spec, prompt, output, terms=terms), output * w_active, flops_per_s, bytes_per_s)
    notes = []
    if spec.active_params and spec.active_params < spec.params:
        notes.append("MoE: each token reads only its routed experts; at large batches tokens route to different "
                     "experts, so the weight bytes read per step grow toward the full model (the bound stays a floor)")
    if cache.pp > 1:
        notes.append(f"PP {cache.pp}: stages run one after another for one sequence, so pipeline stages add memory, not speed")
    return LatencyBounds(
        model=spec.name, gpu=gpu.name, tp=tp, pp=cache.pp, kv_dtype=cache.kv_dtype.name, prompt_tokens=prompt,
        output_tokens=output, context=context, batch=batch or 0, peak_flops_per_s=peak, peak_flops_dtype=peak_name,
        hbm_bytes_per_s=gpu.hbm_bandwidth_bytes_per_s, matmul_params=matmul_params(spec), active_weights_bytes=w_active,
        prefill=pre, decode=dec, prefill_batch=pre_b, decode_batch=dec_b, decode_batch_tokens_per_s=rate,
        generate_cached=gen, generate_no_cache=nc, no_cache_flops_ratio=nc.flops / cached_flops,
        no_cache_time_ratio=nc.seconds / gen.seconds, notes=tuple(notes),
    )


def _decode_read(cache: CacheModel, context: int) -> int:
    """Cache bytes one decode step reads with `context` tokens cached (every rank): each layer says what its query
    reads (LayerSpec.decode_read_bytes: all it keeps, or a sparse or compressed layer's share), and its state."""
    total = 0
    for stage in cache.stages:
        for g in stage:
            total += g.count * (g.layer.decode_read_bytes(cache.kv_dtype, cache.tp, context) + g.state_bytes)
    return total * cache.tp


def _sum_cache(cache: CacheModel, first: int, last: int) -> int:
    """sum over c = first..last of _decode_read(cache, c), in closed form per layer group."""
    if last < first:
        return 0
    total = 0
    steps = last - first + 1
    for stage in cache.stages:
        for g in stage:
            total += g.count * (g.layer.decode_read_sum(cache.kv_dtype, cache.tp, first, last) + steps * g.state_bytes)
    return total * cache.tp
