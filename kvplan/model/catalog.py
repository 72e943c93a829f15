"""Finding things by name: bundled model specs (model_specs/), model files, and the GPU catalog.

A MODEL may be a bundled spec name or alias (e.g. its Hugging Face id), a spec YAML path, a
config.json path, a folder holding a config.json, or a Hugging Face id (docs/models.md);
kvplan/model/resolve.py is the one place that finds it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from kvplan.core import packaged

from kvplan.core.errors import InputError, UnsupportedError, did_you_mean
from kvplan.core.spec import ModelSpec
# bundled model specs live in kvplan/model/bundled.py; re-exported for the commands that list them
from kvplan.model.bundled import bundled_spec, bundled_spec_files, bundled_specs, find_bundled
from kvplan.model.bundled import norm as _norm
from kvplan.model import resolve

__all__ = ["Gpu", "bundled_spec", "bundled_spec_files", "bundled_specs", "find_bundled", "find_gpu", "gpus", "resolve_model"]


def resolve_model(ref: str) -> ModelSpec:
    """A ModelSpec from any of the ways a user may name a model (docs/models.md): kvplan/model/resolve.py finds it (bundled,
    a file, --models-dir, the Hugging Face cache, the Hub), in one order for every command."""
    return resolve.resolve(ref).spec


# ------------------------------------------------------------------ GPU catalog

@dataclass(frozen=True)
class Gpu:
    """A GPU of the catalog (kvplan/data/gpus.yaml): its names, vendor, memory and what it runs."""

    name: str
    aliases: tuple[str, ...]
    vendor: str
    capacity_bytes: int | None  # None: no public exact reading (GB200, GB300), refused by name (runtime_capacity)
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

    def runtime_capacity(self, where: str = "--gpu") -> int:
        """The device total the engines size from; "cannot judge" (exit 3) for a GPU the catalog names but holds no
        public exact reading of (a total derived from nvidia-smi or a datasheet would be a guess: docs/gpus.md)."""
        if self.capacity_bytes is None:
            raise UnsupportedError(f"{self.name}: no public reading of the memory CUDA reports for it, and kvplan does "
                                   "not derive one from a datasheet or nvidia-smi", where=where,
                                   hint="give --gpu-mem SIZE: the total torch.cuda.mem_get_info() prints on it")
        return self.capacity_bytes


# nvlink: an NVLink / NVSwitch mesh; pcie: PCIe only, or NVLink bridges between pairs (vLLM's custom all-reduce
# counts that as PCIe beyond two GPUs); infinity-fabric: AMD's links; unified: one device sharing its memory
# with the CPU (DGX Spark).
INTERCONNECTS = ("nvlink", "pcie", "infinity-fabric", "unified")


_GPU_KEYS = {f for f in Gpu.__dataclass_fields__}


def _load_yaml(text: str):
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@lru_cache(maxsize=None)
def _catalog_text() -> str:
    return packaged.data_file("gpus.yaml").read_text(encoding="utf-8")


def _gpu(entry) -> Gpu:
    data = {k: entry.get(k) for k in _GPU_KEYS}
    data["aliases"] = tuple(entry.get("aliases") or ())
    data["unified_memory"] = bool(data["unified_memory"])
    return Gpu(**data)


@lru_cache(maxsize=None)
def gpus() -> tuple[Gpu, ...]:
    return tuple(_gpu(entry) for entry in _load_yaml(_catalog_text()))


@lru_cache(maxsize=None)
def _entries() -> tuple[list[str], list] | None:
    """gpus.yaml's entries as text (one per top-level `- ` item) and the name and aliases of each, read from those
    two lines alone: a lookup by exact name parses the entry it finds, not all 33 (about 2 ms at start-up, the whole
    catalog's YAML). None when an entry's name or aliases are not written on one line each, as the whole parse
    would read them: find_gpu then reads the whole catalog."""
    blocks: list[list[str]] = []
    for line in _catalog_text().splitlines():
        if line.startswith("- "):
            blocks.append([])
        elif blocks and line[:1] not in ("", " ", "#"):  # not one sequence of entries: read it whole
            return None
        if blocks:
            blocks[-1].append(line)
    heads = []
    for block in blocks:
        named = [line for line in block if line.startswith("- name:")] + [line for line in block if line.startswith("  aliases:")]
        if not named or not named[0].startswith("- name:") or len(named) > 2:
            return None
        heads.append("\n".join(named))
    keys = _load_yaml("\n".join(heads)) or []
    if len(keys) != len(blocks) or any(not isinstance(k, dict) or not isinstance(k.get("name"), str)
                                       or not isinstance(k.get("aliases", []), list) for k in keys):
        return None
    return ["\n".join(block) for block in blocks], keys


def _named(wanted: str) -> Gpu | None:
    """The first catalog GPU whose name or an alias is `wanted` (normalised), as gpus() would find it; None when
    none is or the catalog's lines are not as _entries reads them."""
    entries = _entries()
    if entries is None:
        return None
    blocks, keys = entries
    for i, key in enumerate(keys):
        if wanted == _norm(key["name"]) or any(wanted == _norm(a) for a in key.get("aliases") or ()):
            if gpus.cache_info().currsize:  # the whole catalog is read already: its object
                return gpus()[i]
            return _entry_gpu(i)
    return None


@lru_cache(maxsize=None)
def _entry_gpu(i: int) -> Gpu:
    """The GPU of gpus.yaml's i-th entry, its block parsed once: check asks one GPU by several names (the --gpu
    flag, then the catalog name it resolved to), and each new name re-parsed the same entry."""
    entries = _entries()
    assert entries is not None  # _named asks only when the catalog's lines read
    return _gpu(_load_yaml(entries[0][i])[0])


# A GPU seen through Windows' WSL2 driver is named NAME@wsl. Inside WSL2, CUDA reports the card's whole memory as
# nvidia-smi shows it (memory.total, MiB), not the smaller total a native Linux driver reports: TensorRT-LLM #4275
# (RTX 5090 under WSL2, "total: 31.84 GiB" = nvidia-smi's 32607 MiB; native Linux: 31.35 GiB) and the RTX 3090
# under WSL in tests/data/vllm_logs_public (vLLM's weights and pool alone exceed 0.85 x the native 23.58 GiB).
WSL_SUFFIXES = ("@wsl2", "@wsl")


@lru_cache(maxsize=1024)
def find_gpu(ref: str) -> Gpu:
    """Lenient lookup: 'h100', 'H100-SXM5-80GB', 'NVIDIA H100 80GB HBM3' all find the H100 SXM; 'rtx-3090@wsl'
    finds the RTX 3090 as WSL2 reports it (wsl_variant)."""
    lowered = ref.strip().lower()
    for suffix in WSL_SUFFIXES:
        if lowered.endswith(suffix):
            return wsl_variant(find_gpu(ref.strip()[:-len(suffix)]), ref)
    wanted = _norm(ref)
    if not wanted:
        raise InputError("empty GPU name", where="--gpu", hint="see `kvplan gpus`")
    named = _named(wanted)
    if named is not None:
        return named
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


def wsl_variant(gpu: Gpu, ref: str) -> Gpu:
    """`gpu` as CUDA reports it inside WSL2: its capacity is nvidia-smi's memory.total (WSL_SUFFIXES says why)."""
    if gpu.name.endswith("@wsl"):
        raise InputError(f"{ref!r}: '@wsl' is given twice", where="--gpu", hint=f"--gpu {gpu.name}")
    if gpu.vendor != "nvidia" or gpu.unified_memory:
        raise InputError(f"{ref!r}: WSL2 runs CUDA on discrete NVIDIA GPUs; {gpu.name} is not one", where="--gpu",
                         hint="name it without '@wsl'")
    if gpu.nvidia_smi_total_mib is None:
        raise InputError(f"{ref!r}: the catalog has no nvidia-smi total for {gpu.name}, which is what WSL2 reports",
                         where="--gpu", hint="give --gpu-mem SIZE: the total torch.cuda.mem_get_info() prints inside WSL")
    smi = gpu.nvidia_smi_total_mib
    return replace(gpu, name=f"{gpu.name}@wsl", aliases=(), capacity_bytes=smi * 2**20,
                   capacity_source=f"WSL2: CUDA reports nvidia-smi's memory.total ({smi} MiB) as the total, not the "
                                   f"{gpu.capacity_bytes:,} B of a native Linux driver")
