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
