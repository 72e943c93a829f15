"""The rules of vLLM's launch options (kvplan/engines/features/) on every release line 0.10 ... 0.33: each rule stated
once, with the release it changed in and the vLLM file it was read from, the way releases.py states the budget and
layout rules. `rules(release)` gives the rules one release applies; a launch is then judged by its own line's rules.

Read from each release's own source (the wheels of docs/research/vllm-releases.md; the findings, per option and
release, are in docs/research/vllm-features-by-release.md). Citations are `file:function` under `vllm/`. A change
first seen in a read release X is dated to the release after the last read release without it (e.g. draft_model
proposers: absent in 0.14.1, present in 0.15.1: dated 0.15.0), or to the first release of its line where the line's
first read release has it (suffix decoding: absent in 0.11.0, present in 0.12.0: 0.12.0). Where a line lacks an option, or its rule was not
read, `refuse` raises UnsupportedError (exit 3) and says which.

Rules that did not change from 0.10 to 0.33 (read in 0.10.2, 0.19.0 and 0.33.0, and where noted in every release):
- lookahead slots: allocate_slots reserves min(tokens + num_lookahead_tokens, max_model_len) in every release
  (v1/core/kv_cache_manager.py KVCacheManager.allocate_slots, 0.10.0-0.33.0);
- the drafter's attention layers register in the same forward context and join the one KV-cache config
  (v1/worker/gpu_model_runner.py get_kv_cache_spec walks get_layers_from_vllm_config(vllm_config, Attention));
- weight offload: the same walk over each module's parameters until cpu_offload_gb is reached
  (model_executor/models/utils.py maybe_offload_to_cpu until 0.16, model_executor/offloader/uva.py
  UVAOffloader._maybe_offload_to_cpu from 0.17);
- expert placement: E // EP experts per rank, one more on the first E % EP ranks (fused_moe/layer.py
  determine_expert_map; fused_moe/expert_map_manager.py from 0.33); MoE sharded over TP x DP (x PCP from 0.12:
  fused_moe/config.py FusedMoEParallelConfig.flatten_tp_across_dp_and_pcp);
- Mamba state dtypes: the SSM dtype 'auto' follows the conv dtype (model_executor/layers/mamba/mamba_utils.py
  MambaStateDtypeCalculator._mamba_state_dtype, 0.10.1+);
- LoRA slots from 0.12 (lora/layers/base_linear.py create_lora_weights is the same code in 0.12.0, 0.19.0, 0.33.0).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.errors import UnsupportedError
from kvplan.engines.changes import Change
from kvplan.engines.vllm import releases

# --- speculative decoding -------------------------------------------------------------------------------------
# the methods a release's V1 engine runs (v1/spec_decode/*.py; config/speculative.py SpeculativeConfig)
SPEC_METHODS = (
    Change("0.10.0", frozenset({"eagle", "eagle3", "mtp", "ngram"}), "v1/spec_decode/eagle.py, ngram_proposer.py"),
    Change("0.12.0", frozenset({"eagle", "eagle3", "mtp", "ngram", "suffix"}), "v1/spec_decode/suffix_decoding.py"),
    Change("0.15.0", frozenset({"eagle", "eagle3", "mtp", "ngram", "suffix", "draft_model"}),
           "v1/spec_decode/draft_model.py DraftModelProposer (absent in 0.14.1)"),
    Change("0.18.0", frozenset({"eagle", "eagle3", "mtp", "ngram", "suffix", "draft_model", "ngram_gpu"}),
           "v1/spec_decode/ngram_proposer_gpu.py (absent in 0.17.1)"),
    # DFlash is in 0.28+ (model_executor/models/qwen3_dflash.py); kvplan read 0.33's, and refuses it before
    # (features/speculative.py DFLASH_FIRST)
    Change("0.33.0", frozenset({"eagle", "eagle3", "mtp", "ngram", "suffix", "draft_model", "ngram_gpu", "dflash"}),
           "v1/spec_decode/dflash.py DFlashProposer"),
)
# an EAGLE-3 head as each release builds it (model_executor/models/llama_eagle3.py): 0.10-0.11 one decoder layer
# whatever the head's num_hidden_layers (LlamaModel builds a ModuleList of one), 0.12+ num_hidden_layers of them
EAGLE3_ONE_LAYER = (Change("0.10.0", True, "model_executor/models/llama_eagle3.py LlamaModel.__init__ (0.10.2, 0.11.0)"),
                    Change("0.12.0", False, "model_executor/models/llama_eagle3.py: range(num_hidden_layers)"))
# its fc over 3 target hidden states until 0.21 (fc_input_size = hidden x 3); from 0.22 over num_aux_hidden_states
# (the config's, else len(eagle_aux_hidden_state_layer_ids), else 3)
EAGLE3_FC_THREE = (Change("0.10.0", True, "model_executor/models/llama_eagle3.py: hidden_size * 3 (0.10.2-0.21.0)"),
                   Change("0.22.0", False, "model_executor/models/llama_eagle3.py num_aux_hidden_states (0.22.1)"))
# the methods whose profile run kvplan's budget models end to end. The V1 model runner's profile warms the rejection
# sampler on [2 x max_num_seqs, vocab] logits (v1/worker/gpu_model_runner.py _dummy_sampler_run), which is not
# modelled; the V2 model runner (the default from 0.29, config/vllm.py VllmConfig.use_v2_model_runner) has none
# (v1/worker/gpu/model_runner.py _dummy_sampler_run). 0.29-0.30 keep draft models on the V1 runner
# (_get_v2_model_runner_unsupported_features: only eagle, eagle3, mtp, dflash, dspark, extract_hidden_states); 0.31
# moves them to V2 (only ngram, ngram_gpu, suffix, medusa, mlp_speculator, custom_class stay on V1).
SPEC_PROFILE_MODELLED = (
    Change("0.10.0", frozenset(), "v1/worker/gpu_model_runner.py _dummy_sampler_run (rejection sampler warm-up)"),
    Change("0.29.0", frozenset({"eagle", "eagle3", "mtp"}),
           "config/vllm.py _get_v2_model_runner_unsupported_features; v1/worker/gpu/model_runner.py profile_run"),
    Change("0.31.0", frozenset({"eagle", "eagle3", "mtp", "draft_model"}),
           "config/vllm.py _get_v2_model_runner_unsupported_features (draft models on V2)"),
    Change("0.33.0", frozenset({"eagle", "eagle3", "mtp", "draft_model", "dflash"}),
           "config/vllm.py _get_v2_model_runner_unsupported_features: DFlash's parallel drafting runs on V2"),
)

# --- KV connectors --------------------------------------------------------------------------------------------
# V1 connectors only: 0.10.0 still registers the V0 ones (PyNccl, Mooncake, MooncakeStore, LMCacheConnector), which
# run the V0 engine kvplan does not model
_C10 = frozenset({"LMCacheConnectorV1", "MultiConnector", "NixlConnector", "P2pNcclConnector", "SharedStorageConnector"})
_C11 = _C10 | {"OffloadingConnector"}
_C12 = _C11 | {"DecodeBenchConnector", "LMCacheMPConnector"}
_C13 = (_C12 - {"SharedStorageConnector"}) | {"ExampleConnector", "MooncakeConnector"}
_C14 = _C13 | {"MoRIIOConnector"}
_C17 = _C14 | {"ExampleHiddenStatesConnector"}
_C18 = _C17 | {"FlexKVConnectorV1"}
_C19 = _C18 | {"SimpleCPUOffloadConnector"}
_C20 = _C19 | {"HF3FSKVConnector"}
_C21 = _C20 | {"MooncakeStoreConnector"}
_C24 = (_C21 - {"P2pNcclConnector"}) | {"NixlPullConnector", "NixlPushConnector"}
_C30 = _C24 | {"HiSparseConnector"}
# distributed/kv_transfer/kv_connector/factory.py: the register_connector calls of each release
CONNECTORS = (
    Change("0.10.0", _C10, "factory.py (0.10.2)"), Change("0.11.0", _C11, "factory.py"),
    Change("0.12.0", _C12, "factory.py"), Change("0.13.0", _C13, "factory.py: SharedStorage renamed Example"),
    Change("0.14.0", _C14, "factory.py (0.14.1)"), Change("0.17.0", _C17, "factory.py (0.17.1; absent in 0.16.0)"),
    Change("0.18.0", _C18, "factory.py (0.18.1)"), Change("0.19.0", _C19, "factory.py"),
    Change("0.20.0", _C20, "factory.py (0.20.2)"), Change("0.21.0", _C21, "factory.py"),
    Change("0.24.0", _C24, "factory.py: P2pNcclConnector removed, NIXL pull/push added"),
    Change("0.30.0", _C30, "factory.py"),
)
# which connectors keep the hybrid KV cache manager. None: every connector turns it off (0.10-0.12 config/__init__.py /
# config/vllm.py VllmConfig.__post_init__ "not compatible with KV transfer"; 0.13-0.21 by default, "turn HMA off for
# connector unless specifically enabled"); from 0.22 only a connector class without SupportsHMA does
# (KVConnectorFactory / v1/base.py supports_hma; MultiConnector when every child does)
_HMA22 = frozenset({"DecodeBenchConnector", "ExampleHiddenStatesConnector", "MooncakeConnector", "MooncakeStoreConnector",
                    "MultiConnector", "NixlConnector", "OffloadingConnector", "SimpleCPUOffloadConnector"})
CONNECTORS_HMA = (
    Change("0.10.0", None, "config VllmConfig.__post_init__: any kv_transfer_config disables the hybrid manager"),
    Change("0.22.0", _HMA22, "config/vllm.py VllmConfig.__post_init__ + v1/base.py supports_hma (0.22.1)"),
    Change("0.24.0", _HMA22 | {"NixlPullConnector", "NixlPushConnector"}, "nixl: NixlBaseConnector(SupportsHMA)"),
    Change("0.30.0", _HMA22 | {"NixlPullConnector", "NixlPushConnector", "HiSparseConnector", "MoRIIOConnector"},
           "v1/hisparse, moriio: SupportsHMA"),
)

# --- KV offload -----------------------------------------------------------------------------------------------
# --kv-offloading-size (config/cache.py, 0.11.2+) with the native backend: 0.11.2-0.13 pass kv_bytes_per_rank and
# num_cpu_blocks 0 to the OffloadingConnector (config/vllm.py _post_init_kv_transfer_config), a sizing kvplan has not
# read (None); from 0.14 cpu_bytes_to_use = size x 2^30, chunks of page x tensors x world_size bytes
# (v1/kv_offload/cpu.py, cpu/spec.py CPUOffloadingSpec)
NATIVE_KV_OFFLOAD = (
    Change("0.11.2", None, "config/vllm.py _post_init_kv_transfer_config: kv_bytes_per_rank / num_cpu_blocks "
           "(0.12.0 and 0.13.0 read; 0.11.2, where the option appears, not unpacked)"),
    Change("0.14.0", "cpu_bytes_to_use", "v1/kv_offload/cpu.py CPUOffloadingSpec (0.14.1)"),
)
# the chunk each host block takes is rounded up to this many bytes: none until 0.26 (cpu/spec.py: cpu_bytes_to_use //
# kv_bytes_per_offloaded_block; 0.23-0.26 BLOCK_SIZE_ALIGNMENT = 1); the shared region's page (mmap.PAGESIZE, 4096 on
# x86-64 Linux) from 0.27 (BLOCK_SIZE_ALIGNMENT = SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT)
KV_OFFLOAD_ALIGNMENT = (
    Change("0.11.2", 1, "v1/kv_offload/cpu/spec.py CPUOffloadingSpec.__init__"),
    Change("0.27.0", 4096, "v1/kv_offload/cpu/spec.py: round_up(kv_bytes_per_chunk, BLOCK_SIZE_ALIGNMENT) (0.27.1)"),
)
# --kv-offloading-backend lmcache: LMCacheConnectorV1 with lmcache.max_local_cpu_size = size / (TP x PP) GiB per rank
# until 0.23; LMCacheMPConnector (the LMCache server sizes it) from 0.24 (config/vllm.py _post_init_kv_transfer_config)
LMCACHE_OFFLOAD = (
    Change("0.11.2", "LMCacheConnectorV1", "config/vllm.py _post_init_kv_transfer_config (0.12.0-0.23.0 read)"),
    Change("0.24.0", "LMCacheMPConnector", "config/vllm.py _post_init_kv_transfer_config (0.24.0)"),
)

# --- context parallelism --------------------------------------------------------------------------------------
# a request's tokens split over DCP ranks (0.10.2-0.11), DCP x PCP (0.12-0.25) or DCP again (0.26+) in
# v1/kv_cache_interface.py FullAttentionSpec.max_memory_usage_bytes
CONTEXT_SHARDS = (
    Change("0.10.2", "dcp", "v1/kv_cache_interface.py AttentionSpec.max_memory_usage_bytes"),
    Change("0.12.0", "dcp_x_pcp", "v1/kv_cache_interface.py: cdiv(max_model_len, dcp_world_size * pcp_world_size)"),
    Change("0.26.0", "dcp", "v1/kv_cache_interface.py: cdiv(max_model_len, dcp_world_size)"),
)
# decode context parallelism on GQA/MQA attention: 0.10.2-0.11 only the MLA backends return the softmax LSE DCP needs
# (v1/worker/gpu_model_runner.py asserts layer.impl.need_to_return_lse_for_decode); from 0.12 the GQA checks of
# config/model.py verify_with_parallel_config
DCP_GQA = (Change("0.10.2", False, "v1/worker/gpu_model_runner.py: need_to_return_lse_for_decode (MLA only)"),
           Change("0.12.0", True, "config/model.py ModelConfig.verify_with_parallel_config"))

# --- layout options -------------------------------------------------------------------------------------------
# --kv-cache-dtype-skip-layers (0.19+): the skipped layers' larger page joins the quantized ones through
# unify_kv_cache_spec_page_size until 0.24; from 0.25 Platform._align_heterogeneous_kv_block_size bumps the block size
# and pads the pages (platforms/interface.py, 0.25.1; absent in 0.24.0), which kvplan does not model
SKIP_LAYERS_PADDED = (
    Change("0.19.0", False, "v1/core/kv_cache_utils.py unify_kv_cache_spec_page_size"),
    Change("0.25.0", True, "platforms/interface.py Platform._align_heterogeneous_kv_block_size (0.25.1)"),
)

# --- LoRA -----------------------------------------------------------------------------------------------------
# 0.10-0.11 reserve lora_extra_vocab_size (256) extra embedding and head rows per slot (config/lora.py
# LoRAConfig.lora_extra_vocab_size; lora/layers/vocal_parallel_embedding.py), not modelled; removed in 0.12
LORA_EXTRA_VOCAB = (Change("0.10.0", True, "config/lora.py LoRAConfig.lora_extra_vocab_size"),
                    Change("0.12.0", False, "config/lora.py (no lora_extra_vocab_size)"))

# the first release with each option kvplan reads (the `vllm serve` option tables, kvplan/data/vllm_options/)
OPTION_FIRST = {
    "kv_cache_dtype_skip_layers": "0.19.0", "decode_context_parallel_size": "0.10.2",
    "prefill_context_parallel_size": "0.12.0", "kv_offloading_size": "0.11.2", "mamba_cache_dtype": "0.10.1",
    "mamba_ssm_cache_dtype": "0.10.1", "language_model_only": "0.17.0", "cpu_offload_params": "0.17.0",
    "lora_target_modules": "0.19.0",
}


@dataclass(frozen=True)
class OptionRules:
    """The launch options' rules of one vLLM release."""

    version: str
    line: str
    spec_methods: frozenset
    spec_profile_modelled: frozenset
    connectors: frozenset
    connectors_hma: frozenset | None  # None: every connector turns the hybrid KV cache manager off
    native_kv_offload: str | None  # None: the release's sizing was not read
    kv_offload_alignment: int | None
    lmcache_offload: str | None  # None: --kv-offloading-backend does not exist yet
    context_shards: str | None  # None: no decode context parallelism yet
    dcp_gqa: bool | None
    skip_layers_padded: bool | None
    lora_extra_vocab: bool
    eagle3_one_layer: bool
    eagle3_fc_three: bool

    def has(self, option: str) -> bool:
        first = OPTION_FIRST.get(option)
        return first is None or releases.sort_key(self.version) >= releases.sort_key(first)

    @staticmethod
    def first(option: str) -> str:
        """The first release with the option (OPTION_FIRST)."""
        return OPTION_FIRST[option]

    def refuse(self, what: str, *, where: str, hint: str | None = None):
        raise UnsupportedError(f"{what} on vLLM {self.version} ({self.line} line)", where=where, hint=hint)


def rules(rel) -> OptionRules:
    """The option rules of a release (a Release from releases.release(), or a version string)."""
    if rel is None or isinstance(rel, str):
        rel = releases.release(rel)
    key = releases.sort_key(rel.version)
    at = lambda changes: releases.HISTORY.at(changes, key)  # noqa: E731
    return OptionRules(version=rel.version, line=rel.line, spec_methods=at(SPEC_METHODS),
                       spec_profile_modelled=at(SPEC_PROFILE_MODELLED), connectors=at(CONNECTORS),
                       connectors_hma=at(CONNECTORS_HMA), native_kv_offload=at(NATIVE_KV_OFFLOAD),
                       kv_offload_alignment=at(KV_OFFLOAD_ALIGNMENT), lmcache_offload=at(LMCACHE_OFFLOAD),
                       context_shards=at(CONTEXT_SHARDS), dcp_gqa=at(DCP_GQA), skip_layers_padded=at(SKIP_LAYERS_PADDED),
                       lora_extra_vocab=bool(at(LORA_EXTRA_VOCAB)), eagle3_one_layer=bool(at(EAGLE3_ONE_LAYER)),
                       eagle3_fc_three=bool(at(EAGLE3_FC_THREE)))
