"""`kvplan check`: find the deployment files, give each document to the reader of its format, judge what they
return, and make the report. A bad file or document is reported and the others are still judged.

Pure of typer and rich: paths and options in, a CheckReport out."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from kvplan.check import judge as judging
from kvplan.check.deployment import CheckOptions, Defaults, defaults as validate, with_command_line
from kvplan.check.readers import kvplan_yaml, vllm_serve
from kvplan.check.report import (FORMAT_KVPLAN, FORMAT_VLLM, FORMAT_VLLM_ARGS, CheckReport, Verdict, failed_verdict,
                                 make_report)
from kvplan.core import files
from kvplan.core.errors import InputError, KvplanError


def collect(paths) -> list[tuple[str, Path | None, InputError | None]]:
    """Each path given, folders expanded to their *.yaml / *.yml files, any case (sorted, hidden ones skipped).

    A YAML name in a folder that is not a regular file (a FIFO, a socket, a symlink to a device or to nothing) is
    reported as invalid, not skipped: a CI gate that silently reads less than it was given passes too easily."""
    out: list[tuple[str, Path | None, InputError | None]] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(
                (p for p in path.rglob("*") if p.suffix.lower() in (".yaml", ".yml") and not p.is_dir()
                 and not any(part.startswith(".") for part in p.relative_to(path).parts)),
                key=lambda p: p.relative_to(path).as_posix())
            if not found:
                out.append((str(given), None, InputError("holds no *.yaml or *.yml files", where=str(given))))
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
    from kvplan.core import yamlio

    defaults = validate(options)
    verdicts: list[Verdict] = []
    for display, path, problem in collect(paths):
        if problem is not None:
            verdicts.append(failed_verdict(display, None, display, None, problem))
            continue
        try:
            docs = yamlio.load_yaml_documents(path)
        except KvplanError as err:
            verdicts.append(failed_verdict(display, None, Path(display).stem, None, err))
            continue
        many = len(docs) > 1
        for index, doc in enumerate(docs, start=1):
            document = index if many else None
            where = f"{display}#{index}" if many else display
            verdicts.append(_judge_document(doc, display=display, path=path, document=document, where=where,
                                            many=many, defaults=defaults))
    for i, text in enumerate(vllm_command_lines, start=1):
        where = "--vllm-args" if len(vllm_command_lines) == 1 else f"--vllm-args#{i}"
        verdicts.append(_judge_command_line(text, where=where, defaults=defaults))
    if not verdicts:
        raise InputError("nothing to check", where="CONFIG", hint="name deployment files or folders, or give --vllm-args")
    return make_report(verdicts, defaults.vllm_version)


def document_format(doc: Any, *, where: str) -> str:
    if not isinstance(doc, Mapping):
        raise InputError(f"a deployment is a YAML mapping of key: value, got {type(doc).__name__}", where=where)
    keys = {str(k).replace("-", "_") for k in doc}
    return FORMAT_KVPLAN if keys & kvplan_yaml.KVPLAN_ONLY else FORMAT_VLLM


def _judge_document(doc, *, display, path, document, where, many, defaults: Defaults) -> Verdict:
    from kvplan.engines.vllm import serve_args

    name = Path(display).stem if not many else f"{Path(display).stem}#{document}"
    fmt = None
    try:
        fmt = document_format(doc, where=where)
        if fmt == FORMAT_KVPLAN:
            dep = kvplan_yaml.read(doc, source=display, document=document, where=where, base_dir=path.parent,
                                   defaults=defaults)
        else:
            if many:
                raise InputError("vLLM reads one YAML document per --config file", where=where,
                                 hint="split the file, or add `engine: vllm` and a GPU to make it a kvplan deployment")
            args = serve_args.parse_config(doc, where=where, version=defaults.vllm_version)
            dep = vllm_serve.read(args, source=display, document=document, where=where, base_dir=path.parent,
                                  defaults=defaults, fmt=FORMAT_VLLM, default_name=name)
        return judging.judge(with_command_line(dep, defaults), optimistic=defaults.optimistic)
    except KvplanError as err:
        if isinstance(doc, Mapping) and isinstance(doc.get("name"), str) and fmt == FORMAT_KVPLAN:
            name = doc["name"]
        return failed_verdict(display, document, name, fmt, err)


def _judge_command_line(text: str, *, where: str, defaults: Defaults) -> Verdict:
    from kvplan.core import yamlio
    from kvplan.engines.vllm import serve_args

    def load(p: str):
        return yamlio.load_yaml(Path(p))

    try:
        args = serve_args.parse_command_line(text, where=where, load_config=load, version=defaults.vllm_version)
        dep = vllm_serve.read(args, source=where, document=None, where=where, base_dir=Path.cwd(), defaults=defaults,
                              fmt=FORMAT_VLLM_ARGS, default_name=args.model or "vllm serve")
        return judging.judge(with_command_line(dep, defaults), optimistic=defaults.optimistic)
    except KvplanError as err:
        return failed_verdict(where, None, "vllm serve", FORMAT_VLLM_ARGS, err)
