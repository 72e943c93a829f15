"""vLLM's --kv-cache-dtype values beyond the plain dtypes: which releases take each, on which GPUs, and what kvplan
does with it. Pure.

Read from each release's wheel (`pip download --no-deps vllm==X`); the values a release's parser accepts are its
option table's choices (kvplan/data/vllm_options/<release>.json: 5 in 0.10, 22 in 0.33). The bytes each stores are
kvplan.core.dtypes' packed KV formats:

- fp8_per_token_head, int8_per_token_head (0.20+), int4_per_token_head (0.25+): values plus an fp32 scale for K and
  one for V per head and token (v1/kv_cache_interface.py AttentionSpec.page_size_bytes 0.20-0.32: "carved from the
  raw KV cache allocation"; 0.33 v1/attention/backends/triton_attn.py customize_spec, inline); int4 packs two
  values a byte. Only the Triton backend takes them (triton_attn.py supported_kv_cache_dtypes), on every CUDA GPU
  (supports_compute_capability: True); the MLA backends take them only from 0.33, which kvplan has not read.
- nvfp4 (0.22+), nvfp4_4over6 (0.28+): two fp4 values a byte and an fp8 scale per 16 values, K and V each
  (utils/torch_utils.py nvfp4_kv_cache_full_dim); FlashInfer only (flashinfer.py supports_kv_cache_dtype): on SM10x
  with TRT-LLM attention, and from 0.32 plain nvfp4 also on SM8x, SM9x and SM12x through FA2, except at head_size 64
  and with attention sinks (supports_combination). 0.20-0.21 accept the name, but no backend lists it.
- turboquant_k8v4, turboquant_4bit_nc, turboquant_k3v4_nc, turboquant_3bit_nc (0.20+): the key and the value of a
  head packed into one slot (model_executor/layers/quantization/turboquant/config.py slot_size_aligned; the page is
  block x KV heads x slot: 0.20-0.27 kv_cache_interface.py TQFullAttentionSpec, 0.28+ turboquant_attn.py
  customize_spec / get_kv_cache_shape). vLLM keeps the first two and the last two layers of the model in the model
  dtype (engine/arg_utils.py: TurboQuantConfig.get_boundary_skip_layers into kv_cache_dtype_skip_layers), except in
  hybrid models (attention with Mamba or linear-attention layers) from 0.21 on; `boundary_skip_layers` says which.
  Full attention only: the backend's spec is a full-attention one, so sliding-window models are not modelled.
"""

from __future__ import annotations

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.engines.vllm import releases

# --kv-cache-dtype spellings vLLM takes (config/cache.py CacheDType) and what they store; '' = the model dtype.
# fp8 means e4m3 on NVIDIA. fp8_inc / fp8_ds_mla and 0.33's packed formats are not modelled.
KV_DTYPES = {"auto": "", "fp8": "fp8_e4m3", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2",
             "bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16"}
# value -> (the first release kvplan models it for, the first release whose parser takes it)
PACKED = {"fp8_per_token_head": ("0.20.0", "0.20.0"), "int8_per_token_head": ("0.20.0", "0.20.0"),
          "int4_per_token_head": ("0.25.0", "0.25.0"), "nvfp4": ("0.22.0", "0.20.0"),
          "nvfp4_4over6": ("0.28.0", "0.28.0"), "turboquant_k8v4": ("0.20.0", "0.20.0"),
          "turboquant_4bit_nc": ("0.20.0", "0.20.0"), "turboquant_k3v4_nc": ("0.20.0", "0.20.0"),
          "turboquant_3bit_nc": ("0.20.0", "0.20.0")}
PER_TOKEN_HEAD = ("fp8_per_token_head", "int8_per_token_head", "int4_per_token_head")
NVFP4 = ("nvfp4", "nvfp4_4over6")
TURBOQUANT = ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc")
TURBOQUANT_HYBRID_EXEMPT = "0.21.0"  # get_boundary_skip_layers skips no layer of a hybrid model from here on
TURBOQUANT_BOUNDARY = 2  # layers kept in the model dtype at each end (get_boundary_skip_layers n=2)
# values no NVIDIA GPU runs: the device each is for
OTHER_DEVICES = {"fp8_inc": "Intel Gaudi (HPU) accelerators (Intel Neural Compressor's fp8)",
                 "octave_k3v4": "AMD GPUs (vLLM's ROCm Octave attention backend)",
                 "octave_k3v3": "AMD GPUs (vLLM's ROCm Octave attention backend)",
                 "octave_k3v3_compact": "AMD GPUs (vLLM's ROCm Octave attention backend)"}
# values kvplan has not read the layout of: why
NOT_MODELLED = {
    "ultraquant_4bit": "UltraQuant's packed fp4 values with UE8M0 group scales (ultraquant_attn.py): its slot size "
                       "was not read",
    "fp8_ds_mla": "DeepSeek's sparse-MLA fp8 layout (656 bytes a token, FlashMLA sparse): sparse MLA is not modelled",
    "nvfp4_ds_mla": "DeepSeek's sparse-MLA NVFP4 layout (FlashMLA sparse): sparse MLA is not modelled",
}
KNOWN = frozenset(PACKED) | frozenset(OTHER_DEVICES) | frozenset(NOT_MODELLED)


def check(name: str, *, version: str, accepted: tuple[str, ...] | None, capability: str | None, rocm: bool,
          head_size: int | None, mla: bool, windowed: bool = False) -> None:
    """Refuse what `version` of vLLM does not take (exit 2), what the GPU cannot run (exit 2, saying so), and what
    kvplan has not read (exit 3). `accepted`: the release's --kv-cache-dtype choices; `capability`: the GPU's
    CUDA SM version ("9.0"), None without a catalog GPU; `head_size`: the attention head size; `windowed`: the
    model has sliding-window or chunked attention layers."""
    where = "--kv-dtype"
    if accepted is not None and name not in accepted:
        raise InputError(f"vLLM {version} has no --kv-cache-dtype {name}", where=where,
                         hint=f"it takes {', '.join(accepted)}")
    if name in OTHER_DEVICES:
        raise InputError(f"--kv-cache-dtype {name} is for {OTHER_DEVICES[name]}: no NVIDIA GPU runs it", where=where)
    if name in NOT_MODELLED:
        raise UnsupportedError(f"--kv-cache-dtype {name}: {NOT_MODELLED[name]}", where=where,
                               hint="kvplan refuses rather than guesses; `kvplan probe` on the GPU measures it")
    if name not in PACKED:
        return
    modelled_from, _ = PACKED[name]
    if not releases.at_least(version, modelled_from):
        raise UnsupportedError(f"--kv-cache-dtype {name} on vLLM {version}: its parser takes it, but no attention "
                               f"backend of {version} lists it (kvplan models it from {modelled_from})", where=where,
                               hint=f"judge it on {modelled_from} or newer (--engine-version)")
    if rocm:
        raise UnsupportedError(f"--kv-cache-dtype {name} on ROCm is not modelled", where=where)
    if mla:
        raise UnsupportedError(f"--kv-cache-dtype {name} on an MLA model: vLLM's MLA backends do not take it before "
                               "0.33, and 0.33's MLA layout of it was not read", where=where)
    if name in TURBOQUANT:
        _check_turboquant(name, head_size=head_size, windowed=windowed)
    if name in NVFP4 and capability is not None:
        major = int(capability.split(".")[0])
        fa2 = name == "nvfp4" and releases.at_least(version, "0.32.0") and major in (8, 9, 12)
        if major != 10 and not fa2:
            also = " (plain nvfp4 also on SM8x, SM9x and SM12x from 0.32)" if name == "nvfp4" else ""
            raise InputError(f"vLLM {version} runs an {name} KV cache only on SM10x GPUs (B200, GB200, B300){also}; "
                             f"this GPU is SM {capability}", where=where, hint="choose fp8, or a GPU that runs it")
        if fa2 and head_size == 64:
            raise InputError(f"vLLM {version} refuses an NVFP4 KV cache at head_size 64 on SM {capability} (FlashInfer's "
                             "FA2 prefill misreads it)", where=where, hint="choose fp8")


def _check_turboquant(name: str, *, head_size: int | None, windowed: bool) -> None:
    """What kvplan has not read of TurboQuant: its pages on sliding-window layers, and a slot rounded up to an even
    size (head sizes not a multiple of 16)."""
    if windowed:
        raise UnsupportedError(f"--kv-cache-dtype {name} on a model with sliding-window or chunked attention layers: "
                               "vLLM builds TurboQuant's page for full attention only, and what it does with the "
                               "windowed layers was not read", where="--kv-dtype")
    if head_size is not None and head_size % 16:
        raise UnsupportedError(f"--kv-cache-dtype {name} at head size {head_size}: its slot is rounded up to an even "
                               "size (slot_size_aligned), which kvplan models at head sizes that are multiples of 16 "
                               "only", where="--kv-dtype")


def boundary_skip_layers(name: str, *, version: str, layers: int, hybrid: bool) -> tuple[str, ...]:
    """The layers vLLM keeps in the model dtype under a TurboQuant KV cache (engine/arg_utils.py, added to
    kv_cache_dtype_skip_layers): the first and the last TURBOQUANT_BOUNDARY of `layers` (never more than half),
    none in a hybrid model from TURBOQUANT_HYBRID_EXEMPT on; none for any other --kv-cache-dtype."""
    if name not in TURBOQUANT or (hybrid and releases.at_least(version, TURBOQUANT_HYBRID_EXEMPT)):
        return ()
    n = min(TURBOQUANT_BOUNDARY, layers // 2)
    return tuple(str(i) for i in sorted(set(range(n)) | set(range(layers - n, layers))))
