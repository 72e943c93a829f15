"""The value parsers the engines' command lines share: vLLM and SGLang read token counts with the same
human_readable_int, and float options are kept exact. argparse-style: a bad value raises ValueError (or
argparse.ArgumentTypeError with the engine's own words), which each engine's option reader words as its parser does.
"""

from __future__ import annotations

import argparse
import math
from fractions import Fraction

from kvplan.core.errors import InputError
from kvplan.core.units import WrittenNumber, human_readable_int as parse, parse_decimal


def human_readable_int(value: str) -> int:
    """vLLM's human_readable_int (vllm/utils/argparse_utils.py in 0.33.0; engine/arg_utils.py before): '1k' = 1000,
    '1K' = 1024, '25.6k' = 25600, '1.5K' refused. Decimal suffixes go through float as in vLLM, so the rare value
    that float rounds down ('1.001k' -> 1000) comes out as vLLM itself reads it. The text is read by kvplan's one
    number parser (kvplan.core.units): ASCII digits, no commas, bounded length (int() would take more)."""
    try:
        return parse(value)
    except InputError as err:
        if "binary suffix" in err.what:  # vLLM's own ArgumentTypeError for '1.5K'
            raise argparse.ArgumentTypeError(err.what) from None
        raise ValueError(value) from None  # argparse: "invalid human_readable_int value: 'x'", as from vLLM


human_readable_int.__name__ = "human_readable_int"


def exact_float(value: str) -> Fraction | float:
    """argparse type for float options: checked as vLLM checks it (float()), kept exact when finite, so that 0.9 x
    capacity picks up no binary rounding. The exact value comes from kvplan's number parser, which bounds the
    exponent: Fraction(Decimal('1e999999999')) would expand a billion-digit integer."""
    if not value.strip().isascii():
        raise ValueError(value)  # float() would read full-width digits; argparse: "invalid float value"
    number = float(value)
    if not math.isfinite(number):
        return number  # inf / nan: kept as vLLM has them, refused later
    try:
        return WrittenNumber(parse_decimal(value, what=None, percent=False)[0], value.strip())  # shown as written
    except InputError:  # an exponent past 3 digits: the float (0.0 or a huge value) is what vLLM has
        return number


exact_float.__name__ = "float"


class ParseError(Exception):
    """What an engine's option parser found wrong, in argparse's words; each engine's reader words it as one
    InputError."""


class Parser(argparse.ArgumentParser):
    """argparse as vLLM's and SGLang's option readers run it: an error raises ParseError instead of printing and
    exiting."""

    def error(self, message):
        raise ParseError(message)
