"""The layer kinds: one class per kind of decoder layer, each owning its cache rules. Pure.

Like vLLM's KVCacheSpec subclasses (vllm/v1/kv_cache_interface.py FullAttentionSpec, SlidingWindowSpec,
ChunkedLocalAttentionSpec, MLAAttentionSpec, MambaSpec), a layer answers for itself:
  - `token_bytes(kv, tp)`: bytes one token adds to this layer on one tensor-parallel rank;
  - `state_bytes(tp)`: bytes one sequence keeps in it whatever its length (recurrent state);
  - `tokens_kept(seq)`: tokens of a sequence of `seq` it keeps, as transformers' StaticCache allocates them
    (engines that keep a different number say so themselves);
  - `heads_per_rank(tp)`: KV heads on one rank (0 for layers without per-head K/V).
and what the rest of kvplan asks of it: the tensors the probe allocates (`token_tensors`, `state_tensors`), the
terms of the latency model (`pair_dims`, `latency_gap`, `decode_read_bytes`), explain's formulas and what-ifs (`token_formula`,
`seq_formula`, `with_kv_heads` ...), and what the spec reader requires of a model (`window_from`, `indexed`,
`compressed`, `latent`, `recurrent`). None of those modules compares kinds; an engine maps kinds to its own pools in
its one table (engines/<engine>/specs.py). Adding a layer kind is one class and a line in KINDS.

Per layer and rank, one token costs
    full / sliding / chunked:  kv_heads_per_rank x (head_dim + v_head_dim) x bits / 8
    mla:             (kv_lora_rank + qk_rope_head_dim) x bits / 8   (one latent, no factor 2, not split by TP)
    state / none:    0   (state layers hold a fixed amount per sequence instead)
    compressed:      2 x head_dim x bits / 8 (the window's K and V); the compressed entries on top are the kind's
                     own `seq_bytes` rule
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from math import gcd, prod
from typing import ClassVar, Generic, Mapping, TypeVar

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


def _sum_kept(first: int, last: int, cap: int | None) -> int:
    """sum over c = first..last of min(c, cap) (cap None: c), in closed form; 0 when last < first."""
    if last < first:
        return 0
    if cap is None or last <= cap:
        return (first + last) * (last - first + 1) // 2
    if first > cap:
        return cap * (last - first + 1)
    return (first + cap) * (cap - first + 1) // 2 + cap * (last - cap)


def _sum_div(first: int, last: int, m: int) -> int:
    """sum over c = first..last of c // m, in closed form; 0 when last < first."""
    def upto(n: int) -> int:  # sum over c = 0..n of c // m
        if n < 0:
            return 0
        q, r = divmod(n, m)
        return m * q * (q - 1) // 2 + q * (r + 1)

    return upto(last) - upto(first - 1) if last >= first else 0


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
    # --- what the spec reader, the probe and the analyses ask a layer (issue 24: they dispatch on none of the kinds) ---
    # a sparse-attention indexer keeps its own key per token (or per compressed entry) beside the cache
    indexed: ClassVar[bool] = False
    # keeps entries compressed every `ratio` tokens (CompressSpec; the spec's layout.compress_ratios)
    compressed: ClassVar[bool] = False
    # the model field that sets `window`, spelled alike in a spec file and in config.json; None without a window
    window_from: ClassVar[str | None] = None
    # what explain calls `window` in a formula
    window_word: ClassVar[str] = "window"
    # why the latency model (analysis/latency.py) refuses this kind: its keys per query are not the sum it has
    latency_gap: ClassVar[str | None] = None
    # how the probe's paged pool sizes this kind when the rule is not cdiv(tokens kept, block size); None when it is
    blocks_rule: ClassVar[str | None] = None
    # --- end of what the spec reader, the probe and the analyses ask ---
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

    # --- the probe's tensors, the analyses' terms and explain's words, each kind its own (see the block above) ---

    def token_tensors(self, tp: int = 1) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """The tensors one token's cache is made of on one TP rank: (role, shape in elements), heads first and the
        width last. The probe lays them out (kvplan/probe/layout.py); at whole bytes per element their elements add
        up to `token_bytes`. None for a layer that keeps no token."""
        return ()

    def state_tensors(self, tp: int = 1) -> tuple[tuple[str, tuple[int, ...], str], ...]:
        """The fixed per-sequence tensors on one TP rank: (role, shape, dtype name); none but in state layers."""
        return ()

    def blocks_held(self, seq: int, block_size: int) -> int:
        """The most blocks of `block_size` tokens one sequence growing to `seq` holds in a paged pool of this layer:
        the tokens it keeps, from a block boundary."""
        return -(-self.tokens_kept(seq) // block_size)

    def pair_dims(self, model_dims: int) -> int:
        """Dimensions one query multiplies with one key and its value (d_qk + d_v) per query head, for the latency
        model's attention FLOPs; `model_dims` is the model's head_dim + v_head_dim. 0: no term for this layer."""
        return 0

    def decode_read_bytes(self, kv: DType, tp: int, context: int) -> int:
        """The latency floor: cache bytes one decode step must read from this layer on one rank with `context`
        tokens cached, beside its fixed state. Every byte it keeps, for a kind whose query reads all of it."""
        return self.seq_bytes(kv, tp, context)

    def decode_read_sum(self, kv: DType, tp: int, first: int, last: int) -> int:
        """The sum of decode_read_bytes over contexts first..last (a generation's decode steps), in closed form."""
        return self.token_bytes(kv, tp) * _sum_kept(first, last, self.window)

    def token_formula(self, width: str, heads: str) -> str | None:
        """explain: the bytes one token adds, as a product with the numbers in (`width`: bytes per element and the
        dtype; `heads`: the KV heads on one GPU in words); None without a per-token cache."""
        return None

    def seq_formula(self, seq: int, count: int, token_bytes: int, state_bytes: int, kv_bytes: int) -> str:
        """explain: what one sequence of `seq` tokens keeps in `count` such layers on one GPU, numbers in."""
        return f"{state_bytes:,} B x {count} layers"

    def stored_words(self) -> str | None:
        """explain: what one such layer stores for each token, in words ("8 KV heads x 128 head_dim"), for the
        what-ifs' "what changes"; None for a layer that keeps no token (a state, or nothing)."""
        return None

    def attention_label(self, query_heads: int) -> str | None:
        """explain: what this layer's attention keeps, as people name it ("GQA", "MLA + DSA index keys"), for the
        model's `as configured (...)` line; None for a layer that keeps nothing."""
        return None

    # explain's what-ifs: the same layer built another way; a layer the what-if does not apply to is itself

    def with_kv_heads(self, kv_heads: int, head_dim: int, v_head_dim: int) -> LayerSpec:
        """As `kv_heads` KV heads of K and V (the MHA and MQA what-ifs)."""
        return self

    def as_latent(self, mla: MlaSpec) -> LayerSpec:
        """As one MLA latent per token (the MLA what-if)."""
        return self

    def without_window(self) -> LayerSpec:
        """Keeping every token (the no-window what-if)."""
        return self

    def with_window(self, window: int) -> LayerSpec | None:
        """As a sliding window of `window` tokens (the window what-ifs); None where the what-if does not apply."""
        return None

    # --- end of the probe's tensors, the analyses' terms and explain's words ---


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

    # --- the probe's tensors, the analyses' terms and explain's words ---

    def token_tensors(self, tp: int = 1) -> tuple[tuple[str, tuple[int, ...]], ...]:
        heads = self.heads_per_rank(tp)
        return ("k", (heads, self.head_dim)), ("v", (heads, self.v_head_dim))

    def pair_dims(self, model_dims: int) -> int:
        return self.head_dim + self.v_head_dim

    def token_formula(self, width: str, heads: str) -> str | None:
        if self.head_dim == self.v_head_dim:
            return f"2 (K and V) x {heads} x {self.head_dim} head_dim x {width}"
        return f"{heads} x ({self.head_dim} K + {self.v_head_dim} V) dims x {width}"

    def seq_formula(self, seq: int, count: int, token_bytes: int, state_bytes: int, kv_bytes: int) -> str:
        return _kept_formula(self, seq, count, token_bytes)

    def stored_words(self) -> str | None:
        if self.head_dim == self.v_head_dim:
            return f"{self.kv_heads} KV heads x {self.head_dim} head_dim"
        return f"{self.kv_heads} KV heads x ({self.head_dim} K + {self.v_head_dim} V) dims"

    def attention_label(self, query_heads: int) -> str | None:
        # by the KV heads each query head shares (Ainslie et al. 2023, GQA): one each, all one, or groups
        return "MHA" if self.kv_heads == query_heads else "MQA" if self.kv_heads == 1 else "GQA"

    def with_kv_heads(self, kv_heads: int, head_dim: int, v_head_dim: int) -> LayerSpec:
        return dataclasses.replace(self, kv_heads=kv_heads)

    def as_latent(self, mla: MlaSpec) -> LayerSpec:
        # a window or an indexer would go too: two changes, not the one the what-if names
        return self if self.windowed or self.indexed else LatentAttention(mla=mla)

    def with_window(self, window: int) -> LayerSpec | None:
        return None if self.windowed or self.indexed else as_kind(self, SLIDING, window=window)


def _kept_formula(layer: LayerSpec, seq: int, count: int, token_bytes: int) -> str:
    """explain: token bytes x layers x the tokens a sequence keeps, min(seq, window) written out where bounded."""
    kept = (f"min({seq:,}, {layer.window_word} {layer.window:,}) = {layer.tokens_kept(seq):,}" if layer.window is not None
            else f"{seq:,}")
    return f"{token_bytes:,} B x {count} layers x {kept} tokens"


class SlidingWindow(FullAttention):
    """Attends to the last `window` tokens; StaticCache keeps min(seq, window) of them."""

    kind: ClassVar[str] = SLIDING
    windowed: ClassVar[bool] = True
    window_from: ClassVar[str | None] = "sliding_window"

    def tokens_kept(self, seq: int) -> int:
        return min(seq, self.window)

    def without_window(self) -> LayerSpec:
        return as_kind(self, FULL, window=None)


class IndexedFullAttention(FullAttention):
    """Full attention whose sparse-attention indexer keeps one key of index_head_dim per token beside K and V
    (MiniMax-M3). transformers 5.24 MiniMaxM3VLSparseStaticCacheLayer: keys and values [batch, kv_heads, N, head_dim]
    plus idx_keys [batch, 1, N, index_head_dim], all in the cache dtype. The index key is one head that every TP rank
    keeps whole (vLLM 0.33 models/minimax_m3/common/indexer.py: a one-head MLAAttentionSpec side cache, bf16 or fp8
    by its own indexer_kv_dtype), so an engine maps this kind itself or refuses it."""

    kind: ClassVar[str] = INDEXED_FULL
    indexed: ClassVar[bool] = True

    def token_bytes(self, kv: DType, tp: int = 1) -> int:
        return super().token_bytes(kv, tp) + _bytes(self.index_head_dim, kv.bits)

    def token_tensors(self, tp: int = 1) -> tuple[tuple[str, tuple[int, ...]], ...]:
        return *super().token_tensors(tp), ("index_k", (1, self.index_head_dim))  # idx_keys [batch, 1, N, dim]

    def pair_dims(self, model_dims: int) -> int:
        # its queries attend to the indexer's top-k, fewer keys than the full term counts: left out of the sum,
        # which keeps it a lower bound
        return 0

    def token_formula(self, width: str, heads: str) -> str | None:
        return (f"{super().token_formula(width, heads)} + {self.index_head_dim} index_head_dim (the indexer's key, "
                f"every GPU) x {width}")

    def attention_label(self, query_heads: int) -> str | None:
        return f"{super().attention_label(query_heads)} + index keys"

    def decode_read_bytes(self, kv: DType, tp: int, context: int) -> int:
        # the indexer scores every cached token, so its keys are all read; attention then reads only the blocks it
        # selects (transformers 5.24 MiniMaxM3VL indexer: index_topk_blocks x index_block_size per index head, plus
        # local blocks), whose count the spec does not carry: left out, which keeps the floor a floor
        return _bytes(context * self.index_head_dim, kv.bits)

    def decode_read_sum(self, kv: DType, tp: int, first: int, last: int) -> int:
        return _bytes(_sum_kept(first, last, None) * self.index_head_dim, kv.bits)


class ChunkedLocal(FullAttention):
    """Attends within its current chunk of `window` tokens (Llama 4's attention_chunk_size); transformers'
    StaticCache allocates, and keeps filled, a rolling buffer of min(seq, chunk) tokens for it."""

    kind: ClassVar[str] = CHUNKED
    windowed: ClassVar[bool] = True
    window_from: ClassVar[str | None] = "attention_chunk_size"
    window_word: ClassVar[str] = "chunk"
    # a chunked-local query sees only the keys of its own chunk ((i - 1) mod C + 1 of them), not min(i, W): neither
    # the sliding nor the full term is right, and a wrong lower bound is worse than none
    latency_gap: ClassVar[str | None] = "chunked local attention (Llama 4) is not in the latency model yet"
    blocks_rule: ClassVar[str | None] = "chunked layers: the most blocks a chunk spans"

    def tokens_kept(self, seq: int) -> int:
        return min(seq, self.window)

    def blocks_held(self, seq: int, block_size: int) -> int:
        """A token attends to its own chunk only (positions [k x chunk, (k + 1) x chunk)), so once a chunk begins the
        blocks wholly before it are free (vLLM's ChunkedLocalAttentionManager hands them back): what is held is the
        blocks the current chunk spans. A chunk starting at offset o inside a block spans (o + chunk - 1) // B + 1
        blocks: cdiv(chunk, B) when B divides the chunk (Llama 4: 8192), one more at some offsets otherwise.
        The offsets k x chunk mod B repeat every B // gcd(chunk, B) chunks."""
        chunk = self.window
        if seq <= chunk:
            return -(-seq // block_size)
        whole = seq // chunk  # chunks that fill up
        best = max((k * chunk % block_size + chunk - 1) // block_size + 1
                   for k in range(min(whole, block_size // gcd(chunk, block_size))))
        rest = seq - whole * chunk  # the last, partial chunk
        if rest:
            best = max(best, (whole * chunk % block_size + rest - 1) // block_size + 1)
        return best


class LatentAttention(LayerSpec):
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi): one latent per token, every TP rank holds it whole."""

    kind: ClassVar[str] = MLA
    attends: ClassVar[bool] = True
    latent: ClassVar[bool] = True

    def token_bytes(self, kv: DType, tp: int = 1) -> int:
        return kv.row_bytes(self.mla.latent_dim, 1)  # one latent "head", not split by TP

    def tokens_kept(self, seq: int) -> int:
        return seq

    # --- the probe's tensors, the analyses' terms and explain's words ---

    def token_tensors(self, tp: int = 1) -> tuple[tuple[str, tuple[int, ...]], ...]:
        return (("latent", (self.mla.latent_dim,)),)

    def pair_dims(self, model_dims: int) -> int:
        return model_dims  # its queries and values have the model's head dims, not the latent's

    def token_formula(self, width: str, heads: str) -> str | None:
        index = f" + {self.mla.index_head_dim} index_head_dim" if self.indexed else ""
        return (f"({self.mla.kv_lora_rank} kv_lora_rank + {self.mla.qk_rope_head_dim} qk_rope_head_dim{index}) "
                f"latent{' and index key' if index else ''} x {width}, one per token, every GPU holds it all")

    def seq_formula(self, seq: int, count: int, token_bytes: int, state_bytes: int, kv_bytes: int) -> str:
        return _kept_formula(self, seq, count, token_bytes)

    def stored_words(self) -> str | None:
        # the heads are the query's: the cache keeps the one latent they all read (DeepSeek-V2 paper, section 2.1.2)
        index = f" + a {self.mla.index_head_dim} index_head_dim index key" if self.indexed else ""
        return (f"1 latent of {self.mla.kv_lora_rank} kv_lora_rank + {self.mla.qk_rope_head_dim} qk_rope_head_dim"
                f"{index} per token")

    def attention_label(self, query_heads: int) -> str | None:
        return "MLA"

    def with_kv_heads(self, kv_heads: int, head_dim: int, v_head_dim: int) -> LayerSpec:
        return FullAttention(kv_heads=kv_heads, head_dim=head_dim, v_head_dim=v_head_dim)


class IndexedLatentAttention(LatentAttention):
    """MLA with DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5.x): beside the latent, the lightning indexer keeps
    one key of index_head_dim per token, a single head that every TP rank holds whole.

    As transformers' StaticIndexedLayer keeps it (cache_utils.py: indexer_keys [batch, max_cache_len, index_head_dim]
    in the cache dtype), one token costs (kv_lora_rank + qk_rope_head_dim + index_head_dim) x bits / 8. Engines store
    the index key their own way (vLLM 0.33 models/deepseek_v2.py DeepseekV32IndexerCache: fp8 values plus a float32
    scale per 128, index_head_dim + index_head_dim / 128 x 4 = 132 B, whatever the KV dtype), so an engine maps this
    kind itself or refuses it."""

    kind: ClassVar[str] = INDEXED_MLA
    indexed: ClassVar[bool] = True
    # a DSA query attends to index_topk selected tokens after an indexer pass over all of them: neither term
    latency_gap: ClassVar[str | None] = "DeepSeek sparse attention (the indexer's top-k) is not in the latency model yet"

    def token_bytes(self, kv: DType, tp: int = 1) -> int:
        return _bytes(self.mla.latent_dim + self.mla.index_head_dim, kv.bits)

    def token_tensors(self, tp: int = 1) -> tuple[tuple[str, tuple[int, ...]], ...]:
        return *super().token_tensors(tp), ("index_k", (self.mla.index_head_dim,))  # indexer_keys [batch, N, dim]

    def attention_label(self, query_heads: int) -> str | None:
        return "MLA + DSA index keys"

    def with_kv_heads(self, kv_heads: int, head_dim: int, v_head_dim: int) -> LayerSpec:
        return self  # the what-ifs leave sparse attention as it is


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
    compressed: ClassVar[bool] = True
    window_from: ClassVar[str | None] = "sliding_window"

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

    # --- the probe's tensors, the analyses' terms and explain's words ---

    def token_tensors(self, tp: int = 1) -> tuple[tuple[str, tuple[int, ...]], ...]:
        # the window's K and V; the compressed entries on top grow per `ratio` tokens, not per token (seq_bytes)
        return ("k", (1, self.head_dim)), ("v", (1, self.head_dim))

    def token_formula(self, width: str, heads: str) -> str | None:
        return f"2 (K = V, both kept) x 1 head x {self.head_dim} head_dim x {width} in the window"

    def stored_words(self) -> str | None:
        return f"1 K = V head x {self.head_dim} head_dim in the window"

    def decode_read_bytes(self, kv: DType, tp: int, context: int) -> int:
        return _bytes(self._read_elements(context), kv.bits)

    def decode_read_sum(self, kv: DType, tp: int, first: int, last: int) -> int:
        m, d = self.compress.ratio, self.head_dim
        window = _sum_kept(first, last, self.window - 1) * d
        return _bytes(window + (_sum_div(first, last, m) * d if m else 0), kv.bits)

    def _read_elements(self, context: int) -> int:
        # a decode step reads the window once, K = V being one tensor (transformers 5.24 modeling_deepseek_v4.py
        # DeepseekV4Attention passes the same `kv` as keys and values), and every compressed entry (HCA attends to
        # them all); the open window's buffer is the compressor's, read only when it drains
        m, d = self.compress.ratio, self.head_dim
        return self.tokens_kept(context) * d + ((context // m) * d if m else 0)

    def attention_label(self, query_heads: int) -> str | None:
        # DeepSeek-V4's names (its technical report): heavily compressed attention (HCA), one entry per m tokens,
        # beside a sliding window; a layer whose ratio is 0 keeps the window only
        m = self.compress.ratio
        return f"HCA 1/{m}" if m else "sliding window"

    def seq_formula(self, seq: int, count: int, token_bytes: int, state_bytes: int, kv_bytes: int) -> str:
        c = self.compress
        entries = (f" + {seq // c.ratio:,} compressed entries (1 per {c.ratio} tokens)"
                   + (" with index keys" if c.index_head_dim else "") + " and the open window" if c.ratio else "")
        return (f"{count} layers x (min({seq:,}, window {self.window:,} - 1) = {self.tokens_kept(seq):,} tokens x "
                f"{token_bytes:,} B{entries}) = {kv_bytes:,} B")


class CompressedIndexedAttention(CompressedAttention):
    """DeepSeek-V4's compressed sparse attention: the compressor runs two overlapping series (width 2 x head_dim) and
    the lightning indexer compresses its own keys of index_head_dim alongside. transformers 5.24 DeepseekV4CSACache
    holds, in elements, for N tokens (I = index_head_dim, m = ratio):
        window:      2 x min(N, window - 1) x head_dim
        compressed:  (N // m) x (head_dim + I)                 (entries and indexer keys)
        buffer:      4 x (N % m) x (head_dim + I)              (kv and gate, both series, both compressors)
        overlap:     2 x m x (head_dim + I) once N >= m        (the previous window's series kept for the next)"""

    kind: ClassVar[str] = COMPRESSED_INDEXED
    indexed: ClassVar[bool] = True

    def _read_elements(self, context: int) -> int:
        # the window once (K = V) and the indexer's compressed key for every entry (DeepseekV4Indexer scores them
        # all); attention reads only the index_topk entries it selects, a count the spec does not carry: left out,
        # which keeps the floor a floor
        entries = context // self.compress.ratio
        return self.tokens_kept(context) * self.head_dim + entries * self.compress.index_head_dim

    def decode_read_sum(self, kv: DType, tp: int, first: int, last: int) -> int:
        window = _sum_kept(first, last, self.window - 1) * self.head_dim
        return _bytes(window + _sum_div(first, last, self.compress.ratio) * self.compress.index_head_dim, kv.bits)

    def attention_label(self, query_heads: int) -> str | None:
        # compressed sparse attention: one entry per m tokens, and the lightning indexer's compressed keys
        return f"CSA 1/{self.compress.ratio} + index keys"

    def _compressed_elements(self, seq: int) -> int:
        m, width = self.compress.ratio, self.head_dim + self.compress.index_head_dim
        return (seq // m) * width + 4 * (seq % m) * width + (2 * m * width if seq >= m else 0)


class StateLayer(LayerSpec):
    """Linear attention / SSM (Mamba, gated delta-net): a fixed state per sequence; TP splits the first dimension of
    each state tensor (ceil), as vLLM shards Mamba layers."""

    kind: ClassVar[str] = STATE
    recurrent: ClassVar[bool] = True

    def attention_label(self, query_heads: int) -> str | None:
        return "recurrent state"

    def state_bytes(self, tp: int = 1) -> int:
        return sum(_bytes(prod(shape), dtype(name).bits) for _, shape, name in self.state_tensors(tp))

    def state_tensors(self, tp: int = 1) -> tuple[tuple[str, tuple[int, ...], str], ...]:
        s = self.state
        return (("conv", (-(-s.conv_shape[0] // tp), *s.conv_shape[1:]), s.conv_dtype),
                ("recurrent", (-(-s.recurrent_shape[0] // tp), *s.recurrent_shape[1:]), s.recurrent_dtype))


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


def require_mapped_kinds(layers, mapped: frozenset[str] | Mapping[str, object], engine: str, where: str) -> None:
    """UnsupportedError (exit 3) naming the first layer kind the engine has no page or pool rule for: a new kind is
    never dropped from a pool by an engine that switches on the kinds it knows."""
    for layer in layers:
        if layer.kind not in mapped:
            raise UnsupportedError(f"{engine} does not model the {layer.kind!r} layers of this model "
                                   f"({type(layer).__name__}): how it keeps them is not read from its source",
                                   where=where, hint="--engine static sizes it as transformers keeps it")


Rule = TypeVar("Rule")


class KindTable(Generic[Rule]):
    """One engine's table from a layer kind to its page, pool or cache rule (its specs.py): the only place the engine
    dispatches on a kind. A kind the table has no rule for is refused by name (exit 3), never taken as another."""

    def __init__(self, engine: str, rules: Mapping[str, Rule]):
        self.engine = engine  # as the refusal names it: "vLLM", "the static engine"
        self.rules = rules

    def refuse_unmapped(self, layers, where: str) -> None:
        """UnsupportedError (exit 3) naming the first layer kind the table has no rule for."""
        require_mapped_kinds(layers, self.rules, self.engine, where)

    def rule(self, layer: LayerSpec) -> Rule:
        """The layer's rule; a kind without one is refused by name (exit 3), never kept as nothing."""
        self.refuse_unmapped((layer,), "the model's layers")
        return self.rules[layer.kind]

