"""SkyPilot task and service YAML: the `run:` script starts the engine; `resources.accelerators` names the GPUs per
node (`H100:8`, or a set of choices `{L4:8, A100-80GB:2}`; `any_of` / `ordered` lists of resources do too), and
SkyPilot may launch the task on any choice, so each is judged as its own deployment. `num_nodes` nodes run the
script; its environment is `envs` plus the variables SkyPilot sets (SKYPILOT_NUM_GPUS_PER_NODE, SKYPILOT_NUM_NODES,
SKYPILOT_NODE_RANK = 0 on the head node, which starts the server; SKYPILOT_NODE_IPS is known at run time only).
The engine release: `image_id: docker:IMAGE` or a `pip install engine==X` in `setup`."""

from __future__ import annotations

import math

from pathlib import Path
from typing import Any, Mapping

from kvplan.check import launch
from kvplan.check.gpus import GpuEvidence, Label
from kvplan.check.items import Skip, Workload
from kvplan.check.report import FORMAT_SKYPILOT
from kvplan.core.errors import InputError
from kvplan.check.readers import claims as formats

# the format test, apart from the reader (readers/claims.py), still answers here
_KEYS = formats.SKYPILOT_KEYS
claims = formats.skypilot

def _choices(resources: Mapping, where: str) -> list[tuple[str, int, str]]:
    """(accelerator, count per node, where) for each choice the resources allow."""
    out: list[tuple[str, int, str]] = []

    def add(value: Any, at: str) -> None:
        if value is None:
            return
        if isinstance(value, str):
            name, _, count = value.partition(":")
            out.append((name.strip(), _count(count or "1", at), at))
        elif isinstance(value, Mapping):
            for name, count in value.items():
                if count is None and ":" in str(name):
                    add(str(name), at)  # `{H100:8, H200:8}`: YAML reads `H100:8` as a key with no value
                    continue
                out.append((str(name).strip(), _count(count if count is not None else 1, at), at))
        elif isinstance(value, list):
            for item in value:
                add(item, at)
        else:
            raise InputError(f"accelerators must be NAME:COUNT, a mapping or a list, got {value!r}", where=at)

    add(resources.get("accelerators"), f"{where}.accelerators")
    for key in ("any_of", "ordered"):
        for i, alt in enumerate(resources.get(key) or []):
            if isinstance(alt, Mapping):
                add(alt.get("accelerators"), f"{where}.{key}[{i}].accelerators")
    seen, unique = set(), []
    for choice in out:
        if choice[:2] not in seen:
            seen.add(choice[:2])
            unique.append(choice)
    return unique


def _count(value: Any, at: str) -> int:
    try:
        count = float(value)
    except (TypeError, ValueError):
        raise InputError(f"accelerator count {value!r} is not a number", where=at) from None
    if not math.isfinite(count) or count < 1 or count != int(count):  # inf: int() raised OverflowError (issue 26)
        raise InputError(f"accelerator count {value!r}: kvplan judges whole GPUs", where=at)
    return int(count)


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    resources = doc.get("resources") if isinstance(doc.get("resources"), Mapping) else {}
    run = doc.get("run")
    name = str(doc.get("name") or Path(source).name.split(".")[0])
    if not isinstance(run, str) or not run.strip():
        return [Skip(source, document, name, FORMAT_SKYPILOT, "no run: script, nothing starts an engine")]
    nodes = doc.get("num_nodes", 1)
    nodes = nodes if isinstance(nodes, int) and nodes > 0 else 1
    envs = {str(k): (None if v is None else str(v)) for k, v in (doc.get("envs") or {}).items()} \
        if isinstance(doc.get("envs"), Mapping) else {}
    image = str(resources.get("image_id") or "")
    image = image[len("docker:"):] if image.startswith("docker:") else None
    pins = tuple(p for p in [launch.pip_release(doc.get("setup") if isinstance(doc.get("setup"), str) else None)] if p)
    choices = _choices(resources, f"{where}: resources")
    items: list = []
    for accelerator, per_node, at in choices or [(None, None, None)]:
        env = {**envs, "SKYPILOT_NUM_NODES": str(nodes), "SKYPILOT_NODE_RANK": "0", "SKYPILOT_NODE_IPS": None,
               "SKYPILOT_NUM_GPUS_PER_NODE": str(per_node) if per_node else None}
        labels = (Label("resources.accelerators", accelerator, at.split(": ", 1)[-1]),) if accelerator else ()
        count = per_node * nodes if per_node else None
        gpus = GpuEvidence(count=count, count_where=(f"resources.accelerators {accelerator}:{per_node}"
                                                     + (f" x num_nodes {nodes}" if nodes > 1 else "")) if per_node else None,
                           labels=labels)
        label = f"{name} [{accelerator}:{per_node}]" if accelerator and len(choices) > 1 else name
        items.append(Workload(source=source, document=document, name=label, fmt=FORMAT_SKYPILOT, where=f"{where}: run",
                              base_dir=base_dir, script=run, image=image, env=env, gpus=gpus, pins=pins,
                              requests_gpus=bool(per_node)))
    return items
