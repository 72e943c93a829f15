"""The vLLM (v1 engine) engine record (ENGINE) the registry hands out: its estimate, how it reads a KV dtype, its
flags and the options it reads (kvplan/engines/api.py Engine)."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from kvplan.engines.api import FLOAT_WEIGHTS, Engine, EngineFlags
from kvplan.engines.lazy import Part, deferred
from kvplan.engines.releases import REGISTRY
from kvplan.engines.vllm import kv_formats, releases

if TYPE_CHECKING:  # the record names the estimate without building it (engines/lazy.py deferred)
    from kvplan.engines.vllm.engine import VllmEstimate


def _util_max(result: VllmEstimate) -> Fraction | None:
    """vLLM refuses utilizations above what is free at start-up (total minus CUDA context / NCCL)."""
    budget = result.workers[0].budget if result.workers else None
    if budget is None:
        return None
    free = budget.total_bytes - budget.context_bytes - budget.memory_in_use_bytes
    return Fraction(max(free, 0) * 100 // budget.total_bytes, 100)


ENGINE = Engine(
    name="vllm", title="vLLM", estimate=deferred("kvplan.engines.vllm.engine", "estimate"),
    kv_dtype=deferred("kvplan.engines.vllm.engine", "read_kv_dtype"),
    # --quantization fp8 on a 16-bit checkpoint: vllm/launch.py ONLINE_QUANTIZATION; --hf-overrides rope_scaling:
    # vllm/launch.py apply_hf_overrides, the limit serve_args.derived_max_model_len reads from it
    flags=EngineFlags("--max-model-len", "--tensor-parallel-size", "--kv-cache-dtype fp8", "--gpu-memory-utilization",
                      "--kv-cache-memory-bytes", weights_fp8="--quantization fp8",
                      config_override="--hf-overrides"),
    util_of=lambda req, r: None if r.gpu_memory_utilization is None else Fraction(r.gpu_memory_utilization),
    util_max=_util_max, takes_gpu_reserved=True, takes_features=True, fits_length=True, launch_args_flag="--vllm-args",
    # the vLLM environment variables kvplan models (releases.OPTION_KEYS)
    option_keys=releases.OPTION_KEYS, kv_dtype_names=tuple(kv_formats.KV_DTYPES), kv_formats=kv_formats.KNOWN,
    # --quantization fp8 quantizes a checkpoint not serialized in fp8 as it loads (quantization/fp8.py)
    weights_loaded_as=FLOAT_WEIGHTS + ("fp8_e4m3", "fp8_e5m2"),
    # vllm/config/model.py _get_and_verify_max_len
    release_field="vllm_release", deployment_files=True, version_key="vllm_version",
    launch_command=deferred("kvplan.engines.vllm.present", "launch_command"),
    release_note=deferred("kvplan.engines.vllm.present", "release_note"),
    derived_max_len=deferred("kvplan.engines.vllm.serve_args", "derived_max_model_len"),
    # `vllm serve`'s option table of each release, read from its own parser (serve_args.py)
    options=Part("kvplan.engines.vllm.serve_args", (
        "parse_argv", "parse_config", "parse_command_line", "lookup", "options", "option_info", "unmodelled",
        "DTYPE_WEIGHTS", "CUDA_GRAPH_OPTIONS")),
    launch=Part("kvplan.engines.vllm.launch", {"read": "read", "online_quantization": "online_quantization",
                                               "overridden_config": "overridden_config", "json_value": "_json"}),
    # the registry every engine has (engines/releases.py REGISTRY), its release rows and its environment's flags
    releases=Part("kvplan.engines.vllm.releases", REGISTRY + (
        "RELEASES", "ALLOW_LONG_ENV", "ALLOW_LONG_OPTION", "allow_long_flag", "integer_flag", "ENTRY_POINT_OPTION",
        "ENTRY_OFFLINE", "ROCM_AITER_ENV", "ROCM_AITER_OPTION")),
)
