"""`kvplan probe`: allocate the cache kvplan estimates with torch, on the real device, and compare.

The only package that imports torch, and only inside functions (`load_torch`), so that importing
kvplan, `kvplan --help` and `kvplan estimate` stay torch-free (docs/architecture.md).

Modules, from the bottom:
  layout.py   pure: which tensors (shape, dtype) hold the cache of one rank, static or paged, and the
              estimate for each layer group, from kvplan.cache's own math. No torch.
  result.py   pure: the frozen result dataclasses (their fields are the JSON).
  device.py   the one place that touches the machine: torch import, device selection, memory
              counters (CUDA allocator / driver, or process RSS), allocation, OOM detection. Injectable.
  measure.py  allocate a rank's tensors, read the counters, free everything on every path.
  findmax.py  grow the cache until the budget or the device says no; compare with the prediction.
  bench.py    time one decode attention step per layer group (scaled_dot_product_attention).
  dist.py     torchrun: which shard this process holds; gather every rank's result on rank 0.
  runner.py   ties them together for one probe request.
  suite.py    the GPU verification matrix (scripts/gpu-verify.sh), with a CPU dry run.
"""

from __future__ import annotations

from kvplan.core.errors import EXIT_NO, InputError, KvplanError


class ProbeOutOfMemory(KvplanError):
    """The device refused the allocation (outside --find-max): a definite 'does not fit', exit 1."""

    exit_code = EXIT_NO


INSTALL_HINT = "pip install 'kvplan[probe]'"


def load_torch():
    """Import torch, or say how to get it. The probe's only entry to torch."""
    try:
        import torch
    except ImportError:
        raise InputError("torch is not installed; the probe allocates real caches with it", where="kvplan probe",
                         hint=INSTALL_HINT) from None
    return torch


__all__ = ["ProbeOutOfMemory", "load_torch", "INSTALL_HINT"]
