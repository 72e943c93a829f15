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
from pathlib import Path

from kvplan.check import launch, shell
from kvplan.check.items import Skip, Workload, calls_of, runs_engine
from kvplan.check.report import FORMAT_DOCKERFILE, FORMAT_SHELL
from kvplan.core.errors import InputError


def is_dockerfile(path: Path) -> bool:
    name = path.name
    return name in ("Dockerfile", "Containerfile") or name.endswith((".Dockerfile", ".dockerfile")) \
        or name.startswith(("Dockerfile.", "Containerfile."))


def is_shell(path: Path, text: str | None = None) -> bool:
    if path.suffix in (".sh", ".bash"):
        return True
    return text is not None and bool(re.match(r"#!\s*/(?:usr/)?bin/(?:env\s+)?(?:ba|da|z)?sh\b", text))


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


def read_dockerfile(text: str, *, source: str, where: str, base_dir: Path) -> list:
    name = Path(source).stem
    steps = instructions(text)
    args: dict[str, str | None] = {}
    env: dict[str, str | None] = {}
    image = None
    entrypoint: tuple[list[str] | None, str | None] | None = None
    cmd: tuple[list[str] | None, str | None] | None = None
    runs: list[str] = []
    for op, argument, _line in steps:
        if op == "ARG":
            key, eq, value = argument.strip().partition("=")
            args[key.strip()] = value.strip().strip('"') if eq else args.get(key.strip())
        elif op == "FROM":
            words = argument.split()
            image = _expand(words[0], args) if words else None
            env, entrypoint, cmd = {}, None, None  # a new stage
        elif op == "ENV":
            for key, value in _env_pairs(argument):
                env[key] = None if shell.MARK in _expand(value, {**args, **env}) else _expand(value, {**args, **env})
        elif op == "ENTRYPOINT":
            entrypoint, cmd = _form(argument), None
        elif op == "CMD":
            cmd = _form(argument)
        elif op == "RUN":
            runs.append(argument)
    runtime_env = dict(env)
    words: list[str] | None = None
    script: str | None = None
    if entrypoint is not None:
        exec_words, shell_text = entrypoint
        if shell_text is not None:
            script = shell_text  # a shell-form ENTRYPOINT ignores CMD
        else:
            words = exec_words + (cmd[0] if cmd and cmd[0] is not None else ([] if not cmd else ["/bin/sh", "-c", cmd[1]]))
    elif cmd is not None:
        exec_words, shell_text = cmd
        if shell_text is not None:
            script = shell_text
        else:
            words, note = launch.container_words(image, None, exec_words)
    else:
        default = launch.image_entrypoint(image)
        words = default
    pins = tuple(p for p in [launch.pip_release("\n".join(runs))] if p)
    workload = Workload(source=source, document=None, name=name, fmt=FORMAT_DOCKERFILE, where=where, base_dir=base_dir,
                        words=tuple(words) if words is not None else None, script=script, image=image, env=runtime_env,
                        pins=pins, notes=("variables the file does not set take the defaults it gives them",))

    if not runs_engine(workload) and not launch.image_engine(image):
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
