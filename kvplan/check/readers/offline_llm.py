"""A Python program that builds a vLLM engine in-process: the offline class, `vllm.LLM(...)` (notebooks, batch jobs,
evaluation scripts, RL rollouts), or `(Async)EngineArgs(...)` handed to `X.from_engine_args` (AsyncLLM,
AsyncLLMEngine, LLMEngine: services that stream): judged as that launch at its entry point. vLLM keys its scheduler
defaults by the entry point (engine/arg_utils.py get_batch_defaults: UsageContext.LLM_CLASS gets 16384 batched
tokens where `vllm serve` gets 8192; ENGINE_CONTEXT has no row and gets SchedulerConfig's 2048 / 128), so the
deployment carries --engine-option entry_point=offline or =engine.

The program is read, never run (Python's `ast`): each call's arguments must be literals, or names bound once
at module level to a literal (`MODEL = "org/name"`); the first positional argument, else `model=`, is the model. The
keyword arguments are EngineArgs fields, which are `vllm serve` options of the same name (vllm/engine/arg_utils.py
EngineArgs: the parser's dests), read through the vLLM engine's option table of the judged release. Anything else is
cannot judge, naming it: a value the program computes (a variable, an f-string, `**kwargs`), a keyword that is not a
`vllm serve` option (an LLM-class argument such as `hf_token`, or another fork's), a second positional argument.
A program that is a BentoML, Modal or Ray Serve application stays with programs.py (its GPU and launch are the
framework's)."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any

from kvplan import engines
from kvplan.check.deployment import Defaults, LaunchContext
from kvplan.check.items import Failure
from kvplan.check.readers import vllm_serve
from kvplan.check.report import FORMAT_VLLM_OFFLINE
from kvplan.core.errors import InputError, KvplanError, UnsupportedError

# the import name of vLLM's Python API, whose LLM class the program builds (a Python package, matched in imports)
_PYTHON_PACKAGE = "vllm"


# the classes a program builds a vLLM engine from, and the entry point whose defaults each gets: LLM(...) the offline
# class (UsageContext.LLM_CLASS); EngineArgs(...) / AsyncEngineArgs(...) handed to X.from_engine_args (AsyncLLM,
# AsyncLLMEngine, LLMEngine: UsageContext.ENGINE_CONTEXT), releases.ENTRY_* by name
_CLASSES = {"LLM": "offline", "EngineArgs": "engine", "AsyncEngineArgs": "engine"}
_ARG_MODULES = (_PYTHON_PACKAGE, _PYTHON_PACKAGE + ".engine.arg_utils")


def _llm_names(tree: ast.AST) -> tuple[dict[str, str], set[str]]:
    """The names the program binds to vLLM's engine classes (`from vllm import LLM [as X]`, `from
    vllm.engine.arg_utils import AsyncEngineArgs`), with the class each is, and to the vllm module (`import vllm [as
    v]`: v.LLM), anywhere in the file (imports inside functions included)."""
    direct: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in _ARG_MODULES:
            direct.update({a.asname or a.name: a.name for a in node.names if a.name in _CLASSES})
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == _PYTHON_PACKAGE}
    return direct, modules


def _calls(tree: ast.AST, direct: dict[str, str], modules: set[str]) -> list[tuple[ast.Call, str]]:
    """Each call that builds an engine, with its class (_CLASSES: the entry point); EngineArgs(...) counts only where
    the program also calls some X.from_engine_args (else the arguments may feed a config, not an engine)."""
    def cls(func: ast.expr) -> str | None:
        if isinstance(func, ast.Name):
            return direct.get(func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in modules:
            return func.attr if func.attr in _CLASSES else None
        return None

    builds = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "from_engine_args"
                 for n in ast.walk(tree))
    out: list[tuple[ast.Call, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = cls(node.func)
        if name is not None and (_CLASSES[name] == "offline" or builds):
            out.append((node, name))
    return out


def _constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level names bound once, to a literal: what an LLM(...) argument may name."""
    seen: dict[str, int] = {}
    values: dict[str, Any] = {}
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            if isinstance(t, ast.Name):
                seen[t.id] = seen.get(t.id, 0) + 1
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                continue
    return {k: v for k, v in values.items() if seen.get(k) == 1}


def _value(node: ast.expr, constants: dict[str, Any], *, what: str, where: str) -> Any:
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        raise UnsupportedError(f"{what} is computed by the program ({ast.unparse(node)[:60]}): kvplan reads programs, "
                               "it does not run them", where=where,
                               hint="write the value in the call, or judge the launch with --vllm-args") from None


def _argv(call: ast.Call, constants: dict[str, Any], *, where: str, version: str | None, cls: str = "LLM") -> list[str]:
    """The call as the `vllm serve` words vLLM's EngineArgs fields spell (--model first)."""
    if len(call.args) > 1 or any(isinstance(a, ast.Starred) for a in call.args):
        raise UnsupportedError(f"{cls}(...) with more than the model as positional arguments is not read", where=where,
                               hint="name each argument (model=..., tensor_parallel_size=...)")
    options = engines.get("vllm").options.options(version) if version else engines.get("vllm").options.options()
    words: list[str] = []
    given = [("model", a) for a in call.args]
    for kw in call.keywords:
        if kw.arg is None:
            raise UnsupportedError(f"{cls}(**{ast.unparse(kw.value)[:40]}): the options are built by the program",
                                   where=where, hint="write each option in the call, or judge it with --vllm-args")
        given.append((kw.arg, kw.value))
    for name, node in given:
        value = _value(node, constants, what=f"{cls}({name}=...)", where=where)
        opt = options.get(name)
        if opt is None:
            raise UnsupportedError(f"{cls}({name}=...) is not a `vllm serve` option of this release, which kvplan reads "
                                   f"{cls}'s arguments as (an argument of {cls} only, or another build's)",
                                   where=f"{where}: {name}", hint="judge the launch with --vllm-args")
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            negative = "--no-" + name.replace("_", "-")
            if value:
                words.append(flag)
            elif negative in opt.flags or "!" + negative in opt.flags:
                words.append(negative)
            elif opt.kind not in ("flag", "true"):  # a switch off by default: leaving it out is the same
                raise UnsupportedError(f"{cls}({name}=False): vLLM {version or 'this release'} has no --no- form of it",
                                       where=f"{where}: {name}", hint="judge the launch with --vllm-args")
        elif value is None:
            continue  # None is EngineArgs' "not set": the default
        elif isinstance(value, (dict, list)) and not opt.kind.startswith("list_"):
            words += [flag, json.dumps(value)]
        elif isinstance(value, (list, tuple)):
            words += [flag, *(str(v) for v in value)]
        else:
            words += [flag, str(value)]
    return words


def read(text: str, path: Path, *, source: str, where: str, defaults: Defaults) -> list | None:
    """The deployments of a program's vllm.LLM(...) calls, or None: not such a program (programs.py reads it)."""
    if not any(name in text for name in _CLASSES) or _PYTHON_PACKAGE not in text:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None  # not Python kvplan can parse: programs.py names what it is
    direct, modules = _llm_names(tree)
    calls = _calls(tree, direct, modules)
    if not calls:
        return None
    constants = _constants(tree)
    items: list = []
    for call, cls in calls:
        at = f"{where}:{call.lineno}"
        try:
            items.append(_deployment(call, cls, constants, path, source=source, where=at, defaults=defaults))
        except KvplanError as err:
            items.append(Failure(source, None, path.stem, FORMAT_VLLM_OFFLINE, err))
    return items


_ENTRY_NOTES = {
    "offline": "vllm.LLM(...) (the offline class): vLLM's offline scheduler defaults apply (engine/arg_utils.py "
               "UsageContext.LLM_CLASS)",
    "engine": "an engine built from (Async)EngineArgs(...) with from_engine_args: vLLM's ENGINE_CONTEXT defaults apply "
              "(SchedulerConfig's 2048 batched tokens and 128 sequences)",
}


def _deployment(call: ast.Call, cls: str, constants: dict[str, Any], path: Path, *, source: str, where: str,
                defaults: Defaults):
    version = defaults.vllm_version
    entry = _CLASSES[cls]
    words = _argv(call, constants, where=where, version=version, cls=cls)
    if "--model" not in words:
        raise InputError(f"{cls}(...) names no model", where=where, hint=f"{cls}(model=\"org/name\", ...)")
    vllm = engines.get("vllm")
    args = vllm_serve.refused_elsewhere(
        LaunchContext(source=source, document=None, where=where, name=path.stem, fmt=FORMAT_VLLM_OFFLINE,
                      base_dir=path.parent, defaults=defaults, version=version),
        lambda v: vllm.options.parse_argv(words, where=where, version=v, positional=False))
    ctx = LaunchContext(source=source, document=None, where=where, name=path.stem, fmt=FORMAT_VLLM_OFFLINE,
                        base_dir=path.parent, defaults=defaults, version=version,
                        release_origin=f"--vllm-version {version}" if version else None, flag_style=False,
                        key=lambda k: k,
                        notes=(_ENTRY_NOTES[entry],))
    dep = vllm_serve.read(args, ctx)
    options = tuple(dep.request.engine_options or ()) + ((vllm.releases.ENTRY_POINT_OPTION, entry),)
    return dataclasses.replace(dep, request=dataclasses.replace(dep.request, engine_options=options))
