"""Parse and format token counts, byte sizes, whole numbers and fractions: the one number parser of every flag
and every file format. Pure: text or numbers in, integers (or exact Fractions) out.

Token counts follow vLLM's own reading of --max-model-len (vllm/utils/argparse_utils.py human_readable_int,
0.19 to 0.33): a plain integer, or digits with one suffix: k/m/g/t = 10**3/10**6/10**9/10**12 (decimals allowed:
'25.6k' = int(float('25.6') x 1000), as vLLM computes it), K/M/G/T = 2**10/2**20/2**30/2**40 (whole numbers only:
vLLM refuses '1.5K'). Sizes take binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB, TB) units or plain bytes;
a bare "80G" is ambiguous and refused.

Stricter than Python's int() and float() on purpose, so that a typo is an error and never a different number:
- ASCII digits only: int() also reads full-width ('８１９２') and Arabic-Indic digits;
- no commas: '4096,8192' is not 40,968,192, and '8,0GiB' is not 80 GiB (a list of values is for `kvplan sweep`);
  underscores only between digits, as Python writes them ('32_768');
- bounded text: at most MAX_NUMBER_CHARS characters and a 3-digit exponent, so '1e999999999' is refused at once
  instead of being expanded into a billion-digit integer;
- a value far out of range is shown by its digit count: Python refuses to print an integer of more than 4,300
  digits (ValueError), and no message should be 4,300 digits long anyway.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

from kvplan.core.errors import InputError
from kvplan.core.regex import Pattern

# Upper bounds that keep every loop and table finite; far above any real deployment.
MAX_TOKENS = 2**40
MAX_BYTES = 2**60
MAX_NUMBER_CHARS = 64  # '1_099_511_627_776' is 17; a number in a config file or on a command line is never 64

_DECIMAL_SUFFIX = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY_SUFFIX = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_SIZE_UNITS = {
    "b": 1, "": 1,
    "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_DIGITS = r"\d+(?:_\d+)*"
_INTEGER = Pattern(rf"[+-]?{_DIGITS}", re.ASCII)
_TOKENS = Pattern(rf"({_DIGITS}(?:\.\d+)?)([kKmMgGtT]?)", re.ASCII)
_SIZE = Pattern(rf"({_DIGITS}(?:\.\d+)?|\.\d+)\s*([A-Za-z]*)", re.ASCII)
_DECIMAL = Pattern(rf"[+-]?(?:{_DIGITS}(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{{1,3}})?", re.ASCII)


class WrittenNumber(Fraction):
    """An exact number that shows as it was written: '1.5' in every message and note, never Fraction(3, 2) nor 3/2
    (issue 26). Arithmetic on it gives plain Fractions; a copy is itself (it is immutable)."""

    __slots__ = ("_written",)
    _written: str

    def __new__(cls, value: Fraction, written: str):
        self = super().__new__(cls, value.numerator, value.denominator)
        self._written = written
        return self

    def __repr__(self) -> str:
        return self._written

    __str__ = __repr__

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (WrittenNumber, (Fraction(self.numerator, self.denominator), self._written))


def shown(value) -> str:
    """A value for an error message, never longer than a line: an integer of many digits by its digit count."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        return f"an integer of {len(str(abs(value))) if value.bit_length() < 14000 else 'more than 4,000'} digits"
    if isinstance(value, Fraction) and not isinstance(value, WrittenNumber):
        value = float(value)  # an exact value kvplan computed: its decimal, not Fraction(3, 2)
    if isinstance(value, Decimal):
        return str(value)
    try:
        text = repr(value)
    except ValueError:  # a list or mapping holding an integer past Python's 4,300-digit printing limit
        return f"a {type(value).__name__} holding a number too long to print"
    return text if len(text) <= 60 else text[:57] + "..."


def _text(value, *, what: str | None, example: str) -> str:
    """The number's text, stripped, or one InputError saying why it cannot be a number at all."""
    text = str(value).strip()
    if not text:
        raise InputError("is empty", where=what, hint=f"e.g. {example}")
    if len(text) > MAX_NUMBER_CHARS:
        raise InputError(f"{len(text):,} characters are too long for a number", where=what, hint=f"e.g. {example}")
    if not text.isascii():
        raise InputError(f"{shown(text)} holds characters other than ASCII digits", where=what,
                         hint=f"write the digits 0-9, e.g. {example}")
    if "," in text:
        raise InputError(f"{text!r} holds a comma: numbers take no thousands separators", where=what,
                         hint=f"e.g. {example}; several values are for `kvplan sweep`")
    return text


def _bounded(value: int, *, what: str | None, minimum: int | None, maximum: int | None, noun: str = "") -> int:
    if minimum is not None and value < minimum:
        raise InputError(f"must be at least {minimum}{noun}, got {shown(value)}", where=what)
    if maximum is not None and value > maximum:
        raise InputError(f"{shown(value)} is implausibly large (limit {maximum})", where=what)
    return value


def parse_int(value, *, what: str | None, minimum: int | None = 1, maximum: int | None = None) -> int:
    """A whole number from a flag or a file: an int (not a bool), or ASCII digits ('32_768' allowed)."""
    if isinstance(value, bool):
        raise InputError(f"must be a whole number, got {value!r}", where=what)
    if isinstance(value, int):
        return _bounded(value, what=what, minimum=minimum, maximum=maximum)
    if not isinstance(value, str):
        raise InputError(f"must be a whole number, got {shown(value)}", where=what)
    text = _text(value, what=what, example="8")
    if not _INTEGER.fullmatch(text):
        raise InputError(f"{text!r} is not a whole number", where=what)
    return _bounded(int(text), what=what, minimum=minimum, maximum=maximum)


def human_readable_int(text: str, *, what: str | None = None) -> int:
    """vLLM's human_readable_int, unbounded in sign and size as vLLM's is (a `vllm serve` file is read with it),
    and with kvplan's stricter text: ASCII digits, no commas, bounded length."""
    raw = _text(text, what=what, example="8192, 8k (=8000) or 32K (=32768)")
    match = _TOKENS.fullmatch(raw)
    if not match:
        if _INTEGER.fullmatch(raw):
            return int(raw)  # vLLM's plain int(value): a sign is allowed
        raise InputError(f"{text!r} is not a token count", where=what, hint="e.g. 8192, 8k (=8000) or 32K (=32768)")
    number, suffix = match.groups()
    number = number.replace("_", "")
    if "." in number and suffix in _BINARY_SUFFIX:
        raise InputError(f"{text!r}: decimals are not allowed with the binary suffix {suffix} (vLLM refuses them too)",
                         where=what, hint=f"did you mean {number}{suffix.lower()}?")
    if "." in number and not suffix:
        raise InputError(f"{text!r} is not a whole number of tokens", where=what, hint="e.g. 8192 or 25.6k")
    if suffix in _DECIMAL_SUFFIX:
        return int(float(number) * _DECIMAL_SUFFIX[suffix])  # vLLM: '1.0001k' is 1000 there, and so here
    return int(number) * _BINARY_SUFFIX.get(suffix, 1)


def decimal_suffix_note(text, *, what: str) -> str | None:
    """A note when a token count uses a decimal suffix whose binary twin is a different number: '32k' is 32,000 where
    '32K' is 32,768 (vLLM reads both so; a user writing 32k for 32K would size a shorter context). None otherwise."""
    if not isinstance(text, str):
        return None
    match = _TOKENS.fullmatch(text.strip())
    if not match or match.group(2) not in _DECIMAL_SUFFIX or match.group(2).upper() not in _BINARY_SUFFIX:
        return None
    decimal = parse_tokens(text, what=what)
    number = match.group(1).replace("_", "")
    if "." in number:
        return None
    binary = int(number) * _BINARY_SUFFIX[match.group(2).upper()]
    return (f"{what} {text.strip()} is {decimal:,} tokens ({match.group(2)} = {_DECIMAL_SUFFIX[match.group(2)]:,}, as vLLM "
            f"reads it); {number}{match.group(2).upper()} would be {binary:,}")


def parse_tokens(text: str | int, *, what: str | None = None) -> int:
    """'8192', '8k', '8K', '128K', '25.6k' -> tokens, as vLLM's human_readable_int reads them."""
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise InputError(f"must be a number of tokens, got {shown(text)}", where=what, hint="e.g. 8192, 8k or 32K")
    tokens = text if isinstance(text, int) else human_readable_int(text, what=what)
    if tokens <= 0:
        raise InputError(f"must be positive, got {shown(text)}", where=what)
    if tokens > MAX_TOKENS:
        raise InputError(f"{shown(text)} is beyond {MAX_TOKENS} tokens", where=what)
    return tokens


# a size written as a bare number below this many bytes is a unit left out (`--gpu-mem 80`), not a size: refused
_UNITLESS_FLOOR = 2**20


def parse_size(text: str | int, *, what: str | None = None, zero_ok: bool = False) -> int:
    """'80GiB', '80GB', '81559MiB' or a plain integer of bytes (at least 1 MiB as text: `80` is a unit left out) ->
    bytes. `zero_ok`: 0 (any unit or none) is a size too, for amounts that can be nothing (--gpu-reserved 0: no
    other process holds memory); a negative one is refused either way."""
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise InputError(f"must be a size, got {shown(text)}", where=what, hint="e.g. 80GiB, 80GB or 85899345920")
    if isinstance(text, int):
        value = Fraction(text)
    else:
        raw = _text(text, what=what, example="80GiB")
        match = _SIZE.fullmatch(raw)
        unit = match.group(2).lower() if match else None
        if match and not unit and 0 < Fraction(Decimal(match.group(1).replace("_", ""))) < _UNITLESS_FLOOR:
            # `--gpu-mem 80` read as 80 bytes judged a GPU of nothing; no memory size kvplan takes is below a MiB
            raise InputError(f"{text!r} has no unit: it would be {match.group(1)} bytes", where=what,
                             hint=f"write the unit, e.g. {match.group(1)}GiB (binary) or {match.group(1)}GB (decimal)")
        if not match or unit not in _SIZE_UNITS:
            hint = "binary units KiB/MiB/GiB/TiB or decimal KB/MB/GB/TB, e.g. 80GiB"
            if unit in {"k", "m", "g", "t"}:
                hint = f"'{match.group(2)}' is ambiguous: write {match.group(2).upper()}iB (binary) or {match.group(2).upper()}B (decimal)"
            raise InputError(f"{text!r} is not a size", where=what, hint=hint)
        value = Fraction(Decimal(match.group(1).replace("_", ""))) * _SIZE_UNITS[unit]
    if zero_ok and value == 0:
        return 0
    if value <= 0:
        raise InputError(f"must be positive, got {shown(text)}", where=what)
    size = int(value)  # a fractional byte rounds down: '1.5KiB' is 1536, '0.1KiB' is 102
    if size == 0:  # '0.9' (bytes) rounds to nothing: a GPU of 0 bytes divides by zero further on
        raise InputError(f"{text!r} is less than one byte", where=what, hint="give a unit, e.g. 80GiB")
    if size > MAX_BYTES:
        raise InputError(f"{shown(text)} is beyond {MAX_BYTES} bytes", where=what)
    return size


def parse_decimal(value, *, what: str | None, percent: bool = True) -> tuple[Fraction, bool]:
    """(exact value, written with %) of '0.9', '90%', '9e-1', 0.9 (a float from YAML is read as it is written).
    NaN, infinities and exponents of more than 3 digits are refused."""
    if isinstance(value, Fraction):
        return value, False
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"must be a number, got {shown(value)}", where=what, hint="e.g. 0.9 or 90%")
    raw = _text(repr(value) if isinstance(value, float) else value, what=what, example="0.9 or 90%")
    is_percent = percent and raw.endswith("%")
    body = raw[:-1].strip() if is_percent else raw
    if not _DECIMAL.fullmatch(body):
        raise InputError(f"{shown(value)} is not a number", where=what, hint="e.g. 0.9 or 90%")
    number = Fraction(Decimal(body.replace("_", "")))
    return (number / 100 if is_percent else number), is_percent


def parse_fraction(text, *, what: str, low: Fraction = Fraction(0), high: Fraction = Fraction(1)) -> Fraction:
    """'0.9', '90%' -> Fraction(9, 10), exact: 0.9 x bytes must not pick up binary float error."""
    value, _ = parse_decimal(text, what=what)
    if not (low < value <= high):
        raise InputError(f"must be in ({float(low):g}, {float(high):g}], got {shown(text)}", where=what)
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
