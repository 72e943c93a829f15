"""`kvplan check`: find the deployment files, give each document to the reader of its format (readers/), judge
what they return, and make the report. A bad file or document is reported and the others are still judged; a
document with nothing to judge is reported as skipped.

Folders are walked for the files deployments live in (DEPLOYMENT_FILES): YAML (*.yaml, *.yml: Kubernetes, compose,
Helm values, Ray, SkyPilot, TensorRT-LLM, vLLM configs, kvplan's own), shell scripts (*.sh, *.bash) and
Dockerfiles (Dockerfile, Containerfile, *.Dockerfile, Dockerfile.*), in sorted order, hidden files and folders
skipped. A file named on the command line is read whatever its name.

Pure of typer and rich: paths and options in, a CheckReport out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from kvplan import engines
from kvplan.check import judge as judging
from kvplan.check.deployment import CheckOptions, Defaults, Deployment, LaunchContext, defaults as validate, with_command_line
from kvplan.check.items import Failure, Skip, Workload
from kvplan.check.readers import FORMATS, LOOKED_FOR, READERS, names
from kvplan.check.report import (FORMAT_DOCKERFILE, FORMAT_KVPLAN, FORMAT_SHELL, FORMAT_VLLM, FORMAT_VLLM_ARGS,
                                 CheckReport, Verdict, failed_verdict, make_report, skipped_verdict)
from kvplan.check.traced import last_field, traced
from kvplan.check.workload import deployments
from kvplan.core import files, yamlio
from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.model import cache_dirs, resolve
from kvplan.check.lines import find_line
from kvplan.engines import lazy

if TYPE_CHECKING:
    from kvplan.check.readers import kvplan_yaml, nomad, offline_llm, programs, readme, scripts, vllm_serve
else:  # the readers of Markdown, Nomad and programs load when a file's name calls for them (readers/names.py)
    nomad = lazy.module("kvplan.check.readers.nomad")
    offline_llm = lazy.module("kvplan.check.readers.offline_llm")
    programs = lazy.module("kvplan.check.readers.programs")
    readme = lazy.module("kvplan.check.readers.readme")
    # kvplan's own format and vllm serve's: asked after every reader of READERS declined a document
    kvplan_yaml = lazy.module("kvplan.check.readers.kvplan_yaml")
    vllm_serve = lazy.module("kvplan.check.readers.vllm_serve")
    scripts = lazy.module("kvplan.check.readers.scripts")  # shell scripts and Dockerfiles (names.py says which)

YAML_SUFFIXES = (".yaml", ".yml")
SHELL_SUFFIXES = (".sh", ".bash")

# kvplan's own folder (its bundled data), found from this file: importing the kvplan package here would tie this
# module in a cycle with the API that `import kvplan` names (tests/test_architecture.py)
_PACKAGE = Path(__file__).parent.parent


def is_deployment_file(path: Path) -> bool:
    """The files a folder is walked for."""
    return path.suffix.lower() in YAML_SUFFIXES + SHELL_SUFFIXES or names.is_dockerfile(path) \
        or names.is_nomad_name(path)


def collect(paths) -> list[tuple[str, Path | None, InputError | None]]:
    """Each path given, folders expanded to their deployment files, any case of suffix (sorted, hidden ones skipped).

    A deployment file name in a folder that is not a regular file (a FIFO, a socket, a symlink to a device or to
    nothing) is reported as invalid, not skipped: a CI gate that silently reads less than it was given passes too easily."""
    out: list[tuple[str, Path | None, InputError | None]] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(
                (p for p in path.rglob("*") if not p.is_dir() and is_deployment_file(p)
                 and not any(part.startswith(".") for part in p.relative_to(path).parts)),
                key=lambda p: p.relative_to(path).as_posix())
            if not found:
                out.append((str(given), None, InputError(
                    "holds no deployment files (*.yaml, *.yml, *.sh, Dockerfile, *.nomad)", where=str(given))))
            for p in found:
                display = (path / p.relative_to(path)).as_posix()
                try:
                    files.check_regular(p, where=display)
                except InputError as err:
                    out.append((display, None, err))
                    continue
                out.append((display, p, None))
        elif path.exists() or path.is_symlink():
            out.append((Path(given).as_posix(), path, None))
        else:
            out.append((str(given), None, InputError("no such file or folder", where=str(given), hint="check the path")))
    return out


def run_check(paths, options: CheckOptions = CheckOptions(), vllm_command_lines=()) -> CheckReport:
    """Judge every deployment in `paths` (files or folders) and in the vLLM command lines."""
    defaults = validate(options)
    verdicts: list[Verdict] = []
    roots = read_roots(paths, options, command_lines=bool(vllm_command_lines))
    with resolve.using(defaults.lookup), resolve.remembering(), files.confined_to(roots):
        for display, path, problem in collect(paths):
            if problem is not None:
                verdicts.append(failed_verdict(display, None, display, None, problem))
                continue
            verdicts.extend(_with_lines(_judge_file_alone(display, path, defaults), path))
        for i, text in enumerate(vllm_command_lines, start=1):
            where = "--vllm-args" if len(vllm_command_lines) == 1 else f"--vllm-args#{i}"
            verdicts.append(_judge_command_line(text, where=where, defaults=defaults))
    if not verdicts:
        raise InputError("nothing to check", where="CONFIG", hint="name deployment files or folders, or give --vllm-args")
    return make_report(verdicts, defaults.vllm_version)


def repository_of(path: Path) -> Path:
    """The repository a checked file or folder belongs to (the nearest folder holding .git), else its own folder."""
    path = Path(path).absolute()
    folder = path if path.is_dir() else path.parent
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def read_roots(paths, options: CheckOptions, *, command_lines: bool = False) -> list[Path]:
    """Where the files a deployment names may be read from (docs/check.md "Paths"): the repository of each path
    checked (and a file given by name itself), --models-dir, --allow-path, --calibration, the Hugging Face and kvplan
    caches, kvplan's own data; the working folder for --vllm-args command lines."""
    roots: list[Path] = []
    for given in paths:
        roots.append(repository_of(Path(given)))
        roots.append(Path(given))
    roots += [Path(p) for p in (*options.models_dirs, *options.allow_paths)]
    if options.calibration:
        roots.append(Path(options.calibration))
    roots += [cache_dirs.cache_dir(), cache_dirs.kvplan_cache_dir(), _PACKAGE]
    if command_lines:
        roots.append(repository_of(Path.cwd()))
    return roots


def _judge_file_alone(display: str, path: Path, defaults: Defaults) -> list[Verdict]:
    """_judge_file, with a file nested more deeply than the readers recurse (a script of thousands of nested `if`s or
    `${A:-${B:-...}}` defaults) judged cannot judge on its own: the other files still get their verdicts."""
    try:
        return _judge_file(display, path, defaults)
    except RecursionError:
        why = UnsupportedError("is nested more deeply than kvplan's readers follow", where=display,
                               hint="flatten the nesting, or check the launch it builds (--vllm-args)")
        return [failed_verdict(display, None, Path(display).stem, None, why)]


def _judge_file(display: str, path: Path, defaults: Defaults) -> list[Verdict]:
    stem = Path(display).stem
    try:
        if names.is_dockerfile(path):
            items = scripts.read_dockerfile(yamlio.read_text(path), source=display, where=display, base_dir=path.parent)
            return _verdicts(items, defaults)
        if path.name == ".env" or path.name.endswith(".env"):
            return [skipped_verdict(display, None, path.name, None, "an environment file (KEY=VALUE): no launch of its "
                                    "own; a compose file reads the .env beside it")]
        text = yamlio.read_text(path)
        if path.suffix.lower() in names.MARKDOWN_SUFFIXES:
            return _verdicts(readme.read(text, source=display, where=display, base_dir=path.parent), defaults)
        if path.suffix.lower() in names.NOMAD_SUFFIXES:  # a Nomad job (HCL); another HCL file is no format kvplan reads
            items = nomad.read(text, source=display, where=display, base_dir=path.parent)
            if items is None:
                raise _not_a_format(display)
            return _verdicts(items, defaults)
        if path.suffix.lower() in names.PROGRAM_SUFFIXES and not names.is_shell(path, text):
            # a program that builds vllm.LLM(...) is that launch (offline_llm.py); a framework's app stays cannot judge
            items = (offline_llm.read(text, path, source=display, where=display, defaults=defaults)
                     if path.suffix.lower() == ".py" and not programs.framework(text) else None)
            items = items if items is not None else programs.read(text, path, source=display, where=display)
            if items is None:
                raise _not_a_format(display)
            return _verdicts(items, defaults)
        if names.is_shell(path, text):
            return _verdicts(scripts.read_shell(text, source=display, where=display, base_dir=path.parent), defaults)
        yaml_named = path.suffix.lower() in YAML_SUFFIXES
        try:
            docs = yamlio.load_yaml_text(text, where=display, per_document=True)
        except InputError:
            if "{{" in text:
                return [skipped_verdict(display, None, stem, None, "a Helm template (Go template syntax): render it with "
                                        "`helm template` and check the output")]
            if not yaml_named:  # a Python, TOML or Terraform file named on the command line: not a broken YAML file
                raise _not_a_format(display) from None
            raise
        if not docs:
            raise InputError("is empty", where=display, hint="expected a YAML mapping")
        if not yaml_named and not any(isinstance(d, Mapping) for d in docs):
            raise _not_a_format(display)
    except KvplanError as err:
        return [failed_verdict(display, None, stem, None, err)]
    if path.name == "Chart.yaml" and all(isinstance(d, Mapping) and "kind" not in d for d in docs):
        return [skipped_verdict(display, None, stem, None, "Helm chart metadata (Chart.yaml): nothing to judge")]
    many = len(docs) > 1
    out: list[Verdict] = []
    for index, doc in enumerate(docs, start=1):
        document = index if many else None
        where = f"{display}#{index}" if many else display
        out.extend(_judge_document(doc, display=display, path=path, document=document, where=where, many=many,
                                   defaults=defaults))
    return out


def _with_lines(verdicts: list[Verdict], path: Path) -> list[Verdict]:
    """Each verdict with the line of its file it points at (lines.py), for annotations and SARIF regions."""
    from dataclasses import replace

    try:
        text = yamlio.read_text(path)
    except KvplanError:
        return verdicts  # the file could not be read at all: its verdict says so, at no line
    return [replace(v, line=find_line(text, v.document, v.status, v.reason)) for v in verdicts]


def _not_a_format(where: str) -> UnsupportedError:
    """A file kvplan cannot read as any deployment format: cannot judge (exit 3), not invalid; it may well be a good
    file of a format kvplan does not read yet."""
    return UnsupportedError("not a deployment format kvplan reads", where=where, hint=f"formats: {FORMATS}")


def _verdicts(items, defaults: Defaults) -> list[Verdict]:
    out: list[Verdict] = []
    for item in items:
        if isinstance(item, Skip):
            out.append(skipped_verdict(item.source, item.document, item.name, item.fmt, item.reason))
        elif isinstance(item, Failure):
            out.append(failed_verdict(item.source, item.document, item.name, item.fmt, item.error))
        elif isinstance(item, Workload):
            out.extend(_verdicts(deployments(item, defaults), defaults))
        elif isinstance(item, Deployment):
            try:
                out.append(_judge(item, defaults))
            except KvplanError as err:
                out.append(failed_verdict(item.source, item.document, item.name, item.format, err, item.origins))
    return out


def _judge(dep: Deployment, defaults: Defaults) -> Verdict:
    """A deployment's verdict, with the command line's --gpu-reserved / --engine-option where its engine reads them."""
    return judging.judge(with_command_line(dep, defaults), optimistic=defaults.optimistic)


def document_format(doc: Any, *, where: str) -> str:
    """kvplan's format or a vllm serve config, for documents no other reader claims (see readers/__init__.py)."""
    if not isinstance(doc, Mapping):
        raise InputError(f"a deployment is a YAML mapping of key: value, got {type(doc).__name__}", where=where)
    keys = {str(k).replace("-", "_") for k in doc}
    # `name` alone is no mark of kvplan's format (a workflow, a Truss config, a chart have one): with `model`, or
    # beside a key only kvplan has
    own = keys & kvplan_yaml.KVPLAN_ONLY
    return FORMAT_KVPLAN if own - {"name"} or (own and "model" in keys) else FORMAT_VLLM


def _looks_like_vllm_config(doc: Mapping) -> bool:
    """Most of its keys are `vllm serve` options of some release kvplan mirrors (or it names a model)."""
    vllm = engines.get("vllm")
    if "model" in doc:
        return True
    known = 0
    for key in doc:
        for r in vllm.releases.RELEASES:
            try:
                vllm.options.lookup(str(key), where="", version=r.line)
                known += 1
                break
            except KvplanError:
                continue
    return known * 2 >= len(doc) > 0


def _judge_document(doc, *, display, path, document, where, many, defaults: Defaults) -> list[Verdict]:
    name = Path(display).stem if not many else f"{Path(display).stem}#{document}"
    fmt = None
    if isinstance(doc, InputError):  # this document could not be built; the others of the file still are
        if "{{" in path.read_text(encoding="utf-8", errors="replace"):
            return [skipped_verdict(display, document, name, None, "holds a template placeholder ({{...}}) that is not "
                                    f"filled in: {doc.what}")]
        err = InputError(doc.what, where=where, hint=doc.hint)
        return [failed_verdict(display, document, name, None, err)]
    doc = traced(doc)
    try:
        for fmt_name, claims, read in READERS:
            if claims(doc):
                fmt = fmt_name
                return _verdicts(read(doc, source=display, document=document, where=where, base_dir=path.parent), defaults)
        fmt = document_format(doc, where=where)
        if fmt == FORMAT_KVPLAN:
            dep = kvplan_yaml.read(doc, source=display, document=document, where=where, base_dir=path.parent,
                                   defaults=defaults)
            return [_judge(dep, defaults)]
        if not _looks_like_vllm_config(doc):
            fmt = None
            keys = ", ".join(str(k) for k in list(doc)[:8]) + (", ..." if len(doc) > 8 else "")
            raise UnsupportedError(f"not a deployment format kvplan reads (keys: {keys})", where=where,
                                   hint="it looked for " + "; ".join(LOOKED_FOR))
        if many:
            raise InputError("vLLM reads one YAML document per --config file", where=where,
                             hint="split the file, or add `engine: vllm` and a GPU to make it a kvplan deployment")
        args = engines.get("vllm").options.parse_config(doc, where=where, version=defaults.vllm_version)
        if "model" not in doc and not args.model and not args.get("hf_config_path"):  # `model: false` is bad input
            return [skipped_verdict(display, document, name, FORMAT_VLLM, "a vllm serve --config file that names no "
                                    "model: judged with the command line that gives it (--vllm-args \"serve MODEL "
                                    f"--config {display}\")")]
        ctx = LaunchContext(source=display, document=document, where=where, name=name, fmt=FORMAT_VLLM,
                            base_dir=path.parent, defaults=defaults, version=defaults.vllm_version,
                            release_origin=f"--vllm-version {defaults.vllm_version}" if defaults.vllm_version else None,
                            flag_style=False, key=vllm_serve.key_style(FORMAT_VLLM))
        return [_judge(vllm_serve.read(args, ctx), defaults)]
    except KvplanError as err:
        if isinstance(doc, Mapping) and isinstance(doc.get("name"), str) and fmt == FORMAT_KVPLAN:
            name = doc["name"]
        return [failed_verdict(display, document, name, fmt, err)]
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as err:
        # a value of a type the reader does not expect (check/traced.py): bad input at the field last read
        field = last_field(doc, err)
        bad = InputError(f"has a value of a type kvplan does not read there ({_plain(err)})",
                         where=f"{where}: {field}" if field else where, hint="check the field's type in the format's reference")
        return [failed_verdict(display, document, name, fmt, bad)]


def _plain(err: Exception) -> str:
    """Python's words for a type error, without the Python: "'float' object is not iterable" -> "a number where a
    list or mapping belongs"."""
    import re

    text = str(err)
    found = re.search(r"'(\w+)' object", text)
    kinds = {"float": "a number", "int": "a number", "str": "a string", "bool": "true/false", "NoneType": "null",
             "list": "a list", "dict": "a mapping"}
    if found and found.group(1) in kinds:
        return f"got {kinds[found.group(1)]}"
    return type(err).__name__


def _judge_command_line(text: str, *, where: str, defaults: Defaults) -> Verdict:
    def load(p: str):
        return yamlio.load_yaml(Path(p))

    try:
        args = engines.get("vllm").options.parse_command_line(text, where=where, load_config=load, version=defaults.vllm_version)
        ctx = LaunchContext(source=where, document=None, where=where, name=args.model or "vllm serve", fmt=FORMAT_VLLM_ARGS,
                            base_dir=Path.cwd(), defaults=defaults, version=defaults.vllm_version,
                            release_origin=f"--vllm-version {defaults.vllm_version}" if defaults.vllm_version else None,
                            host_paths=False)
        return _judge(vllm_serve.read(args, ctx), defaults)
    except KvplanError as err:
        return failed_verdict(where, None, "vllm serve", FORMAT_VLLM_ARGS, err)


__all__ = ["collect", "run_check", "document_format", "is_deployment_file", "FORMAT_SHELL", "FORMAT_DOCKERFILE"]
