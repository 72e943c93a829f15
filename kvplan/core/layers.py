"""The layer kinds: one class per kind of decoder layer, each owning its cache rules. Pure.

Like vLLM's KVCacheSpec subclasses (vllm/v1/kv_cache_interface.py FullAttentionSpec, SlidingWindowSpec,
ChunkedLocalAttentionSpec, MLAAttentionSpec, MambaSpec), a layer answers for itself:
  - `token_bytes(kv, tp)`: bytes one token adds to this layer on one tensor-parallel rank;
  - `state_bytes(tp)`: bytes one sequence keeps in it whatever its length (recurrent state);
  - `tokens_kept(seq)`: tokens of a sequence of `seq` it keeps, as transformers' StaticCache allocates them
    (engines that keep a different number say so themselves);
  - `heads_per_rank(tp)`: KV heads on one rank (0 for layers without per-head K/V).
Consumers that need kind-specific presentation (a formula in `explain`, a tensor shape in the probe) may still ask
`kind`; the rules live here once. Adding a layer kind is one class and a line in KINDS.

Per layer and rank, one token costs
    full / sliding / chunked:  kv_heads_per_rank x (head_dim + v_head_dim) x bits / 8
    mla:             (kv_lora_rank + qk_rope_head_dim) x bits / 8   (one latent, no factor 2, not split by TP)
    state / none:    0   (state layers hold a fixed amount per sequence instead)
    compressed:      2 x head_dim x bits / 8 (the window's K and V); the compressed entries on top are the kind's
                     own `seq_bytes` rule
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kvplan.core.dtypes import DType, dtype
from kvplan.core.errors import InputError, UnsupportedError

FULL, SLIDING, CHUNKED, MLA, STATE, NONE = "full", "sliding", "chunked", "mla", "state", "none"
INDEXED_MLA = "mla_indexed"  # MLA with DeepSeek Sparse Attention's indexer key cache (DeepSeek-V3.2, GLM-5)
# DeepSeek-V4's attention: a sliding window plus entries compressed every `ratio` tokens (heavily compressed, HCA),
# and the same with the lightning indexer's compressed keys (compressed sparse attention, CSA)
COMPRESSED, COMPRESSED_INDEXED = "compressed", "compressed_indexed"
# full attention with a sparse-attention indexer's key beside it (MiniMax-M3's lightning indexer)
INDEXED_FULL = "full_indexed"


@dataclass(frozen=True)
class StateSpec:
    """Fixed per-sequence state of one linear-attention / SSM layer (whole model, before TP).

    conv_shape and recurrent_shape are the per-sequence tensor shapes; TP splits the first dimension
    of each (channels of the conv state, heads of the recurrent state), as vLLM shards Mamba layers.
    """

    conv_shape: tuple[int, ...]
    recurrent_shape: tuple[int, ...]
    conv_dtype: str
    recurrent_dtype: str


@dataclass(frozen=True)
class CompressSpec:
    """DeepSeek-V4 compressed attention in one layer: every `ratio` tokens become one compressed entry of head_dim
    (0: the layer keeps its sliding window only); `index_head_dim`: the lightning indexer's compressed key width on
    the layers that run it (compressed sparse attention), None on the others."""

    ratio: int
    index_head_dim: int | None = None


@dataclass(frozen=True)
class MlaSpec:
    """Multi-head latent attention: one compressed latent per token, shared by all heads."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    # the query's low-rank projection (DeepSeek-V2/V3, Kimi-K2); None where the query is projected directly
    # (DeepSeek-V2-Lite, Moonlight). It caches nothing; the engines keep its a-projection whole on every TP rank
    q_lora_rank: int | None = None
    # DeepSeek Sparse Attention: the lightning indexer's key width (index_head_dim); its layers keep one such key
    # per token beside the latent. None without DSA
    index_head_dim: int | None = None

    @property
    def latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim


def kv_heads_per_rank(kv_heads: int, tp: int, *, where: str = "--tp") -> int:
    """KV heads each TP rank holds: kv/tp, or 1 replicated head when tp > kv (vLLM's rule).

    vLLM requires kv % tp == 0, or tp % kv == 0 when it replicates (vllm/config/parallel.py).
    """
    if kv_heads % tp == 0:
        return kv_heads // tp
    if tp % kv_heads == 0:
        return 1
    raise InputError(f"tensor parallel size {tp} does not divide {kv_heads} KV heads, nor do they divide it", where=where,
                     hint="choose a tp that divides the KV heads or a multiple of them")


def _bytes(elements: int, bits: int) -> int:
    return -(-(elements * bits) // 8)


@dataclass(frozen=True)
class LayerSpec:
    """One decoder layer's cache layout, fully resolved. The fields of every kind are present (0 / None where a
    kind has none) so that consumers and `dataclasses.replace` see one shape; the subclass decides the rules.

    The kinds below subclass it without `@dataclass` of their own: they add no field, and the generated __init__,
    __repr__ and __eq__ already go by the instance's class (repr names it, == requires the same class), so
    decorating each again would only build the same six methods per kind at every start."""

    kind: ClassVar[str] = NONE
    headed: ClassVar[bool] = False  # keeps per-head K and V
    windowed: ClassVar[bool] = False  # keeps a bounded number of tokens (`window`)
    # runs attention over the model's query heads, which tensor parallelism splits (every engine needs TP to divide
    # them: vLLM's verify_with_parallel_config); a recurrent state layer or a layer with no cache does not
    attends: ClassVar[bool] = False
    # --- engine-neutral questions the engines' shared code asks (issue 24: an engine dispatches on a kind only in
    # its specs table; what every engine asks the same way is the layer's own answer) ---
    # keeps MLA's compressed latent, one per token shared by all heads (DeepSeek-V2/V3 and the DSA kinds built on it)
    latent: ClassVar[bool] = False
    # keeps a fixed state per sequence whatever its length (Mamba / linear attention), not tokens
    recurrent: ClassVar[bool] = False
    # --- end of the engine-neutral questions ---
    kv_heads: int = 0
    head_dim: int = 0
    v_head_dim: int = 0
    # sliding layers: the window; chunked layers: the chunk length (attention_chunk_size). Either way the most
    # tokens transformers' StaticCache keeps for the layer (cache_utils.py maps both "sliding_attention" and
    # "chunked_attention" to StaticSlidingWindowLayer); engines differ for chunked layers and say so themselves
    window: int | None = None
    mla: MlaSpec | None = None  # mla layers only
    state: StateSpec | None = None  # state layers only
    compress: CompressSpec | None = None  # compressed layers only
    index_head_dim: int | None = None  # full_indexed layers: the indexer's key width

    def heads_per_rank(self, tp: int = 1) -> int:
        return 0

    def token_bytes(self, kv: DType, tp: int = 1) -> int:
        return 0

    def state_bytes(self, tp: int = 1) -> int:
        return 0

    def tokens_kept(self, seq: int) -> int:
        return 0

    def seq_bytes(self, kv: DType, tp: int, seq: int) -> int:
        """Bytes one sequence of `seq` tokens keeps in this layer on one rank, beside its fixed state: for most kinds
        the bytes a token adds times the tokens kept; a kind that keeps more than that says so itself."""
        return self.token_bytes(kv, tp) * self.tokens_kept(seq)

    def peak_seq_bytes(self, kv: DType, tp: int, seq: int) -> int:
        """The most `seq_bytes` is at any length up to `seq`: what a sequence growing to `seq` needs room for. The
        same as seq_bytes(seq) for every kind whose cache never shrinks as the sequence grows."""
        return self.seq_bytes(kv, tp, seq)

    @property
    def caches(self) -> bool:
        """Keeps anything for a sequence (K/V, a latent, or a state)."""
        return self.kind != NONE


class NoCacheLayer(LayerSpec):
    """A layer without attention (Nemotron-Super's no_op blocks): nothing to keep."""


class FullAttention(LayerSpec):
    kind: ClassVar[str] = FULL
    headed: ClassVar[bool] = True
    attends: ClassVar[bool] = True

    def heads_per_rank(self, tp: int = 1) -> int:
        return kv_heads_per_rank(self.kv_heads, tp)

    def token_bytes(self, kv: DType, tp: int = 1) -> int:
        heads = self.heads_per_rank(tp)
        return kv.row_bytes(heads * (self.head_dim + self.v_head_dim), heads)

    def tokens_kept(self, seq: int) -> int:
        return seq


class SlidingWindow(FullAttention):
    """Attends to the last `window` tokens; StaticCache keeps min(seq, window) of them."""

    kind: ClassVar[str] = SLIDING
    windowed: ClassVar[bool] = True

    def tokens_kept(self, seq: int) -> int:
        return min(seq, self.window)


class IndexedFullAttention(FullAttention):
    """Full attention whose sparse-attention indexer keeps one key of index_head_dim per token beside K and V
    (MiniMax-M3). transformers 5.24 MiniMaxM3VLSparseStaticCacheLayer: keys and values [batch, kv_heads, N, head_dim]
    plus idx_keys [batch, 1, N, index_head_dim], all in the cache dtype. The index key is one head that every TP rank
    keeps whole (vLLM 0.33 models/minimax_m3/common/indexer.py: a one-head MLAAttentionSpec side cache, bf16 or fp8
    by its own indexer_kv_dtype), so an engine maps this kind itself or refuses it."""

    kind: ClassVar[str] = INDEXED_FULL

    def token_bytes(self, kv: DType, tp: int = 1) -> int:
        return super().token_bytes(kv, tp) + _bytes(self.index_head_dim, kv.bits)


class ChunkedLocal(FullAttention):
    """Attends within its current chunk of `window` tokens (Llama 4's attention_chunk_size); transformers'
    StaticCache allocates, and keeps filled, a rolling buffer of min(seq, chunk) tokens for it."""

    kind: ClassVar[str] = CHUNKED
    windowed: ClassVar[bool] = True

    def tokens_kept(self, seq: int) -> int:
        return min(seq, self.window)


class LatentAttention(LayerSpec):
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi): one latent per token, every TP rank holds it whole."""

    kind: ClassVar[str] = MLA
    attends: ClassVar[bool] = True
    latent: ClassVar[bool] = True

    def token_bytes(self, kv: DType, tp: int = 1) -> int:
        return kv.row_bytes(self.mla.latent_dim, 1)  # one latent "head", not split by TP

    def tokens_kept(self, seq: int) -> int:
        return seq


class IndexedLatentAttention(LatentAttention):
    """MLA with DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5.x): beside the latent, the lightning indexer keeps
    one key of index_head_dim per token, a single head that every TP rank holds whole.

    As transformers' StaticIndexedLayer keeps it (cache_utils.py: indexer_keys [batch, max_cache_len, index_head_dim]
    in the cache dtype), one token costs (kv_lora_rank + qk_rope_head_dim + index_head_dim) x bits / 8. Engines store
    the index key their own way (vLLM 0.33 models/deepseek_v2.py DeepseekV32IndexerCache: fp8 values plus a float32
    scale per 128, index_head_dim + index_head_dim / 128 x 4 = 132 B, whatever the KV dtype), so an engine maps this
    kind itself or refuses it."""

    kind: ClassVar[str] = INDEXED_MLA

    def token_bytes(self, kv: DType, tp: int = 1) -> int:
        return _bytes(self.mla.latent_dim + self.mla.index_head_dim, kv.bits)


class CompressedAttention(LayerSpec):
    """DeepSeek-V4's attention layer without the indexer: one K = V head of head_dim over a sliding window, plus (ratio
    > 0, heavily compressed attention) one compressed entry of head_dim for every `ratio` tokens. Every TP rank keeps
    it whole (transformers DeepseekV4Config: attention replicated; vLLM 0.33 models/deepseek_v4: max_tp_shards=1).

    As transformers 5.24 keeps it (models/deepseek_v4 DeepseekV4HCACache over DynamicSlidingWindowLayer, measured on
    `meta`; it has no StaticCache for V4), a sequence of N tokens holds, in elements:
        window:      2 x min(N, window - 1) x head_dim      (keys and values both stored)
        compressed:  (N // ratio) x head_dim
        buffer:      2 x (N % ratio) x head_dim             (the open window's kv and gate, awaiting compression)
    Engines allocate it their own way (vLLM pages the compressed entries and compressor states in page-shared
    groups), so an engine maps this kind itself or refuses it."""

    kind: ClassVar[str] = COMPRESSED
    attends: ClassVar[bool] = True

    def token_bytes(self, kv: DType, tp: int = 1) -> int:
        return _bytes(2 * self.head_dim, kv.bits)  # the window's K and V: what each token adds at first

    def tokens_kept(self, seq: int) -> int:
        return min(seq, self.window - 1)  # DynamicSlidingWindowLayer keeps the last window - 1

    def _compressed_elements(self, seq: int) -> int:
        m = self.compress.ratio
        if not m:
            return 0
        return (seq // m) * self.head_dim + 2 * (seq % m) * self.head_dim

    def seq_bytes(self, kv: DType, tp: int, seq: int) -> int:
        return _bytes(2 * self.tokens_kept(seq) * self.head_dim + self._compressed_elements(seq), kv.bits)

    def peak_seq_bytes(self, kv: DType, tp: int, seq: int) -> int:
        # the open window drains into one entry at every multiple of the ratio, so the cache shrinks there (HCA at
        # 127 -> 128 tokens: 520,192 -> 261,120 B in bf16). Within a window it only grows, and the last length before
        # each boundary holds more than the one before the previous boundary: the peak up to seq is seq itself or
        # the last length before the latest boundary
        m = self.compress.ratio
        before = (seq // m) * m - 1 if m and seq >= m else 0
        return max(self.seq_bytes(kv, tp, seq), self.seq_bytes(kv, tp, before) if before > 0 else 0)


class CompressedIndexedAttention(CompressedAttention):
    """DeepSeek-V4's compressed sparse attention: the compressor runs two overlapping series (width 2 x head_dim) and
    the lightning indexer compresses its own keys of index_head_dim alongside. transformers 5.24 DeepseekV4CSACache
    holds, in elements, for N tokens (I = index_head_dim, m = ratio):
        window:      2 x min(N, window - 1) x head_dim
        compressed:  (N // m) x (head_dim + I)                 (entries and indexer keys)
        buffer:      4 x (N % m) x (head_dim + I)              (kv and gate, both series, both compressors)
        overlap:     2 x m x (head_dim + I) once N >= m        (the previous window's series kept for the next)"""

    kind: ClassVar[str] = COMPRESSED_INDEXED

    def _compressed_elements(self, seq: int) -> int:
        m, width = self.compress.ratio, self.head_dim + self.compress.index_head_dim
        return (seq // m) * width + 4 * (seq % m) * width + (2 * m * width if seq >= m else 0)


class StateLayer(LayerSpec):
    """Linear attention / SSM (Mamba, gated delta-net): a fixed state per sequence; TP splits the first dimension of
    each state tensor (ceil), as vLLM shards Mamba layers."""

    kind: ClassVar[str] = STATE
    recurrent: ClassVar[bool] = True

    def state_bytes(self, tp: int = 1) -> int:
        def shard(shape: tuple[int, ...]) -> int:
            n = -(-shape[0] // tp)
            for d in shape[1:]:
                n *= d
            return n

        s = self.state
        return _bytes(shard(s.conv_shape), dtype(s.conv_dtype).bits) + _bytes(shard(s.recurrent_shape), dtype(s.recurrent_dtype).bits)


# kind -> class: the one table of layer kinds
KINDS: dict[str, type[LayerSpec]] = {c.kind: c for c in (FullAttention, SlidingWindow, ChunkedLocal, LatentAttention,
                                                          IndexedLatentAttention, IndexedFullAttention,
                                                          CompressedAttention, CompressedIndexedAttention, StateLayer,
                                                          NoCacheLayer)}
LAYER_KINDS = tuple(KINDS)
# kinds that keep per-head K and V; a consumer that switches on kinds tests membership here, so a new windowed
# kind is not dropped
HEADED_KINDS = tuple(k for k, c in KINDS.items() if c.headed)
# kinds whose layers keep a bounded number of tokens (LayerSpec.window): sliding windows and local chunks
WINDOWED_KINDS = tuple(k for k, c in KINDS.items() if c.windowed)


def make_layer(kind: str, **fields) -> LayerSpec:
    """A layer of `kind` (one of LAYER_KINDS) with its fields."""
    return KINDS[kind](**fields)


def as_kind(layer: LayerSpec, kind: str, **changes) -> LayerSpec:
    """The same layer as another kind (explain's what-ifs: MHA instead of MLA, no sliding window)."""
    fields = {f: getattr(layer, f) for f in ("kv_heads", "head_dim", "v_head_dim", "window", "mla", "state", "compress",
                                             "index_head_dim")}
    fields.update(changes)
    return make_layer(kind, **fields)


# the kinds every serving engine has mapped from the start; an engine that maps a newer kind adds it to its own set
ENGINE_BASE_KINDS = frozenset({FULL, SLIDING, CHUNKED, MLA, STATE, NONE})


def require_mapped_kinds(layers, mapped: frozenset[str], engine: str, where: str) -> None:
    """UnsupportedError (exit 3) naming the first layer kind the engine has no page or pool rule for: a new kind is
    never dropped from a pool by an engine that switches on the kinds it knows."""
    for layer in layers:
        if layer.kind not in mapped:
            raise UnsupportedError(f"{engine} does not model the {layer.kind!r} layers of this model "
                                   f"({type(layer).__name__}): how it keeps them is not read from its source",
                                   where=where, hint="--engine static sizes it as transformers keeps it")

