"""Issue 15, tracebacks on output and empty --json: one output sink (kvplan/cli/edge.py) for every command.

A closed pipe (`kvplan models --json | head -c 100`) ends quietly with 141, never 1 (a definite "no"); a full disk
(`> /dev/full`) is one error line and exit 2; with --json every path prints exactly one JSON object, errors as
{"error": {"where", "what", "hint"}, "exit_code": N} (docs/json.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
M = "llama-3.1-8b"
LOG = sorted((ROOT / "tests/data/vllm_logs/raw").glob("*.log"))[0]
GUARD_S = 120  # the harness's guard against a hang, not a speed assertion

# one command line per command, each printing more than a pipe buffer holds where it can, so the reader's close
# is certain to land while the command still writes
EVERY_COMMAND = [
    ("models", "--json"), ("gpus",), ("show", M), ("estimate", M, "--gpu", "h100", "--engine", "vllm", "--json"),
    ("explain", M, "--gpu", "h100"), ("sweep", M, "--seq", "1..2000+1", "-f", "csv"), ("plot", M, "--gpu", "h100"),
    ("simulate", M, "-w", "examples/workloads/sample.csv", "--gpu", "h100"), ("check", "examples/deploy/prod"),
    ("calibrate", str(LOG)), ("probe", M, "--device", "meta", "--seq", "1K", "--json"), ("estimate", "--help"),
]


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", EVERY_COMMAND, ids=[" ".join(a)[:40] for a in EVERY_COMMAND])
def test_a_full_disk_is_one_error_line_and_exit_2(args):
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "kvplan", *args], stdout=full, stderr=subprocess.PIPE, text=True,
                           cwd=ROOT, env=_env(), timeout=GUARD_S)
    assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr, p.stderr
    errors = [line for line in p.stderr.splitlines() if line.startswith("error:")]
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert errors[-1] == "error: stdout — cannot write the output: no space left on the device (write to another file or device)"


@pytest.mark.parametrize("args", EVERY_COMMAND, ids=[" ".join(a)[:40] for a in EVERY_COMMAND])
def test_a_closed_pipe_ends_quietly(args):
    # the reader closes before reading a byte: every write fails with EPIPE
    proc = subprocess.Popen([sys.executable, "-m", "kvplan", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT, env=_env())
    proc.stdout.close()
    _, err = proc.communicate(timeout=GUARD_S)
    err = err.decode()
    assert "Traceback" not in err and "Exception ignored" not in err and "Broken pipe" not in err, err
    # 141 when a write met the closed pipe; the command's own code when its whole output fit in the pipe's buffer
    # before the close was seen (a small output); never 1 for a command that would otherwise have said yes
    assert proc.returncode in (0, 1, 141), (proc.returncode, err)
    if proc.returncode == 1:
        assert args[0] in ("check",) or "--gpu" in args, "exit 1 is a definite no, not a closed pipe"


def test_a_large_output_into_a_closed_pipe_is_141():
    proc = subprocess.Popen([sys.executable, "-m", "kvplan", "sweep", M, "--seq", "1..20000+1", "-f", "csv"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=_env())
    assert proc.stdout.read(100).startswith(b"model,")  # `| head -c 100`
    proc.stdout.close()
    _, err = proc.communicate(timeout=GUARD_S)
    assert proc.returncode == 141 and err == b""


# ------------------------------------------------------------------ --json: one object on every path

@pytest.fixture(scope="module")
def invoke():
    from typer.testing import CliRunner

    from kvplan.cli import entry as kvcli

    kvcli.register_commands()
    runner = CliRunner()
    return lambda *args: runner.invoke(kvcli.app, [str(a) for a in args])


JSON_ERRORS = [
    (("estimate", "no-such-model", "--json"), 2, "MODEL"),
    (("estimate", M, "--seq", "4096,8192", "--json"), 2, "--seq"),
    (("explain", M, "--prompt", "0", "--gpu", "h100", "--json"), 2, "--prompt"),
    (("explain", "no-such-model", "--json"), 2, "MODEL"),
    (("simulate", M, "-w", "prompt=p50:100;output=p50:100", "--json"), 2, "--gpu"),
    (("simulate", "llama-3.1-70b", "-w", "examples/workloads/sample.csv", "--seq", "2048", "--gpu", "l4", "--json"), 1, "--gpu"),
    (("calibrate", "no-such.log", "--json"), 2, None),
    (("calibrate", str(LOG), "--model", "no-such-model", "--json"), 2, "--model no-such-model"),
    (("probe", M, "--device", "", "--json"), 2, "--device"),
    (("probe", M, "--device", "meta", "--seq", "1K", "--batch", str(2**70), "--json"), 2, "--batch"),
    (("show", "no-such-model", "--json"), 2, "MODEL"),
    (("check", "--json"), 2, "CONFIG"),
    (("check", "--format", "json", "--gpu", "no-such-gpu"), 2, "--gpu"),
]


@pytest.mark.parametrize("args, code, where", JSON_ERRORS, ids=[" ".join(a[0])[:50] for a in JSON_ERRORS])
def test_json_errors_are_one_json_object(invoke, args, code, where):
    result = invoke(*args)
    assert result.exit_code == code, (result.exit_code, result.stderr)
    obj = json.loads(result.stdout)  # exactly one object: json.loads refuses trailing data
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ")
    if args[0] == "calibrate":
        # calibrate's report is its one object on every path (docs/engines/calibration.md): an unreadable log is an
        # invalid entry of `logs`, bad input that stops the run is its `error`
        assert set(obj) == {"summary", "logs", "site", "error"}
        if obj["error"] is not None:
            assert obj["error"]["where"] == where and obj["error"]["what"] in line
        else:
            assert obj["summary"]["exit_code"] == code and obj["logs"][0]["status"] == "invalid"
        return
    assert set(obj) == {"error", "exit_code"} and obj["exit_code"] == code
    assert set(obj["error"]) == {"where", "what", "hint"}
    if where is not None:
        assert obj["error"]["where"] == where
    assert obj["error"]["what"] in line  # the same error as the stderr line


def test_a_json_report_already_printed_gets_no_second_object(invoke, tmp_path):
    # calibrate prints its report, then exits 3 when it can describe no log: one object, the report
    log = tmp_path / "other.log"
    text = LOG.read_text(encoding="utf-8")
    model_id = next(line.split("model='", 1)[1].split("'", 1)[0] for line in text.splitlines() if "model='" in line)
    log.write_text(text.replace(model_id, "acme/Not-A-Real-Model-7B"), encoding="utf-8")
    result = invoke("calibrate", log, "--json")
    assert result.exit_code == 3
    assert set(json.loads(result.stdout)) == {"summary", "logs", "site", "error"}


def test_usage_errors_with_json_are_one_json_object_through_the_entry_point():
    p = subprocess.run([sys.executable, "-m", "kvplan", "estimate", M, "--batch", "x", "--json"], capture_output=True,
                       text=True, cwd=ROOT, env=_env(), timeout=GUARD_S)
    obj = json.loads(p.stdout)
    assert p.returncode == 2 and obj["exit_code"] == 2 and "'--batch'" in obj["error"]["what"]
    assert len(p.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------ an output over an input (issue 26)

def _copy(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(src.read_bytes())
    return dst


@pytest.mark.parametrize("case", ["check -o", "check folder", "plan --emit-to", "calibrate --save",
                                  "check -o hard link"])
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(cli, tmp_path, case):
    """Writing the report, the deployment file or the site profile over a file the command reads (or into a
    folder it checks) would destroy the input: exit 2 naming the option, before any work, the input unchanged."""
    deploy = _copy(ROOT / "examples/deploy/prod/chat-8b.yaml", tmp_path / "prod" / "chat-8b.yaml")
    config = _copy(ROOT / "tests/data/hf_configs/llama-3.1-8b.json", tmp_path / "config.json")
    log = _copy(LOG, tmp_path / "a.log")
    args, victim, option = {
        "check -o": (("check", deploy, "-o", deploy), deploy, "--output"),
        "check folder": (("check", deploy.parent, "-o", deploy.parent / "report.txt"), deploy.parent / "report.txt", "--output"),
        "plan --emit-to": (("plan", config, "--concurrency", "8", "--seq", "8K", "--emit", "kvplan", "--emit-to", config),
                           config, "--emit-to"),
        "calibrate --save": (("calibrate", log, "--save", log), log, "--save"),
        "check -o hard link": (("check", deploy, "-o", tmp_path / "link.yaml"), deploy, "--output"),
    }[case]
    if case == "check -o hard link":
        os.link(deploy, tmp_path / "link.yaml")
    before = victim.read_bytes() if victim.exists() else None
    code, _, err = cli(*args)
    assert code == 2, err
    assert err.startswith(f"error: {option} ") and err.count("\n") == 1 and "input" in err, err
    assert (victim.read_bytes() if victim.exists() else None) == before


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
@pytest.mark.parametrize("args, code", [(("estimate", M, "--gpu", "h100"), 0), (("check", "examples/deploy/prod"), 1),
                                         (("estimate", "no-such-model"), 2)])
def test_output_encodes_on_a_stream_that_cannot_hold_its_characters(encoding, args, code):
    """An ASCII or Latin-1 pipe gets the ASCII forms of what it cannot encode (— as -, · as |, × as x), not a
    UnicodeEncodeError traceback (issue 26)."""
    done = subprocess.run([sys.executable, "-m", "kvplan", *args], cwd=ROOT, capture_output=True,
                          env={**_env(), "PYTHONIOENCODING": encoding}, timeout=GUARD_S)
    assert done.returncode == code, done.stderr
    assert b"Traceback" not in done.stderr and b"UnicodeEncodeError" not in done.stderr
    done.stdout.decode(encoding), done.stderr.decode(encoding)  # what arrived is text in the stream's encoding
    if encoding == "ascii" and code == 2:
        assert done.stderr.startswith(b"error: MODEL - unknown model"), done.stderr
