"""A site profile: the budget terms a site's own start-up logs measured (`kvplan calibrate LOG... --save FILE`),
applied by every engine's budget model (`--calibration FILE` on estimate, check, sweep, plot). One format for
vLLM, SGLang and TensorRT-LLM. Pure: the file is read and written by the commands (kvplan/core/io.py).

A term left None keeps the engine's own model of it; memory already in use at start is subtracted from what the
engine sees free (drivers, a desktop's display, WSL2, other processes on the GPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class SiteProfile:
    engine: str | None  # the engine the logs came from; None: applies to any
    memory_in_use_bytes: int = 0  # taken on each GPU before the engine starts
    non_torch_bytes: int | None = None  # replaces the modelled non-torch memory (CUDA context, NCCL, all-reduce)
    activation_scale: Fraction = Fraction(1)  # multiplies the modelled activation peak of the profile run
    cuda_graph_bytes: int | None = None  # replaces the modelled CUDA-graph memory
    fitted_on: tuple[str, ...] = ()  # the logs the terms were fitted on
    source: str | None = None  # the profile file
