"""Issue 26, wrong yes: SGLang refuses a --context-length above the length it derives from config.json unless
SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN allows it ("User-specified context_length (N) is greater than the derived
context_length (M) ... set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", configs/model_config.py of
the sglang 0.5.23 wheel; the variable is EnvBool(False) in environ.py from 0.5.3, default "True" in 0.4.4 ...
0.4.10.post2). The file is a real compose file (tests/data/deployments/SOURCES.md) with the one change a careless
hand makes; Llama 3.1's derived length is its max_position_embeddings, 131,072 (rope_type llama3: no factor)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.engines.sglang import context

COMPOSE = Path(__file__).parent / "data" / "deployments" / "compose" / "sglang-llama31-8b-device0.yaml"
QWEN_YARN = Path(__file__).parent / "data" / "public_models" / "Qwen--Qwen3-0.6B" / "config.json"


def _variant(tmp_path, length: int, env: str = "", image: str = "lmsysorg/sglang:latest") -> Path:
    text = COMPOSE.read_text()
    text = text.replace("      --port 30000\n", f"      --port 30000\n      --context-length {length}\n")
    text = text.replace("      HF_TOKEN: <secret>\n", "      HF_TOKEN: <secret>\n" + env)
    text = text.replace("lmsysorg/sglang:latest", image)
    path = tmp_path / "compose.yaml"
    path.write_text(text)
    return path


def _check(cli, path):
    code, out, err = cli("check", path, "--offline", "--gpu", "h100", "--format", "json")
    return code, json.loads(out)["verdicts"][0], err


def test_a_length_past_the_derived_one_is_refused_as_sglang_refuses_it(cli, tmp_path):
    code, verdict, err = _check(cli, _variant(tmp_path, 200000))
    assert code == 2 and verdict["status"] == "invalid", err
    assert "derived context length of 131,072" in verdict["reason"] and context.ALLOW_ENV in verdict["reason"]
    # the derived length itself starts
    code, verdict, err = _check(cli, _variant(tmp_path, 131072))
    assert code == 0 and verdict["status"] == "pass", err


@pytest.mark.parametrize("env, image, code", [
    ("      SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: '1'\n", "lmsysorg/sglang:latest", 0),
    ("      SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: 'yes'\n", "lmsysorg/sglang:v0.5.23", 0),  # EnvBool's "yes"
    ("      SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: 'yes'\n", "lmsysorg/sglang:v0.5.2", 2),  # true / 1 only
    ("      SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: '0'\n", "lmsysorg/sglang:latest", 2),
    ("", "lmsysorg/sglang:v0.4.9", 0),  # 0.4.4-0.4.10: the override is on unless set otherwise
    ("      SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: ${ALLOW}\n", "lmsysorg/sglang:latest", 3),
])
def test_the_override_variable_as_each_release_reads_it(cli, tmp_path, env, image, code):
    got, verdict, err = _check(cli, _variant(tmp_path, 140000, env, image))
    assert got == code, (verdict, err)
    if code == 0:
        assert any(context.ALLOW_ENV in n for n in verdict["notes"]), verdict["notes"]


def test_the_derived_length_follows_sglang_get_context_length():
    # Qwen3-0.6B's config: max_position_embeddings 40960, no rope_scaling
    raw = json.loads(QWEN_YARN.read_text())
    assert context.derived_length(raw, where="x") == raw["max_position_embeddings"] == 40960
    yarn = dict(raw, rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})
    assert context.derived_length(yarn, where="x") == 40960  # original_max_position_embeddings: no factor
    linear = dict(raw, rope_scaling={"rope_type": "linear", "factor": 2.0})
    assert context.derived_length(linear, where="x") == 81920
    assert context.derived_length(dict(raw, seq_length=8192), where="x") == 8192  # seq_length comes first


def test_kvplan_yaml_for_sglang_holds_the_same_limit(cli, tmp_path):
    # kvplan's own format has no environment: the variable is unset, as SGLang 0.5.23 then refuses
    path = tmp_path / "chat.yaml"
    for length, code in ((200000, 2), (131072, 0)):
        path.write_text(f"model: llama-3.1-8b\nengine: sglang\ngpu: h100\nmax_model_len: {length}\n")
        got, verdict, err = _check(cli, path)
        assert got == code, (verdict, err)


def test_estimate_and_plan_judge_the_length_as_check_does(cli):
    # Gemma 2's derived length is 8,192 (max_position_embeddings, no rope_scaling). estimate exited 0 at 16K on
    # SGLang while check refused the same launch, and plan recommended it (tests/test_plan.py's round trip failed)
    code, out, err = cli("estimate", "gemma-2-9b", "--engine", "sglang", "--seq", "16K", "--gpu", "l40s", "--json")
    data = json.loads(out)
    assert code == 1 and data["fits"] is False and data["starts"] is False, err
    assert any("derived context length of 8,192" in n and "refuses to start" in n for n in data["notes"])
    code, out, err = cli("estimate", "gemma-2-9b", "--engine", "sglang", "--seq", "16K", "--gpu", "l40s", "--json",
                         "--engine-option", f"{context.ALLOW_ENV.lower()}=1")
    assert code == 0 and json.loads(out)["fits"] is True, err
    code, out, err = cli("plan", "gemma-2-9b", "--concurrency", "1", "--seq", "16K", "--gpu", "h100,l40s", "--json")
    engines = {p["engine"] for p in json.loads(out)["plans"]}
    assert code in (0, 1) and "sglang" not in engines, engines
