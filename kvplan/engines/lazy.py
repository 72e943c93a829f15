"""The lazy attribute lookup every engine package uses (PEP 562 module __getattr__): its record and main names load
from their modules on first use, so reading one of an engine's tables does not build its whole memory model
(benchmarks/cold_start.py), and its submodules load the same way when asked for as attributes."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def module_getattr(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level __getattr__ for `package`: `names` maps an attribute to the module defining it; any other public
    name is tried as a submodule of the package."""

    def __getattr__(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(names[name]), name)
        if not name.startswith("_"):
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as err:
                if err.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
