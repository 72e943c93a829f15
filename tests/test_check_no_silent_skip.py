"""`kvplan check` never passes a launch it did not judge: a server it does not model is cannot judge (exit 3) naming
what it found; launches under srun, apptainer, `bash -c ... "$@"`, in Ray cluster pods and nested pod templates are
found and judged; "skipped" stays for documents with no launch; a file of no format it reads is cannot judge."""

import json
from pathlib import Path

import pytest

from kvplan.check import launch

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "deployments_2026"


def check(cli, *paths, extra=()):
    code, out, _ = cli("check", *paths, "--offline", "--format", "json", *extra)
    return code, json.loads(out)


@pytest.mark.parametrize("script, server", [
    ("llama-server -m /models/llama-3.1-8b.Q4_K_M.gguf -c 32768 -ngl 99 --port 8080", "llama.cpp's llama-server"),
    ("ollama serve", "Ollama"),
    ("text-generation-launcher --model-id meta-llama/Llama-3.1-8B-Instruct --max-total-tokens 32768", "Hugging Face TGI"),
    ("lmdeploy serve api_server internlm/internlm2_5-7b-chat --tp 1", "LMDeploy"),
    ("mlc_llm serve HF://mlc-ai/Llama-3-8B-Instruct-q4f16_1-MLC", "MLC LLM"),
    ("tritonserver --model-repository=/models", "Triton Inference Server"),
    ("python3 -m llama_cpp.server --model model.gguf --n_ctx 8192", "llama-cpp-python's server"),
])
def test_a_server_kvplan_does_not_model_is_cannot_judge_naming_it(cli, tmp_path, script, server):
    path = tmp_path / "serve.sh"
    path.write_text("#!/bin/bash\nset -e\nexec " + script + "\n")
    code, report = check(cli, path)
    (v,) = report["verdicts"]
    assert code == 3 and v["status"] == "cannot_judge", v
    assert server in v["reason"] and script.split()[0] in v["reason"]


def test_an_image_that_runs_another_server_is_cannot_judge_even_without_a_gpu_request(cli, tmp_path):
    path = tmp_path / "tgi.yaml"
    path.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: tgi}\nspec:\n  template:\n    spec:\n"
                    "      containers:\n        - name: tgi\n          image: ghcr.io/huggingface/text-generation-inference:2.4.0\n"
                    "          args: [--model-id, meta-llama/Llama-3.1-8B-Instruct]\n")
    code, report = check(cli, path)
    (v,) = report["verdicts"]
    assert code == 3 and v["status"] == "cannot_judge" and "Hugging Face TGI (image ghcr.io/huggingface" in v["reason"]


def test_slurm_srun_and_apptainer_launches_are_judged(cli, tmp_path):
    path = tmp_path / "job.sbatch"
    path.write_text("#!/bin/bash\n#SBATCH --gres=gpu:1\n#SBATCH -N 1\nmodule load cuda\n"
                    "srun --ntasks=1 -N 1 --gres gpu:1 apptainer exec --nv -B /scratch:/scratch vllm.sif \\\n"
                    "  vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192\n")
    code, report = check(cli, path, extra=("--gpu", "h100"))
    (v,) = report["verdicts"]
    assert v["status"] == "pass" and v["max_model_len"] == 8192 and v["model"] == "llama-3.1-8b", v
    (call,) = launch.calls_in_shell("srun -n 2 -p gpu --gpus-per-node=4 vllm serve m --tp 4")
    assert call.engine == "vllm" and call.args == ("m", "--tp", "4")


def test_bash_c_with_its_arguments_and_a_double_dash(cli):
    (call,) = launch.calls_in_words(["bash", "-c", 'pip install -q vllm && exec vllm serve "$@"', "--",
                                     "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192"])
    assert call.engine == "vllm" and call.args == ("meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192")
    (call,) = launch.calls_in_words(["/bin/bash", "-lc", "--", "ulimit -n 65536; ray start --head; vllm serve Q --tp 2"])
    assert call.args == ("Q", "--tp", "2")


def test_aibrix_ray_cluster_fleets_and_storm_services_are_judged_not_skipped(cli):
    """Verbatim AIBrix samples (SOURCES.md): the engines sit in a RayCluster template under the fleet's template, and in
    StormService roles. Each is judged and stops at its real blocker: vLLM 0.7.1 is not modelled; the model of the
    others is a folder on the serving host."""
    code, report = check(cli, CORPUS / "aibrix" / "distributed--fleet.yaml")
    (v,) = report["verdicts"]
    assert v["status"] == "cannot_judge" and "headGroupSpec.template.spec.containers[ray-head]" in v["reason"]
    assert "vLLM 0.7.1 (image vllm/vllm-openai:v0.7.1) is not modelled" in v["reason"]
    code, report = check(cli, CORPUS / "aibrix" / "disaggregation--vllm--1p1d.yaml")
    assert [v["name"] for v in report["verdicts"]] == ["vllm-1p1d/prefill", "vllm-1p1d/decode"]
    assert all(v["status"] == "cannot_judge" and "'/models/Qwen3-8B' is on the serving host" in v["reason"]
               for v in report["verdicts"])


def test_a_ray_cluster_whose_head_starts_vllm_counts_the_clusters_gpus(cli, tmp_path):
    path = tmp_path / "ray.yaml"
    path.write_text("""\
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: llama}
spec:
  headGroupSpec:
    template:
      spec:
        nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
        containers:
          - name: head
            image: vllm/vllm-openai:v0.19.0
            command: [/bin/bash, -lc, --]
            args: ["ray start --head; vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 4 --max-model-len 8192"]
            resources: {limits: {nvidia.com/gpu: 2}}
  workerGroupSpecs:
    - groupName: gpu
      replicas: 1
      template:
        spec:
          containers:
            - name: worker
              image: vllm/vllm-openai:v0.19.0
              resources: {limits: {nvidia.com/gpu: 2}}
""")
    code, report = check(cli, path)
    (v,) = report["verdicts"]
    assert v["status"] == "pass" and v["gpu"] == "l4-24gb" and v["tensor_parallel_size"] == 4, v
    assert v["origins"]["gpus"] == "Ray cluster headGroup: 1 x 2, workerGroup[0]: 1 x 2 GPUs"


def test_a_github_actions_workflow_is_read_not_taken_for_kvplans_format(cli, tmp_path):
    path = tmp_path / "ci.yml"
    path.write_text("""\
name: smoke
on:
  push:
env:
  MAX_LEN: "8192"
jobs:
  serve:
    runs-on: [self-hosted, gpu]
    steps:
      - uses: actions/checkout@v4
      - run: pip install vllm==0.19.0
      - name: start
        run: vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len ${{ env.MAX_LEN }} &
      - run: vllm serve ${{ matrix.model }} --max-model-len 8192
""")
    code, report = check(cli, path, extra=("--gpu", "h100"))
    first, second = report["verdicts"]
    assert first["format"] == "github-actions" and first["status"] == "pass" and first["max_model_len"] == 8192
    assert first["origins"]["engine_release"].startswith("vLLM 0.19.0")
    assert second["status"] == "cannot_judge" and "matrix_model" in second["reason"]
    path.write_text("name: lint\non: [push]\njobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps:\n      - run: ruff check .\n")
    code, report = check(cli, path)
    assert code == 0 and report["verdicts"][0]["status"] == "skipped"


def test_a_file_of_no_format_kvplan_reads_is_cannot_judge_naming_the_formats(cli, tmp_path):
    (tmp_path / "notes.txt").write_text("Deploy on Friday; ask ops for two H100s.\n")
    (tmp_path / "util.py").write_text("import json\n\nprint(json.dumps({'a': 1}))\n")
    (tmp_path / "main.tf").write_text('resource "aws_s3_bucket" "b" {\n  bucket = "x"\n}\n')
    for path in sorted(tmp_path.iterdir()):
        code, report = check(cli, path)
        (v,) = report["verdicts"]
        assert code == 3 and "not a deployment format kvplan reads" in v["reason"] and "formats: kvplan YAML" in v["reason"]
        assert "malformed YAML" not in v["reason"]


def test_programs_are_named_not_passed(cli):
    """A Modal app, a BentoML service and its pyproject.toml, Terraform's helm_release (verbatim, SOURCES.md): kvplan
    reads deployment files, not programs; each is cannot judge, naming the framework, the engine and the models."""
    for name, needle in {
        "modal/gemma4-modal.py": "a Modal app that starts vLLM from its own code (models named: google/gemma-4-26B-A4B-it)",
        "bentoml/gpt-oss-120b/service.py": "a BentoML service that starts vLLM from its own code",
        "bentoml/gpt-oss-120b/pyproject.toml": "BentoML build settings ([tool.bentoml])",
        "terraform/gke-prodstack/helm.tf": "Terraform helm_release nvidia_device_plugin, vllm,",
    }.items():
        code, report = check(cli, CORPUS / name)
        (v,) = report["verdicts"]
        assert code == 3 and v["format"] == "program" and needle in v["reason"], (name, v["reason"])


def test_the_corpus_launches_that_were_skipped_are_judged(cli):
    """Verbatim files (tests/data/deployments_2026/SOURCES.md) that kvplan skipped with exit 0: TGI started by `docker
    run` of its image, NVIDIA NIM operator services, production-stack's VLLMRuntime resource, TensorRT-LLM servers
    behind `srun ... bash -c "trtllm-llmapi-launch trtllm-serve ..."`, a workflow step that uses an action serving a
    model. Each is cannot judge now, naming what it found; the NIM cache job beside a service is still skipped."""
    cases = {
        "tgi/arc-agi-2-launch_tgi.sh": ["Hugging Face TGI (image ghcr.io/huggingface/text-generation-inference:3.0.1)"],
        "nim-operator/standalone--basic--llm.yaml": ["skipped", "starts NVIDIA NIM from its own settings"],
        "prodstack/production-stack_v1alpha1_vllmruntime.yaml": ["VLLMRuntime vllmruntime-sample: an operator's resource"],
        "slurm/trtllm-simple-example/launch.slurm": ["--extra_llm_api_options", "--extra_llm_api_options",
                                                     "trtllm-serve disaggregated starts its servers from a config"],
        "gha/muhac-llm-action/workflows/test.yml": ["uses muhac/llm-actions@v1 with model ${{ matrix.model }}"],
        "gha/muhac-llm-action/action.yml": ["the model is $GITHUB_EXPRESSION_inputs_model"] * 2,
    }
    for name, needles in cases.items():
        code, report = check(cli, CORPUS / name)
        got = report["verdicts"]
        assert len(got) == len(needles), (name, got)
        for v, needle in zip(got, needles):
            if needle == "skipped":
                assert v["status"] == "skipped", (name, v)
            else:
                assert v["status"] == "cannot_judge" and needle in v["reason"], (name, v["reason"])
        assert code == 3, name


def test_a_container_sh_c_script_kvplan_cannot_read_is_cannot_judge_not_skipped(cli, tmp_path):
    # issue 26: a real GKE manifest (tests/data/deployments/SOURCES.md) whose `sh -c` script lost a closing quote,
    # in an image kvplan does not know and with no GPU resource: the container was skipped as starting nothing
    real = ROOT / "tests" / "data" / "deployments" / "k8s" / "gke-hdml-llama33-70b-localpath-4x-h100.yaml"
    text = real.read_text()
    for old, new in (("image: vllm/vllm-openai:v0.8.5", "image: registry.example.com/acme/server:1"),
                     ("vllm serve '/data/Llama-3.3-70B-Instruct'", "vllm serve '/data/Llama-3.3-70B-Instruct"),
                     ('            nvidia.com/gpu: "4"\n', "")):
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "deployment.yaml"
    path.write_text(text)
    code, report = check(cli, path)
    container = report["verdicts"][0]
    assert code == 3 and container["status"] == "cannot_judge", container
    assert "cannot read" in container["reason"] and "inference-server" in container["reason"]
