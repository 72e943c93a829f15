"""Shell scripts and Dockerfiles that start an engine.

A shell script is read as sh would run it (kvplan/check/shell.py): each engine launch in it is a deployment, with
the variables the script sets, `VAR=x cmd` environments, `docker run` images (their tags pin the release) and GPU
options (`--gpus all`, `--gpus '"device=0,1"'`). A variable the script leaves to its caller is "set outside the
file" (cannot judge where the verdict needs it).

A Dockerfile is read as docker builds it (https://docs.docker.com/reference/dockerfile/): instructions continue
over `\\` line ends, and comment lines inside a continued instruction are removed before the instruction runs
(so a `# ...` line in a continued CMD does not end the command); the last stage's FROM image (ARG defaults
expanded) pins the release; ENV is the container's environment; ENTRYPOINT and CMD combine as docker combines them
(a shell form runs through /bin/sh -c, where `${VAR:-default}` of a variable ENV does not set takes its default);
without either the base image's entrypoint runs (vLLM's images: `vllm serve`). `pip install engine==X` in a RUN
pins the release too. A Dockerfile names no GPU: --gpu gives it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from kvplan.check import launch, marks
from kvplan.check.items import Skip, Workload, calls_of, runs_engine
from kvplan.check.report import FORMAT_DOCKERFILE, FORMAT_SHELL
# which files are scripts and Dockerfiles, by name (and shebang), lives in names.py; it still answers here
from kvplan.check.readers.names import is_dockerfile as is_dockerfile, is_shell as is_shell
from kvplan.engines import lazy
from kvplan.core.errors import InputError

if TYPE_CHECKING:
    from kvplan.check import shell
else:  # the parser loads with the first text to split (a string command, a script); a list command needs none
    shell = lazy.module("kvplan.check.shell")


def read_shell(text: str, *, source: str, where: str, base_dir: Path) -> list:
    name = Path(source).stem
    workload = Workload(source=source, document=None, name=name, fmt=FORMAT_SHELL, where=where, base_dir=base_dir,
                        script=text, pins=tuple(p for p in [launch.pip_release(text)] if p),
                        env={"0": Path(source).name})  # $0: the script, so "$(dirname "$0")/x" is x beside it
    try:
        calls = calls_of(workload)
    except Exception:  # noqa: BLE001 - an unreadable script is reported by deployments() with its own message
        return [workload]
    if not calls:
        return [Skip(source, None, name, FORMAT_SHELL, "the script starts no vLLM, SGLang or TensorRT-LLM server")]
    return [workload]


# ------------------------------------------------------------------ Dockerfiles

def instructions(text: str) -> list[tuple[str, str, int]]:
    """(INSTRUCTION, its argument text, line) in order, continuations joined, comment lines removed."""
    out: list[tuple[str, str, int]] = []
    escape = "\\"
    first = re.match(r"\s*#\s*escape\s*=\s*(\S)", text)
    if first:
        escape = first.group(1)
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        start = i + 1
        i += 1
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = []
        while True:
            body = line.rstrip()
            if body.endswith(escape):
                parts.append(body[:-1])
                while i < len(lines) and (not lines[i].strip() or lines[i].lstrip().startswith("#")):
                    i += 1  # comment and empty lines inside a continuation are removed
                if i >= len(lines):
                    break
                line = lines[i]
                i += 1
                continue
            parts.append(body)
            break
        joined = " ".join(p.strip() for p in parts)
        m = re.match(r"(\w+)\s*(.*)", joined, re.S)
        if m:
            out.append((m.group(1).upper(), m.group(2), start))
    return out


def _expand(text: str, values: dict) -> str:
    """Dockerfile variable substitution in FROM/ENV/ARG: $VAR, ${VAR}, ${VAR:-x}, ${VAR:+x}."""
    return "".join(shell._expand(text, shell._Vars(values), split=False)) if "$" in text else text


def _form(argument: str) -> tuple[list[str] | None, str | None]:
    """(exec-form words, or None; shell-form text, or None) of an ENTRYPOINT / CMD argument."""
    argument = argument.strip()
    if argument.startswith("["):
        try:
            words = json.loads(argument)
            if isinstance(words, list) and all(isinstance(w, str) for w in words):
                return words, None
        except ValueError:
            pass
    return None, argument


@dataclass(frozen=True)
class ImageBuild:
    """What one stage of a Dockerfile leaves in its image: the FROM image it builds on, ENV, ENTRYPOINT and CMD
    (each (exec-form words, shell-form text) or None when the stage sets none) and the RUN lines up to it."""
    image: str | None
    env: dict[str, str | None]
    entrypoint: tuple[list[str] | None, str | None] | None
    cmd: tuple[list[str] | None, str | None] | None
    runs: tuple[str, ...]


def build_stage(text: str, *, build_args: Mapping[str, str | None] | None = None, target: str | None = None
                ) -> ImageBuild | None:
    """The image a Dockerfile builds: its last stage, or the stage named `target` (None when there is no such stage).
    `build_args` override the ARG defaults, as `docker build --build-arg` (compose `build.args`) does."""
    args: dict[str, str | None] = {}
    given = dict(build_args or {})
    stages: list[ImageBuild] = []
    names: dict[str, int] = {}
    image, env, entrypoint, cmd, runs = None, {}, None, None, []  # type: ignore[var-annotated]
    started = False
    for op, argument, _line in instructions(text):
        if op == "ARG":
            key, eq, value = argument.strip().partition("=")
            key = key.strip()
            args[key] = given[key] if key in given else (value.strip().strip('"') if eq else args.get(key))
        elif op == "FROM":
            if started:
                stages.append(ImageBuild(image, env, entrypoint, cmd, tuple(runs)))
            words = argument.split()
            image = _expand(words[0], args) if words else None
            if len(words) >= 3 and words[-2].upper() == "AS":
                names[words[-1].lower()] = len(stages)
            env, entrypoint, cmd, started = {}, None, None, True  # a new stage (RUN lines of earlier stages kept:
            # a builder stage's `pip install vllm==X` pins what a later stage copies)
        elif op == "ENV":
            for key, value in _env_pairs(argument):
                value = _expand(value, {**args, **env})
                env[key] = None if marks.MARK in value else value
        elif op == "ENTRYPOINT":
            entrypoint, cmd = _form(argument), None
        elif op == "CMD":
            cmd = _form(argument)
        elif op == "RUN":
            runs.append(argument)
    stages.append(ImageBuild(image, env, entrypoint, cmd, tuple(runs)))
    if target is None:
        return stages[-1]
    index = names.get(target.lower())
    return stages[index] if index is not None else None


def image_command(build: ImageBuild) -> tuple[list[str] | None, str | None]:
    """(exec-form words, or a shell script) a container of the built image runs, as docker combines ENTRYPOINT and
    CMD: a shell-form ENTRYPOINT runs through /bin/sh -c and ignores CMD; a shell-form CMD after an exec-form
    ENTRYPOINT is its arguments `/bin/sh -c TEXT`; with neither, the base image's entrypoint (vLLM's: `vllm serve`)."""
    if build.entrypoint is not None:
        exec_words, shell_text = build.entrypoint
        if shell_text is not None:
            return None, shell_text
        cmd = build.cmd
        return list(exec_words or []) + (cmd[0] if cmd and cmd[0] is not None else
                                          ([] if not cmd else ["/bin/sh", "-c", cmd[1] or ""])), None
    if build.cmd is not None:
        exec_words, shell_text = build.cmd
        if shell_text is not None:
            return None, shell_text
        return launch.container_words(build.image, None, exec_words)[0], None
    return launch.image_entrypoint(build.image), None


def read_dockerfile(text: str, *, source: str, where: str, base_dir: Path) -> list:
    name = Path(source).stem
    build = build_stage(text)
    assert build is not None  # the last stage always exists
    words, script = image_command(build)
    pins = tuple(p for p in [launch.pip_release("\n".join(build.runs))] if p)
    # an exec-form ENTRYPOINT (or the base image's) with no CMD: `docker run IMAGE ARGS` appends ARGS to it, so the
    # model and the other options arrive where the image is run, not in this file (docker's ENTRYPOINT / CMD rules)
    at_run = None
    if words is not None and build.cmd is None:
        shown = " ".join(words)
        whose = "its ENTRYPOINT" if build.entrypoint is not None else f"the base image {build.image}'s entrypoint"
        at_run = (f"{whose} `{shown}` has no CMD: the model and the other options are given at `docker run` time, "
                  "not in this file")
    workload = Workload(source=source, document=None, name=name, fmt=FORMAT_DOCKERFILE, where=where, base_dir=base_dir,
                        words=tuple(words) if words is not None else None, script=script, image=build.image,
                        env=dict(build.env), pins=pins,
                        notes=("variables the file does not set take the defaults it gives them",), args_at_run=at_run)

    if not runs_engine(workload) and not launch.image_engine(build.image):
        return [Skip(source, None, name, FORMAT_DOCKERFILE, "starts no vLLM, SGLang or TensorRT-LLM server")]
    return [workload]


def _env_pairs(argument: str) -> list[tuple[str, str]]:
    """ENV KEY=VALUE [KEY=VALUE ...] or the legacy ENV KEY VALUE."""
    import shlex

    argument = argument.strip()
    if re.match(r"[A-Za-z_][A-Za-z0-9_]*=", argument):
        try:
            return [tuple(w.split("=", 1)) for w in shlex.split(argument, posix=True) if "=" in w]  # type: ignore[misc]
        except ValueError:
            raise InputError(f"ENV {argument}: unbalanced quotes") from None
    key, _, value = argument.partition(" ")
    return [(key, value.strip())]
