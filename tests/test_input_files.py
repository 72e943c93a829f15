"""Issue 15, hangs and memory exhaustion: every input file goes through one bounded reader (kvplan/core/files.py).

A FIFO hung every command forever (open() waits for a writer); /dev/zero read until memory ran out. Each case
runs in a subprocess under a timeout, so a regression fails here instead of stalling the suite; the timeout is the
harness's guard, not a speed assertion.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.core import files, jsonio
from kvplan.core.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
M = "llama-3.1-8b"
GUARD_S = 60  # a hang is caught by this; a passing call takes well under a second of it
pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="POSIX FIFOs and /dev/zero")


def kvplan(*args, cwd):
    p = subprocess.run([sys.executable, "-m", "kvplan", *map(str, args)], capture_output=True, text=True, timeout=GUARD_S,
                       cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"})
    assert "Traceback" not in p.stderr, p.stderr
    return p


@pytest.fixture()
def hostile(tmp_path) -> Path:
    os.mkfifo(tmp_path / "fifo.yaml")
    os.mkfifo(tmp_path / "fifo.json")
    os.mkfifo(tmp_path / "fifo.csv")
    os.mkfifo(tmp_path / "fifo.log")
    (tmp_path / "zero-model").mkdir()
    (tmp_path / "zero-model" / "config.json").symlink_to("/dev/zero")
    (tmp_path / "zero-weights").mkdir()
    (tmp_path / "zero-weights" / "config.json").write_text((ROOT / "tests/data/hf_configs/gemma-3-27b.json").read_text())
    (tmp_path / "zero-weights" / "model.safetensors").symlink_to("/dev/zero")
    (tmp_path / "fifo-weights").mkdir()
    (tmp_path / "fifo-weights" / "config.json").write_text((ROOT / "tests/data/hf_configs/gemma-3-27b.json").read_text())
    os.mkfifo(tmp_path / "fifo-weights" / "model.safetensors")
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    os.mkfifo(deploy / "fifo.yaml")
    (deploy / "zero.yml").symlink_to("/dev/zero")
    (deploy / "UPPER.YAML").write_text("name: upper\nengine: vllm\nmodel: llama-3.1-8b\ngpu: h100\nmax_model_len: 8192\n")
    return tmp_path


@pytest.mark.parametrize("args, fragment", [
    (("estimate", "fifo.yaml"), "fifo.yaml — is a FIFO (named pipe), not a regular file"),
    (("estimate", "fifo.json"), "fifo.json — is a FIFO (named pipe)"),
    (("estimate", "/dev/zero"), "/dev/zero — is a character device"),
    (("estimate", "zero-model"), "config.json — is a character device"),
    (("estimate", "zero-weights"), "model.safetensors — is a character device"),
    (("estimate", "fifo-weights"), "model.safetensors — is a FIFO"),
    (("show", "fifo.yaml"), "is a FIFO"),
    (("simulate", M, "-w", "fifo.csv", "--gpu", "h100"), "fifo.csv — is a FIFO"),
    (("simulate", M, "-w", "/dev/zero", "--gpu", "h100"), "/dev/zero — is a character device"),
    (("calibrate", "fifo.log"), "fifo.log — cannot read the file (is a FIFO"),
    (("calibrate", "/dev/zero"), "/dev/zero — cannot read the file (is a character device"),
    (("check", "fifo.yaml", "--gpu", "h100"), "fifo.yaml — is a FIFO"),
    (("check", "--vllm-args", "serve x --config fifo.yaml", "--gpu", "h100"), "fifo.yaml — is a FIFO"),
])
def test_fifos_and_devices_are_refused_naming_the_path(hostile, args, fragment):
    p = kvplan(*args, cwd=hostile)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert fragment in p.stderr, p.stderr


def test_a_device_outside_the_folder_is_not_opened_from_a_command_line(hostile):
    # --vllm-args names files relative to the working folder's repository (docs/check.md "Paths a deployment
    # names"): /dev/zero lies outside it, so it is not opened at all — cannot judge, naming the path only
    p = kvplan("check", "--vllm-args", "serve x --config /dev/zero", "--gpu", "h100", cwd=hostile)
    assert p.returncode == 3, (p.returncode, p.stderr)
    # the report names the path (stdout); stderr says in one line that the deployment cannot be judged
    assert "/dev/zero — is outside the repository" in p.stdout and p.stderr.count("\n") == 1, p.stderr


def test_check_reports_what_a_folder_holds_that_it_cannot_read(hostile):
    # a FIFO, a symlink to a device and an upper-case .YAML were skipped without a word
    p = kvplan("check", "deploy", "--json", cwd=hostile)
    report = json.loads(p.stdout)
    by_file = {v["source"]: v for v in report["verdicts"]}
    assert set(by_file) == {"deploy/UPPER.YAML", "deploy/fifo.yaml", "deploy/zero.yml"}
    assert by_file["deploy/UPPER.YAML"]["status"] == "pass"
    assert by_file["deploy/fifo.yaml"]["status"] == "invalid" and "FIFO" in by_file["deploy/fifo.yaml"]["reason"]
    assert "character device" in by_file["deploy/zero.yml"]["reason"]
    assert p.returncode == 2


def test_the_reader_refuses_more_than_its_limit_even_when_stat_says_nothing(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a" * 101)
    with pytest.raises(InputError, match="more than 100 bytes"):
        files.read_bytes(big, limit=100)
    assert files.read_bytes(big, limit=101) == b"a" * 101
    assert files.read_bytes(big, prefix=8) == b"a" * 8  # a header prefix of a larger file
    # /proc files report a size of 0 and can be longer than the limit: the limit holds on the bytes read
    with pytest.raises(InputError, match="more than 10 bytes"):
        files.read_bytes("/proc/self/status", limit=10)


def test_reader_messages(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        files.read_text(tmp_path / "missing.yaml")
    with pytest.raises(InputError, match="is a directory"):
        files.read_text(tmp_path)
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="is not UTF-8 text"):
        files.read_text(tmp_path / "bin")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(InputError, match="loop of symbolic links"):
        files.read_text(tmp_path / "loop")


# ------------------------------------------------------------------ JSON: duplicate keys and absurd integers

def test_json_refuses_a_key_given_twice(tmp_path):
    # json.loads keeps the last value silently: 32 layers would read as 0
    path = tmp_path / "config.json"
    path.write_text('{"num_hidden_layers": 32, "hidden_size": 4096, "num_hidden_layers": 0}')
    with pytest.raises(InputError, match="'num_hidden_layers' is given twice"):
        jsonio.load_json(path)
    assert json.loads(path.read_text())["num_hidden_layers"] == 0  # what the lenient reader made of it


def test_json_refuses_integers_longer_than_any_real_value():
    with pytest.raises(InputError, match="5,000 digits"):
        jsonio.loads('{"a": ' + "9" * 5000 + "}", where="x.json")
    assert jsonio.loads('{"a": Infinity, "b": NaN, "c": 12}', where="x.json")["c"] == 12


def test_a_workload_with_a_duplicate_key_is_refused(cli, tmp_path):
    w = tmp_path / "w.jsonl"
    w.write_text('{"prompt_tokens": 10, "output_tokens": 20, "prompt_tokens": 9000}\n')
    code, out, err = cli("simulate", M, "-w", w, "--gpu", "h100")
    assert code == 2 and "w.jsonl:1 — key 'prompt_tokens' is given twice" in err


def test_a_config_json_with_a_duplicate_key_is_refused(cli, tmp_path):
    cfg = json.loads((ROOT / "tests/data/hf_configs/gemma-3-27b.json").read_text())
    text = json.dumps(cfg)[:-1] + ', "model_type": "llama"}'
    (tmp_path / "config.json").write_text(text)
    code, out, err = cli("estimate", tmp_path / "config.json")
    assert code == 2 and "is given twice" in err and out == ""
