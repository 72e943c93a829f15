"""Issue 15, silently ignored or misattributed flags: a flag that cannot mean anything is refused at that flag (exit
2); a figure is labelled by what set it."""

from __future__ import annotations

import json

import pytest

M = "llama-3.1-8b"
EXAMPLE = "examples/deploy/prod/chat-8b.yaml"


@pytest.mark.parametrize("args, fragment", [
    (("estimate", M, "--gpu-util", "0.5"), "--gpu-util — --gpu-util needs a GPU"),  # changed nothing, said nothing
    (("sweep", M, "--gpu-util", "0.5"), "--gpu-util — --gpu-util needs a GPU"),
    (("estimate", M, "--gpu", ""), "--gpu — empty GPU name"),  # read as "no GPU"
    (("estimate", M, "--gpu-mem", ""), "--gpu-mem — is empty"),
    (("estimate", M, "--gpu", "h100", "--reserve", ""), "--reserve — is empty"),
    (("estimate", M, "--max-num-seqs", "8"), "--max-num-seqs — the static engine has no max num seqs to set"),
    (("estimate", M, "--block-size", "32"), "--block-size — the static engine has no block size to set"),
    (("estimate", M, "--max-num-batched-tokens", "8192"), "--max-num-batched-tokens — the static engine"),
    (("sweep", M, "--block-size", "32"), "--block-size — the static engine"),
    (("probe", M, "--device", "meta", "--seq", "1K", "--block-size", "32"), "--block-size — "),
    (("check", EXAMPLE, "-o", ""), "--output — is empty"),  # wrote nothing and said nothing
    (("plot", M, "-o", ""), "--output — is empty"),
    (("plot", M, "-o", "c.svg", "--format", "png"), "--format — --format png but the file is named .svg"),
    (("plot", M, "--format", "png"), "--format — --format chooses the image format of --output"),
    (("explain", M, "--prompt", ""), "--prompt"),
])
def test_a_flag_that_cannot_mean_anything_is_refused(cli, args, fragment):
    code, out, err = cli(*args)
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1 and fragment in lines[0], err


def test_paged_flags_stay_valid_where_a_paged_engine_is_in_the_sweep(cli):
    code, out, err = cli("sweep", M, "--seq", "8K", "--gpu", "h100", "--engine", "static,vllm", "--max-num-seqs", "8",
                         "-f", "jsonl")
    assert code == 0, err
    assert [json.loads(line)["engine"] for line in out.splitlines()] == ["static", "vllm"]


@pytest.mark.parametrize("args, label", [
    (("--gpu", "h100", "--gpu-util", "1e-30"), "--gpu-util 1e-30"),
    (("--gpu-mem", "1MiB"), "--gpu-util 0.9 (default)"),
    (("--gpu", "h100", "--reserve", "1GiB"), "--reserve"),
    (("--gpu", "h100", "--kv-cache-memory", "1GiB"), "--kv-cache-memory"),
])
def test_what_is_kept_back_names_what_set_it(cli, args, label):
    # `--gpu-util 1e-30` and `--gpu-mem 1` showed "reserve (runtime overhead)", blaming --reserve nobody passed
    code, out, err = cli("estimate", M, "--engine", "static", *args, "--json")
    assert json.loads(out)["reserved_by"] == label
    code, out, err = cli("estimate", M, "--engine", "static", *args)
    assert f"kept back ({label})" in out and "reserve (runtime overhead)" not in out
