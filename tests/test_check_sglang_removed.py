"""SGLang options an older release took (issue 27): kvplan has SGLang 0.5.23's option table, and a launch that pins
no release may run an older SGLang that starts with `--enable-ep-moe` (until 0.5.4) or `--lora-backend flashinfer`
(until 0.5.2), as LongCat's deployment guide does: cannot judge, naming the release. Pinned to a release that no
longer takes them, or a misspelt option, it stays invalid: SGLang would refuse it."""

import json

import pytest

LAUNCH = "python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 1 {extra}\n"


def check(cli, path):
    code, out, _ = cli("check", path, "--gpu", "h100", "--offline", "--format", "json")
    (v,) = json.loads(out)["verdicts"]
    return code, v


@pytest.mark.parametrize("extra, last", [("--enable-ep-moe", "0.5.4"), ("--lora-backend flashinfer", "0.5.2"),
                                         ("--lora-backend=flashinfer", "0.5.2"),
                                         # issue 28: 0.5.19's parser has these (server_args.py), 0.5.20's does not
                                         ("--cuda-graph-max-bs 128", "0.5.19"),
                                         ("--enable-piecewise-cuda-graph", "0.5.13.post1"),
                                         ("--enable-nan-detection", "0.5.12.post1")])
def test_an_unpinned_launch_with_an_option_an_older_release_took_is_cannot_judge(cli, tmp_path, extra, last):
    path = tmp_path / "serve.sh"
    path.write_text(LAUNCH.format(extra=extra))
    code, v = check(cli, path)
    assert code == 3 and v["status"] == "cannot_judge" and f"SGLang {last} still took" in v["reason"], v["reason"]


def test_pinned_to_a_release_without_it_or_misspelt_it_is_invalid(cli, tmp_path):
    path = tmp_path / "serve.sh"
    path.write_text("docker run --gpus all lmsysorg/sglang:v0.5.23 " + LAUNCH.format(extra="--enable-ep-moe"))
    code, v = check(cli, path)
    assert code == 2 and v["status"] == "invalid" and "has no launch_server option '--enable-ep-moe'" in v["reason"]
    path.write_text(LAUNCH.format(extra="--enable-ep-moes"))
    code, v = check(cli, path)
    assert code == 2 and v["status"] == "invalid"
