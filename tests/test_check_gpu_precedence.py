"""A file's own GPU and layout always win over --gpu / --gpus, which are the defaults for files that name none; a
different flag is reported in every output format (docs/check.md "GPUs")."""

import json
import xml.etree.ElementTree as ET

import pytest

# Llama 3.1 8B pinned by nodeSelector to a GKE L4, at 32K. One request of 32,768 tokens needs
# 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 131,072 B a token, x 32,768 = 4.00 GiB of KV cache;
# an L4 (22.05 GiB) at 0.90 has 19.84 GiB for 14.99 GiB of weights and the start-up terms: less than that is left.
L4_32K = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama-8b
spec:
  template:
    spec:
      nodeSelector:
        cloud.google.com/gke-accelerator: nvidia-l4
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.19.0
          command: ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "32768"]
          resources:
            limits:
              nvidia.com/gpu: 1
"""

NOT_USED = "--gpu h100-sxm-80gb not used"


@pytest.fixture
def l4_file(tmp_path):
    path = tmp_path / "dep.yaml"
    path.write_text(L4_32K)
    return path


def test_the_l4_deployment_fails_on_its_own_and_with_gpu_h100(cli, l4_file):
    code, out, _ = cli("check", l4_file, "--format", "json")
    alone = json.loads(out)["verdicts"][0]
    assert code == 1 and alone["status"] == "fail" and alone["gpu"] == "l4-24gb"
    assert "needs 4.00 GiB of KV cache per GPU" in alone["reason"]  # 32,768 x 131,072 B = 4 GiB, by hand above
    code, out, _ = cli("check", l4_file, "--gpu", "h100", "--format", "json")
    given = json.loads(out)["verdicts"][0]
    assert code == 1 and given["status"] == "fail" and given["gpu"] == "l4-24gb"
    assert given["figures"] == alone["figures"]
    assert given["origins"]["gpu"] == f"nodeSelector cloud.google.com/gke-accelerator=nvidia-l4 (the file's own; {NOT_USED})"
    assert any(n.startswith("--gpu h100-sxm-80gb is not used") for n in given["notes"])


@pytest.mark.parametrize("fmt", ["text", "markdown", "junit", "github", "sarif"])
def test_a_gpu_flag_the_file_overrules_is_reported_in_every_format(cli, l4_file, fmt):
    code, out, _ = cli("check", l4_file, "--gpu", "h100", "--format", fmt)
    assert code == 1 and NOT_USED in out
    if fmt == "sarif":
        (result,) = json.loads(out)["runs"][0]["results"]
        assert result["ruleId"] == "starts" and NOT_USED in result["message"]["text"]
    if fmt == "junit":
        case = ET.fromstring(out).find("testsuite/testcase")
        assert case.find("failure") is not None
        props = {p.get("name"): p.get("value") for p in case.find("properties")}
        assert NOT_USED in props["gpu_from"]


def test_the_files_tensor_parallel_size_wins_over_gpus(cli, tmp_path):
    """--gpus 4 used to make a file with --tensor-parallel-size 1 invalid, and gave TP 4 to a whole launch that names
    no TP (which runs vLLM's default, 1): now the launch is judged as written, and --gpus is reported unused."""
    path = tmp_path / "dep.yaml"
    path.write_text(L4_32K)
    code, out, _ = cli("check", path, "--gpus", "4", "--format", "json")
    v = json.loads(out)["verdicts"][0]
    assert code == 1 and v["tensor_parallel_size"] == 1 and v["status"] == "fail"
    assert v["origins"]["gpus"].endswith("(--gpus 4 not used)")
    assert any("--gpus 4 is not used" in n for n in v["notes"])
    path.write_text(L4_32K.replace('"32768"]', '"32768", "--tensor-parallel-size", "1"]'))
    code, out, _ = cli("check", path, "--gpus", "4", "--format", "json")
    assert code == 1 and json.loads(out)["verdicts"][0]["tensor_parallel_size"] == 1


def test_a_kvplan_files_own_gpu_wins_and_a_different_flag_is_said(cli, tmp_path):
    path = tmp_path / "k.yaml"
    path.write_text("engine: vllm\nmodel: llama-3.1-8b\ngpu: l4\nmax_model_len: 32768\n")
    code, out, _ = cli("check", path, "--gpu", "h100", "--format", "json")
    v = json.loads(out)["verdicts"][0]
    assert code == 1 and v["gpu"] == "l4-24gb" and NOT_USED in v["origins"]["gpu"]
