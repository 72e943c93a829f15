"""`trtllm-serve HF_MODEL --backend tensorrt` (issue 28): the server builds the engine at start-up, so the launch
settles the build settings kvplan's band otherwise leaves open.

TensorRT-LLM's serve.py (get_llm_args, at NVIDIA/TensorRT-LLM 00209af; the 0.x revision whose --backend was
Choice(["pytorch"]) with default None, "Default is cpp path") builds BuildConfig(max_batch_size, max_num_tokens,
max_beam_width, max_seq_len) from its flags, each defaulting to BuildConfig's own: 2048, 8192, 1 and None (deduced by
builder.py _init_max_seq_len: max_position_embeddings x the rope factor, except for su / longrope / llama3), and
--kv_cache_free_gpu_memory_fraction 0.9. The values below are those source defaults and hand arithmetic on real
config.json files (tests/data/hf_configs), not kvplan's output.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kvplan.engines.trtllm.build_settings import deduced_max_seq_len, serve_build_options

ROOT = Path(__file__).resolve().parent.parent
HF = ROOT / "tests" / "data" / "hf_configs"
GIB = 2**30


def _cfg(name: str) -> dict:
    return json.loads((HF / f"{name}.json").read_text())


def test_max_seq_len_deduced_as_the_builder_deduces_it():
    """_init_max_seq_len: llama3 and longrope keep max_position_embeddings; linear and yarn multiply it (rounded up);
    no key at all is 2048."""
    assert deduced_max_seq_len(_cfg("llama-3.1-8b")) == 131072  # llama3 x 8: not scaled
    assert deduced_max_seq_len(_cfg("phi-3.5-mini-instruct")) == 131072  # longrope
    assert deduced_max_seq_len(_cfg("gemma-3-27b")) == 131072 * 8  # linear 8.0 (text_config)
    assert deduced_max_seq_len(_cfg("deepseek-v3")) == 163840 * 40  # yarn 40
    assert deduced_max_seq_len(_cfg("mistral-7b-v0.1")) == 32768  # no rope_scaling
    assert deduced_max_seq_len({"model_type": "llama"}) == 2048
    assert deduced_max_seq_len(None) is None


def test_the_build_settings_are_the_flags_or_buildconfig_defaults():
    assert serve_build_options(max_batch_size=None, max_num_tokens=None, max_beam_width=None) == (
        ("backend", "tensorrt"), ("max_batch_size", "2048"), ("max_num_tokens", "8192"))
    assert serve_build_options(max_batch_size=64, max_num_tokens=4096, max_beam_width=1)[1:] == (
        ("max_batch_size", "64"), ("max_num_tokens", "4096"), ("max_beam_width", "1"))


def _verdict(cli, path, *extra):
    code, out, err = cli("check", path, "--gpu", "h100", "--json", *extra)
    return code, json.loads(out)["verdicts"][0], err


def test_a_hub_model_built_at_start_up_leaves_no_build_setting_open(cli, tmp_path):
    """Llama-3.1-8B on an H100: with both build settings given the band is the measured error alone (docs/engines/
    trtllm.md: 50.94 ... 52.36 GiB given, 49.26 ... 57.45 open); trtllm-serve's defaults give exactly that band, and
    the same launch as a kvplan file with the backend but no build settings keeps the open one."""
    (tmp_path / "run.sh").write_text("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --backend tensorrt\n")
    code, served, err = _verdict(cli, tmp_path / "run.sh", "--optimistic")
    assert code == 0, err
    (tmp_path / "given.yaml").write_text("name: g\nengine: trtllm\nmodel: llama-3.1-8b\ngpu: h100\nmax_model_len: 131072\n"
                                         "engine_options:\n  backend: tensorrt\n  max_batch_size: 2048\n"
                                         "  max_num_tokens: 8192\n")
    (tmp_path / "open.yaml").write_text("name: o\nengine: trtllm\nmodel: llama-3.1-8b\ngpu: h100\nmax_model_len: 131072\n"
                                        "engine_options:\n  backend: tensorrt\n")
    _, given, _ = _verdict(cli, tmp_path / "given.yaml", "--optimistic")
    _, open_, _ = _verdict(cli, tmp_path / "open.yaml", "--optimistic")
    assert served["max_model_len"] == 131072
    assert served["figures"]["available_kv_bytes"] == given["figures"]["available_kv_bytes"]
    assert served["figures"]["kv_cache_tokens"] == given["figures"]["kv_cache_tokens"]
    assert served["figures"]["kv_cache_tokens"] % 32 == 0  # 1.x engines: 32-token blocks
    assert any("BuildConfig(max_batch_size=2048, max_num_tokens=8192)" in n for n in served["notes"])
    assert not any("not given: the band spans" in n for n in served["notes"])
    assert any("not given: the band spans" in n for n in open_["notes"])


def test_the_flags_are_the_build_and_a_smaller_batch_holds_more(cli, tmp_path):
    """--max_batch_size 64 builds a 64-request engine: its runtime and decoder buffers (20.2 B x batch x vocabulary,
    budget.py) shrink by about 20.2 x (2048 - 64) x 128,256 B = 4.8 GiB, which the pool gains x 0.9."""
    (tmp_path / "big.sh").write_text("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --backend tensorrt\n")
    (tmp_path / "small.sh").write_text("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --backend tensorrt "
                                       "--max_batch_size 64\n")
    _, big, _ = _verdict(cli, tmp_path / "big.sh", "--optimistic")
    _, small, _ = _verdict(cli, tmp_path / "small.sh", "--optimistic")
    gain = small["figures"]["available_kv_bytes"] - big["figures"]["available_kv_bytes"]
    expected = 20.2 * (2048 - 64) * 128_256 * 0.9
    assert abs(gain - expected) / expected < 0.02, (gain, expected)
    assert any("max_batch_size=64" in n for n in small["notes"])


def test_before_1_0_trtllm_serve_built_an_engine_by_default(cli, tmp_path):
    """A launch pinned to 0.19 with no --backend ran the engine path (serve.py before 1.0: "Default is cpp path"):
    judged with 0.19's rules and the flags' build, not the PyTorch backend and not an open band."""
    (tmp_path / "run.sh").write_text("pip install tensorrt_llm==0.19.0\n"
                                     "trtllm-serve meta-llama/Llama-3.1-8B-Instruct --max_num_tokens 4096\n")
    code, v, err = _verdict(cli, tmp_path / "run.sh")
    assert code in (0, 1), err
    assert "0.19.0" in v["origins"]["engine_release"]
    assert any("BuildConfig(max_batch_size=2048, max_num_tokens=4096)" in n for n in v["notes"])
    assert any("TensorRT-engine backend" in n for n in v["notes"])


def test_a_checkpoint_in_the_repository_is_built_and_its_rope_read(cli, tmp_path):
    """A Hugging Face checkpoint folder beside the launch (Mistral-7B's config.json): built at start-up, max_seq_len
    deduced from its config (32768, no rope scaling), 24 requests of 32K needing 32 x 8 x 128 x 2 x 2 B a token."""
    (tmp_path / "ckpt").mkdir()
    shutil.copy(HF / "mistral-7b-v0.1.json", tmp_path / "ckpt" / "config.json")
    (tmp_path / "run.sh").write_text("trtllm-serve ./ckpt --backend tensorrt\n")
    code, v, err = _verdict(cli, tmp_path / "run.sh")
    assert code in (0, 1), err
    figures = v["figures"]
    assert v["max_model_len"] == 32768
    assert figures["cache_bytes"] == figures["kv_cache_tokens"] * 32 * 8 * 128 * 2 * 2


@pytest.mark.parametrize("line, key", [
    ("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --backend tensorrt --max_beam_width 4", "max_beam_width"),
    ("trtllm-serve deepseek-ai/DeepSeek-V3 --backend tensorrt", "MODEL"),
])
def test_what_the_build_takes_that_kvplan_does_not_model_is_refused(cli, tmp_path, line, key):
    (tmp_path / "run.sh").write_text(line + "\n")
    code, out, _ = cli("check", tmp_path / "run.sh", "--gpu", "h100")
    assert code == 3 and key in out, out


def test_a_kv_dtype_on_the_engine_path_is_refused(cli, tmp_path):
    """TrtLlmArgs.validate_kv_cache_dtype asserts kv_cache_config.dtype == "auto" on the TensorRT backend."""
    (tmp_path / "opts.yaml").write_text("kv_cache_config:\n  dtype: fp8\n")
    (tmp_path / "run.sh").write_text("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --backend tensorrt "
                                     "--extra_llm_api_options opts.yaml\n")
    code, out, _ = cli("check", tmp_path / "run.sh", "--gpu", "h100")
    assert code == 3 and "kv_cache_config.dtype" in out


ENGINE_CONFIG = ROOT / "tests" / "data" / "trtllm_engine_configs" / "achatbot-spark-tts-0.5b-llm-bf16-v0.17.0.post1"


def test_a_tensorrt_llm_checkpoint_is_built_with_its_own_model_and_the_flags_build(cli, tmp_path):
    """A TensorRT-LLM checkpoint folder (convert_checkpoint.py's config.json is the PretrainedConfig an engine keeps as
    pretrained_config; here the published 0.17 engine's, taken whole): read as that model, not as a Hugging Face
    config, and built with the flags' BuildConfig: 24 layers x 2 KV heads x 64 x 2 (K, V) x 2 B = 12,288 B a token,
    max_seq_len its max_position_embeddings (32768, no rotary scaling)."""
    doc = json.loads((ENGINE_CONFIG / "config.json").read_text())["pretrained_config"]
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(doc))
    (tmp_path / "run.sh").write_text("trtllm-serve ./ckpt --backend tensorrt --tp_size 1\n")
    code, out, err = cli("check", tmp_path / "run.sh", "--gpu", "l4", "--json")
    v = json.loads(out)["verdicts"][0]
    assert code == 0, (out, err)
    assert v["max_model_len"] == 32768
    assert v["figures"]["cache_bytes"] == v["figures"]["kv_cache_tokens"] * 12_288
    assert any("BuildConfig(max_batch_size=2048, max_num_tokens=8192)" in n for n in v["notes"])
    doc["quantization"]["quant_algo"] = "W4A16_AWQ"
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(doc))
    code, out, _ = cli("check", tmp_path / "run.sh", "--gpu", "l4")
    assert code == 3 and "quantization.quant_algo" in out and "pretrained_config" not in out


def test_an_engine_takes_tp_1_as_its_own_layout(cli, tmp_path):
    """llm_args.py _load_config_from_engine: a tp_size of 1 (the flags' default) takes the engine's; another that
    differs from it is refused."""
    doc = json.loads((ENGINE_CONFIG / "config.json").read_text())
    doc["pretrained_config"]["mapping"].update(tp_size=2, world_size=2)
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "config.json").write_text(json.dumps(doc))
    (tmp_path / "one.sh").write_text("trtllm-serve ./engine --backend tensorrt --tp_size 1\n")
    (tmp_path / "four.sh").write_text("trtllm-serve ./engine --backend tensorrt --tp_size 4\n")
    code, out, _ = cli("check", tmp_path / "one.sh", "--gpu", "l4", "--json")
    assert json.loads(out)["verdicts"][0]["tensor_parallel_size"] == 2
    code, out, _ = cli("check", tmp_path / "four.sh", "--gpu", "l4")
    assert code == 2 and "does not match the engine's 2" in out
