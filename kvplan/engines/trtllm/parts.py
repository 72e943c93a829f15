"""The TensorRT-LLM engine record (ENGINE) the registry hands out: its estimate, how it reads a KV dtype, its
flags and the options it reads (kvplan/engines/api.py Engine)."""

from __future__ import annotations

from fractions import Fraction

from kvplan.engines.api import Engine, EngineFlags
from kvplan.engines.lazy import Part, deferred
from kvplan.engines.releases import REGISTRY
from kvplan.engines.trtllm.engine import KV_DTYPES, OPTION_KEYS, estimate, read_kv_dtype

ENGINE = Engine(
    name="trtllm", title="TensorRT-LLM", estimate=estimate, kv_dtype=read_kv_dtype,
    flags=EngineFlags("--max_seq_len", "--tp_size", "kv_cache_config: {dtype: fp8} (extra LLM API options)",
                      "kv_cache_config: {free_gpu_memory_fraction: {F}} (extra LLM API options)", None),
    util_of=lambda req, r: None if r.free_gpu_memory_fraction is None else Fraction(r.free_gpu_memory_fraction),
    util_max=lambda r: Fraction(95, 100),
    option_keys=OPTION_KEYS, takes_gpu_reserved=True, kv_dtype_names=tuple(KV_DTYPES),
    # built for NVIDIA GPUs only, and its FP8 KV cache runs on FP8 tensor cores (Ada, Hopper, Blackwell)
    gpu_vendors=("nvidia",), fp8_kv_needs_fp8_cores=True, release_field="trtllm_version",
    launch_command=deferred("kvplan.engines.trtllm.present", "launch_command"),
    # trtllm-serve's flags and the LLM-API options YAML (serve_args.py)
    options=Part("kvplan.engines.trtllm.serve_args", (
        "parse_argv", "option_info", "unmodelled", "check_llm_api", "engine_options", "engine_dir_config",
        "serve_build_options", "deduced_max_seq_len", "engine_architectures", "is_checkpoint_config",
        "checkpoint_config")),
    releases=Part("kvplan.engines.trtllm.releases", REGISTRY),  # the registry every engine has (engines/releases.py)
)
