"""The contract under generated hostile input (issue 15): every command, generated files and flag values of the
classes issue 15 lists, and real files with one value changed as issue 26 lists (tests/fuzzing.py). A bounded run on every suite run; `scripts/fuzz.py` runs the same
fuzzer longer and reports the inputs tried."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).parent))
import fuzzing  # noqa: E402


@pytest.fixture(scope="module")
def invoke():
    return fuzzing.invoker()


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(call=fuzzing.calls(), content=fuzzing.FILES, suffix=fuzzing.SUFFIXES)
def test_every_command_keeps_the_contract_on_hostile_input(invoke, tmp_path_factory, call, content, suffix):
    path = tmp_path_factory.mktemp("fuzz") / f"input{suffix}"
    path.write_bytes(content)
    assert fuzzing.violations(invoke, call, path) == []


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(mutated=fuzzing.MUTATED)
def test_real_files_with_one_value_changed_keep_the_contract(invoke, tmp_path_factory, mutated):
    """Issue 26's classes: a real config or deployment with one value replaced (null, a wrong container, an
    unexpanded variable, other digits) or a shell idiom inserted is exit 2 or 3 in one line, never a traceback."""
    call, content, suffix = fuzzing._structural(mutated)
    path = tmp_path_factory.mktemp("fuzz") / f"input{suffix}"
    path.write_bytes(content)
    assert fuzzing.violations(invoke, call, path) == []


@pytest.mark.parametrize("content", [b"", b"\xef\xbb\xbfmodel: llama-3.1-8b\n", b"[" * 5000, bytes(range(256))])
@pytest.mark.parametrize("args", [("check", "FILE", "--json"), ("estimate", "FILE", "--json"),
                                  ("calibrate", "FILE", "--json"), ("show", "FILE")])
def test_the_special_files_on_each_reading_command(invoke, tmp_path, args, content):
    path = tmp_path / "input.yaml"
    path.write_bytes(content)
    assert fuzzing.violations(invoke, fuzzing.Call(args, "--json" in args), path) == []
