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
    name: str  # canonical name
    bits: int
    torch_name: str | None  # the torch dtype that stores it, where torch has one


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
