"""TensorRT-LLM's pool rule for each layer kind: the one place the TensorRT-LLM engine dispatches on a kind (issue
24). Pure.

TensorRT-LLM keeps every attention layer's cache in one KV cache manager (_torch/pyexecutor/resource_manager.py
KVCacheManager), K and V per KV head (CacheType.SELF) or MLA's latent alone (CacheType.SELFKONLY, kv_factor 1); a
layer with a sliding window gets its own share of the pool for that window (VSWA, T10). POOL_RULES maps each kvplan
layer kind (kvplan/core/layers.py) to that rule; a kind missing from the table is refused by name (exit 3,
`refuse_unmapped`), and a mapped kind whose pool kvplan has not read says so (`refuse_unmodelled`, exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.errors import UnsupportedError
from kvplan.core.layers import CHUNKED, FULL, MLA, NONE, SLIDING, STATE, LayerSpec, KindTable
from kvplan.engines.paged import cdiv


@dataclass(frozen=True)
class PoolRule:
    """How TensorRT-LLM keeps the layers of one kind."""

    cache: str | None  # what keeps them; None: the layer keeps nothing
    tokens: bool = False  # a row of the KV pool per token
    latent: bool = False  # MLA's latent alone (CacheType.SELFKONLY): latent_dim per token, whole on every rank
    windowed: bool = False  # kept for its attention window (its own VSWA share) when the window is shorter
    refused: str | None = None  # how TensorRT-LLM keeps them is not modelled: what kvplan says (exit 3)

    def pool_bytes(self, layer: LayerSpec, kv_tp: int, dtype_bytes: int) -> int:
        """Bytes one token takes in the pool on one GPU (T2): cdiv(KV heads, TP) rows of head_dim + v_head_dim, or
        the latent."""
        if self.latent:
            return layer.mla.latent_dim * dtype_bytes
        return cdiv(layer.kv_heads, kv_tp) * (layer.head_dim + layer.v_head_dim) * dtype_bytes

    def estimator_bytes(self, layer: LayerSpec, kv_tp: int, dtype_bytes: int) -> int:
        """The engine backend's estimator's bytes per token (T3): 2 x head_dim x KV heads // tp, which is less than
        the pool's past tp > KV heads; the latent for MLA."""
        if self.latent:
            return layer.mla.latent_dim * dtype_bytes
        return 2 * (layer.head_dim * layer.kv_heads // kv_tp) * dtype_bytes


KV_HEADS = PoolRule("KVCacheManager, K and V per KV head (CacheType.SELF)", tokens=True)
KV_WINDOW = PoolRule("KVCacheManager, K and V per KV head, its window's share (VSWA)", tokens=True, windowed=True)
LATENT = PoolRule("KVCacheManager, the latent (CacheType.SELFKONLY)", tokens=True, latent=True)
MAMBA = PoolRule("MambaHybridCacheManager",
                 refused="TensorRT-LLM's Mamba hybrid cache (MambaHybridCacheManager) is not modelled")
# TensorRT-LLM applies attention_chunk_size in its attention kernel (docs/source/features/long-sequence.md: Llama 4,
# TRTLLM backend, context requests only); whether its KV pool keeps the chunk or the whole sequence for those layers
# is not settled from the source kvplan read: no guess
CHUNKED_LOCAL = PoolRule("KVCacheManager (chunked-local)",
                         refused="TensorRT-LLM's KV pool for chunked-local attention layers (Llama 4) is not modelled")
NO_CACHE = PoolRule(None)

# layer kind -> TensorRT-LLM's rule (the refused ones in the order they are checked). Not mapped (refused by name):
# mla_indexed (DSA's indexer keys), compressed / compressed_indexed (DeepSeek-V4), full_indexed (MiniMax-M3)
POOL_RULES: dict[str, PoolRule] = {
    FULL: KV_HEADS,
    SLIDING: KV_WINDOW,
    MLA: LATENT,
    STATE: MAMBA,
    CHUNKED: CHUNKED_LOCAL,
    NONE: NO_CACHE,
}


# the table's refusal of an unmapped kind (exit 3, by name) and a layer's rule (kvplan/core/layers.py KindTable)
TABLE = KindTable("TensorRT-LLM", POOL_RULES)
refuse_unmapped, rule = TABLE.refuse_unmapped, TABLE.rule


def refuse_unmodelled(layers) -> None:
    """UnsupportedError (exit 3) for a mapped kind whose pool kvplan has not modelled."""
    present = {rule(layer) for layer in layers}
    for r in POOL_RULES.values():
        if r.refused is not None and r in present:
            raise UnsupportedError(r.refused, where="--engine trtllm", hint="try --engine vllm or --engine sglang")

