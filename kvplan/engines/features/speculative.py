"""Speculative decoding: what the drafter adds to GPU memory. Pure.

Read from vLLM 0.33.0 (same rules in 0.19.0 where not said otherwise):

- method (config/speculative.py SpeculativeConfig.__post_init__): left out, `model: ngram` means ngram and any
  other model a draft model; the per-architecture MTP names (deepseek_mtp, qwen3_next_mtp, glm4_moe_mtp, ...) are
  deprecated spellings of `mtp`, whose draft is the target checkpoint itself;
- ngram, ngram_gpu and suffix propose from the prompt on the host (v1/spec_decode/ngram_proposer.py,
  suffix_decoding.py): no weights and no KV cache on the GPU;
- the drafter's attention layers register in the same static forward context as the target's, so
  get_kv_cache_spec() returns them with the target's and they share the one block pool
  (v1/worker/gpu/model_runner.py get_kv_cache_spec): a draft model's layers with its own KV heads, an EAGLE head's
  decoder layer(s), the MTP layer(s) of the checkpoint (DeepSeek-V3: an MLA layer);
- a draft model runs at the target's tensor-parallel size: draft_tensor_parallel_size may only be 1 or the target's
  (_verify_and_get_draft_tp), and DraftModelProposer._raise_if_draft_tp_mismatch refuses any other than the
  target's ("Currently, 'draft_tensor_parallel_size' and 'tensor_parallel_size' must be the same"); EAGLE and MTP
  heads load into the target's workers with its parallel config (llm_base_proposer._create_draft_vllm_config);
- weights: a draft model loads whole (its own embedding and head: DraftModelProposer._maybe_share_* do nothing);
  EAGLE / EAGLE-3 heads (model_executor/models/llama_eagle.py, llama_eagle3.py) hold a replicated `fc`
  ([hidden, 2 x hidden]; EAGLE-3 [hidden, 3 x hidden]), their decoder layer(s) (EAGLE-3's first takes 2 x hidden
  into qkv_proj), a norm, and EAGLE-3 an lm_head over draft_vocab_size plus its draft-to-target id map; the
  embedding (and EAGLE-1's head) are the target's (llm_base_proposer._maybe_share_embeddings / _maybe_share_lm_head);
  MTP layers share the target's embedding and head ("Detected MTP model. Sharing target model ... weights");
- lookahead (config/vllm.py VllmConfig.num_lookahead_tokens): EAGLE, MTP and draft models reserve
  num_speculative_tokens KV slots past a running request's tokens, capped at max_model_len
  (v1/core/kv_cache_manager.py allocate_slots: min(tokens + lookahead, max_model_len)), so a request of
  max_model_len needs no extra block; Mamba layers keep num_speculative_tokens more state blocks
  (model_executor/layers/mamba/abstract.py: num_speculative_blocks);
- a decode step schedules 1 + num_speculative_tokens tokens per request (uniform_decode_query_len), so
  max_num_batched_tokens // (1 + k) requests decode in one step.

DFlash (0.33 only: v1/spec_decode/dflash.py DFlashProposer, model_executor/models/qwen3_dflash.py
DFlashQwen3ForCausalLM): a small Qwen3-style drafter that drafts a block of k tokens in one parallel pass from the
target's hidden states. Its decoder layers (qkv_proj, o_proj, q_norm, k_norm, MLP, two norms; plain hidden-size
inputs) register their attention in the shared pool like an EAGLE head's; `fc` (ReplicatedLinear) maps the aux
hidden states (eagle_aux_hidden_state_layer_ids, else dflash_config.target_layer_ids, else target_layer_ids, else
one per draft layer: _get_dflash_fc_input_size) of target_hidden_size each to the hidden size; hidden_norm, norm and
a mask_embedding of the hidden size; embed_tokens and lm_head over draft_vocab_size, which vLLM shares with the target
only when the checkpoint lacks them or holds the same tensors (llm_base_proposer._maybe_share_embeddings /
_maybe_share_lm_head compare them with torch.equal as they load), which kvplan cannot see: they are counted, an upper
bound; a draft-to-target id map when the vocabularies differ. Lookahead: k + 1 KV slots (config/vllm.py
num_lookahead_tokens: a bonus query plus one per draft token). Sliding-window draft layers are not modelled.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.layers import FULL, LayerSpec, make_layer
from kvplan.core.spec import ModelSpec

# vLLM 0.33 config/speculative.py MTPModelTypes: per-architecture names that SpeculativeConfig turns into "mtp"
MTP_NAMES = frozenset({
    "deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp", "glm_ocr_mtp",
    "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp", "qwen4_exp_mtp",
    "qwen3_5_mtp", "longcat_flash_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp", "bailing_hybrid_mtp", "mtp",
    "kimi_k3_mtp", "pangu_ultra_moe_mtp", "step3p5_mtp", "step5_mtp", "hy_v3_mtp", "hy_v4_mtp", "gemma4_mtp",
    "inkling_mtp", "glm5_next_mtp",
})
# methods that propose from the prompt or a suffix tree on the host: nothing on the GPU
HOST_METHODS = {
    "ngram": "n-gram prompt lookup runs on the CPU (v1/spec_decode/ngram_proposer.py): no draft weights, no draft KV",
    "ngram_gpu": "GPU n-gram prompt lookup (v1/spec_decode/ngram_proposer_gpu.py) keeps token ids, no weights or KV",
    "suffix": "suffix decoding runs on the CPU (v1/spec_decode/suffix_decoding.py): no draft weights, no draft KV",
}
MODELLED_METHODS = frozenset({"draft_model", "eagle", "eagle3", "mtp", "dflash"}) | frozenset(HOST_METHODS)
HEAD_METHODS = ("eagle", "eagle3", "dflash")  # a head config.json names the drafter; it joins the target's workers
DFLASH_FIRST = "0.33.0"  # the release whose DFlash kvplan read
# methods vLLM has whose memory kvplan does not model, with why
NOT_MODELLED_METHODS = {
    "dspark": "DSpark stages and their cache layout",
    "custom_class": "a user-supplied proposer class",
    "extract_hidden_states": "a hidden-state cache (HiddenStateCacheSpec)",
    "medusa": "Medusa heads",
    "mlp_speculator": "MLP speculator heads",
}
SPEC_KEYS = frozenset({"method", "model", "num_speculative_tokens", "draft_tensor_parallel_size", "tensor_parallel_size",
                       "quantization", "kv_cache_dtype", "max_model_len", "revision", "code_revision",
                       "disable_padded_drafter_batch", "enforce_eager", "prompt_lookup_max", "prompt_lookup_min",
                       "attention_backend", "moe_backend", "draft_model_config", "dtype"})


@dataclass(frozen=True)
class EagleHead:
    """An EAGLE / EAGLE-3 draft head as its config.json describes it (LlamaForCausalLMEagle[3])."""

    name: str
    eagle3: bool
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    draft_vocab_size: int  # EAGLE-3's own head; = vocab_size when the config names none
    aux_hidden_states: int  # EAGLE-3: target hidden states concatenated into fc (3 by default)
    source: str
    dflash: bool = False  # a DFlash drafter (dflash_head)
    target_hidden_size: int | None = None  # DFlash: the width of each aux hidden state fc reads; None: hidden_size


@dataclass(frozen=True)
class SpeculativeOptions:
    """A launch's speculative_config, its method resolved the way vLLM resolves it."""

    method: str  # draft_model | eagle | eagle3 | mtp | ngram | ngram_gpu | suffix
    num_speculative_tokens: int
    model: str | None = None  # as written
    draft_tensor_parallel_size: int | None = None
    kv_cache_dtype: str | None = None  # the draft's own KV dtype; None: the target's
    draft_spec: ModelSpec | None = None  # method draft_model: the draft model
    head: EagleHead | None = None  # methods eagle / eagle3: the head's config
    where: str = "speculative_config"


def resolve_method(method: str | None, model: str | None, *, where: str) -> str:
    """vLLM's method for a speculative_config (SpeculativeConfig.__post_init__)."""
    if method is None:
        return "ngram" if model in ("ngram", "[ngram]") else "draft_model"
    name = str(method).strip().lower()
    if name == "[ngram]":
        return "ngram"
    if name in MTP_NAMES:
        return "mtp"
    if name in MODELLED_METHODS:
        return name
    if name in NOT_MODELLED_METHODS:
        raise UnsupportedError(f"speculative method {name!r} is not modelled ({NOT_MODELLED_METHODS[name]})",
                               where=f"{where}: method", hint="draft_model, eagle, eagle3, mtp, dflash, ngram and suffix are")
    raise InputError(f"vLLM has no speculative method {method!r}", where=f"{where}: method",
                     hint="draft_model, eagle, eagle3, mtp, ngram, ngram_gpu, suffix, dflash, ...")


def read_config(value: Any, *, where: str) -> dict:
    """A speculative_config as a launch gives it: a mapping (YAML), or JSON text (a command line)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise InputError(f"is not JSON: {err.msg}", where=where,
                             hint='e.g. {"method": "eagle3", "model": "...", "num_speculative_tokens": 3}') from None
    if not isinstance(value, Mapping):
        raise InputError(f"must be a mapping, got {type(value).__name__}", where=where)
    unknown = sorted(str(k) for k in value if k not in SPEC_KEYS)
    if unknown:
        raise UnsupportedError(f"speculative_config key {unknown[0]!r} is not modelled", where=f"{where}: {unknown[0]}",
                               hint="kvplan reads " + ", ".join(sorted(SPEC_KEYS)))
    if value.get("tensor_parallel_size") is not None:
        # vLLM raises for it: the field exists only to catch this mistake
        raise InputError("vLLM refuses tensor_parallel_size in speculative_config", where=f"{where}: tensor_parallel_size",
                         hint="write draft_tensor_parallel_size")
    return dict(value)


def eagle_head(raw: Mapping, *, method: str, where: str) -> EagleHead:
    """An EAGLE head from its config.json (vLLM EAGLEConfig reads the same keys)."""
    def need(key: str) -> int:
        value = raw.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(f"the EAGLE head's config has no {key}", where=f"{where}: {key}")
        return value

    hidden, heads = need("hidden_size"), need("num_attention_heads")
    kv = raw.get("num_key_value_heads") or heads
    head_dim = raw.get("head_dim") or hidden // heads
    vocab = need("vocab_size")
    eagle3 = method == "eagle3"
    aux = 3
    eagle_config = raw.get("eagle_config") or {}
    if isinstance(eagle_config, Mapping) and eagle_config.get("eagle_aux_hidden_state_layer_ids"):
        aux = len(eagle_config["eagle_aux_hidden_state_layer_ids"])
    if isinstance(raw.get("num_aux_hidden_states"), int):
        aux = raw["num_aux_hidden_states"]
    if str(raw.get("model_type", "llama")) not in ("llama", "eagle") and not str(
            (raw.get("architectures") or [""])[0]).startswith(("LlamaForCausalLMEagle", "EagleLlama", "Eagle3Llama")):
        raise UnsupportedError(f"EAGLE heads of model_type {raw.get('model_type')!r} are not modelled",
                               where=f"{where}: model_type", hint="kvplan sizes Llama-style EAGLE / EAGLE-3 heads")
    return EagleHead(name=str(raw.get("_name_or_path") or where), eagle3=eagle3, layers=need("num_hidden_layers"),
                     hidden_size=hidden, attention_heads=heads, kv_heads=int(kv), head_dim=int(head_dim),
                     intermediate_size=need("intermediate_size"), vocab_size=vocab,
                     draft_vocab_size=int(raw.get("draft_vocab_size") or vocab), aux_hidden_states=aux, source=where)


def dflash_head(raw: Mapping, *, where: str) -> EagleHead:
    """A DFlash drafter from its config.json (qwen3_dflash.py reads the same keys)."""
    def need(key: str) -> int:
        value = raw.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(f"the DFlash drafter's config has no {key}", where=f"{where}: {key}")
        return value

    if str(raw.get("model_type", "qwen3")) != "qwen3":
        raise UnsupportedError(f"DFlash drafters of model_type {raw.get('model_type')!r} are not modelled",
                               where=f"{where}: model_type", hint="kvplan sizes Qwen3-style DFlash drafters")
    flash = raw.get("dflash_config") or {}
    if not isinstance(flash, Mapping):
        raise InputError("dflash_config must be a mapping", where=f"{where}: dflash_config")
    if flash.get("use_swa") or "sliding_attention" in (raw.get("layer_types") or ()):
        raise UnsupportedError("a DFlash drafter with sliding-window layers is not modelled", where=f"{where}: layer_types")
    if flash.get("use_aux_hidden_state", raw.get("use_aux_hidden_state", True)) is not True:
        raise UnsupportedError("a DFlash drafter without aux hidden states is not modelled",
                               where=f"{where}: use_aux_hidden_state")
    layers, hidden, heads = need("num_hidden_layers"), need("hidden_size"), need("num_attention_heads")
    aux = (raw.get("eagle_aux_hidden_state_layer_ids") or flash.get("target_layer_ids") or raw.get("target_layer_ids")
           or [None] * layers)
    vocab = need("vocab_size")
    return EagleHead(name=str(raw.get("_name_or_path") or where), eagle3=False, layers=layers, hidden_size=hidden,
                     attention_heads=heads, kv_heads=int(raw.get("num_key_value_heads") or heads),
                     head_dim=int(raw.get("head_dim") or hidden // heads), intermediate_size=need("intermediate_size"),
                     vocab_size=vocab, draft_vocab_size=int(raw.get("draft_vocab_size") or vocab),
                     aux_hidden_states=len(aux), source=where, dflash=True,
                     target_hidden_size=int(raw.get("target_hidden_size") or hidden))


@dataclass(frozen=True)
class DraftWeights:
    """A drafter's weights on one GPU, split the way TP splits them."""

    sharded_params: int  # linear layers TP divides (qkv, o, MLP, lm_head)
    replicated_params: int  # tensors every rank holds whole (EAGLE's fc, norms)
    extra_bytes: int  # buffers that are not parameters (EAGLE-3's draft-to-target id map: int64)

    def bytes_per_gpu(self, tp: int, bits: Fraction) -> int:
        """Bytes on one rank at `bits` per parameter: the sharded part over TP, the replicated part whole."""
        per = Fraction(bits, 8)
        return math.ceil(Fraction(self.sharded_params, tp) * per + self.replicated_params * per) + self.extra_bytes

    @property
    def params(self) -> int:
        return self.sharded_params + self.replicated_params


def dflash_weights(head: EagleHead, target_vocab: int | None) -> DraftWeights:
    """qwen3_dflash.py DFlashQwen3ForCausalLM: decoder layers and lm_head TP-sharded (VocabParallelEmbedding,
    ParallelLMHead), fc, norms and mask_embedding whole on every rank; embed_tokens and lm_head counted (see above)."""
    h, inter = head.hidden_size, head.intermediate_size
    q, kv = head.attention_heads * head.head_dim, head.kv_heads * head.head_dim
    per_layer = h * (q + 2 * kv) + q * h + 3 * h * inter  # qkv_proj, o_proj, gate_up_proj, down_proj
    sharded = head.layers * per_layer + head.vocab_size * h + head.draft_vocab_size * h  # + embed_tokens, lm_head
    replicated = head.layers * (2 * h + 2 * head.head_dim)  # two norms, q_norm and k_norm per layer
    replicated += (head.target_hidden_size or h) * head.aux_hidden_states * h  # fc
    replicated += 3 * h  # hidden_norm, norm, mask_embedding
    differs = target_vocab is not None and head.draft_vocab_size != target_vocab
    return DraftWeights(sharded_params=sharded, replicated_params=replicated,
                        extra_bytes=8 * head.draft_vocab_size if differs else 0)  # draft_id_to_target_id (int64)


def eagle_weights(head: EagleHead) -> DraftWeights:
    """vLLM llama_eagle.py / llama_eagle3.py: fc (ReplicatedLinear), decoder layers, final norm, EAGLE-3's lm_head."""
    h, inter = head.hidden_size, head.intermediate_size
    q, kv = head.attention_heads * head.head_dim, head.kv_heads * head.head_dim
    sharded = 0
    for i in range(head.layers):
        qkv_in = 2 * h if head.eagle3 and i == 0 else h  # Eagle3 LlamaDecoderLayer: qkv_input_size = 2 x hidden
        sharded += qkv_in * (q + 2 * kv) + q * h  # qkv_proj, o_proj
        sharded += 3 * h * inter  # gate_up_proj, down_proj
    replicated = head.layers * 2 * h + h  # layer norms and the final norm
    if head.eagle3:
        replicated += h * (head.aux_hidden_states * h) + head.layers * h  # fc over the aux hidden states; hidden_norm
        sharded += head.draft_vocab_size * h  # ParallelLMHead over draft_vocab_size
        extra = 8 * head.draft_vocab_size if head.draft_vocab_size != head.vocab_size else 0  # draft_id_to_target_id
    else:
        replicated += h * 2 * h  # fc: [hidden, 2 x hidden]
        extra = 0
    return DraftWeights(sharded_params=sharded, replicated_params=replicated, extra_bytes=extra)


def mtp_layers(spec: ModelSpec, *, where: str) -> tuple[LayerSpec, ...]:
    """The KV layers of the checkpoint's MTP modules: each is one decoder layer with the target's attention."""
    if spec.mtp is None:
        raise UnsupportedError(f"{spec.name} has no multi-token-prediction layers (num_nextn_predict_layers) kvplan knows "
                               "of", where=f"{where}: method", hint="use an EAGLE head or a draft model, or a spec with `mtp`")
    first = next((layer for layer in spec.layer_specs if layer.headed or layer.latent), None)
    if first is None:
        raise UnsupportedError("MTP for a model without attention layers is not modelled", where=f"{where}: method")
    if first.latent:
        layer = first
    else:
        # the MTP decoder layer is a full-attention layer (qwen3_next_mtp.py layer_type "full_attention"; GLM, MiMo)
        layer = make_layer(FULL, kv_heads=first.kv_heads, head_dim=first.head_dim, v_head_dim=first.v_head_dim)
    return (layer,) * spec.mtp.layers


def draft_layers(opts: SpeculativeOptions, target: ModelSpec) -> tuple[LayerSpec, ...]:
    """The attention layers the drafter adds to the KV pool (their cache layout before TP)."""
    if opts.method in HOST_METHODS:
        return ()
    if opts.method == "mtp":
        return mtp_layers(target, where=opts.where)
    if opts.method in HEAD_METHODS:
        head = opts.head
        return tuple(make_layer(FULL, kv_heads=head.kv_heads, head_dim=head.head_dim, v_head_dim=head.head_dim)
                     for _ in range(head.layers))
    return tuple(layer for layer in opts.draft_spec.layer_specs if layer.caches)


def lookahead_tokens(opts: SpeculativeOptions) -> int:
    """KV slots a running request reserves past its tokens (VllmConfig.num_lookahead_tokens; DFlash: one more, the
    bonus query)."""
    if opts.method in HOST_METHODS:
        return 0
    return opts.num_speculative_tokens + (1 if opts.method == "dflash" else 0)


def decode_requests_per_step(max_num_batched_tokens: int, opts: SpeculativeOptions) -> int:
    """Requests one decode step can verify: each takes 1 + num_speculative_tokens of the token budget."""
    return max_num_batched_tokens // (1 + opts.num_speculative_tokens)


def check_draft_tp(opts: SpeculativeOptions, tp: int) -> None:
    """Every line 0.10-0.33 (config/speculative.py _verify_and_get_draft_tp; draft models from 0.15,
    v1/spec_decode/draft_model.py _raise_if_draft_tp_mismatch): a draft model's TP must be the target's; eagle/mtp
    take 1 or the target's and run at it."""
    draft_tp = opts.draft_tensor_parallel_size
    if draft_tp is None or draft_tp == tp:
        return
    if draft_tp != 1:
        raise InputError(f"draft_tensor_parallel_size={draft_tp} cannot be other value than 1 or target model "
                         f"tensor_parallel_size ({tp}): vLLM refuses it", where=f"{opts.where}: draft_tensor_parallel_size",
                         hint=f"write 1 or {tp}")
    if opts.method == "draft_model":
        raise InputError(f"vLLM refuses a draft model at TP 1 beside a target at TP {tp} ('draft_tensor_parallel_size' "
                         "and 'tensor_parallel_size' must be the same; v1/spec_decode/draft_model.py)",
                         where=f"{opts.where}: draft_tensor_parallel_size", hint=f"set it to {tp} or leave it out")
