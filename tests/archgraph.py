"""kvplan's import graph read from its source (tests/test_architecture.py, scripts/architecture_counts.py).

Every edge the code has is one: module-level imports, imports inside functions and under `if TYPE_CHECKING:` (an
annotation-only import still ties the two modules' meanings). `from a.b import c` is an edge to submodule a.b.c when
c is one, and to a.b when c is a name a.b defines. Importing a.b.c also runs the packages a and a.b first: those are
edges too (a package's __init__ that imports an engine ties every importer of its submodules to that engine), except
to the importing module's own packages, which have started before it runs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "kvplan"
ENGINE_NAMES = ("static", "vllm", "sglang", "trtllm")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@dataclass(frozen=True)
class Edge:
    target: str  # a module name (any package's)
    line: int
    in_function: bool


def _in_function(tree: ast.AST) -> set[int]:
    """ids of the import nodes written inside a function body."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return inside


def imports(path: Path) -> list[Edge]:
    """Every module (of any package) the file imports, at any depth of the code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    inside = _in_function(tree)
    out = []
    for node in ast.walk(tree):
        lazy = id(node) in inside
        if isinstance(node, ast.Import):
            out += [Edge(alias.name, node.lineno, lazy) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # `from kvplan.engines import vllm` imports the submodule; the package is an edge when a name is its own
            subs = [f"{mod}.{alias.name}" for alias in node.names if f"{mod}.{alias.name}" in MODULES]
            if len(subs) < len(node.names):
                out.append(Edge(mod, node.lineno, lazy))
            out += [Edge(sub, node.lineno, lazy) for sub in subs]
    return out


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_edges() -> dict[str, list[Edge]]:
    """module -> its edges to other kvplan modules, the packages each import runs first included."""
    out = {}
    for name, path in MODULES.items():
        mine = set(_ancestors(name)) | {name}
        edges = []
        for e in imports(path):
            edges += [Edge(p, e.line, e.in_function) for p in _ancestors(e.target) if p not in mine]
            edges.append(e)
        out[name] = [e for e in edges if e.target in MODULES and e.target != name]
    return out


def engine_of(module: str) -> str | None:
    """The engine package (or static module) a module belongs to, None for engine-neutral code."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["kvplan", "engines"] and parts[2] in ENGINE_NAMES:
        return parts[2]
    return None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return out


def engine_name_comparisons(tree: ast.AST) -> list[int]:
    """Line numbers of comparisons with an engine name (== "vllm", in ("sglang", "trtllm"), ...)."""

    def names_engine(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in ENGINE_NAMES
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(names_engine(e) for e in node.elts)
        return False

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(names_engine(n) for n in [node.left, *node.comparators]):
            lines.append(node.lineno)
        elif isinstance(node, ast.MatchValue) and names_engine(node.value):
            lines.append(node.lineno)
    return lines


def long_functions(tree: ast.AST, limit: int = 80) -> list[tuple[str, int]]:
    """(name, lines) of every function longer than `limit` lines, nested ones included."""
    return [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > limit]


# the layer kinds (kvplan/core/layers.py: one class each, KINDS its table) and the names that hold them; "none" is
# left out of the spellings: it is also the word of every other `none` a file compares with
_KIND_NAMES = {"FULL", "SLIDING", "CHUNKED", "MLA", "STATE", "NONE", "COMPRESSED", "COMPRESSED_INDEXED", "INDEXED_MLA",
               "INDEXED_FULL", "HEADED_KINDS", "WINDOWED_KINDS", "LAYER_KINDS", "ENGINE_BASE_KINDS"}


def _kind_spellings() -> set[str]:
    from kvplan.core.layers import LAYER_KINDS

    return set(LAYER_KINDS) - {"none"}


def kind_comparisons(tree: ast.AST) -> list[int]:
    """Line numbers of comparisons of a layer kind (`layer.kind == "mla"`, `g.kind in (FULL, SLIDING)`, `kind in
    HEADED_KINDS`): a comparison with a kind's spelling or name whose other side reads a `kind`."""
    spellings = _kind_spellings()

    def names_kind(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in spellings
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(names_kind(e) for e in node.elts)
        return names_kind_constant(node)

    def names_kind_constant(node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in _KIND_NAMES
        if isinstance(node, ast.Attribute):
            return node.attr in _KIND_NAMES
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(names_kind_constant(e) for e in node.elts)
        return False

    def reads_kind(node: ast.AST) -> bool:
        return any((isinstance(n, ast.Name) and "kind" in n.id.lower()) or
                   (isinstance(n, ast.Attribute) and "kind" in n.attr.lower()) for n in ast.walk(node))

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            # a kind's constant (FULL, MLA ...) compared with anything is a kind comparison; a bare spelling ("full")
            # only where the other side reads a `kind` (the same words name CUDA-graph modes and quantization schemes)
            if any(names_kind_constant(o) for o in operands) or (
                    any(names_kind(o) for o in operands) and any(reads_kind(o) for o in operands)):
                lines.append(node.lineno)
    return lines


def may_compare_kinds(module: str) -> bool:
    """Where a layer-kind comparison belongs (issue 24): the kinds' own module, an engine's table of kind -> page or
    pool rule (engines/<engine>/specs.py), and presentation (cli/, engines/<engine>/present.py)."""
    parts = module.split(".")
    return (module == "kvplan.core.layers" or module.startswith("kvplan.cli.")
            or (engine_of(module) is not None and parts[-1] in ("specs", "present")))
