"""`kvplan check` asks the Hugging Face Hub once per model per run, and remembers a failure for the run: a folder of
files naming the same unknown model asks once (the loopback stand-in, tests/hub_standin.py, counts the requests);
`--offline` and HF_HUB_OFFLINE=1 ask nothing."""

import json

import pytest

import hub_standin

UNKNOWN = "acme/no-such-model"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "kvplan-cache"))
    with hub_standin.online(monkeypatch) as state:
        yield state


def _folder(tmp_path, n: int, model: str):
    folder = tmp_path / f"deploy-{n}"
    for i in range(n):
        sub = folder / f"team-{i}"  # each in its own folder: the lookup does not depend on where the name is written
        sub.mkdir(parents=True)
        (sub / "serve.yaml").write_text(f"model: {model}\nmax-model-len: 8192\n")
    return folder


def _asked(hub, repo: str) -> int:
    return sum(1 for _, path, _, _ in hub.requests if f"/{repo}/" in path)


def test_ten_files_naming_one_unknown_model_ask_the_hub_as_often_as_one(cli, hub, tmp_path):
    code, out, _ = cli("check", _folder(tmp_path, 1, UNKNOWN), "--gpu", "h100", "--format", "json")
    one = _asked(hub, UNKNOWN)
    assert code == 3 and one >= 1
    hub.requests.clear()
    code, out, _ = cli("check", _folder(tmp_path, 10, UNKNOWN), "--gpu", "h100", "--format", "json")
    report = json.loads(out)
    assert code == 3 and report["cannot_judge"] == 10
    assert len({v["reason"].split(" — ", 1)[1] for v in report["verdicts"]}) == 1  # the same answer for each
    assert _asked(hub, UNKNOWN) == one


def test_a_model_found_on_the_hub_is_fetched_once_for_the_folder(cli, hub, tmp_path):
    hub.add_public("Qwen/Qwen3-0.6B")
    code, out, _ = cli("check", _folder(tmp_path, 1, "Qwen/Qwen3-0.6B"), "--gpu", "h100", "--format", "json")
    one = _asked(hub, "Qwen/Qwen3-0.6B")
    assert code == 0 and one >= 1
    hub.requests.clear()
    code, out, _ = cli("check", _folder(tmp_path, 10, "Qwen/Qwen3-0.6B"), "--gpu", "h100", "--format", "json")
    assert code == 0 and json.loads(out)["passed"] == 10
    assert _asked(hub, "Qwen/Qwen3-0.6B") <= one  # at most once more (the cache now holds it: fewer)


@pytest.mark.parametrize("how", ["--offline", "HF_HUB_OFFLINE"])
def test_offline_asks_nothing(cli, hub, tmp_path, monkeypatch, how):
    extra = ("--offline",) if how == "--offline" else ()
    if how == "HF_HUB_OFFLINE":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out, _ = cli("check", _folder(tmp_path, 10, UNKNOWN), "--gpu", "h100", "--format", "json", *extra)
    report = json.loads(out)
    assert code == 3 and report["cannot_judge"] == 10 and hub.requests == []
    assert all(("--offline" if how == "--offline" else "HF_HUB_OFFLINE=1") in v["reason"] for v in report["verdicts"])
