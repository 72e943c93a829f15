"""The package's layering, checked on its own import graph (docs/architecture.md):

- no import cycles between kvplan's modules (imports inside functions count: they still tie the modules);
- nothing outside kvplan/cli/ imports kvplan.cli;
- below kvplan/cli/ nothing imports typer or rich; only kvplan/probe/ imports torch;
- every package under kvplan/ is listed in pyproject.toml (setuptools lists them by hand: one left out is missing
  from the wheel).
"""

from __future__ import annotations

import sys
from pathlib import Path

import ast

from archgraph import (MODULES, cycles, engine_name_comparisons, engine_of, import_edges, imports, kind_comparisons,
                       long_functions, may_compare_kinds)

if sys.version_info >= (3, 11):
    import tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "kvplan"


def _imports(path: Path) -> set[str]:
    return {e.target for e in imports(path)}


def test_no_import_cycles():
    """Every edge counts (tests/archgraph.py): imports inside functions and the packages an import runs first."""
    graph = {name: {e.target for e in edges} for name, edges in import_edges().items()}
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_through_a_package():
    """The walk is not blind to the cycle issue 24 found: a module importing an engine's submodule runs the
    engine's package, whose __init__ imports back the registry that imports the module."""
    graph = {"kvplan.engines": {"kvplan.engines.request"},
             "kvplan.engines.request": {"kvplan.engines.vllm.launch", "kvplan.engines.vllm"},
             "kvplan.engines.vllm": {"kvplan.engines"}, "kvplan.engines.vllm.launch": set()}
    assert cycles(graph) == [["kvplan.engines", "kvplan.engines.request", "kvplan.engines.vllm"]]


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
    packages = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    packages = {p for p in packages if not p.startswith("kvplan.model_specs")}
    assert packages - listed == set()


def test_no_engine_imports_another():
    """Engine-neutral physics the engines share lives in kvplan/engines/runtime/; an engine package (or static.py)
    never imports another one's modules (issue 24)."""
    crossing = sorted({f"{name}:{e.line} -> {e.target}" for name, edges in import_edges().items()
                       for e in edges if engine_of(name) and engine_of(e.target) not in (None, engine_of(name))})
    assert crossing == []


# Ceilings for what issue 24 still counts (scripts/architecture_counts.py prints them): each is the count on main
# when it was last lowered, so a change that reaches into an engine's modules from outside, or compares an engine's
# name instead of asking its Engine record (kvplan/engines/api.py), fails here. Lower them as the seam closes.
OUTSIDE_ENGINE_IMPORTS_MAX = 0
ENGINE_NAME_COMPARISONS_MAX = 2
# imports of kvplan modules written inside a function, outside cli/ (one per statement): each is a dependency the
# module's header does not show. The few kept say why beside them (a measured start-up cost, benchmarks/cold_start.py)
# comparisons of a layer kind's spelling outside core/layers.py, the engines' specs tables and presentation: each is a
# place a new kind must be added by hand (issue 24: a layer kind would touch about 11 files)
KIND_COMPARISONS_MAX = 0
FUNCTION_LEVEL_IMPORTS_MAX = 17
# functions over 80 lines in kvplan/engines/: an engine's memory model is steps the driver (engines/driver.py) calls
ENGINE_LONG_FUNCTIONS_MAX = 0


def test_imports_of_engine_modules_from_outside_do_not_grow():
    """A caller reaches an engine through kvplan.engines (get, release), not by importing vllm/, sglang/, ..."""
    found = sorted({f"{name}:{e.line} -> {engine_of(e.target)}" for name, edges in import_edges().items()
                    for e in edges if engine_of(e.target) not in (None, engine_of(name))})
    assert len(found) <= OUTSIDE_ENGINE_IMPORTS_MAX, "\n".join(found)


def test_engine_name_comparisons_outside_engines_do_not_grow():
    found = [f"{name}:{line}" for name, path in MODULES.items() if not name.startswith("kvplan.engines")
             for line in engine_name_comparisons(ast.parse(path.read_text(encoding="utf-8")))]
    assert len(found) <= ENGINE_NAME_COMPARISONS_MAX, "\n".join(found)


def test_function_level_imports_do_not_grow():
    """An import belongs at the top of its module unless a main path would pay for it at start-up: a new one inside
    a function fails here (issue 24; scripts/architecture_counts.py --list names them)."""
    found = sorted({f"{name}:{e.line}" for name, edges in import_edges().items() if not name.startswith("kvplan.cli")
                    for e in edges if e.in_function})
    assert len(found) <= FUNCTION_LEVEL_IMPORTS_MAX, "\n".join(found)


def test_every_name_an_engine_part_lists_is_there():
    """A record's parts (kvplan/engines/lazy.py Part) name what their modules define, so a caller asking one gets it;
    a part whose module loses a name fails here, not in the first deployment that asks for it."""
    from kvplan import engines

    missing = []
    for name in engines.ENGINE_NAMES:
        record = engines.get(name)
        for role in ("options", "launch", "releases"):
            part = getattr(record, role)
            for attr in dir(part) if part is not None else ():
                try:
                    getattr(part, attr)
                except AttributeError:
                    missing.append(f"{name}.{role}.{attr}")
    assert missing == []
    # every engine a deployment's launch can name reads its command line through its record
    assert all(engines.get(n).options is not None for n in ("vllm", "sglang", "trtllm"))


def test_long_functions_in_engines_do_not_grow():
    found = [f"{name}.{fn} ({n} lines)" for name, path in MODULES.items() if name.startswith("kvplan.engines")
             for fn, n in long_functions(ast.parse(path.read_text(encoding="utf-8")))]
    assert len(found) <= ENGINE_LONG_FUNCTIONS_MAX, "\n".join(found)


def test_kind_comparisons_outside_specs_and_presentation_do_not_grow():
    """A layer kind is a class (kvplan/core/layers.py); an engine maps kinds to its rules in one table. A new
    `layer.kind == "mla"` elsewhere fails here (scripts/architecture_counts.py --list names them)."""
    found = [f"{name}:{line}" for name, path in MODULES.items() if not may_compare_kinds(name)
             for line in kind_comparisons(ast.parse(path.read_text(encoding="utf-8")))]
    assert len(found) <= KIND_COMPARISONS_MAX, "\n".join(found)


def test_the_kind_counter_tells_a_layer_kind_from_other_kinds():
    """It counts a layer's kind compared with a kind's spelling or constant, not an option's or a load's kind."""
    code = ("a = layer.kind == 'mla'\nb = g.kind in (FULL, SLIDING)\nc = kind in HEADED_KINDS\n"
            "d = opt.kind == 'flag'\ne = load.kind == 'concurrency'\nf = kind not in ('modelled', 'none')\n")
    assert kind_comparisons(ast.parse(code)) == [1, 2, 3]
    assert may_compare_kinds("kvplan.cli.views.vllm") and may_compare_kinds("kvplan.engines.vllm.specs")
    assert not may_compare_kinds("kvplan.check.deployment") and not may_compare_kinds("kvplan.engines.vllm.engine")
