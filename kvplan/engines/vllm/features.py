"""The extra options of a vLLM launch (EngineRequest.features), turned into what engine.py and budget.py compute with:
the layers of the one KV pool (the target's, then the drafter's), the block size the attention backend brings, how
far a request's tokens are split (decode context parallelism), and the terms each option adds to one GPU's budget
(weights, activations, CUDA graphs) and to host memory. The arithmetic is in kvplan/engines/features/; this module
only applies it the way vLLM does (each step cites the vLLM file), by the rules of the launch's own release line
(option_rules.py), and refuses what it does not model (exit 3).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from kvplan.core.dtypes import DType, dtype
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.layers import LayerSpec, StateSpec
from kvplan.core.spec import ModelSpec
from kvplan.engines import features as shared
from kvplan.engines.features import Features
from kvplan.engines.features import backend as backends
from kvplan.engines.features import parallel
from kvplan.engines import lazy
from kvplan.engines.api import EngineRequest
from kvplan.engines.runtime.weights import expert_bytes, linear_bits, stage_weight_bytes
from kvplan.engines.vllm import budget as budget_model, kv_formats, releases
from kvplan.engines.vllm import specs as vspecs

if TYPE_CHECKING:  # annotations; the code reaches them as shared.<module>, loaded when a launch sets the option
    from kvplan.engines.features import lora
    from kvplan.engines.vllm import feature_terms as records
    from kvplan.engines.vllm.feature_terms import BudgetTerms as BudgetTerms
    from kvplan.engines.vllm.feature_terms import SpeculativeSummary as SpeculativeSummary
    from kvplan.engines.vllm.feature_terms import StageTerms as StageTerms
    from kvplan.engines.vllm.feature_terms import VllmFeatures as VllmFeatures
else:
    # the terms records (feature_terms.py) load when a launch sets an option: a plain estimate never builds their
    # classes (benchmarks/cold_start.py); `features.VllmFeatures` and the others still answer (PEP 562)
    records = lazy.module("kvplan.engines.vllm.feature_terms")
    __getattr__ = lazy.module_getattr(__name__, {name: "kvplan.engines.vllm.feature_terms" for name in (
        "SpeculativeSummary", "VllmFeatures", "StageTerms", "BudgetTerms")})

GIB = 2**30


@dataclass(frozen=True)
class CacheLayer:
    """One layer with a KV cache or state in the pool, as vLLM registers it."""

    index: int  # the target's layer index; the drafter's follow the target's layers
    layer: LayerSpec
    kv: DType  # its KV-cache dtype
    draft: bool  # the drafter's


@dataclass(frozen=True)
class Plan:
    """What the options change before the layout is built."""

    spec: ModelSpec  # the target as vLLM builds it
    cache_layers: tuple[CacheLayer, ...]  # target layers (index = layer), then the drafter's
    draft_layers: int
    block_size: int | None  # the backend's, when the user gave none
    backend: backends.BackendChoice | None
    token_shards: int  # a request's tokens split over this many ranks (DCP; 0.19: DCP x PCP)
    hybrid_manager_off: bool
    mamba_speculative_blocks: int
    num_gpu_blocks_override: int | None
    refusal: str | None  # vLLM does not start, in its words
    notes: tuple[str, ...]


def features_of(req: EngineRequest) -> Features:
    return req.features or Features()


def _rules(rel):
    # the option rules (about 2 ms at start-up, python -X importtime) judge a launch's options: an estimate without
    # --vllm-args never asks for them
    from kvplan.engines.vllm import option_rules

    return option_rules.rules(rel)


def speculative_as_built(f: Features, rel):
    """The launch's speculative options with the EAGLE-3 head as the release builds it (option_rules.py
    EAGLE3_ONE_LAYER, EAGLE3_FC_THREE): older releases ignore the head config's layer count and aux states."""
    sp = f.speculative
    if sp is None or sp.head is None or not sp.head.eagle3:
        return sp
    rules = _rules(rel)
    head = sp.head
    if rules.eagle3_one_layer and head.layers != 1:
        head = dataclasses.replace(head, layers=1)
    if rules.eagle3_fc_three and head.aux_hidden_states != 3:
        head = dataclasses.replace(head, aux_hidden_states=3)
    return sp if head is sp.head else dataclasses.replace(sp, head=head)


def check_options(f: Features, rules, spec: ModelSpec) -> None:
    """Exit 3 for an option the release does not have, or whose rule on this line was not read (option_rules.py)."""
    par = f.parallel
    given = {"kv_cache_dtype_skip_layers": bool(f.kv_cache_dtype_skip_layers),
             "mamba_cache_dtype": f.mamba_cache_dtype is not None, "mamba_ssm_cache_dtype": f.mamba_ssm_cache_dtype is not None,
             "language_model_only": f.language_model_only,
             "cpu_offload_params": bool(f.weight_offload and f.weight_offload.params),
             "lora_target_modules": bool(f.lora and f.lora.target_modules),
             "decode_context_parallel_size": bool(par and par.decode_context_parallel_size > 1),
             "prefill_context_parallel_size": bool(par and par.prefill_context_parallel_size > 1),
             "kv_offloading_size": bool(f.kv_offload and f.kv_offload.where.replace("-", "_").endswith("kv_offloading_size"))}
    for option, used in given.items():
        if used and not rules.has(option):
            rules.refuse(f"--{option.replace('_', '-')} does not exist (first in vLLM {rules.first(option)})",
                         where=option, hint=f"judge it with --engine-version {rules.first(option)} or newer")
    if par is not None and par.decode_context_parallel_size > 1 and not rules.dcp_gqa and spec.mla is None:
        rules.refuse("decode context parallelism of GQA/MQA attention does not start (only the MLA backends return "
                     "the softmax LSE it needs: v1/worker/gpu_model_runner.py need_to_return_lse_for_decode)",
                     where=par.where, hint="vLLM 0.12 or newer runs it")
    if f.lora is not None and rules.lora_extra_vocab:
        rules.refuse("LoRA slots with lora_extra_vocab_size's extra embedding and head rows (config/lora.py, until "
                     "0.11) are not modelled", where=f.lora.where, hint="judge it with vLLM 0.12 or newer")
    if f.kv_offload is not None and f.kv_offload.backend == "native" and rules.native_kv_offload is None:
        rules.refuse("the native KV offload tier sized by kv_bytes_per_rank / num_cpu_blocks (config/vllm.py "
                     "_post_init_kv_transfer_config, 0.11.2-0.13) was not read", where=f.kv_offload.where,
                     hint="vLLM 0.14 or newer sizes it by cpu_bytes_to_use, which kvplan models")


def backend_rules_apply(rel) -> bool:
    """Whether backend.py's attention-backend priorities (read in 0.19.0 and 0.33.0) are the release's: from 0.18
    FLASH_ATTN_MLA leads on Hopper and FlashInfer MLA on SM 10.x (releases.Release.mla_block_hopper / _sm10x);
    before, the release table's MLA block sizes (engine._default_block_size) hold."""
    return rel.mla_block_hopper == 16 and rel.mla_block_sm10x == 32


def _named(f: Features) -> tuple[str, ...]:
    """The options in play, as vLLM names them, in the order the features are read."""
    named = (("speculative_config", f.speculative), ("enable_lora", f.lora), ("cpu_offload_gb", f.weight_offload),
             ("kv_offloading_size", f.kv_offload), ("parallel", f.parallel and not f.parallel.default),
             ("kv_transfer_config", f.kv_transfer))
    kept = ("quantization", "mamba_cache_dtype", "mamba_ssm_cache_dtype", "num_gpu_blocks_override", "attention_backend",
            "kv_cache_dtype_skip_layers", "disable_sliding_window", "language_model_only", "text_only", "enforce_eager")
    return tuple(name for name, on in named if on) + tuple(name for name in kept if getattr(f, name))


# --------------------------------------------------------------------------------------------- the model as built

def built_spec(spec: ModelSpec, f: Features) -> tuple[ModelSpec, list[str]]:
    """The target with the options that change how vLLM builds it applied."""
    notes = []
    if f.disable_sliding_window and any(layer.windowed for layer in spec.layer_specs):
        # config/model.py: hf_text_config.sliding_window = None after the length is capped to the window
        layers = tuple(vspecs.without_sliding_window(layer) for layer in spec.layer_specs)
        spec = dataclasses.replace(spec, layer_specs=layers, sliding_window=None)
        notes.append("--disable-sliding-window: sliding layers keep every token, and max_model_len may not exceed the window")
    if f.language_model_only and spec.vision_params:
        # the vision tower is not built: no weights, no encoder profile
        vision_bytes = math.ceil(spec.vision_params * dtype(spec.dtype).bits / 8)  # the tower stays 16-bit when quantized
        spec = dataclasses.replace(spec, params=spec.params - spec.vision_params, vision_params=None,
                                   weights_bytes=spec.weights_bytes - vision_bytes if spec.weights_bytes else None)
        notes.append("--language-model-only: the vision tower is not loaded")
    if (f.mamba_cache_dtype or f.mamba_ssm_cache_dtype) and spec.state is not None:
        state = spec.state
        conv = _mamba_dtype(f.mamba_cache_dtype) or state.conv_dtype
        hooked = state.recurrent_dtype != spec.dtype  # a model hook chose it (Nemotron-H float32), kept for "auto"
        recurrent = _mamba_dtype(f.mamba_ssm_cache_dtype) or (state.recurrent_dtype if hooked else conv)
        new = StateSpec(state.conv_shape, state.recurrent_shape, conv, recurrent)
        layers = tuple(dataclasses.replace(layer, state=new) if layer.recurrent else layer for layer in spec.layer_specs)
        spec = dataclasses.replace(spec, state=new, layer_specs=layers)
        notes.append(f"Mamba state: conv {conv}, recurrent {recurrent} (model_executor/layers/mamba/mamba_utils.py "
                     "MambaStateDtypeCalculator: the SSM dtype 'auto' follows the conv dtype)")
    elif f.mamba_cache_dtype or f.mamba_ssm_cache_dtype:
        notes.append("--mamba-cache-dtype / --mamba-ssm-cache-dtype: the model has no Mamba layers; nothing changes")
    return spec, notes


def _mamba_dtype(name: str | None) -> str | None:
    if name in (None, "auto"):
        return None
    return dtype(name).name


def skipped_layers(f: Features, spec: ModelSpec, rel, kv: DType, notes: list[str]) -> tuple[str, ...]:
    """--kv-cache-dtype-skip-layers as vLLM ends up with it: the launch's, and the boundary layers TurboQuant adds
    (kv_formats.boundary_skip_layers)."""
    hybrid = vspecs.any_state(spec.layer_specs)
    boundary = kv_formats.boundary_skip_layers(kv.name, version=rel.version, layers=spec.layers, hybrid=hybrid)
    if boundary:
        notes.append(f"{kv.name}: vLLM keeps layers {', '.join(boundary)} in the model dtype (TurboQuant's boundary "
                     "protection, engine/arg_utils.py get_boundary_skip_layers)")
    return tuple(dict.fromkeys((*f.kv_cache_dtype_skip_layers, *boundary)))


def skip_layer(index: int, layer: LayerSpec, skip: tuple[str, ...]) -> bool:
    """model_executor/layers/attention/attention.py: a layer whose index is listed, or any sliding layer when
    'sliding_window' is, keeps its KV in the model dtype (kv_cache_dtype 'auto')."""
    return str(index) in skip or ("sliding_window" in skip and vspecs.sliding(layer))


# --------------------------------------------------------------------------------------------- the plan

def plan(req: EngineRequest, rel, kv: DType, act: DType, kv_names: dict[str, str]) -> Plan:
    """The pool's layers, block size and splits for this launch (`kv_names`: vLLM's --kv-cache-dtype spellings, for
    the drafter's own kv_cache_dtype)."""
    f = features_of(req)
    rules = _rules(rel) if f.any else None
    if rules is not None:
        check_options(f, rules, req.spec)
    spec, notes = built_spec(req.spec, f)
    refusal = None
    if f.kv_cache_dtype_skip_layers and kv.name == act.name:
        notes.append("--kv-cache-dtype-skip-layers: the KV cache is already in the model dtype; nothing changes")
    skip = skipped_layers(f, spec, rel, kv, notes)
    if skip and rules is None:
        rules = _rules(rel)
    layers = _target_layers(f, spec, rules, skip, kv, act, notes)
    sp = speculative_as_built(f, rel)
    draft, mamba_spec_blocks = _add_draft_layers(layers, sp, rules, req, spec, kv, act, kv_names)
    block_size, backend_choice = _block_size(req, rel, f, spec, layers, notes)
    par = f.parallel or parallel.ParallelOptions()
    shards = par.decode_context_parallel_size
    if shards > 1 and rules.context_shards == "dcp_x_pcp":  # v1/kv_cache_interface.py, 0.12-0.25
        shards *= par.prefill_context_parallel_size
    if shards > 1 and vspecs.any_windowed(c.layer for c in layers):
        raise UnsupportedError("decode context parallelism with sliding-window or chunked layers is not modelled "
                               "(vLLM 0.19 asserts 'DCP not support sliding window')", where=par.where)
    hma_off = False
    if f.kv_transfer is not None and not shared.disagg.supports_hma(f.kv_transfer, rules.connectors_hma):
        hma_off = True
    if spec.attention_chunk_size is not None and sp is not None and sp.method in ("eagle", "eagle3", "mtp"):
        hma_off = True  # config/vllm.py: chunked local attention + EAGLE turns the hybrid manager off
        notes.append("chunked local attention with EAGLE: vLLM turns its hybrid KV cache manager off, so chunked layers "
                     "are charged the whole max_model_len")
    if hma_off and vspecs.any_state(c.layer for c in layers):
        refusal = (f"vLLM does not start: {f.kv_transfer.connector if f.kv_transfer else 'this launch'} turns the hybrid KV "
                   "cache manager off, and hybrid Mamba models require it")
    if f.num_gpu_blocks_override is not None and f.num_gpu_blocks_override < 1:
        raise InputError(f"must be at least 1, got {f.num_gpu_blocks_override}", where="num_gpu_blocks_override")
    return Plan(spec=spec, cache_layers=tuple(layers), draft_layers=draft, block_size=block_size, backend=backend_choice,
                token_shards=shards, hybrid_manager_off=hma_off, mamba_speculative_blocks=mamba_spec_blocks,
                num_gpu_blocks_override=f.num_gpu_blocks_override, refusal=refusal, notes=tuple(notes))


# --------------------------------------------------------------------------------------------- weights and budget

def draft_weights_per_gpu(req: EngineRequest, spec: ModelSpec, act: DType, rel) -> tuple[int, str]:
    """The drafter's weights on one GPU, and how they were counted."""
    sp = speculative_as_built(features_of(req), rel)
    if sp is None or sp.method in shared.speculative.HOST_METHODS:
        return 0, "no drafter weights"
    tp = req.tp
    if sp.method == "draft_model":
        draft = sp.draft_spec
        b = stage_weight_bytes(draft, None, dtype(draft.dtype), tp, 1)[0]
        return b, f"draft model {draft.name}: its own weights / TP {tp} (embedding and head included), rotary cache"
    if sp.method == "dflash":
        w = shared.speculative.dflash_weights(sp.head, spec.vocab_size)
        b = w.bytes_per_gpu(tp, Fraction(act.bits))
        return b, (f"DFlash drafter: {w.sharded_params:,} TP-sharded + {w.replicated_params:,} replicated parameters in "
                   f"{act.name}, its embedding and head counted (vLLM shares them only when the checkpoint has none or "
                   "the target's own)")
    if sp.method in ("eagle", "eagle3"):
        w = shared.speculative.eagle_weights(sp.head)
        b = w.bytes_per_gpu(tp, Fraction(act.bits))
        return b, (f"{'EAGLE-3' if sp.head.eagle3 else 'EAGLE'} head: {w.sharded_params:,} TP-sharded + {w.replicated_params:,} "
                   f"replicated parameters in {act.name}; the embedding{'' if sp.head.eagle3 else ' and head'} shared with the target")
    mtp = spec.mtp
    bits = linear_bits(spec, req.weight_fmt, act)
    b = math.ceil(Fraction(mtp.params, tp) * bits / 8)
    return b, (f"{mtp.layers} MTP layer(s) of the checkpoint: {mtp.params:,} parameters at {float(bits):.4g} bits / TP {tp}; "
               "embedding and head shared with the target")


def _target_layers(f, spec, rules, skip, kv: DType, act: DType, notes: list[str]) -> list[CacheLayer]:
    """The target model's layers with a cache, each in its KV dtype (--kv-cache-dtype-skip-layers keeps some in the
    model dtype)."""
    layers: list[CacheLayer] = []
    for i, layer in enumerate(spec.layer_specs):
        if not layer.caches:
            continue
        layer_kv = act if skip and skip_layer(i, layer, skip) else kv
        layers.append(CacheLayer(i, layer, layer_kv, False))
    skipped = sum(1 for c in layers if c.kv != kv)
    if skipped and kv.name != act.name:
        if rules.skip_layers_padded:
            given = "--kv-cache-dtype-skip-layers" if f.kv_cache_dtype_skip_layers else \
                f"{kv.name}'s boundary layers (kept in {act.name})"
            rules.refuse(f"{given}: vLLM pads the quantized page to the skipped layers' "
                         "(platforms/interface.py Platform._align_heterogeneous_kv_block_size, 0.25+), which kvplan "
                         "does not model", where="kv_cache_dtype_skip_layers" if f.kv_cache_dtype_skip_layers
                         else "--kv-dtype",
                         hint="judge it with --engine-version 0.24 or older (0.19-0.24 unify the pages)")
        notes.append(f"{skipped} layer(s) keep their KV in {act.name} (--kv-cache-dtype-skip-layers)")
    return layers


def _add_draft_layers(layers: list[CacheLayer], sp, rules, req: EngineRequest, spec, kv: DType, act: DType,
                      kv_names: dict[str, str]) -> tuple[int, int]:
    """The drafter's layers appended to `layers`; (how many, the Mamba blocks speculative decoding adds)."""
    draft = 0
    mamba_spec_blocks = 0
    if sp is not None:
        if sp.method == "dflash" and not releases.at_least(rules.version, shared.speculative.DFLASH_FIRST):
            rules.refuse(f"DFlash is modelled from vLLM {shared.speculative.DFLASH_FIRST}'s source only", where=sp.where,
                         hint=f"judge it with --engine-version {shared.speculative.DFLASH_FIRST}")
        if sp.method not in rules.spec_methods:
            rules.refuse(f"speculative method {sp.method!r} does not exist in the V1 engine (v1/spec_decode/)",
                         where=sp.where, hint="methods of this release: " + ", ".join(sorted(rules.spec_methods)))
        shared.speculative.check_draft_tp(sp, req.tp)
        if req.pp > 1 and sp.method not in shared.speculative.HOST_METHODS:
            raise UnsupportedError("speculative decoding with pipeline parallelism is not modelled (where the drafter's "
                                   "layers live)", where=sp.where, hint="judge it at PP 1")
        draft_kv = kv
        if sp.kv_cache_dtype not in (None, "auto"):
            name = sp.kv_cache_dtype.strip().lower()
            if name not in kv_names:
                raise UnsupportedError(f"draft kv_cache_dtype {sp.kv_cache_dtype!r} is not modelled", where=f"{sp.where}: kv_cache_dtype")
            draft_kv = dtype(kv_names[name]) if kv_names[name] else act
        for layer in shared.speculative.draft_layers(sp, spec):
            layers.append(CacheLayer(spec.layers + draft, layer, draft_kv, True))
            draft += 1
        if spec.state is not None and sp.method not in shared.speculative.HOST_METHODS:
            mamba_spec_blocks = sp.num_speculative_tokens
    return draft, mamba_spec_blocks


def _block_size(req: EngineRequest, rel, f, spec, layers: list[CacheLayer], notes: list[str]):
    """(the block size the launch's attention backend forces or None, the backend choice or None)."""
    backend_choice = None
    block_size = req.block_size
    if block_size is None and rel.rocm_aiter and f.attention_backend is None and vspecs.any_latent(c.layer for c in layers):
        return _aiter_mla_block(rel, notes), None
    if block_size is None and (backend_rules_apply(rel) or f.attention_backend is not None):
        mla = vspecs.any_latent(c.layer for c in layers)
        facts = req.hardware.facts if req.hardware is not None and req.hardware.name else None
        if facts is None:
            if mla and f.attention_backend is None:
                notes.append("MLA: vLLM's backend and block size depend on the GPU (FLASH_ATTN_MLA 16 on Hopper, FlashMLA "
                             "64 with fp8 KV, FlashInfer MLA 32 on Blackwell); 16 assumed without a catalog GPU")
        else:
            rope = spec.mla.qk_rope_head_dim if spec.mla else 0
            backend_choice = backends.choose(mla=mla, kv_dtype=req.kv_dtype or "auto",
                                             qk_nope_head_dim=spec.head_dim - rope if spec.mla else None,
                                             compute_capability=facts.compute_capability, vendor=facts.vendor,
                                             named=f.attention_backend)
            if backend_choice.block_size != 16:
                block_size = backend_choice.block_size
                notes.append(f"{backend_choice.reason}: vLLM logs \"Setting kv cache block size to {block_size} for "
                             f"{backend_choice.backend} backend\"")
        if f.attention_backend is not None and facts is None:
            backend_choice = backends.choose(mla=mla, kv_dtype=req.kv_dtype or "auto", qk_nope_head_dim=None,
                                             compute_capability="9.0", vendor="nvidia", named=f.attention_backend)
            block_size = backend_choice.block_size if backend_choice.block_size != 16 else None
    return block_size, backend_choice


def _aiter_mla_block(rel, notes: list[str]) -> int:
    """The block ROCM_AITER_MLA runs with when VLLM_ROCM_USE_AITER=1 and no --block-size (releases.Release
    .rocm_aiter_mla_block); 0.10-0.11 do not start with the default 16."""
    block = rel.rocm_aiter_mla_block
    if block is None:
        raise UnsupportedError(f"vLLM {rel.version} with VLLM_ROCM_USE_AITER=1 serves MLA with ROCM_AITER_MLA, which "
                               "refuses the default 16-token blocks (\"currently only supports block size 1\")",
                               where="--block-size", hint="give --block-size 1, as AMD's guides do")
    notes.append(f"ROCm MLA with VLLM_ROCM_USE_AITER=1: ROCM_AITER_MLA, {block}-token blocks in vLLM {rel.version}")
    return block


def budget_terms(req: EngineRequest, p: Plan, act: DType, rel, mnbt: int, stage_layers: list[int],
                 graphs_subtracted: bool) -> BudgetTerms:
    """The options' terms for every worker: weights (drafter, LoRA slots, offloaded weights, the experts' share
    under DP / EP / PCP), activations (the LoRA shrink buffer; no encoder profile when text-only) and the CUDA-graph
    estimate (the drafter's layers at the fitted per-layer rate)."""
    f = features_of(req)
    spec = p.spec
    sp = f.speculative
    if sp is not None and sp.method not in shared.speculative.HOST_METHODS and req.kv_cache_memory is None \
            and sp.method not in _rules(rel).spec_profile_modelled:
        _rules(rel).refuse(f"the profile run with speculative method {sp.method!r} on the V1 model runner (the "
                           "rejection sampler's warm-up on [2 x max_num_seqs, vocab] logits, v1/worker/gpu_model_runner.py "
                           "_dummy_sampler_run) is not modelled", where=sp.where,
                           hint="give --kv-cache-memory (the pool is then exact), or judge it with vLLM 0.29+ "
                                "(EAGLE / MTP) or 0.31+ (draft models), whose V2 model runner has no such warm-up")
    draft_b, how = draft_weights_per_gpu(req, spec, act, rel)
    # the drafter's layers are captured in every CUDA graph too: the fitted per-layer rate times the capture sizes
    # (budget.cuda_graph_bytes), on the last stage
    draft_graphs = 0
    hw = req.hardware
    if p.draft_layers and hw is not None and rel.cuda_graph_estimated:
        _, max_seqs = budget_model.resolve_batch_limits(req.max_num_batched_tokens, req.max_num_seqs, req.seq,
                                                        hw.capacity_bytes, hw.name, rel)
        cc = hw.facts.compute_capability if hw.facts is not None else None
        sizes = budget_model.cuda_graph_capture_sizes(max_seqs, mnbt, rel, sm10x=budget_model._sm_major(cc) == 10)
        draft_graphs = math.ceil(budget_model.FITTED.cuda_graph_per_layer_size * p.draft_layers * sizes)
    lora_terms = None
    host = 0
    if f.lora is not None:
        lora_terms = shared.lora.terms(spec, f.lora, tp=req.tp, model_bits=act.bits, max_num_batched_tokens=mnbt)
        host += lora_terms.cpu_cache_bytes * req.tp * req.pp
    par = f.parallel or parallel.ParallelOptions()
    pterms = parallel.terms(spec, par, tp=req.tp, pp=req.pp)
    experts_total = expert_bytes(spec, req.weight_fmt, act) if spec.moe is not None else None
    if pterms.expert_share is not None and not spec.moe.expert_params:
        # the inventory does not split this model's experts out (Nemotron-H's per-block layout): sharding them
        # over the expert-parallel ranks cannot be sized
        raise UnsupportedError(f"expert parallelism on {spec.name}: kvplan does not know its routed experts' weights",
                               where="--enable-expert-parallel", hint="run it without expert parallelism")
    pp = len(stage_layers)
    stages = []
    for stage, layers in enumerate(stage_layers):
        weights = 0
        experts = None
        if experts_total is not None and pterms.expert_share is not None:
            # budget.stage_weight_bytes splits every weight over TP; the experts spread over TP x PCP x DP instead
            stage_experts = experts_total * layers // spec.layers
            experts = parallel.expert_bytes_per_rank(stage_experts, pterms.expert_share)
            weights += experts - -(-stage_experts // req.tp)
        if stage == pp - 1:
            weights += draft_b
        if lora_terms is not None:
            weights += lora_stage_bytes(lora_terms, stage=stage, pp=pp, layers=layers)
        off = None
        if f.weight_offload is not None:
            off = shared.offload.weight_offload(spec, f.weight_offload, tp=req.tp, bits=_loaded_bits(req, act),
                                         layers_on_worker=layers)
            weights -= off.offloaded_bytes
            host += off.offloaded_bytes * req.tp
        activation = lora_terms.shrink_buffer_bytes if lora_terms is not None else 0
        if f.text_only and spec.vision_params and stage == 0:
            activation -= budget_model.FITTED.multimodal_profile_bytes
        graphs = draft_graphs if stage == pp - 1 else 0
        stages.append(records.StageTerms(weights=weights, activation=activation, graphs=graphs, experts=experts, offload=off))
    return records.BudgetTerms(stages=tuple(stages), draft_bytes=draft_b, draft_how=how, lora=lora_terms, parallel=pterms,
                       host_bytes=host)


def adjust_budgets(budgets, terms: BudgetTerms) -> tuple:
    """Each worker's budget with its stage's terms added, `available` recomputed the way vLLM subtracts them
    (requested - weights - activation peak - non-torch - the CUDA-graph estimate where it is subtracted)."""
    out = []
    for b in budgets:
        t = terms.stages[b.stage]
        weights = b.weights_bytes + t.weights
        peak = b.activation_peak_bytes + t.activation
        graphs = b.cuda_graph_bytes + t.graphs
        available = b.requested_bytes - weights - peak - b.non_torch_bytes - (graphs if b.cuda_graph_subtracted else 0)
        out.append(dataclasses.replace(b, weights_bytes=weights, activation_peak_bytes=peak, cuda_graph_bytes=graphs,
                                       available_bytes=available))
    return tuple(out)


def lora_stage_bytes(t: lora.LoraTerms, *, stage: int, pp: int, layers: int) -> int:
    """The LoRA slots on one GPU of a pipeline stage: its decoder layers' modules, the embedding's on the first stage,
    the head's on the last."""
    elements = 0
    for m in t.modules:
        if m.per_layer:
            elements += m.elements * layers
        elif (m.name == "embed_tokens" and stage == 0) or (m.name == "lm_head" and stage == pp - 1):
            elements += m.elements
    return elements * t.dtype_bits // 8


def _loaded_bits(req: EngineRequest, act: DType) -> int:
    if req.weight_fmt is not None:
        return int(req.weight_fmt.bits_per_param)
    if req.spec.weights_bytes is not None and req.spec.weight_dtype not in (None, "bf16", "fp16", "fp32"):
        return 8
    return act.bits


def check_lengths(req: EngineRequest, spec_before: ModelSpec) -> None:
    """--disable-sliding-window caps max_model_len at the window (config/model.py _get_and_verify_max_len)."""
    f = features_of(req)
    if f.disable_sliding_window and spec_before.sliding_window and req.seq > spec_before.sliding_window:
        raise InputError(f"max_model_len {req.seq:,} exceeds the sliding window {spec_before.sliding_window:,}: with "
                         "--disable-sliding-window vLLM caps the model's length at the window and refuses longer",
                         where="max_model_len", hint=f"at most {spec_before.sliding_window:,}")


# --------------------------------------------------------------------------------------------- the summary

def summarize(req: EngineRequest, p: Plan, terms: BudgetTerms | None, *, act: DType, bytes_per_block: int | None,
              token_bytes_per_rank: int, block_size: int, mnbt: int, concurrency: float | None,
              max_batch: int | None, pool_bytes: int | None, rel) -> VllmFeatures:
    """The `features` record of a vLLM estimate."""
    f = features_of(req)
    notes = list(p.notes)
    par = f.parallel or parallel.ParallelOptions()
    pterms = terms.parallel if terms is not None else parallel.terms(p.spec, par, tp=req.tp, pp=req.pp)
    notes += pterms.notes
    sp = None
    if f.speculative is not None:
        s = f.speculative
        draft_b = terms.draft_bytes if terms is not None else draft_weights_per_gpu(req, p.spec, act, rel)[0]
        how = terms.draft_how if terms is not None else ""
        uses = s.method not in shared.speculative.HOST_METHODS
        draft_kv = next((c.kv.name for c in p.cache_layers if c.draft), None)
        sp = records.SpeculativeSummary(method=s.method, num_speculative_tokens=s.num_speculative_tokens, uses_gpu=uses,
                                draft=(s.draft_spec.name if s.draft_spec else s.head.name if s.head else s.model),
                                draft_kv_layers=p.draft_layers, draft_kv_dtype=draft_kv, draft_weights_per_gpu_bytes=draft_b,
                                lookahead_tokens=shared.speculative.lookahead_tokens(s),
                                decode_requests_per_step=shared.speculative.decode_requests_per_step(mnbt, s) if uses else None,
                                mamba_speculative_blocks=p.mamba_speculative_blocks,
                                formula=how if uses else shared.speculative.HOST_METHODS[s.method])
        if not uses:
            notes.append(shared.speculative.HOST_METHODS[s.method])
    host = terms.host_bytes if terms is not None else 0
    kv_off = None
    if f.kv_offload is not None:
        ko = f.kv_offload
        world = req.tp * req.pp * par.prefill_context_parallel_size
        if ko.backend == "native":
            if bytes_per_block is None:
                raise UnsupportedError("the native KV offload tier is sized from the GPU pool's block bytes, which needs a "
                                       "GPU", where=ko.where, hint="add --gpu")
            kv_off = shared.offload.native_kv_offload(ko, bytes_per_block=bytes_per_block, block_size=block_size, world_size=world,
                                               alignment=_rules(rel).kv_offload_alignment)
        else:
            kv_off = shared.offload.lmcache_kv_offload(ko, token_bytes_per_rank=token_bytes_per_rank, tp=req.tp,
                                                mla=vspecs.any_latent(c.layer for c in p.cache_layers))
        host += kv_off.host_memory_bytes
        notes += kv_off.notes
    transfer = link = None
    if f.kv_transfer is not None:
        transfer = shared.disagg.terms(f.kv_transfer, token_bytes_per_rank=token_bytes_per_rank, tp=req.tp,
                                gpu_pool_bytes=pool_bytes, hma=_rules(rel).connectors_hma)
        host += transfer.host_bytes_per_gpu * req.tp * req.pp
        notes += transfer.notes
        if f.rate is not None:
            link_bps, link_name = shared.disagg.link_of(f.link_bytes_per_s, req.hardware)
            link = shared.disagg.link_need(transfer, rate=f.rate, prompt_tokens=f.prompt_tokens or req.seq, tp=req.tp,
                                    link_bytes_per_s=link_bps, link=link_name if link_bps else "none given")
    stage0 = terms.stages[0] if terms is not None else None
    weights_added = max((s.weights for s in terms.stages), default=0) if terms is not None else 0
    return records.VllmFeatures(
        options=_named(f), speculative=sp, lora=terms.lora if terms is not None else None,
        weight_offload=stage0.offload if stage0 else None, kv_offload=kv_off, parallel=pterms, kv_transfer=transfer,
        link=link, attention_backend=p.backend, weights_added_per_gpu_bytes=weights_added,
        expert_weights_per_gpu_bytes=stage0.experts if stage0 else None,
        activation_added_bytes=stage0.activation if stage0 else 0, cuda_graph_added_bytes=terms.stages[-1].graphs if terms else 0,
        host_memory_bytes=host, gpus=pterms.gpus, replicas=pterms.replicas,
        deployment_concurrency=concurrency * pterms.replicas if concurrency is not None else None,
        deployment_max_batch=max_batch * pterms.replicas if max_batch is not None else None, notes=tuple(notes))
