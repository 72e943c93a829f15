"""Data types: names -> bits per element, for KV caches, recurrent state and weights. Pure.

Bits rather than bytes so that int4 (half a byte) stays an integer; byte counts are taken with a
ceiling only where a whole tensor row is stored (see cache.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from kvplan.core.errors import InputError, did_you_mean


@dataclass(frozen=True)
class DType:
    """A dtype as kvplan counts it: its canonical name, bits per element, and the packing of a packed format."""

    name: str  # canonical name
    bits: int
    torch_name: str | None  # the torch dtype that stores it, where torch has one
    # packed KV-cache formats (vLLM's --kv-cache-dtype): block scales stored with the data, in bits per element,
    # and scales stored once per (KV head, token), in bytes for K and V together
    scale_bits: Fraction = Fraction(0)
    head_bytes: int = 0

    @property
    def packed(self) -> bool:
        """Stores scales beside the values (a KV-cache format, not a tensor dtype)."""
        return bool(self.scale_bits or self.head_bytes)

    def row_bytes(self, elements: int, heads: int) -> int:
        """Bytes of one token's K and V row: `elements` values over `heads` KV heads, scales included."""
        total = elements * (self.bits + self.scale_bits) / 8
        return -(-total.numerator // total.denominator) + heads * self.head_bytes


_DTYPES = {
    "fp32": DType("fp32", 32, "float32"),
    "fp16": DType("fp16", 16, "float16"),
    "bf16": DType("bf16", 16, "bfloat16"),
    "fp8_e4m3": DType("fp8_e4m3", 8, "float8_e4m3fn"),
    "fp8_e5m2": DType("fp8_e5m2", 8, "float8_e5m2"),
    "int8": DType("int8", 8, "int8"),
    # int4 is packed two to a byte (torch has no 4-bit dtype: stored as uint8 of half the length)
    "int4": DType("int4", 4, None),
}

# vLLM's packed KV-cache formats (engines/vllm: which releases and GPUs take them). Per-token-head: an fp32 scale
# for K and one for V per head and token (v1/kv_cache_interface.py AttentionSpec.page_size_bytes 0.20-0.32,
# 0.33 triton_attn.py customize_spec: 2 x 4 bytes); NVFP4: two fp4 values a byte and an fp8 scale per 16 values
# (utils/torch_utils.py nvfp4_kv_cache_full_dim: head_size // 2 + head_size // 16)
_KV_FORMATS = {
    "fp8_per_token_head": DType("fp8_per_token_head", 8, None, head_bytes=8),
    "int8_per_token_head": DType("int8_per_token_head", 8, None, head_bytes=8),
    "int4_per_token_head": DType("int4_per_token_head", 4, None, head_bytes=8),
    "nvfp4": DType("nvfp4", 4, None, scale_bits=Fraction(8, 16)),
    "nvfp4_4over6": DType("nvfp4_4over6", 4, None, scale_bits=Fraction(8, 16)),
    # TurboQuant: one slot a KV head and token holds the key and the value together (model_executor/layers/
    # quantization/turboquant/config.py TurboQuantConfig.slot_size, the same 0.20-0.33): key = head_dim x key bits / 8
    # + a 2-byte norm (fp8 keys: head_dim bytes, no norm), value = head_dim x value bits / 8 + 4 bytes of fp16 scale
    # and zero; as bits over the 2 x head_dim values of the slot plus bytes a head. The slot is rounded up to an
    # even size; at head_dim a multiple of 16 it already is (kv_formats refuses the others)
    "turboquant_k8v4": DType("turboquant_k8v4", 6, None, head_bytes=4),
    "turboquant_4bit_nc": DType("turboquant_4bit_nc", 4, None, head_bytes=6),
    "turboquant_k3v4_nc": DType("turboquant_k3v4_nc", 3, None, scale_bits=Fraction(1, 2), head_bytes=6),
    "turboquant_3bit_nc": DType("turboquant_3bit_nc", 3, None, head_bytes=6),
}

_ALIASES = {
    "float32": "fp32", "float": "fp32", "f32": "fp32", "torch.float32": "fp32",
    "float16": "fp16", "half": "fp16", "f16": "fp16", "torch.float16": "fp16",
    "bfloat16": "bf16", "torch.bfloat16": "bf16",
    # vLLM's --kv-cache-dtype fp8 means e4m3 on NVIDIA (vllm/config/cache.py CacheDType)
    "fp8": "fp8_e4m3", "fp8_e4m3fn": "fp8_e4m3", "float8_e4m3fn": "fp8_e4m3", "e4m3": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2", "e5m2": "fp8_e5m2",
    "uint8": "int8", "i8": "int8", "i4": "int4", "uint4": "int4",
}

KV_DTYPE_CHOICES = ["auto", "fp32", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8", "int4"]


def dtype(name: str, *, what: str = "dtype") -> DType:
    """Look a dtype up by any of its common spellings ('bfloat16', 'bf16', 'torch.bfloat16', 'fp8')."""
    if not isinstance(name, str):
        raise InputError(f"{what} must be a dtype name, got {name!r}", hint="e.g. bf16, fp16, fp8, int8")
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key in _DTYPES:
        return _DTYPES[key]
    if key in _KV_FORMATS and what == "KV dtype":
        return _KV_FORMATS[key]
    known = sorted(set(_DTYPES) | set(_ALIASES))
    raise InputError(f"unknown {what} {name!r}", hint=did_you_mean(name, known) or "known: " + ", ".join(sorted(_DTYPES)))


def resolve_kv_dtype(name: str | None, model_dtype: DType) -> DType:
    """'auto' (or None) means the model's activation dtype, as in vLLM's --kv-cache-dtype auto."""
    if name is None or name.strip().lower() == "auto":
        return model_dtype
    return dtype(name, what="KV dtype")


# Weight storage formats: bits per parameter, scales included, for the parameters a format quantizes.
# int8: one fp16/bf16 scale per output channel is negligible (< 0.01%) and left out.
# int4: GPTQ/AWQ store a 16-bit scale (and AWQ a 4-bit zero point) per group of 128 weights:
#   4 + 16/128 = 4.125 bits (GPTQ symmetric); kvplan uses that for "int4".
# fp8: per-tensor or per-128x128-block fp32 scales: 8 + 32/16384 bits, counted.
@dataclass(frozen=True)
class WeightFormat:
    """A checkpoint's weight format: bits per parameter, scales included, and how they were counted."""

    name: str
    bits_per_param: Fraction
    note: str


_WEIGHT_FORMATS = {
    "fp32": WeightFormat("fp32", Fraction(32), "4 bytes per parameter"),
    "fp16": WeightFormat("fp16", Fraction(16), "2 bytes per parameter"),
    "bf16": WeightFormat("bf16", Fraction(16), "2 bytes per parameter"),
    "fp8_e4m3": WeightFormat("fp8_e4m3", Fraction(8) + Fraction(32, 128 * 128), "1 byte per parameter + an fp32 scale per 128x128 block"),
    "fp8_e5m2": WeightFormat("fp8_e5m2", Fraction(8) + Fraction(32, 128 * 128), "1 byte per parameter + an fp32 scale per 128x128 block"),
    "int8": WeightFormat("int8", Fraction(8), "1 byte per parameter (per-channel scales negligible)"),
    "int4": WeightFormat("int4", Fraction(4) + Fraction(16, 128), "half a byte per parameter + a 16-bit scale per group of 128"),
}


def weight_format(name: str) -> WeightFormat:
    return _WEIGHT_FORMATS[dtype(name, what="weight dtype").name]


def weight_bytes(params: int, fmt: WeightFormat) -> int:
    """Bytes to store `params` parameters in `fmt`, rounded up to a whole byte."""
    total = params * fmt.bits_per_param / 8
    return -(-total.numerator // total.denominator)
