"""Write kvplan/data/vllm_env_names.json: the environment variable names each modelled vLLM release reads: the keys
of `environment_variables` in its vllm/envs.py, plus every VLLM_* name written as a string anywhere else in its Python
(a few are read with os.environ directly, e.g. VLLM_SNAPSHOT_TIMEOUT_S in 0.31.0 vllm/snapshot/runtime.py; counting
every literal errs toward "read"). vLLM warns about a VLLM_* name envs.py does not define (platforms/interface.py
validate_environ) and nothing reads one in neither set, so kvplan needs the names per release to tell an ignored name
from one that changes the engine.

Wheels (PyPI, `pip download --no-deps vllm==X`), one per release kvplan mirrors (kvplan/engines/vllm/releases.py):
  vllm-0.10.2-cp38-abi3-manylinux1_x86_64.whl        vllm-0.11.0-cp38-abi3-manylinux1_x86_64.whl
  vllm-0.13.0-cp38-abi3-manylinux_2_31_x86_64.whl     vllm-0.14.1-cp38-abi3-manylinux_2_31_x86_64.whl
  vllm-0.19.0-cp38-abi3-manylinux_2_31_x86_64.whl     vllm-0.20.2-cp38-abi3-manylinux_2_35_x86_64.whl
  vllm-0.26.0-cp38-abi3-manylinux_2_28_x86_64.whl     vllm-0.27.1-cp38-abi3-manylinux_2_28_x86_64.whl
  vllm-0.28.0-cp38-abi3-manylinux_2_28_x86_64.whl     vllm-0.29.0-cp38-abi3-manylinux_2_28_x86_64.whl
  vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl     vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl

Usage: python scripts/vllm_env_names.py WHEEL... (only the wheel's vllm/**/*.py files are read)."""

from __future__ import annotations

import ast
import json
import re
import sys
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "kvplan" / "data" / "vllm_env_names.json"


def defined_names(source: str) -> list[str]:
    """The string keys of the module-level `environment_variables` dict literal in an envs.py."""
    for node in ast.parse(source).body:
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id == "environment_variables" and isinstance(node.value, ast.Dict):
            return sorted(key.value for key in node.value.keys if isinstance(key, ast.Constant) and isinstance(key.value, str))
    raise SystemExit("no environment_variables dict in envs.py")


_LITERAL = re.compile(r"""["'](VLLM_[A-Z0-9_]*[A-Z0-9])["']""")


def literal_names(archive: zipfile.ZipFile) -> set[str]:
    """VLLM_* names written as whole string literals in the wheel's Python files."""
    found: set[str] = set()
    for member in archive.namelist():
        if member.startswith("vllm/") and member.endswith(".py"):
            found.update(_LITERAL.findall(archive.read(member).decode("utf-8", "replace")))
    return found


def main(wheels: list[str]) -> None:
    releases = {}
    for wheel in wheels:
        version = Path(wheel).name.split("-")[1]
        with zipfile.ZipFile(wheel) as archive:
            names = set(defined_names(archive.read("vllm/envs.py").decode("utf-8"))) | literal_names(archive)
            releases[version] = sorted(names)
    ordered = dict(sorted(releases.items(), key=lambda item: tuple(int(p) for p in item[0].split("."))))
    OUT.write_text(json.dumps({"source": "vllm/envs.py environment_variables keys and VLLM_* string literals in "
                                         "vllm/**/*.py, from each release's PyPI wheel (scripts/vllm_env_names.py)", "releases": ordered}, indent=0) + "\n",
                   encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
