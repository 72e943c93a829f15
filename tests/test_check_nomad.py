"""HashiCorp Nomad job files (issue 27): HCL read by kvplan/check/hcl.py, one deployment per task that starts an
engine or asks for a GPU; the GPU's kind from the device's `${device.model}` constraint (the NVML name). The real
job: ai4os/ai4-papi etc/tools/ai4os-llm/nomad.hcl (tests/data/deployments_2026/nomad, SOURCES.md)."""

import json
from pathlib import Path

import pytest

from kvplan.check import hcl
from kvplan.core.errors import InputError

REAL = Path(__file__).resolve().parent / "data" / "deployments_2026" / "nomad" / "ai4os-llm.nomad.hcl"

JOB = """variable "model" {
  type    = string
  default = "meta-llama/Llama-3.1-8B-Instruct"
}

job "llm" {
  group "serve" {
    network {
      port "http" { to = 8000 }
    }
    task "vllm" {
      driver = "docker"
      config {
        image = "vllm/vllm-openai:v0.19.0"
        args  = ["--model", "${var.model}", "--max-model-len", "32768", "--port", "${NOMAD_PORT_http}"]
      }
      env { HF_HOME = "/cache" }
      resources {
        device "nvidia/gpu" {
          count = 1
          constraint {
            attribute = "${device.model}"
            value     = "%s"
          }
        }
      }
    }
    task "ui" {
      driver = "docker"
      config { image = "ghcr.io/open-webui/open-webui:main" }
    }
  }
}
"""


def check(cli, *args):
    code, out, err = cli("check", *args, "--offline", "--format", "json")
    return code, json.loads(out)["verdicts"], err


def test_hcl_blocks_values_heredocs_and_comments():
    root = hcl.parse('# c\n/* block\ncomment */\njob "a" {\n  x = [1, 2.5, "s", true] // c\n  y = { k = "v", "q": null }\n'
                     '  t = <<-EOF\n    one\n      two\n    EOF\n  e = var.x + 1\n  g "l1" "l2" { }\n}\n', where="f")
    job = root.child("job")
    assert job.labels == ("a",) and job.line == 4
    assert job.attributes["x"] == [1, 2.5, "s", True] and job.attributes["y"] == {"k": "v", "q": None}
    assert job.attributes["t"] == "one\n  two\n" and job.attributes["e"] == hcl.Expression("var.x + 1")
    assert job.child("g").labels == ("l1", "l2")
    with pytest.raises(InputError, match="line 2"):
        hcl.parse('job "a" {\n  x = "unterminated\n}\n', where="f")


def test_a_task_is_judged_on_the_gpu_its_device_constraint_names(cli, tmp_path):
    # Llama-3.1-8B at 32,768 tokens needs 4.00 GiB of KV (32 layers x 8 KV heads x 128 x 2 x 2 B = 128 KiB a token):
    # it does not fit beside the weights on an L4 (24 GB), it does on an H100 80GB; the UI task is passed over
    path = tmp_path / "llm.nomad"
    path.write_text(JOB % "NVIDIA L4")
    code, (v,), _ = check(cli, path)
    assert code == 1 and v["status"] == "fail" and v["gpu"] == "l4-24gb" and v["format"] == "nomad"
    assert v["model"] == "llama-3.1-8b" and v["max_model_len"] == 32768  # the variable's default (bundled spec)
    assert '"NVIDIA L4"' in v["origins"]["gpu"] and v["origins"]["engine_release"].endswith("(image vllm/vllm-openai:v0.19.0)")
    code, (v,), _ = check(cli, path, "--gpu", "h100")  # the file's own GPU wins over --gpu
    assert code == 1 and v["gpu"] == "l4-24gb"
    path.write_text(JOB % "NVIDIA H100 80GB HBM3")
    code, (v,), _ = check(cli, path)
    assert code == 0 and v["status"] == "pass" and v["gpu"] == "h100-sxm-80gb"


def test_what_nomad_fills_in_at_run_time_is_set_outside_the_file(cli, tmp_path):
    path = tmp_path / "llm.nomad.hcl"
    text = (JOB % "NVIDIA H100 80GB HBM3").replace('"--max-model-len", "32768"', '"--max-model-len", "${meta.len}"')
    path.write_text(text)
    code, (v,), _ = check(cli, path)
    assert code == 3 and "--max-model-len is $meta.len, set outside the file" in v["reason"]


def test_raw_exec_runs_the_command_on_the_host(cli, tmp_path):
    path = tmp_path / "host.nomad"
    path.write_text('job "j" {\n  group "g" {\n    task "t" {\n      driver = "raw_exec"\n      config {\n'
                    '        command = "vllm"\n        args = ["serve", "meta-llama/Llama-3.1-8B-Instruct", '
                    '"--max-model-len", "8192"]\n      }\n      resources {\n        device "nvidia/gpu/NVIDIA H100 80GB HBM3" {}\n'
                    '      }\n    }\n  }\n}\n')
    code, (v,), _ = check(cli, path)
    assert code == 0 and v["status"] == "pass" and v["gpu"] == "h100-sxm-80gb" and v["max_model_len"] == 8192


def test_the_real_job_reads_its_gpu_and_names_what_its_template_fills_in(cli):
    code, (v,), _ = check(cli, REAL)
    assert code == 3 and v["format"] == "nomad" and v["name"] == "vllm"
    assert "$VLLM_ARGS, set outside the file" in v["reason"]  # args = ${VLLM_ARGS}: filled in by ai4-papi at submit


def test_other_hcl_is_not_a_format_and_broken_hcl_is_bad_input(cli, tmp_path):
    tf = tmp_path / "main.hcl"
    tf.write_text('source "amazon-ebs" "x" {\n  region = "us-east-1"\n}\n')
    code, (v,), _ = check(cli, tf)
    assert code == 3 and "not a deployment format kvplan reads" in v["reason"]
    bad = tmp_path / "bad.nomad"
    bad.write_text('job "j" {\n  group "g" {\n')
    code, (v,), _ = check(cli, bad)
    assert code == 2 and v["status"] == "invalid" and "not HCL" in v["reason"]


def test_a_folder_is_walked_for_nomad_jobs(cli, tmp_path):
    (tmp_path / "llm.nomad").write_text(JOB % "NVIDIA H100 80GB HBM3")
    (tmp_path / "main.tf.hcl").write_text("x = 1\n")  # a bare .hcl is not walked: it may be Terraform or Packer
    code, verdicts, _ = check(cli, tmp_path)
    assert code == 0 and [Path(v["source"]).name for v in verdicts] == ["llm.nomad"]
