"""kvplan's generic --kv-dtype fp8 on SGLang: SGLang has no plain "fp8" (server_args.py --kv-cache-dtype choices:
auto, fp8_e5m2, fp8_e4m3, ... in 0.5.23; fp8_e4m3 from 0.4.1.post6), so kvplan takes it as SGLang's fp8_e4m3, the
e4m3 cache vLLM calls fp8, and says so."""

import json


def test_fp8_is_sglangs_fp8_e4m3_with_a_note(cli):
    base = ("estimate", "llama-3.1-8b", "--engine", "sglang", "--gpu", "h100", "--seq", "8K", "--json")
    code, out, err = cli(*base, "--kv-dtype", "fp8")
    assert code == 0, err
    generic = json.loads(out)
    spelled = json.loads(cli(*base, "--kv-dtype", "fp8_e4m3")[1])
    # Llama-3.1-8B: 32 layers x 8 KV heads x (128 + 128) x 1 byte
    assert generic["kv_dtype"] == "fp8_e4m3" and generic["kv_bytes_per_token"] == 32 * 8 * 256 == 65536
    for key in ("available_kv_bytes", "max_total_num_tokens", "max_batch"):
        assert generic[key] == spelled[key], key
    assert any("SGLang's --kv-cache-dtype fp8_e4m3" in n for n in generic["notes"])
    assert not any("SGLang's --kv-cache-dtype" in n for n in spelled["notes"])
    # a release without fp8_e4m3 (0.4.0 takes auto and fp8_e5m2) still refuses it, naming what it takes
    code, _, err = cli(*base, "--kv-dtype", "fp8", "--engine-version", "0.4.0")
    assert code == 2 and "fp8_e5m2" in err


def test_an_option_modelled_on_the_newest_release_only_is_named_as_given(cli):
    """--enable-hierarchical-cache on 0.5.7 was refused naming --disaggregation-mode / --speculative-algorithm, which
    were not given. 0.5.7's server_args.py also moves the decode attention backend off FA3 when HiCache is on (its
    kernel I/O backend), which kvplan has not modelled: still exit 3, naming the option."""
    code, _, err = cli("estimate", "llama-3.1-8b", "--engine", "sglang", "--engine-version", "0.5.7", "--gpu", "h100",
                       "--seq", "8K", "--sglang-args", "--enable-hierarchical-cache")
    assert code == 3 and "--enable-hierarchical-cache is modelled from SGLang" in err
    assert "--disaggregation-mode" not in err and "--speculative-algorithm" not in err
