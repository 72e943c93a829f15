"""Mutation testing: does the suite notice a wrong number? A small runner of our own (mutmut rewrites the tree in
place and cannot share it with other engineers' runs; this one mutates a private copy).

For each target module, every mutant changes one thing in the code: an arithmetic operator (+ -, * //, // *),
a comparison (< <=, > >=, == !=), an integer constant (n -> n + 1), a boolean (True False), a boolean operator
(and or), min <-> max, or drops a `not`. Each mutant is written into a private copy of the package and the tests
that exercise the module are run against it (-x, with a time limit); a mutant is *killed* when they fail.
Docstrings, `__all__`, error messages, decorators (`@dataclass(frozen=True)`) and declared defaults (a parameter's or
a dataclass field's default: every caller in kvplan passes the value) are never mutated.

    python scripts/mutate.py kvplan/core/cache.py kvplan/core/layers.py [--tests tests/test_cache.py ...]
                             [--jobs 2] [--timeout 120] [--json out.json] [--limit N]

Prints every surviving mutant (file:line, the change) and the score; --json writes them all.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_SWAP_BIN = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult, ast.Div: ast.Mult,
             ast.Mod: ast.FloorDiv}
_SWAP_CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}


@dataclass(frozen=True)
class Mutant:
    module: str
    index: int
    line: int
    change: str
    killed: bool | None = None
    detail: str = ""


class _Mutator(ast.NodeTransformer):
    """Applies the `target`-th possible mutation (counting in visiting order); with target None, only counts."""

    def __init__(self, target: int | None):
        self.target, self.count, self.applied = target, 0, None
        self._skip_strings = 0

    def _hit(self, node, text: str) -> bool:
        i = self.count
        self.count += 1
        if i == self.target:
            self.applied = (getattr(node, "lineno", 0), text)
            return True
        return False

    def visit_Expr(self, node):  # docstrings and bare strings
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return node
        return self.generic_visit(node)

    def visit_Assign(self, node):
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return node
        return self.generic_visit(node)

    def visit_Raise(self, node):  # the message of an error is prose, not a number
        return node

    def visit_arguments(self, node):  # declared defaults
        return node

    def visit_FunctionDef(self, node):
        node.body = [self.visit(n) for n in node.body]
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        body = []
        for n in node.body:
            if isinstance(n, ast.AnnAssign):  # a dataclass field and its default
                body.append(n)
            else:
                body.append(self.visit(n))
        node.body = body
        return node

    def visit_JoinedStr(self, node):
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        swap = _SWAP_BIN.get(type(node.op))
        if swap and self._hit(node, f"{type(node.op).__name__} -> {swap.__name__}"):
            node.op = swap()
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        for k, op in enumerate(node.ops):
            swap = _SWAP_CMP.get(type(op))
            if swap and self._hit(node, f"{type(op).__name__} -> {swap.__name__}"):
                node.ops[k] = swap()
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        swap = ast.Or if isinstance(node.op, ast.And) else ast.And
        if self._hit(node, f"{type(node.op).__name__} -> {swap.__name__}"):
            node.op = swap()
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and self._hit(node, "drop not"):
            return node.operand
        return node

    def visit_Constant(self, node):
        value = node.value
        if isinstance(value, bool):
            if self._hit(node, f"{value} -> {not value}"):
                return ast.copy_location(ast.Constant(not value), node)
        elif isinstance(value, int) and abs(value) < 2**62:
            if self._hit(node, f"{value} -> {value + 1}"):
                return ast.copy_location(ast.Constant(value + 1), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            other = "max" if node.func.id == "min" else "min"
            if self._hit(node, f"{node.func.id} -> {other}"):
                node.func = ast.copy_location(ast.Name(other, ast.Load()), node.func)
        return node


def count_mutants(source: str) -> int:
    m = _Mutator(None)
    m.visit(ast.parse(source))
    return m.count


def mutant_source(source: str, index: int) -> tuple[str, int, str]:
    m = _Mutator(index)
    tree = m.visit(ast.parse(source))
    ast.fix_missing_locations(tree)
    return ast.unparse(tree), m.applied[0], m.applied[1]


def _tests_for(module: Path) -> list[str]:
    """Test files that name the module (import it or its dotted path) — the tests that exercise it directly."""
    dotted = ".".join(module.relative_to(ROOT).with_suffix("").parts)
    short = dotted.rsplit(".", 1)[-1]
    found = []
    for t in sorted((ROOT / "tests").glob("test_*.py")):
        text = t.read_text(encoding="utf-8")
        if dotted in text or f"import {short}" in text or f" {short}," in text:
            found.append(str(t.relative_to(ROOT)))
    return found


def _run_one(args) -> Mutant:
    module, index, tests, timeout, workdir = args
    source = (ROOT / module).read_text(encoding="utf-8")
    code, line, change = mutant_source(source, index)
    tree = Path(workdir) / f"m{index}"
    shutil.copytree(ROOT / "kvplan", tree / "kvplan", ignore=shutil.ignore_patterns("__pycache__"))
    for extra in ("model_specs", "pyproject.toml"):
        src = ROOT / extra
        (tree / extra).symlink_to(src)
    os.symlink(ROOT / "tests", tree / "tests")
    os.symlink(ROOT / "examples", tree / "examples")
    os.symlink(ROOT / "scripts", tree / "scripts")
    os.symlink(ROOT / "docs", tree / "docs")
    (tree / module).write_text(code, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    try:
        run = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                             cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
        if run.returncode in (4, 5):  # pytest's usage error / no tests collected: the run judged nothing
            raise SystemExit(f"error: pytest {' '.join(tests)} — exit {run.returncode}, nothing was tested "
                             "(check the --tests paths)")
        # 1: a test failed; 2: collection failed (the mutant broke an import): both notice the mutant
        killed, detail = run.returncode != 0, (run.stdout.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired:
        killed, detail = True, "timeout"
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    return Mutant(module, index, line, change, killed, detail)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="+")
    parser.add_argument("--tests", nargs="*", help="test files to run (default: those naming the module)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=180)
    parser.add_argument("--limit", type=int, default=None, help="at most N mutants per module (evenly spread)")
    parser.add_argument("--json", dest="json_out")
    opts = parser.parse_args()
    work = tempfile.mkdtemp(prefix="kvplan-mutants-")
    jobs = []
    for module in opts.modules:
        path = (ROOT / module).resolve()
        rel = str(path.relative_to(ROOT))
        n = count_mutants(path.read_text(encoding="utf-8"))
        indices = list(range(n))
        if opts.limit and n > opts.limit:
            step = n / opts.limit
            indices = sorted({int(i * step) for i in range(opts.limit)})
        tests = opts.tests or _tests_for(path)
        missing = [t for t in tests if not (ROOT / t).is_file()]
        if missing:  # pytest would exit 4 on every mutant, and each would count as killed
            parser.error(f"no such test file: {', '.join(missing)}")
        print(f"{rel}: {n} mutants, running {len(indices)} against {len(tests)} test files", flush=True)
        jobs += [(rel, i, tests, opts.timeout, work) for i in indices]
    results: list[Mutant] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        for result in pool.map(_run_one, jobs):
            results.append(result)
            if not result.killed:
                print(f"survived  {result.module}:{result.line}  {result.change}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    killed = sum(1 for r in results if r.killed)
    print(f"\n{killed} of {len(results)} mutants killed ({killed / max(len(results), 1) * 100:.1f}%)")
    for module in opts.modules:
        rel = str((ROOT / module).resolve().relative_to(ROOT))
        mine = [r for r in results if r.module == rel]
        k = sum(1 for r in mine if r.killed)
        print(f"  {rel}: {k}/{len(mine)}")
    if opts.json_out:
        Path(opts.json_out).write_text(json.dumps([asdict(r) for r in results], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
