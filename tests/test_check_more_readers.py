"""KubeAI's models chart values, vLLM's example chart values and a compose .env, verbatim from
tests/data/deployments_2026 (SOURCES.md)."""

import json
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "data" / "deployments_2026"


def check(cli, *args):
    code, out, _ = cli("check", *args, "--offline", "--format", "json")
    return code, json.loads(out)["verdicts"]


def test_kubeai_catalog_values_render_only_enabled_models(cli, tmp_path):
    code, (v,) = check(cli, CORPUS / "kubeai" / "models-chart-values.yaml")
    assert code == 0 and v["status"] == "skipped" and "none of its 47 catalog models is enabled" in v["reason"]
    path = tmp_path / "values.yaml"
    path.write_text("catalog:\n  llama-8b-l4:\n    enabled: true\n    url: hf://meta-llama/Llama-3.1-8B-Instruct\n"
                    "    engine: VLLM\n    args: [--max-model-len=32768]\n    resourceProfile: nvidia-gpu-l4:1\n"
                    "  off:\n    enabled: false\n    url: hf://x/y\n    engine: VLLM\n")
    code, (v,) = check(cli, path, "--gpu", "h100")
    # the profile's L4 wins over --gpu; 32,768 tokens x 128 KiB = 4.00 GiB of KV does not fit beside the weights
    assert code == 1 and v["status"] == "fail" and v["gpu"] == "l4-24gb" and v["name"] == "llama-8b-l4"


def test_vllm_example_chart_values_run_the_image_command(cli):
    code, (v,) = check(cli, CORPUS / "vllm-chart" / "values.yaml", "--gpu", "h100")
    assert code == 3 and v["format"] == "helm-vllm-example" and "model '/data/' is on the serving host" in v["reason"]


def test_a_compose_env_file_alone_is_skipped(cli):
    code, (v,) = check(cli, CORPUS / "compose" / "custom-ai" / ".env")
    assert code == 0 and v["status"] == "skipped" and "environment file" in v["reason"]
