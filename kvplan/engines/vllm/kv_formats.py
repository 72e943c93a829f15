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
"""

from __future__ import annotations

from kvplan.core.errors import InputError, UnsupportedError

# value -> (the first release kvplan models it for, the first release whose parser takes it)
PACKED = {"fp8_per_token_head": ("0.20.0", "0.20.0"), "int8_per_token_head": ("0.20.0", "0.20.0"),
          "int4_per_token_head": ("0.25.0", "0.25.0"), "nvfp4": ("0.22.0", "0.20.0"),
          "nvfp4_4over6": ("0.28.0", "0.28.0")}
PER_TOKEN_HEAD = ("fp8_per_token_head", "int8_per_token_head", "int4_per_token_head")
NVFP4 = ("nvfp4", "nvfp4_4over6")
# values no NVIDIA GPU runs: the device each is for
OTHER_DEVICES = {"fp8_inc": "Intel Gaudi (HPU) accelerators (Intel Neural Compressor's fp8)",
                 "octave_k3v4": "AMD GPUs (vLLM's ROCm Octave attention backend)",
                 "octave_k3v3": "AMD GPUs (vLLM's ROCm Octave attention backend)",
                 "octave_k3v3_compact": "AMD GPUs (vLLM's ROCm Octave attention backend)"}
# values kvplan has not read the layout of: why
NOT_MODELLED = {
    **{name: "TurboQuant's Hadamard-rotated codes packed per slot (v1/attention/backends/turboquant_attn.py): "
             "their slot size was not read" for name in ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc",
                                                         "turboquant_3bit_nc")},
    "ultraquant_4bit": "UltraQuant's packed fp4 values with UE8M0 group scales (ultraquant_attn.py): its slot size "
                       "was not read",
    "fp8_ds_mla": "DeepSeek's sparse-MLA fp8 layout (656 bytes a token, FlashMLA sparse): sparse MLA is not modelled",
    "nvfp4_ds_mla": "DeepSeek's sparse-MLA NVFP4 layout (FlashMLA sparse): sparse MLA is not modelled",
}
KNOWN = frozenset(PACKED) | frozenset(OTHER_DEVICES) | frozenset(NOT_MODELLED)


def check(name: str, *, version: str, accepted: tuple[str, ...] | None, capability: str | None, rocm: bool,
          head_size: int | None, mla: bool) -> None:
    """Refuse what `version` of vLLM does not take (exit 2), what the GPU cannot run (exit 2, saying so), and what
    kvplan has not read (exit 3). `accepted`: the release's --kv-cache-dtype choices; `capability`: the GPU's
    CUDA SM version ("9.0"), None without a catalog GPU; `head_size`: the attention head size."""
    from kvplan.engines.vllm import releases

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
