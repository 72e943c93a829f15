"""Engine options pasted as the engine spells them (issue 28): `--sglang-args` takes launch_server's own names for
the settings kvplan has a flag for, and a setting given both ways with two values is bad input naming both. The
closed world: every option a launch sets is modelled, known to leave GPU memory alone, or "cannot judge"."""

import json

import pytest

BASE = ("estimate", "llama-3.1-8b", "--engine", "sglang", "--gpu", "h100", "--json")
KEYS = ("seq", "tp", "kv_dtype", "available_kv_bytes", "mem_fraction_static", "max_total_num_tokens", "max_batch",
        "page_size", "max_running_requests", "chunked_prefill_size")


def test_core_options_pasted_in_sglang_args_are_read_as_sglang_spells_them(cli):
    code, out, err = cli(*BASE, "--sglang-args", "--mem-fraction-static 0.85 --tp 2 --context-length 8192 "
                                                 "--kv-cache-dtype fp8_e4m3 --max-running-requests 64 "
                                                 "--chunked-prefill-size 4096 --page-size 16")
    assert code == 0, err
    pasted = json.loads(out)
    flags = json.loads(cli(*BASE, "--gpu-util", "0.85", "--tp", "2", "--seq", "8192", "--kv-dtype", "fp8",
                           "--max-num-seqs", "64", "--max-num-batched-tokens", "4096", "--block-size", "16")[1])
    for key in KEYS:
        assert pasted.get(key) == flags.get(key), key
    # the pasted values are the ones judged, not kvplan's defaults (0.85 is not the release's own fraction)
    assert pasted["tp"] == 2 and pasted["seq"] == 8192 and pasted["mem_fraction_static"] == "0.85"


@pytest.mark.parametrize("ours, pasted, names", [
    (("--gpu-util", "0.8"), "--mem-fraction-static 0.85", ("--mem-fraction-static 0.85", "--gpu-util 0.8")),
    (("--tp", "2"), "--tp-size 4", ("--tp-size 4", "--tp 2")),
    (("--tp", "2"), "--tp 4", ("--tp 4", "--tp 2")),
    (("--seq", "4096"), "--context-length 8192", ("--context-length 8192", "--seq 4096")),
    (("--kv-dtype", "fp8"), "--kv-cache-dtype bf16", ("--kv-cache-dtype bf16", "--kv-dtype fp8")),
    (("--max-num-seqs", "32"), "--max-running-requests 64", ("--max-running-requests 64", "--max-num-seqs 32")),
    (("--max-num-batched-tokens", "2048"), "--chunked-prefill-size 4096",
     ("--chunked-prefill-size 4096", "--max-num-batched-tokens 2048")),
    (("--block-size", "32"), "--page-size 16", ("--page-size 16", "--block-size 32")),
])
def test_a_setting_given_both_ways_with_two_values_is_bad_input_naming_both(cli, ours, pasted, names):
    code, out, err = cli(*BASE[:-1], *ours, "--sglang-args", pasted)
    assert code == 2 and out == ""
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: --sglang-args") and all(n in line for n in names), line


def test_one_setting_given_both_ways_with_one_value_is_fine(cli):
    # kvplan's generic fp8 is SGLang's fp8_e4m3 (the engine record's kv_fp8_name): one value, two spellings
    for ours, pasted in ((("--tp", "2"), "--tp-size 2"), (("--gpu-util", "0.85"), "--mem-fraction-static 0.85"),
                         (("--kv-dtype", "fp8"), "--kv-cache-dtype fp8_e4m3")):
        code, _, err = cli(*BASE, *ours, "--sglang-args", pasted)
        assert code == 0, (ours, err)


def test_the_model_is_still_kvplans_argument(cli):
    code, _, err = cli(*BASE[:-1], "--sglang-args", "--model-path meta-llama/Llama-3.1-8B-Instruct")
    assert code == 2 and "--model-path is kvplan's MODEL" in err


@pytest.mark.parametrize("ours, pasted, names", [
    (("--gpu-util", "0.8"), "--gpu-memory-utilization 0.85", ("--gpu-memory-utilization 0.85", "--gpu-util 0.8")),
    (("--seq", "4096"), "--max-model-len 8192", ("--max-model-len 8192", "--seq 4096")),
    (("--tp", "2"), "--tensor-parallel-size 4", ("--tensor-parallel-size 4", "--tp 2")),
    (("--max-num-seqs", "32"), "--max-num-seqs 64", ("--max-num-seqs 64", "--max-num-seqs 32")),
    (("--block-size", "32"), "--block-size 16", ("--block-size 16", "--block-size 32")),
])
def test_vllm_args_name_both_sides_of_a_conflict_too(cli, ours, pasted, names):
    code, out, err = cli("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "h100", *ours, "--vllm-args", pasted)
    assert code == 2 and out == ""
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: --vllm-args") and all(n in line for n in names), line


# ------------------------------------------------------------------------------------------ the closed world

def test_an_option_sglang_lacks_is_bad_input_and_a_real_unclassified_one_cannot_be_judged(cli):
    base = ("estimate", "llama-3.1-8b", "--engine", "sglang", "--gpu", "h100", "--seq", "8K")
    # made up: SGLang 0.5.23's parser refuses it, so the launch would not start (bad input, exit 2, named)
    code, out, err = cli(*base, "--sglang-args", "--frobnicate-cache 3")
    assert code == 2 and out == "" and "--frobnicate-cache" in err
    # real (launch_server takes it) but not classified: cannot judge (exit 3), named, never passed over
    for option in ("--mm-process-config {}",):
        code, out, err = cli(*base, "--sglang-args", option)
        assert code == 3 and out == "" and option.split()[0] in err and "not read" in err, (option, err)
    # read and refused by name: cannot judge too, with what it moves
    for option in ("--enable-symm-mem", "--triton-attention-num-kv-splits 16", "--disable-chunked-prefix-cache"):
        code, out, err = cli(*base, "--sglang-args", option)
        assert code == 3 and out == "" and option.split()[0] in err and "not read" not in err, (option, err)
    # read as leaving GPU memory alone: judged, and the same pool as without them
    plain = json.loads(cli(*base, "--json")[1])
    code, out, err = cli(*base, "--json", "--sglang-args", "--host 0.0.0.0 --port 30000 --trust-remote-code "
                                                           "--log-level warning --api-key k --enable-metrics "
                                                           "--num-continuous-decode-steps 4 --download-dir /d "
                                                           "--deepep-mode low_latency --delete-ckpt-after-loading "
                                                           "--disaggregation-bootstrap-port 8995")
    assert code == 0, err
    assert json.loads(out)["max_total_num_tokens"] == plain["max_total_num_tokens"]


def test_check_refuses_an_unclassified_option_in_an_sglang_launch(cli, tmp_path):
    script = tmp_path / "serve.sh"
    launch = ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --context-length 8192 "
              "--port 30000 {}\n")
    script.write_text("#!/bin/sh\n" + launch.format("--host 0.0.0.0"), encoding="utf-8")
    code, out, err = cli("check", str(script), "--gpu", "h100")
    assert code in (0, 1), out + err
    script.write_text("#!/bin/sh\n" + launch.format("--enable-symm-mem"), encoding="utf-8")
    code, out, err = cli("check", str(script), "--gpu", "h100")
    assert code == 3 and "--enable-symm-mem" in out + err


def test_every_classified_option_is_one_sglang_has_and_in_one_class_only():
    from kvplan.engines.sglang import launch_args as la

    dests = {o.dest for o in la.options().values()}
    classes = [set(la.MODELLED), set(la.NOT_MODELLED), set(la.MOVES_DEFAULT_FRACTION), set(la.FEATURE_OPTIONS),
               set(la.READ_HERE), set(la.NO_GPU_MEMORY), set(la.ONLY_WITH), set(la.DRAFT_ONLY)]
    for c in classes:
        assert c <= dests, c - dests
    # quantization is modelled for a checkpoint's own method and refused when it forces another (check's reader)
    overlap = [(i, j, a & b) for i, a in enumerate(classes) for j, b in enumerate(classes) if i < j and a & b]
    assert overlap == [(0, 1, {"quantization"})], overlap
    assert not set(la.NO_GPU_MEMORY) & {"disable_radix_cache", "mem_fraction_static", "max_prefill_tokens"}


def test_the_unclassified_options_stay_few():
    """The closed world's ceiling (issue 28): 311 options of SGLang 0.5.23's 530 were unclassified, 215 after the
    first pass, 1 now (scripts/dump_sglang_options.py --unclassified). A new option in the table, or one taken out
    of a class, must be read before this passes again."""
    from kvplan.engines.sglang import launch_args as la

    left = sorted(o.flags[0] for o in la.options().values() if not la.classified(o.dest))
    assert left == ["--mm-process-config"], left


@pytest.mark.parametrize("kv", ["mxfp8", "fp4_mx_block16", "nvfp4"])
def test_sglangs_own_kv_formats_cannot_be_judged_not_bad_input(cli, kv):
    """SGLang 0.5.23's --kv-cache-dtype takes mxfp8 and fp4_mx_block16 (server_args.py choices): a launch with them
    starts, so kvplan's answer is "cannot judge" (exit 3: their scales are not modelled), pasted or as --kv-dtype."""
    base = ("estimate", "llama-3.1-8b", "--engine", "sglang", "--gpu", "h100", "--seq", "8K")
    for given in (("--sglang-args", f"--kv-cache-dtype {kv}"), ("--kv-dtype", kv)):
        code, out, err = cli(*base, *given)
        assert code == 3 and out == "" and f"--kv-cache-dtype {kv}" in err, (given, err)
    code, _, err = cli(*base, "--sglang-args", "--kv-cache-dtype banana")
    assert code == 2 and "banana" in err


def _outcome(parser, tokens):
    import argparse

    from kvplan.engines.sglang import launch_args as la

    try:
        namespace, extra = parser.parse_known_args(list(tokens))
    except (la._ParseError, argparse.ArgumentError) as err:
        return "refused", str(err)
    return vars(namespace), extra


TRICKY = [
    ["--mem-frac", "0.8"],  # an abbreviation
    ["--mem-fraction-static=0.7", "--tp=2"],  # '=' forms
    ["--enable-dsa-fused-indexer"], ["--no-enable-dsa-fused-indexer"], ["--no-enable-dsa"],  # a bool's own --no- form
    ["--no-no-enable-dsa-fused-indexer"],  # argparse adds --no- to every -- flag of a bool option
    ["--enable"], ["--disable-cuda"], ["--dis"],  # prefixes several options share: argparse refuses, named as it does
    ["--tp", "-1"], ["--tp", "-1.5"], ["--tp", "x"], ["--tp"],  # values argparse reads, or refuses
    ["--kv-cache-dtype", "nope"], ["--reasoning-parser", "qwen3"],  # choices
    ["--model-path", "m", "extra", "--", "--tp", "2"], ["-", "--tp", "2"],
    ["--monokernel-backend", "amd"], ["--enable-amd-monokernel"],  # two flags that store into one dest
    ["--return-aux-hidden-state-layer-ids", "1", "2", "--tp", "2"], ["--return-aux-hidden-state-layer-ids"],
]


def test_a_launch_is_parsed_with_the_options_it_names_as_with_the_whole_table(tmp_path, monkeypatch):
    # parse_argv builds a parser of the options its tokens can name (start-up time: launch_args._parser_for); the
    # independent value is the parser of all 531 options, as before: the same namespace, leftovers and refusals, on
    # every SGLang launch in the deployment corpus and on the tricky forms above
    from kvplan.cli import entry
    from kvplan.engines.sglang import launch_args as la

    seen = []
    narrow = la._parser_for

    def both(tokens):
        seen.append(list(tokens))
        return narrow(tokens)

    monkeypatch.setattr(la, "_parser_for", both)
    entry.register_commands()
    from typer.testing import CliRunner

    for folder in ("tests/data/deployments", "tests/data/deployments_2026", "examples/deploy"):
        CliRunner().invoke(entry.app, ["check", folder, "--gpu", "h100", "--format", "json"])
    assert len(seen) >= 20  # the corpus's SGLang launches were read
    for tokens in seen + TRICKY:
        assert _outcome(narrow(tokens), tokens) == _outcome(la._parser(), tokens), tokens
