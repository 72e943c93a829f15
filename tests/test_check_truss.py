"""Truss (Baseten) config.yaml files, verbatim (tests/data/deployments_2026/truss, SOURCES.md): the docker_server's
start_command is the launch, resources.accelerator the GPU kind and count, base_image's tag the release."""

import json
from pathlib import Path

from kvplan.check import gpus
from kvplan.check.gpus import GpuEvidence, Label
from kvplan.check.readers import truss

ROOT = Path(__file__).resolve().parent.parent
TRUSS = ROOT / "tests" / "data" / "deployments_2026" / "truss"


def verdicts(cli, name, *extra):
    code, out, _ = cli("check", TRUSS / name / "config.yaml", "--offline", "--format", "json", *extra)
    return code, json.loads(out)["verdicts"]


def test_every_truss_config_is_read_by_the_truss_reader(cli):
    code, out, _ = cli("check", TRUSS, "--offline", "--format", "json")
    report = json.loads(out)
    assert len({v["source"] for v in report["verdicts"]}) == len(list(TRUSS.glob("*/config.yaml"))) == 12
    assert all(v["format"] == "truss" for v in report["verdicts"])
    # GLM-4.7-Flash is bundled: its launch is judged (a pass, checked by hand in test_deployment_corpus_2026.py)
    assert sorted(Path(v["source"]).parent.name for v in report["verdicts"] if v["status"] != "cannot_judge") == [
        "z-ai--glm_4_7_flash"]
    assert not any("not a deployment format" in v["reason"] for v in report["verdicts"])


def test_what_stops_each_is_its_own(cli):
    """Judged by hand from each file: vLLM 0.9.2 is not a release kvplan models; llama.cpp is not modelled; the TP
    of one is `nvidia-smi` counted at run time; Baseten's engine builder is not read."""
    for name, needle in {
        "lora--vllm-lora": "vLLM 0.9.2 (image vllm/vllm-openai:v0.9.2) is not modelled",
        "llama-cpp-server": "starts llama.cpp's llama-server (`/app/llama-server -m",
        "qwen--qwen-3.5-35b-a3b": "--tensor-parallel-size is $GPU_COUNT, set outside the file",
        "baseten-inference-stack-v2-templates--kimi-k2-instruct": "Baseten's TensorRT-LLM engine builder",
        "minimax--minimax_m2_1": "'/app/model_cache/checkpoint' is on the serving host",
    }.items():
        code, got = verdicts(cli, name)
        assert code == 3 and len(got) == 1 and needle in got[0]["reason"], (name, got[0]["reason"])


def test_the_accelerator_is_the_gpu_kind_and_count():
    evidence = truss._gpus({"accelerator": "H100:8"}, "x")
    assert evidence.count == 8 and evidence.labels == (Label("resources.accelerator", "H100", "resources.accelerator"),)
    choice = gpus.choose(evidence, None, None, where="x")
    assert [h.name for h in choice.hardware] == ["h100-sxm-80gb", "h100-pcie-80gb"] and choice.count == 8
    assert [h.name for h in gpus.choose(truss._gpus({"accelerator": "A100"}, "x"), None, None, where="x").hardware] == [
        "a100-sxm-80gb", "a100-pcie-80gb"]  # Truss's A100 is the 80 GB card, A100_40GB the other
    import pytest
    from kvplan.core.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="H100_40GB"):  # a MIG slice, not a card
        gpus.choose(GpuEvidence(labels=(Label("resources.accelerator", "H100_40GB", "resources.accelerator"),)), None,
                    None, where="x")


def test_a_truss_start_command_is_judged_on_its_gpu(cli, tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "config.yaml").write_text(
        "model_name: llama\nbase_image:\n  image: vllm/vllm-openai:v0.19.0\ndocker_server:\n  start_command: sh -c "
        "\"HF_TOKEN=$(cat /secrets/hf_access_token) vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768\"\n"
        "  server_port: 8000\nresources:\n  accelerator: L4\n  use_gpu: true\n")
    code, out, _ = cli("check", folder / "config.yaml", "--gpu", "h100", "--format", "json")
    (v,) = json.loads(out)["verdicts"]
    # 32,768 x 128 KiB = 4.00 GiB of KV on an L4 does not fit (tests/test_check_gpu_precedence.py); --gpu is not used
    assert code == 1 and v["status"] == "fail" and v["gpu"] == "l4-24gb" and v["format"] == "truss"
    assert v["origins"]["engine_release"].startswith("vLLM 0.19.0")
