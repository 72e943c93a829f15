"""Every rich table kvplan prints lives here, one module per result it shows; the layers below return data.

`tables(result)` gives an estimate's view by its engine: views/<engine>.py's `tables`.
"""

from __future__ import annotations

import importlib


def tables(result) -> list:
    """The renderables of an engine's estimate (views/static.py, vllm.py, sglang.py, trtllm.py)."""
    return importlib.import_module(f"kvplan.cli.views.{result.engine}").tables(result)
