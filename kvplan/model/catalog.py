"""Finding things by name: bundled model specs (model_specs/), model files, and the GPU catalog.

A MODEL may be a bundled spec name or alias (e.g. its Hugging Face id), a spec YAML path, a
config.json path, or a folder holding a config.json (DESIGN.md "Naming a model"). Nothing is
downloaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from kvplan.core.errors import InputError, did_you_mean
from kvplan.core.spec import ModelSpec, spec_from_mapping


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9.]", "", name.lower())


# ------------------------------------------------------------------ bundled model specs

def _specs_dir():
    return resources.files("kvplan.model_specs")


def _load_bundled_file(entry) -> dict:
    import yaml

    # bundled files are ours and alias-free; the C loader keeps start-up fast
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(entry.read_text(encoding="utf-8"), Loader=loader)


@lru_cache(maxsize=None)
def bundled_spec_files() -> dict[str, object]:
    return {Path(e.name).stem: e for e in _specs_dir().iterdir() if e.name.endswith(".yaml")}


@lru_cache(maxsize=None)
def bundled_spec(name: str) -> ModelSpec:
    entry = bundled_spec_files()[name]
    return spec_from_mapping(_load_bundled_file(entry), source=f"model_specs/{entry.name}")


def bundled_specs() -> list[ModelSpec]:
    return [bundled_spec(n) for n in sorted(bundled_spec_files())]


def _find_bundled(ref: str) -> ModelSpec | None:
    files = bundled_spec_files()
    if ref in files:
        return bundled_spec(ref)
    wanted = _norm(ref)
    for name in files:  # names first (cheap), then every alias
        if _norm(name) == wanted:
            return bundled_spec(name)
    for spec in bundled_specs():
        if any(_norm(a) == wanted for a in spec.aliases):
            return spec
    return None


def resolve_model(ref: str) -> ModelSpec:
    """A ModelSpec from any of the ways DESIGN.md lets a user name a model."""
    if not ref or not ref.strip():
        raise InputError("no model given", hint="name a bundled model (kvplan models), a spec YAML or a config.json")
    path = Path(ref).expanduser()
    try:
        exists = path.exists()
    except OSError:  # a name too long for the file system (or otherwise unusable as a path) is no file
        exists = False
    looks_like_path = exists or ref.endswith((".yaml", ".yml", ".json")) or "/" in ref and (ref.startswith((".", "/", "~")))
    if exists:
        from kvplan.model import hf_config  # only for files: a bundled name needs neither (start-up time)
        from kvplan.core import yamlio  # only for files: a bundled name needs neither (start-up time)

        config = hf_config.find_config_json(path)
        if path.is_dir() and config is None:
            raise InputError("folder holds no config.json", where=str(path), hint="point at a model folder or a config.json")
        if config is not None:
            return hf_config.spec_from_config_file(config, yamlio.load_json(config))
        return spec_from_mapping(yamlio.load_yaml(path), source=str(path))
    if looks_like_path:
        raise InputError("no such file", where=str(path), hint="check the path")
    spec = _find_bundled(ref)
    if spec is not None:
        return spec
    names = list(bundled_spec_files()) + [a for s in bundled_specs() for a in s.aliases]
    raise InputError(f"unknown model {ref!r}", where="MODEL",
                     hint=(did_you_mean(ref, names) or "see `kvplan models`") + "; or pass a spec YAML, a config.json or a model folder")


# ------------------------------------------------------------------ GPU catalog

@dataclass(frozen=True)
class Gpu:
    name: str
    aliases: tuple[str, ...]
    vendor: str
    capacity_bytes: int
    capacity_source: str
    marketing_memory: str
    hbm_bandwidth_bytes_per_s: int | None
    bf16_dense_flops: int | None
    fp8_dense_flops: int | None
    source: str
    architecture: str  # vendor generation: volta, turing, ampere, ada, hopper, blackwell, cdna2, cdna3, cdna4
    nvidia_smi_total_mib: int | None  # nvidia-smi's memory.total (SGLang's defaults read it); None if unknown
    compute_capability: str  # CUDA SM version ("9.0") or AMD gfx target ("gfx942")
    interconnect: str  # one of INTERCONNECTS: how the GPUs of one node are joined
    interconnect_source: str
    unified_memory: bool  # CPU and GPU share the memory: what is free at start is not the capacity

    @property
    def rocm(self) -> bool:
        return self.vendor == "amd"


# nvlink: an NVLink / NVSwitch mesh; pcie: PCIe only, or NVLink bridges between pairs (vLLM's custom all-reduce
# counts that as PCIe beyond two GPUs); infinity-fabric: AMD's links; unified: one device sharing its memory
# with the CPU (DGX Spark).
INTERCONNECTS = ("nvlink", "pcie", "infinity-fabric", "unified")


_GPU_KEYS = {f for f in Gpu.__dataclass_fields__}


@lru_cache(maxsize=None)
def gpus() -> tuple[Gpu, ...]:
    import yaml

    text = resources.files("kvplan.data").joinpath("gpus.yaml").read_text(encoding="utf-8")
    entries = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    out = []
    for entry in entries:
        data = {k: entry.get(k) for k in _GPU_KEYS}
        data["aliases"] = tuple(entry.get("aliases") or ())
        data["unified_memory"] = bool(data["unified_memory"])
        out.append(Gpu(**data))
    return tuple(out)


@lru_cache(maxsize=1024)
def find_gpu(ref: str) -> Gpu:
    """Lenient lookup: 'h100', 'H100-SXM5-80GB', 'NVIDIA H100 80GB HBM3' all find the H100 SXM."""
    wanted = _norm(ref)
    if not wanted:
        raise InputError("empty GPU name", where="--gpu", hint="see `kvplan gpus`")
    catalog = gpus()
    for gpu in catalog:
        if wanted == _norm(gpu.name) or any(wanted == _norm(a) for a in gpu.aliases):
            return gpu
    starts = [g for g in catalog if _norm(g.name).startswith(wanted)]
    if len(starts) == 1:
        return starts[0]
    names = [g.name for g in catalog] + [a for g in catalog for a in g.aliases]
    hint = did_you_mean(ref, names)
    if len(starts) > 1:
        hint = "ambiguous: " + ", ".join(g.name for g in starts)
    raise InputError(f"unknown GPU {ref!r}", where="--gpu", hint=(hint or "see `kvplan gpus`") + "; or give --gpu-mem SIZE")
