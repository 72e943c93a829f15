"""Every command survives a careless user: bad input gets one line on stderr, `error: <where> — <what> (<hint>)`,
exit 2 (3 for what kvplan does not model), no traceback, nothing on stdout and no half-written -o file.

The cases come from a driver that threw ~1000 bad inputs at every command (malformed, empty, binary and deeply
nested files, folders for files, zero/negative/huge/inf/nan numbers, unknown names and keys, impossible
parallelism, unwritable -o paths). Those whose cause lives outside the commands are below,
each naming the module to fix. In-process (CliRunner) except where the entry point's own handling matters.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
LOGS = ROOT / "tests" / "data" / "vllm_logs" / "raw"
M = "llama-3.1-8b"
BIG = str(2**70)
SAMPLE = str(EXAMPLES / "workloads" / "sample.csv")


@pytest.fixture(scope="module")
def bad(tmp_path_factory) -> Path:
    """Small bad files, written once for the module."""
    d = tmp_path_factory.mktemp("bad")
    (d / "binary.csv").write_bytes(b"\xff\xfe\x00" + bytes(range(256)))
    (d / "bom.csv").write_text("\ufeffprompt_tokens,output_tokens\n100,200\n", encoding="utf-8")
    (d / "longfield.csv").write_text("prompt_tokens,output_tokens\n" + "1" * 200_000 + ",2\n")
    (d / "missing.csv").write_text("prompt_tokens,output_tokens\n5\n")
    (d / "deep.json").write_text("[" * 10_000 + "]" * 10_000)
    (d / "deep.jsonl").write_text("[" * 10_000 + "]" * 10_000 + "\n")
    (d / "big.jsonl").write_text('{"prompt_tokens": 1e30, "output_tokens": 2}\n')
    (d / "typo.yaml").write_text("prompt_tokens: {p50: 100}\noutput_tokens: {p50: 100}\nrequest: 10\n")
    (d / "folder.csv").mkdir()
    (d / "notvllm.log").write_text("hello\nnot a vLLM log\n")
    log = sorted(LOGS.glob("*.log"))[0].read_text(encoding="utf-8")
    model_id = next(line.split("model='", 1)[1].split("'", 1)[0] for line in log.splitlines() if "model='" in line)
    (d / "unknown-model.log").write_text(log.replace(model_id, "acme/Not-A-Real-Model-7B"), encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def invoke():
    from typer.testing import CliRunner

    from kvplan.cli import entry as kvcli

    kvcli.register_commands()
    runner = CliRunner()

    def run(*args):
        return runner.invoke(kvcli.app, [str(a) for a in args])

    return run


def assert_one_error(result, code: int, fragment: str, *, stdout_empty: bool = True) -> str:
    """The contract for bad input: the exit code, one `error: <where> — <what>` line, no traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("note:")]
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("error: ") and " — " in line, line
    assert fragment in line, line
    assert result.exit_code == code, (result.exit_code, line)
    if stdout_empty:
        assert result.stdout == "", result.stdout[:300]
    return line


# (args, exit code, fragment of the error line); "{d}" is the folder of bad files
CASES = [
    # simulate: workload files and flags
    (("simulate", M, "-w", "", "--gpu", "h100"), 2, "--workload — is empty"),
    (("simulate", M, "-w", "{d}/folder.csv", "--gpu", "h100"), 2, "is a directory"),
    (("simulate", M, "-w", "{d}/binary.csv", "--gpu", "h100"), 2, "is not UTF-8 text"),
    (("simulate", M, "-w", "{d}/longfield.csv", "--gpu", "h100"), 2, "is not a CSV file"),
    (("simulate", M, "-w", "{d}/missing.csv", "--gpu", "h100"), 2, "output_tokens — is missing"),
    (("simulate", M, "-w", "{d}/deep.json", "--gpu", "h100"), 2, "deep.json — is nested too deeply"),
    (("simulate", M, "-w", "{d}/deep.jsonl", "--gpu", "h100"), 2, "deep.jsonl:1 — is nested too deeply"),
    (("simulate", M, "-w", "{d}/big.jsonl", "--gpu", "h100"), 2, "more than the limit"),
    (("simulate", M, "-w", "{d}/typo.yaml", "--gpu", "h100"), 2, "did you mean 'requests'?"),
    (("simulate", M, "-w", "prompt=p50:100;output=p50:100;requets=5", "--gpu", "h100"), 2, "did you mean 'requests'?"),
    (("simulate", M, "-w", "prompt=p50:100;output=p50:100;requests=0", "--gpu", "h100"), 2, "at least 1 request, got 0"),
    (("simulate", M, "-w", f"prompt=p50:100;output=p50:100;requests={BIG}", "--gpu", "h100"), 2, "limit of 1,000,000"),
    (("simulate", M, "-w", SAMPLE, "--gpu", "h100", "--shared-prefix", BIG), 2, "--shared-prefix —"),
    (("simulate", M, "-w", SAMPLE, "--gpu", "h100", "--policies", "paged,exakt"), 2, "did you mean 'exact'?"),
    # a simulation that would run for minutes is refused up front instead of looking like a hang
    (("simulate", M, "-w", "prompt=p50:100;output=p50:1000;requests=100000", "--seq", "2048", "--kv-cache-memory", "1GiB"),
     2, "engine steps"),
    # sweep / plot: one-value flags are refused before any row is printed
    (("sweep", M, "--gpu", "h100", "--gpu-util", "nan", "-f", "csv"), 2, "--gpu-util — 'nan' is not a number"),
    (("sweep", M, "--gpu", "h100", "--dtype", "int3"), 2, "--dtype — unknown weight dtype"),
    (("sweep", M, "--engine", "vllm", "--kv-cache-memory", "0"), 2, "--kv-cache-memory — must be positive"),
    (("sweep", M, "--engine", "vllm", "--block-size", "0"), 2, "--block-size — must be at least 1"),
    (("sweep", M, "--kv-dtype", "bf61,bf16"), 2, "--kv-dtype — unknown KV dtype 'bf61' (did you mean 'bf16'?)"),
    (("sweep", M, "--seq", "a..b"), 2, "--seq — 'a' is not a token count"),
    (("sweep", M, "--gpu", "h100", "--gpu-mem", "80GiB"), 2, "not both"),
    (("sweep", M, "--reserve", "1GiB"), 2, "--reserve needs a GPU"),
    (("plot", M, "--width", "0"), 2, "--width — must be from 20 to 1000"),
    (("plot", M, "--height", "100000"), 2, "--height — must be from 6 to 500"),
    (("plot", M, "--gpu", "h100", "--gpu-util", "2"), 2, "--gpu-util — must be in (0, 1]"),
    # explain / probe: values located at their flag
    (("explain", M, "--gpu", "h100", "--prompt", "0"), 2, "--prompt — must be positive"),
    (("probe", M, "--device", "meta", "--seq", "1K", "--batch", BIG), 2, "--batch — 1180591620717411303424 is implausibly large"),
    (("probe", M, "--device", "meta", "--seq", "1K", "--layout", "paged", "--num-blocks", BIG), 2, "--num-blocks —"),
    (("probe", M, "--device", ""), 2, "--device — is empty"),
    (("probe", M, "--device", "meta", "--find-max", "--max-fraction", "2"), 2, "--max-fraction — must be in (0, 1]"),
    # calibrate: a wrong --model/--models-dir is bad input (2), a log of an unknown model is "cannot describe" (3)
    (("calibrate", "{log}", "--model", "no-such-model"), 2, "--model no-such-model — unknown model"),
    (("calibrate", "{log}", "--models-dir", "{d}/nowhere"), 2, "--models-dir {d}/nowhere — no such folder"),
    (("calibrate", "{d}/notvllm.log"), 2, "notvllm.log — not an engine start-up log"),
    (("calibrate", "{d}/folder.csv"), 2, "folder.csv — cannot read the file"),
]


@pytest.mark.parametrize("args, code, fragment", CASES, ids=[" ".join(c[0][:1] + c[0][2:5])[:60] for c in CASES])
def test_bad_input_gets_one_error_line(invoke, bad, args, code, fragment):
    log = sorted(LOGS.glob("*.log"))[0]
    fill = lambda a: a.replace("{d}", str(bad)).replace("{log}", str(log))  # noqa: E731
    line = assert_one_error(invoke(*map(fill, args)), code, fill(fragment))
    assert line.count(str(bad)) <= 1  # a path is named once, as the <where>


def test_calibrate_of_an_unknown_model_exits_3_with_an_error_line(invoke, bad):
    result = invoke("calibrate", bad / "unknown-model.log")
    assert_one_error(result, 3, "cannot describe the log's model", stdout_empty=False)
    assert "cannot describe" in result.stdout  # the report still lists the log


def test_a_spreadsheet_csv_with_a_byte_order_mark_reads(invoke, bad):
    result = invoke("simulate", M, "-w", bad / "bom.csv", "--gpu", "h100", "--json")
    assert result.exit_code == 0, result.stderr


# ------------------------------------------------------------------ human output at common widths

HUMAN = [
    ("simulate", "llama-2-7b", "--workload", str(EXAMPLES / "workloads" / "chat-sharegpt-like.yaml"), "--seq", "2048", "--gpu", "a100-40gb"),
    ("explain", M, "--seq", "8K", "--gpu", "h100"),
    ("explain", "deepseek-v3", "--seq", "32K", "--gpu", "h200", "--tp", "8"),
    ("sweep", M, "--seq", "4K..128K*2", "--batch", "1,64", "--kv-dtype", "bf16,fp8", "--gpu", "h100,l40s", "--engine", "static,vllm"),
    ("plot", "llama-3.1-70b", "--gpu", "h100,h200", "--tp", "2,4", "--kv-dtype", "bf16,fp8", "--batch", "16"),
    ("calibrate", str(sorted(LOGS.glob("*.log"))[0])),
    ("check", str(EXAMPLES / "deploy" / "prod")),
]


@pytest.mark.parametrize("columns", ["100", "120"])
@pytest.mark.parametrize("args", HUMAN, ids=[a[0] + " " + a[1] for a in HUMAN])
def test_no_figure_is_cut_at_common_terminal_widths(invoke, monkeypatch, args, columns):
    monkeypatch.setenv("COLUMNS", columns)
    result = invoke(*args)
    assert result.exit_code in (0, 1), result.stderr
    assert "…" not in result.stdout


def test_calibrate_figures_carry_their_units(invoke):
    out = invoke("calibrate", sorted(LOGS.glob("*.log"))[0]).stdout
    assert " GiB" in out and "x " in out  # memory in GiB, concurrency as a multiple


# ------------------------------------------------------------------ -o files: whole or not at all

def test_output_into_a_missing_folder_creates_nothing(invoke, tmp_path):
    target = tmp_path / "missing" / "report.json"
    assert_one_error(invoke("check", EXAMPLES / "deploy" / "prod" / "chat-8b.yaml", "--json", "-o", target), 2,
                     "its folder does not exist", stdout_empty=False)
    assert not target.parent.exists()


def test_output_onto_a_folder_is_refused(invoke, tmp_path):
    assert_one_error(invoke("check", EXAMPLES / "deploy" / "prod" / "chat-8b.yaml", "--json", "-o", tmp_path), 2,
                     "is a directory", stdout_empty=False)


def test_a_failed_plot_leaves_no_file(invoke, tmp_path):
    pytest.importorskip("matplotlib")  # without it plot refuses -o first, for that reason
    target = tmp_path / "chart.png"
    assert_one_error(invoke("plot", M, "--gpu", "h100", "--tp", "3", "-o", target), 2, "--tp —")
    assert not target.exists()


def test_write_file_is_atomic(tmp_path):
    from kvplan.core.errors import InputError
    from kvplan.core.io import write_file

    target = tmp_path / "report.txt"
    target.write_text("the old report")

    def broken(path):  # writes half, then fails like a full disk
        with open(path, "w") as f:
            f.write("half of the new rep")
        raise OSError(28, "No space left on device")

    with pytest.raises(InputError, match="no space left"):
        write_file(str(target), broken)
    assert target.read_text() == "the old report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.txt"]  # no temporary file left behind

    def interrupted(path):
        Path(path).write_text("partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_file(str(target), interrupted)
    assert target.read_text() == "the old report" and len(list(tmp_path.iterdir())) == 1

    write_file(str(target), lambda path: Path(path).write_text("new"))
    assert target.read_text() == "new"
    assert oct(target.stat().st_mode & 0o777) != oct(0o600)  # not mkstemp's private mode


# ------------------------------------------------------------------ the entry point itself

def kvplan(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "kvplan", *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env={**os.environ, "COLUMNS": "120"})


def test_usage_errors_through_the_entry_point_are_one_line():
    p = kvplan("sweep", M, "--block-size", "abc")
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "--block-size" in p.stderr


def _sigint_default():
    """Children of a background job start with SIGINT ignored (POSIX); a user's terminal delivers it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_in_a_long_sweep_says_interrupted_without_a_traceback():
    proc = subprocess.Popen([sys.executable, "-m", "kvplan", "sweep", M, "--seq", "1..100000+1", "--gpu", "h100,a100-80gb",
                             "--engine", "vllm", "-f", "csv"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_sigint_default)
    try:
        assert proc.stdout.readline().startswith(b"model,")  # streaming has begun
        proc.stdout.readline()
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130  # the shell's convention for SIGINT
    assert b"Traceback" not in err and b"error: interrupted" in err


# ------------------------------------------------------------------ rooted in modules owned elsewhere

def test_a_very_long_model_name_is_an_unknown_model(invoke):
    assert_one_error(invoke("estimate", "x" * 5000), 2, "unknown model")


def test_sglang_with_an_absurd_chunk_size_is_bad_input():
    p = kvplan("estimate", M, "--engine", "sglang", "--gpu", "h100", "--max-num-batched-tokens", BIG)
    assert p.returncode == 2 and "Traceback" not in p.stderr and p.stderr.startswith("error: --max-num-batched-tokens — ")


def test_a_bad_seq_is_located_at_its_flag(invoke):
    assert_one_error(invoke("estimate", M, "--seq", "0"), 2, "--seq — must be positive")


def test_an_unknown_kv_dtype_is_located_at_its_flag(invoke):
    assert_one_error(invoke("estimate", M, "--kv-dtype", "bf61"), 2, "--kv-dtype — unknown KV dtype")


def test_a_deeply_nested_model_file_names_the_file(invoke, bad):
    assert_one_error(invoke("estimate", bad / "deep.json"), 2, "deep.json — ")


def test_models_table_is_not_cut_at_100_columns(invoke, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert "…" not in invoke("models").stdout


def test_simulate_with_no_room_for_the_cache_is_a_no_not_bad_input(invoke):
    # the weights alone exceed an L4: a definite "does not fit" (exit 1), as estimate says for the same case
    result = invoke("simulate", "llama-3.1-70b", "--workload", str(ROOT / "examples" / "workloads" / "sample.csv"),
                    "--seq", "2048", "--gpu", "l4")
    assert result.exit_code == 1 and "no memory is left for the KV cache" in result.stderr


# ------------------------------------------------------------------ issue 15: calibrate's two wrong passes

def _real_log_text() -> str:
    return sorted(LOGS.glob("*.log"))[0].read_text(encoding="utf-8")


def test_calibrate_of_a_log_where_nothing_could_be_compared_is_not_a_pass(invoke, tmp_path):
    # a real log cut before vLLM printed its KV cache figures: every comparison is empty
    text = _real_log_text()
    log = tmp_path / "cut.log"
    log.write_text(text[:text.index("Available KV cache memory")].rsplit("\n", 1)[0] + "\n", encoding="utf-8")
    result = invoke("calibrate", log)
    assert result.exit_code in (2, 3), (result.exit_code, result.stdout[-300:])


def test_a_mean_absolute_error_is_never_negative(invoke, tmp_path):
    import json
    import re

    log = tmp_path / "negative.log"
    # vLLM logs a negative available memory when the weights and activations exceed the budget
    log.write_text(re.sub(r"Available KV cache memory: ([0-9.]+) GiB", r"Available KV cache memory: -\1 GiB", _real_log_text()),
                   encoding="utf-8")
    summary = json.loads(invoke("calibrate", log, "--json").stdout)["summary"]
    assert summary["available_kv_mean_abs_error_percent"] is None or summary["available_kv_mean_abs_error_percent"] >= 0
