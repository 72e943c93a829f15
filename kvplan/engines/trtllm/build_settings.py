"""The trtllm-build settings that move what a TensorRT engine holds on the GPU before its KV pool, each with its
release default and the values kvplan's band covers when the launch does not give it (issue 28: a build option the
launch leaves open widens the band; given, it narrows it). Pure: no I/O.

A TensorRT-LLM engine fixes these at build time (tensorrt_llm/builder.py BuildConfig and _init_max_seq_len,
tensorrt_llm/_common.py check_max_num_tokens, read at NVIDIA/TensorRT-LLM 008b2b8 / 0fccc5b; docs/source/reference/
memory.md at 5a211b9), and `trtllm-serve ENGINE_DIR`, Triton's tensorrtllm_backend and the C++ executor run the engine
as built: nothing on their command line changes them. Whoever plans a launch of an engine built elsewhere (an image,
a model repository) may not know them, so each one kvplan models is a range, not an assumption:

- max_num_tokens (BuildConfig default 8192) sizes the execution context: TensorRT plans the activations at each
  profile's largest shapes, and with packed inputs (remove_input_padding, the default) "activation size will be close
  to max number of input tokens * some constant factor" (memory.md). Smallest: tokens_per_block, to which
  check_max_num_tokens raises a smaller value when context FMHA is on (the default). Largest covered: 16384, past
  which check_max_num_tokens warns that a larger value "is usually not recommended" and may exceed TensorRT's tensor
  volume; never more than max_batch_size x max_seq_len, where it caps it.
- max_batch_size (BuildConfig default 2048) sizes the runtime's logits and the decoder's buffers, [max_batch_size,
  vocabulary] each (trtGptModelInflightBatching.cpp createBuffers / createDecoder; budget.py ENGINE_BUFFERS).
  Smallest: 1. Largest covered: the default, 2048 (the 0.16.0 and 0.19.0 engines were built at it). Larger engines
  exist: trtllm-bench sizes its own builds, 4096 in TensorRT-LLM's benchmarking documentation (0.12.0.dev,
  "TRTGptModel maxBatchSize: 4096"; tests/data/trtllm_logs idx-trtllm-docs-v012dev-llama2-7b-fp8-engine-80gb); such
  an engine is given (--engine-option max_batch_size=4096), not covered: at twice the default the low edge would
  spend 20 B x 2048 x vocabulary more on every launch (5 GiB at Llama 3's vocabulary), most of a 24-32 GB card's
  pool, for engines a plain trtllm-build does not make.

Build settings kvplan does not model and so refuses when a launch gives a value other than the default (exit 3):
max_beam_width (default 1: the beam folds into the batch dimension of the activations and multiplies the decoder's
buffers), gather_context_logits and gather_generation_logits (default false: logits kept for every prompt or generated
token), max_draft_len (default 0: speculative decoding's draft tokens), max_prompt_embedding_table_size (default 0:
prompt tuning), weight_streaming (default false: weights partly in host memory), and the plugin settings
paged_kv_cache, context_fmha and remove_input_padding (default on; off, the KV cache, the attention workspace or the
activations are sized another way, memory.md). Their defaults are what every
engine kvplan scores was built with; a launch that states none of them is taken at those defaults and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_BATCH_SIZE = 2048  # BuildConfig.max_batch_size
MAX_NUM_TOKENS = 8192  # BuildConfig.max_num_tokens
MAX_INPUT_LEN = 1024  # BuildConfig.max_input_len
# check_max_num_tokens: "Specifying a `max_num_tokens` larger than 16384 is usually not recommended"
MAX_NUM_TOKENS_COVERED = 16384
# the largest max_batch_size covered when not given: the default (trtllm-bench's own builds go past it: given)
MAX_BATCH_SIZE_COVERED = MAX_BATCH_SIZE
# BuildConfig fields kvplan reads only at their defaults: name -> (default, what a different value does)
AT_DEFAULT_ONLY = {
    "max_beam_width": (1, "beam search multiplies the decoder's buffers and folds the beams into the activations' "
                          "batch"),
    "gather_context_logits": (False, "the engine keeps the logits of every prompt token"),
    "gather_generation_logits": (False, "the engine keeps the logits of every generated token"),
    "max_draft_len": (0, "speculative decoding's draft tokens in the engine's buffers"),
    "max_prompt_embedding_table_size": (0, "a prompt-tuning table in the engine's inputs"),
    "weight_streaming": (False, "the engine keeps part of its weights in host memory"),
    # PluginConfig (tensorrt_llm/plugin/plugin.py) settings on by default that change the memory when off
    "paged_kv_cache": (True, "a contiguous KV cache of max_batch_size x max_seq_len tokens a layer, not a paged pool"),
    "context_fmha": (True, "the attention plugin's workspace grows with the square of the sequence length (memory.md)"),
    "remove_input_padding": (True, "padded inputs: activations sized by max_batch_size x max_input_len (memory.md)"),
}


@dataclass(frozen=True)
class BuildRange:
    """The build settings one estimate judges with: the nominal values (the launch's, else the release's defaults)
    and the two corners of the band (`most`: the largest values covered, the most memory before the pool, the band's
    low edge; `least`: the smallest, its high edge). A setting the launch gives is the same at all three."""

    max_batch_size: int
    max_num_tokens: int
    most: tuple[int, int]  # (max_batch_size, max_num_tokens)
    least: tuple[int, int]
    open: tuple[str, ...]  # the settings left open, by name

    @property
    def is_open(self) -> bool:
        return bool(self.open)


def build_range(*, max_batch_size: int | None, max_num_tokens: int | None, max_seq_len: int,
                tokens_per_block: int) -> BuildRange:
    """The nominal build settings and the corners of the band over the ones not given (None).

    max_num_tokens is capped at max_batch_size x max_seq_len at every corner, as check_max_num_tokens caps it."""
    open_ = tuple(n for n, v in (("max_batch_size", max_batch_size), ("max_num_tokens", max_num_tokens)) if v is None)
    bs = max_batch_size if max_batch_size is not None else MAX_BATCH_SIZE
    bs_most = max_batch_size if max_batch_size is not None else MAX_BATCH_SIZE_COVERED
    bs_least = max_batch_size if max_batch_size is not None else 1

    def tokens(value: int, batch: int) -> int:
        return min(value, batch * max_seq_len)

    if max_num_tokens is not None:
        nt, nt_most, nt_least = max_num_tokens, max_num_tokens, max_num_tokens
    else:
        nt = tokens(MAX_NUM_TOKENS, bs)
        nt_most = tokens(MAX_NUM_TOKENS_COVERED, bs_most)
        nt_least = tokens(tokens_per_block, bs_least)
    return BuildRange(max_batch_size=bs, max_num_tokens=nt, most=(bs_most, max(nt_most, nt)),
                      least=(bs_least, min(nt_least, nt)), open=open_)
