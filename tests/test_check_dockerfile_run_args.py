"""A Dockerfile whose ENTRYPOINT is the engine and which has no CMD names no model because the model arrives at
`docker run IMAGE MODEL ...` (docker appends the run's arguments to an exec-form ENTRYPOINT): "cannot judge" (exit 3)
saying the model is given at run time, not "invalid: no model". A file that does give its arguments (a CMD, a
shell-form ENTRYPOINT, which ignores them) and still names no model stays invalid (exit 2)."""

import json
from pathlib import Path

import pytest

# verbatim from Cloud-Linuxer/gpt-oss vllm/Dockerfile (tests/data/deployments_2026/SOURCES.md): ENTRYPOINT
# ["python3", "-m", "vllm.entrypoints.openai.api_server"], no CMD; its compose file gives the arguments
REAL = Path(__file__).resolve().parent / "data" / "deployments_2026" / "compose" / "gpt-oss-build" / "Dockerfile"


def _verdict(cli, path: Path):
    code, out, err = cli("check", path, "--gpu", "h100", "--format", "json")
    verdicts = json.loads(out)["verdicts"]
    assert len(verdicts) == 1, verdicts
    return code, verdicts[0]


def test_the_public_entrypoint_dockerfile_cannot_be_judged_and_says_why(cli, tmp_path):
    text = REAL.read_text(encoding="utf-8")
    assert 'ENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server"]' in text
    assert not any(line.startswith("CMD") for line in text.splitlines())  # only a HEALTHCHECK's CMD
    alone = tmp_path / "Dockerfile"  # judged alone, without the compose file that runs it
    alone.write_text(text, encoding="utf-8")
    code, v = _verdict(cli, alone)
    assert code == 3 and v["status"] == "cannot_judge", v
    assert "no model" in v["reason"] and "docker run" in v["reason"]
    assert "python3 -m vllm.entrypoints.openai.api_server" in v["reason"]


@pytest.mark.parametrize("text, engine_words", [
    # no ENTRYPOINT and no CMD: the vLLM image's own entrypoint (vllm serve) takes the run's arguments
    ('FROM vllm/vllm-openai:v0.10.0\nENV HF_HOME=/models\n', "vllm serve"),
    ('FROM lmsysorg/sglang:latest\nENTRYPOINT ["python3", "-m", "sglang.launch_server"]\n',
     "python3 -m sglang.launch_server"),
    ('FROM nvcr.io/nvidia/tensorrt-llm/release:1.0.0\nENTRYPOINT ["trtllm-serve"]\n', "trtllm-serve"),
])
def test_every_engine_s_entrypoint_without_cmd_is_cannot_judge(cli, tmp_path, text, engine_words):
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    code, v = _verdict(cli, path)
    assert code == 3 and v["status"] == "cannot_judge", v
    assert "no model" in v["reason"] and "docker run" in v["reason"] and f"`{engine_words}`" in v["reason"]


@pytest.mark.parametrize("text", [
    # the file gives the arguments (a CMD) and no model among them
    'FROM vllm/vllm-openai:v0.10.0\nCMD ["--max-model-len", "4096"]\n',
    # a shell-form ENTRYPOINT runs through /bin/sh -c and ignores docker run's arguments
    'FROM vllm/vllm-openai:v0.10.0\nENTRYPOINT vllm serve --max-model-len 4096\n',
])
def test_a_launch_that_gives_its_arguments_and_no_model_stays_invalid(cli, tmp_path, text):
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    code, v = _verdict(cli, path)
    assert code == 2 and v["status"] == "invalid", v
    assert v["reason"].split(" — ")[1].startswith("no model")
