"""Which reader a file goes to by its name alone: the suffixes and names `kvplan check` asks before it reads a file.

Kept apart from the readers so that choosing one loads none: a check of a YAML file does not import the readers of
Markdown, Nomad or Python programs (kvplan/check/run.py loads each on first use; benchmarks/cold_start.py)."""

from __future__ import annotations

import re
from pathlib import Path

MARKDOWN_SUFFIXES = (".md", ".markdown")  # readme.py: the code blocks of a README
NOMAD_SUFFIXES = (".nomad", ".hcl")  # nomad.py: a Nomad job (HCL); another HCL file is no format kvplan reads
PROGRAM_SUFFIXES = (".py", ".toml", ".tf")  # offline_llm.py (a vllm.LLM(...) program), programs.py (a framework's app)


def is_nomad_name(path: Path) -> bool:
    """The names a folder is walked for: `*.nomad` and `*.nomad.hcl` (a bare `*.hcl` may be Terraform or Packer)."""
    name = path.name.lower()
    return name.endswith(".nomad") or name.endswith(".nomad.hcl")


def is_dockerfile(path: Path) -> bool:
    """scripts.py: a Dockerfile or Containerfile, by its name."""
    name = path.name
    return name in ("Dockerfile", "Containerfile") or name.endswith((".Dockerfile", ".dockerfile")) \
        or name.startswith(("Dockerfile.", "Containerfile."))


def is_shell(path: Path, text: str | None = None) -> bool:
    """scripts.py: a shell script, by its suffix or (given its text) its shebang."""
    if path.suffix in (".sh", ".bash"):
        return True
    return text is not None and bool(re.match(r"#!\s*/(?:usr/)?bin/(?:env\s+)?(?:ba|da|z)?sh\b", text))
