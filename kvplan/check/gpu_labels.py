"""The GPU labels of clouds and operators (node labels, instance types, SkyPilot, Ray and KubeAI accelerator names)
read as catalog GPUs: kvplan/data/gpu_labels.yaml, and GPU feature discovery's product label by its rule; and the
Label record a file's reader makes of one. Apart from check/gpus.py so that a file naming no label (a compose file's
device reservation) does not build these types (benchmarks/cold_start.py). Pure of typer and rich."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from kvplan.core import packaged
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.model.catalog import find_gpu


@dataclass(frozen=True)
class Label:
    """A GPU label a file gives (a node selector, an accelerator name) and where it says it."""

    key: str  # 'cloud.google.com/gke-accelerator', 'accelerator_type', 'resources.accelerators', 'resourceProfile'
    value: str
    where: str  # where the file says it: 'nodeSelector', 'node affinity', 'llm_configs[0].accelerator_type'
    also: tuple[str, ...] = ()  # other values the file allows (node affinity `In: [a, b]`): the pod lands on any


@dataclass(frozen=True)
class LabelEntry:
    namespace: str
    names: tuple[str, ...]  # catalog names (several when the label does not tell them apart)
    count: int | None  # GPUs per machine, for instance types
    source: str


@lru_cache(maxsize=None)
def _table() -> dict[str, tuple[str, dict[str, LabelEntry]]]:
    """label key -> (namespace, value -> entry)."""
    import yaml

    text = packaged.data_file("gpu_labels.yaml").read_text(encoding="utf-8")
    out: dict[str, tuple[str, dict[str, LabelEntry]]] = {}
    for block in yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        values = {}
        for value, target in block["values"].items():
            count = None
            if isinstance(target, dict):
                count, target = target.get("count"), target["gpu"]
            names = tuple(target) if isinstance(target, list) else (target,)
            values[str(value)] = LabelEntry(block["namespace"], names, count, " ".join(block["source"].split()))
        for key in block["keys"]:
            out[key] = (block["namespace"], values)
    return out


def label_keys() -> tuple[str, ...]:
    return tuple(_table())


def lookup(key: str, value: str) -> LabelEntry | None:
    """The table's entry for a label value; None when the key is not a GPU label at all. A key kvplan knows
    with a value it does not is an UnsupportedError (never a guess)."""
    table = _table().get(key)
    if table is None:
        return None
    namespace, values = table
    value = str(value).strip()
    entry = values.get(value) or next((e for v, e in values.items() if v.lower() == value.lower()), None)
    if entry is None and namespace == "gpu-product":
        entry = _product_by_rule(value, values)
    if entry is None:
        raise UnsupportedError(f"{key}={value} names a GPU kvplan's catalog does not have",
                               hint="pass --gpu NAME (kvplan gpus) or --gpu-mem SIZE for it")
    return entry


def _product_by_rule(value: str, values: dict[str, LabelEntry]) -> LabelEntry | None:
    """GPU feature discovery's product label read back: refuse MIG slices and time-sliced (-SHARED) GPUs, dashes to
    spaces."""
    if "-MIG-" in value:
        raise UnsupportedError(f"nvidia.com/gpu.product={value} is a MIG slice of a GPU", hint="pass --gpu-mem SIZE for the slice")
    if value.endswith("-SHARED"):  # time-slicing: the card's memory is shared with whatever else lands on it
        raise UnsupportedError(f"nvidia.com/gpu.product={value} is a time-sliced GPU, shared with other pods",
                               hint="the memory left to this deployment depends on its neighbours; judge it with "
                                    "--gpu-mem SIZE of what it gets, or on a GPU of its own")
    base = value
    try:
        gpu = find_gpu(base.replace("-", " "))
    except InputError:
        return None
    source = next(iter(values.values())).source if values else "GPU feature discovery"
    return LabelEntry("gpu-product", (gpu.name,), None, source)
