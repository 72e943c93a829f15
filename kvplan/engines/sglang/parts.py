"""The SGLang engine record (ENGINE) the registry hands out: its estimate, how it reads a KV dtype, its
flags and the options it reads (kvplan/engines/api.py Engine)."""

from __future__ import annotations

from fractions import Fraction

from kvplan.engines.api import FLOAT_WEIGHTS, Engine, EngineFlags
from kvplan.engines.lazy import Part, deferred
from kvplan.engines.releases import REGISTRY
from kvplan.engines.sglang import releases

ENGINE = Engine(
    name="sglang", title="SGLang", estimate=deferred("kvplan.engines.sglang.engine", "estimate"),
    kv_dtype=deferred("kvplan.engines.sglang.engine", "read_kv_dtype"),
    flags=EngineFlags("--context-length", "--tp-size", "--kv-cache-dtype fp8_e4m3", "--mem-fraction-static", None,
                      kv_fp8_name="fp8_e4m3"),
    util_of=lambda req, r: None if r.mem_fraction_static is None else Fraction(r.mem_fraction_static),
    util_max=lambda r: Fraction(95, 100),
    option_keys=releases.OPTION_KEYS, takes_gpu_reserved=True, takes_features=True,  # SGLang's own (engine.py refuses vLLM's)
    # --quantization fp8: the same online path as vLLM's, fp8 weights made at load
    weights_loaded_as=FLOAT_WEIGHTS + ("fp8_e4m3", "fp8_e5m2"), launch_args_flag="--sglang-args",
    # --kv-cache-dtype choices of 0.5.23 (server_args.py) that are no plain dtype: read_kv_dtype judges them (exit 3,
    # scales stored with the cache, releases.py R9), not the generic dtype check
    kv_formats=frozenset({"mxfp8", "fp4_mx_block16", "nvfp4"}),
    check_length=deferred("kvplan.engines.sglang.context", "check_length"),  # SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN
    release_field="sglang_version", launch_command=deferred("kvplan.engines.sglang.present", "launch_command"),
    # launch_server's option table of SGLang launch_args.MIRRORS (launch_args.py)
    options=Part("kvplan.engines.sglang.launch_args", (
        "parse_argv", "lookup", "option_info", "unmodelled", "MOVES_DEFAULT_FRACTION", "MIRRORS", "removed_in")),
    launch=Part("kvplan.engines.sglang.features", ("read", "refuse_environment")),
    releases=Part("kvplan.engines.sglang.releases", REGISTRY),  # the registry every engine has (engines/releases.py)
)
