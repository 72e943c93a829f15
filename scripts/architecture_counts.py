"""Counts of what keeps the engine seam from being one place (issue 24), measured on the source tree.

    python scripts/architecture_counts.py [--list]

Prints, for kvplan/:
- import cycles: strongly connected components of the import graph, every edge written in the code (imports inside
  functions included, nothing pruned);
- imports between engine packages (engines/static/, vllm/, sglang/, trtllm/ importing one another);
- imports of an engine's modules from outside that engine (`kvplan.engines.vllm...` from check/, from
  engines/logcheck.py, ...), and of those the ones from outside engines/;
- comparisons with an engine name ("vllm", "sglang", "trtllm", "static") outside engines/;
- functions over 80 lines in engines/;
- comparisons of a layer kind outside the kinds' own module, the engines' specs tables and presentation;
- imports of kvplan modules inside functions outside cli/.
--list prints every instance under its count.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from archgraph import (MODULES, cycles, engine_name_comparisons, engine_of, import_edges, kind_comparisons,  # noqa: E402
                       long_functions, may_compare_kinds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print every instance")
    args = parser.parse_args()
    edges = import_edges()
    graph = {m: {e.target for e in es} for m, es in edges.items()}
    found = cycles(graph)
    cross, internal, internal_outside = [], [], []
    for module, es in edges.items():
        mine = engine_of(module)
        for e in es:
            theirs = engine_of(e.target)
            if theirs is None or theirs == mine:
                continue
            item = f"{module}:{e.line} -> {theirs}"
            if item in internal:  # one import statement, counted once
                continue
            if mine is not None:
                cross.append(item)
            internal.append(item)
            if not module.startswith("kvplan.engines"):
                internal_outside.append(item)
    names, longs, lazy, kinds = [], [], [], []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not module.startswith("kvplan.engines"):
            names += [f"{module}:{line}" for line in engine_name_comparisons(tree)]
        else:
            longs += [f"{module}.{name} ({n} lines)" for name, n in long_functions(tree)]
        if not may_compare_kinds(module):
            kinds += [f"{module}:{line}" for line in kind_comparisons(tree)]
        if not module.startswith("kvplan.cli"):
            lazy += sorted({f"{module}:{e.line}" for e in edges[module] if e.in_function})  # per statement
    rows = [("import cycles (every edge)", [" <-> ".join(c) for c in found]),
            ("imports between engine packages", cross),
            ("imports of an engine's modules from outside it", internal),
            ("  of which from outside engines/", internal_outside),
            ("engine-name comparisons outside engines/", names),
            ("functions over 80 lines in engines/", longs),
            ("layer-kind comparisons outside specs/presentation", kinds),
            ("function-level kvplan imports outside cli/", lazy)]
    for title, items in rows:
        print(f"{title:50s} {len(items)}")
        if args.list:
            for item in items:
                print("    " + item)


if __name__ == "__main__":
    main()
