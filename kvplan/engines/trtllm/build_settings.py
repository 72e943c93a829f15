"""The trtllm-build settings that move what a TensorRT engine holds on the GPU before its KV pool, each with its
release default and the values kvplan's band covers when the launch does not give it (issue 28: a build option the
launch leaves open widens the band; given, it narrows it). Pure: no I/O.

A TensorRT-LLM engine fixes these at build time (tensorrt_llm/builder.py BuildConfig and _init_max_seq_len,
tensorrt_llm/_common.py check_max_num_tokens, read at NVIDIA/TensorRT-LLM 008b2b8 / 0fccc5b; docs/source/reference/
memory.md at 5a211b9; the same defaults in trtllm-build's own arguments at 0.14.0.dev2024092400, tensorrt_llm/
commands/build.py of the chiendb97/TensorRT-LLM fork at 6d995d4: --max_batch_size 2048, --max_input_len 1024,
--max_num_tokens 8192, --max_beam_width 1), and `trtllm-serve ENGINE_DIR`, Triton's tensorrtllm_backend and the C++ executor run the engine
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

from dataclasses import dataclass, replace

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



# ------------------------------------------------------------------ the engine trtllm-serve builds at start-up

# `trtllm-serve HF_MODEL --backend tensorrt` (and, before 1.0, `trtllm-serve HF_MODEL`, whose default was the engine
# path) builds the engine itself: serve.py get_llm_args makes BuildConfig(max_batch_size, max_num_tokens,
# max_beam_width, max_seq_len) from its flags, whose defaults are BuildConfig's own (the click options read
# `default=BuildConfig.max_batch_size` in the 0.x serve.py and `BuildConfig.model_fields[...].default` at 00209af),
# and LLM(...) builds with it (TrtLlmArgs keeps a given build_config; validate_build_config_with_runtime_params only
# warns or clips the runtime copies to it). So the launch settles every build setting kvplan models: a flag not given
# is BuildConfig's default, not an unknown engine's.
# rope scaling types _init_max_seq_len does not multiply max_position_embeddings by (builder.py)
_UNSCALED_ROPE = ("su", "longrope", "llama3")


def deduced_max_seq_len(hf_config) -> int | None:
    """max_seq_len of an engine built with none given (builder.py _init_max_seq_len): max_position_embeddings (2048
    when the model names none) x the rope scaling factor, rounded up, except for the su / longrope / llama3 types.
    None when the mapping is not a config.json (a bundled spec: the caller says what it assumed)."""
    if not isinstance(hf_config, dict):
        return None
    text = hf_config.get("text_config") if isinstance(hf_config.get("text_config"), dict) else hf_config
    length = text.get("max_position_embeddings")
    length = length if isinstance(length, int) and not isinstance(length, bool) and length > 0 else 2048
    rope = text.get("rope_scaling")
    if not isinstance(rope, dict):
        return length
    kind = rope.get("type", rope.get("rope_type"))
    factor = rope.get("factor", 1.0)
    if kind in _UNSCALED_ROPE or isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor == 1:
        return length
    from fractions import Fraction

    scaled = Fraction(length) * Fraction(str(factor))  # math.ceil of the float product, exactly
    return -(-scaled.numerator // scaled.denominator)


def serve_build_options(*, max_batch_size: int | None, max_num_tokens: int | None,
                        max_beam_width: int | None) -> tuple[tuple[str, str], ...]:
    """The --engine-option pairs of the engine trtllm-serve builds: backend=tensorrt and its build settings, each the
    flag's value or BuildConfig's default (so none is left open); max_beam_width only when the flag gives it (the
    engine reads it at its default only, AT_DEFAULT_ONLY)."""
    out = (("backend", "tensorrt"),
           ("max_batch_size", str(max_batch_size if max_batch_size is not None else MAX_BATCH_SIZE)),
           ("max_num_tokens", str(max_num_tokens if max_num_tokens is not None else MAX_NUM_TOKENS)))
    return out + ((("max_beam_width", str(max_beam_width)),) if max_beam_width is not None else ())


# ------------------------------------------------------------------ an engine directory's config.json

# The engine's config.json (tensorrt_llm/builder.py EngineConfig.to_dict: version, pretrained_config, build_config)
# holds the model as built. The decoder-only architectures whose pretrained_config kvplan reads as the Hugging Face
# config they were converted from (tensorrt_llm/models/{llama,qwen}/config.py), by model_type.
ENGINE_ARCHITECTURES = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2"}
# pretrained_config.quantization: quant_algo -> the weight dtype kvplan sizes (None: the model dtype);
# kv_cache_quant_algo -> the KV dtype (QuantAlgo names, tensorrt_llm/quantization/mode.py)
ENGINE_WEIGHTS = {None: None, "FP8": "fp8"}
ENGINE_KV = {None: "auto", "FP8": "fp8"}
ENGINE_DTYPES = {"bfloat16": "bfloat16", "float16": "float16"}
# build_config / plugin_config keys read at their default only (AT_DEFAULT_ONLY), by where they sit in the file
_PLUGIN_KEYS = ("paged_kv_cache", "context_fmha", "remove_input_padding")


@dataclass(frozen=True)
class EngineDir:
    """What an engine directory's config.json says of the deployment: the release that built it, the model as a
    Hugging Face config mapping, its parallel layout, weight and KV dtypes and build settings."""

    version: str | None
    hf_config: dict
    tp: int
    pp: int
    weight_dtype: str | None
    kv_dtype: str
    max_seq_len: int | None
    tokens_per_block: int | None
    options: tuple[tuple[str, str], ...]  # --engine-option pairs: backend=tensorrt and the build settings


class EngineConfigError(ValueError):
    """A config.json kvplan cannot read as an engine's: `key` is where, `unmodelled` whether it is a setting kvplan
    does not model (exit 3) rather than a file that is not an engine's (exit 2)."""

    def __init__(self, what: str, key: str, unmodelled: bool = True):
        super().__init__(what)
        self.key, self.unmodelled = key, unmodelled


def _int(value, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EngineConfigError(f"{key} must be a positive whole number, got {value!r}", key, unmodelled=False)
    return value


def read_engine_config(doc) -> EngineDir:
    """An engine's config.json (a mapping) -> EngineDir; EngineConfigError naming the key kvplan cannot read."""
    if not isinstance(doc, dict) or not isinstance(doc.get("pretrained_config"), dict) \
            or not isinstance(doc.get("build_config"), dict):
        raise EngineConfigError("not a TensorRT-LLM engine config (pretrained_config and build_config; engines before "
                                "0.8 wrote builder_config)", "build_config")
    pre, build = doc["pretrained_config"], doc["build_config"]
    plugin = build.get("plugin_config") if isinstance(build.get("plugin_config"), dict) else {}
    for key, (default, what) in AT_DEFAULT_ONLY.items():
        where, value = (f"build_config.plugin_config.{key}", plugin.get(key)) if key in _PLUGIN_KEYS else \
            (f"build_config.{key}", build.get(key))
        if value is not None and value != default:
            raise EngineConfigError(f"{key}={value}: {what}, which kvplan does not model", where)
    if plugin.get("lora_plugin") not in (None, "disable"):
        raise EngineConfigError("a LoRA engine (the PEFT cache is not modelled on the engine backend)",
                                "build_config.plugin_config.lora_plugin")
    if build.get("kv_cache_type") not in (None, "PAGED"):
        raise EngineConfigError(f"kv_cache_type {build['kv_cache_type']!r}: only the paged KV cache is modelled",
                                "build_config.kv_cache_type")
    if build.get("speculative_decoding_mode") not in (None, 1, "NONE"):
        raise EngineConfigError("speculative decoding is not modelled on the engine backend",
                                "build_config.speculative_decoding_mode")
    arch = pre.get("architecture")
    if arch not in ENGINE_ARCHITECTURES:
        raise EngineConfigError(f"architecture {arch!r}: kvplan reads the engine config of "
                                + ", ".join(ENGINE_ARCHITECTURES), "pretrained_config.architecture")
    quant = pre.get("quantization") if isinstance(pre.get("quantization"), dict) else {}
    for key, table in (("quant_algo", ENGINE_WEIGHTS), ("kv_cache_quant_algo", ENGINE_KV)):
        if quant.get(key) not in table:
            raise EngineConfigError(f"{key} {quant.get(key)!r} is not modelled", f"pretrained_config.quantization.{key}")
    if pre.get("dtype") not in ENGINE_DTYPES:
        raise EngineConfigError(f"dtype {pre.get('dtype')!r} is not modelled", "pretrained_config.dtype")
    mapping = pre.get("mapping") if isinstance(pre.get("mapping"), dict) else {}
    for key in ("cp_size", "moe_ep_size"):
        if mapping.get(key, 1) != 1:
            raise EngineConfigError(f"{key} {mapping[key]} is not modelled", f"pretrained_config.mapping.{key}")
    hf = {"architectures": [arch], "model_type": ENGINE_ARCHITECTURES[arch], "torch_dtype": ENGINE_DTYPES[pre["dtype"]]}
    for ours, theirs in (("hidden_size", "hidden_size"), ("num_hidden_layers", "num_hidden_layers"),
                         ("num_attention_heads", "num_attention_heads"), ("num_key_value_heads", "num_key_value_heads"),
                         ("head_dim", "head_size"), ("intermediate_size", "intermediate_size"),
                         ("vocab_size", "vocab_size"), ("max_position_embeddings", "max_position_embeddings"),
                         ("rope_theta", "rotary_base"), ("hidden_act", "hidden_act"),
                         ("tie_word_embeddings", "tie_word_embeddings")):
        if pre.get(theirs) is not None:
            hf[ours] = pre[theirs]
    options = [("backend", "tensorrt")]
    for key in ("max_batch_size", "max_num_tokens", "max_input_len"):
        if build.get(key) is not None:
            options.append((key, str(_int(build[key], f"build_config.{key}"))))
    seq = build.get("max_seq_len")
    tpb = plugin.get("tokens_per_block")
    return EngineDir(version=str(doc["version"]) if doc.get("version") is not None else None, hf_config=hf,
                     tp=_int(mapping.get("tp_size", 1), "pretrained_config.mapping.tp_size"),
                     pp=_int(mapping.get("pp_size", 1), "pretrained_config.mapping.pp_size"),
                     weight_dtype=ENGINE_WEIGHTS[quant.get("quant_algo")], kv_dtype=ENGINE_KV[quant.get("kv_cache_quant_algo")],
                     max_seq_len=_int(seq, "build_config.max_seq_len") if seq is not None else None,
                     tokens_per_block=_int(tpb, "build_config.plugin_config.tokens_per_block") if tpb is not None else None,
                     options=tuple(options))


def is_checkpoint_config(doc) -> bool:
    """Whether a config.json is a TensorRT-LLM checkpoint's (convert_checkpoint.py, PretrainedConfig.to_dict: the
    `architecture` of the engine's pretrained_config at the top) rather than a Hugging Face one or an engine's."""
    return isinstance(doc, dict) and isinstance(doc.get("architecture"), str) and not any(
        k in doc for k in ("architectures", "model_type", "build_config", "pretrained_config"))


def read_checkpoint_config(doc) -> EngineDir:
    """A TensorRT-LLM checkpoint's config.json read as an engine's pretrained_config with no build settings (the
    engine trtllm-serve builds from it takes the flags' BuildConfig); its rotary_scaling kept as rope_scaling for the
    deduced max_seq_len. EngineConfigError keys are the checkpoint file's own."""
    try:
        built = read_engine_config({"pretrained_config": doc, "build_config": {}})
    except EngineConfigError as err:
        raise EngineConfigError(str(err), err.key.removeprefix("pretrained_config."), err.unmodelled) from None
    rope = doc.get("rotary_scaling")
    hf = dict(built.hf_config, **({"rope_scaling": rope} if isinstance(rope, dict) else {}))
    return replace(built, hf_config=hf, options=())
