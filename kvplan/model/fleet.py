"""What renting GPUs adds to the GPU catalog: how they come in nodes and what links them (data/nodes.yaml), and
what an hour of one costs (data/prices.yaml, a user's prices file, --price overrides).

Every price carries where it was read and when; a GPU without one is unpriced, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from kvplan.core import packaged
from pathlib import Path
from typing import Any, Mapping

from kvplan.core.errors import InputError
from kvplan.model.catalog import find_gpu


@dataclass(frozen=True)
class Node:
    gpu: str  # catalog name
    gpus_per_node: int
    link: str  # nvlink4, pcie-gen4, infinity-fabric, ...
    link_bytes_per_s: int | None  # per GPU, one direction; None: not known well enough to time an all-reduce
    source: str


@dataclass(frozen=True)
class Price:
    gpu: str
    usd_per_gpu_hour: float
    offer: str
    source: str
    date: str
    quality: str  # vendor, third-party, user


def _load_data(name: str) -> Any:
    import yaml

    text = packaged.data_file(name).read_text(encoding="utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@lru_cache(maxsize=None)
def nodes() -> dict[str, Node]:
    return {e["gpu"]: Node(e["gpu"], e["gpus_per_node"], e["link"], e["link_bytes_per_s"], e["source"])
            for e in _load_data("nodes.yaml")}


def node(gpu: str) -> Node | None:
    return nodes().get(gpu)


@lru_cache(maxsize=None)
def default_prices() -> dict[str, Price]:
    return {e["gpu"]: Price(e["gpu"], float(e["usd_per_gpu_hour"]), e["offer"], e["source"], str(e["date"]), e["quality"])
            for e in _load_data("prices.yaml")}


def _dollars(value: Any, *, where: str) -> float:
    if isinstance(value, bool):
        raise InputError(f"must be a price in dollars per GPU hour, got {value!r}", where=where, hint="e.g. 2.49")
    try:
        number = float(str(value).strip().lstrip("$"))
    except ValueError:
        raise InputError(f"must be a price in dollars per GPU hour, got {value!r}", where=where, hint="e.g. 2.49") from None
    if not (0 < number < 10_000) or number != number:
        raise InputError(f"must be above 0 and below 10,000 dollars per GPU hour, got {value!r}", where=where)
    return number


def _gpu_name(name: Any, *, where: str) -> str:
    if not isinstance(name, str):
        raise InputError(f"a GPU name, got {name!r}", where=where, hint="a name from `kvplan gpus`")
    try:
        return find_gpu(name).name
    except InputError as err:
        raise InputError(err.what, where=where, hint=err.hint) from None


def read_prices_file(path: str, *, load_yaml) -> dict[str, Price]:
    """A user's contract prices: a mapping `gpu: dollars` or a list of entries like data/prices.yaml's (gpu,
    usd_per_gpu_hour, and optionally offer, source, date). `load_yaml(Path)` reads the file (the caller's)."""
    data = load_yaml(Path(path))
    out: dict[str, Price] = {}
    if isinstance(data, Mapping):
        items = [(k, {"usd_per_gpu_hour": v}, f"{path}: {k}") for k, v in data.items()]
    elif isinstance(data, list):
        items = []
        for i, e in enumerate(data, 1):
            if not isinstance(e, Mapping) or "gpu" not in e or "usd_per_gpu_hour" not in e:
                raise InputError("each entry needs gpu and usd_per_gpu_hour", where=f"{path}: entry {i}",
                                 hint="e.g. - {gpu: h100-sxm-80gb, usd_per_gpu_hour: 2.49}")
            items.append((e["gpu"], e, f"{path}: entry {i}"))
    else:
        raise InputError("must map GPU names to dollars per GPU hour", where=path, hint="e.g. h100-sxm-80gb: 2.49")
    for name, entry, where in items:
        gpu = _gpu_name(name, where=where)
        out[gpu] = Price(gpu, _dollars(entry["usd_per_gpu_hour"], where=where), str(entry.get("offer", "your prices file")),
                         str(entry.get("source", path)), str(entry.get("date", "")), "user")
    return out


def parse_price_overrides(values: list[str]) -> dict[str, Price]:
    """--price NAME=DOLLARS, repeatable."""
    out: dict[str, Price] = {}
    for value in values:
        name, sep, amount = value.partition("=")
        if not sep or not name.strip():
            raise InputError(f"cannot read {value!r}", where="--price", hint="NAME=DOLLARS_PER_GPU_HOUR, e.g. h100-sxm-80gb=2.49")
        gpu = _gpu_name(name.strip(), where="--price")
        out[gpu] = Price(gpu, _dollars(amount, where="--price"), "--price", "--price", "", "user")
    return out


def price_table(prices_file: str | None, overrides: list[str], *, load_yaml) -> dict[str, Price]:
    """The defaults, then the user's file, then --price: later ones win."""
    table = dict(default_prices())
    if prices_file:
        table.update(read_prices_file(prices_file, load_yaml=load_yaml))
    table.update(parse_price_overrides(overrides))
    return table
