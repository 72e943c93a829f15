"""Deployments written as programs or infrastructure code, named on the command line: a Python file that builds its
server in code (a BentoML service, a Modal app, a Ray Serve application), a pyproject.toml's BentoML build settings,
Terraform's helm_release. kvplan reads deployment files, not programs: each that it recognises is cannot judge,
naming the framework and what it found (the engine, the models, the chart and where its values come from), so a
gate never passes it; one it does not recognise is "not a deployment format" (run.py)."""

from __future__ import annotations

import re
from pathlib import Path

from kvplan.check.items import Failure
from kvplan.check.readers import names
from kvplan.check.report import FORMAT_PROGRAM
from kvplan.core.errors import UnsupportedError

SUFFIXES = names.PROGRAM_SUFFIXES
_FRAMEWORKS = ((re.compile(r"^\s*(?:import|from)\s+bentoml\b", re.M), "a BentoML service"),
               (re.compile(r"^\s*(?:import|from)\s+modal\b", re.M), "a Modal app"),
               (re.compile(r"^\s*(?:from\s+ray\s+import\s+serve|import\s+ray\.serve|from\s+ray\.serve)", re.M),
                "a Ray Serve application"))
_ENGINES = ((re.compile(r"\bvllm\b"), "vLLM"), (re.compile(r"\bsglang\b"), "SGLang"),
            (re.compile(r"tensorrt_llm|trtllm"), "TensorRT-LLM"))
# a Hugging Face id in quotes: org/name, not a path or a URL
_MODEL = re.compile(r"""["']([A-Za-z0-9][\w.-]{1,95}/[A-Za-z0-9][\w.-]{1,95})["']""")


_NOT_MODELS = ("application/", "text/", "image/", "audio/", "video/", "multipart/", "http", "www.")


def _models(text: str) -> list[str]:
    found = [m for m in _MODEL.findall(text) if not m.lower().startswith(_NOT_MODELS) and "." not in m.split("/")[0]
             and not m.lower().endswith((".jinja", ".json", ".py", ".yaml", ".yml", ".txt", ".sh", ".md"))]
    return list(dict.fromkeys(found))[:3]


def framework(text: str) -> str | None:
    """The serving framework a Python program is an application of (BentoML, Modal, Ray Serve), or None."""
    return next((name for pattern, name in _FRAMEWORKS if pattern.search(text)), None)


def read(text: str, path: Path, *, source: str, where: str) -> list | None:
    """The verdict items of a program file kvplan recognises, or None (not a format it reads)."""
    suffix = path.suffix.lower()
    what = None
    if suffix == ".py":
        app = framework(text)
        engines = [name for pattern, name in _ENGINES if pattern.search(text)]
        if app is None and not engines:
            return None
        what = (f"{app or 'a Python program'} that starts {', '.join(engines) or 'its server'} from its own code"
                + (f" (models named: {', '.join(_models(text))})" if _models(text) else ""))
    elif suffix == ".toml" and re.search(r"^\[tool\.bentoml[.\]]", text, re.M):
        what = ("BentoML build settings ([tool.bentoml]) for the service beside it, which builds its launch in Python"
                + (f" (models named: {', '.join(_models(text))})" if _models(text) else ""))
    elif suffix == ".tf":
        releases = re.findall(r'resource\s+"helm_release"\s+"([\w-]+)"', text)
        if not releases:
            return None
        charts = list(dict.fromkeys(re.findall(r'^\s*chart\s*=\s*"([^"]+)"', text, re.M)))
        values = list(dict.fromkeys(re.findall(r'file\(\s*"?(?:\$\{path\.module\}/)?([^")]+\.ya?ml)', text)))
        what = (f"Terraform helm_release {', '.join(releases)}" + (f" of chart {', '.join(charts)}" if charts else "")
                + (f", its values from {', '.join(values)}: check that file" if values else ""))
    if what is None:
        return None
    return [Failure(source, None, path.stem, FORMAT_PROGRAM, UnsupportedError(
        f"{what}; kvplan reads deployment files, not programs", where=where,
        hint="judge the engine command line it runs with --vllm-args, or the file it renders"))]
