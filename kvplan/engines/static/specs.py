"""The static engine's rule for each layer kind: the one place it dispatches on a kind (issue 24). Pure.

The static engine keeps what transformers' caches keep (cache_utils.py StaticCache and the models' own caches), and
each layer class in kvplan/core/layers.py sizes itself that way; CACHE_RULES names, per kind, the transformers cache
layer whose allocation the class follows. A kind missing from the table is refused by name (exit 3,
`refuse_unmapped`) like on every engine, until its transformers cache is read.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.layers import (CHUNKED, COMPRESSED, COMPRESSED_INDEXED, FULL, INDEXED_FULL, INDEXED_MLA, MLA, NONE,
                                SLIDING, STATE, KindTable)


@dataclass(frozen=True)
class CacheRule:
    """The transformers cache layer (5.x) that keeps the layers of one kind; None: they keep nothing."""

    layer: str | None
    window: str | None = None  # the config key of the window it keeps, for the notes


STATIC = CacheRule("StaticLayer")
LATENT = CacheRule("StaticLayer (the latent as one key head)")
SLIDING_WINDOW = CacheRule("StaticSlidingWindowLayer", window="sliding_window")
# cache_utils.py maps "chunked_attention" to StaticSlidingWindowLayer too: the chunk is its window
CHUNKED_WINDOW = CacheRule("StaticSlidingWindowLayer", window="attention_chunk_size")

# layer kind -> the transformers cache that keeps it
CACHE_RULES: dict[str, CacheRule] = {
    FULL: STATIC,
    SLIDING: SLIDING_WINDOW,
    CHUNKED: CHUNKED_WINDOW,
    MLA: LATENT,
    INDEXED_MLA: CacheRule("StaticIndexedLayer"),
    INDEXED_FULL: CacheRule("MiniMaxM3VLSparseStaticCacheLayer"),
    COMPRESSED: CacheRule("DeepseekV4HCACache"),
    COMPRESSED_INDEXED: CacheRule("DeepseekV4CSACache"),
    STATE: CacheRule("the model's recurrent-state cache (conv and recurrent state per sequence)"),
    NONE: CacheRule(None),
}


# the table's refusal of an unmapped kind (exit 3, by name) and a layer's rule (kvplan/core/layers.py KindTable)
TABLE = KindTable("the static engine", CACHE_RULES)
refuse_unmapped, rule = TABLE.refuse_unmapped, TABLE.rule


def window_notes(spec, seq: int) -> list[str]:
    """What the sliding-window and chunked layers keep of a sequence of `seq` tokens."""
    rules = {CACHE_RULES.get(layer.kind) for layer in spec.layer_specs}
    notes = []
    if SLIDING_WINDOW in rules and seq > (spec.sliding_window or 0):
        notes.append(f"sliding layers keep only the last {spec.sliding_window} tokens")
    if CHUNKED_WINDOW in rules and seq > (spec.attention_chunk_size or 0):
        # transformers' StaticCache gives a chunked layer the sliding-window buffer (core/cache.py cached_tokens)
        notes.append(f"chunked-attention layers keep {spec.attention_chunk_size} tokens, as transformers' StaticCache does")
    return notes
