"""`kvplan calibrate`: every real log runs; deterministic figures match; exit codes as documented."""

from __future__ import annotations

import json
from pathlib import Path

from kvplan.engines.vllm.calibrate import calibrate_log, model_dir_name

DATA = Path(__file__).parent / "data"
LOGS = sorted((DATA / "vllm_logs" / "raw").glob("*.log"))
MODELS = DATA / "vllm_models"


def test_calibrate_every_log_json(cli):
    code, out, err = cli("calibrate", *LOGS, "--models-dir", MODELS, "--json")
    assert code == 0, err
    d = json.loads(out)
    s = d["summary"]
    assert s["logs"] == 42 and s["described"] >= 38 and s["deterministic_mismatches"] == 0
    assert s["available_kv_mean_abs_error_percent"] <= 3.0
    for log in d["logs"]:
        if log["status"] != "ok":
            assert log["reason"] and "cannot describe" == log["status"]
            continue
        names = {f["name"]: f for f in log["figures"]}
        assert names["num_gpu_blocks (logged KV memory)"]["match"] is True
        assert names["GPU KV cache size, tokens (logged KV memory)"]["match"] is True
        assert names["maximum concurrency (logged KV memory)"]["match"] is True


def test_calibrate_text_shows_each_figure(cli):
    log = DATA / "vllm_logs" / "raw" / "google-gemma-3-4b-it--h100-80gb--tp1pp1dp1--8192.log"
    code, out, _ = cli("calibrate", log, "--models-dir", MODELS)
    assert code == 0
    for figure in ("weights", "activation peak", "non-torch memory", "CUDA graph estimate", "available KV cache memory",
                   "num_gpu_blocks", "GPU KV cache size", "maximum concurrency", "padding layers"):
        assert figure in out
    assert "62.51" in out and "204,817" in out and "57.05" in out and "match" in out


def test_calibrate_with_model_path(cli):
    log = DATA / "vllm_logs" / "raw" / "qwen-qwen3-8b--h100-80gb--tp1pp1dp1--8192.log"
    code, out, _ = cli("calibrate", log, "--model", DATA / "hf_configs" / "qwen3-8b.json", "--json")
    assert code == 0
    d = json.loads(out)["logs"][0]
    assert d["status"] == "ok" and d["model"] == "qwen3-8b" and d["available_error_percent"] < 1


def test_calibrate_cannot_describe_all_exits_3(cli, tmp_path):
    log = DATA / "vllm_logs" / "raw" / "microsoft-phi-2--h100-80gb--tp1pp1dp1--2048.log"
    code, out, err = cli("calibrate", log, "--models-dir", tmp_path)
    assert code == 3
    assert "cannot describe" in out and "Traceback" not in out + err


def test_calibrate_not_a_log_exits_2(cli, tmp_path):
    bad = tmp_path / "x.log"
    bad.write_text("hello\n")
    code, _, err = cli("calibrate", bad)
    assert code == 2 and err.startswith("error:") and "not a vLLM start-up log" in err
    code, _, err = cli("calibrate", tmp_path / "missing.log")
    assert code == 2 and "cannot read" in err


def test_calibrate_mismatch_exits_1(cli, tmp_path):
    """A log whose logged blocks contradict the model: kvplan says so, exit 1."""
    src = DATA / "vllm_logs" / "raw" / "qwen-qwen3-8b--h100-80gb--tp1pp1dp1--8192.log"
    doctored = tmp_path / "doctored.log"
    doctored.write_text(src.read_text().replace("num_gpu_blocks is: 26168", "num_gpu_blocks is: 27000"))
    code, out, _ = cli("calibrate", doctored, "--models-dir", MODELS)
    assert code == 1 and "MISMATCH" in out


def test_model_dir_name():
    assert model_dir_name("meta-llama/Llama-3.1-8B-Instruct") == "meta-llama--Llama-3.1-8B-Instruct"
    c = calibrate_log(DATA / "vllm_logs" / "raw" / "redhatai-llama-3-3-70b-i--h100-80gb--tp2pp1dp1--8192.log",
                      models_dir=str(MODELS))  # the log spells the org in lower case
    assert c.status == "ok" and c.gpu == "h100-sxm-80gb" and c.tp == 2
