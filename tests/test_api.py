"""The Python API (kvplan/api/, docs/api.md) answers as the command line does: over every --json case of the golden
file, the API called with the command's own parsed options returns a result whose to_dict() is the JSON object the
command printed when the case was recorded (tests/golden/outputs.json), or raises the error that object names.
Its keyword arguments are the commands' option names, and `import kvplan` loads neither typer, rich nor torch."""

from __future__ import annotations

import inspect
import json
import os
import shlex
import subprocess
import sys

import pytest
import typer.main

import kvplan
from golden import harness
from kvplan.cli.entry import app, register_commands

# the command -> the API function, and the options that only shape the command's output (no API argument)
API = {"estimate": "estimate", "check": "check", "explain": "explain", "plan": "plan", "calibrate": "calibrate",
       "models": "models", "gpus": "gpus"}
POSITIONAL = {"estimate": "model", "explain": "model", "plan": "model", "check": "configs", "calibrate": "logs"}
OUTPUT_ONLY = {"json_out", "fmt", "print_schema", "top", "plot", "emit", "emit_to", "markdown", "brief", "rejected", "detail"}
OUTPUT_FILE = {"check": {"output"}}  # explain's and plan's --output is a number of output tokens, an API argument

register_commands()
GROUP = typer.main.get_command(app)
RECORDED = harness.load_outputs()


def _json_cases() -> list[str]:
    out = []
    for case in harness.cases():
        words = shlex.split(case)
        if words[0] in API and ("--json" in words or "json" in words[words.index("-f") + 1:words.index("-f") + 2]
                                if "-f" in words else "--json" in words):
            out.append(case)
    return out


CASES = _json_cases()


def _api_arguments(case: str) -> tuple[str, dict]:
    """The command's name and the values its function would be called with, parsed by the command's own parser."""
    words = shlex.split(case)
    command = GROUP.commands[words[0]]
    ctx = command.make_context(words[0], words[1:])
    return words[0], {k: v for k, v in ctx.params.items() if k not in OUTPUT_ONLY | OUTPUT_FILE.get(words[0], set())}


def _timings_masked(data):
    """Wall-clock figures (the latency bounds' "seconds") as the golden harness masks them."""
    if isinstance(data, dict):
        return {k: None if k == "seconds" else _timings_masked(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_timings_masked(v) for v in data]
    return data


@pytest.fixture
def golden_env(monkeypatch):
    """What the golden harness runs under: the repository as the working folder, the Hub off, fixed caches."""
    for key, value in harness.ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(harness.ROOT)


def test_the_golden_file_has_json_cases_of_every_api_command():
    assert {shlex.split(c)[0] for c in CASES} == set(API), CASES
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", CASES)
def test_api_returns_what_the_command_printed(case, golden_env):
    name, params = _api_arguments(case)
    want = _timings_masked(json.loads(RECORDED[case]["stdout"].replace('"seconds": <t>', '"seconds": null')))
    function = getattr(kvplan, API[name])
    positional = [params.pop(POSITIONAL[name])] if name in POSITIONAL else []
    try:
        got = _timings_masked(function(*positional, **params).to_dict())
    except kvplan.KvplanError as err:
        error = err.to_dict()
        if name == "calibrate":  # calibrate's JSON keeps its report's shape: the error sits in it
            assert want["error"] == {**error["error"], "what": err.what, "exit_code": err.exit_code}
        else:
            assert want == error
        assert RECORDED[case]["exit"] == err.exit_code
        return
    if "exit_code" in want:  # check's report, calibrate's summary carry the command's exit code
        assert want["exit_code"] == RECORDED[case]["exit"]
    assert got == want


@pytest.mark.parametrize("name", sorted(API))
def test_keyword_arguments_are_named_as_the_options(name):
    command = GROUP.commands[name]
    options = {p.name for p in command.params if p.name not in OUTPUT_ONLY | OUTPUT_FILE.get(name, set())}
    parameters = set(inspect.signature(getattr(kvplan, API[name])).parameters)
    assert parameters == options


def test_the_done_when_line_prints_the_json_figure():
    line = "import kvplan; print(kvplan.estimate('llama-3.1-8b', seq=32768, gpu='h100', engine='vllm').max_concurrency)"
    api = subprocess.run([sys.executable, "-c", line], capture_output=True, text=True, check=True).stdout.strip()
    cli = subprocess.run([sys.executable, "-m", "kvplan", "estimate", "llama-3.1-8b", "--seq", "32768", "--gpu", "h100",
                          "--engine", "vllm", "--json"], capture_output=True, text=True, check=True).stdout
    assert api == str(json.loads(cli)["max_concurrency"])
    # the figure itself, by hand: 13.739... is vLLM's pool of tokens over 32,768 a request (recorded in the goldens)
    assert 13 < float(api) < 14.5


def test_python_values_are_read_as_the_options_read_text():
    as_text = kvplan.estimate("llama-3.1-8b", seq="32K", batch=4, gpu="h100", engine="vllm", gpu_util="0.85",
                              kv_cache_memory=None, engine_option=["VLLM_USE_FLASHINFER_SAMPLER=1"])
    as_python = kvplan.estimate("llama-3.1-8b", seq=32768, batch=4, gpu="h100", engine="vllm", gpu_util=0.85,
                                engine_option={"VLLM_USE_FLASHINFER_SAMPLER": 1})
    assert as_text == as_python
    assert as_text.seq == 32768 and as_text.batch == 4


def test_errors_carry_the_command_line_where_and_hint():
    with pytest.raises(kvplan.InputError) as caught:
        kvplan.estimate("llama-3.1-8b", seq="32K", gpu="h100", engine="vllm", gpu_util=1.5)
    assert caught.value.exit_code == 2 and caught.value.where == "--gpu-util"
    with pytest.raises(kvplan.InputError) as caught:
        kvplan.estimate("llama-3.1-8b", gpu="h1OO")
    assert caught.value.where is not None and caught.value.to_dict()["exit_code"] == 2
    with pytest.raises(kvplan.InputError) as caught:
        kvplan.estimate("llama-3.1-8b", batch=True)
    assert caught.value.where == "--batch"


def test_a_definite_no_is_an_answer_not_an_exception():
    result = kvplan.estimate("llama-3.1-70b", seq="128K", batch=64, gpu="l4")
    assert result.fits is False and result.to_dict()["fits"] is False


def test_check_is_callable_although_kvplan_check_is_also_a_package(tmp_path):
    import kvplan.check.run  # noqa: F401  binds kvplan.check to the package

    report = kvplan.check("examples/deploy/vllm", gpu="h100")
    assert report.total >= 1 and report.exit_code in (0, 1, 3)
    assert report.to_dict()["verdicts"][0]["source"].startswith("examples/deploy/vllm")


def test_models_and_gpus_iterate_over_their_entries():
    names = [m.name for m in kvplan.models()]
    assert "llama-3.1-8b" in names and len(kvplan.models()) == len(names)
    h100 = next(g for g in kvplan.gpus() if g.name == "h100-sxm-80gb")
    assert h100.capacity_bytes == kvplan.gpus().to_dict()["gpus"][[g.name for g in kvplan.gpus()].index(h100.name)]["capacity_bytes"]


def test_import_kvplan_loads_no_cli_and_no_torch():
    code = ("import sys, kvplan; r = kvplan.estimate('llama-3.1-8b', seq='8K', gpu='h100', engine='vllm'); "
            "kvplan.check('examples/deploy/vllm', gpu='h100'); "
            "print(sorted(m for m in ('typer', 'rich', 'torch', 'click') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
    bare = subprocess.run([sys.executable, "-c", "import sys, kvplan; print(len([m for m in sys.modules if m.startswith('kvplan')]))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert bare == "1"  # `import kvplan` alone loads kvplan/__init__.py and nothing else of it


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError):
        kvplan.no_such_function  # noqa: B018
    assert {"estimate", "check", "plan", "explain", "calibrate", "models", "gpus"} <= set(dir(kvplan))


def test_explain_with_an_engine_returns_what_the_command_printed():
    """explain --engine: the explanation and, under engine_estimate, the engine's estimate --json of the same launch."""
    words = ["llama-3.1-70b", "--seq", "32K", "--gpu", "h100", "--tp", "2", "--engine", "vllm"]
    cli = subprocess.run([sys.executable, "-m", "kvplan", "explain", *words, "--json"], capture_output=True, text=True)
    api = kvplan.explain("llama-3.1-70b", seq="32K", gpu="h100", tp=2, engine="vllm").to_dict()
    assert _timings_masked(api) == _timings_masked(json.loads(cli.stdout))
    alone = kvplan.estimate("llama-3.1-70b", seq="32K", gpu="h100", tp=2, engine="vllm").to_dict()
    assert api["engine_estimate"] == alone and alone["fits"] is False
