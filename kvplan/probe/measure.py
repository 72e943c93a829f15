"""Allocate one rank's cache tensors, measure them, free them — on every path, Ctrl-C included.

Tensors live only in a list that this module clears in `finally`; no other reference escapes except
to the `while_held` callback (the decode benchmark), which must not keep them.
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any, Callable

from kvplan.probe import ProbeOutOfMemory
from kvplan.probe.device import Device, deltas
from kvplan.probe.layout import RankPlan, TensorSpec
from kvplan.probe.result import Deltas, GroupResult
from kvplan.core.units import format_bytes

# Host memory is committed lazily and Linux answers exhaustion with the OOM killer, not an error; so on
# the CPU the probe refuses up front to touch more than this share of MemAvailable.
CPU_GUARD = Fraction(95, 100)


def allocate(specs: list[TensorSpec], device: Device, held: list, *, touch: bool) -> None:
    """Append one tensor per spec to `held` (the caller owns and clears it)."""
    for spec in specs:
        held.append(device.empty(spec.shape, spec.dtype))
        if touch:
            device.touch(held[-1])


def storage_bytes(tensor) -> int:
    return int(tensor.untyped_storage().nbytes())


def measure_rank(plan: RankPlan, device: Device, *, touch: bool = True,
                 while_held: Callable[[list[tuple[TensorSpec, Any]]], Any] | None = None):
    """Allocate the plan, read the counters, run `while_held`, free. Returns (groups, deltas, tensor bytes,
    tensor count, seconds, the callback's value)."""
    specs = list(plan.tensors)
    planned = plan.planned_bytes
    if device.kind == "cpu":
        available = device.free_bytes()
        if available is not None and planned > available * CPU_GUARD:
            raise ProbeOutOfMemory(f"the cache needs {format_bytes(planned)} but the host has {format_bytes(available)} available; "
                                   "refusing to touch more than 95% of it", where="--device cpu",
                                   hint="lower --seq/--batch, or use --find-max --max-bytes SIZE")
    device.release(collect=False)
    before = device.counters()
    held: list = []
    extra = None
    start = time.perf_counter()
    try:
        try:
            allocate(specs, device, held, touch=touch)
        except Exception as err:  # noqa: BLE001 - only out-of-memory is translated; the rest re-raises
            if not device.is_oom(err):
                raise
            got = sum(storage_bytes(t) for t in held)
            held.clear()
            raise ProbeOutOfMemory(f"{device.label} ran out of memory after {format_bytes(got)} of the {format_bytes(planned)} cache",
                                   where="kvplan probe", hint="lower --seq/--batch, raise --tp/--pp, or run --find-max") from None
        device.synchronize()
        seconds = time.perf_counter() - start
        after = device.counters()
        sizes = [storage_bytes(t) for t in held]
        if while_held is not None:
            extra = while_held(list(zip(specs, held)))
    finally:
        held.clear()
        device.release()
    released = device.counters()
    d = deltas(after, before)
    left = deltas(released, before)
    by_layer_role = {(s.layer, s.role): n for s, n in zip(specs, sizes)}
    groups = []
    for g in plan.groups:
        measured = sum(by_layer_role[(t.layer, t.role)] for t in g.tensors)
        groups.append(GroupResult(label=g.label, kind=g.kind, layers=len(g.layers), tensors=len(g.tensors),
                                  shapes=tuple(dict.fromkeys(t.describe() for t in g.tensors)),
                                  estimated_bytes=g.estimated_bytes, measured_bytes=measured,
                                  match=measured == g.estimated_bytes))
    result_deltas = Deltas(requested_bytes=d.requested, allocated_bytes=d.allocated, reserved_bytes=d.reserved,
                           driver_bytes=d.driver_used, rss_bytes=d.rss,
                           left_after_free_requested_bytes=left.requested, left_after_free_reserved_bytes=left.reserved,
                           left_after_free_rss_bytes=left.rss)
    return tuple(groups), result_deltas, sum(sizes), len(sizes), seconds, extra


def rank_match(plan: RankPlan, groups: tuple[GroupResult, ...], d: Deltas, tensor_bytes: int) -> tuple[bool, int, list[str]]:
    """Whether the rank matched, what counts as its measured bytes, and why not where it did not."""
    notes = []
    # CUDA: the allocator's requested bytes are the device's own count of what was asked for
    measured = d.requested_bytes if d.requested_bytes is not None else tensor_bytes
    ok = measured == plan.estimated_bytes and tensor_bytes == plan.estimated_bytes and all(g.match for g in groups)
    if d.requested_bytes is not None and d.requested_bytes != tensor_bytes:
        notes.append(f"rank {plan.rank}: allocator requested {d.requested_bytes} B for {tensor_bytes} B of tensors "
                     "(another thread allocated meanwhile?)")
    if plan.reference is not None and plan.estimated_bytes != plan.footprint_bytes:
        ok = False
        notes.append(f"rank {plan.rank}: the layout's {plan.estimated_bytes:,} B differ from the {plan.reference}'s "
                     f"{plan.footprint_bytes:,} B (a kvplan inconsistency)")
    if plan.checks:
        ok = False
        notes += [f"rank {plan.rank}: {c}" for c in plan.checks]
    return ok, measured, notes
