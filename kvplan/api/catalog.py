"""kvplan.models and kvplan.gpus: the bundled model specs and the GPU catalog (`kvplan models` / `kvplan gpus`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan.core.io import JsonResult
from kvplan.core.cache import CacheModel
from kvplan.core.dtypes import dtype as lookup
from kvplan.model import catalog

if TYPE_CHECKING:
    from kvplan.model.catalog import Gpu


@dataclass(frozen=True)
class ModelEntry:
    """One bundled spec as `kvplan models` lists it."""

    name: str
    aliases: tuple[str, ...]
    architecture: str
    layers: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    layout: str  # the layer kinds in words, e.g. '40 full + 8 sliding (4,096)'
    dtype: str
    params: int
    max_context: int | None
    kv_bytes_per_token: int  # in the model's own dtype, all layers


@dataclass(frozen=True)
class ModelList(JsonResult):
    """The bundled specs; iterates over its entries. to_dict() is `kvplan models --json`."""

    models: tuple[ModelEntry, ...]

    def __iter__(self) -> Iterator[ModelEntry]:
        return iter(self.models)

    def __len__(self) -> int:
        return len(self.models)


@dataclass(frozen=True)
class GpuList(JsonResult):
    """The GPU catalog; iterates over its entries. to_dict() is `kvplan gpus --json`."""

    gpus: tuple[Gpu, ...]

    def __iter__(self) -> Iterator[Gpu]:
        return iter(self.gpus)

    def __len__(self) -> int:
        return len(self.gpus)


def models() -> ModelList:
    """Every bundled model spec, with its KV bytes per token in the model's dtype."""
    return ModelList(tuple(
        ModelEntry(name=spec.name, aliases=tuple(spec.aliases), architecture=spec.architecture, layers=spec.layers,
                   attention_heads=spec.attention_heads, kv_heads=spec.kv_heads, head_dim=spec.head_dim,
                   layout=spec.layout_summary(), dtype=spec.dtype, params=spec.params, max_context=spec.max_context,
                   kv_bytes_per_token=CacheModel(spec, lookup(spec.dtype)).kv_bytes_per_token)
        for spec in catalog.bundled_specs()))


def gpus() -> GpuList:
    """The GPU catalog, with the memory the runtime reports (not the marketed figure)."""
    return GpuList(catalog.gpus())
