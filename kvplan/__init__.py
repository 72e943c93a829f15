"""kvplan: KV-cache memory capacity planner for LLM serving, as a library (docs/api.md).

    >>> import kvplan
    >>> kvplan.estimate("llama-3.1-8b", seq="32K", gpu="h100", engine="vllm").max_concurrency  # doctest: +SKIP

Every name below is imported on first use (module-level __getattr__, PEP 562): `import kvplan` loads nothing but
this file, so a program that sizes one deployment pays for that alone, and never for typer, rich or torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

# name -> the module that defines it
_LAZY = {
    "estimate": "kvplan.api.estimate",
    "check": "kvplan.check",  # the package itself, which is callable (kvplan/check/__init__.py)
    "plan": "kvplan.api.plan",
    "explain": "kvplan.api.explain",
    "calibrate": "kvplan.api.calibrate",
    "models": "kvplan.api.catalog",
    "gpus": "kvplan.api.catalog",
    "KvplanError": "kvplan.core.errors",
    "InputError": "kvplan.core.errors",
    "UnsupportedError": "kvplan.core.errors",
    "DoesNotFitError": "kvplan.core.errors",
}

__all__ = ["__version__", *_LAZY]

if TYPE_CHECKING:  # what type checkers and editors see; at run time __getattr__ imports on demand
    from kvplan.api.calibrate import calibrate
    from kvplan.api.catalog import gpus, models
    from kvplan.api.estimate import estimate
    from kvplan.api.explain import explain
    from kvplan.api.plan import plan
    from kvplan.check.entry import check
    from kvplan.core.errors import DoesNotFitError, InputError, KvplanError, UnsupportedError


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kvplan' has no attribute {name!r}")
    import importlib

    value = importlib.import_module(module)
    if name != "check":  # importing kvplan.check binds the name to the package, which answers the call
        value = getattr(value, name)
    globals()[name] = value  # found once: later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
