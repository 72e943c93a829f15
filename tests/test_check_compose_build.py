"""docker compose `build:` (issue 27): the service runs the image compose builds from the Dockerfile in its build
context, so that Dockerfile's FROM (engine release), ENV, ENTRYPOINT and CMD are read; it is read only inside the
checked repository, like every path a file names. The real case: Cloud-Linuxer/gpt-oss vllm/ (docker-compose.yml,
its Dockerfile and .env, verbatim in tests/data/deployments_2026/compose/gpt-oss-build, SOURCES.md)."""

import json
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "data" / "deployments_2026" / "compose" / "gpt-oss-build"
SECRET = "kvplan-test-secret-dockerfile"


def check(cli, *args):
    code, out, err = cli("check", *args, "--offline", "--format", "json")
    return code, json.loads(out)["verdicts"], err


def test_the_real_build_sets_the_allocator_conf_so_it_cannot_be_judged(cli):
    # its environment sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which changes what PyTorch's caching
    # allocator holds (kvplan/check/readers/vllm_env.py): not modelled
    code, (v,), _ = check(cli, CORPUS / "docker-compose.yml", "--gpu", "rtx-5090")
    assert code == 3 and v["status"] == "cannot_judge" and "environment PYTORCH_CUDA_ALLOC_CONF" in v["reason"]


def test_the_real_build_runs_the_dockerfiles_entrypoint_with_the_compose_command(cli, tmp_path):
    # the Dockerfile's ENTRYPOINT is python3 -m vllm.entrypoints.openai.api_server; compose's command gives only
    # options; .env names openai/gpt-oss-20b; the Dockerfile pip-installs vllm unpinned. The folder is copied with
    # the compose file's PYTORCH_CUDA_ALLOC_CONF line left out (the test above judges the file as it is)
    copy = tmp_path / "gpt-oss-build"
    copy.mkdir()
    (tmp_path / ".git").mkdir()
    for name in ("Dockerfile", ".env"):
        (copy / name).write_bytes((CORPUS / name).read_bytes())
    compose = (CORPUS / "docker-compose.yml").read_text()
    (copy / "docker-compose.yml").write_text("".join(line for line in compose.splitlines(keepends=True)
                                                     if "PYTORCH_CUDA_ALLOC_CONF" not in line))
    code, (v,), _ = check(cli, copy / "docker-compose.yml", "--gpu", "rtx-5090")
    assert code == 0 and v["status"] == "pass" and v["model"] == "gpt-oss-20b" and v["max_model_len"] == 4096
    assert "image built from Dockerfile (FROM nvidia/cuda:12.6.3-devel-ubuntu22.04)" in v["notes"]
    assert "pip install vllm (no release pinned)" in v["origins"]["engine_release"]


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "svc").mkdir()
    return root


DOCKERFILE = """ARG BASE=vllm/vllm-openai:v0.19.0
FROM python:3.12 AS tools
CMD ["python3"]
FROM ${BASE} AS server
ENV VLLM_LOGGING_LEVEL=INFO
ENTRYPOINT ["vllm", "serve"]
CMD ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "32768"]
"""


def _compose(repo: Path, build: str, extra: str = "") -> Path:
    (repo / "svc" / "Dockerfile").write_text(DOCKERFILE)
    path = repo / "svc" / "compose.yaml"
    path.write_text(f"services:\n  llm:\n    build:{build}\n    runtime: nvidia\n{extra}")
    return path


def test_the_dockerfiles_cmd_is_the_launch_and_its_from_the_release(cli, repo):
    # before compose builds were followed this service "asked for a GPU but ran no engine kvplan reads"; the CMD's
    # 32,768 tokens x 128 KiB (Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 x 2 B) = 4.00 GiB do not fit on an L4
    code, (v,), _ = check(cli, _compose(repo, " ."), "--gpu", "l4")
    assert code == 1 and v["status"] == "fail" and v["max_model_len"] == 32768
    assert v["origins"]["engine_release"] == "vLLM 0.19.0 rules (image vllm/vllm-openai:v0.19.0)"


def test_build_args_and_target_are_the_ones_compose_passes(cli, repo):
    code, (v,), _ = check(cli, _compose(repo, "\n      context: .\n      args: {BASE: vllm/vllm-openai:v0.8.5}"), "--gpu", "l4")
    assert code == 3 and "vLLM 0.8.5 (image vllm/vllm-openai:v0.8.5) is not modelled" in v["reason"]
    code, (v,), _ = check(cli, _compose(repo, "\n      context: .\n      target: tools"), "--gpu", "l4")
    assert code == 3 and "runs `python3`" in v["reason"]  # the tools stage, not the server's launch
    code, (v,), _ = check(cli, _compose(repo, "\n      context: .\n      target: nosuch"), "--gpu", "l4")
    assert code == 3 and "no stage named nosuch" in v["reason"]


def test_a_compose_entrypoint_drops_the_images_cmd_and_a_command_replaces_it(cli, repo):
    path = _compose(repo, " .", "    command: [meta-llama/Llama-3.1-8B-Instruct, --max-model-len, '8192']\n")
    code, (v,), _ = check(cli, path, "--gpu", "l4")
    assert code == 0 and v["max_model_len"] == 8192  # the image's ENTRYPOINT vllm serve, compose's arguments
    path = _compose(repo, " .", "    entrypoint: [python3, app.py]\n")
    code, (v,), _ = check(cli, path, "--gpu", "l4")
    assert code == 3 and "runs `python3 app.py`" in v["reason"]


def test_a_dockerfile_outside_the_repository_is_not_read(cli, repo, tmp_path):
    outside = tmp_path / "host"
    outside.mkdir()
    (outside / "Dockerfile").write_text(f"FROM vllm/vllm-openai:v0.19.0\n# {SECRET}\nCMD [\"{SECRET}/model\"]\n")
    path = repo / "svc" / "compose.yaml"
    path.write_text("services:\n  llm:\n    build: ../../host\n    runtime: nvidia\n")
    for fmt in ("json", "text", "markdown"):
        code, out, err = cli("check", path, "--gpu", "l4", "--offline", "--format", fmt)
        assert code == 3 and SECRET not in out + err and "outside the repository" in out + err, (fmt, out, err)


def test_a_dockerfile_that_is_not_there_or_is_remote_is_cannot_judge(cli, repo):
    path = repo / "svc" / "compose.yaml"
    path.write_text("services:\n  llm:\n    build: {context: ., dockerfile: Dockerfile.gpu}\n    image: my-vllm:latest\n"
                    "    command: [--model, meta-llama/Llama-3.1-8B-Instruct]\n    runtime: nvidia\n")
    code, (v,), _ = check(cli, path, "--gpu", "h100")
    assert code == 3 and "builds its image from Dockerfile.gpu, which kvplan cannot read (no such file)" in v["reason"]
    path.write_text("services:\n  llm:\n    build: https://github.com/org/repo.git#main\n    ports: ['8000:8000']\n")
    code, (v,), _ = check(cli, path, "--gpu", "h100")  # no GPU asked, but what it runs is unknown: never skipped
    assert code == 3 and "remote context" in v["reason"]


def test_a_build_key_that_may_change_the_launch_is_named(cli, repo):
    code, (v,), _ = check(cli, _compose(repo, "\n      context: .\n      dockerfile_inlined: x"), "--gpu", "l4")
    assert code == 3 and "build.dockerfile_inlined" in v["reason"]


def test_dockerfile_inline_is_read(cli, repo):
    path = repo / "svc" / "compose.yaml"
    path.write_text("services:\n  llm:\n    runtime: nvidia\n    build:\n      context: .\n      dockerfile_inline: |\n"
                    "        FROM vllm/vllm-openai:v0.19.0\n        CMD [\"meta-llama/Llama-3.1-8B-Instruct\", "
                    "\"--max-model-len\", \"8192\"]\n")
    code, (v,), _ = check(cli, path, "--gpu", "l4")
    assert code == 0 and v["max_model_len"] == 8192 and "vllm/vllm-openai:v0.19.0" in v["origins"]["engine_release"]

