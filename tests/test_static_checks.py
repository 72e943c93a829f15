"""The static checks configured in pyproject.toml ([tool.ruff], [tool.mypy]) hold on kvplan/: a linter (ruff:
unused and undefined names, pycodestyle) and a type checker (mypy). Both run as this interpreter's modules, so the
suite enforces them wherever it runs (CI included). mypy keeps its cache in pytest's cache folder: a warm run takes
seconds, a cold one (a clean clone) about 25 s of CPU.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean_on_the_package_and_its_scripts():
    # the benchmarks and scripts too: an undefined name in a script (vllm_option_table.py's AST path) fails only
    # when that path runs, which no test does
    done = _run("ruff", "check", "--no-cache", "kvplan", "benchmarks", "scripts")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_is_clean_on_the_package(request, tmp_path_factory):
    # pytest's cache folder keeps mypy's cache between runs; with the cache plugin off (-p no:cacheprovider) a
    # temporary folder stands in (a cold run)
    cache = (request.config.cache.mkdir("mypy") if getattr(request.config, "cache", None) is not None
             else tmp_path_factory.mktemp("mypy"))
    done = _run("mypy", "--cache-dir", str(cache), "--no-error-summary")
    assert done.returncode == 0, done.stdout + done.stderr
