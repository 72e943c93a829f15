"""Behaviour kept byte for byte: every command line of tests/golden/cases.txt (every command, every engine,
text and --json, errors) prints what tests/golden/outputs.json recorded, with the same exit code.

The outputs were recorded before the package was reorganised (issue 10); a change to one of them is a
change of behaviour and is re-recorded (scripts/record_golden.py) in the commit that makes it, saying why."""

import pytest

from golden import harness

_RECORDED = harness.load_outputs()


@pytest.mark.parametrize("case", harness.cases())
def test_output_is_unchanged(case):
    assert case in _RECORDED, f"no recorded output: run scripts/record_golden.py for {case!r}"
    got = harness.run(case)
    want = _RECORDED[case]
    assert got["exit"] == want["exit"], got["stderr"]
    assert got["stderr"] == want["stderr"]
    assert got["stdout"] == want["stdout"]


def test_no_recorded_output_shows_a_markup_tag():
    """kvplan's consoles print with markup off (a model named '[/x]' is text), so a style tag written into a message
    reaches the user as is: `explain --engine` printed '[bold]the same launch as vllm makes it ...[/bold]'."""
    import re

    tag = re.compile(r"\[/?(bold|dim|italic|red|green|yellow|cyan|magenta)\]")
    shown = [case for case, out in _RECORDED.items() if tag.search(out["stdout"] + out["stderr"])]
    assert not shown, shown
