"""A bad value pasted in an engine's own spelling is named as the user wrote it (issue 28): `--vllm-args
"--gpu-memory-utilization 2"` is an error at `--vllm-args --gpu-memory-utilization`, not at kvplan's `--gpu-util`,
which the user never typed; and `kvplan check` names a launch file's own option (`-tp`, a `--config` file's key, an
`--extra_llm_api_options` file's key) for every setting, whichever stage finds the value wrong."""

import json

import pytest

VLLM = ("estimate", "llama-3.1-8b", "--engine", "vllm")
SGLANG = ("estimate", "llama-3.1-8b", "--engine", "sglang")


def _where(err: str) -> str:
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: ") and " — " in line, err
    return line[len("error: "):].split(" — ")[0]


# (the pasted launch options, the option the error must name): Llama 3.1 8B has 32 layers and 8 KV heads, so a TP of
# 3 and a PP of 99 are refused by the engine's layout, the other values by kvplan's own range checks
VLLM_CASES = [
    ("--gpu-memory-utilization 2", "--gpu-memory-utilization"),
    ("--tensor-parallel-size 0", "--tensor-parallel-size"),
    ("-tp 3", "-tp"),
    ("--pipeline-parallel-size 0", "--pipeline-parallel-size"),
    ("-pp 99", "-pp"),
    ("--max-model-len 0", "--max-model-len"),
    ("--block-size 0", "--block-size"),
    ("--max-num-seqs 0", "--max-num-seqs"),
    ("--max-num-batched-tokens 0", "--max-num-batched-tokens"),
    ("--kv-cache-memory-bytes 0", "--kv-cache-memory-bytes"),
]
SGLANG_CASES = [
    ("--mem-fraction-static 2", "--mem-fraction-static"),
    ("--tp 0", "--tp"),
    ("--tp-size 3", "--tp-size"),
    ("--pp-size 99", "--pp-size"),
    ("--context-length 0", "--context-length"),
    ("--page-size 0", "--page-size"),
    ("--max-running-requests 0", "--max-running-requests"),
    ("--chunked-prefill-size 0", "--chunked-prefill-size"),
    ("--kv-cache-dtype mxfp8", "--kv-cache-dtype"),
]


@pytest.mark.parametrize("gpu", [(), ("--gpu", "h100")])
@pytest.mark.parametrize("base, flag, pasted, written",
                         [(VLLM, "--vllm-args", p, w) for p, w in VLLM_CASES]
                         + [(SGLANG, "--sglang-args", p, w) for p, w in SGLANG_CASES])
def test_a_bad_pasted_value_names_the_option_the_user_typed(cli, gpu, base, flag, pasted, written):
    code, _, err = cli(*base, *gpu, flag, pasted)
    assert code in (2, 3), err
    assert _where(err) == f"{flag} {written}"
    assert "Traceback" not in err


def test_the_json_error_names_it_too(cli):
    code, out, _ = cli(*VLLM, "--gpu", "h100", "--json", "--vllm-args", "--gpu-memory-utilization 2")
    assert code == 2
    assert json.loads(out)["error"]["where"] == "--vllm-args --gpu-memory-utilization"


def test_a_fraction_pasted_without_a_gpu_is_named_as_pasted(cli):
    code, _, err = cli(*VLLM, "--vllm-args", "--gpu-memory-utilization 0.9")
    assert code == 2
    assert err.startswith("error: --vllm-args --gpu-memory-utilization — --gpu-memory-utilization needs a GPU")


def test_kvplan_s_own_flags_are_still_named_as_kvplan_s(cli):
    code, _, err = cli(*VLLM, "--gpu", "h100", "--gpu-util", "2")
    assert code == 2 and _where(err) == "--gpu-util"
    code, _, err = cli(*VLLM, "--gpu", "h100", "--tp", "3")
    assert code == 2 and _where(err) == "--tp"


def test_gpus_that_disagree_with_a_pasted_tp_name_it(cli):
    code, _, err = cli(*VLLM, "--gpu", "h100", "--gpus", "4", "--vllm-args", "-tp 3")
    assert code == 2
    assert "--vllm-args -tp 3 x --pp 1 = 3" in err


# ------------------------------------------------------------------ check: a launch file's own option names

def _reason(cli, tmp_path, script: str, files: dict[str, str] | None = None) -> tuple[str, str]:
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    (tmp_path / "serve.sh").write_text("#!/bin/sh\n" + script + "\n")
    code, out, err = cli("check", tmp_path / "serve.sh", "--gpu", "h100", "--format", "json")
    verdict = json.loads(out)["verdicts"][0]
    return verdict["status"], verdict["reason"]


@pytest.mark.parametrize("script, files, written", [
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct -tp 3", None, "-tp"),
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct -pp 99", None, "-pp"),
    ("vllm serve meta-llama/Llama-3.1-8B-Instruct --config cfg.yaml", {"cfg.yaml": "tensor-parallel-size: 3\n"},
     "cfg.yaml: tensor-parallel-size"),
    ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 3", None, "--tp"),
    ("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --extra_llm_api_options extra.yaml",
     {"extra.yaml": "kv_cache_config:\n  max_tokens: 0\n"}, "extra.yaml: kv_cache_config.max_tokens"),
    # the file's values win over the flags (TensorRT-LLM update_llm_args_with_extra_dict): its key is named
    ("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --pp_size 2 --extra_llm_api_options extra.yaml",
     {"extra.yaml": "pipeline_parallel_size: 99\n"}, "extra.yaml: pipeline_parallel_size"),
    ("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --kv_cache_free_gpu_memory_fraction 0.5 "
     "--extra_llm_api_options extra.yaml", {"extra.yaml": "kv_cache_config:\n  free_gpu_memory_fraction: 2\n"},
     "extra.yaml: kv_cache_config.free_gpu_memory_fraction"),
])
def test_check_names_the_launch_file_s_own_option(cli, tmp_path, script, files, written):
    status, reason = _reason(cli, tmp_path, script, files)
    assert status == "invalid", reason
    assert reason.split(" — ")[0].endswith(f"serve.sh: {written}"), reason


def test_a_pipeline_size_of_zero_for_trtllm_serve_is_invalid_not_one(cli, tmp_path):
    # it was read as TensorRT-LLM's default of 1 and passed
    status, reason = _reason(cli, tmp_path, "trtllm-serve meta-llama/Llama-3.1-8B-Instruct --pp_size 0")
    assert status == "invalid"
    assert "serve.sh: --pp_size —" in reason
