"""The SGLang launch_server and trtllm-serve argument tables (kvplan/engines/sglang/launch_args.py,
kvplan/engines/trtllm/serve_args.py) against the engines' own source: the expected flags, types and choices below
were read in SGLang 0.5.23's srt/arg_groups/fields/*.py (pip download --no-deps sglang==0.5.23) and in
TensorRT-LLM's tensorrt_llm/commands/serve.py; the parsing rules are argparse's (SGLang) and click's (trtllm-serve)."""

from __future__ import annotations

import argparse

import pytest

from kvplan.core.errors import InputError
from kvplan.engines.sglang import launch_args as sgl
from kvplan.engines.trtllm import serve_args as trt


# ------------------------------------------------------------------ SGLang 0.5.23

@pytest.mark.parametrize("flag, dest, kind", [
    ("--tp-size", "tp_size", "int"),  # fields/parallel.py: tp_size: int, aliases=["--tensor-parallel-size"]
    ("--tensor-parallel-size", "tp_size", "int"),
    ("--mem-fraction-static", "mem_fraction_static", "float"),  # fields/schedule.py: Optional[float]
    ("--max-running-requests", "max_running_requests", "int"),  # fields/schedule.py: Optional[int]
    ("--context-length", "context_length", "hint"),  # fields/model.py: type_parser=human_readable_int
    ("--enable-dp-attention", "enable_dp_attention", "true"),  # server_args.py: DeprecatedStoreTrueAction
])
def test_sglang_options_are_its_parsers(flag, dest, kind):
    opt = sgl.lookup(flag)
    assert (opt.dest, opt.kind) == (dest, kind)


def test_sglang_kv_cache_dtype_choices():
    # fields/model.py kv_cache_dtype choices, in SGLang's order
    assert sgl.lookup("--kv-cache-dtype").choices == (
        "auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4", "fp4_mx_block16")


def test_sglang_parses_as_argparse_does():
    args = sgl.parse_argv(["--model-path", "org/m", "--tp", "2", "--mem-fraction-static=0.85",
                           "--context-length", "32k", "--disable-radix-cache"], where="x")
    assert args.get("tp_size") == 2 and args.get("context_length") == 32000  # 32k = 32 x 1000 (human_readable_int)
    assert float(args.get("mem_fraction_static")) == 0.85 and args.get("disable_radix_cache") is True
    assert args.written["tp_size"] == "--tp" and any("abbreviation of 'tp-size'" in n for n in args.notes)
    assert not args.given("page_size")  # absent options take SGLang's defaults


def test_sglang_abbreviation_matches_argparse():
    """The same prefix rule as argparse itself: a prefix shared by two options is refused."""
    class Parser(argparse.ArgumentParser):
        def error(self, message):
            raise ValueError(message)

    real = Parser()
    real.add_argument("--tp-size")
    real.add_argument("--tokenizer-path")
    with pytest.raises(ValueError, match="ambiguous option: --t"):
        real.parse_args(["--t", "1"])
    assert real.parse_args(["--tp", "1"]).tp_size == "1"
    assert sgl.lookup("--t") is None and sgl.lookup("--tp").dest == "tp_size"


@pytest.mark.parametrize("argv, words", [
    (["--model-path", "m", "--tp-szie", "2"], "no launch_server option '--tp-szie'"),
    (["--model-path", "m", "--kv-cache-dtype", "fp16"], "invalid choice: 'fp16'"),
    (["--model-path", "m", "--tp-size", "two"], "invalid int value: 'two'"),
    (["--model-path", "m", "extra"], "unrecognized arguments: extra"),
])
def test_sglang_refuses_what_it_would_refuse(argv, words):
    with pytest.raises(InputError, match="SGLang") as err:
        sgl.parse_argv(argv, where="launch")
    assert words in err.value.one_line()


def test_sglang_config_file_as_its_merger_reads_it():
    """srt/utils/server_args_config_parser.py: `true` adds a store-true flag, `false` adds nothing, a list adds its
    items; the command line wins over the file."""
    config = {"model-path": "org/m", "tp-size": 4, "disable-radix-cache": True, "enable-dp-attention": False,
              "mem-fraction-static": 0.8}
    args = sgl.parse_argv(["--config", "c.yaml", "--tp-size", "2"], where="x", load_config=lambda path: config)
    assert args.get("model_path") == "org/m" and args.get("tp_size") == 2
    assert args.get("disable_radix_cache") is True and not args.given("enable_dp_attention")
    with pytest.raises(InputError, match="no launch_server option 'tp'"):
        sgl.parse_argv(["--config", "c.yaml"], where="x", load_config=lambda path: {"tp": 2})  # the file takes no prefixes


def test_sglang_unmodelled_options_are_named():
    args = sgl.parse_argv(["--model-path", "m", "--offload-group-size", "4", "--speculative-algorithm", "EAGLE",
                           "--cpu-offload-gb", "4", "--attention-backend", "trtllm_mha"], where="x")
    named = dict(sgl.unmodelled(args))
    assert "--offload-group-size" in named and "sets its own page size" in named["--attention-backend"]
    # speculative decoding and --cpu-offload-gb are modelled by engines/sglang/features.py, which refuses what it
    # does not model
    assert "--speculative-algorithm" not in named and "--cpu-offload-gb" not in named
    assert sgl.unmodelled(sgl.parse_argv(["--model-path", "m", "--attention-backend", "fa3"], where="x")) == []


# ------------------------------------------------------------------ trtllm-serve

@pytest.mark.parametrize("flag, dest", [
    ("--tp_size", "tensor_parallel_size"), ("--tensor_parallel_size", "tensor_parallel_size"),
    ("--pp_size", "pipeline_parallel_size"), ("--ep_size", "moe_expert_parallel_size"),
    ("--kv_cache_free_gpu_memory_fraction", "free_gpu_memory_fraction"),
    ("--extra_llm_api_options", "extra_llm_api_options"), ("--config", "extra_llm_api_options"),
])
def test_trtllm_serve_options_are_clicks(flag, dest):
    assert trt.OPTIONS[flag].dest == dest


def test_trtllm_serve_flags_then_yaml_over_them():
    extra = {"kv_cache_config": {"dtype": "fp8"}, "max_seq_len": 8192}
    args = trt.parse_argv(["org/m", "--tp_size", "8", "--kv_cache_free_gpu_memory_fraction", "0.9",
                           "--extra_llm_api_options", "x.yaml"], where="w", load_config=lambda path: extra)
    assert args.model == "org/m" and args.llm_api["tensor_parallel_size"] == 8
    assert args.llm_api["max_seq_len"] == 8192
    # serve(): update_llm_args_with_extra_dict replaces kv_cache_config: the flag's fraction is lost
    assert args.llm_api["kv_cache_config"] == {"dtype": "fp8"}
    assert any("replaces the one --kv_cache_free_gpu_memory_fraction built" in n for n in args.notes)


@pytest.mark.parametrize("argv, words", [
    (["m", "--tp", "2"], "--tp"),  # click expands no prefixes
    (["m", "--tensor-parallel-size", "2"], "--tensor-parallel-size"),  # nor turns dashes into underscores
    (["m", "--tp_size", "x"], "not a valid int"),
])
def test_trtllm_serve_refuses_what_click_refuses(argv, words):
    with pytest.raises(InputError) as err:
        trt.parse_argv(argv, where="w")
    assert words in err.value.one_line()


def test_trtllm_unmodelled_known_reasons_come_first():
    # enable_attention_dp, lora_config and kv_cache_config.max_tokens are modelled now (kvplan/engines/trtllm/
    # features.py); peft_cache_config and context_parallel_size keep their reasons
    named = trt.unmodelled({"model": "m", "some_new_field": 1, "enable_attention_dp": True, "lora_config": {"max_lora_rank": 8},
                            "peft_cache_config": {"num_device_module_layer": 8}, "context_parallel_size": 2,
                            "kv_cache_config": {"max_tokens": 4096}})
    assert [k for k, _ in named] == ["peft_cache_config", "context_parallel_size", "some_new_field"]
    assert trt.unmodelled({"model": "m", "enable_attention_dp": False, "kv_cache_config": {"dtype": "fp8"}}) == []
