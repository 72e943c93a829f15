"""vLLM's environment is a closed world (kvplan/check/readers/vllm_env.py): every VLLM_* variable a deployment sets
is read by kvplan, acts only on the host, is ignored by the release (vLLM warns about a name its vllm/envs.py does
not define), or makes the answer "cannot judge" naming it; PYTORCH_CUDA_ALLOC_CONF, which changes what PyTorch's
caching allocator holds, is not modelled. Each case is a compose service on a pinned vllm/vllm-openai image."""

import json

import pytest

from kvplan.check.readers import vllm_env

SERVICE = """services:
  vllm:
    image: vllm/vllm-openai:{tag}
    command: --model Qwen/Qwen2.5-7B-Instruct --max-model-len 8192
    environment:
{env}    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              count: 1
              capabilities: [gpu]
"""


def check(cli, tmp_path, env, tag="v0.31.0"):
    lines = "".join(f"      - {item}\n" for item in env) or "      - HF_HUB_OFFLINE=1\n"
    path = tmp_path / "docker-compose.yml"
    path.write_text(SERVICE.format(tag=tag, env=lines))
    code, out, _ = cli("check", path, "--gpu", "h100", "--offline", "--format", "json")
    (verdict,) = json.loads(out)["verdicts"]
    return code, verdict


def test_host_side_variables_pass_and_leave_the_figures_as_without_them(cli, tmp_path):
    bare_code, bare = check(cli, tmp_path, [])
    code, v = check(cli, tmp_path, ["VLLM_LOGGING_LEVEL=DEBUG", "VLLM_API_KEY=token", "VLLM_PORT=8001",
                                    "VLLM_WORKER_MULTIPROC_METHOD=spawn", "VLLM_NO_USAGE_STATS=1"])
    assert (bare_code, code) == (0, 0) and v["status"] == bare["status"] == "pass"
    assert v["figures"] == bare["figures"]


@pytest.mark.parametrize("item, name", [
    # VLLM_MLA_DISABLE changes the KV cache's layout for latent-attention models (vllm/envs.py 0.31.0)
    ("VLLM_MLA_DISABLE=1", "VLLM_MLA_DISABLE"),
    # a garbage-collection pass around CUDA-graph capture: what the capture holds is not modelled for it
    ("VLLM_ENABLE_CUDAGRAPH_GC=1", "VLLM_ENABLE_CUDAGRAPH_GC"),
    ("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF"),
])
def test_a_variable_that_changes_the_engine_cannot_be_judged_naming_it(cli, tmp_path, item, name):
    code, v = check(cli, tmp_path, ["VLLM_LOGGING_LEVEL=INFO", item])
    assert code == 3 and v["status"] == "cannot_judge"
    assert f"environment {name}" in v["reason"] and "not modelled" in v["reason"]


def test_a_name_the_release_does_not_define_passes_with_a_note(cli, tmp_path):
    # VLLM_ATTENTION_BACKEND left envs.py after 0.14 (the --attention-backend option replaced it): 0.31.0 warns
    # "Unknown vLLM environment variable detected" and runs its own choice
    code, v = check(cli, tmp_path, ["VLLM_ATTENTION_BACKEND=FLASHINFER"])
    assert code == 0 and v["status"] == "pass"
    assert any(n.startswith("VLLM_ATTENTION_BACKEND: vLLM 0.31.0 neither defines") for n in v["notes"])
    assert not any(n.startswith("VLLM_ATTENTION_BACKEND=FLASHINFER") for n in v["notes"])
    # a misspelt name no release reads
    code, v = check(cli, tmp_path, ["VLLM_GPU_MEMORY_UTILISATION=0.5"], tag="latest")
    assert code == 0 and any(n.startswith("VLLM_GPU_MEMORY_UTILISATION: vLLM 0.33.0 neither defines") for n in v["notes"])


def test_a_name_another_modelled_release_reads_is_not_ignored_when_the_file_pins_none(cli, tmp_path):
    # VLLM_USE_TRITON_FLASH_ATTN is in 0.10.2's envs.py, not in 0.33.0's: the unpinned file may run the older one
    names = vllm_env.defined_names()
    assert "VLLM_USE_TRITON_FLASH_ATTN" in names["0.10.2"] and "VLLM_USE_TRITON_FLASH_ATTN" not in names["0.33.0"]
    code, v = check(cli, tmp_path, ["VLLM_USE_TRITON_FLASH_ATTN=0"], tag="latest")
    assert code == 3 and "environment VLLM_USE_TRITON_FLASH_ATTN" in v["reason"]
    code, v = check(cli, tmp_path, ["VLLM_USE_TRITON_FLASH_ATTN=0"], tag="v0.33.0")
    assert code == 0 and any(n.startswith("VLLM_USE_TRITON_FLASH_ATTN: vLLM 0.33.0") for n in v["notes"])


def test_the_name_lists_hold_what_the_releases_source_says():
    # facts read in the releases' own envs.py: VLLM_USE_V1 was dropped after 0.11, VLLM_ATTENTION_BACKEND after the
    # 0.14 line, VLLM_USE_V2_MODEL_RUNNER exists from 0.28 (kvplan/engines/vllm/releases.py V2_RUNNER_ENV)
    names = vllm_env.defined_names()
    assert [r for r in names if "VLLM_USE_V1" in names[r]] == ["0.10.2", "0.11.0"]
    assert [r for r in names if "VLLM_ATTENTION_BACKEND" in names[r]] == ["0.10.2", "0.11.0", "0.13.0", "0.14.1"]
    assert "VLLM_USE_V2_MODEL_RUNNER" in names["0.28.0"] and "VLLM_USE_V2_MODEL_RUNNER" in names["0.33.0"]
    # every modelled release has its list, and every host-side or read name is one some release reads
    from kvplan import engines
    assert {r.mirrors for r in engines.get("vllm").releases.RELEASES} == set(names)
    anywhere = frozenset().union(*names.values())
    assert set(vllm_env.HOST_SIDE) <= anywhere and vllm_env.READ <= anywhere
