"""docker compose files: one deployment per service that starts vLLM, SGLang or TensorRT-LLM.

Read as docker compose reads them (the Compose Specification, https://github.com/compose-spec/compose-spec):
- interpolation first, over every string of the file: `$VAR`, `${VAR}`, `${VAR:-default}` / `-default`,
  `${VAR:?error}` / `?error`, `${VAR:+alt}` / `+alt`, nested defaults, `$$` for a literal `$`. Values come from a
  `.env` file beside the compose file (compose's default); the shell's environment at deploy time is not known, so
  a variable with no value and no default is "set outside the file" (cannot judge when the verdict needs it);
- `entrypoint` replaces the image's entrypoint and `command` follows it; a string is split into words like a
  shell would split it (no shell runs it unless the command is `sh -c`); vLLM's images run `vllm serve`;
- GPUs: `deploy.resources.reservations.devices` (`count: N`, `count: all`, `device_ids`), `gpus:`,
  `runtime: nvidia`; AMD through `devices: /dev/kfd`; Intel Gaudi through `runtime: habana`;
  `CUDA_VISIBLE_DEVICES` in the service's environment narrows them;
- `build:` makes the image from the Dockerfile in the build context (read as readers/scripts.py reads one, inside
  the checked repository only): its FROM, ENV, ENTRYPOINT and CMD are what the service runs under its own settings.
A file is compose when it has a `services:` mapping of services (and no Kubernetes apiVersion/kind).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from kvplan.check import launch, marks
from kvplan.check.gpus import GpuEvidence, whole_count
from kvplan.check.items import Skip, Workload, runs_engine
from kvplan.check.report import FORMAT_COMPOSE
from kvplan.core import files
from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.check.readers import claims as formats
from kvplan.engines import lazy

if TYPE_CHECKING:
    from kvplan.check.readers import scripts
else:  # the Dockerfile reader, for a service that builds its image (`build:`)
    scripts = lazy.module("kvplan.check.readers.scripts")

# the format test, apart from the reader (readers/claims.py), still answers here
_TOP_LEVEL = formats.COMPOSE_TOP_LEVEL
_SERVICE_KEYS = formats.COMPOSE_SERVICE_KEYS
claims = formats.compose

# ------------------------------------------------------------------ interpolation

_VAR = re.compile(r"\$(\$|[A-Za-z_][A-Za-z0-9_]*|\{)")


def interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """Compose's interpolation of every string in a loaded document (unresolved: marks.marker(name))."""
    if isinstance(value, str):
        return _interpolate_text(value, env)
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if isinstance(value, Mapping):
        return {k: interpolate(v, env) for k, v in value.items()}
    return value


def _interpolate_text(text: str, env: Mapping[str, str]) -> str:
    out, i = [], 0
    while i < len(text):
        m = _VAR.search(text, i)
        if not m:
            out.append(text[i:])
            break
        out.append(text[i:m.start()])
        token = m.group(1)
        if token == "$":
            out.append("$")
            i = m.end()
        elif token == "{":
            end = _closing_brace(text, m.end())
            out.append(_braced(text[m.end():end], env))
            i = end + 1
        else:
            out.append(env[token] if token in env else marks.marker(token))
            i = m.end()
    return "".join(out)


def _closing_brace(text: str, start: int) -> int:
    depth = 1
    for j in range(start, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    raise InputError("an unterminated ${ in a value")


def _braced(body: str, env: Mapping[str, str]) -> str:
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(:?[-?+])?(.*)", body, re.S)
    if not m:
        return marks.marker("${" + body + "}")
    name, op, word = m.group(1), m.group(2), m.group(3)
    value = env.get(name)
    empty = value is None or value == ""
    if op is None:
        return value if value is not None else marks.marker(name)
    if op in (":-", "-"):
        return _interpolate_text(word, env) if (value is None or (op == ":-" and empty)) else value
    if op in (":+", "+"):
        return "" if (value is None or (op == ":+" and empty)) else _interpolate_text(word, env)
    return marks.marker(name) if (value is None or (op == ":?" and empty)) else value  # :? and ?


def dotenv(folder: Path) -> dict[str, str]:
    """The `.env` file beside a compose file, as compose reads it (KEY=VALUE lines, # comments, optional quotes)."""
    path = folder / ".env"
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return out


# ------------------------------------------------------------------ services

def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    env = dotenv(base_dir)
    doc = interpolate(doc, env)
    items: list = []
    quiet: list[str] = []
    unread_builds: list[Workload] = []  # services whose Dockerfile kvplan could not read: what they run is unknown
    if doc.get("include") is not None:  # other compose files merged into this one (Compose Specification: include)
        raise UnsupportedError("includes other compose files, which kvplan does not follow: their services are not "
                               "judged", where=f"{where}: include", hint="check the included files with this one merged "
                                                                         "(`docker compose config` prints the whole)")
    for name, service in (doc.get("services") or {}).items():
        at = f"{where}: services.{name}"
        if not isinstance(service, Mapping):
            raise InputError("a service must be a mapping", where=at)
        if service.get("extends") is not None:  # its settings come from another service, maybe another file
            raise UnsupportedError("extends another service, whose settings kvplan does not merge", where=f"{at}.extends",
                                   hint="check the output of `docker compose config`, which has them merged")
        workload = _workload(str(name), service, source=source, document=document, where=at, base_dir=base_dir)

        if workload.requests_gpus or runs_engine(workload) or workload.gpus.other:
            items.append(workload)
        else:
            quiet.append(str(name))
            if workload.blocker is not None:
                unread_builds.append(workload)
    items = _apart(items) or unread_builds  # a file is skipped only when every service is known to start no engine
    if not items:
        return [Skip(source, document, Path(source).stem, FORMAT_COMPOSE,
                     f"no service starts vLLM, SGLang or TensorRT-LLM or asks for a GPU (services: {', '.join(quiet)})")]
    return items


def _devices(workload: Workload) -> set[str] | None:
    """The host GPUs a service's engine lands on: its device_ids, else the first N for a count (Docker hands out GPUs
    from index 0, moby daemon/nvidia_linux.go countToDevices: two services with `count: 1` both get GPU 0), None for
    every GPU (`all`)."""
    env = workload.env
    for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        value = env.get(name)
        if value and marks.MARK not in value and value.strip().lower() != "all":
            return {i.strip() for i in value.split(",") if i.strip()}
    where = workload.gpus.count_where or ""
    ids = re.search(r"device_ids \[(.*)\]", where)
    if ids:
        return {i.strip(" '\"") for i in ids.group(1).split(",") if i.strip(" '\"")}
    if workload.gpus.count is not None:
        return {str(i) for i in range(workload.gpus.count)}
    return None


def _apart(items: list) -> list:
    """Services whose engines land on the same GPU are cannot judge: each engine sizes its pool as if it had the
    card alone, so two that each pass alone may not both start (issue 26)."""
    engines = [w for w in items if isinstance(w, Workload) and runs_engine(w) and (w.requests_gpus or w.gpus.count)]
    placed = [(w, _devices(w)) for w in engines]
    crowded: dict[str, str] = {}
    for i, (a, da) in enumerate(placed):
        for b, db in placed[i + 1:]:
            if da is None or db is None or da & db:
                crowded.setdefault(a.name, b.name)
                crowded.setdefault(b.name, a.name)
    if not crowded:
        return items

    return [replace(w, blocker=w.blocker or UnsupportedError(
        f"shares a GPU with service {crowded[w.name]} (the same device_ids, or counts Docker fills from GPU 0); kvplan "
        "judges an engine that has its GPUs to itself", where=w.where,
        hint="give each service its own device_ids")) if isinstance(w, Workload) and w.name in crowded else w
        for w in items]


def _words(value: Any, at: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as err:
            raise InputError(f"cannot split into words: {err}", where=at) from None
    if isinstance(value, list):
        return [str(v) for v in value]
    raise InputError(f"must be a string or a list, got {type(value).__name__}", where=at)


def environment(value: Any) -> dict[str, str | None]:
    """A service's `environment:` (a mapping, or a list of KEY=VALUE); an unresolved value is unknown (None)."""
    out: dict[str, str | None] = {}
    items = value.items() if isinstance(value, Mapping) else (
        (str(v).partition("=")[0], str(v).partition("=")[2] if "=" in str(v) else None) for v in value or [])
    for key, val in items:
        text = None if val is None else ("true" if val is True else "false" if val is False else str(val))
        out[str(key)] = None if text is None or marks.MARK in text else text
    return out


def _workload(name: str, service: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> Workload:
    image = service.get("image")
    image = str(image) if image is not None else None
    env = environment(service.get("environment"))
    entrypoint = _words(service.get("entrypoint"), f"{where}.entrypoint")
    command = _words(service.get("command"), f"{where}.command")
    if service.get("build") is not None:
        return _built(name, service, image, env, entrypoint, command, source=source, document=document, where=where,
                      base_dir=base_dir)
    words, note = launch.container_words(image, entrypoint, command)
    gpus = _gpus(service, env, where)
    return Workload(source=source, document=document, name=name, fmt=FORMAT_COMPOSE, where=where, base_dir=base_dir,
                    words=tuple(words) if words is not None else None, image=image, env=env, gpus=gpus,
                    notes=(note,) if note else (), requests_gpus=gpus.count is not None or gpus.all_devices or bool(gpus.vendor))


# ------------------------------------------------------------------ build: the Dockerfile beside the compose file

# Compose Specification, build section (compose-spec/build.md): keys that change what the image runs are read
# (context, dockerfile, dockerfile_inline, args, target); these change how it is built, not ENTRYPOINT/CMD/ENV/FROM
_BUILD_KEYS_READ = {"context", "dockerfile", "dockerfile_inline", "args", "target"}
_BUILD_KEYS_NO_LAUNCH = {"additional_contexts", "cache_from", "cache_to", "entitlements", "extra_hosts", "isolation",
                         "labels", "network", "no_cache", "platforms", "privileged", "provenance", "pull", "sbom",
                         "secrets", "shm_size", "ssh", "tags", "ulimits"}


def _built(name: str, service: Mapping, image: str | None, env: dict, entrypoint: list[str] | None,
           command: list[str] | None, *, source: str, document: int | None, where: str, base_dir: Path) -> Workload:
    """A service with `build:`: compose builds its image from the Dockerfile in the build context and runs it, so the
    Dockerfile's FROM (the base image: the engine and its release), ENV, ENTRYPOINT and CMD are what the service runs,
    under the service's own environment, entrypoint and command (a compose `entrypoint` also drops the image's CMD:
    Compose Specification, services.entrypoint). The Dockerfile is read only inside the checked repository (or an
    allowed folder), like every path a file names; one kvplan cannot read makes the service cannot judge."""
    at = f"{where}.build"
    gpus = _gpus(service, env, where)
    base = Workload(source=source, document=document, name=name, fmt=FORMAT_COMPOSE, where=where, base_dir=base_dir,
                    image=image, env=env, gpus=gpus,
                    requests_gpus=gpus.count is not None or gpus.all_devices or bool(gpus.vendor))
    spec = service["build"]
    spec = {"context": spec} if isinstance(spec, str) else spec
    if not isinstance(spec, Mapping):
        raise InputError(f"must be a path or a mapping, got {type(spec).__name__}", where=at)
    unknown = sorted(str(k) for k in spec if str(k) not in _BUILD_KEYS_READ | _BUILD_KEYS_NO_LAUNCH
                     and not str(k).startswith("x-"))
    if unknown:
        return replace(base, words=tuple(command or ()) or None, blocker=UnsupportedError(
            f"build.{unknown[0]} is a build setting kvplan does not read", where=f"{at}.{unknown[0]}",
            hint="check the built image's launch with --vllm-args"))
    context = str(spec.get("context", "."))
    if re.match(r"^[a-z][a-z0-9+.-]*://|^git@|^github\.com/", context, re.I):
        return replace(base, words=tuple(command or ()) or None, blocker=UnsupportedError(
            f"builds its image from a remote context ({context}), which kvplan does not fetch", where=f"{at}.context",
            hint="check the Dockerfile in a local checkout of that context"))
    dockerfile = str(spec.get("dockerfile", "Dockerfile"))
    shown = (Path(context) / dockerfile).as_posix() if not Path(dockerfile).is_absolute() else dockerfile
    try:
        if spec.get("dockerfile_inline") is not None:
            shown, text = "build.dockerfile_inline", str(spec["dockerfile_inline"])
        else:
            text = files.read_text(base_dir / context / dockerfile, where=f"{at}: {shown}")
        built = scripts.build_stage(text, build_args=environment(spec.get("args")),
                                    target=str(spec["target"]) if spec.get("target") is not None else None)
        if built is None:
            raise InputError(f"the Dockerfile has no stage named {spec['target']}", where=f"{at}.target")
    except KvplanError as err:
        return replace(base, words=tuple(command or ()) or None, blocker=UnsupportedError(
            f"builds its image from {shown}, which kvplan cannot read ({err.what}); the launch and the engine release "
            "are the Dockerfile's", where=at, hint="check the repository with the Dockerfile in it"))
    if entrypoint:  # compose's entrypoint replaces the image's and drops its CMD
        words, script, note = list(entrypoint) + list(command or []), None, None
    elif command is not None:
        image_entry = built.entrypoint
        if image_entry is not None and image_entry[1] is not None:
            words, script, note = None, image_entry[1], None  # a shell-form ENTRYPOINT ignores arguments
        elif image_entry is not None:
            words, script, note = list(image_entry[0] or []) + list(command), None, None
        else:
            words, note = launch.container_words(built.image, None, command)
            script = None
    else:
        words, script = scripts.image_command(built)
        note = None
    pins = tuple(p for p in [launch.pip_release("\n".join(built.runs))] if p)
    notes = [f"image built from {shown}" + (f" (FROM {built.image})" if built.image else "")]
    if note:
        notes.append(note)
    gpus = _gpus(service, {**built.env, **env}, where)
    return replace(base, words=tuple(words) if words is not None else None, script=script, image=built.image,
                   env={**built.env, **env}, gpus=gpus, pins=pins, notes=tuple(notes),
                   requests_gpus=gpus.count is not None or gpus.all_devices or bool(gpus.vendor))


def _mapping_at(data: Mapping, keys: tuple[str, ...], where: str) -> Mapping:
    """data[k1][k2]... where each level is a mapping or absent ({}); another type is bad input naming the key (a
    `resources: "gpu"` was a traceback, issue 26)."""
    for i, key in enumerate(keys):
        value = data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise InputError(f"must be a mapping, got {type(value).__name__}", where=f"{where}.{'.'.join(keys[:i + 1])}")
        data = value
    return data


def _gpus(service: Mapping, env: Mapping[str, str | None], where: str) -> GpuEvidence:
    count, count_where, all_devices, vendor, vendor_where, other = None, None, False, None, None, None
    reservations = _mapping_at(service, ("deploy", "resources", "reservations"), where)
    devices = reservations.get("devices") or []
    if not isinstance(devices, list):
        raise InputError(f"must be a list of device requests, got {type(devices).__name__}",
                         where=f"{where}.deploy.resources.reservations.devices")
    for device in devices:
        if not isinstance(device, Mapping):
            continue
        caps = [str(c) for c in device.get("capabilities") or []]
        driver = str(device.get("driver") or "")
        if "gpu" not in caps and driver != "nvidia":
            continue
        vendor, vendor_where = ("amd" if driver == "amd" else "nvidia"), "deploy.resources.reservations.devices"
        if "device_ids" in device and isinstance(device["device_ids"], list):
            count, count_where = len(device["device_ids"]), f"deploy.resources.reservations.devices device_ids {device['device_ids']}"
        elif str(device.get("count", "all")) in ("all", "-1"):
            all_devices = True
        else:
            count = whole_count(device["count"], where=f"{where}.deploy.resources.reservations.devices.count",
                                what="a whole number or all")
            count_where = f"deploy.resources.reservations.devices count: {device['count']}"
    gpus = service.get("gpus")
    if gpus is not None:
        vendor, vendor_where = "nvidia", "gpus"
        if gpus == "all":
            all_devices = True
    runtime = str(service.get("runtime") or "")
    if runtime == "nvidia":
        vendor, vendor_where = "nvidia", "runtime: nvidia"
        all_devices = all_devices or count is None
    elif runtime == "habana":
        other = "Intel Gaudi HPUs (runtime: habana)"
    devices = [str(d) for d in service.get("devices") or []]
    if any(d.startswith("/dev/kfd") for d in devices):
        vendor, vendor_where = "amd", "devices: /dev/kfd"
        all_devices = all_devices or count is None
    visible = env.get("CUDA_VISIBLE_DEVICES") or env.get("NVIDIA_VISIBLE_DEVICES")
    if visible and re.fullmatch(r"\d+(,\d+)*", visible):
        ids = visible.split(",")
        key = "CUDA_VISIBLE_DEVICES" if env.get("CUDA_VISIBLE_DEVICES") else "NVIDIA_VISIBLE_DEVICES"
        count, count_where, all_devices = len(ids), f"environment {key}={visible}", False
    other = other or launch.non_gpu_accelerator(str(service.get("image") or ""))
    return GpuEvidence(count=count, count_where=count_where, vendor=vendor, vendor_where=vendor_where, other=other,
                       all_devices=all_devices and count is None)
