"""The files kvplan ships (kvplan/data, the bundled model specs), found by their package's folder.

importlib.resources would do the same for an installed tree, but importing it pulls in zipfile, tempfile and
random: about 12 ms of every start-up for a package that pip always installs as plain files (a zipped kvplan
is not supported). An editable install maps kvplan.model_specs to the repository's model_specs/
(pyproject.toml package-dir), so the folder is asked of the package, not derived from this file's path.
"""

from __future__ import annotations

import importlib
from pathlib import Path


def folder(package: str) -> Path:
    """The folder of a package that ships data files: 'kvplan.data', 'kvplan.model_specs'."""
    return Path(next(iter(importlib.import_module(package).__path__)))


def data_file(*parts: str) -> Path:
    """A file under kvplan/data, e.g. data_file('gpus.yaml'), data_file('vllm_options', '0.19.json')."""
    return folder("kvplan.data").joinpath(*parts)
