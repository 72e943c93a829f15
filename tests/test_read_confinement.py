"""Issue 26, security: a deployment file names other files (its model, a `--config`, `--extra_llm_api_options`), and
kvplan check reads them. Only files inside the repository or folder being checked (or --models-dir, --allow-path,
the caches) are read: a path outside it (`../`, absolute, or a symlink in the repository pointing out) is cannot judge,
and nothing of the file's content reaches stderr or any report format. A Hugging Face cache refs/ file that does not
hold a commit is refused without being quoted. Report formats escape the HTML a name carries."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

SECRET = "root:$6$kvplan-test-secret-line:19000:0:99999:7:::"


@pytest.fixture
def layout(tmp_path):
    """A repository (it holds .git) and, beside it, a file it must not read."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "deploy").mkdir()
    outside = tmp_path / "host" / "shadow"
    outside.parent.mkdir()
    outside.write_text(SECRET + "\n")
    return repo, outside


CASES = {
    "model relative": ("serve.sh", "vllm serve ../../host/shadow --max-model-len 8192\n"),
    "model absolute": ("serve.sh", "vllm serve {outside} --max-model-len 8192\n"),
    "vllm --config": ("serve.sh", "vllm serve meta-llama/Llama-3.1-8B-Instruct --config {outside}\n"),
    "trtllm options": ("serve.sh", "trtllm-serve meta-llama/Llama-3.1-8B-Instruct --extra_llm_api_options ../../host/shadow\n"),
    "kvplan model": ("deploy.yaml", "engine: vllm\nmodel: ../../host/shadow\ngpu: h100\nmax_model_len: 8192\n"),
    "symlink in repo": ("serve.sh", "vllm serve ./model.json --max-model-len 8192\n"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_path_outside_the_repository_is_not_read(cli, layout, case):
    repo, outside = layout
    name, text = CASES[case]
    (repo / "deploy" / name).write_text(text.format(outside=outside))
    if case == "symlink in repo":
        os.symlink(outside, repo / "deploy" / "model.json")
    for fmt in ("text", "json", "markdown", "junit"):
        code, out, err = cli("check", repo / "deploy", "--gpu", "h100", "--format", fmt, "--offline")
        assert code == 3, (fmt, out, err)
        assert "kvplan-test-secret" not in out + err and "root:" not in out + err, (fmt, out, err)
    assert "outside the repository" in err, err


def test_allow_path_lets_a_folder_outside_be_read(cli, layout, tmp_path):
    repo, _ = layout
    models = tmp_path / "models"
    models.mkdir()
    config = Path(__file__).parent / "data" / "hf_configs" / "llama-3.1-8b.json"
    (models / "config.json").write_bytes(config.read_bytes())
    (repo / "deploy" / "serve.sh").write_text(f"vllm serve {models} --max-model-len 8192\n")
    code, out, err = cli("check", repo / "deploy", "--gpu", "h100", "--format", "json", "--offline")
    assert code == 3 and "outside the repository" in err, err
    code, out, err = cli("check", repo / "deploy", "--gpu", "h100", "--format", "json", "--offline",
                         "--allow-path", models)
    assert code == 0, err
    assert json.loads(out)["verdicts"][0]["status"] == "pass"


@pytest.mark.parametrize("content", [b"../../../../host\n", b"\x00\xff" * 64, b"0" * 40 * 1000, b"a" * 39],
                         ids=["a path", "binary", "huge", "short"])
def test_a_cache_ref_that_is_not_a_commit_is_refused_unquoted(cli, tmp_path, monkeypatch, content):
    cache = tmp_path / "hf"
    repo = cache / "models--Qwen--Qwen3-0.6B"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_bytes(content)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    code, out, err = cli("estimate", "Qwen/Qwen3-0.6B", "--offline")
    assert code == 3, err
    assert err.count("\n") == 1 and "refs/main — does not hold a commit" in err, err
    assert content.decode("latin-1")[:20] not in err


def test_markdown_escapes_html_in_names(cli, tmp_path):
    folder = tmp_path / "deploy"
    folder.mkdir()
    (folder / "serve.yaml").write_text("model: meta-llama/Llama-3.1-8B-Instruct\nmax-model-len: 8192\n"
                                       "served-model-name: '`<img src=x onerror=alert(1)>'\n")
    code, out, err = cli("check", folder, "--gpu", "h100", "--format", "markdown")
    assert code == 0, err
    assert "<img" not in out and "&lt;img src=x onerror=alert(1)&gt;" in out, out
