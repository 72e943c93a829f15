"""The process entry point (`python -m kvplan`, the `kvplan` script): the collector's policy for a process that runs
one command, then the command line (kvplan.cli.entry.main, which the tests run in their own process instead).

A command builds what it keeps at start-up: the modules of typer, rich and kvplan, their classes and functions
(about 300 modules, 60 dataclasses on `estimate --engine vllm`), all alive until the process exits. The cyclic
collector's default young-generation threshold (700 net allocations) made about 50 passes over them during one
`kvplan estimate` and found nothing to free, and the interpreter's collections at exit walked every one of them
again: together about 20 ms of a 150 ms start on a 2-core machine (benchmarks/cold_start.py, CPU median, with and
without). So the threshold is raised, which still bounds the cyclic garbage of a long command (`serve`, `plan`) to a
young generation of YOUNG objects, and what is alive when the command returns is frozen (gc.freeze: left out of the
collections at exit; it is freed with the process). Reference counting frees everything else as before.
"""

from __future__ import annotations

import gc

YOUNG = 50_000  # net container allocations between young-generation passes (CPython's default: 700)


def run() -> None:
    """Run the command line of this process (sys.argv) under the policy above."""
    gc.set_threshold(YOUNG, *gc.get_threshold()[1:])
    try:
        from kvplan.cli.entry import main  # typer and the rest load under the raised threshold

        main()
    finally:
        gc.freeze()  # what the command built lives until exit: the collections at exit need not walk it
