"""Reading JSON input (config.json, safetensors index files, workloads, calibration files) strictly, with one-line
errors. Pure of typer and rich.

Strict where Python's json module is lenient: a key given twice in one object is refused (json keeps the last
one silently, so `"num_hidden_layers": 32, ..., "num_hidden_layers": 0` would read as 0), and an integer of
more digits than any real value is refused before Python converts it (past 4,300 digits int() raises
ValueError; far before that the value is a corrupt file). Hugging Face's bare Infinity / NaN are accepted:
real configs carry them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from kvplan.core.errors import InputError
from kvplan.core.files import MAX_INPUT_BYTES, read_text

# far beyond any count of bytes, tokens or parameters (2**64 has 20 digits); also far below Python's 4,300
MAX_INT_DIGITS = 40
_CONSTANTS = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


class _Refused(ValueError):
    """Raised inside the decoder's hooks; turned into an InputError with the place."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"key {key!r} is given twice in one object (JSON readers disagree on which one wins)")
        out[key] = value
    return out


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"holds an integer of {len(text.lstrip('-')):,} digits (more than {MAX_INT_DIGITS}: no real value)")
    return int(text)


def loads(text: str, *, where: str, hint: str | None = None) -> Any:
    """One JSON document from text; every problem is one InputError at `where`."""
    import json  # on first use: kvplan check of a YAML file reads no JSON, and json costs about 1 ms of start-up

    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_int=_int, parse_constant=_CONSTANTS.__getitem__)
    except _Refused as err:
        raise InputError(str(err), where=where, hint=hint or "fix the file") from None
    except json.JSONDecodeError as err:
        raise InputError(f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}", where=where,
                         hint=hint) from None
    except RecursionError:
        raise InputError("is nested too deeply to read", where=where, hint=hint) from None
    except ValueError as err:  # pragma: no cover - the hooks above refuse first; kept so no ValueError escapes
        raise InputError(f"cannot be read as JSON: {err}", where=where, hint=hint) from None


def load_json(path: Path, *, limit: int = MAX_INPUT_BYTES) -> Any:
    """A JSON file, read through the bounded reader (core/files.py)."""
    return loads(read_text(path, limit=limit), where=str(path))
