"""`kvplan calibrate`: the 42 H100 logs match; every figure it can compare is compared; never a silent pass; exit
codes and --json on every path as documented (docs/engines/calibration.md)."""

from __future__ import annotations

import json
import re
from decimal import Decimal

from kvplan.engines.logcheck import CANNOT_JUDGE, INVALID, MATCH, MISMATCH, calibrate_path
from kvplan.engines.vllm.calibrate import calibrate_log, model_dir_name
from log_data import DATA, index, raw_files, text

LOGS = sorted((DATA / "vllm_logs" / "raw").glob("*.log"))
MODELS = DATA / "vllm_models"
PUBLIC = {r["id"]: r for r in index("vllm_logs_public")}


def test_calibrate_every_log_json(cli):
    code, out, err = cli("calibrate", *LOGS, "--models-dir", MODELS, "--json")
    assert code == 0, err
    d = json.loads(out)
    s = d["summary"]
    assert (s["logs"], s["matched"], s["mismatched"], s["cannot_judge"], s["invalid"], s["exit_code"]) == (42, 42, 0, 0, 0, 0)
    assert s["described"] == 42 and s["deterministic_mismatches"] == 0 and d["error"] is None and d["site"] is None
    assert s["available_kv_mean_abs_error_percent"] <= 3.0 and s["scored"] == 42
    for log in d["logs"]:
        assert log["status"] == MATCH and not log["assumed"]
        names = {f["name"]: f for f in log["figures"]}
        assert names["num_gpu_blocks (logged KV memory)"]["match"] is True
        assert names["GPU KV cache size, tokens (logged blocks)"]["match"] is True
        assert names["maximum concurrency (logged blocks)"]["match"] is True


def test_calibrate_text_shows_each_figure(cli):
    log = DATA / "vllm_logs" / "raw" / "google-gemma-3-4b-it--h100-80gb--tp1pp1dp1--8192.log"
    code, out, _ = cli("calibrate", log, "--models-dir", MODELS)
    assert code == 0
    for figure in ("weights", "activation peak", "non-torch memory", "CUDA graph estimate", "available KV cache memory",
                   "num_gpu_blocks", "GPU KV cache size", "maximum concurrency", "padding layers", "logged pool",
                   "modelled"):
        assert figure in out
    assert "62.51" in out and "204,817" in out and "57.05" in out and "match: " in out


def test_calibrate_with_model_path(cli):
    log = DATA / "vllm_logs" / "raw" / "qwen-qwen3-8b--h100-80gb--tp1pp1dp1--8192.log"
    code, out, _ = cli("calibrate", log, "--model", DATA / "hf_configs" / "qwen3-8b.json", "--json")
    assert code == 0
    d = json.loads(out)["logs"][0]
    assert d["status"] == MATCH and d["model"] == "qwen3-8b" and d["available_error_percent"] < 1


def test_calibrate_cannot_describe_exits_3(cli, tmp_path):
    log = DATA / "vllm_logs" / "raw" / "microsoft-phi-2--h100-80gb--tp1pp1dp1--2048.log"
    code, out, err = cli("calibrate", log, "--models-dir", tmp_path)
    assert code == 3
    assert "cannot judge: cannot describe" in out and "Traceback" not in out + err


def test_calibrate_not_a_log_exits_2_and_json_stays_one_object(cli, tmp_path):
    bad = tmp_path / "x.log"
    bad.write_text("hello\n")
    code, out, err = cli("calibrate", bad)
    assert code == 2 and err.startswith("error:") and "not an engine start-up log" in err
    code, out, _ = cli("calibrate", tmp_path / "missing.log", "--json")
    d = json.loads(out)
    assert code == 2 and d["logs"][0]["status"] == INVALID and "cannot read" in d["logs"][0]["reason"]
    for args in ((), ("--model", "no-such-model"), (LOGS[0], "--engine", "vlm"),
                 (LOGS[0], "--calibration", tmp_path / "none.yaml")):
        code, out, err = cli("calibrate", *args, "--json")
        d = json.loads(out)  # one object even for a usage error, and the contract's one stderr line beside it
        assert code == 2 and d["error"]["exit_code"] == 2 and d["logs"] == []
        assert err.count("\n") == 1 and err.startswith(f"error: {d['error']['where']} — {d['error']['what']}")


def test_calibrate_mismatch_exits_1(cli, tmp_path):
    """A log whose logged blocks contradict its logged memory: kvplan says so, exit 1."""
    src = DATA / "vllm_logs" / "raw" / "qwen-qwen3-8b--h100-80gb--tp1pp1dp1--8192.log"
    doctored = tmp_path / "doctored.log"
    doctored.write_text(src.read_text().replace("num_gpu_blocks is: 26168", "num_gpu_blocks is: 27000"))
    code, out, _ = cli("calibrate", doctored, "--models-dir", MODELS)
    assert code == 1 and "MISMATCH" in out


def test_tokens_and_concurrency_are_compared_without_a_num_gpu_blocks_line(tmp_path):
    """Issue 11: a real inconsistency passed because "GPU KV cache size" and "Maximum concurrency" were compared only
    after a num_gpu_blocks line. Without that line (an excerpt) both follow from the logged KV memory: Qwen3-8B at
    TP 1, 36 layers x 8 KV heads x 128 x 2 x 2 B x 16 tokens = 2,359,296 B a block; 57.5 GiB (+-0.005) holds
    26,166-26,171 blocks, 418,656-418,736 tokens: the logged 418,688 is among them."""
    src = DATA / "vllm_logs" / "raw" / "qwen-qwen3-8b--h100-80gb--tp1pp1dp1--8192.log"
    lines = [x for x in src.read_text().splitlines() if "num_gpu_blocks is" not in x]
    excerpt = tmp_path / "excerpt.log"
    excerpt.write_text("\n".join(lines))
    r = calibrate_log(excerpt, models_dir=str(MODELS))
    by = {f.name: f for f in r.figures}
    tokens = by["GPU KV cache size, tokens (logged KV memory)"]
    # blocks = memory // bytes per block, at both ends of the printed interval
    lo, hi = int(Decimal("57.495") * 2**30) // 2359296, int(Decimal("57.505") * 2**30) // 2359296
    assert tokens.predicted == f"{lo * 16:,}–{hi * 16:,}" and tokens.match is True and r.status == MATCH
    assert by["maximum concurrency (logged KV memory)"].match is True
    excerpt.write_text("\n".join(x.replace("GPU KV cache size: 418,688 tokens", "GPU KV cache size: 450,000 tokens")
                                 for x in lines))
    r = calibrate_log(excerpt, models_dir=str(MODELS))
    assert r.status == MISMATCH and "GPU KV cache size" in r.reason


def test_an_assumed_tp_is_never_a_pass(tmp_path):
    """An excerpt of a TP 2 log that keeps only the capacity lines (from Worker_TP0 and EngineCore): TP is not stated,
    the labels show ranks up to TP0 only, so TP 1 is assumed and the verdict is "cannot judge", not "match"."""
    src = DATA / "vllm_logs" / "raw" / "qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192.log"
    keep = [x for x in src.read_text().splitlines() if re.search(r"Available KV cache memory|GPU KV cache size|Maximum "
                                                                 r"concurrency|num_gpu_blocks is", x)]
    excerpt = tmp_path / "tp2-excerpt.log"
    excerpt.write_text("\n".join(keep))
    r = calibrate_log(excerpt, model=str(MODELS / "Qwen--Qwen2.5-7B-Instruct"))
    assert r.status == CANNOT_JUDGE and r.tp == 1 and any(a.startswith("TP 1") for a in r.assumed)
    # the block count follows from the logged memory only at TP 2: under the assumed TP 1 it "differs", and that is
    # reported, but as resting on the assumption
    blocks = next(f for f in r.figures if f.name == "num_gpu_blocks (logged KV memory)")
    assert blocks.match is False and blocks.assumed


def test_the_wrapped_tp2_log_matches_at_tp2(tmp_path):
    src = DATA / "vllm_logs" / "raw" / "qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192.log"
    width = 117  # a terminal's columns: every line cut into pieces of this width, mid-word
    cut = "\n".join(line[i:i + width] for line in src.read_text().splitlines() for i in range(0, max(len(line), 1), width))
    log = tmp_path / "wrapped.log"
    log.write_text(cut)
    r = calibrate_log(log, models_dir=str(MODELS))
    assert (r.status, r.tp) == (MATCH, 2)
    assert any("hard-wrapped" in x for x in r.read)


def test_a_negative_logged_budget_is_not_a_negative_error(cli):
    """gpt-oss-120b on one H100: vLLM logged -2.14 GiB of KV memory; the mean absolute error leaves it out."""
    log = raw_files("vllm_logs_public", PUBLIC["vllm-issue23278-h100-gpt-oss-120b-negative-kv"])[0]
    code, out, _ = cli("calibrate", log, "--model", DATA / "hf_configs" / "gpt-oss-120b.json", "--gpu", "h100-sxm-80gb",
                       "--json")
    d = json.loads(out)
    entry = d["logs"][0]
    assert entry["available_error_percent"] is None and entry["available_error_gib"] > 0
    assert d["summary"]["available_kv_mean_abs_error_percent"] is None and d["summary"]["scored"] == 0
    assert code == 3  # the release is not stated: 0.19 rules assumed


def test_a_log_cut_before_its_kv_figures_cannot_be_judged(cli, tmp_path):
    """Issue 15: a real log cut before vLLM printed "Available KV cache memory" (and every pool line after it) has
    nothing kvplan can judge: exit 3 with the reason, never "0 mismatches" and exit 0."""
    src = LOGS[0].read_text(encoding="utf-8")
    cut = tmp_path / "cut.log"
    cut.write_text(src[:src.index("Available KV cache memory")].rsplit("\n", 1)[0] + "\n", encoding="utf-8")
    code, out, err = cli("calibrate", cut, "--models-dir", MODELS)
    assert code == 3 and "cannot judge: nothing in the log could be compared" in err
    code, out, _ = cli("calibrate", cut, "--models-dir", MODELS, "--json")
    d = json.loads(out)
    assert code == 3 and d["summary"]["exit_code"] == 3 and (d["summary"]["matched"], d["summary"]["cannot_judge"]) == (0, 1)
    entry = d["logs"][0]
    assert entry["status"] == CANNOT_JUDGE and not any(f["match"] is not None for f in entry["figures"])
    assert entry["available_error_percent"] is None and d["summary"]["available_kv_mean_abs_error_percent"] is None


def test_a_pool_after_a_negative_logged_kv_memory_is_a_mismatch(cli, tmp_path):
    """Issue 15: the first H100 log with its "Available KV cache memory: 61.66 GiB" made negative. No vLLM release
    builds a pool from a KV memory <= 0 (v1/core/kv_cache_utils.py raises "No available memory for the cache blocks"
    before it logs "GPU KV cache size"), so a log that still prints 7,891 blocks contradicts itself: a mismatch
    (exit 1), not a pass. The mean absolute error leaves the negative memory out (it is never negative), and the
    error in GiB is the plain difference: kvplan's modelled memory minus the logged one."""
    src = LOGS[0].read_text(encoding="utf-8")
    assert "Available KV cache memory: 61.66 GiB" in src and "num_gpu_blocks is: 7891" in src
    negative = tmp_path / "negative.log"
    negative.write_text(src.replace("Available KV cache memory: 61.66 GiB", "Available KV cache memory: -61.66 GiB"),
                        encoding="utf-8")
    code, out, _ = cli("calibrate", negative, "--models-dir", MODELS, "--json")
    d = json.loads(out)
    s, entry = d["summary"], d["logs"][0]
    assert code == 1 and s["exit_code"] == 1 and entry["status"] == MISMATCH
    assert s["available_kv_mean_abs_error_percent"] is None and s["scored"] == 0 and entry["available_error_percent"] is None
    by = {f["name"]: f for f in entry["figures"]}
    stop = by["KV pool after the logged KV memory (-61.66 GiB)"]
    assert (stop["logged"], stop["predicted"], stop["match"], stop["assumed"]) == ("7,891 blocks", "none", False, [])
    memory = by["available KV cache memory (modelled)"]
    modelled_gib = float(memory["predicted"])
    assert memory["logged"] == "-61.66" and "%" not in memory["difference"]  # no percent of a negative figure
    assert abs(entry["available_error_gib"] - (modelled_gib + 61.66)) < 0.01
    # the same log as printed: the same modelled memory, 2 x 61.66 GiB nearer, and a match
    code, out, _ = cli("calibrate", LOGS[0], "--models-dir", MODELS, "--json")
    plain = json.loads(out)["logs"][0]
    assert code == 0 and plain["status"] == MATCH
    assert abs(entry["available_error_gib"] - plain["available_error_gib"] - 2 * 61.66) < 0.002


def test_public_logs_are_read_and_none_passes_on_an_assumption():
    """Every public vLLM log is read, and none passes on an assumption: a log compared under assumed rules (a
    release kvplan does not model, or none stated; an assumed TP) is at most "cannot judge". A log whose release
    line kvplan models and that states everything it needs may match (abinav-l4-v0110-llama31-8b: vLLM 0.11.0,
    TP and PP from the engine config, its blocks, tokens and concurrency as logged)."""
    for rid, rec in PUBLIC.items():
        r = calibrate_path(raw_files("vllm_logs_public", rec)[0])
        assert r.status in (CANNOT_JUDGE, INVALID) or (r.status == MATCH and not r.assumed and r.rules), rid
        assert r.status != INVALID or not text("vllm_logs_public", rec).strip() or r.reason


def test_model_dir_name():
    assert model_dir_name("meta-llama/Llama-3.1-8B-Instruct") == "meta-llama--Llama-3.1-8B-Instruct"
    c = calibrate_log(DATA / "vllm_logs" / "raw" / "redhatai-llama-3-3-70b-i--h100-80gb--tp2pp1dp1--8192.log",
                      models_dir=str(MODELS))  # the log spells the org in lower case
    assert c.status == MATCH and c.gpu == "h100-sxm-80gb" and c.tp == 2


def test_a_large_pool_printed_to_a_hundredth_of_a_gib_is_judged_inside_its_interval():
    """4x A100 gpt-oss-120b at TP 4 (tests/data/vllm_logs_public, vLLM 0.10.1.1): 45.32 GiB spans more block counts
    than calibrate evaluates one by one (MAX_CANDIDATES). The logged 2,640,144 tokens lie between the interval's ends
    and are one block count's exact figure; judged by the ends alone they were called a mismatch."""
    r = calibrate_path(raw_files("vllm_logs_public", PUBLIC["dennislee-4xa100-80gb-v01011-gpt-oss-120b-tp4-ray"])[0])
    tokens = next(f for f in r.figures if f.name.startswith("GPU KV cache size"))
    assert tokens.logged == "2,640,144" and tokens.match is True
    assert r.status == MATCH and r.tp == 4
