"""Layout at every terminal width (issue 15): no figure or name is ever cut, no line runs past the terminal's edge
unless it is one word longer than the terminal (a path, which is shown whole), and no line ends in spaces.

Each command runs in-process through the real entry point at COLUMNS=20 (the narrowest), 80, 100 and 120 (the
widths issue 15 names) (tests/golden/harness).
The figures are checked against the command's own --json output, which is laid out by no part of the text path: a
byte count of the JSON that the wide text shows must be shown whole, on one line, at every width."""

from __future__ import annotations

import json
import re

import pytest

from golden import harness

WIDTHS = (20, 80, 100, 120)

# every command that prints a table, with each engine's estimate view
COMMANDS = [
    "gpus",
    "models",
    "estimate llama-3.1-8b --seq 32K --batch 8 --gpu h100-sxm-80gb",
    "estimate llama-3.1-8b --seq 32K --batch 8 --gpu h100-sxm-80gb --engine vllm",
    "estimate gemma-3-27b --seq 32K --batch 4 --gpu h100 --engine vllm",
    "estimate llama-3.1-70b --seq 128K --batch 8 --gpu h100 --tp 4 --engine sglang",
    "estimate mistral-7b-v0.1 --seq 32K --batch 16 --gpu a100-40gb --engine trtllm",
    "explain gemma-3-27b --seq 8K --gpu h100 --batch 4",
    "explain llama-3.1-8b --seq 8K --pp 2 --gpu h100",
    "check examples/deploy",
    "check examples/bad",
    "sweep llama-3.1-8b --seq 4K,32K --batch 1,8 --gpu h100,l40s --engine static,vllm",
    "sweep llama-3.1-8b --tp 1,3 --seq 4K --gpu h100",
    "simulate llama-3.1-8b --workload examples/workloads/chat-sharegpt-like.yaml --seq 8K --gpu l4",
    "calibrate tests/data/vllm_logs/raw/qwen-qwen3-8b--h100-80gb--tp1pp1dp1--8192.log --models-dir tests/data/vllm_models",
    "probe llama-3.1-8b --seq 1K --batch 2 --device meta",
    "plot llama-3.1-70b --gpu h100,a100-40gb --tp 2,4",
    "plan llama-3.1-8b --concurrency 64 --seq 8K --tpot 50 --gpu h100,a100-80gb,l40s,l4",
]

# the terminal chart's body is 12 columns of y labels beside a plot area of at least 20 (plot --width's floor):
# below that the terminal folds its lines; it has no narrower form
_PLOT_NARROWEST = 34

_OUTPUTS: dict[tuple[str, int], dict] = {}


def _run(command: str, width: int) -> dict:
    if (command, width) not in _OUTPUTS:
        # check fits its table to an interactive terminal only (elsewhere its report ignores COLUMNS)
        terminal = "TTY " if command.startswith("check") else ""
        _OUTPUTS[command, width] = harness.run(f"{terminal}COLUMNS={width} {command}")
    return _OUTPUTS[command, width]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", COMMANDS)
def test_lines_fit_the_terminal(command, width):
    got = _run(command, width)
    assert got["exit"] in (0, 1, 2), got["stderr"]
    lines = got["stdout"].splitlines()
    assert lines, "no output"
    limit = max(width, _PLOT_NARROWEST) if command.startswith("plot") else width
    too_long = [line for line in lines if len(line) > limit and len(line.split()) > 1]
    assert not too_long, f"{len(too_long)} lines wider than {limit} columns, first: {too_long[0]!r}"
    trailing = [line for line in lines if line != line.rstrip()]
    assert not trailing, f"{len(trailing)} lines end in spaces, first: {trailing[0]!r}"
    # rich ends a cut cell with an ellipsis against its last kept character ('v100-sxm2-…'); a spaced one is a range
    cut = re.findall(r"\S+…", got["stdout"])
    assert not cut, f"rich cut cells: {cut[:3]}"


def _figure(n: int) -> re.Pattern:
    # the figure as kvplan prints it ('16,106,127,360'), not part of a longer number
    return re.compile(rf"(?<![\d,.]){re.escape(f'{n:,}')}(?![\d,])")


def _byte_counts(value, key: str = ""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _byte_counts(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _byte_counts(v, key)
    elif isinstance(value, int) and not isinstance(value, bool) and key.endswith("_bytes") and abs(value) >= 1000:
        yield value


_ESTIMATES = [c for c in COMMANDS if c.startswith("estimate")]


@pytest.mark.parametrize("command", _ESTIMATES)
def test_every_byte_count_shown_wide_is_whole_at_every_width(command):
    counts = set(_byte_counts(json.loads(_run(command + " --json", 120)["stdout"])))
    wide = _run(command + " --detail", 200)["stdout"]  # the byte counts are the detail view's (and --json's)
    shown = {n for n in counts if _figure(n).search(wide)}
    # at least the cache, the weights and the per-GPU budget are in every engine's view
    assert len(shown) >= 4, (command, sorted(counts))
    for width in WIDTHS[:-1]:
        text = _run(command + " --detail", width)["stdout"]
        cut = sorted(n for n in shown if not _figure(n).search(text))
        assert not cut, f"at {width} columns these byte counts of --json are not shown whole: {cut}"


def test_every_gpu_name_and_capacity_is_whole_at_every_width():
    # 'kvplan gpus' at 80 columns printed 'v100-sxm2-…' and cut byte counts (issue 15, item 10)
    gpus = json.loads(_run("gpus --json", 120)["stdout"])["gpus"]
    assert len(gpus) > 20
    for width in WIDTHS:
        text = _run("gpus", width)["stdout"]
        words = set(text.split())
        missing = [g["name"] for g in gpus if g["name"] not in words]
        assert not missing, f"at {width} columns: names not whole: {missing}"
        # a GPU with no public reading of its total (GB200, GB300: docs/gpus.md) has no figure to cut
        cut = [c for g in gpus if (c := g["capacity_bytes"]) is not None and not _figure(c).search(text)]
        assert not cut, f"at {width} columns: capacities not whole: {cut}"


def test_every_model_name_is_whole_at_every_width():
    models = json.loads(_run("models --json", 120)["stdout"])["models"]
    for width in WIDTHS:
        words = set(_run("models", width)["stdout"].split())
        missing = [m["name"] for m in models if m["name"] not in words]
        assert not missing, f"at {width} columns: {missing}"


def test_check_names_every_deployment_file_whole_at_every_width():
    report = json.loads(_run("check examples/deploy --json", 120)["stdout"])
    files = {d["source"] + (f"#{d['document']}" if d["document"] else "") for d in report["verdicts"]}
    assert len(files) > 5
    for width in WIDTHS:
        words = set(_run("check examples/deploy", width)["stdout"].split())
        missing = sorted(f for f in files if f not in words)
        assert not missing, f"at {width} columns: {missing}"


def test_a_sub_item_keeps_its_indent_when_its_label_wraps():
    # gemma-3's vLLM padding warning is a sub-item of the layout; at 120 columns its label wraps, and the
    # continuation started at the margin, where it read as a new item (issue 15, item 10)
    lines = _run("estimate gemma-3-27b --seq 32K --batch 4 --gpu h100 --engine vllm", 120)["stdout"].splitlines()
    start = next(i for i, line in enumerate(lines) if "vLLM warns:" in line)
    indent = len(lines[start]) - len(lines[start].lstrip())
    follow = lines[start + 1]
    assert "15.38%" in lines[start] + follow
    assert len(follow) - len(follow.lstrip()) >= indent, (lines[start], follow)


def test_explain_is_no_wider_at_80_columns_than_at_120():
    # explain printed 192-column tables at COLUMNS=80, wider than at 120 (issue 15, item 10)
    for width in (80, 120):
        lines = _run("explain gemma-3-27b --seq 8K --gpu h100 --batch 4", width)["stdout"].splitlines()
        assert max(len(line) for line in lines) <= width


@pytest.mark.parametrize("engine", ["static", "vllm", "sglang", "trtllm"])
def test_a_table_printed_unmeasured_is_within_what_rich_measures(engine):
    # print_fitting skips rich's measure when its own bound (render._surely_fits) says the table fits; the independent
    # value is rich's own measure: wherever the bound says so, rich's widest form fits too and needed_width agrees,
    # so print_fitting's measured path would have printed the table as it is
    import io

    from rich.console import Console

    from kvplan import estimate
    from kvplan.cli import render, views

    told = 0
    for model, tp in (("llama-3.1-70b", 4), ("gemma-3-27b", 1)):
        result = estimate(model, seq="128K", batch=8, gpu="h100", tp=tp, engine=engine)
        for width in range(20, 201, 3):
            console = Console(file=io.StringIO(), width=width, highlight=False, markup=False, emoji=False)
            for table in views.tables(result):
                table = render.from_sheet(table) if hasattr(table, "ends") else table  # plain.Sheet: the rich table it stands for
                if getattr(table, "records", None) is None or not render._surely_fits(console, table):
                    continue
                told += 1
                measured = render._measure(console, table)
                assert measured.maximum <= width and render.needed_width(console, table, measured) <= width
    assert told  # the wide widths take the short way
