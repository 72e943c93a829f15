"""The package's layering, checked on its own import graph (docs/architecture.md):

- no import cycles between kvplan's modules (imports inside functions count: they still tie the modules);
- nothing outside kvplan/cli/ imports kvplan.cli;
- below kvplan/cli/ nothing imports typer or rich; only kvplan/probe/ imports torch;
- every package under kvplan/ is listed in pyproject.toml (setuptools lists them by hand: one left out is missing
  from the wheel).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "kvplan"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """Every module (of any package) the file imports, at any depth of the code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            for alias in node.names:  # `from kvplan.engines import vllm` imports the submodule
                if f"{mod}.{alias.name}" in MODULES:
                    out.add(f"{mod}.{alias.name}")
    return out


def _internal_graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        deps = set()
        for imported in _imports(path):
            # importing a.b.c runs a and a.b first: but a package's __init__ importing its children is not a cycle
            # we care about, so only the module named itself is an edge
            if imported in MODULES and imported != name:
                deps.add(imported)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def _package_parent_edge(a: str, b: str) -> bool:
    """a package's __init__ re-exporting its own submodule (kvplan.engines.vllm -> kvplan.engines.vllm.engine), and
    the submodule importing a sibling through the package: not a layering cycle."""
    return b.startswith(a + ".") or a.startswith(b + ".")


def test_no_import_cycles():
    graph = _internal_graph()
    pruned = {v: {w for w in ws if not _package_parent_edge(v, w)} for v, ws in graph.items()}
    assert _cycles(pruned) == []


def test_nothing_outside_the_cli_imports_it():
    offenders = [name for name, path in MODULES.items()
                 if not name.startswith("kvplan.cli") and name != "kvplan.__main__" and any(i == "kvplan.cli" or i.startswith("kvplan.cli.")
                                                               for i in _imports(path))]
    assert offenders == []


def test_typer_rich_only_in_the_cli_and_torch_only_in_the_probe():
    bad = []
    for name, path in MODULES.items():
        roots = {i.split(".")[0] for i in _imports(path)}
        if not name.startswith("kvplan.cli") and roots & {"typer", "rich"}:
            bad.append((name, sorted(roots & {"typer", "rich"})))
        if not name.startswith("kvplan.probe") and "torch" in roots:
            bad.append((name, ["torch"]))
    assert bad == []


def test_every_package_is_in_the_wheel():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    packages = {_module_name(p) for p in PACKAGE.rglob("__init__.py")}
    packages = {p for p in packages if not p.startswith("kvplan.model_specs")}
    assert packages - listed == set()
