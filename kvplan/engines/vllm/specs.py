"""vLLM's page rule for each layer kind: the one place the vLLM engine dispatches on a kind (issue 24). Pure.

vLLM asks each layer for its KVCacheSpec (v1/kv_cache_interface.py; Attention.get_kv_cache_spec,
MLAAttention.get_kv_cache_spec, MambaBase.get_kv_cache_spec) and groups, pages and charges layers by that spec's
class. PAGE_RULES maps each kvplan layer kind (kvplan/core/layers.py) to the spec class vLLM builds for it; a kind
missing from the table is refused by name (exit 3, `refuse_unmapped`), never paged as something else. Mapping a
new kind is one line here once its spec is read from vLLM's source.

The rest of the engine asks a layer's rule (`rule`, and the predicates below), or a PageSpec built from it, never
the kind itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.layers import CHUNKED, FULL, MLA, NONE, SLIDING, STATE, LayerSpec, as_kind, KindTable
from kvplan.engines.paged import cdiv


@dataclass(frozen=True)
class PageRule:
    """How vLLM pages the layers of one kind: the KVCacheSpec class it builds for them and what kvplan reads off it."""

    spec: str | None  # the KVCacheSpec subclass; None: vLLM builds none (the layer keeps nothing)
    kind: str  # the group's kind as kvplan reports it (engine.KvCacheGroup.kind)
    tokens: bool = False  # pages tokens, block_size a page (attention specs)
    state: bool = False  # one state per request, whatever its length (MambaSpec)
    windowed: bool = False  # keeps a bounded span of tokens (SlidingWindowSpec, ChunkedLocalAttentionSpec)
    latent: bool = False  # MLAAttentionSpec: one latent per token; the MLA backend picks the block size


FULL_ATTENTION = PageRule("FullAttentionSpec", "full", tokens=True)
SLIDING_WINDOW = PageRule("SlidingWindowSpec", "sliding", tokens=True, windowed=True)
CHUNKED_LOCAL = PageRule("ChunkedLocalAttentionSpec", "chunked", tokens=True, windowed=True)
MLA_ATTENTION = PageRule("MLAAttentionSpec", "mla", tokens=True, latent=True)
MAMBA_STATE = PageRule("MambaSpec", "mamba", state=True)
NO_SPEC = PageRule(None, "none")
MAMBA = MAMBA_STATE.kind

# layer kind -> the spec vLLM builds for it. Not mapped (refused by name): mla_indexed (DeepSeek Sparse Attention's
# indexer cache beside the latent, models/deepseek_v2.py DeepseekV32IndexerCache), compressed / compressed_indexed
# (DeepSeek-V4's page-shared compressor groups), full_indexed (MiniMax-M3). Each is two or more specs per decoder
# layer, which PageSpec's one spec a layer does not hold yet. What 0.33 builds for full_indexed, read for whoever maps
# it: a FullAttentionSpec of the layer's KV heads and head_dim (models/minimax_m3/nvidia/model.py
# MiniMaxM3SparseAttention.get_kv_cache_spec) plus a second layer, the indexer's side cache, an MLAAttentionSpec of
# one head of index_head_dim, cache_role INDEXER, in bf16 unless --attention-config indexer_kv_dtype says fp8
# (common/indexer.py MiniMaxM3IndexerCache; config/attention.py resolve_indexer_kv_dtype); both backends take only
# 128-token kernel blocks (get_supported_kernel_block_sizes). 0.33 registers MiniMaxM3SparseForCausalLM and
# MiniMaxM3SparseForConditionalGeneration (model_type minimax_m3_vl), not the MiniMaxM3ForCausalLM / minimax_m3
# spelling of MiniMaxAI/MiniMax-M3's config, so which of those vLLM serves is open too
PAGE_RULES: dict[str, PageRule] = {
    FULL: FULL_ATTENTION,
    SLIDING: SLIDING_WINDOW,
    CHUNKED: CHUNKED_LOCAL,
    MLA: MLA_ATTENTION,
    STATE: MAMBA_STATE,
    NONE: NO_SPEC,
}


# the table's refusal of an unmapped kind (exit 3, by name) and a layer's rule (kvplan/core/layers.py KindTable)
TABLE = KindTable("vLLM", PAGE_RULES)
refuse_unmapped, rule = TABLE.refuse_unmapped, TABLE.rule


def _known(layer: LayerSpec) -> PageRule:
    # the yes/no questions below are also asked of models the estimate refuses (reading the KV dtype of any model):
    # a kind without a rule answers no to each
    return PAGE_RULES.get(layer.kind, NO_SPEC)


def any_latent(layers) -> bool:
    """Whether vLLM builds an MLAAttentionSpec for any of the layers (the MLA backends, block sizes and formats)."""
    return any(_known(layer).latent for layer in layers)


def any_windowed(layers) -> bool:
    return any(_known(layer).windowed for layer in layers)


def any_state(layers) -> bool:
    return any(_known(layer).state for layer in layers)


def any_chunked(layers) -> bool:
    return any(_known(layer) is CHUNKED_LOCAL for layer in layers)


def sliding(layer: LayerSpec) -> bool:
    """A layer vLLM builds with a sliding window (the 'sliding_window' entry of --kv-cache-dtype-skip-layers and
    --disable-sliding-window reach these, not chunked-local layers: model_executor/layers/attention/attention.py)."""
    return _known(layer) is SLIDING_WINDOW


def without_sliding_window(layer: LayerSpec) -> LayerSpec:
    """--disable-sliding-window (config/model.py: hf_text_config.sliding_window = None): a sliding layer becomes full
    attention; other layers stay."""
    return as_kind(layer, FULL, window=None) if sliding(layer) else layer


@dataclass(frozen=True)
class PageSpec:
    """A layer's KV-cache spec as vLLM builds it (v1/kv_cache_interface.py), for one TP rank."""

    kind: str  # a PageRule's kind
    window: int | None
    block_size: int
    page: int  # bytes of one block in this layer
    held: int = 1  # Mamba: state blocks a request holds (1; 2 + checkpoint blocks with prefix caching, 0.33)
    shards: int = 1  # attention: ranks a request's tokens are split over (decode context parallelism)

    @property
    def family(self) -> str:
        # MLAAttentionSpec subclasses FullAttentionSpec: the two may share a UniformTypeKVCacheSpecs group
        return FULL_ATTENTION.kind if self.kind == MLA_ATTENTION.kind else self.kind

    @property
    def state(self) -> bool:
        return self.kind == MAMBA

    @property
    def pads_page(self) -> bool:
        """0.33 pads a smaller page up to the largest (unify_kv_cache_spec_page_size); not an MLA page."""
        return self.kind != MLA_ATTENTION.kind

    def blocks(self, max_model_len: int, in_flight: int) -> int:
        """max_memory_usage_bytes / page: blocks one request of max_model_len takes in this layer."""
        if self.kind == SLIDING_WINDOW.kind:
            return cdiv(min(self.window - 1 + in_flight, max_model_len), self.block_size) + 1
        if self.kind == CHUNKED_LOCAL.kind:
            # ChunkedLocalAttentionSpec: the current chunk plus the tokens in flight, no extra block (a chunk
            # starts where the previous one ended, so the blocks before it are freed whole)
            return cdiv(min(self.window + in_flight, max_model_len), self.block_size)
        if self.kind == MAMBA:
            return self.held  # MambaSpec.max_memory_usage_bytes / page
        # FullAttentionSpec.max_memory_usage_bytes: each of the DCP ranks keeps cdiv(M, DCP) of the tokens
        return cdiv(cdiv(max_model_len, self.shards), self.block_size)


def attention_spec(layer: LayerSpec, *, block_size: int, page: int, shards: int, all_full: bool,
                   chunked_as_full: bool) -> PageSpec:
    """The spec of an attention layer. `all_full`: the hybrid KV cache manager is off, and unify_hybrid_kv_cache_specs
    makes sliding and chunked layers full attention; `chunked_as_full`: 0.10.1-0.13 do so for chunked layers."""
    r = rule(layer)
    kind, window = r.kind, (layer.window if r.windowed else None)
    if (all_full and r.windowed) or (chunked_as_full and r is CHUNKED_LOCAL):
        kind, window = FULL_ATTENTION.kind, None
    return PageSpec(kind, window, block_size, page, shards=shards)


def window_notes(specs, seq: int, in_flight: int) -> list[str]:
    """What the sliding-window and chunked-local layers are charged for a request of `seq`."""
    notes = []
    slides = [s for s in specs if s.kind == SLIDING_WINDOW.kind]
    if slides and min(s.window - 1 + in_flight for s in slides) >= seq:
        notes.append(f"sliding-window layers are charged the whole max_model_len: window - 1 + {in_flight:,} tokens in "
                     "flight (max_num_batched_tokens) reach past it")
    chunks = [s for s in specs if s.kind == CHUNKED_LOCAL.kind]
    if chunks:
        c = min(s.window for s in chunks)
        if c + in_flight >= seq:
            notes.append(f"chunked-local layers are charged the whole max_model_len: the chunk ({c:,}) + {in_flight:,} "
                         "tokens in flight reach past it")
        else:
            notes.append(f"chunked-local layers hold the current chunk plus the tokens in flight ({c:,} + {in_flight:,} "
                         "tokens a request), not the whole max_model_len; with EAGLE or VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_"
                         "HYBRID_KV_CACHE=0 vLLM turns its hybrid KV cache manager off and charges them the whole length")
    return notes
