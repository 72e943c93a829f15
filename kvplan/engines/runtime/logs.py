"""What every engine's log reader shares: the byte interval a printed GiB figure stands for, the GPU a log's total
memory names, and the model a log names. Engine-neutral; each engine's calibrate.py reads its own phrases
(kvplan calibrate).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.engines.api import Hardware
from kvplan.model import catalog
from kvplan.model.catalog import gpus

GIB = 2**30


def vllm_format_gib(num_bytes: int) -> str:
    """The text vLLM prints for a byte count (utils/mem_utils.py:format_gib): str(round(b / 2**30, 2)).

    b / 2**30 is exact in binary floating point for any realistic b (a division by a power of two),
    and Python's round() is correctly rounded with ties to even, so this is a pure function of b.
    """
    return f"{round(num_bytes / GIB, 2)}"


def gib_bounds(value: Decimal | str) -> tuple[int, int]:
    """The byte interval [low, high) whose members vLLM prints as `value` GiB.

    vLLM prints two decimals (format_gib drops trailing zeros: "58.1" is 58.10), V0's weights four; a
    value with d > 2 decimals is read at d. Exact, integers only: with s = 10**d and c = s x value, b
    qualifies when |2s x b - c x 2**31| < 2**30, and on a tie (possible because 2**30 / 2s is not whole)
    round-half-even keeps b only when c is even. "%.2f" formatting rounds the same way.
    """
    d = Decimal(value)
    exponent = d.as_tuple().exponent  # an int, or a letter for nan / infinity
    places = max(2, -exponent) if isinstance(exponent, int) else 2
    s = 10**places
    c = int(d * s)
    two_s = 2 * s
    lo_num = (2 * c - 1) * GIB  # 2s x (lower boundary in bytes)
    hi_num = (2 * c + 1) * GIB  # 2s x (upper boundary in bytes)
    low = -((-lo_num) // two_s)  # ceil
    if low * two_s == lo_num and c % 2 != 0:
        low += 1  # tie at the lower boundary rounds to c - 1 (even)
    high = -((-hi_num) // two_s)  # ceil: first b at or past the upper boundary
    if high * two_s == hi_num and c % 2 == 0:
        high += 1  # tie at the upper boundary rounds down to c (even), so it is a member
    if c == 0:
        # round() keeps the sign: (-0.005, 0) prints "-0.0", [0, 0.005) prints "0.0"
        if d.is_signed():
            high = 0
        else:
            low = 0
    return low, high


def model_dir_name(model_id: str) -> str:
    """'meta-llama/Llama-3.1-8B-Instruct' -> 'meta-llama--Llama-3.1-8B-Instruct' (the Hub's cache naming)."""
    return model_id.strip().strip("/").replace("/", "--")


def resolve_log_model(model_id: str | None, *, model: str | None = None, models_dir: str | None = None):
    """The ModelSpec for a log's model: --model wins, then <models-dir>/<org>--<name> (or its short name), then a
    bundled spec or alias, then, for a path, the bundled alias its trailing org/name spells."""
    if model:
        return catalog.resolve_model(model)
    if not model_id:
        raise UnsupportedError("the log names no model", hint="give --model PATH")
    if models_dir:
        base = Path(models_dir)
        wanted = model_dir_name(model_id).lower()
        short = model_id.rstrip("/").split("/")[-1].lower()
        if base.is_dir():
            for entry in sorted(base.iterdir()):
                if entry.is_dir() and entry.name.lower() in (wanted, short):
                    return catalog.resolve_model(str(entry))
    try:
        return catalog.resolve_model(model_id)
    except InputError:
        pass
    # a path on the serving host ending in a Hub id (/mnt/models/meta-llama/Llama-3.1-8B-Instruct): the bundled spec
    # that carries that org/name as its alias; a path is never looked up on the Hub
    parts = [part for part in model_id.strip().rstrip("/").split("/") if part]
    if len(parts) > 2 and (spec := catalog.find_bundled("/".join(parts[-2:]))) is not None:
        return spec
    raise UnsupportedError(f"kvplan cannot describe {model_id!r}: not a bundled model or alias"
                           + (f", nor under {models_dir}" if models_dir else ""),
                           hint="give --model PATH (a config.json, a model folder or a spec YAML) or --models-dir DIR")


def describe_log_model(model_id: str | None, *, model: str | None = None, models_dir: str | None = None):
    """(the log's ModelSpec, None) as resolve_log_model finds it, or (None, why not) when kvplan cannot describe it."""
    try:
        return resolve_log_model(model_id, model=model, models_dir=models_dir), None
    except KvplanError as err:
        return None, f"cannot describe the log's model: {err.one_line()}"


def gpu_assumption(notes: list[str]) -> tuple[str, ...]:
    """The modelled figures' assumption when the log's total memory fits several catalog GPUs."""
    return tuple(n.split(":")[0].replace("GPU taken to be", "GPU") for n in notes if n.startswith("GPU taken to be"))


def gpu_from_log(total_gib: Decimal | None, *, tolerance_gib: Decimal | None = None):
    """The catalog GPU whose runtime capacity vLLM would print as `total_gib` (or, with a tolerance, the nearest
    within it: TensorRT-LLM prints its totals after its own deductions), else a nameless one in the middle of the
    printed interval."""
    if total_gib is None:
        return None, ["the log prints no total GPU memory (worker snapshot, profile or Free memory line): the GPU is "
                      "unknown, so nothing end to end is modelled"]
    lo, hi = gib_bounds(total_gib)
    known = [(g, g.capacity_bytes) for g in gpus() if g.capacity_bytes is not None]  # GB200, GB300: no reading
    matches = [g for g, cap in known if lo <= cap < hi]
    if not matches and tolerance_gib is not None:
        near = [(g, cap) for g, cap in known if abs(Decimal(cap) / GIB - total_gib) <= tolerance_gib]
        matches = [g for g, cap in sorted(near, key=lambda pair: abs(Decimal(pair[1]) / GIB - total_gib))]
    if matches:
        g = matches[0]
        if len(matches) == 1:
            return Hardware(g.name, g.runtime_capacity()), []
        also = ", ".join(m.name for m in matches[1:])
        return Hardware(g.name, g.runtime_capacity()), [f"GPU taken to be {g.name} (also {also}): the catalog GPU whose "
                                                    f"capacity prints as the log's {total_gib} GiB"]
    mid = (lo + hi) // 2
    return Hardware(None, mid), [f"no catalog GPU reports {total_gib} GiB; used {mid:,} B"]
