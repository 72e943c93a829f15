"""Truss (Baseten) config.yaml: a `docker_server.start_command` is the server's command line, run by the container
of `base_image.image` (its tag pins the release); `resources.accelerator` (`H100:8`, `B200`) is the GPU kind and
count (kvplan/data/gpu_labels.yaml, namespace truss); `environment_variables` is the environment (a value given as
null is a secret set at deploy time). `trt_llm` is Baseten's TensorRT-LLM engine builder (its runtime settings are
Baseten's own): cannot judge, said so. Keys of Truss's schema are read by claims(): a `docker_server` or a
`trt_llm` beside Truss's own keys (model_name, resources, base_image, ...)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from kvplan.check import launch
from kvplan.check.gpus import GpuEvidence, Label
from kvplan.check.items import Workload
from kvplan.check.report import FORMAT_TRUSS
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.check.readers import claims as formats

# the format test, apart from the reader (readers/claims.py), still answers here
_TRUSS_KEYS = formats.TRUSS_KEYS
claims = formats.truss

def _gpus(resources: Any, where: str) -> GpuEvidence:
    if not isinstance(resources, Mapping) or not resources.get("accelerator"):
        return GpuEvidence()
    name, _, count = str(resources["accelerator"]).strip().partition(":")
    try:
        n = int(count) if count else 1
    except ValueError:
        raise InputError(f"accelerator count {count!r} is not a whole number", where=f"{where}: resources.accelerator") from None
    return GpuEvidence(count=n, count_where=f"resources.accelerator {resources['accelerator']}: {n}",
                       labels=(Label("resources.accelerator", name, "resources.accelerator"),), vendor="nvidia",
                       vendor_where="resources.accelerator")


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    name = str(doc.get("model_name") or Path(source).parent.name or Path(source).stem)
    gpus = _gpus(doc.get("resources"), where)
    image = (doc.get("base_image") or {}).get("image") if isinstance(doc.get("base_image"), Mapping) else None
    env_block = doc.get("environment_variables") if isinstance(doc.get("environment_variables"), Mapping) else {}
    env = {str(k): None if v is None else str(v) for k, v in env_block.items()}
    build = "\n".join(str(c) for c in doc.get("build_commands") or [])
    pins = tuple(p for p in [launch.pip_release(build)] if p)
    server = doc.get("docker_server")
    if not isinstance(server, Mapping):
        blocker = UnsupportedError("trt_llm: Baseten's TensorRT-LLM engine builder, whose runtime settings are its own",
                                   where=f"{where}: trt_llm", hint="kvplan reads a docker_server start_command")
        return [Workload(source=source, document=document, name=name, fmt=FORMAT_TRUSS, where=where, base_dir=base_dir,
                         image=str(image) if image else None, gpus=gpus, requests_gpus=True, blocker=blocker)]
    command = server.get("start_command")
    if not isinstance(command, str) or not command.strip():
        raise InputError("docker_server needs a start_command", where=f"{where}: docker_server.start_command")
    return [Workload(source=source, document=document, name=name, fmt=FORMAT_TRUSS,
                     where=f"{where}: docker_server.start_command", base_dir=base_dir, script=command,
                     image=str(image) if image else None, env=env, gpus=gpus, pins=pins, requests_gpus=True)]
