"""SGLang's pool rule for each layer kind: the one place the SGLang engine dispatches on a kind (issue 24). Pure.

SGLang keeps a layer's cache in one of its pools (mem_cache/memory_pool.py MHATokenToKVPool, MLATokenToKVPool;
mem_cache/swa_memory_pool.py SWAKVPool for sliding-window layers beside the full ones; MambaPool inside
HybridLinearKVPool for linear-attention / Mamba state). POOL_RULES maps each kvplan layer kind (kvplan/core/layers.py)
to its pool; a kind missing from the table is refused by name (exit 3, `refuse_unmapped`), never sized as another.
The rest of the engine asks a layer's rule (`rule`, `pool`), never the kind itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.layers import CHUNKED, FULL, MLA, NONE, SLIDING, STATE, LayerSpec, KindTable


@dataclass(frozen=True)
class PoolRule:
    """Where SGLang keeps the layers of one kind, and what kvplan reads off that pool."""

    pool: str | None  # the pool class; None: the layer keeps nothing
    tokens: bool = False  # one slot per token in a KV pool (full, or the SWA pool's window)
    latent: bool = False  # MLATokenToKVPool: the MLA backends' page size (R7)
    state: bool = False  # one MambaPool slot per request, whatever its length (R5)
    windowed: bool = False  # goes to the SWA pool where the release gives the model one (R4), else the full pool
    what: str = ""  # how a note names these layers

    @property
    def full(self) -> bool:
        """Kept at the whole length in the full-attention pool, on every release."""
        return self.tokens and not self.windowed


MHA_POOL = PoolRule("MHATokenToKVPool", tokens=True)
MLA_POOL = PoolRule("MLATokenToKVPool", tokens=True, latent=True)
SWA_SLIDING = PoolRule("SWAKVPool", tokens=True, windowed=True, what="sliding")
# SGLang's SWA pool has one window (model_runner_components/load_model_utils.py resolve_sliding_window_size): the
# config's sliding_window, else attention_chunk_size, so Llama 4's chunked-local layers live in the SWA pool
SWA_CHUNKED = PoolRule("SWAKVPool", tokens=True, windowed=True, what="chunked-local")
MAMBA_POOL = PoolRule("MambaPool", state=True)
NO_POOL = PoolRule(None)

# layer kind -> SGLang's pool. Not mapped (refused by name): mla_indexed (NSA's indexer keys beside the latent),
# compressed / compressed_indexed (DeepSeek-V4), full_indexed (MiniMax-M3): how SGLang pools each is not yet read
# from its source
POOL_RULES: dict[str, PoolRule] = {
    FULL: MHA_POOL,
    SLIDING: SWA_SLIDING,
    CHUNKED: SWA_CHUNKED,
    MLA: MLA_POOL,
    STATE: MAMBA_POOL,
    NONE: NO_POOL,
}

# the pools a layer's bytes are counted in (engine._cell_bytes)
FULL_CELL, SWA_CELL, STATE_CELL = "full", "swa", "state"


# the table's refusal of an unmapped kind (exit 3, by name) and a layer's rule (kvplan/core/layers.py KindTable)
TABLE = KindTable("SGLang", POOL_RULES)
refuse_unmapped, rule = TABLE.refuse_unmapped, TABLE.rule


def cell(layer: LayerSpec, swa: bool) -> str | None:
    """The pool one token (a state: one request) of the layer is counted in; `swa`: the release gives the model its
    SWA pool, else windowed layers are full attention (R4)."""
    r = rule(layer)
    if r.state:
        return STATE_CELL
    if r.windowed and swa:
        return SWA_CELL
    return FULL_CELL if r.tokens else None


def standalone_draft_layers_pooled(layers) -> bool:
    """Whether every layer of a STANDALONE draft is full attention, MLA or cacheless: the draft pools kvplan sizes
    (the strict table: a kind it does not map is not one)."""
    return all(POOL_RULES.get(layer.kind) in (MHA_POOL, MLA_POOL, NO_POOL) for layer in layers)
