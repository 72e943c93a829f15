"""--find-max: grow the cache until the budget or the device says no, then compare with kvplan.

Growth is in chunks of whole units (sequences for the static layout, one block in every attention
pool for the paged one): about 8 large chunks, then halving whenever the next chunk would pass the
budget or the device refuses it, down to one unit. The budget check uses the chunk's own tensor sizes
(shape x element size), not kvplan's byte math, so the measured maximum is independent of the
prediction it is compared with.
"""

from __future__ import annotations

import time

from kvplan.core.errors import UnsupportedError
from kvplan.probe.device import Device
from kvplan.probe.layout import GrowthUnit
from kvplan.probe.measure import allocate, storage_bytes
from kvplan.probe.result import FindMaxResult

FIRST_CHUNKS = 8
MAX_STEPS = 10_000


def find_max(unit: GrowthUnit, device: Device, *, budget: int, budget_source: str, touch: bool = True) -> FindMaxResult:
    one = sum(t.nbytes for t in unit.tensors(1))
    if one <= 0:
        raise UnsupportedError("nothing to grow: one unit holds no bytes", where="--find-max")
    chunk = max(1, (budget // one) // FIRST_CHUNKS)
    held: list = []
    fresh: list = []
    count = measured = steps = 0
    refused = False
    start = time.perf_counter()
    device.release(collect=False)
    try:
        while chunk >= 1 and steps < MAX_STEPS:
            specs = unit.tensors(chunk)
            if measured + sum(s.nbytes for s in specs) > budget:
                chunk //= 2
                continue
            steps += 1
            try:
                allocate(specs, device, fresh, touch=touch)
            except Exception as err:  # noqa: BLE001 - out-of-memory is the answer we are looking for
                if not device.is_oom(err):
                    raise
                fresh.clear()
                device.release(collect=False)
                refused = True
                chunk //= 2
                continue
            measured += sum(storage_bytes(t) for t in fresh)
            held.extend(fresh)
            fresh.clear()
            count += chunk
        device.synchronize()
    finally:
        fresh.clear()
        held.clear()
        device.release()
    predicted = budget // unit.estimated_bytes
    return FindMaxResult(unit=unit.name, unit_bytes=unit.estimated_bytes, budget_bytes=budget, budget_source=budget_source,
                         predicted_max=predicted, measured_max=count, measured_bytes=measured,
                         limited_by="out of memory" if refused else "budget", steps=steps,
                         match=count == predicted and measured == predicted * unit.estimated_bytes,
                         seconds=round(time.perf_counter() - start, 6))
