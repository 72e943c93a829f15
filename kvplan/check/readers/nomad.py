"""HashiCorp Nomad job files (`*.nomad`, `*.nomad.hcl`, `*.hcl` with a `job` block): one deployment per task that
starts an engine or asks for a GPU.

Read as Nomad reads a jobspec (developer.hashicorp.com/nomad/docs/job-specification), HCL parsed by check/hcl.py:
- `job "name" { group "g" { task "t" { driver, config, env, resources } } }`;
- the docker (and podman) driver runs `config.image` with `config.entrypoint` replacing the image's entrypoint and
  `config.command` + `config.args` as its command (drivers/docker: command, args, entrypoint); vLLM's images run
  `vllm serve` with arguments alone, as in every format (launch.container_words). raw_exec / exec / exec2 run
  `config.command` with `config.args` on the host;
- `env { K = "v" }` is the task's environment; `${...}` in a value is Nomad's interpolation: `${var.NAME}` takes the
  default of `variable "NAME"` (HCL2 input variables), anything else (`${NOMAD_PORT_http}`, `${meta.x}`, `${attr.x}`,
  an env var) is known only where the task runs: "set outside the file" where the verdict needs it. A value that is an
  expression kvplan does not evaluate (a function call, arithmetic, a bare `var.x` with no default) is the same;
- GPUs: `resources { device "nvidia/gpu" { count = N } }` (count defaults to 1; `<vendor>/<type>/<model>` names the
  model; "gpu" alone names no vendor), its kind by `constraint { attribute = "${device.model}" value = "..." }`
  (operator "=" or "=="): the model is the NVML device name (Nomad's nvidia device plugin), looked up as NVIDIA's
  gpu.product label is. An `affinity` is a preference, not a placement: it names no GPU.
A task that runs something else (a UI, a check) is passed over; a file in which no task starts an engine or asks for
a GPU is skipped.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvplan.check import launch, marks
from kvplan.check.gpus import GpuEvidence, Label, whole_count
from kvplan.check.items import Skip, Workload, runs_engine
from kvplan.check.readers import names
from kvplan.check.report import FORMAT_NOMAD
from kvplan.core.errors import InputError
from kvplan.engines import lazy

if TYPE_CHECKING:
    from kvplan.check import hcl
else:  # the HCL parser (check/hcl.py): loaded when a Nomad file is read, not by every `kvplan check`
    hcl = lazy.module("kvplan.check.hcl")

SUFFIXES = names.NOMAD_SUFFIXES
is_nomad_name = names.is_nomad_name
_CONTAINER_DRIVERS = {"docker", "podman"}
_HOST_DRIVERS = {"raw_exec", "exec", "exec2"}
_TEMPLATE = re.compile(r"\$\{\s*([^}]*?)\s*\}")


def claims(root: hcl.Block) -> bool:
    return bool(root.children("job"))


def read(text: str, *, source: str, where: str, base_dir: Path) -> list | None:
    """The items of a Nomad job file, or None when the HCL holds no `job` block (not a Nomad job)."""
    root = hcl.parse(text, where=where)
    if not claims(root):
        return None
    defaults = _variables(root)
    items: list = []
    quiet: list[str] = []
    for job in root.children("job"):
        job_name = job.labels[0] if job.labels else "job"
        for group in job.children("group"):
            group_name = group.labels[0] if group.labels else "group"
            for task in group.children("task"):
                task_name = task.labels[0] if task.labels else "task"
                at = f"{where}: job.{job_name}.group.{group_name}.task.{task_name}"
                workload = _workload(task, defaults, source=source, name=task_name, where=at, base_dir=base_dir)
                if workload.requests_gpus or runs_engine(workload) or workload.gpus.other:
                    items.append(workload)
                else:
                    quiet.append(task_name)
    if not items:
        return [Skip(source, None, Path(source).stem, FORMAT_NOMAD, "no task starts vLLM, SGLang or TensorRT-LLM or asks "
                     f"for a GPU (tasks: {', '.join(quiet) or 'none'})")]
    return items


def _variables(root: hcl.Block) -> dict[str, Any]:
    """HCL2 input variables with a default: `variable "NAME" { default = ... }` (a -var at submit time may differ:
    the default is what runs when nothing overrides it, as kvplan reads every format's defaults)."""
    return {b.labels[0]: b.attributes["default"] for b in root.children("variable")
            if b.labels and "default" in b.attributes and not isinstance(b.attributes["default"], hcl.Expression)}


def _text(value: Any, defaults: dict[str, Any]) -> str:
    """A value as the text Nomad hands the task: templates resolved where the file says what they are."""
    if isinstance(value, hcl.Expression):
        ref = re.fullmatch(r"var\.([A-Za-z_][A-Za-z0-9_-]*)", value.text)
        if ref and ref.group(1) in defaults:
            return _text(defaults[ref.group(1)], defaults)
        return marks.marker(value.text)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    text = str(value)

    def one(m: re.Match) -> str:
        ref = re.fullmatch(r"var\.([A-Za-z_][A-Za-z0-9_-]*)", m.group(1))
        if ref and ref.group(1) in defaults and not isinstance(defaults[ref.group(1)], (list, dict)):
            return _text(defaults[ref.group(1)], defaults)
        return marks.marker(m.group(1))
    return _TEMPLATE.sub(one, text.replace("$${", "\x01")).replace("\x01", "${")


def _words(value: Any, defaults: dict[str, Any], at: str) -> list[str] | None:
    """A list of strings (args, entrypoint); a list from a variable's default; an unresolved expression is one
    unknown word (its arguments are set outside the file)."""
    if value is None:
        return None
    if isinstance(value, hcl.Expression):
        ref = re.fullmatch(r"(?:\$\{)?var\.([A-Za-z_][A-Za-z0-9_-]*)\}?", value.text)
        if ref and isinstance(defaults.get(ref.group(1)), list):
            value = defaults[ref.group(1)]
        else:
            return [marks.marker(value.text.removeprefix("${").removesuffix("}"))]
    if isinstance(value, str):
        return [_text(value, defaults)]
    if isinstance(value, list):
        return [_text(v, defaults) for v in value]
    raise InputError(f"must be a list of strings, got {type(value).__name__}", where=at)


def _workload(task: hcl.Block, defaults: dict[str, Any], *, source: str, name: str, where: str,
              base_dir: Path) -> Workload:
    driver = _text(task.attributes.get("driver", ""), defaults)
    config = task.child("config") or hcl.Block("config", (), task.line)
    env: dict[str, str | None] = {}
    for block in task.children("env"):
        for key, value in block.attributes.items():
            text = _text(value, defaults)
            env[key] = None if marks.MARK in text else text
    if isinstance(task.attributes.get("env"), dict):  # `env = { ... }` as an attribute
        for key, value in task.attributes["env"].items():
            text = _text(value, defaults)
            env[key] = None if marks.MARK in text else text
    command = _words(config.attributes.get("command"), defaults, f"{where}.config.command")
    args = _words(config.attributes.get("args"), defaults, f"{where}.config.args")
    image = words = None
    notes: tuple[str, ...] = ()
    if driver in _CONTAINER_DRIVERS:
        image = _text(config.attributes.get("image", ""), defaults) or None
        entrypoint = _words(config.attributes.get("entrypoint"), defaults, f"{where}.config.entrypoint")
        cmd = (command or []) + (args or [])
        words, note = launch.container_words(image, entrypoint, cmd or None)
        notes = (note,) if note else ()
    elif driver in _HOST_DRIVERS and command:
        words = command + (args or [])
    gpus = _gpus(task, defaults, where)
    return Workload(source=source, document=None, name=name, fmt=FORMAT_NOMAD, where=where, base_dir=base_dir,
                    words=tuple(words) if words else None, image=image, env=env, gpus=gpus, notes=notes,
                    requests_gpus=gpus.count is not None)


def _gpus(task: hcl.Block, defaults: dict[str, Any], where: str) -> GpuEvidence:
    resources = task.child("resources")
    if resources is None:
        return GpuEvidence()
    for device in resources.children("device"):
        spec = device.labels[0] if device.labels else ""
        parts = spec.split("/")
        kind = parts[1] if len(parts) >= 2 else parts[0]
        if kind != "gpu":
            continue
        vendor = parts[0] if len(parts) >= 2 and parts[0] in ("nvidia", "amd") else None
        at = f'{where}.resources.device "{spec}"'
        raw = device.attributes.get("count", 1)
        count = whole_count(_text(raw, defaults) if isinstance(raw, hcl.Expression) else raw, where=f"{at}.count",
                            what="a whole number")
        models = [parts[2]] if len(parts) >= 3 else []
        for constraint in device.children("constraint"):
            attribute = _text(constraint.attributes.get("attribute", ""), defaults)
            operator = str(constraint.attributes.get("operator", "="))
            if attribute == marks.marker("device.model") and operator in ("=", "=="):
                models.append(_text(constraint.attributes.get("value", ""), defaults))
        labels = tuple(Label("nvidia.com/gpu.product", model.replace(" ", "-"),
                             f'resources.device "{spec}" model "{model}", read as') for model in models[:1]
                       if marks.MARK not in model and vendor != "amd")
        return GpuEvidence(count=count, count_where=f'resources.device "{spec}" count: {count}', labels=labels,
                           vendor=vendor or ("nvidia" if labels else None),
                           vendor_where=f'resources.device "{spec}"' if vendor or labels else None)
    return GpuEvidence()

