"""Reading `vllm serve` arguments as the vLLM release a file pins reads them (kvplan/engines/vllm/serve_args.py, with
the option tables dumped from each release's own parser in kvplan/data/vllm_options)."""

import argparse
import json

import pytest

from kvplan.engines.vllm.releases import RELEASES

LINES = [r.first for r in RELEASES]
from hypothesis import given
from hypothesis import strategies as st

from kvplan.engines.vllm import serve_args as va
from kvplan.core.errors import InputError


def config(data, version=None):
    return va.parse_config(data, where="serve.yaml", version=version)


def line(text, version=None, **kw):
    return va.parse_command_line(text, version=version, **kw)


def error(fn, *args, **kw) -> InputError:
    with pytest.raises(InputError) as info:
        fn(*args, **kw)
    return info.value


# ------------------------------------------------------------------ the option tables

def test_tables_hold_each_release_option_list():
    # the counts of options/0.19.0.json and 0.33.0.json (research dumps of vLLM's own parser, 231 and 320 actions)
    assert len(va.options("0.19")) == 231 and len(va.options("0.33")) == 320
    for version in va.table_releases():
        opts = va.options(version)
        for dest in ("model", "max_model_len", "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization",
                     "kv_cache_dtype", "block_size", "max_num_seqs", "max_num_batched_tokens",
                     "port", "enforce_eager", "enable_prefix_caching", "speculative_config"):
            assert dest in opts, (version, dest)
        for opt in opts.values():  # the long name is the dest, as vLLM derives it
            assert opt.flags[0] == "--" + opt.dest.replace("_", "-")


def test_the_registry_and_the_tables_agree():
    """A rule of releases.py that the parser shows is the parser's: --kv-cache-memory-bytes from 0.10.2,
    EnableDisableAction switches in 0.33, the gpu_memory_utilization default 0.9 / 0.92."""
    from fractions import Fraction

    from kvplan.engines.vllm import releases

    assert va.table_releases()[0] == "0.10.0" and va.table_releases()[-1] == "0.33.0" and len(va.table_releases()) == 28
    for table in va.table_releases():
        rel = releases.release(table)
        opts = va.options(table)
        assert ("kv_cache_memory_bytes" in opts) == rel.kv_cache_memory_option, table
        assert ("!--disable-prefix-caching" in opts["enable_prefix_caching"].flags) == rel.enable_disable_switches, table
        assert Fraction(str(opts["gpu_memory_utilization"].default)) == rel.default_gpu_util, table
    # a launch is read by the newest table at or before its release
    assert va.table_release("0.19.5") == "0.19.1" and va.table_release("0.10.1") == "0.10.0"
    assert va.table_release("0.11.0rc2") == "0.11.0" and va.table_release("0.33.0") == "0.33.0"
    assert "kv_cache_memory_bytes" not in va.options("0.10.1") and "kv_cache_memory_bytes" in va.options("0.10.2")
    assert va.options("0.19")["tensor_parallel_size"].flags == ("--tensor-parallel-size", "-tp")
    assert "!--disable-prefix-caching" in va.options("0.33")["enable_prefix_caching"].flags


def test_each_release_has_its_own_table():
    """Each release's options are its parser's; 0.33's --disable-x/--enable-x inverses are derived as its
    EnableDisableAction does (vllm/utils/argparse_utils.py), after the switch's own names."""
    assert va.options("0.19")["enable_expert_parallel"].flags == ("--enable-expert-parallel", "-ep",
                                                                  "!--no-enable-expert-parallel")
    assert va.options("0.33")["enable_expert_parallel"].flags == ("--enable-expert-parallel", "-ep",
                                                                  "!--disable-expert-parallel",
                                                                  "!--no-enable-expert-parallel")
    assert va.options("0.33")["disable_sliding_window"].flags == ("--disable-sliding-window", "!--enable-sliding-window",
                                                                  "!--no-disable-sliding-window")
    assert va.options("0.33")["trust_remote_code"].flags == ("--trust-remote-code", "!--no-trust-remote-code")
    assert "grpc_port" in va.options("0.33") and "grpc_port" not in va.options("0.19")
    # releases.md "accepted --kv-cache-dtype values": packed formats from 0.20.2, NVFP4 from 0.20.2, octave in 0.33
    assert "nvfp4" not in va.options("0.19")["kv_cache_dtype"].choices and "fp8_inc" in va.options("0.19")["kv_cache_dtype"].choices
    assert "nvfp4" in va.options("0.20.2")["kv_cache_dtype"].choices and "octave_k3v4" in va.options("0.33")["kv_cache_dtype"].choices
    assert "octave_k3v4" not in va.options("0.32")["kv_cache_dtype"].choices
    assert va.options("0.10.2")["kv_cache_dtype"].choices == ("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc")
    assert "grpc_port" in va.options("0.33") and "swap_space" in va.options("0.17.1") and "swap_space" not in va.options("0.18.1")


def test_memory_classification_names_real_options():
    every = set(va.options("0.19")) | set(va.options("0.33"))
    assert va.MODELLED <= every
    assert set(va.NOT_MODELLED) <= every
    assert set(va.CUDA_GRAPH_OPTIONS) <= every
    assert not va.MODELLED & set(va.NOT_MODELLED)


def test_one_release_registry_serves_the_engine_and_the_option_table():
    """estimate --engine-version and check --vllm-version read one registry: any release of a line is that line
    (0.19.5 was refused by check and accepted by estimate before they shared it)."""
    from kvplan.engines.vllm import releases

    from kvplan.core.errors import UnsupportedError

    assert va.DEFAULT_VERSION == releases.DEFAULT.version == "0.33.0" and releases.DEFAULT.line == "0.33"
    assert va.check_version("0.19.0") == va.check_version("v0.19") == "0.19.0" and va.check_version("0.19.5") == "0.19.5"
    assert va.check_version(None) == "0.33.0"
    assert releases.release("0.19.5").mirrors == "0.19.0" and releases.release("v0.33.1").line == "0.33"
    assert "--vllm-version" in error(va.check_version, "banana").where
    with pytest.raises(UnsupportedError) as info:  # before 0.10: not modelled (exit 3), not a bad input
        va.check_version("0.5")
    assert info.value.where == "--vllm-version"


# ------------------------------------------------------------------ vLLM's value parsers

@pytest.mark.parametrize("text, tokens", [("8192", 8192), ("1k", 1000), ("1K", 1024), ("32K", 32768), ("25.6k", 25600),
                                          ("2M", 2 * 2**20), ("1g", 10**9), ("1T", 2**40),
                                          ("1.001k", 1000)])  # float truncation, as vLLM itself reads it
def test_human_readable_int_is_vllms(text, tokens):
    assert va.human_readable_int(text) == tokens


def test_binary_suffixes_take_no_decimals_and_auto_is_minus_one():
    with pytest.raises(argparse.ArgumentTypeError):
        va.human_readable_int("1.5K")
    assert va.human_readable_int_or_auto("auto") == va.human_readable_int_or_auto("-1") == -1


@given(st.integers(min_value=1, max_value=2**30))
def test_plain_and_binary_counts_round_trip(n):
    assert va.human_readable_int(str(n)) == n
    assert va.human_readable_int(f"{n}K") == n * 1024


# ------------------------------------------------------------------ config files

def test_config_keys_with_dashes_or_underscores():
    args = config({"model": "m", "max_model_len": "32K", "tensor-parallel-size": 4, "gpu-memory-utilization": 0.95,
                   "kv-cache-dtype": "fp8", "served-model-name": ["a", "b"], "port": 8000})
    assert args.values["max_model_len"] == 32768 and args.values["tensor_parallel_size"] == 4
    assert args.values["gpu_memory_utilization"] == pytest.approx(0.95) and args.values["gpu_memory_utilization"].denominator == 20
    assert args.values["served_model_name"] == ["a", "b"] and args.model == "m"
    assert args.written["tensor_parallel_size"] == "tensor-parallel-size"


def test_false_is_dropped_in_0_19_and_negated_in_0_33():
    old = config({"model": "m", "enforce-eager": False, "enable-prefix-caching": False}, "0.19")
    new = config({"model": "m", "enforce-eager": False, "enable-prefix-caching": False}, "0.33")
    assert "enforce_eager" not in old.values and "enable_prefix_caching" not in old.values
    assert new.values["enforce_eager"] is False and new.values["enable_prefix_caching"] is False
    assert config({"model": "m", "enforce-eager": True}).values["enforce_eager"] is True


def test_a_mapping_is_passed_as_json():
    args = config({"model": "m", "compilation-config": {"mode": 3}})
    assert json.loads(args.values["compilation_config"]) == {"mode": 3}


@pytest.mark.parametrize("data, key, words", [
    ({"model": "m", "max-modle-len": "32K"}, "max-modle-len", "did you mean 'max-model-len'"),
    ({"model": "m", "tensor-parallel-size": 4.0}, "tensor-parallel-size", "invalid int value: '4.0'"),
    ({"model": "m", "max-model-len": None}, "max-model-len", "invalid"),
    ({"model": "m", "kv-cache-dtype": "fp9"}, "kv-cache-dtype", "did you mean 'fp8'"),
    ({"model": "m", "enforce-eager": "yes"}, "enforce-eager", "true or false"),
    ({"model": "m", "port": [1, 2]}, "port", "one value"),
    ({"model": "m", "max": 3}, "max", "ambiguous"),
    ({"model": "m", "tensor_parallel_size": 2, "tensor-parallel-size": 2}, "tensor-parallel-size", "twice"),
])
def test_what_vllm_refuses_is_an_error_at_the_key(data, key, words):
    err = error(config, data)
    assert err.where == f"serve.yaml: {key}" and words in err.one_line()


def test_a_config_file_is_a_mapping():
    assert "mapping" in error(config, ["model", "m"]).what


def test_an_unambiguous_prefix_is_accepted_with_a_note():
    args = config({"model": "m", "max-model": "4k"})
    assert args.values["max_model_len"] == 4000 and "abbreviation" in args.notes[0]


# ------------------------------------------------------------------ command lines

def test_command_line_forms():
    args = line("vllm serve meta-llama/Llama-3.1-8B --max-model-len 32K -tp 2 -pp 2 --max_num_seqs=64 -O3 "
                "--compilation-config.mode 3")
    assert args.model == "meta-llama/Llama-3.1-8B"
    assert (args.values["max_model_len"], args.values["tensor_parallel_size"], args.values["pipeline_parallel_size"],
            args.values["max_num_seqs"], args.values["optimization_level"]) == (32768, 2, 2, 64, "3")
    assert "compilation_config" in args.values
    assert line("serve m --model m").model == "m" and line("m").model == "m"


def test_negative_switches_per_release():
    assert line("serve m --no-enable-prefix-caching", "0.19").values["enable_prefix_caching"] is False
    assert line("serve m --disable-prefix-caching", "0.33").values["enable_prefix_caching"] is False
    assert line("serve m --no-enable-prefix-caching", "0.33").values["enable_prefix_caching"] is False
    err = error(line, "serve m --disable-prefix-caching", "0.19")
    assert "vLLM 0.19.0 has no serve option" in err.what


@pytest.mark.parametrize("text, words", [
    ("", "empty"), ("serve m --max-model-len '32K", "quotes"), ("vllm bench latency", "only `vllm serve`"),
    ("serve a b", "unrecognized arguments"), ("serve a --model b", "model given twice"), ("serve m -tp", "expected one argument"),
])
def test_command_line_errors(text, words):
    assert words in error(line, text).one_line()


def test_config_inside_a_command_line_loses_to_the_command_line():
    files = {"c.yaml": {"model": "m", "max-model-len": "8K", "tensor-parallel-size": 4}}
    args = line("serve --config c.yaml --max-model-len 16K", load_config=files.__getitem__)
    assert args.values["max_model_len"] == 16384 and args.values["tensor_parallel_size"] == 4 and args.model == "m"
    assert "not allowed" in error(line, "serve m --config c.yaml").what


# ------------------------------------------------------------------ what kvplan cannot model

def test_unmodelled_options_set_off_their_default():
    assert va.unmodelled(config({"model": "m", "cpu-offload-gb": 0, "enable-lora": False, "runner": "generate"})) == []
    blocked = [k for k, _ in va.unmodelled(config({"model": "m", "quantization": "fp8", "cpu-offload-gb": 4,
                                                   "speculative-config": {"method": "eagle3"}}))]
    assert blocked == ["quantization", "cpu-offload-gb", "speculative-config"]
    assert va.unmodelled(config({"model": "m", "enable-expert-parallel": True})) == []
    assert va.unmodelled(config({"model": "m", "enable-expert-parallel": True, "data-parallel-size": 2}))


# ------------------------------------------------------------------ vLLM's maximum model length

def load(configs, name):
    return json.loads((configs / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name, default, limit", [
    ("llama-3.1-8b.json", 131072, 131072),  # llama3 RoPE: no factor
    ("qwen2.5-72b-instruct.json", 32768, 32768),
    ("deepseek-v3.json", 163840, 163840),  # yarn: original 4096 x factor 40
    ("gpt-oss-20b.json", 131072, 131072),  # yarn: 4096 x 32
    ("phi-3.5-mini-instruct.json", 4096, 131072),  # LongRoPE defaults to the original length
    ("gemma-3-27b.json", 131072, 131072),  # Gemma-3's length is already scaled
    ("gpt2.json", 1024, 1024),  # n_positions
])
def test_derived_max_model_len(configs, name, default, limit):
    got_default, got_limit = va.derived_max_model_len(load(configs, name))
    assert got_default == default and got_limit == limit


def test_tokenizer_model_max_length_caps_it(configs):
    assert va.derived_max_model_len(load(configs, "llama-3.1-8b.json"), {"model_max_length": 8192})[0] == 8192
    assert va.derived_max_model_len({"hidden_size": 8}) == (None, None)
