"""Issue 26, wrong yes from the GPU generation: a dtype, weight format or KV format vLLM does not run on the GPU
must not pass `kvplan check` nor "fit" in `kvplan estimate`. The rules are vLLM's own, read from its wheels
(kvplan/engines/vllm/gpu_dtypes.py cites each): platforms/cuda.py check_if_supports_dtype ("Bfloat16 is only
supported on GPUs with compute capability of at least 8.0"), each quantization config's get_min_capability (fp8: 80
until 0.13, 75 from 0.14; awq: 75), v1/attention/backends/triton_attn.py (0.24+: an fp8 KV cache needs SM 8.9, and
below SM 8.0 only Triton takes a KV cache) and config/model.py _resolve_auto_dtype (--dtype auto falls back to
float16, or float32 for the models float16 is unsafe for). The GPUs' compute capabilities are the catalog's
(kvplan/data/gpus.yaml: T4 7.5, V100 7.0, A10G 8.6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

AWQ = Path(__file__).parent / "data" / "extra_configs" / "qwen2.5-14b-instruct-awq.json"
LAUNCH = "serve meta-llama/Llama-3.2-1B --max-model-len 4096"


def _check(cli, launch, gpu, *extra):
    code, out, err = cli("check", "--vllm-args", launch, "--gpu", gpu, "--offline", "--format", "json", *extra)
    return code, json.loads(out)["verdicts"][0], err


@pytest.mark.parametrize("flags, gpu, code, words", [
    ("--dtype bfloat16", "t4", 1, "Bfloat16 is only supported on GPUs with compute capability of at least 8.0"),
    ("--dtype half", "t4", 0, None),  # the spelling vLLM's message asks for
    ("", "t4", 0, None),  # --dtype auto on a bf16 checkpoint: vLLM falls back to float16 there
    ("--dtype bfloat16", "a10g", 0, None),  # SM 8.6
    ("--quantization fp8", "v100-sxm2-16gb", 1, "quantization fp8 needs a GPU of compute capability 7.5"),
    ("--quantization fp8", "t4", 0, None),  # 0.14+: Marlin's weight-only fp8 on SM 7.5
    ("--kv-cache-dtype fp8", "t4", 1, "Triton attention backend"),
    ("--kv-cache-dtype bfloat16 --dtype half", "t4", 1, "--kv-cache-dtype bfloat16"),
    ("--kv-cache-dtype fp8", "a10g", 0, None),  # FlashInfer takes it from SM 8.0
])
def test_a_launch_vllm_refuses_on_the_gpu_fails(cli, flags, gpu, code, words):
    got, verdict, err = _check(cli, f"{LAUNCH} {flags}", gpu)
    assert got == code, (verdict, err)
    if words:
        assert verdict["status"] == "fail" and words in verdict["reason"], verdict["reason"]


@pytest.mark.parametrize("version, flags, gpu, code", [
    ("0.13.0", "--quantization fp8", "t4", 1),  # Fp8Config.get_min_capability 80 until 0.13
    ("0.14.0", "--quantization fp8", "t4", 0),
    ("0.19.0", "--kv-cache-dtype fp8", "t4", 0),  # FlashInfer (SM 7.5+) takes it before 0.24
    ("0.19.0", "--kv-cache-dtype fp8", "v100-sxm2-16gb", 3),  # only Triton's kernels, not read: cannot judge
])
def test_the_rules_follow_the_release(cli, version, flags, gpu, code):
    got, verdict, err = _check(cli, f"{LAUNCH} {flags}", gpu, "--vllm-version", version)
    assert got == code, (verdict, err)


def test_a_model_vllm_runs_in_float32_there_is_cannot_judge(cli):
    # Gemma 2 with --dtype auto on a V100: no bfloat16, float16 unsafe for gemma2, so vLLM loads it in float32
    got, verdict, err = _check(cli, "serve google/gemma-2-2b-it --max-model-len 4096", "v100-sxm2-16gb")
    assert got == 3 and "float32" in verdict["reason"], verdict


def test_estimate_does_not_say_fits_for_a_checkpoint_the_gpu_cannot_run(cli):
    # an AWQ checkpoint (quant_method awq, AutoAWQ's floor SM 7.5): fits a T4's memory, but a V100 cannot run it
    for gpu, code, fits in (("t4", 0, True), ("v100-sxm2-32gb", 1, False)):
        got, out, err = cli("estimate", AWQ, "--engine", "vllm", "--gpu", gpu, "--seq", "4096", "--json")
        result = json.loads(out)
        assert (got, result["fits"]) == (code, fits), err
    assert any("quantization awq needs a GPU of compute capability 7.5" in n for n in result["notes"])


@pytest.mark.parametrize("flags, code", [("", 0), ("--dtype half", 0), ("--dtype bfloat16", 1)])
def test_an_explicit_bfloat16_on_a_quantized_checkpoint_is_refused_too(cli, flags, code):
    # the AWQ checkpoint keeps its weights' format, but --dtype bfloat16 still sets the activations vLLM refuses on a
    # T4 (gpu_worker.py check_if_supports_dtype); auto falls back to float16 there
    got, verdict, err = _check(cli, f"serve {AWQ} --max-model-len 4096 {flags}", "t4")
    assert got == code, (verdict, err)
