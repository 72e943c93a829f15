"""Activation memory of a forward pass and of the sampler's warm-up: engine-neutral arithmetic (vLLM's profile run
is built from it, and TensorRT-LLM's model borrows it where its engines print no figure). Pure: integers of bytes.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

from kvplan.core.dtypes import DType
from kvplan.core.spec import ModelSpec
from kvplan.engines.runtime.weights import cdiv, require_fields

# The sampler's work bytes per logit beyond the logits themselves when it sorts (top-k / top-p through torch.sort):
# derived, not fitted. apply_top_k_top_p sorts the float32 copy (4 B) with torch.sort, whose CUDA path for rows this
# long is cub's segmented radix sort of (value, int64 index) pairs: the sorted values (4) and indices (8), the int64
# index input (8) and cub's alternate key and value buffers (4 + 8) are live at once: 36 B beyond the logits. The
# public vLLM 0.10/0.11 logs agree within 2 B (L40S x8 34, H200 x2 35.8, gpt-oss-120b on H100 36.1 and 36.6, from
# their logged peaks and budgets; tests/data/vllm_logs_public).
SORT_SAMPLER_BYTES_PER_LOGIT = Fraction(36)

# Multimodal models first run the vision encoder on a dummy batch and keep its outputs in the encoder cache during
# the text profile (vLLM gpu_model_runner.py profile_run). The mean of the 6 multimodal vLLM 0.19 logs' peaks above
# the text-only model (145 MiB): a constant, not derived from the encoder.
MULTIMODAL_PROFILE_BYTES = 152_486_161


def attention_params(spec: ModelSpec) -> int:
    """Q, K, V and O projection parameters of one attention layer (for the MLP-width estimate)."""
    h = spec.hidden_size
    heads = spec.attention_heads * spec.head_dim
    kv = spec.kv_heads * (spec.head_dim + (spec.v_head_dim or spec.head_dim))
    return h * heads * 2 + h * kv


def dense_forward_bytes(spec: ModelSpec, tokens: int, tp: int, b: int) -> int:
    """The forward of `tokens` tokens at the widest point of a dense decoder layer on one TP rank: the MLP holds its
    gate/up output and activation next to the hidden states and residual, T x (2 x hidden + MLP width) x b bytes, the
    width estimated as the per-layer MLP parameters over the hidden size."""
    h = spec.hidden_size
    attn_layers = sum(1 for layer in spec.layer_specs if layer.headed)
    edges = (1 if spec.tie_word_embeddings is True else 2) * spec.vocab_size * h  # embedding (+ untied head)
    attention = attention_params(spec) if attn_layers else 0
    params = spec.active_params or spec.params
    layer_params = max(params - (spec.vision_params or 0) - edges, 0) // max(spec.layers, 1)
    mlp_params = max(layer_params - attention, 0)
    return tokens * (2 * h + cdiv(mlp_params, h * tp)) * b


def sampler_bytes(spec: ModelSpec, requests: int, b: int, bytes_per_logit: Fraction) -> int:
    """The sampler warm-up: [requests, vocab] logits in the model dtype (b bytes) plus its work bytes per logit.
    Logits are gathered to the full vocabulary, so this does not shrink with TP."""
    return math.ceil(requests * spec.vocab_size * (b + bytes_per_logit))


def one_sequence_forward_peak(spec: ModelSpec, model_dtype: DType, *, tp: int, tokens: int) -> int:
    """The activation peak of a forward of `tokens` tokens of one sequence on one GPU with every layer taken as
    dense, then the sort sampler's warm-up of that one sequence beside the forward's [T, hidden] output, and the
    multimodal encoder's profile (vLLM 0.19's profile run, measured on its logs, without its fixed part): what
    TensorRT-LLM's model takes for activations its own engines do not print."""
    require_fields(spec, "hidden_size", "vocab_size")
    dense = dataclasses.replace(spec, moe=None)
    b = model_dtype.bits // 8 or 1
    forward = dense_forward_bytes(dense, tokens, tp, b)
    sampled = sampler_bytes(dense, min(1, tokens), b, SORT_SAMPLER_BYTES_PER_LOGIT) + tokens * spec.hidden_size * b
    return max(forward, sampled) + (MULTIMODAL_PROFILE_BYTES if spec.vision_params else 0)
