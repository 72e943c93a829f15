"""Refusals where the engine starts are wrong answers too: a key given twice with the same value (Python's YAML
loader, as vLLM uses it, keeps it) and `--hf-overrides` that only set RoPE scaling are read."""

import json

import pytest
import yaml

from kvplan.core import yamlio
from kvplan.core.errors import InputError

YARN = '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}'


def test_a_key_given_twice_with_the_same_value_is_accepted_as_pythons_loader_accepts_it():
    text = "model: meta-llama/Llama-3.1-8B-Instruct\nmax-model-len: 8192\nmax-model-len: 8192\n"
    assert yamlio.load_yaml_text(text, where="x.yaml") == [yaml.safe_load(text)]
    nested = "a:\n  b: [1, {c: 2}]\n  b: [1, {c: 2}]\n"
    assert yamlio.load_yaml_text(nested, where="x.yaml") == [yaml.safe_load(nested)]
    for different in ("max-model-len: 8192\nmax-model-len: 4096\n", "max-model-len: 8192\nmax-model-len: '8192'\n",
                      "a: [1, 2]\na: [1, 3]\n"):
        with pytest.raises(InputError, match="is given twice"):
            yamlio.load_yaml_text(different, where="x.yaml")


def test_a_vllm_config_with_a_repeated_key_is_judged(cli, tmp_path):
    path = tmp_path / "serve.yaml"
    path.write_text("model: meta-llama/Llama-3.1-8B-Instruct\nmax-model-len: 8192\nmax-model-len: 8192\n")
    code, out, _ = cli("check", path, "--gpu", "h100", "--format", "json")
    assert code == 0 and json.loads(out)["verdicts"][0]["max_model_len"] == 8192


@pytest.mark.parametrize("model", ["Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct"])
def test_hf_overrides_that_only_set_rope_scaling_are_read(cli, model):
    """vLLM derives the length from the overridden config (config/model.py _get_and_verify_max_len: yarn starts from
    original_max_position_embeddings): 32,768 x 4 = 131,072. Qwen3-8B's own limit is 40,960."""
    line = f"serve {model} --hf-overrides '{YARN}'"
    code, out, _ = cli("check", "--vllm-args", line, "--gpu", "h200", "--offline", "--format", "json")
    v = json.loads(out)["verdicts"][0]
    assert v["status"] == "pass" and v["max_model_len"] == 131072, v
    code, out, _ = cli("check", "--vllm-args", line + " --max-model-len 131073", "--gpu", "h200", "--offline",
                       "--format", "json")
    v = json.loads(out)["verdicts"][0]
    assert v["status"] == "invalid" and "limit of 131,072 tokens" in v["reason"]


def test_hf_overrides_that_change_the_cache_still_need_a_config_json(cli):
    line = "serve meta-llama/Llama-3.1-8B-Instruct --hf-overrides '{\"num_key_value_heads\": 4}'"
    code, out, _ = cli("check", "--vllm-args", line, "--gpu", "h100", "--offline", "--format", "json")
    v = json.loads(out)["verdicts"][0]
    assert code == 3 and "need the model's config.json" in v["reason"]
