"""Why the cache costs what it does: the per-layer-group derivation with every number substituted, and
what-if variants of the same model side by side. Pure: no typer, rich or yaml.

The derivation follows the groups of cache.CacheModel.stages (layers of one pipeline stage that cost
the same on one TP rank), so its total is, by construction and by test, the `cache_bytes` that
`kvplan estimate` prints.

What-ifs change only the cache layout and keep the weights as they are (a real MHA variant would also
carry larger K/V projections; the weights column would move by those few percent):
- MHA: every attention layer with as many KV heads as query heads;
- MQA: one KV head;
- MLA "of the same size": every attention layer stores one latent of kv_lora_rank + qk_rope_head_dim
  per token with DeepSeek-V2's proportions, kv_lora_rank = 4 x head_dim and qk_rope_head_dim =
  head_dim / 2 (DeepSeek-V2 paper, arXiv:2405.04434, section 2.1.2 and 3.1.2: d_c = 4 d_h = 512,
  d_h^R = d_h / 2 = 64 for d_h = 128);
- KV dtype: bf16, fp8 (and the model's own);
- window: a model with sliding layers without its window; a model without one with a window of W on
  every attention layer, and on alternate layers (Gemma-2's pattern).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kvplan.core.io import JsonResult
from kvplan.core.cache import CacheModel, LayerGroup
from kvplan.core.dtypes import DType, dtype
from kvplan.core.errors import KvplanError
from kvplan.core.spec import LayerSpec, MlaSpec, ModelSpec


@dataclass(frozen=True)
class GroupTerm:
    """One layer group on one GPU of one pipeline stage, and what it adds to the whole deployment."""

    stage: int
    kind: str
    layers: int
    per_token_formula: str  # bytes one token adds to one layer on one GPU, numbers substituted
    token_bytes: int  # that product
    tokens: int  # tokens a sequence keeps in these layers (min(seq, window))
    state_formula: str | None
    state_bytes: int  # per layer, per sequence, per GPU
    sequence_bytes: int  # layers x (token_bytes x tokens + state_bytes): one sequence, one GPU
    gpus: int  # TP ranks holding a copy of this shard
    total_bytes: int  # sequence_bytes x batch x gpus
    total_formula: str


@dataclass(frozen=True)
class WhatIf:
    name: str
    description: str
    kv_bytes_per_token: int | None
    cache_bytes: int | None  # seq x batch, whole deployment
    ratio: float | None  # cache_bytes / the model's own
    max_batch: int | None  # with a GPU: sequences of `seq` tokens that fit
    error: str | None = None


@dataclass(frozen=True)
class ExtraTerm:
    """One term a vLLM launch option adds (explain --vllm-args), with its numbers substituted."""

    option: str  # the option it comes from
    what: str
    formula: str
    bytes: int | None  # per GPU unless the formula says otherwise; None for a count


@dataclass(frozen=True)
class Explanation(JsonResult):
    model: str
    seq: int
    batch: int
    kv_dtype: str
    tp: int
    pp: int
    groups: tuple[GroupTerm, ...]
    kv_bytes: int
    state_bytes: int
    cache_bytes: int
    kv_bytes_per_token: int
    what_ifs: tuple[WhatIf, ...]
    latency: object | None = None  # latency.LatencyBounds when a GPU with bandwidth and FLOP/s figures was given
    notes: tuple[str, ...] = ()
    extra_terms: tuple[ExtraTerm, ...] = ()  # what a vLLM launch's options add (explain --vllm-args)


@dataclass(frozen=True)
class EngineExplanation(Explanation):
    """An explanation with the engine's estimate of the same launch (explain --engine): its --json is the
    explanation's keys and, under `engine_estimate`, what `estimate --engine --json` prints."""

    engine_estimate: object | None = None


def _num(n: int) -> str:
    return f"{n:,}"


def _elem_bytes(kv: DType) -> str:
    b = kv.bits / 8
    return f"{int(b)} B" if b == int(b) else f"{b:g} B"


def _token_formula(group: LayerGroup, spec: ModelSpec, kv: DType, tp: int) -> str:
    """The layer's own product (LayerSpec.token_formula), the KV dtype's scales on top, and the result."""
    text = group.layer.token_formula(f"{_elem_bytes(kv)} ({kv.name})", _heads_text(group, spec, tp))
    if text is None:
        return "0 (no per-token cache)"
    if kv.scale_bits:
        text += f" + {float(kv.scale_bits * 16):g} bits of block scale per 16 values"
    if kv.head_bytes:
        text += f" + {kv.head_bytes} B of K and V scales per head"
    return f"{text} = {_num(group.token_bytes)} B"


def _heads_text(group: LayerGroup, spec: ModelSpec, tp: int) -> str:
    if tp == 1:
        return f"{group.kv_heads_per_rank} KV heads"
    kv = next((l.kv_heads for l in spec.layer_specs if l.headed), group.kv_heads_per_rank)
    if kv >= tp:
        return f"({kv} KV heads / TP {tp} = {group.kv_heads_per_rank} per GPU)"
    return f"(1 KV head per GPU: {kv} heads replicated over TP {tp})"


def _state_formula(spec: ModelSpec, group: LayerGroup, tp: int) -> str | None:
    if not group.layer.recurrent or spec.state is None:
        return None
    s = spec.state
    split = f" (first dim / TP {tp})" if tp > 1 else ""
    return (f"conv {list(s.conv_shape)} x {_elem_bytes(dtype(s.conv_dtype))} + recurrent {list(s.recurrent_shape)} x "
            f"{_elem_bytes(dtype(s.recurrent_dtype))}{split} = {_num(group.state_bytes)} B per sequence")


def derivation(spec: ModelSpec, cache: CacheModel, seq: int, batch: int) -> tuple[GroupTerm, ...]:
    out = []
    for stage, groups in enumerate(cache.stages):
        for g in groups:
            tokens = g.layer.tokens_kept(seq)
            per_seq = g.kv_bytes(seq) + g.count * g.state_bytes
            total = per_seq * batch * cache.tp
            formula = g.layer.seq_formula(seq, g.count, g.token_bytes, g.state_bytes, g.kv_bytes(seq))
            formula += f" x {batch} seq x {cache.tp} GPU{'s' if cache.tp > 1 else ''} = {_num(total)} B"
            out.append(GroupTerm(stage=stage, kind=g.kind, layers=g.count, per_token_formula=_token_formula(g, spec, cache.kv_dtype, cache.tp),
                                 token_bytes=g.token_bytes, tokens=tokens, state_formula=_state_formula(spec, g, cache.tp),
                                 state_bytes=g.state_bytes, sequence_bytes=per_seq, gpus=cache.tp, total_bytes=total, total_formula=formula))
    return tuple(out)


# ------------------------------------------------------------------ what-if variants

def _with_layers(spec: ModelSpec, name: str, layers: list[LayerSpec], **changes) -> ModelSpec:
    return dataclasses.replace(spec, name=f"{spec.name} ({name})", layer_specs=tuple(layers), **changes)


def variant_mha(spec: ModelSpec) -> ModelSpec:
    heads, hd, vd = spec.attention_heads, spec.head_dim, spec.v_head_dim or spec.head_dim
    layers = [l.with_kv_heads(heads, hd, vd) for l in spec.layer_specs]
    return _with_layers(spec, "MHA", layers, kv_heads=heads)


def variant_mqa(spec: ModelSpec) -> ModelSpec:
    hd, vd = spec.head_dim, spec.v_head_dim or spec.head_dim
    layers = [l.with_kv_heads(1, hd, vd) for l in spec.layer_specs]
    return _with_layers(spec, "MQA", layers, kv_heads=1)


def mla_like(spec: ModelSpec) -> MlaSpec:
    """DeepSeek-V2's proportions for this model's head_dim (d_c = 4 d_h, d_h^R = d_h / 2)."""
    if spec.mla is not None:
        return spec.mla
    return MlaSpec(kv_lora_rank=4 * spec.head_dim, qk_rope_head_dim=max(spec.head_dim // 2, 1))


def variant_mla(spec: ModelSpec) -> ModelSpec:
    """Full-attention layers store one latent instead of K and V; sliding layers keep their K/V and window
    (kvplan's MLA layers keep every token, so converting them would also drop the window: two changes)."""
    mla = mla_like(spec)
    layers = [l.as_latent(mla) for l in spec.layer_specs]
    return _with_layers(spec, "MLA", layers, mla=mla)


def variant_no_window(spec: ModelSpec) -> ModelSpec:
    layers = [l.without_window() for l in spec.layer_specs]
    return _with_layers(spec, "no window", layers)


def variant_window(spec: ModelSpec, window: int, *, every: int = 1) -> ModelSpec:
    """Sliding window on full-attention layers: all of them (every=1), or every other one counting from the
    first (every=2, Gemma-2's pattern of alternating local and global layers)."""
    layers, seen = [], 0
    for l in spec.layer_specs:
        windowed = l.with_window(window)
        if windowed is not None:
            if seen % every == 0:
                l = windowed
            seen += 1
        layers.append(l)
    label = f"window {window:,}" + ("" if every == 1 else " on alternate layers")
    return _with_layers(spec, label, layers, sliding_window=window)


def what_ifs(spec: ModelSpec, kv: DType, *, tp: int, pp: int, seq: int, batch: int, window: int,
             room: int | None) -> tuple[WhatIf, ...]:
    """The model as it is first, then each variant; `room` (bytes per GPU for the cache) gives max_batch."""
    # a window to drop (sliding layers): dropping it changes a layer
    has_sliding = any(l.without_window() is not l for l in spec.layer_specs)
    heads = spec.attention_heads
    # each layer names its own attention (GQA, MLA + DSA index keys, compressed sparse attention, ...)
    own = ", ".join(dict.fromkeys(label for l in spec.layer_specs if (label := l.attention_label(heads)))) or "no cache"
    # what the KV-head what-ifs rebuild (K/V heads, or a latent), as those layers are now
    rebuilt = {l.attention_label(heads) for l in spec.layer_specs
               if l.with_kv_heads(1, spec.head_dim, spec.head_dim) is not l}
    has_attention = bool(rebuilt)
    cases: list[tuple[str, str, ModelSpec, DType]] = [
        (f"as configured ({own})", _layout_words(spec, kv), spec, kv)]
    if has_attention:
        if rebuilt != {"MHA"}:
            cases.append(("MHA", f"{heads} KV heads per attention layer (one per query head)", variant_mha(spec), kv))
        if rebuilt != {"MQA"}:
            cases.append(("MQA", "1 KV head per attention layer", variant_mqa(spec), kv))
        if rebuilt != {"MLA"}:
            m = mla_like(spec)
            where = "full-attention layer (sliding layers unchanged)" if has_sliding else "layer"
            cases.append(("MLA", f"one latent of {m.kv_lora_rank} + {m.qk_rope_head_dim} per token per {where} "
                                 "(DeepSeek-V2 proportions: 4 x head_dim + head_dim / 2)", variant_mla(spec), kv))
    if any(l.tokens_kept(1) for l in spec.layer_specs):
        # the cache dtype applies to every layer that keeps tokens: sparse (index keys) and compressed ones too
        for name in ("bf16", "fp8_e4m3", "int4"):
            other = dtype(name)
            if other != kv:
                cases.append((f"KV {other.name}", f"the same layout, K/V stored as {other.name}", spec, other))
    if has_attention:
        if has_sliding:
            cases.append(("no window", "sliding layers keep every token", variant_no_window(spec), kv))
        elif any(l.with_window(window) is not None for l in spec.layer_specs):
            cases.append((f"window {window:,}", f"every full-attention layer keeps the last {window:,} tokens", variant_window(spec, window), kv))
            cases.append((f"window {window:,}, alternate", f"every other attention layer slides over {window:,} tokens (Gemma-2's pattern)",
                          variant_window(spec, window, every=2), kv))
    base = None
    out = []
    for name, description, variant, kv_dtype in cases:
        try:
            cache = CacheModel(variant, kv_dtype, tp, pp)
            total = cache.footprint(seq, batch).cache_bytes
            max_batch = None
            if room is not None:
                per = cache.max_rank_footprint(seq, 1).cache_bytes
                max_batch = max(room, 0) // per if per else None
            base = total if base is None else base
            out.append(WhatIf(name, description, cache.kv_bytes_per_token, total, total / base if base else None, max_batch))
        except KvplanError as err:
            out.append(WhatIf(name, description, None, None, None, None, error=err.one_line()))
    return tuple(out)


def _layout_words(spec: ModelSpec, kv: DType) -> str:
    """The layout and what its layers store per token, each kind in its own words: an MLA layer keeps one latent,
    not the query heads x head_dim the config also lists."""
    stored = dict.fromkeys(w for w in (l.stored_words() for l in spec.layer_specs) if w is not None)
    return ", ".join((spec.layout_summary(), *stored, f"KV {kv.name}"))


def explain(spec: ModelSpec, cache: CacheModel, *, seq: int, batch: int, window: int = 4096, room: int | None = None,
            latency=None) -> Explanation:
    groups = derivation(spec, cache, seq, batch)
    whole = cache.footprint(seq, batch)
    notes = []
    if cache.pp > 1:
        notes.append(f"PP {cache.pp}: each stage's layers are listed separately; its GPUs hold only those")
    if any(l.recurrent for l in spec.layer_specs):
        notes.append("state layers keep a fixed amount per sequence whatever the length")
    return Explanation(model=spec.name, seq=seq, batch=batch, kv_dtype=cache.kv_dtype.name, tp=cache.tp, pp=cache.pp,
                       groups=groups, kv_bytes=whole.kv_bytes, state_bytes=whole.state_bytes, cache_bytes=whole.cache_bytes,
                       kv_bytes_per_token=cache.kv_bytes_per_token,
                       what_ifs=what_ifs(spec, cache.kv_dtype, tp=cache.tp, pp=cache.pp, seq=seq, batch=batch, window=window, room=room),
                       latency=latency, notes=tuple(notes))


# ------------------------------------------------------------------ what a vLLM launch's options add

def extra_terms(result) -> tuple[ExtraTerm, ...]:
    """The terms of a vLLM estimate's `features` (kvplan/engines/vllm/features.py VllmFeatures), each with its formula."""
    f = result.features
    if f is None:
        return ()
    out: list[ExtraTerm] = []
    bpb = result.bytes_per_block
    s = f.speculative
    if s is not None:
        if s.uses_gpu:
            out.append(ExtraTerm("speculative_config", f"{s.method} drafter weights on one GPU", s.formula,
                                 s.draft_weights_per_gpu_bytes))
            out.append(ExtraTerm("speculative_config", "drafter KV layers in the pool",
                                 f"{s.draft_kv_layers} attention layer(s) in {s.draft_kv_dtype} share the {result.block_size}-token "
                                 f"blocks of the target's; a block is {bpb:,} B with them" if bpb else
                                 f"{s.draft_kv_layers} attention layer(s) in {s.draft_kv_dtype}", None))
            out.append(ExtraTerm("speculative_config", "lookahead slots",
                                 f"{s.lookahead_tokens} tokens past a running request's, capped at max_model_len "
                                 f"{result.seq:,}: no extra block for a request of max_model_len", None))
            if s.decode_requests_per_step is not None:
                out.append(ExtraTerm("speculative_config", "requests one decode step verifies",
                                     f"max_num_batched_tokens {result.max_num_batched_tokens:,} // (1 + {s.num_speculative_tokens}) "
                                     f"= {s.decode_requests_per_step:,}", None))
        else:
            out.append(ExtraTerm("speculative_config", f"{s.method}: no GPU memory", s.formula, 0))
    if f.lora is not None:
        lo = f.lora
        for m in lo.modules:
            count = f"x {lo.layers} layers " if m.per_layer else ""
            elements = m.elements * (lo.layers if m.per_layer else 1)
            out.append(ExtraTerm("enable_lora", f"LoRA slots of {m.name}",
                                 f"({m.formula}) {count}x {lo.dtype_bits // 8} B", elements * lo.dtype_bits // 8))
        out.append(ExtraTerm("enable_lora", "LoRA slots on one GPU", "the modules above together", lo.gpu_bytes_per_rank))
        out.append(ExtraTerm("max_cpu_loras", "host adapter cache, one worker",
                             f"{lo.cpu_loras} adapter(s) at rank {lo.max_lora_rank}, every module whole", lo.cpu_cache_bytes))
    if f.weight_offload is not None:
        w = f.weight_offload
        out.append(ExtraTerm("cpu_offload_gb", "weights moved to host memory per GPU",
                             f"{w.parameters_moved} parameter(s) of the decoder layers, in order, until {w.requested_bytes:,} B "
                             "is reached (the last one whole)", -w.offloaded_bytes))
    if f.kv_offload is not None:
        for tier in f.kv_offload.tiers:
            out.append(ExtraTerm("kv_offloading_size" if f.kv_offload.backend == "native" else "kv_transfer_config",
                                 f"KV {tier.name} tier ({f.kv_offload.backend})",
                                 "; ".join(f.kv_offload.notes) + f": {tier.tokens:,} tokens", tier.host_bytes))
    p = f.parallel
    if p is not None:
        if f.expert_weights_per_gpu_bytes is not None and p.expert_share is not None:
            num, den = p.expert_share
            out.append(ExtraTerm("enable_expert_parallel" if p.experts_per_rank else "data_parallel_size",
                                 "routed experts on one GPU", f"the experts' weights x {num} / {den}", f.expert_weights_per_gpu_bytes))
        if p.kv_shards > 1:
            out.append(ExtraTerm("decode_context_parallel_size", "KV split along the sequence",
                                 f"each of {p.kv_shards} ranks keeps cdiv({result.seq:,}, {p.kv_shards}) tokens of a request", None))
        if p.replicas > 1 and f.deployment_concurrency is not None:
            out.append(ExtraTerm("data_parallel_size", "the deployment's concurrency",
                                 f"{p.replicas} replicas x {result.max_concurrency:.2f} = {f.deployment_concurrency:.2f}", None))
    x = f.kv_transfer
    if x is not None:
        out.append(ExtraTerm("kv_transfer_config", "KV one prompt token sends",
                             f"{x.bytes_per_token_per_rank:,} B from each of {result.tp} TP rank(s) = {x.bytes_per_token:,} B", None))
        if x.gpu_runtime_bytes:
            out.append(ExtraTerm("kv_transfer_config", "GPU receive buffers (allocated after the pool)",
                                 "kv_buffer_size", x.gpu_runtime_bytes))
    if f.link is not None:
        ln = f.link
        util = f", {ln.utilisation * 100:.1f}% of the {ln.link}" if ln.utilisation is not None else ""
        out.append(ExtraTerm("kv_transfer_config", "link bandwidth per GPU",
                             f"{ln.rate:g} req/s x {ln.prompt_tokens:,} tokens x {x.bytes_per_token:,} B / {result.tp} = "
                             f"{ln.bytes_per_s_per_gpu / 1e9:,.2f} GB/s{util}", None))
    if f.host_memory_bytes:
        out.append(ExtraTerm("", "host memory, one replica", "the host terms above together", f.host_memory_bytes))
    return tuple(out)


def trtllm_extra_terms(result) -> tuple[ExtraTerm, ...]:
    """The terms of a TensorRT-LLM estimate's `features` (kvplan/engines/trtllm/features.py TrtllmFeatures)."""
    f = result.features
    if f is None:
        return ()
    out: list[ExtraTerm] = []
    if f.attention_dp:
        out.append(ExtraTerm("enable_attention_dp", "KV heads on one rank",
                             f"every KV head of the rank's own requests (tp_size 1 for the cache): {result.bytes_per_token:,} B "
                             "per token", None))
        out.append(ExtraTerm("enable_attention_dp", "the deployment's pools",
                             f"{f.pools} ranks x {result.max_concurrency} requests of {result.seq:,} = "
                             f"{f.deployment_concurrency}" if f.deployment_concurrency is not None else
                             f"{f.pools} ranks, each its own pool", None))
    s = f.speculative
    if s is not None:
        out.append(ExtraTerm("speculative_config", f"{s.decoding_type} layers in the KV cache manager",
                             f"{s.kv_layers} layer(s) with the target's attention: the pool stores {result.bytes_per_token:,} B "
                             f"per token, the estimator counts {result.estimator_bytes_per_token:,} B", None))
        out.append(ExtraTerm("speculative_config", "drafter weights on one GPU", s.formula, s.weights_per_gpu_bytes))
        if s.extra_kv_tokens:
            out.append(ExtraTerm("speculative_config", "extra KV tokens per sequence",
                                 f"max_draft_len {s.max_draft_len} - 1 = {s.extra_kv_tokens}", None))
    if f.weights_added_per_gpu_bytes:
        adding = [o for o in f.options if o in ("enable_attention_dp", "speculative_config")]
        out.append(ExtraTerm(", ".join(adding), "weights added on one GPU", "the drafter's, and attention DP's whole "
                             "attention and dense weights", f.weights_added_per_gpu_bytes))
    lo = f.lora
    if lo is not None:
        out.append(ExtraTerm("lora_config", "device PEFT cache (allocated after the pool)", lo.formula, lo.device_bytes))
        out.append(ExtraTerm("lora_config", "host PEFT cache, one rank",
                             f"max_cpu_loras {lo.max_cpu_loras}" if lo.max_cpu_loras else "the 1 GiB default", lo.host_bytes))
    t = f.transceiver
    if t is not None:
        fits = {True: "fits beside the pool", False: "does not fit beside the pool", None: "needs a GPU to place"}
        out.append(ExtraTerm("cache_transceiver_config", f"{t.backend} transfer buffers (allocated after the pool)",
                             f"{t.formula}; {fits[f.after_pool_fits]}", t.total_bytes))
    return tuple(out)


# ------------------------------------------------------------------ what an SGLang launch's options add

def sglang_extra_terms(result) -> tuple[ExtraTerm, ...]:
    """The terms of an SGLang estimate's `features` (kvplan/engines/sglang/features.py SglangFeatures)."""
    f = result.features
    if f is None:
        return ()
    out: list[ExtraTerm] = []
    s = f.speculative
    if s is not None:
        out.append(ExtraTerm("--speculative-algorithm", f"{s.algorithm} draft weights on one GPU", s.formula,
                             s.draft_weights_per_gpu_bytes))
        out.append(ExtraTerm("--speculative-algorithm", "the draft's own embedding (and head) while the pool is sized",
                             "freed after init_target_memory_pool (eagle_worker_v2.py alloc_memory_pool: init_lm_head)",
                             s.draft_duplicates_per_gpu_bytes))
        out.append(ExtraTerm("--speculative-algorithm", "the draft's share of the pool's cell",
                             f"int({s.target_cell_bytes:,} B x {s.draft_layers} draft layer(s) / the target's layers) "
                             f"= {s.draft_cell_bytes:,} B per token: the pool divides the rest by "
                             f"{s.target_cell_bytes + s.draft_cell_bytes:,} B", None))
        out.append(ExtraTerm("--speculative-num-steps", "draft shape",
                             f"{s.num_steps} steps, top-k {s.eagle_topk}, {s.num_draft_tokens} draft tokens verified per "
                             "request and step", None))
        if s.max_running_requests_default is not None:
            out.append(ExtraTerm("--max-running-requests", "running requests",
                                 f"{s.max_running_requests_default} when speculative decoding is on and none is given", None))
    lo = f.lora
    if lo is not None:
        for m in lo.modules:
            out.append(ExtraTerm("--enable-lora", f"LoRA slots of {m.name}",
                                 f"(A {list(m.a_shape)} + B {list(m.b_shape)}) x {lo.layers} layers x {lo.dtype_bits // 8} B",
                                 m.bytes_per_gpu))
        out.append(ExtraTerm("--enable-lora", "LoRA slots on one GPU", "the modules above, before the pool is sized",
                             lo.gpu_bytes_per_rank))
    hc = f.hicache
    if hc is not None:
        how = (f"--hicache-size {hc.size_gb} GB // {hc.bytes_per_token:,} B" if hc.size_gb else
               f"{hc.device_tokens:,} device tokens x {hc.ratio:g}" + (" (at most: SGLang lowers the default to fit "
                                                                       "the host's free memory)" if hc.auto_sized else ""))
        out.append(ExtraTerm("--enable-hierarchical-cache", "host KV tier, one rank",
                             f"{how}, whole pages + 1: {hc.host_tokens:,} tokens x {hc.bytes_per_token:,} B",
                             hc.host_bytes_per_rank))
        out.append(ExtraTerm("--enable-hierarchical-cache", "host memory, every rank", f"{hc.ranks} rank(s)", hc.host_bytes))
    a = f.dp_attention
    if a is not None:
        out.append(ExtraTerm("--enable-dp-attention", "attention and embedding weights over the attention-TP group",
                             a.formula, a.weights_added_per_gpu_bytes))
        out.append(ExtraTerm("--enable-dp-attention", "one rank's cell",
                             f"{a.kv_heads_per_rank} KV head(s) per rank at attention TP {a.attn_tp_size}: "
                             f"{a.cell_bytes:,} B per token", None))
        if a.deployment_max_batch is not None:
            out.append(ExtraTerm("--enable-dp-attention", "the deployment's requests",
                                 f"{a.attn_dp_size} workers x {a.deployment_max_batch // a.attn_dp_size} held at once = "
                                 f"{a.deployment_max_batch}", None))
    d = f.disaggregation
    if d is not None:
        out.append(ExtraTerm("--disaggregation-mode", f"{d.mode} server's KV one prompt token moves",
                             f"{d.bytes_per_token_per_rank:,} B to each of {d.ranks} attention-TP rank(s) = "
                             f"{d.bytes_per_token:,} B", None))
        if d.mode == "decode":
            out.append(ExtraTerm("--num-reserved-decode-tokens", "admission headroom",
                                 f"a request is admitted while the free tokens cover its prompt + {d.reserved_decode_tokens}",
                                 None))
            if d.extra_slots:
                out.append(ExtraTerm("--disaggregation-decode-extra-slots", "request slots for requests being received",
                                     f"{d.extra_slots} int32 rows of max context + draft tokens + 4, after the pool",
                                     d.extra_slots_bytes))
        if d.link is not None:
            ln = d.link
            util = f", {ln.utilisation * 100:.1f}% of the {ln.link}" if ln.utilisation is not None else ""
            out.append(ExtraTerm("--disaggregation-mode", "link bandwidth per GPU",
                                 f"{ln.rate:g} req/s x {ln.prompt_tokens:,} tokens x {d.bytes_per_token:,} B / {d.ranks} = "
                                 f"{ln.bytes_per_s_per_gpu / 1e9:,.2f} GB/s{util}", None))
    return tuple(out)
