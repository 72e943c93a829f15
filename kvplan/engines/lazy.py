"""The lazy attribute lookup every engine package uses (PEP 562 module __getattr__): its record and main names load
from their modules on first use, so reading one of an engine's tables does not build its whole memory model
(benchmarks/cold_start.py), and its submodules load the same way when asked for as attributes. `Part` is one part of an engine's record: names
of one of its modules, loaded when first asked. `module` is a module an engine's own steps name that only some
requests need (the launch options' terms), loaded on the first name asked of it."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Iterable, Mapping


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


class Part:
    """One part of an engine's record (kvplan/engines/api.py Engine): the names a caller may ask of it, taken from
    the engine module that defines them on first use. A caller asks the record (`engines.get("vllm").options
    .parse_argv(...)`), never imports the module, and sees only the names the engine lists for the part; the module
    loads when a name is first asked, so a record's part costs nothing at start-up (benchmarks/cold_start.py)."""

    def __init__(self, module: str, names: Iterable[str] | Mapping[str, str]):
        self._module = module
        # the part's name -> the module's (the same unless the engine renames one for the part)
        self._names = dict(names) if isinstance(names, Mapping) else {n: n for n in names}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_module", "_names"):
            raise AttributeError(name)
        if name not in self._names:
            raise AttributeError(f"the part from {self._module} has no {name!r} (it gives {', '.join(self._names)})")
        return getattr(importlib.import_module(self._module), self._names[name])

    def __dir__(self) -> list[str]:
        return sorted(self._names)

    def __repr__(self) -> str:
        return f"Part({self._module!r}, {sorted(self._names)})"


def deferred(module: str, name: str) -> Callable[..., Any]:
    """A function of an engine module, imported when first called: a record names its estimate or a reader without
    building the engine's memory model, so a caller that asks the record for a table pays nothing for the rest."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{module}.{name}, imported on the first call."
    return call


class _Module:
    """A module imported when a name is first asked of it (lazy.module)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr == "_name":
            raise AttributeError(attr)
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"module({self._name!r})"


def module(name: str) -> Any:
    """The module `name`, imported on the first name asked of it: an engine's estimate refers to a module that only
    some requests need (the terms of the launch's options) under its usual alias, and a request without them never
    loads it (benchmarks/cold_start.py). Type checkers see the module itself: write
    `if TYPE_CHECKING: from ... import features as alias` / `else: alias = lazy.module("...features")`."""
    return _Module(name)
