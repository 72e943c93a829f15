"""cli/plain.py lays out what rich's console would print off a terminal: the same command lines are run with it and
with rich's own console (plain.usable answering no), and the bytes compared. rich is the independent value here:
its console is what kvplan printed before, and what it still prints on a terminal."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golden import harness  # noqa: E402

from kvplan.cli import plain, render  # noqa: E402

SHAPES = [
    "estimate llama-3.1-8b --seq 32K --batch 8 --gpu h100",
    "estimate llama-3.1-70b --seq 128K --batch 8 --gpu h100 --tp 4 --engine static",
    "estimate llama-3.1-70b --seq 128K --batch 64 --gpu h100 --tp 2",  # does not fit: the fix lines
    "estimate gemma-3-27b --seq 64K --gpu h100 --engine sglang",
    "estimate llama-3.1-8b --seq 32K --gpu h100 --engine trtllm --detail",
    "estimate deepseek-v3 --seq 32K --gpu h200 --gpus 8 --engine vllm",
    "estimate tests/data/hf_configs/gemma-3-27b.json --seq 16K",
    "models",
    "gpus",
]
WIDTHS = (200, 160, 140, 130, 120, 110, 100, 90, 80, 70, 60, 50, 40, 30, 20)


def _run(case: str, width: int, use_plain: bool, monkeypatch) -> dict:
    monkeypatch.setattr(plain, "usable", lambda stream: use_plain)
    return harness.run(f"COLUMNS={width} {case}")


@pytest.mark.parametrize("case", SHAPES)
def test_same_bytes_as_rich(case, monkeypatch):
    for width in WIDTHS:
        assert _run(case, width, True, monkeypatch) == _run(case, width, False, monkeypatch), (case, width)


def test_estimate_table_is_laid_out_without_rich_console(monkeypatch):
    """At the default width an estimate's header, table and notes are all plain.py's: rich's console is never made
    (otherwise the start-up time it saves is not saved), and the views build no rich Text or Table."""
    made = []
    real = plain.PlainConsole.rich

    def rich(self):
        made.append(self)
        return real(self)

    monkeypatch.setattr(plain.PlainConsole, "rich", rich)
    for engine in ("static", "vllm", "sglang", "trtllm"):
        out = harness.run(f"estimate llama-3.1-8b --seq 32K --gpu h100 --engine {engine}")
        assert out["exit"] == 0 and "verdict" in out["stdout"]
    assert made == []


def test_estimate_table_off_a_terminal_imports_no_rich():
    """The estimate views build plain.Styled and plain.Sheet: printed into a pipe, no rich module is imported."""
    import subprocess

    probe = ("import sys, io, contextlib\n"
             "sys.argv = ['kvplan', 'estimate', 'llama-3.1-8b', '--seq', '32K', '--gpu', 'h100', '--engine', 'vllm']\n"
             "from kvplan.cli.process import run\n"
             "try:\n    run()\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('rich')), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=harness.ROOT,
                          env={**{k: v for k, v in harness.os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")},
                               "COLUMNS": "120"}, timeout=120)
    assert "verdict" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("engine", ["static", "vllm", "sglang", "trtllm"])
def test_a_sheet_is_laid_out_only_where_render_prints_it_unmeasured(engine):
    """plain.py lays out an estimate's Sheet at a width only where render._surely_fits says its rich table fits there
    as it is (the bound print_fitting takes the short way by): else print_fitting's measure, wrapping and records
    decide, through rich."""
    from rich.console import Console

    from kvplan import estimate
    from kvplan.cli import views

    laid_out = 0
    for model, tp in (("llama-3.1-70b", 4), ("gemma-3-27b", 1)):
        result = estimate(model, seq="128K", batch=8, gpu="h100", tp=tp, engine=engine)
        sheets = [t for t in views.tables(result) if isinstance(t, plain.Sheet)]
        assert sheets
        for width in range(20, 201, 3):
            console = Console(file=io.StringIO(), width=width, highlight=False, markup=False, emoji=False)
            for sheet in sheets:
                if plain._sheet(sheet, width) is not None:
                    laid_out += 1
                    assert render._surely_fits(console, render.from_sheet(sheet)), (model, width)
    assert laid_out


def test_narrow_characters_are_one_cell_as_rich_counts():
    from rich.cells import cell_len

    assert all(cell_len(c) == 1 for c in plain.NARROW)
    assert plain.cell_len("a · b × c — 32K…") == cell_len("a · b × c — 32K…")
    assert plain.cell_len("模型") == cell_len("模型") == 4  # wide characters: rich's own count


def test_a_table_with_a_second_line_in_a_cell_goes_to_rich():
    """A cell of two lines, a tab or a title wider than its table is rich's to lay out: plain.py declines it."""
    table = render.figures_table("t", ["a", "b"], [["x\ny", "1"]])
    assert plain._table(table, 120) is None
    assert plain._table(render.figures_table("t", ["a", "b"], [["x\ty", "1"]]), 120) is None
    assert plain._table(render.figures_table("a title wider than the table", ["a"], [["1"]]), 120) is None
    assert plain._table(render.figures_table("t", ["a", "b"], [["x", "1"]]), 120) is not None


def test_usable_follows_rich_terminal_rules(monkeypatch):
    """FORCE_COLOR and TTY_COMPATIBLE make rich style its output even into a pipe (rich/console.py is_terminal):
    rich's console prints then; an empty FORCE_COLOR does not count, TTY_COMPATIBLE=0 wins over a terminal."""

    class Tty(io.StringIO):
        encoding = "utf-8"

        def isatty(self):
            return True

    pipe = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    assert plain.usable(pipe) and not plain.usable(Tty())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not plain.usable(pipe)
    monkeypatch.setenv("FORCE_COLOR", "")
    assert plain.usable(pipe)
    monkeypatch.setenv("TTY_COMPATIBLE", "0")
    assert plain.usable(Tty())
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert not plain.usable(pipe)
    monkeypatch.delenv("TTY_COMPATIBLE")
    assert not plain.usable(io.TextIOWrapper(io.BytesIO(), encoding="latin-1"))  # rich draws ASCII boxes there
