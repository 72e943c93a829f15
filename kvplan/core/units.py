"""Parse and format token counts and byte sizes. Pure: integers in, integers out.

Token counts follow vLLM's --max-model-len reading: 8k = 8000 (k = 1000), 8K = 8192 (K = 1024),
also m/M and g/G. Sizes take binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB, TB) units or plain
bytes; a bare "80G" is ambiguous and refused.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from kvplan.core.errors import InputError

# Upper bounds that keep every loop and table finite; far above any real deployment.
MAX_TOKENS = 2**40
MAX_BYTES = 2**60

_TOKEN_SUFFIX = {"": 1, "k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2, "g": 1000**3, "G": 1024**3}
_SIZE_UNITS = {
    "b": 1, "": 1,
    "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_NUMBER = r"(\d+(?:\.\d+)?|\.\d+)"


def parse_tokens(text: str | int, *, what: str | None = None) -> int:
    """'8192', '8k', '8K', '128K' -> tokens. Fractions like '1.5K' must come out whole."""
    if isinstance(text, bool):
        raise InputError(f"must be a number of tokens, got {text!r}", where=what, hint="e.g. 8192, 8k or 32K")
    if isinstance(text, int):
        value = Fraction(text)
    else:
        match = re.fullmatch(_NUMBER + r"\s*([kKmMgG]?)", str(text).strip().replace("_", "").replace(",", ""))
        if not match:
            raise InputError(f"{text!r} is not a token count", where=what, hint="e.g. 8192, 8k (=8000) or 32K (=32768)")
        value = Fraction(Decimal(match.group(1))) * _TOKEN_SUFFIX[match.group(2)]
    if value.denominator != 1:
        raise InputError(f"{text!r} is not a whole number of tokens", where=what)
    tokens = int(value)
    if tokens <= 0:
        raise InputError(f"must be positive, got {text!r}", where=what)
    if tokens > MAX_TOKENS:
        raise InputError(f"{text!r} is beyond {MAX_TOKENS} tokens", where=what)
    return tokens


def parse_size(text: str | int, *, what: str | None = None) -> int:
    """'80GiB', '80GB', '81559MiB' or a plain integer of bytes -> bytes."""
    if isinstance(text, bool):
        raise InputError(f"must be a size, got {text!r}", where=what, hint="e.g. 80GiB, 80GB or 85899345920")
    if isinstance(text, int):
        value = Fraction(text)
    else:
        raw = str(text).strip().replace("_", "").replace(",", "")
        match = re.fullmatch(_NUMBER + r"\s*([A-Za-z]*)", raw)
        unit = match.group(2).lower() if match else None
        if not match or unit not in _SIZE_UNITS:
            hint = "binary units KiB/MiB/GiB/TiB or decimal KB/MB/GB/TB, e.g. 80GiB"
            if unit in {"k", "m", "g", "t"}:
                hint = f"'{match.group(2)}' is ambiguous: write {match.group(2).upper()}iB (binary) or {match.group(2).upper()}B (decimal)"
            raise InputError(f"{text!r} is not a size", where=what, hint=hint)
        try:
            value = Fraction(Decimal(match.group(1))) * _SIZE_UNITS[unit]
        except InvalidOperation:  # pragma: no cover - the regex admits only decimals
            raise InputError(f"{text!r} is not a size", where=what) from None
    if value <= 0:
        raise InputError(f"must be positive, got {text!r}", where=what)
    size = int(value)  # a fractional byte rounds down: '1.5KiB' is 1536, '0.1KiB' is 102
    if size == 0:  # '0.9' (bytes) rounds to nothing: a GPU of 0 bytes divides by zero further on
        raise InputError(f"{text!r} is less than one byte", where=what, hint="give a unit, e.g. 80GiB")
    if size > MAX_BYTES:
        raise InputError(f"{text!r} is beyond {MAX_BYTES} bytes", where=what)
    return size


def parse_fraction(text: str | float, *, what: str, low: Fraction = Fraction(0), high: Fraction = Fraction(1)) -> Fraction:
    """'0.9', '90%' -> Fraction(9, 10), exact: 0.9 x bytes must not pick up binary float error."""
    raw = str(text).strip()
    percent = raw.endswith("%")
    try:
        value = Fraction(Decimal(raw.rstrip("%").strip()))
    except (InvalidOperation, ValueError, OverflowError):  # 'nan' and 'inf' parse as Decimals but are no fractions
        raise InputError(f"{text!r} is not a number", where=what, hint="e.g. 0.9 or 90%") from None
    if percent:
        value /= 100
    if not (low < value <= high):
        raise InputError(f"must be in ({float(low):g}, {float(high):g}], got {text!r}", where=what)
    return value


def format_bytes(n: int | None, *, binary: bool = True) -> str:
    """A byte count for people: '12.50 GiB' (binary, the default) or '13.42 GB'."""
    if n is None:
        return "—"
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] if binary else ["B", "KB", "MB", "GB", "TB", "PB"]
    step = 1024 if binary else 1000
    value = Fraction(n)
    sign = "-" if value < 0 else ""
    value = abs(value)
    for unit in units:
        if value < step or unit == units[-1]:
            if unit == "B":
                return f"{sign}{int(value)} B"
            return f"{sign}{float(value):.2f} {unit}"
        value /= step
    raise AssertionError("unreachable")


def format_tokens(n: int | None) -> str:
    """Tokens with thousands separators, and the K form when it is exact: '131,072 (128K)'."""
    if n is None:
        return "—"
    if n >= 1024 and n % 1024 == 0:
        return f"{n:,} ({n // 1024}K)"
    return f"{n:,}"
