"""NVIDIA NIM containers (issue 27): NIM picks its engine from the profile it selects at start, so a NIM is judged only
where the file shows the engine (a readable vllm-* NIM_MODEL_PROFILE), the model (NIM_MODEL_PATH / NIM_MODEL_NAME)
and what NIM would otherwise take from inside the image (NIM_MAX_MODEL_LEN, NIM_KV_CACHE_PERCENT); then its NIM_*
settings are the vLLM flags they give. Everything else is cannot judge naming the image and what is missing. Real
scripts: tests/data/deployments_2026/nim (SOURCES.md)."""

import json
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "data" / "deployments_2026" / "nim"

FULL = {"NIM_MODEL_PATH": "hf://meta-llama/Llama-3.1-8B-Instruct", "NIM_MODEL_PROFILE": "vllm-bf16-tp1-pp1",
        "NIM_MAX_MODEL_LEN": "32768", "NIM_KV_CACHE_PERCENT": "0.9", "NIM_SERVED_MODEL_NAME": "llama"}


def check(cli, *args):
    code, out, _ = cli("check", *args, "--offline", "--format", "json")
    return code, json.loads(out)["verdicts"]


def compose(tmp_path, env: dict, command: str = "") -> Path:
    lines = "".join(f"      {k}: \"{v}\"\n" for k, v in env.items())
    path = tmp_path / "compose.yaml"
    path.write_text("services:\n  llm:\n    image: nvcr.io/nim/nvidia/llm-nim:2.0.6\n" + command + "    environment:\n"
                    + lines + "    deploy:\n      resources:\n        reservations:\n          devices: "
                    "[{driver: nvidia, count: 1, capabilities: [gpu]}]\n")
    return path


def test_a_nim_that_shows_its_vllm_launch_is_judged_as_that_launch(cli, tmp_path):
    # Llama-3.1-8B at 32,768 tokens: 32 layers x 8 KV heads x 128 x 2 x 2 B = 128 KiB a token, 4.00 GiB a request; the
    # same launch as `vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768 --gpu-memory-utilization 0.9`
    path = compose(tmp_path, FULL)
    code, (v,) = check(cli, path, "--gpu", "l4")
    same, (w,) = check(cli, "--vllm-args", "serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768 "
                                           "--gpu-memory-utilization 0.9", "--gpu", "l4")
    assert code == same == 1 and v["status"] == w["status"] == "fail" and v["max_model_len"] == 32768
    assert v["figures"]["cache_bytes"] == w["figures"]["cache_bytes"]  # the same pool: the flags NIM's settings give
    assert any("vLLM release inside image nvcr.io/nim/nvidia/llm-nim:2.0.6 is not in the file" in n for n in v["notes"])
    code, (v,) = check(cli, path, "--gpu", "h100")
    assert code == 0 and v["status"] == "pass"


def test_the_memory_share_and_the_passthrough_arguments_are_vllms(cli, tmp_path):
    base = check(cli, compose(tmp_path, FULL), "--gpu", "h100")[1][0]["figures"]["cache_bytes"]
    lower = check(cli, compose(tmp_path, {**FULL, "NIM_KV_CACHE_PERCENT": "0.5"}), "--gpu", "h100")[1][0]
    assert lower["figures"]["cache_bytes"] < base
    passthrough = {**FULL, "NIM_PASSTHROUGH_ARGS": "--max-model-len 8192"}  # wins over NIM_MAX_MODEL_LEN
    assert check(cli, compose(tmp_path, passthrough), "--gpu", "h100")[1][0]["max_model_len"] == 8192
    served = compose(tmp_path, FULL, "    command: [nim-serve, --max-model-len, '4096']\n")  # wins over both
    assert check(cli, served, "--gpu", "h100")[1][0]["max_model_len"] == 4096
    tp2 = compose(tmp_path, {**FULL, "NIM_MODEL_PROFILE": "vllm-bf16-tp2-pp1"})  # the profile's layout: 2 GPUs, 1 given
    code, (v,) = check(cli, tp2, "--gpu", "h100")
    assert code == 1 and v["status"] == "fail"


@pytest.mark.parametrize("change, needle", [
    ({"NIM_MODEL_PROFILE": None}, "no readable NIM_MODEL_PROFILE says which engine"),
    ({"NIM_MODEL_PROFILE": "07cd4f2bddd7a14ca84bab0a32602889fd0ae0eb76dc2eb0fc32594d065011a4"}, "is a hash id"),
    ({"NIM_MODEL_PROFILE": "tensorrt_llm-h100-fp8-tp1-pp1-throughput"}, "its tensorrt_llm engine's settings are NIM's own"),
    ({"NIM_MODEL_PATH": None}, "the checkpoint built into the image"),
    ({"NIM_MAX_MODEL_LEN": None}, "NIM_MAX_MODEL_LEN is not set"),
    ({"NIM_KV_CACHE_PERCENT": None}, "NIM_KV_CACHE_PERCENT is not set"),
    ({"NIM_RELAX_MEM_CONSTRAINTS": "1"}, "NIM_RELAX_MEM_CONSTRAINTS, a NIM setting kvplan does not read"),
])
def test_what_the_file_does_not_show_is_named(cli, tmp_path, change, needle):
    env = {k: v for k, v in {**FULL, **change}.items() if v is not None}
    code, (v,) = check(cli, compose(tmp_path, env), "--gpu", "h100")
    assert code == 3 and v["status"] == "cannot_judge" and needle in v["reason"], v["reason"]
    assert "NVIDIA NIM (image nvcr.io/nim/nvidia/llm-nim:2.0.6)" in v["reason"]


def test_a_docker_run_of_a_nim_keeps_its_gpus_and_settings(cli, tmp_path):
    env = " ".join(f"-e {k}={v}" for k, v in FULL.items())
    path = tmp_path / "run.sh"
    path.write_text(f"docker run --gpus '\"device=0\"' {env} nvcr.io/nim/nvidia/llm-nim:2.0.6\n")
    code, (v,) = check(cli, path, "--gpu", "h100")
    assert code == 0 and v["status"] == "pass" and v["gpus"] == 1


def test_the_real_nim_scripts_are_cannot_judge_naming_why(cli):
    code, verdicts = check(cli, CORPUS)
    reasons = {Path(v["source"]).name: v["reason"] for v in verdicts}
    assert code == 3 and all(v["status"] == "cannot_judge" for v in verdicts) and len(reasons) == 7
    assert "NIM_KVCACHE_PERCENT, a NIM setting kvplan does not read" in reasons["nthlabs-llm-llama31-8b-instruct-nim.sh"]
    for name in ("nvidia-gtc25-test_containerC.sh", "vmware-run_Llama3-8b-Instruct.sh"):
        assert "no readable NIM_MODEL_PROFILE" in reasons[name] and "nvcr.io/nim/meta/llama3-8b-instruct" in reasons[name]
