#!/usr/bin/env python3
"""Dump the `vllm serve` option list of one extracted vLLM source tree, without torch.

Usage:
    python scripts/vllm_option_table.py /tmp/vllm-0.19.0              # the folder that holds vllm/
    python scripts/vllm_option_table.py TREE --json out.json           # also write the full JSON record
    python scripts/vllm_option_table.py TREE --package-data kvplan/data/vllm_options
                                                # write kvplan's table <version>.json (what serve_args reads)
    python scripts/vllm_option_table.py --from-record out.json --package-data DIR   # the same from a record

Regenerating kvplan's tables (kvplan/data/vllm_options/<version>.json, one per studied release), for a release X:
    pip download --no-deps vllm==X -d /tmp/vw && unzip -q /tmp/vw/vllm-X-*.whl 'vllm/*.py' -d /tmp/vllm-X
    python3 scripts/vllm_option_table.py /tmp/vllm-X --package-data kvplan/data/vllm_options
with a Python that has pydantic 2 and msgspec (kvplan itself needs neither; nothing here is imported by kvplan).

Method 1 ("import"): put TREE first on sys.path, install a meta-path finder that hands out a permissive
stub module for every module that cannot be imported (torch, transformers, triton, vllm._C, fastapi, ...)
except the platform probes (so vLLM detects no platform and does not pretend to be a TPU / ROCm box), then
import vLLM's own parser builder and call it on a fresh FlexibleArgumentParser:
  - vllm/entrypoints/openai/cli_args.py make_arg_parser(parser) (every release 0.6 ... 0.33), which adds
    the positional model_tag (0.8+), --config (0.7+ here; earlier in FlexibleArgumentParser only),
    FrontendArgs / the frontend options and AsyncEngineArgs.add_cli_args;
  - releases whose serve subcommand adds more (0.6/0.7: vllm/scripts.py adds `--config` and `model_tag`
    in the `serve` subparser) get them from that subcommand's own code path when it can be called, else
    the two arguments are added by hand and the record says so ("added").
Every argparse action is then read: option strings, nargs, const, type function, choices, default.

Method 2 ("ast"): if the import fails, read engine/arg_utils.py add_cli_args with ast (only literal
add_argument calls are seen; dataclass-derived options are not), and say so in the record.

Which method worked: "import" for all 33 studied releases (0.6.6.post1 ... 0.33.0). 0.6.6.post1 has no
entrypoints/cli/ (the serve subparser lives in vllm/scripts.py main()), so its parser is
cli_args.make_arg_parser plus the `model_tag` positional and `--config` that scripts.py adds (recorded in
"notes"); 0.7.3+ use ServeSubcommand.subparser_init, i.e. exactly the `vllm serve` parser (0.29+ find
make_arg_parser in entrypoints/launchers/cli_args.py if needed). The ast fallback was not needed.
Platform: a fake NVML reports one H100, so CudaPlatform is active; the few platform-dependent choices (e.g.
0.33 --mm-processor-device includes "cuda") are those of a CUDA box.

Needs: Python >= 3.10, pydantic 2 (vLLM's config dataclasses), msgspec (0.11+ v1/serial_utils.py reads real
msgspec struct fields); everything else (torch, transformers, triton, fastapi, openai, ...) is stubbed.

Kinds (kvplan/vllm_args.py _TABLE): flag (BooleanOptionalAction / EnableDisableAction, a --no-x twin),
true (store_true), false (store_false), int, float, str, json (json.loads, union_dict_and_str, a
dataclass / config from_cli parser), hint (human_readable_int), hint_auto (human_readable_int_or_auto),
opt_<kind> (optional_type(...): also takes "None" / ""), list_<kind> (nargs + or *), optarg (nargs ?),
append (action append), config (--config), help / version actions are dropped.
"""

from __future__ import annotations

import abc
import argparse
import ast
import importlib.abc
import importlib.machinery
import importlib.metadata
import json
import os
import sys
import types
import typing
import warnings

# ------------------------------------------------------------------------------------------- stubs

# Modules whose absence vLLM's platform detection relies on: never stubbed (ImportError as usual).
NEVER_STUB = {
    "amdsmi", "libtpu", "tpu_info", "tpu_commons", "tpu_inference", "torch_xla", "jax",
    "intel_extension_for_pytorch", "oneccl_bindings_for_pytorch", "habana_frameworks",
    "transformers_neuronx", "neuronx_distributed", "neuronx_distributed_inference", "vllm_tpu",
    "vllm_ascend", "torch_npu", "mindie", "vllm_hpu", "ray", "pynvml",
    # optional accelerators of tqdm / IPython etc. probed with try/except
    "IPython", "ipywidgets", "google", "colorama", "sphinx", "pytest",
}
STUB_VERSIONS = {"torch": "2.10.0", "transformers": "5.9.0", "triton": "3.5.0",
                 "huggingface_hub": "0.99.0", "tokenizers": "0.22.0", "xgrammar": "0.1.99",
                 "outlines": "0.1.11", "mistral_common": "1.99.0", "numba": "0.61.2", "openai": "1.99.0",
                 "fastapi": "0.120.0", "pydantic": None}
VLLM_VERSION = ""
STUBBED: set[str] = {"torch", "torchvision", "torchaudio", "transformers", "triton"}  # always stubs


class _StubMeta(abc.ABCMeta):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        sub = _stub_class(name, cls.__module__)
        type.__setattr__(cls, name, sub)
        return sub

    def __call__(cls, *args, **kwargs):
        if "_pure_stub" not in cls.__dict__:
            return type.__call__(cls, *args, **kwargs)  # a real class deriving from a stub
        if len(args) == 1 and not kwargs and (callable(args[0]) and not isinstance(args[0], _Stub)):
            return args[0]  # used as a decorator: @torch.compile, @triton.jit
        return type.__call__(cls)

    def __getitem__(cls, item):
        return cls

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0

    def __bool__(cls):
        return True

    def __instancecheck__(cls, obj):
        return type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub):
        return type.__subclasscheck__(cls, sub)

    def _arith(cls, *a):
        return cls

    def register(cls, *args, **kwargs):  # AutoConfig.register("name", Cls): not ABCMeta.register
        return args[-1] if args else None

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _arith
    __floordiv__ = __rfloordiv__ = __mod__ = __pow__ = __neg__ = __and__ = __rand__ = _arith

    def __float__(cls):
        return 1.0

    def __int__(cls):
        return 1

    def __index__(cls):
        return 1

    def __lt__(cls, other):
        return False

    __le__ = __gt__ = __ge__ = __lt__


class _Stub(metaclass=_StubMeta):
    _pure_stub = True
    """An instance: absorbs attribute access, calls, arithmetic; falsy, empty."""

    def __init__(self, *a, **k):
        pass

    def __init_subclass__(cls, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Stub()

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _Stub()

    def __bool__(self):
        return False

    def __len__(self):
        return 0

    def __iter__(self):
        return iter(())

    def __getitem__(self, item):
        return _Stub()

    def __contains__(self, item):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def __int__(self):
        return 0

    def __index__(self):
        return 0

    def __float__(self):
        return 0.0

    def __str__(self):
        return "stub"

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return other is self or isinstance(other, _Stub)  # two stub results compare equal (schemas, ...)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __lt__(self, other):
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def _arith(self, *a):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __floordiv__ = _arith
    __mod__ = __pow__ = __neg__ = __and__ = __rand__ = __rtruediv__ = __rfloordiv__ = _arith

    def __or__(self, other):
        return typing.Any

    __ror__ = __or__

    def __mro_entries__(self, bases):
        return (_Stub,)

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        from pydantic_core import core_schema

        return core_schema.any_schema()


def _stub_class(name: str, module: str) -> type:
    return _StubMeta(name, (_Stub,), {"__module__": module, "__qualname__": name, "_pure_stub": True})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            if name == "__version__":
                return STUB_VERSIONS.get(self.__name__.split(".")[0]) or "99.0.0"
            raise AttributeError(name)
        sub = _stub_class(name, self.__name__)
        setattr(self, name, sub)
        return sub


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        mod = _StubModule(spec.name)
        mod.__path__ = []  # a package: submodules import too
        mod.__file__ = f"<stub {spec.name}>"
        return mod

    def exec_module(self, module):
        STUBBED.add(module.__name__.split(".")[0])


class _StubFinder(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: whatever no real finder found becomes a stub."""

    def find_spec(self, fullname, path=None, target=None):
        root = fullname.split(".")[0]
        if root in NEVER_STUB or root in sys.stdlib_module_names or root.startswith("_"):
            return None
        if root == "vllm":
            # only compiled extensions (vllm._C, vllm._moe_C, ...) and the bundled flash-attn build
            last = fullname.rsplit(".", 1)[-1]
            if not (last.startswith("_") or fullname.startswith("vllm.vllm_flash_attn")):
                return None
        elif "." in fullname and root not in STUBBED:
            return None  # a real package's missing submodule: a genuine ImportError
        if root not in STUBBED and not _imported_by_vllm():
            return None  # an optional import of a real third-party package (Cython in scipy, ...)
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


# vLLM packages replaced by stubs even though their source is there: op registries that need a real torch
FORCE_STUB = ("vllm.ir",)


class _ForceStubFinder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: FORCE_STUB packages become stubs (vllm/ir registers torch custom ops)."""

    def find_spec(self, fullname, path=None, target=None):
        if any(fullname == p or fullname.startswith(p + ".") for p in FORCE_STUB):
            return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)
        return None


def _imported_by_vllm() -> bool:
    f = sys._getframe(2)
    while f is not None:
        name = f.f_globals.get("__name__", "")
        if not name.startswith(("importlib", "_frozen_importlib")) and name != __name__:
            return name.split(".")[0] in ("vllm", "__main__") or name.split(".")[0] in STUBBED
        f = f.f_back
    return False


def _install_stubs() -> None:
    sys.meta_path.append(_StubFinder())
    sys.meta_path.insert(0, _ForceStubFinder())
    real_version = importlib.metadata.version

    def version(name):
        try:
            return real_version(name)
        except importlib.metadata.PackageNotFoundError:
            if name == "vllm" and VLLM_VERSION:
                return VLLM_VERSION
            root = name.replace("-", "_")
            if root in STUBBED or root in STUB_VERSIONS:
                return STUB_VERSIONS.get(root) or "99.0.0"
            raise

    importlib.metadata.version = version
    # a fake NVML reporting one H100: vLLM's platform detection (platforms/__init__.py, every release)
    # then picks CudaPlatform, as on a GPU box; served by a finder so parent packages bind it
    sys.meta_path.insert(0, _FakeNvmlFinder())
    # torch stub details some vLLM modules read at import time
    import torch  # the stub

    import torch.backends.mps  # noqa: F401 - real stub modules, so later imports keep these settings
    import torch.cuda  # noqa: F401
    import torch.library  # noqa: F401
    import torch.version  # noqa: F401

    torch.__version__ = STUB_VERSIONS["torch"]
    torch.version.cuda = "12.8"
    torch.version.hip = None
    torch.cuda.is_available = lambda: False
    torch.cuda.device_count = lambda: 0
    torch.backends.mps.is_available = lambda: False
    # vllm/ir/op.py (0.20+) splits torch.library.infer_schema's string on " -> "
    torch.library.infer_schema = lambda *a, **k: "(Tensor x) -> Tensor"
    # entrypoints/openai/protocol.py asserts torch.iinfo(torch.long) against the int64 limits
    torch.iinfo = lambda dtype=None: types.SimpleNamespace(min=-(2**63), max=2**63 - 1, bits=64)
    torch.finfo = lambda dtype=None: types.SimpleNamespace(min=-448.0, max=448.0, eps=0.125, tiny=2.0**-6,
                                                            bits=8, resolution=1.0)


class _FakeNvmlFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    NAMES = ("pynvml", "vllm.third_party.pynvml")

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.NAMES:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec):
        m = _fake_nvml()
        m.__name__ = spec.name
        return m

    def exec_module(self, module):
        pass


def _fake_nvml() -> types.ModuleType:
    m = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    class _Mem:
        total = 85899345920
        free = 85899345920
        used = 0

    m.NVMLError = NVMLError
    m.NVML_P2P_CAPS_INDEX_NVLINK = 6
    m.NVML_P2P_STATUS_OK = 0
    m.NVML_SUCCESS = 0
    m.NVML_TOPOLOGY_NODE = 40
    m.nvmlInit = lambda *a: None
    m.nvmlShutdown = lambda *a: None
    m.nvmlDeviceGetCount = lambda: 1
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetCudaComputeCapability = lambda h: (9, 0)
    m.nvmlDeviceGetName = lambda h: "NVIDIA H100 80GB HBM3"
    m.nvmlDeviceGetUUID = lambda h: "GPU-00000000-0000-0000-0000-000000000000"
    m.nvmlDeviceGetMemoryInfo = lambda h: _Mem()
    m.nvmlDeviceGetP2PStatus = lambda *a: 0
    m.nvmlSystemGetDriverVersion = lambda: "570.00"
    m.__file__ = "<fake pynvml>/pynvml.py"

    def _any(name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: 0

    m.__getattr__ = _any
    return m


# ------------------------------------------------------------------------------------------- import

def _fn_kind(fn) -> str:
    """The kvplan kind of an argparse `type` function."""
    if fn is None:
        return "str"
    if fn in (int, float, str):
        return fn.__name__
    if fn is json.loads:
        return "json"
    name = getattr(fn, "__name__", type(fn).__name__)
    cells = [c.cell_contents for c in (getattr(fn, "__closure__", None) or ()) if _cell_ok(c)]
    inner = next((c for c in cells if callable(c) and not isinstance(c, type) or c in (int, float, str)), None)
    if name == "_optional_type":
        return "opt_" + _fn_kind(inner)
    if name in ("_parse_type",):
        return _fn_kind(inner)
    if name in ("human_readable_int",):
        return "hint"
    if name in ("human_readable_int_or_auto",):
        return "hint_auto"
    if name in ("union_dict_and_str", "parse_dataclass", "from_cli", "nullable_kvs", "_parse_json"):
        return "json"
    if name in ("nullable_str",):
        return "opt_str"
    if isinstance(fn, type):
        return fn.__name__
    # a normaliser or validator taking the string (--moe-backend's lambda, 0.33 parse_reasoning_parser, ...)
    return "str"


def _cell_ok(c) -> bool:
    try:
        c.cell_contents
        return True
    except ValueError:
        return False


def _jsonable(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if hasattr(v, "value") and hasattr(v, "name") and type(v).__module__ != "builtins":  # an Enum
        return _jsonable(v.value)
    return repr(v)


def _action_record(a: argparse.Action, spellings: list[str] | None = None) -> dict | None:
    """One action; `spellings` = every option string the parser maps to it (hidden ones included: 0.33's
    EnableDisableAction keeps --no-enable-x / --no-disable-x registered but out of option_strings)."""
    cls = type(a).__name__
    if isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
        return None
    strings = list(dict.fromkeys(list(a.option_strings) + list(spellings or [])))
    long = [s for s in strings if s.startswith("--")]
    short = [s for s in strings if not s.startswith("--")]
    neg = []
    if cls in ("BooleanOptionalAction", "EnableDisableAction", "StoreBoolean") or (
            isinstance(a, getattr(argparse, "BooleanOptionalAction", ())) and cls != "_StoreAction"):
        kind = "flag"
        negative = set(getattr(a, "negative_option_strings", ()) or ())
        neg = [s for s in long if s in negative or (not negative and s.startswith("--no-"))]
        if cls == "StoreBoolean":
            neg = []  # --x[=true|false]
        long = [s for s in long if s not in neg]
    elif isinstance(a, argparse._StoreTrueAction):
        kind = "true"
    elif isinstance(a, argparse._StoreFalseAction):
        kind = "false"
    elif isinstance(a, argparse._AppendAction):
        kind = "append"
    elif isinstance(a, argparse._StoreConstAction):
        kind = "const"
    elif isinstance(a, argparse._CountAction):
        kind = "count"
    else:
        kind = _fn_kind(a.type)
        if a.nargs in ("+", "*"):
            kind = "list_" + kind
        elif a.nargs == "?":
            kind = "optarg"
        elif isinstance(a.nargs, int) and a.nargs > 1:
            kind = f"tuple{a.nargs}_" + kind
        # a custom store-like action (e.g. 0.33 DeprecatedLogConfigFileAction) keeps its value kind; the
        # action class is in "action"
    if a.dest == "config" or "--config" in a.option_strings:
        kind = "config"
    if not a.option_strings:
        kind = "positional"
    choices = None
    if a.choices is not None:
        choices = [str(_jsonable(c)) for c in a.choices]
    return {
        "dest": a.dest, "long": long, "short": short, "negative": neg, "kind": kind,
        "action": cls, "type": getattr(a.type, "__name__", None) if a.type else None,
        "nargs": a.nargs if not isinstance(a.nargs, str) or a.nargs in "?*+" else str(a.nargs),
        "choices": choices,
        "metavar": ([str(x) for x in a.metavar] if isinstance(a.metavar, (list, tuple)) else a.metavar),
        "default": _jsonable(a.default) if a.default is not argparse.SUPPRESS else "==SUPPRESS==",
        "deprecated": bool(getattr(a, "deprecated", False)) or "DEPRECATED" in (a.help or "").upper()
        if isinstance(a.help, str) else False,
    }


def dump_by_import(tree: str) -> dict:
    global VLLM_VERSION
    VLLM_VERSION = tree_version(tree)
    sys.path.insert(0, tree)
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
    os.environ.setdefault("VLLM_USE_V1", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.simplefilter("ignore")
    _install_stubs()
    notes = []
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser  # <= 0.10

    parser = None
    try:  # the real `vllm serve` subparser (entrypoints/cli/serve.py, 0.8+)
        from vllm.entrypoints.cli.serve import ServeSubcommand

        top = FlexibleArgumentParser(prog="vllm")
        subparsers = top.add_subparsers(required=False, dest="subparser")
        sub = ServeSubcommand()
        try:
            parser = sub.subparser_init(subparsers)
        except TypeError:
            parser = sub.subparser_init(subparsers)  # same call, kept for clarity
        builder = "entrypoints/cli/serve.py ServeSubcommand.subparser_init"
    except Exception as e:  # noqa: BLE001 - an older tree, or one whose serve module needs more than stubs
        notes.append(f"serve subcommand not usable ({type(e).__name__}: {str(e)[:200]}); "
                     "built from cli_args.make_arg_parser")
        parser = None
    if parser is None:
        import importlib as _il

        for modname in ("vllm.entrypoints.openai.cli_args", "vllm.entrypoints.launchers.cli_args"):
            try:
                cli_args = _il.import_module(modname)
                break
            except ImportError as e:  # moved in 0.29
                notes.append(f"{modname}: {e}")
        parser = FlexibleArgumentParser(prog="vllm serve")
        parser = cli_args.make_arg_parser(parser)
        builder = modname.replace("vllm.", "").replace(".", "/") + ".py make_arg_parser"
    dests = {a.dest for a in parser._actions}
    if "model_tag" not in dests:  # 0.6 / 0.7: added by vllm/scripts.py's serve subparser
        parser.add_argument("model_tag", type=str, help="added by option_table.py (scripts.py serve)")
        notes.append("model_tag added as in vllm/scripts.py (serve subparser)")
    if "config" not in dests:
        parser.add_argument("--config", type=str, default="", help="added by option_table.py (scripts.py serve)")
        notes.append("--config added as in vllm/scripts.py (serve subparser)")
    spellings: dict[int, list[str]] = {}
    for opt, act in parser._option_string_actions.items():
        spellings.setdefault(id(act), []).append(opt)
    actions = [r for r in (_action_record(a, spellings.get(id(a))) for a in parser._actions) if r]
    return {"method": "import", "builder": builder, "stubbed_modules": sorted(STUBBED), "notes": notes,
            "parser_class": type(parser).__mro__[1].__name__ if False else "FlexibleArgumentParser",
            "registered_actions": {getattr(k, "__name__", str(k)): getattr(v, "__name__", repr(v))
                                   for k, v in parser._registries.get("action", {}).items() if k is not None},
            "options": actions}


# ------------------------------------------------------------------------------------------- ast

def dump_by_ast(tree: str) -> dict:
    """Fallback: literal parser.add_argument(...) calls of arg_utils.py and cli_args.py."""

    out = []
    for rel in ("vllm/entrypoints/openai/cli_args.py", "vllm/engine/arg_utils.py"):
        path = os.path.join(tree, rel)
        if not os.path.exists(path):
            continue
        src = ast.parse(open(path).read())
        for node in ast.walk(src):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if not flags:
                    continue
                kw = {k.arg: k.value for k in node.keywords if k.arg}
                action = ast.unparse(kw["action"]) if "action" in kw else None
                typ = ast.unparse(kw["type"]) if "type" in kw else None
                nargs = ast.literal_eval(kw["nargs"]) if "nargs" in kw and isinstance(kw["nargs"], ast.Constant) else None
                choices = None
                if "choices" in kw:
                    try:
                        choices = [str(c) for c in ast.literal_eval(kw["choices"])]
                    except Exception:
                        choices = ast.unparse(kw["choices"])
                kind = {"'store_true'": "true", "'store_false'": "false", "'append'": "append"}.get(action or "")
                if kind is None:
                    if action and "BooleanOptional" in action:
                        kind = "flag"
                    else:
                        kind = {"int": "int", "float": "float", "str": "str", None: "str",
                                "json.loads": "json"}.get(typ, typ)
                        if nargs in ("+", "*"):
                            kind = "list_" + kind
                        elif nargs == "?":
                            kind = "optarg"
                out.append({"dest": flags[0].lstrip("-").replace("-", "_"),
                            "long": [f for f in flags if f.startswith("--")],
                            "short": [f for f in flags if f.startswith("-") and not f.startswith("--")],
                            "negative": [], "kind": kind, "action": action, "type": typ, "nargs": nargs,
                            "choices": choices, "metavar": _literal_metavar(kw.get("metavar")),
                            "default": None, "file": rel})
    return {"method": "ast", "notes": ["literal add_argument calls only; dataclass-derived options missing"],
            "options": out}


def _literal_metavar(node: ast.expr | None) -> object:
    """An add_argument call's metavar as the parsed table writes it (a tuple as a list of strings), or its source."""
    if node is None:
        return None
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)
    return [str(x) for x in value] if isinstance(value, (list, tuple)) else value


# ------------------------------------------------------------------------------------------- output

def table_lines(record: dict) -> list[str]:
    """kvplan's _TABLE line format: kind  flags...  [choices=a|b]."""
    lines = []
    for o in record["options"]:
        if o["kind"] == "positional":
            continue
        flags = o["long"] + o["short"] + ["!" + n for n in o["negative"]]
        line = f"    {o['kind']:<10} {' '.join(flags)}"
        if o["choices"] and o["kind"] != "flag":
            line += "  choices=" + "|".join(o["choices"])
        lines.append(line)
    return lines


def tree_version(tree: str) -> str:
    import re

    for rel in ("vllm/_version.py", "vllm/version.py"):
        p = os.path.join(tree, rel)
        if os.path.exists(p):
            m = re.search(r"^__version__\s*=\s*(?:version\s*=\s*)?['\"]([^'\"]+)['\"]", open(p).read(), re.M)
            if m:
                return m.group(1)
    return os.path.basename(tree.rstrip("/")).replace("vllm-", "")


def package_table(record: dict) -> dict:
    """The compact table kvplan ships (kvplan/data/vllm_options/<version>.json): per option its dest, kvplan kind,
    positive and negative spellings (EnableDisableAction's --disable-x for --enable-x among the negatives), choices,
    default, and the action class for switches. Only what kvplan's parser needs, so the package stays small."""
    options = []
    for o in record["options"]:
        if o["kind"] == "positional":
            continue
        entry = {"dest": o["dest"], "kind": o["kind"], "flags": o["long"] + o["short"]}
        if o["negative"]:
            entry["negative"] = o["negative"]
        if o["choices"] is not None and o["kind"] != "flag":
            entry["choices"] = [str(c) for c in o["choices"]]
        elif isinstance(o.get("metavar"), list) and o["kind"] != "flag":
            # 0.33 types some options `Literal | str` (any string parses) and lists the values in the metavar;
            # its config dataclass refuses the others at start-up (config/cache.py CacheConfig: CacheDType)
            entry["choices"] = [str(c) for c in o["metavar"]]
            entry["choices_checked_by"] = "config"
        if o["default"] not in (None, "==SUPPRESS=="):
            entry["default"] = o["default"]
        if o["kind"] == "flag":
            entry["action"] = o["action"]
        if o.get("deprecated"):
            entry["deprecated"] = True
        options.append(entry)
    return {"vllm": record["version"], "method": record["method"],
            "generated_by": "scripts/vllm_option_table.py (vLLM's own `vllm serve` parser, torch stubbed)",
            "options": options}


def write_package_table(record: dict, folder: str) -> str:
    path = os.path.join(folder, f"{record['version']}.json")
    text = json.dumps(package_table(record), indent=0, sort_keys=False, separators=(",", ":")) + "\n"
    with open(path, "w") as f:
        f.write(text)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", nargs="?", help="folder holding the extracted vllm/ package")
    ap.add_argument("--json", help="write the record here")
    ap.add_argument("--table", action="store_true", help="print kvplan _TABLE lines")
    ap.add_argument("--method", choices=["auto", "import", "ast"], default="auto")
    ap.add_argument("--package-data", metavar="DIR", help="write kvplan's compact table DIR/<version>.json")
    ap.add_argument("--from-record", metavar="JSON", help="use a record written by --json instead of a tree")
    args = ap.parse_args(argv)
    if args.from_record:
        with open(args.from_record) as f:
            record = json.load(f)
        if args.package_data:
            print(write_package_table(record, args.package_data), file=sys.stderr)
        return 0
    if not args.tree:
        ap.error("give a vLLM tree or --from-record")
    tree = os.path.abspath(args.tree)
    record = None
    error = None
    if args.method in ("auto", "import"):
        try:
            record = dump_by_import(tree)
        except Exception as e:  # noqa: BLE001
            import traceback

            error = "".join(traceback.format_exception(e))[-3000:]
            if args.method == "import":
                print(error, file=sys.stderr)
                return 1
    if record is None:
        record = dump_by_ast(tree)
        record["import_error"] = error
    record["version"] = tree_version(tree)
    record["count"] = sum(1 for o in record["options"] if o["kind"] != "positional")
    if args.json:
        text = json.dumps(record, indent=1)  # serialise first: no truncated file on error
        with open(args.json, "w") as f:
            f.write(text)
    if args.table:
        print("\n".join(table_lines(record)))
    if args.package_data:
        print(write_package_table(record, args.package_data), file=sys.stderr)
    print(f"{record['version']}: {record['count']} options by {record['method']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
