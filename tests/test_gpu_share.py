"""Issue 26, wrong yes from hardware: a deployment judged on more GPU than it gets. Each case is a real deployment
file from tests/data/deployments (provenance in its SOURCES.md) with the one change a cluster or a careless hand
makes, judged through `kvplan check`:

- a MIG slice as the resource (`nvidia.com/mig-1g.10gb: 1`), GKE's partition or sharing node label, a time-sliced
  `-SHARED` product label: part of a GPU, cannot judge (or judged at --gpu-mem, the slice's memory);
- CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES naming fewer devices than tensor parallel takes, wherever the launch
  sets it (a script's export or prefix, a Dockerfile ENV, a Kubernetes env): fail, the engine cannot start;
- a GPU count in digits that are not ASCII: bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "deployments"
MODELS = Path(__file__).parent / "data" / "public_models"
L4 = DATA / "k8s" / "gke-gemma-7b-fp8kv-l4.yaml"  # vLLM, TP 1, nvidia.com/gpu: 1, nodeSelector nvidia-l4: pass


def _check(cli, path, *extra):
    code, out, err = cli("check", path, "--offline", "--models-dir", MODELS, "--format", "json", *extra)
    return code, json.loads(out)["verdicts"][0], err


def _variant(tmp_path, source: Path, old: str, new: str) -> Path:
    text = source.read_text()
    assert old in text, old
    path = tmp_path / source.name
    path.write_text(text.replace(old, new))
    return path


def test_the_unchanged_file_passes(cli):
    code, verdict, err = _check(cli, L4)
    assert code == 0 and verdict["status"] == "pass", err


@pytest.mark.parametrize("old, new, words", [
    ("nvidia.com/gpu: 1", "nvidia.com/mig-1g.10gb: 1", "a MIG slice (resources.limits nvidia.com/mig-1g.10gb: 1)"),
    ("cloud.google.com/gke-accelerator: nvidia-l4",
     "cloud.google.com/gke-accelerator: nvidia-l4\n        cloud.google.com/gke-gpu-partition-size: 1g.10gb",
     "cloud.google.com/gke-gpu-partition-size"),
    ("cloud.google.com/gke-accelerator: nvidia-l4", "nvidia.com/gpu.product: NVIDIA-L4-SHARED", "time-sliced"),
])
def test_part_of_a_gpu_is_cannot_judge_even_with_gpu(cli, tmp_path, old, new, words):
    path = _variant(tmp_path, L4, old, new)
    for extra in ((), ("--gpu", "l4")):
        code, verdict, err = _check(cli, path, *extra)
        assert code == 3 and verdict["status"] == "cannot_judge", (extra, err)
        assert words in verdict["reason"], verdict["reason"]


def test_a_mig_slice_is_judged_at_the_memory_gpu_mem_gives(cli, tmp_path):
    path = _variant(tmp_path, L4, "nvidia.com/gpu: 1", "nvidia.com/mig-1g.10gb: 1")
    # Gemma-7B's weights are about 17 GB (bf16): they do not fit a 10 GB slice
    code, verdict, err = _check(cli, path, "--gpu-mem", "10GB")
    assert code == 1 and verdict["status"] == "fail", err


@pytest.mark.parametrize("case", ["kubernetes env", "script export", "script prefix", "dockerfile ENV"])
def test_fewer_visible_devices_than_tensor_parallel_fails(cli, tmp_path, case):
    if case == "kubernetes env":
        two = _variant(tmp_path, L4, "--tensor-parallel-size=1", "--tensor-parallel-size=2")
        text = two.read_text().replace("nvidia.com/gpu: 1", "nvidia.com/gpu: 2")
        two.write_text(text)
        code, verdict, err = _check(cli, two)
        assert verdict["status"] == "pass", err  # 2 GPUs, TP 2
        two.write_text(text.replace("        env:\n", "        env:\n        - name: CUDA_VISIBLE_DEVICES\n          value: \"0\"\n"))
        path, extra = two, ()
    elif case.startswith("script"):
        source = DATA / "script" / "multiagentsdebate-qwen3-14b-tp4.sh"  # TP 4
        line = "export CUDA_VISIBLE_DEVICES=0,1\n" if case == "script export" else ""
        # its Qwen3-14B is not in tests/data; Qwen3-32B (public_models) at TP 4 on H100s passes the same way
        text = source.read_text().replace("Qwen/Qwen3-14B", "Qwen/Qwen3-32B")
        path = tmp_path / source.name
        path.write_text(text)
        extra = ("--gpu", "h100")
        code, verdict, err = _check(cli, path, *extra)
        assert verdict["status"] == "pass", err
        path.write_text(line + (text.replace("nohup vllm", "nohup env CUDA_VISIBLE_DEVICES=0,1 vllm")
                                if case == "script prefix" else text))
    else:
        source = DATA / "dockerfile" / "koyeb-llama31-8b-entrypoint.Dockerfile"  # TP 1 (vLLM's default)
        text = source.read_text().replace("--model ${MODEL_NAME", "--tensor-parallel-size 2 --model ${MODEL_NAME")
        path = tmp_path / source.name
        path.write_text(text)
        code, verdict, err = _check(cli, path, "--gpu", "h100")
        assert verdict["status"] == "pass", err
        path.write_text(text.replace("FROM vllm/vllm-openai:latest\n", "FROM vllm/vllm-openai:latest\nENV CUDA_VISIBLE_DEVICES=0\n"))
        extra = ("--gpu", "h100")
    code, verdict, err = _check(cli, path, *extra)
    assert code == 1 and verdict["status"] == "fail", (verdict, err)
    assert "CUDA_VISIBLE_DEVICES" in json.dumps(verdict), verdict


def test_a_gpu_count_in_other_digits_is_bad_input(cli, tmp_path):
    path = _variant(tmp_path, L4, "nvidia.com/gpu: 1", "nvidia.com/gpu: \"\\uFF11\"")  # FULLWIDTH DIGIT ONE
    code, verdict, err = _check(cli, path)
    assert code == 2 and verdict["status"] == "invalid", err
    assert "nvidia.com/gpu" in verdict["reason"], verdict["reason"]


def test_two_compose_services_on_one_device_are_cannot_judge(cli, tmp_path):
    """The same service twice (a second copy on port 30001): apart on device_ids 0 and 1 both pass; on device 0 both
    (each sizes its pool as if it had the card alone) they are cannot judge."""
    import yaml

    doc = yaml.safe_load((DATA / "compose" / "sglang-llama31-8b-device0.yaml").read_text())
    second = json.loads(json.dumps(doc["services"]["sglang"]))
    second["container_name"] = "sglang-2"
    second["command"] = second["command"].replace("--port 30000", "--port 30001")
    doc["services"]["sglang-2"] = second
    path = tmp_path / "compose.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, out, err = cli("check", path, "--gpu", "h100", "--offline", "--format", "json")
    verdicts = json.loads(out)["verdicts"]
    assert code == 3 and [v["status"] for v in verdicts] == ["cannot_judge", "cannot_judge"], err
    assert all("shares a GPU with service" in v["reason"] for v in verdicts)
    second["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] = ["1"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, out, err = cli("check", path, "--gpu", "h100", "--offline", "--format", "json")
    assert code == 0 and [v["status"] for v in json.loads(out)["verdicts"]] == ["pass", "pass"], err


def test_two_background_engines_in_one_script_are_cannot_judge(cli, tmp_path):
    source = DATA / "script" / "multiagentsdebate-qwen3-14b-tp4.sh"
    text = source.read_text().replace("Qwen/Qwen3-14B", "Qwen/Qwen3-32B").replace("--tensor-parallel-size 4",
                                                                                    "--tensor-parallel-size 1")
    second = text.replace("--port 8000", "--port 8001")
    path = tmp_path / source.name
    path.write_text(text + "\n" + second)
    code, out, err = cli("check", path, "--gpu", "h100", "--offline", "--models-dir", MODELS, "--format", "json")
    verdicts = json.loads(out)["verdicts"]
    assert code == 3 and {v["status"] for v in verdicts} == {"cannot_judge"}, err
    assert "starts 2 engines that may share a GPU" in verdicts[0]["reason"]
    apart = "export CUDA_VISIBLE_DEVICES=0\n" + text + "\nexport CUDA_VISIBLE_DEVICES=1\n" + second
    path.write_text(apart)
    code, out, err = cli("check", path, "--gpu", "h100", "--offline", "--models-dir", MODELS, "--format", "json")
    assert code == 0 and {v["status"] for v in json.loads(out)["verdicts"]} == {"pass"}, err


@pytest.mark.parametrize("engine, dtype, noted", [
    ("vllm", "int4", True), ("sglang", "int8", True), ("trtllm", "fp8", True), ("vllm", "fp8", False),
    ("static", "int4", False),
])
def test_kvplans_dtype_key_does_not_quantize_a_bf16_checkpoint_silently(cli, tmp_path, engine, dtype, noted):
    """`dtype: int4` in kvplan's own file sized Llama-3.1-8B's bf16 checkpoint as int4 without a word. An engine
    loads a checkpoint as a float dtype or (vLLM, SGLang) quantizes it to fp8 as it loads; other weights are another
    checkpoint of the model, which the verdict says it judged (the static engine is kvplan's what-if)."""
    path = tmp_path / "deploy.yaml"
    path.write_text(f"name: chat\nmodel: llama-3.1-8b\nengine: {engine}\ngpu: l4\nmax_model_len: 4K\ndtype: {dtype}\n")
    code, out, err = cli("check", path, "--format", "json")
    verdict = json.loads(out)["verdicts"][0]
    said = [n for n in verdict["notes"] if "checkpoint of the model" in n]
    assert bool(said) == noted, verdict["notes"]
    if noted:
        assert "cannot make" in said[0] and "from the bf16 checkpoint named (llama-3.1-8b)" in said[0]


def test_a_variable_from_envfrom_is_unknown_not_literal(cli, tmp_path):
    """`$(MAX_LEN)` with the variable defined by envFrom (a ConfigMap kvplan cannot see) is a value left to the
    cluster: cannot judge naming it, not the literal text `$(MAX_LEN)` (issue 26: a wrong reason)."""
    path = _variant(tmp_path, L4, "        - --tensor-parallel-size=1\n",
                    "        - --tensor-parallel-size=1\n        - --max-model-len=$(MAX_LEN)\n")
    path.write_text(path.read_text().replace("        env:\n", "        envFrom:\n        - configMapRef:\n"
                                                               "            name: vllm-settings\n        env:\n", 1))
    code, verdict, err = _check(cli, path)
    assert code == 3 and verdict["status"] == "cannot_judge", err
    assert "MAX_LEN" in verdict["reason"], verdict["reason"]
