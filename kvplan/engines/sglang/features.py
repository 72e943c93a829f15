"""The SGLang launch options beyond the core request that change what `python -m sglang.launch_server` puts in GPU
memory: prefill / decode disaggregation and EAGLE / EAGLE-3 / NEXTN speculative decoding. Read from SGLang 0.5.23's
source (python/sglang/srt/...); each rule cites its file and function. Pure: no typer, rich, yaml or torch.

`read(args, spec, ...)` turns a launch's LaunchArgs into SglangOptions (carried on EngineRequest.features.sglang);
engine.py applies them with the helpers below and records the terms in SglangFeatures (estimate --json `features`).

Disaggregation (--disaggregation-mode prefill|decode):
- the default --mem-fraction-static (arg_groups/memory_hook.py handle_gpu_memory_settings, reserve_for_graph_mb):
  a decode server sizes the activation slack on max(running requests x draft tokens, 2048) tokens instead of the
  chunked-prefill size (running requests: --max-running-requests, else the decode CUDA-graph max batch) and reserves
  no prefill CUDA graphs; a prefill server reserves no decode CUDA graphs (2 MiB per batch size);
- the KV pool is sized as without it (mem_cache/kv_cache_configurator.py _profile_available_bytes): the transfer
  backends (mooncake, nixl) register the pool itself for RDMA (disaggregation/common/conn.py kv_args.kv_data_ptrs),
  so no second copy is allocated;
- a decode server turns the radix cache off (arg_groups/pd_disaggregation_hook.py handle_pd_disaggregation, unless
  --disaggregation-decode-enable-radix-cache), and keeps --disaggregation-decode-extra-slots more req_to_token rows
  for requests still being received (default 0, or 2 x the running requests per worker when --max-running-requests
  gives 32 or fewer; disaggregation/decode.py DecodeReqToTokenPool: int32 rows of context_len + 4 + draft tokens,
  mem_cache/allocation_sizing.py get_req_to_token_extra_context_len), allocated after the pool is sized;
- a decode server admits a request (preallocates its KV slots before the transfer) only while the free tokens cover
  its prompt plus --num-reserved-decode-tokens (512; disaggregation/decode.py _required_admission_tokens);
- what moves: each decode rank pulls its own shard of the prompt's KV from the prefill rank of the same attention-TP
  rank (common/conn.py _resolve_rank_mapping): prompt tokens x one rank's cell bytes, from every rank; an MLA latent
  is whole on every rank, so each rank receives a full copy. With a speculative draft its pool moves too
  (disaggregation/utils.py: kv_data_ptrs are [K target, V target, K draft, V draft]), at the draft's own bytes per
  token (its layers and heads), not the budget's share.

Attention data parallelism (--enable-dp-attention with --dp-size D, or --attn-dp-size D;
arg_groups/parallel_hook.py handle_deprecated_dp_attention turns the first into the second):
- D attention-DP workers inside the TP group: no more GPUs; each worker has its own KV pool and scheduler, the
  attention of its requests sharded over attn_tp = TP / D ranks (tp_size must be divisible by attn_dp_size), so a
  rank keeps KV heads / attn_tp heads (qwen3_moe.py Qwen3MoeAttention: max(1, kv // attn_tp));
- --max-running-requests is split over the workers (kv_cache_configurator.py resolve_max_num_reqs:
  max(1, max_running_requests // attn_dp_size)), as is the chunked prefill (parallel_hook.py _handle_data_parallelism);
- the default --mem-fraction-static reserves max_bs x D x 3 MiB more for the decode graphs' padding, and x 1.5 more
  when max_bs > 300 (memory_hook.py reserve_for_graph_mb);
- which weights shard over attn_tp instead of TP is per model class: Qwen3-MoE's qkv_proj, o_proj
  (parallel_group "attn_tp") and embed_tokens (use_attn_tp_group=is_dp_attention_enabled()); its experts and lm_head
  stay on the TP group (models/qwen3_moe.py, qwen2_moe.py Qwen2MoeModel). DeepSeek-V2/V3 and Kimi-K2
  (models/deepseek_v2.py DeepseekV2AttentionMLA): q_b_proj (or q_proj), kv_b_proj and o_proj on attn_tp, the
  fused a-projection whole on every rank either way (ReplicatedLinear; runtime/weights.py counts it), embed_tokens
  on attn_tp (vocab_parallel_embedding.py get_embedding_tp_kwargs); the dense layers' MLP and the shared experts
  stay on TP (parallel_group "tp" unless --moe-dense-tp-size 1 or an all-to-all MoE backend, which kvplan refuses),
  as do the routed experts and lm_head (--enable-dp-lm-head moves it; refused). The MLA latent is whole on every
  rank with or without it. Other classes are not modelled (exit 3).

LoRA (--enable-lora / --lora-paths with --max-lora-rank, --lora-target-modules, --max-loras-per-batch):
- the adapter slots are zero-filled GPU buffers, max_loras_per_batch (default 8) of them per module and layer,
  allocated when the LoRA manager starts, after the weights load and before the pool is sized (model_executor/
  model_runner.py initialize: load_model, maybe_init_lora_manager; the pool comes in managers/scheduler.py
  init_memory_pools), so they come out of the pool's budget;
- shapes (lora/mem_pool.py LoRAMemoryPool get_lora_A_shape, get_lora_B_shape, init_buffers), in the model dtype,
  for every layer (num_hidden_layers, whatever the PP stage): A [slots, r x stacked, in], B [slots, out, r]; stacked is
  3 for qkv_proj and 2 for gate_up_proj (lora/utils.py get_stacked_multiply); the row-parallel o_proj and down_proj
  split A's input over TP, the column-parallel qkv_proj and gate_up_proj split B's output (qkv_proj's KV part per
  rank one head_dim each once TP exceeds the KV heads: _column_parallel_lora_b_per_rank_dim). These are the same
  element counts as vLLM's slots for the same modules (kvplan/engines/features/lora.py);
- without --max-lora-rank or --lora-target-modules SGLang reads them from the adapters in --lora-paths
  (lora_manager.py init_lora_shapes), which kvplan does not read (exit 3); without adapters it refuses
  (arg_groups/lora_hook.py check_lora_server_args). 'all', embed_tokens, lm_head and MoE experts are not modelled.

HiCache (--enable-hierarchical-cache with --hicache-ratio R or --hicache-size G):
- a host pool per rank beside the device pool, nothing more on the GPU (mem_cache/pool_host/base.py
  HostKVCache.__init__): G > 0 gives int(G x 1e9 // bytes per token) tokens (G in decimal gigabytes), else
  int(device tokens x R); then whole pages plus one padding page; bytes per token are the rank's own cell
  (pool_host/mha.py get_size_per_token: (head_dim + v_head_dim) x heads x layers x dtype; MLA the latent);
- R defaults to 2.0 in cache mode (arg_groups/hicache_hook.py handle_hicache_ratio_default); with neither R nor G
  given SGLang lowers R until every rank's pool fits --hicache-host-memory-fraction (0.8) of the host's free memory
  after a 10 GiB reserve (mem_cache/hicache_auto_size.py auto_size_hicache), which kvplan cannot see: the figures
  are then what R = 2.0 needs, an upper bound.

Speculative decoding (--speculative-algorithm EAGLE | EAGLE3 | NEXTN | STANDALONE; arg_groups/speculative_hook.py):
- STANDALONE is a whole draft model that shares nothing with the target (speculative/standalone_worker_v2.py
  StandaloneDraftWorker.init_lm_head does nothing) and must have the target's vocabulary
  (_validate_vocab_compatibility); its pool share follows the same rule as EAGLE's (max(num_hidden_layers,
  attention layers) draft layers), and its default steps are (3, 1, 4) whatever the target;
- NEXTN is EAGLE (_resolve_speculative_algorithm_alias); on DeepSeek-V3 / GLM-4 MoE / ... the draft is the target
  checkpoint's MTP layer(s) when no --speculative-draft-model-path is given (_handle_eagle_family);
- --max-running-requests defaults to 48 (_handle_eagle_family), which also caps the decode CUDA-graph batch sizes;
- the draft model loads before the pool is sized, so its weights come out of the pool's budget (managers/scheduler.py
  init_model_worker: target, draft, then init_memory_pools; "Loaded weights (target + draft)"); its embedding (and an
  EAGLE-1 / NEXTN head) become the target's (speculative/eagle_worker_v2.py init_lm_head: set_embed_and_head), an
  EAGLE-3 head keeps its own lm_head over draft_vocab_size and its d2t map (models/llama_eagle3.py);
- but init_lm_head runs in EagleDraftWorker.alloc_memory_pool, after init_target_memory_pool has sized the pool, so
  the draft's own embed_tokens (vocab x hidden / TP in the model dtype) and, for EAGLE-1 and NEXTN, its own lm_head
  (models/llama_eagle.py, deepseek_nextn.py: ParallelLMHead over the vocabulary) are resident when the pool is sized
  and freed just after (sgl-project/sglang issue 36452, PRs 32468 / 35996 / 37155, open at 0.5.23): the pool is
  sized as if they stayed;
- the draft's KV pool has as many tokens as the target's and is sized as the target's per-layer cell times the draft's
  layers (model_executor/pool_configurator.py DefaultPoolConfigurator: cell += int(cell x draft_layers /
  target_layers), "assumes the draft shares the target's per-layer KV size"); draft layers: the head's
  num_hidden_layers, or the checkpoint's num_nextn_predict_layers
  (model_runner_components/spec_aux_hidden_state.py _resolve_eagle_aux_hidden_state).
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from kvplan.core.errors import InputError, UnsupportedError, KvplanError
from kvplan.core.spec import ModelSpec
from kvplan.engines import lazy
from kvplan.model import catalog
from kvplan.core.cache import layer_token_bytes
from kvplan.core.layers import FULL, kv_heads_per_rank, make_layer
from kvplan.core.dtypes import dtype
from kvplan.engines.runtime.weights import stage_weight_bytes
from kvplan.engines.sglang import after_pool, specs as sspecs

if TYPE_CHECKING:  # annotations; the code reaches them as shared.<module>, loaded when a launch sets the option
    from kvplan.engines import features as shared
    from kvplan.engines.features import offload as shared_offload
    from kvplan.engines.features import speculative as shared_spec
    from kvplan.engines.sglang import feature_terms as records
    from kvplan.engines.sglang.releases import Release
    from kvplan.engines.sglang.feature_terms import DisaggTerms as DisaggTerms
    from kvplan.engines.sglang.feature_terms import DpAttentionTerms as DpAttentionTerms
    from kvplan.engines.sglang.feature_terms import HiCacheTerms as HiCacheTerms
    from kvplan.engines.sglang.feature_terms import LoraModule as LoraModule
    from kvplan.engines.sglang.feature_terms import LoraTerms as LoraTerms
    from kvplan.engines.sglang.feature_terms import RESERVED_DECODE_TOKENS as RESERVED_DECODE_TOKENS
    from kvplan.engines.sglang.feature_terms import SglangFeatures as SglangFeatures
    from kvplan.engines.sglang.feature_terms import SglangOptions as SglangOptions
    from kvplan.engines.sglang.feature_terms import SpeculativeTerms as SpeculativeTerms
else:
    # the terms records (feature_terms.py) load when a launch sets an option that has them: reading a launch that
    # sets none (kvplan check of a plain one) never builds their classes (benchmarks/cold_start.py); `features.
    # SglangFeatures` and the others still answer (PEP 562)
    shared = lazy.module("kvplan.engines.features")  # the engines' shared option readers, used by a launch's options
    records = lazy.module("kvplan.engines.sglang.feature_terms")
    __getattr__ = lazy.module_getattr(__name__, {name: "kvplan.engines.sglang.feature_terms" for name in (
        "DisaggTerms", "SpeculativeTerms", "SglangFeatures", "DpAttentionTerms", "LoraModule", "LoraTerms", "HiCacheTerms",
        "SglangOptions", "RESERVED_DECODE_TOKENS")})

MODES = ("prefill", "decode")
# --disaggregation-transfer-backend choices and what they allocate (0.5.23 disaggregation/<backend>/conn.py)
BACKENDS = {
    "mooncake": "registers the KV pool itself with the Mooncake transfer engine (no second copy)",
    "mooncake_tcp": "Mooncake over TCP (handle_pd_disaggregation rewrites it to mooncake): the KV pool is registered",
    "nixl": "registers the KV pool itself with NIXL (no second copy)",
    "fake": "moves no KV (synthetic decode benchmarks)",
}
BACKENDS_NOT_MODELLED = {"ascend": "Ascend NPUs", "mori": "the MoRI backend's buffers"}
REQ_TO_TOKEN_EXTRA = 4  # allocation_sizing.py get_req_to_token_extra_context_len: 4 + draft tokens
SPEC_RUNNING_DEFAULT = 48  # speculative_hook.py _handle_eagle_family: max_running_requests = 48
# speculative_hook.py _auto_choose_speculative_params: (steps, topk, draft tokens) when none is given
AUTO_PARAMS_LLAMA = (5, 4, 8)
AUTO_PARAMS_OTHER = (3, 1, 4)
SPEC_MODELLED = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")
SPEC_NOT_MODELLED = {
    "NGRAM": "the n-gram worker's GPU buffers",
    "DFLASH": "DFlash's own draft cell (dflash_utils.py) and block layout",
    "DSPARK": "DSpark stages",
    "UNO": "UNO's draft tree and its LoRA",
    "FROZEN_KV_MTP": "Gemma-4 assistant drafts",
}
# architectures whose MTP layers SGLang serves as the NEXTN draft without a draft path (_handle_eagle_family)
# model classes whose attention-TP sharding under DP attention kvplan read (see above)
DP_ATTENTION_CLASSES = frozenset({"Qwen3MoeForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"})
MTP_TARGETS = frozenset({"DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "Glm4MoeForCausalLM",
                         "Glm4MoeLiteForCausalLM", "BailingMoeV2ForCausalLM"})


# Scheduler options that leave a model's pool alone when every layer it caches is full attention (or MLA), read
# from each release line kvplan models (0.4.3, 0.4.10, 0.5.3, 0.5.9, 0.5.16, 0.5.23): the weights, the budget and
# the token pool are sized without them (model_runner.py profile_max_num_token / init_memory_pool up to 0.5.15;
# model_executor/pool_configurator.py DefaultPoolConfigurator and mem_cache/kv_cache_configurator.py from 0.5.16),
# and the default --mem-fraction-static's reserve does not read them (arg_groups/memory_hook.py
# handle_gpu_memory_settings; server_args.py before 0.5.19). Where they do act on memory, kvplan refuses:
# - a Mamba / linear-attention hybrid: requests per state slot fall from 3 to 1 without the radix cache, and with
#   --max-running-requests the state pool is sized from it (kv_cache_configurator.py _calculate_mamba_ratio,
#   _resolve_mamba_pool; model_runner_kv_cache_mixin.py 0.5.9); the overlap schedule sets the extra state buffers
#   (get_mamba_tracking_slots);
# - a sliding-window hybrid (0.5.16+): without the radix cache and with --max-running-requests, the SWA pool is
#   sized from the request cap, 1 or 2 chunks in flight by the overlap schedule (pool_configurator.py
#   SWARequestCapPoolConfigurator, compute_swa_request_cap);
# - speculative decoding: without the overlap schedule the draft runs as spec-v1, another worker and allocator
#   (pool_configurator.py compute_swa_request_cap; speculative/eagle_worker.py).
# Mixed chunked prefill puts running decodes into a prefill batch (managers/scheduler.py is_mixed_chunk): activation
# at run time, not start-up memory; SGLang turns it off itself for the draft algorithms that do not support it.
SCHEDULER_OPTIONS = {"disable_radix_cache": "the radix prefix cache off", "disable_overlap_schedule": "the overlap "
                     "schedule off", "enable_mixed_chunk": "mixed chunked prefill"}


def scheduler_options(args, spec: ModelSpec, *, where: str) -> None:
    """Refuses (exit 3) a SCHEDULER_OPTIONS option set on a model or launch whose pool it moves; SGLang's own
    refusals (exit 2) where it rejects the combination."""
    algo = args.get("speculative_algorithm")
    for dest, what in SCHEDULER_OPTIONS.items():
        if not args.get(dest):
            continue
        at = f"{where}: " + args.written.get(dest, "--" + dest.replace("_", "-"))
        if dest == "disable_radix_cache" and args.get("enable_hierarchical_cache"):
            raise InputError("SGLang refuses it with --enable-hierarchical-cache (\"mutually exclusive\", "
                             "arg_groups/kv_cache_hook.py)", where=at, hint="drop one of them")
        hybrid = [x for x in spec.layer_specs if sspecs.rule(x).state or sspecs.rule(x).windowed]
        if hybrid and dest != "enable_mixed_chunk":
            kind = "state" if sspecs.rule(hybrid[0]).state else "sliding-window"
            raise UnsupportedError(f"{what} on a model with {kind} layers is not modelled (it changes how SGLang "
                                   "splits the hybrid pool)", where=at,
                                   hint="kvplan models it for models whose cached layers are all full attention")
        if dest == "disable_overlap_schedule" and algo is not None:
            raise UnsupportedError(f"{what} with speculative decoding is not modelled (the draft runs as spec-v1)",
                                   where=at)


# SGLang's --max-prefill-tokens default: 16,384 on every release kvplan models (server_args.py ServerArgs 0.5.3,
# 0.5.10, 0.5.16; arg_groups/fields/schedule.py 0.5.22, 0.5.23)
MAX_PREFILL_TOKENS = 16384


def unchunked_prefill_tokens(args) -> int | None:
    """With chunked prefill off (--chunked-prefill-size <= 0), the prefill tokens the default --mem-fraction-static's
    activation reserve reads: --max-prefill-tokens, or its default. SGLang 0.5.3+ takes `max(chunked_prefill_size,
    2048)` tokens when the chunk is > 0 and `max(max_prefill_tokens, 2048)` otherwise (server_args.py
    _handle_gpu_memory_settings 0.5.3, 0.5.10, 0.5.16; arg_groups/memory_hook.py handle_gpu_memory_settings 0.5.22,
    0.5.23). None: chunked prefill on (or left to SGLang), where the option is the scheduler's admission budget only
    (managers/schedule_policy.py PrefillAdder)."""
    chunk = args.get("chunked_prefill_size")
    if chunk is None or chunk > 0:
        return None
    return int(args.get("max_prefill_tokens", MAX_PREFILL_TOKENS))


def read(args, spec: ModelSpec, *, where: str, base_dir: Path | None = None) -> SglangOptions | None:
    """The modelled options of a launch (launch_args.LaunchArgs), or None when it sets none of them. Refuses (exit 3)
    what is not modelled and (exit 2) what SGLang refuses."""
    scheduler_options(args, spec, where=where)
    mode = args.get("disaggregation_mode")
    mode = None if mode in (None, "null") else str(mode)
    algo = args.get("speculative_algorithm")
    attn_dp = attention_dp_size(args, where=where)
    lora = _lora(args, where=where)
    hicache = _hicache(args, where=where)
    offload = _cpu_offload(args, where=where)
    fusion = fusion_backend(args)
    fusion_flags = tuple(flag for flag in after_pool.FUSION_FLAGS if args.given(flag[2:].replace("-", "_")))
    unchunked = unchunked_prefill_tokens(args)
    if (mode is None and algo is None and attn_dp == 1 and not lora and not hicache and not offload
            and not fusion_flags):
        for dest in ("speculative_draft_model_path", "speculative_num_steps", "speculative_eagle_topk",
                     "speculative_num_draft_tokens"):
            if args.given(dest):
                raise InputError("is set without --speculative-algorithm: SGLang ignores it", where=f"{where}: "
                                 + args.written.get(dest, "--" + dest.replace("_", "-")),
                                 hint="add --speculative-algorithm EAGLE, EAGLE3 or NEXTN, or drop it")
        if unchunked is None:
            return None
    out: dict[str, Any] = {"where": where, "attn_dp_size": attn_dp, "unchunked_prefill_tokens": unchunked, **lora,
                           **hicache, **offload, "fusion_backend": fusion,
                           "fusion_flags": fusion_flags}
    if mode is not None:
        backend = str(args.get("disaggregation_transfer_backend") or "mooncake")
        if backend in BACKENDS_NOT_MODELLED:
            raise UnsupportedError(f"the {backend} transfer backend ({BACKENDS_NOT_MODELLED[backend]}) is not modelled",
                                   where=f"{where}: --disaggregation-transfer-backend", hint="mooncake, nixl and fake are")
        if mode == "prefill" and backend == "fake":
            raise InputError("SGLang refuses it: a prefill server does not support the fake transfer backend",
                             where=f"{where}: --disaggregation-transfer-backend")
        for dest, why in (("disaggregation_decode_enable_offload_kvcache", "the decode side's KV offload to host"),
                          ("disaggregation_decode_host_receive_threshold", "decode host KV buffering")):
            if args.given(dest) and args.get(dest) not in (False, None, 1, 1.0):
                raise UnsupportedError(f"{why} is not modelled", where=f"{where}: " + args.written.get(dest, dest))
        extra = args.get("disaggregation_decode_extra_slots")
        if extra is not None and extra < 0:
            raise InputError(f"must be at least 0, got {extra}", where=f"{where}: --disaggregation-decode-extra-slots")
        reserved = args.get("num_reserved_decode_tokens", records.RESERVED_DECODE_TOKENS)
        out.update(disaggregation_mode=mode, transfer_backend="mooncake" if backend == "mooncake_tcp" else backend,
                   decode_extra_slots=extra, decode_radix_cache=bool(args.get("disaggregation_decode_enable_radix_cache")),
                   num_reserved_decode_tokens=int(reserved))
    if algo is not None:
        out.update(_speculative(args, spec, str(algo).upper(), where=where, base_dir=base_dir))
    return records.SglangOptions(**out)


LORA_MODULES = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj", "qkv_proj": "qkv_proj",
                "o_proj": "o_proj", "gate_proj": "gate_up_proj", "up_proj": "gate_up_proj", "gate_up_proj": "gate_up_proj",
                "down_proj": "down_proj"}  # lora/utils.py get_normalized_target_modules
LORA_ARCHITECTURES = frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"})
LORA_SLOTS_DEFAULT = 8  # arg_groups/fields/lora.py max_loras_per_batch


def _lora(args, *, where: str) -> dict:
    paths = args.get("lora_paths")
    enabled = args.get("enable_lora")
    if not (enabled or (paths and enabled is not False)):
        return {}
    at = f"{where}: " + args.written.get("enable_lora", args.written.get("lora_paths", "--enable-lora"))
    rank, modules = args.get("max_lora_rank"), args.get("lora_target_modules")
    if not rank or not modules:
        if paths:
            raise UnsupportedError("SGLang reads the LoRA rank and target modules from the adapters in --lora-paths, "
                                   "which kvplan does not read", where=at,
                                   hint="give --max-lora-rank and --lora-target-modules")
        raise InputError("SGLang refuses it: without --lora-paths both --max-lora-rank and --lora-target-modules are "
                         "needed", where=at)
    if "all" in modules:
        raise UnsupportedError("--lora-target-modules all (every module the model has, with the embedding and head) is "
                               "not modelled", where=at, hint="list the modules: q_proj k_proj v_proj o_proj ...")
    odd = [m for m in modules if m not in LORA_MODULES]
    if odd:
        raise UnsupportedError(f"LoRA slots of {odd[0]} are not modelled", where=at,
                               hint="kvplan sizes " + ", ".join(sorted(set(LORA_MODULES))))
    slots = args.get("max_loras_per_batch", LORA_SLOTS_DEFAULT)
    if slots < 1 or rank < 1:
        raise InputError("--max-loras-per-batch and --max-lora-rank must be positive", where=at)
    return dict(lora_slots=int(slots), lora_rank=int(rank),
                lora_modules=tuple(sorted({LORA_MODULES[m] for m in modules})))


def fusion_backend(args) -> str | None:
    """FlashInfer's all-reduce fusion backend as SGLang resolves the flags, None when off: --enable-flashinfer-
    allreduce-fusion is backend auto (0.5.23 arg_groups/serving_hook.py _handle_deprecated_args), a given
    --flashinfer-allreduce-fusion-backend wins, and --enforce-disable-flashinfer-allreduce-fusion turns it off
    (arg_groups/overrides.py _enforce_disable_allreduce_fusion). Its workspace comes after the pool is sized
    (engines/sglang/after_pool.py), so it is read on any number of GPUs."""
    if args.get("enforce_disable_flashinfer_allreduce_fusion"):
        return None
    backend = args.get("flashinfer_allreduce_fusion_backend")
    if backend is not None:
        return str(backend)
    return "auto" if args.get("enable_flashinfer_allreduce_fusion") else None


# SGLang's switch for sizing the pool after the CUDA graphs (environ.py EnvBool; in 0.5.16, not in 0.5.14): what is
# allocated before the re-size then comes out of the pool, HiCache's staging and the fusion workspace included
POST_CAPTURE_ENV = "SGLANG_ENABLE_POST_CAPTURE_KV_SIZING"
ENV_TRUE = ("true", "1", "yes", "y")  # environ.py EnvBool.parse


def refuse_environment(env: Mapping[str, str | None], *, where: str) -> None:
    """Refuse (exit 3) the variables of a launch's environment that change how SGLang sizes the pool and that kvplan
    does not model. `env` maps a variable set outside the file to None."""
    if POST_CAPTURE_ENV not in env:
        return
    value = env[POST_CAPTURE_ENV]
    if value is not None and value.strip().lower() not in ENV_TRUE:
        return  # SGLang reads anything else as off (an invalid value warns and keeps the default, off)
    said = "set outside the file" if value is None else f"={value}"
    raise UnsupportedError(f"{POST_CAPTURE_ENV}{said}: SGLang sizes the pool after the CUDA graphs (model_executor/"
                           "model_runner.py post_capture_resize_kv_pool), so the fusion "
                           "workspace and HiCache's staging come out of it; kvplan does not model that path",
                           where=f"{where}: {POST_CAPTURE_ENV}", hint="judge the launch without it")


def _hicache(args, *, where: str) -> dict:
    if not args.get("enable_hierarchical_cache"):
        return {}
    at = f"{where}: " + args.written.get("enable_hierarchical_cache", "--enable-hierarchical-cache")
    for dest, default, why in (("hicache_host_memory_mode", "cache", "buffer_only staging"),
                               ("hicache_storage_backend", None, "a storage tier beyond host memory")):
        if args.given(dest) and args.get(dest) != default:
            raise UnsupportedError(f"HiCache with {why} is not modelled", where=f"{where}: " + args.written.get(dest, dest))
    ratio, size = args.get("hicache_ratio"), args.get("hicache_size", 0) or 0
    if ratio is not None and ratio <= 0:
        raise InputError(f"--hicache-ratio must be positive, got {ratio}", where=at)
    if size < 0:
        raise InputError(f"--hicache-size must be at least 0, got {size}", where=at)
    return dict(hicache=True, hicache_ratio=None if ratio is None else float(ratio), hicache_size_gb=int(size))


def _cpu_offload(args, *, where: str) -> dict:
    """--cpu-offload-gb G: utils/offloader.py OffloaderV1 moves G x 1024**3 bytes of decoder-layer parameters of each
    rank to pinned host memory (features/offload.py weight_offload walks them)."""
    gb = args.get("cpu_offload_gb", 0) or 0
    if gb < 0:
        raise InputError(f"--cpu-offload-gb must be at least 0, got {gb}", where=f"{where}: --cpu-offload-gb")
    return {"cpu_offload_bytes": int(gb * 1024**3)} if gb else {}


def attention_dp_size(args, *, where: str) -> int:
    """D of attention data parallelism (parallel_hook.py handle_deprecated_dp_attention, _handle_data_parallelism)."""
    attn = args.get("attn_dp_size", 1) or 1
    if args.get("enable_dp_attention"):
        if attn == 1:
            attn = args.get("dp_size", 1) or 1
    elif attn > 1 and (args.get("dp_size", 1) or 1) > 1:
        raise InputError(f"SGLang refuses --dp-size {args.get('dp_size')} with --attn-dp-size {attn}: data-parallel "
                         "replicas combined with attention data parallelism are not supported",
                         where=f"{where}: --attn-dp-size")
    if attn < 1:
        raise InputError(f"--attn-dp-size must be positive (got {attn})", where=f"{where}: --attn-dp-size")
    return int(attn)


def _speculative(args, spec: ModelSpec, algo: str, *, where: str, base_dir: Path | None) -> dict:
    at = f"{where}: --speculative-algorithm"
    if algo in SPEC_NOT_MODELLED:
        raise UnsupportedError(f"--speculative-algorithm {algo} is not modelled ({SPEC_NOT_MODELLED[algo]})", where=at,
                               hint="EAGLE, EAGLE3, NEXTN and STANDALONE are")
    if algo not in SPEC_MODELLED:
        raise InputError(f"SGLang has no speculative algorithm {algo!r}", where=at,
                         hint="EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM, DFLASH, ...")
    for dest in ("speculative_draft_kv_cache_dtype", "speculative_draft_model_quantization", "speculative_token_map",
                 "speculative_draft_window_size", "speculative_adaptive"):
        if args.given(dest) and args.get(dest) not in (None, False, "auto"):
            raise UnsupportedError("is not modelled (it changes the draft's weights, KV or tokens)",
                                   where=f"{where}: " + args.written.get(dest, dest))
    steps, topk, tokens = (args.get("speculative_num_steps"), args.get("speculative_eagle_topk"),
                           args.get("speculative_num_draft_tokens"))
    if steps is None:
        if topk is not None or tokens is not None:
            # speculative_hook.py _handle_eagle_family asserts both are unset when the steps are
            raise InputError("SGLang refuses --speculative-eagle-topk / --speculative-num-draft-tokens without "
                             "--speculative-num-steps", where=f"{where}: --speculative-num-steps")
        steps, topk, tokens = (AUTO_PARAMS_LLAMA if spec.architecture == "LlamaForCausalLM" and algo != "STANDALONE"
                               else AUTO_PARAMS_OTHER)
    for name, value in (("--speculative-num-steps", steps), ("--speculative-eagle-topk", topk)):
        if value is not None and value < 1:
            raise InputError(f"must be at least 1, got {value}", where=f"{where}: {name}")
    if topk == 1 or topk is None:
        tokens = steps + 1  # _handle_eagle_family: num_draft_tokens = num_steps + 1 when topk == 1
        topk = 1
    elif tokens is None:
        raise InputError("SGLang needs --speculative-num-draft-tokens with --speculative-eagle-topk > 1",
                         where=f"{where}: --speculative-num-draft-tokens")
    path = args.get("speculative_draft_model_path")
    head = draft = None
    if algo == "STANDALONE":
        if path is None:
            raise InputError("STANDALONE speculative decoding needs --speculative-draft-model-path", where=at)
        draft = _draft_model(str(path), base_dir=base_dir, where=f"{where}: --speculative-draft-model-path")
        if draft.vocab_size and spec.vocab_size and draft.vocab_size != spec.vocab_size:
            raise InputError(f"SGLang refuses it: STANDALONE needs the draft's vocabulary ({draft.vocab_size:,}) to be the "
                             f"target's ({spec.vocab_size:,}) (standalone_worker_v2.py _validate_vocab_compatibility)",
                             where=f"{where}: --speculative-draft-model-path")
        if not sspecs.standalone_draft_layers_pooled(draft.layer_specs):
            raise UnsupportedError("a STANDALONE draft with sliding-window or state layers is not modelled",
                                   where=f"{where}: --speculative-draft-model-path")
        return dict(speculative_algorithm=algo, draft_path=str(path), draft_spec=draft,
                    draft_layers=sum(1 for layer in draft.layer_specs if layer.kind != "none"),
                    num_steps=steps, eagle_topk=topk, num_draft_tokens=tokens)
    if path is None:
        if spec.architecture not in MTP_TARGETS or spec.mtp is None:
            raise UnsupportedError(f"--speculative-algorithm {algo} without --speculative-draft-model-path drafts with "
                                   f"the checkpoint's MTP layers, which kvplan knows for {', '.join(sorted(MTP_TARGETS))} "
                                   "specs that carry them", where=at, hint="give the draft head's folder")
        layers = spec.mtp.layers
    else:
        if algo == "NEXTN" and spec.architecture in MTP_TARGETS:
            raise UnsupportedError("a separate NEXTN draft checkpoint for a model with its own MTP layers is not "
                                   "modelled", where=f"{where}: --speculative-draft-model-path",
                                   hint="leave the path out: SGLang then uses the target's MTP layers")
        # config.json reading (hf_config and its weights, params, yamlio: about 10 ms at start-up, measured with
        # python -X importtime) is for a draft head given by path; a launch without one never loads it
        from kvplan.model import hf_config

        raw = hf_config.load_draft_config(str(path), base_dir=base_dir, where=f"{where}: --speculative-draft-model-path",
                                          what="the draft head",
                                          hint="give the head's folder or its config.json beside the launch")
        head = shared.speculative.eagle_head(raw, method="eagle3" if algo == "EAGLE3" else "eagle",
                                      where=f"{where}: --speculative-draft-model-path")
        head = _named(head, str(path))
        layers = head.layers
    return dict(speculative_algorithm=algo, draft_path=None if path is None else str(path), head=head,
                draft_layers=layers, num_steps=steps, eagle_topk=topk, num_draft_tokens=tokens)


def _draft_model(ref: str, *, base_dir: Path | None, where: str) -> ModelSpec:
    path = Path(ref).expanduser()
    if base_dir is not None and not path.is_absolute() and (base_dir / path).exists():
        ref = str(base_dir / path)
    try:
        return catalog.resolve_model(ref)
    except KvplanError as err:
        raise UnsupportedError(f"the draft model {ref!r} cannot be found offline: {err.what}", where=where,
                               hint="name a bundled model (kvplan models) or give the draft's config.json or folder") from None


def _named(head: shared_spec.EagleHead, name: str) -> shared_spec.EagleHead:
    import dataclasses

    return dataclasses.replace(head, name=name)


# ------------------------------------------------------------------------------------------------ the terms

def draft_cell(target_cell: int, target_layers: int, draft_layers: int) -> int:
    """The bytes per token the draft's pool adds to the cell the budget is divided by
    (pool_configurator.py DefaultPoolConfigurator: int(cell x draft_layers / num_layers))."""
    if not draft_layers or not target_layers:
        return 0
    return int(target_cell * draft_layers / target_layers)


VOCAB_PADDING = 64  # layers/vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE


def draft_duplicates_per_gpu(opts: SglangOptions, spec: ModelSpec, *, tp: int, act_bits: int) -> tuple[int, str]:
    """The draft's own embedding (and EAGLE-1 / NEXTN head) that are still resident when the pool is sized and are
    replaced by the target's right after (eagle_worker_v2.py EagleDraftWorker.alloc_memory_pool: init_lm_head)."""
    if opts.draft_spec is not None:
        return 0, "a STANDALONE draft keeps its own embedding and head (standalone_worker_v2.py init_lm_head: no sharing)"
    if opts.head is not None:
        vocab, hidden = opts.head.vocab_size, opts.head.hidden_size
        tables = 1 if opts.eagle3 else 2  # an EAGLE-3 head keeps its own draft-vocabulary head (counted as weights)
    else:
        vocab, hidden = spec.vocab_size, spec.hidden_size
        tables = 2
    padded = -(-vocab // VOCAB_PADDING) * VOCAB_PADDING
    one = math.ceil(Fraction(padded * hidden, tp) * act_bits / 8)
    return tables * one, (f"the draft's own embed_tokens{' and lm_head' if tables == 2 else ''} ({padded:,} x {hidden:,} "
                          f"/ TP {tp} at {act_bits} bits each), freed only after the pool is sized")


def draft_weights_per_gpu(opts: SglangOptions, spec: ModelSpec, *, tp: int, bits: Fraction) -> tuple[int, str]:
    """The draft's weights on one GPU, and how they were counted."""
    if opts.draft_spec is not None:
        draft = opts.draft_spec
        b = stage_weight_bytes(draft, None, dtype(draft.dtype), tp, 1)[0]
        return b, (f"STANDALONE draft {draft.name}: its whole weights / TP {tp}, its own embedding and head "
                   "(standalone_worker_v2.py: nothing shared)")
    if opts.head is not None:
        w = shared.speculative.eagle_weights(opts.head)
        b = w.bytes_per_gpu(tp, Fraction(bits))
        return b, (f"{'EAGLE-3' if opts.eagle3 else 'EAGLE'} head: {w.sharded_params:,} TP-sharded + "
                   f"{w.replicated_params:,} replicated parameters at {float(bits):g} bits; the embedding"
                   f"{'' if opts.eagle3 else ' and head'} shared with the target (eagle_worker_v2.py init_lm_head)")
    mtp = spec.mtp
    b = math.ceil(Fraction(mtp.params, tp) * bits / 8)
    return b, (f"{mtp.layers} MTP layer(s) of the checkpoint: {mtp.params:,} parameters at {float(bits):.4g} bits / "
               f"TP {tp}; embedding and head shared with the target")


def draft_cell_actual(opts: SglangOptions, spec: ModelSpec, kv, *, tp: int) -> int:
    """The bytes per token the draft's own pool holds on one rank (its layers with its own heads), which a prefill
    server sends with the target's: kv_data_ptrs list [K target, V target, K draft, V draft]
    (disaggregation/utils.py, the draft entries' layer ids)."""
    if opts.speculative_algorithm is None:
        return 0
    if opts.draft_spec is not None:
        layers = [layer for layer in opts.draft_spec.layer_specs if layer.kind != "none"]
    elif opts.head is not None:
        h = opts.head
        layers = [make_layer(FULL, kv_heads=h.kv_heads, head_dim=h.head_dim, v_head_dim=h.head_dim)] * h.layers
    else:
        layers = list(shared.speculative.mtp_layers(spec, where=opts.where))
    return sum(layer_token_bytes(layer, kv, tp) for layer in layers)


def extra_slots(opts: SglangOptions, *, max_running_requests: int | None, attn_dp: int = 1) -> int:
    """The decode server's extra req_to_token rows (pd_disaggregation_hook.py handle_pd_disaggregation)."""
    if opts.decode_extra_slots is not None:
        return opts.decode_extra_slots
    if max_running_requests is None:
        return 0
    per_worker = max(1, max_running_requests // attn_dp)
    return per_worker * 2 if per_worker <= 32 else 0


def disagg_terms(opts: SglangOptions, *, cell_per_rank: int, ranks: int, context_len: int, page: int,
                 max_running_requests: int | None, rate: float | None, prompt_tokens: int | None,
                 link_bytes_per_s: int | None, link_name: str) -> DisaggTerms:
    notes = [f"--disaggregation-mode {opts.disaggregation_mode}: the {opts.transfer_backend} backend "
             + BACKENDS[opts.transfer_backend]]
    decode = opts.disaggregation_mode == "decode"
    slots = extra_slots(opts, max_running_requests=max_running_requests) if decode else 0
    extra_ctx = REQ_TO_TOKEN_EXTRA + (opts.num_draft_tokens or 0)
    slot_bytes = slots * (context_len + extra_ctx) * 4 if (page == 1 or opts.speculative_algorithm is None) else None
    if decode:
        notes.append("the decode server turns its radix cache off" if not opts.decode_radix_cache else
                     "the decode server keeps a radix cache (--disaggregation-decode-enable-radix-cache)")
        notes.append(f"a request is admitted (its KV slots preallocated before the transfer) while the free tokens cover "
                     f"its prompt + {opts.num_reserved_decode_tokens} (--num-reserved-decode-tokens)")
        if slots:
            notes.append(f"{slots} extra request slot(s) for requests being received: {slot_bytes:,} B of int32 rows "
                         "allocated after the pool" if slot_bytes is not None else f"{slots} extra request slot(s)")
    moved = 0 if opts.transfer_backend == "fake" else cell_per_rank
    transfer = shared.disagg.TransferTerms(connector=opts.transfer_backend, role=opts.disaggregation_mode,
                                           hybrid_manager_off=False, gpu_runtime_bytes=0, host_bytes_per_gpu=0,
                                           bytes_per_token_per_rank=moved, bytes_per_token=moved * ranks,
                                           notes=())
    link = None
    if rate is not None:
        link = shared.disagg.link_need(transfer, rate=rate, prompt_tokens=prompt_tokens or context_len, tp=ranks,
                                       link_bytes_per_s=link_bytes_per_s,
                                       link=link_name if link_bytes_per_s else "none given")
    return records.DisaggTerms(mode=opts.disaggregation_mode, transfer_backend=opts.transfer_backend,
                               radix_cache=opts.decode_radix_cache if decode else True, extra_slots=slots,
                               extra_slots_bytes=slot_bytes, reserved_decode_tokens=opts.num_reserved_decode_tokens if decode else 0,
                               bytes_per_token_per_rank=moved, ranks=ranks, bytes_per_token=moved * ranks, link=link,
                               notes=tuple(notes))


def option_names(opts: SglangOptions) -> tuple[str, ...]:
    """The options in play, as SGLang spells them."""
    named = (("--disaggregation-mode", opts.disaggregation_mode is not None),
             ("--speculative-algorithm", opts.speculative_algorithm is not None),
             ("--enable-dp-attention", opts.attn_dp_size > 1), ("--enable-lora", opts.lora_slots),
             ("--enable-hierarchical-cache", opts.hicache), ("--cpu-offload-gb", opts.cpu_offload_bytes),
             ("--flashinfer-allreduce-fusion-backend", opts.fusion_backend is not None))
    return tuple(name for name, on in named if on)


def attn_tp_parameters(spec: ModelSpec) -> tuple[int, str]:
    """The attention parameters that shard over the attention-TP group under DP attention, and their names: Qwen3-MoE's
    qkv_proj and o_proj; an MLA model's b-projections and o_proj (its a-projections are whole on every rank anyway)."""
    h, heads = spec.hidden_size, spec.attention_heads
    if spec.mla is None:
        kv, d = spec.kv_heads, spec.head_dim
        return spec.layers * (h * (heads + 2 * kv) * d + heads * d * h), "qkv_proj + o_proj"
    if spec.v_head_dim is None:
        raise UnsupportedError("attention data parallelism on an MLA model needs v_head_dim (the b-projections' width)",
                               where=spec.source or spec.name)
    m, qk, v = spec.mla, spec.head_dim, spec.v_head_dim
    nope = qk - m.qk_rope_head_dim
    q = (m.q_lora_rank or h) * heads * qk  # q_b_proj from the query latent, or q_proj from the hidden state
    per_layer = q + m.kv_lora_rank * heads * (nope + v) + heads * v * h
    layers = sum(1 for layer in spec.layer_specs if sspecs.rule(layer).latent)
    return layers * per_layer, ("q_b_proj" if m.q_lora_rank else "q_proj") + " + kv_b_proj + o_proj"


def dp_attention_weights_delta(spec: ModelSpec, *, tp: int, attn_dp: int, linear_bits: Fraction, act_bits: int) -> tuple[int, str]:
    """The bytes one GPU holds beyond the TP-sharded model when attention shards over attn_tp = TP / D instead
    (attn_tp_parameters, and embed_tokens, on the attention-TP group)."""
    h = spec.hidden_size
    attn_tp = tp // attn_dp
    attention, names = attn_tp_parameters(spec)
    embed = spec.vocab_size * h
    a_bytes = Fraction(attention) * linear_bits / 8
    e_bytes = Fraction(embed * act_bits, 8)
    delta = math.ceil(a_bytes / attn_tp) - math.ceil(a_bytes / tp) + math.ceil(e_bytes / attn_tp) - math.ceil(e_bytes / tp)
    return delta, (f"{names} ({attention:,} parameters at {float(linear_bits):g} bits) and embed_tokens "
                   f"({embed:,} at {act_bits}) over attention TP {attn_tp} instead of TP {tp}")


def lora_terms(spec: ModelSpec, opts: SglangOptions, *, tp: int, bits: int) -> LoraTerms:
    """LoRAMemoryPool's buffers on one rank (lora/mem_pool.py get_lora_A_shape / get_lora_B_shape)."""
    L, r, h, inter = opts.lora_slots, opts.lora_rank, spec.hidden_size, spec.intermediate_size
    q, d = spec.attention_heads * spec.head_dim, spec.head_dim
    kv_out = kv_heads_per_rank(spec.kv_heads, tp) * d  # per rank: replicated heads once TP exceeds them
    shapes = {
        "qkv_proj": ((L, 3 * r, h), (L, q // tp + 2 * kv_out, r)),
        "o_proj": ((L, r, q // tp), (L, h, r)),
        "gate_up_proj": ((L, 2 * r, h), (L, 2 * inter // tp, r)),
        "down_proj": ((L, r, inter // tp), (L, h, r)),
    }
    mods = []
    for name in opts.lora_modules:
        a, b = shapes[name]
        elements = (math.prod(a) + math.prod(b)) * spec.layers
        mods.append(records.LoraModule(name=name, a_shape=a, b_shape=b, bytes_per_gpu=elements * bits // 8))
    return records.LoraTerms(slots=L, rank=r, dtype_bits=bits, layers=spec.layers, modules=tuple(mods),
                             gpu_bytes_per_rank=sum(m.bytes_per_gpu for m in mods))


HICACHE_RATIO_DEFAULT = 2.0


def hicache_terms(opts: SglangOptions, *, cell_per_rank: int, device_tokens: int, page: int, ranks: int,
                  rel: Release) -> HiCacheTerms:
    """The host pool HostKVCache builds (pool_host/base.py __init__): tokens, then whole pages plus one; and the
    write-back staging it makes on the GPU after the pool (engines/sglang/after_pool.py)."""
    ratio = opts.hicache_ratio if opts.hicache_ratio is not None else HICACHE_RATIO_DEFAULT
    if opts.hicache_size_gb > 0:
        size = int(opts.hicache_size_gb * 10**9 // cell_per_rank)
        ratio = None
    else:
        size = int(device_tokens * ratio)
    pages = size // page + 1
    tokens = pages * page
    per_rank = tokens * cell_per_rank
    return records.HiCacheTerms(ratio=ratio, size_gb=opts.hicache_size_gb,
                                auto_sized=opts.hicache_ratio is None and opts.hicache_size_gb == 0,
                                bytes_per_token=cell_per_rank, device_tokens=device_tokens, host_tokens=tokens,
                                host_bytes_per_rank=per_rank, ranks=ranks, host_bytes=per_rank * ranks,
                                staging_gpu_bytes_per_rank=after_pool.hicache_staging_bytes(
                                    rel, cell_per_rank=cell_per_rank, page=page, host_pages=pages))


def offloaded_weights(opts: SglangOptions, spec: ModelSpec, *, tp: int, pp_counts: list[int],
                      bits: int) -> shared_offload.WeightOffloadTerms | None:
    """What --cpu-offload-gb moves to the host on the most loaded GPU: each rank walks its own stage's decoder layers
    (make_layers builds a stage's layers only), so the first stage's count decides at PP 1 and the smallest move at
    PP > 1 is the one that leaves the most on a GPU."""
    if not opts.cpu_offload_bytes:
        return None
    offload = shared.offload
    options = offload.WeightOffloadOptions(cpu_offload_bytes=opts.cpu_offload_bytes, where=f"{opts.where}: --cpu-offload-gb")
    moves = [offload.weight_offload(spec, options, tp=tp, bits=bits, layers_on_worker=n,
                                    orders=offload.SGLANG_LAYER_ORDER) for n in pp_counts]
    return min(moves, key=lambda m: m.offloaded_bytes)
