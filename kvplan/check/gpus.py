"""The GPUs a deployment runs on, from what its file says: a count (resources.limits nvidia.com/gpu, compose
device reservations, a KubeAI profile's `:8`, SkyPilot's `H100:8`) and a kind (node labels, instance types,
SkyPilot and Ray accelerator names, KubeAI profiles: kvplan/data/gpu_labels.yaml). `--gpu` / `--gpu-mem`
give the kind to files that name none (a file's own kind always wins); a file that names a count but no kind cannot be judged until --gpu names it (exit 3), and
a file that runs on something that is not a GPU (AWS Neuron, Intel Gaudi, a TPU, the CPU) cannot be judged at
all. The choice carries where each figure came from, for the report. Pure of typer and rich."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan.core.errors import UnsupportedError, InputError
from kvplan.engines import lazy
from kvplan.engines.api import Hardware
from kvplan.model.catalog import find_gpu

if TYPE_CHECKING:
    from kvplan.check import gpu_labels
    from kvplan.check.gpu_labels import Label as Label
else:  # the label table (kvplan/data/gpu_labels.yaml) loads with the first file that names a GPU label, and so
    # does the Label record (a compose file's device reservation names none); `gpus.Label` still answers (PEP 562)
    gpu_labels = lazy.module("kvplan.check.gpu_labels")
    __getattr__ = lazy.module_getattr(__name__, {"Label": "kvplan.check.gpu_labels"})


@dataclass(frozen=True, eq=False, repr=False)
class GpuEvidence:
    """What a file says about the accelerators one engine instance gets."""

    count: int | None = None  # GPUs of one instance (all nodes of a multi-node group together)
    count_where: str | None = None  # 'resources.limits nvidia.com/gpu: 8 (x 2 pods)'
    labels: tuple[Label, ...] = ()
    vendor: str | None = None  # 'nvidia' | 'amd', from a resource name, a device or a runtime
    vendor_where: str | None = None
    other: str | None = None  # a non-GPU accelerator: 'AWS Neuron devices (aws.amazon.com/neuron)'
    all_devices: bool = False  # every GPU of the host (compose `count: all`, `--gpus all`): count unknown
    shared: str | None = None  # part of a GPU: 'a MIG slice (resources.limits nvidia.com/mig-1g.10gb: 1)'


@dataclass(frozen=True, eq=False, repr=False)
class GpuChoice:
    """The GPUs a deployment is judged on, with where their kind and count came from."""

    hardware: tuple[Hardware, ...]  # one GPU, or every catalog GPU a label leaves open (each is judged)
    origin: str  # where the kind came from
    count: int | None  # GPUs the file gives one instance, when it says
    count_origin: str | None
    notes: tuple[str, ...] = ()


# no deployment names more GPUs, replicas or slices than this; a larger count is a typo or a hostile file, and
# readers that lay out one entry per GPU (compose's device sets) must not be handed 2**64 of them (issue 26: a
# compose count of 18446744073709551616 ran for 88 s of CPU)
MAX_COUNT = 1_000_000


def whole_count(value, *, where: str, what: str = "a whole number") -> int:
    """A GPU, replica or slice count as a file writes it: an integer, or a string of ASCII digits. Python's int()
    also reads '２' or '١٢٨' (issue 26: a count in non-ASCII digits passed as a number), and a bool is no count."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        count = value
    elif isinstance(value, float) and value.is_integer() and value >= 0:
        count = int(value)
    else:
        text = str(value).strip() if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""
        if not (text.isascii() and text.isdigit()):
            raise InputError(f"must be {what}, got {value!r}", where=where)
        count = int(text)
    if count > MAX_COUNT:
        raise InputError(f"must be at most {MAX_COUNT:,}, got {count:,}", where=where, hint="check the count")
    return count


# ------------------------------------------------------------------ choosing

def hardware_of(name: str) -> Hardware:
    """A catalog GPU as the engines take it; UnsupportedError when the catalog does not have it (yet)."""
    try:
        gpu = find_gpu(name)
    except InputError:
        raise UnsupportedError(f"the label's GPU {name} is not in kvplan's catalog", hint="pass --gpu NAME or --gpu-mem SIZE") from None
    return Hardware(gpu.name, gpu.runtime_capacity(where=f"the label's GPU {name}"))


def choose(evidence: GpuEvidence, override: Hardware | None, override_origin: str | None, *, where: str,
           missing: str | None = None) -> GpuChoice:
    """The GPU(s) to judge on. The file's own GPU always wins: --gpu / --gpu-mem (`override`) is the GPU of
    deployments whose file names no kind, and when it differs from the kind the file names it is reported (a note and
    the GPU origin, which every report format shows), never used: judging a file pinned to an L4 on an H100 would
    pass a deployment that fails where it runs. No kind at all is cannot judge."""
    if evidence.other:
        raise UnsupportedError(f"runs on {evidence.other}, not on a GPU; kvplan models NVIDIA and AMD GPUs", where=where,
                               hint="nothing to judge here: the memory rules of that accelerator are not modelled")
    if evidence.shared and (override_origin or "").startswith("--gpu-mem"):  # the memory of the slice, as given
        return GpuChoice((override,), f"{override_origin} for {evidence.shared}", evidence.count, evidence.count_where)
    if evidence.shared:
        # a slice or a time share of a GPU: judging it as the whole card (what --gpu or the label names) would pass
        # 16 GB of weights on a 10 GB MIG slice (issue 26)
        raise UnsupportedError(f"gets {evidence.shared}: part of a GPU, whose memory kvplan cannot read from the file",
                               where=where, hint="judge it with --gpu-mem SIZE (the memory of the slice it gets), or "
                                                 "deploy it on whole GPUs")
    notes: list[str] = []
    named = _from_labels(evidence.labels, where=where) if evidence.labels else None
    label_origin = named[1] if named is not None else None
    if override is not None and named is not None:
        hardware, origin, count = named
        given = override_origin or "--gpu"
        chosen = tuple(h for h in hardware if h.name is not None and h.name == override.name)
        if chosen and len(hardware) > 1:  # the label leaves several cards open; --gpu says which of them
            named = chosen, f"{origin}, narrowed by {given}", count
        elif not chosen:
            notes.append(f"{given} is not used: the file names its own GPU ({origin}: "
                         f"{', '.join(h.name or 'custom' for h in hardware)}), and a file's own GPU always wins")
            named = hardware, f"{origin} (the file's own; {given} not used)", count
    elif override is not None:
        if evidence.vendor and override.name:
            vendor = find_gpu(override.name).vendor
            if vendor != evidence.vendor:
                notes.append(f"the file asks for {evidence.vendor.upper()} GPUs ({evidence.vendor_where}); "
                             f"judged on {override_origin} as given")
        return GpuChoice((override,), override_origin or "--gpu", evidence.count, evidence.count_where, tuple(notes))
    if named is None and missing is not None and not (evidence.count or evidence.all_devices or evidence.vendor):
        raise UnsupportedError(missing, where=where, hint="pass --gpu NAME (kvplan gpus) or --gpu-mem SIZE")
    if named is None:
        asked = (f"it asks for {evidence.count} {(evidence.vendor or '').upper() + ' ' if evidence.vendor else ''}GPU"
                 f"{'s' if evidence.count != 1 else ''} ({evidence.count_where}) but " if evidence.count else
                 "it asks for every GPU of the host but " if evidence.all_devices else "")
        raise UnsupportedError(f"{asked}names no GPU kind kvplan can read", where=where,
                               hint="pass --gpu NAME (kvplan gpus) or --gpu-mem SIZE")
    hardware, origin, count = named
    if evidence.vendor:
        if any(find_gpu(h.name).vendor != evidence.vendor for h in hardware if h.name):
            notes.append(f"{origin} names {hardware[0].name} but the file asks for {evidence.vendor.upper()} GPUs "
                         f"({evidence.vendor_where})")
    return GpuChoice(hardware, origin, evidence.count if evidence.count is not None else count,
                     evidence.count_where if evidence.count is not None else (f"{label_origin}: {count} per machine" if count else None),
                     tuple(notes))


def _from_labels(labels: tuple[Label, ...], *, where: str) -> tuple[tuple[Hardware, ...], str, int | None] | None:
    """The catalog GPUs every GPU label of the file allows (their intersection), with where they were read."""
    allowed: list[str] | None = None
    origins: list[str] = []
    count = None
    for label in labels:
        entries = []
        for value in (label.value, *label.also):
            try:
                entry = gpu_labels.lookup(label.key, value)
            except UnsupportedError as err:
                err.where = f"{where}: {label.where}"
                raise
            if entry is None:  # one value kvplan cannot place: the label says nothing it can use
                entries = []
                break
            entries.append(entry)
        if not entries:
            continue
        shown = label.value if not label.also else "|".join((label.value, *label.also))
        origins.append(f"{label.where} {label.key}={shown}" if label.where and label.where != label.key
                       else f"{label.key}={shown}")
        names = list(dict.fromkeys(n for e in entries for n in e.names))  # any of the values: their union
        allowed = names if allowed is None else [n for n in allowed if n in names]
        counts = {e.count for e in entries}
        count = count or (counts.pop() if len(counts) == 1 else None)
    if allowed is None:
        return None
    origin = " + ".join(origins)
    if not allowed:
        raise UnsupportedError(f"its GPU labels contradict each other ({origin})", where=where,
                               hint="make the labels name the GPU it runs on")
    return tuple(hardware_of(n) for n in allowed), origin, count
