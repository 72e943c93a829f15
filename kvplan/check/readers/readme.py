"""A README or deployment guide (Markdown) named on the command line: its fenced shell code blocks (```bash, ```sh,
```shell, ```console or untagged) are read as shell scripts, a `$ ` prompt taken off, and each block that starts a
server is a deployment (a `docker run IMAGE`, `vllm serve`, `python -m sglang.launch_server`, ... as in a script).
A block that names a server but cannot be read as a script is cannot judge, never passed over. Folders are not
walked for Markdown (docs/check.md "What it reads")."""

from __future__ import annotations

import re
from pathlib import Path

from kvplan.check import launch, shell
from kvplan.check.items import Failure, Skip, Workload
from kvplan.check.readers import names
from kvplan.check.report import FORMAT_README
from kvplan.core.errors import UnsupportedError

MARKDOWN_SUFFIXES = names.MARKDOWN_SUFFIXES
_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)[^\n]*$")
_SHELL_INFO = {"", "bash", "sh", "shell", "console", "zsh", "shell-session", "sh-session"}
# a block is looked at only if it names a server kvplan finds launches of (a cheap filter before the shell reader)
_SERVER_WORDS = re.compile(r"vllm|sglang|trtllm|tensorrt|llama-server|llama_cpp|ollama|text-generation|lmdeploy|"
                           r"mlc_llm|tritonserver|docker\s+run")


def blocks(text: str) -> list[tuple[int, str, str]]:
    """(first line of the code, info string, code) of each fenced code block."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(2), m.group(3).lower(), i + 1
        j = start
        while j < len(lines) and not lines[j].strip().startswith(fence[0] * len(fence)):
            j += 1
        out.append((start + 1, info, "\n".join(lines[start:j])))
        i = j + 1
    return out


def _unprompt(code: str) -> str:
    """A console block's commands: `$ cmd` lines (and their continuations) without the prompt; output lines dropped."""
    lines = code.splitlines()
    if not any(l.lstrip().startswith("$ ") for l in lines):
        return code
    out, going = [], False
    for line in lines:
        if line.lstrip().startswith("$ "):
            out.append(line.lstrip()[2:])
            going = line.rstrip().endswith("\\")
        elif going:
            out.append(line)
            going = line.rstrip().endswith("\\")
    return "\n".join(out)


def read(text: str, *, source: str, where: str, base_dir: Path) -> list:
    items: list = []
    stem = Path(source).stem
    for line, info, code in blocks(text):
        if info not in _SHELL_INFO or not _SERVER_WORDS.search(code):
            continue
        script = _unprompt(code)
        at = f"{where}:{line}"
        workload = Workload(source=source, document=None, name=f"{stem}:{line}", fmt=FORMAT_README, where=at,
                            base_dir=base_dir, script=script, pins=tuple(p for p in [launch.pip_release(script)] if p))
        try:
            calls = launch.calls_in_shell(script)
        except shell.ShellSyntaxError as err:
            items.append(Failure(source, None, workload.name, FORMAT_README, UnsupportedError(
                f"a code block that names a server cannot be read as a shell script: {err}", where=at,
                hint="judge the command it gives with --vllm-args")))
            continue
        if calls:
            items.append(workload)
    if not items:
        return [Skip(source, None, stem, FORMAT_README, "a Markdown file whose shell code blocks start no LLM server")]
    return items
