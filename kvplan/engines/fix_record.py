"""One fix engines/fixes.py found: the setting it turns (fixes.py MAX_LEN, TP, KV_DTYPE, UTIL, KV_MEMORY, WEIGHTS,
GPU, ROPE), its value and the request with the change. Its own module, built when a request does not fit or a check
fails: an estimate that fits never creates the class (benchmarks/cold_start.py); fixes.py hands the name out too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvplan.engines.api import EngineRequest


@dataclass(frozen=True)
class Fix:
    setting: str  # one of MAX_LEN, TP, KV_DTYPE, UTIL, KV_MEMORY, WEIGHTS, GPU (vLLM's names for the settings)
    value: Any  # int, "fp8", a Fraction, bytes, a weight format (WEIGHTS_FP8, WEIGHTS_INT4) or the catalog GPU's name
    request: EngineRequest  # the request with the change
    gpus: int | None = None  # TP x PP after a TP change
    capacity_bytes: int | None = None  # of the suggested GPU
    from_len: int | None = None  # ROPE: the model's own limit the scaling factor multiplies
