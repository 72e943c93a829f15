"""The engine-neutral seam every engine and every caller shares: the request (EngineRequest, Hardware) and the
Engine record of an engine's parts (its estimate, how it reads a KV dtype, its flags and option keys).

Imports no engine package, so an engine imports it without importing another engine, and a caller reaches an
engine only through the registry (kvplan.engines.get). Results are engines/result.py's ContractEstimate and
engines/pool.py's EngineEstimate and PoolView. Pure of typer and rich.

A request keeps what the user said, resolved only where the meaning does not depend on the engine: the model
spec, token counts, the parallel layout, the GPU. The KV-cache dtype stays as spelled ('auto', 'fp8',
'fp8_e5m2', 'bfloat16'): each engine reads it with its own spelling table (its `kv_dtype`), once. The one
builder of requests from a user's values is kvplan/requests/.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable

from kvplan.core.dtypes import DType, WeightFormat
from kvplan.core.errors import InputError
from kvplan.core.spec import ModelSpec
from kvplan.model.catalog import find_gpu

if TYPE_CHECKING:  # annotations only: `estimate` of a plain request imports neither (benchmarks/cold_start.py)
    from kvplan.engines.calibration import SiteProfile
    from kvplan.engines.features import Features


@dataclass(frozen=True)
class Hardware:
    """One GPU of the deployment: the memory the runtime reports and, for a catalog GPU, its facts."""

    name: str | None  # catalog name; None for --gpu-mem
    capacity_bytes: int

    @cached_property
    def facts(self):
        """The catalog entry (kvplan.model.catalog.Gpu: vendor, architecture, nvidia-smi MiB, bandwidth), or None
        for a GPU given by its memory alone."""
        return find_gpu(self.name) if self.name else None


@dataclass(frozen=True)
class EngineRequest:
    """Everything a user can say about a deployment, in the engine-neutral form every command builds."""

    spec: ModelSpec
    seq: int  # tokens per sequence; max_model_len for the paged engines
    batch: int
    # vLLM --max-model-len auto / -1 (kvplan --seq auto): `seq` is the model's derived length and the engine lowers
    # it to the longest length whose one request fits the KV memory it finds at start-up
    seq_auto: bool = False
    kv_dtype: str = "auto"  # as the user spelled it; each engine resolves it (engines/paged.py kv_dtype)
    weight_fmt: WeightFormat | None = None
    tp: int = 1
    pp: int = 1
    hardware: Hardware | None = None
    gpu_util: Fraction | None = None  # None: the engine's own default
    reserve_bytes: int | None = None  # static engine: memory per GPU kept back (overrides gpu_util)
    kv_cache_memory: int | None = None  # bytes for the cache, skipping the budget model (vLLM kv_cache_memory_bytes)
    block_size: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    prefix_caching: bool | None = None  # None: the engine's default (vLLM: on; off for hybrids in 0.19, pure Mamba)
    engine_version: str | None = None  # the release whose rules apply, as given; None: the engine's default
    site: SiteProfile | None = None  # terms measured at the user's site (kvplan calibrate --save; engines/calibration.py)
    # which edge of a modelled budget's band to size the pool by: None (the modelled value), "low", "high";
    # kvplan check judges by "low" (a verdict that holds only inside the band is not a pass)
    budget_edge: str | None = None
    # speculative decoding, LoRA, offload tiers, expert / data / context parallelism, KV connectors and the options
    # that change the cache layout (kvplan/engines/features/); None: none of them
    features: Features | None = None
    # memory each GPU has in use before the engine starts (--gpu-reserved: a desktop's display, WSL2, another process)
    gpu_reserved_bytes: int | None = None
    # engine settings kvplan has no shared flag for (--engine-option KEY=VALUE), as given; each engine reads its own
    # keys (engines.Engine.option_keys) and refuses the others
    engine_options: tuple[tuple[str, str], ...] | None = None
    # the float dtype a launch names for a checkpoint whose weights keep their own format (vLLM --dtype bfloat16 on an
    # AWQ checkpoint): its activations, which a GPU generation may not run (engines/vllm/gpu_dtypes.py); None: auto,
    # or a weight_fmt that says it
    activation_dtype: str | None = None
    # kvplan's flag -> the engine option pasted in --vllm-args / --sglang-args that gave its value, as written
    # ('--tp' -> '--vllm-args -tp'): an error about the setting names what the user typed (requests/build.py
    # at_origins); () when every value came from kvplan's own flags
    origins: tuple[tuple[str, str], ...] = ()

    @property
    def expert_parallel(self) -> bool:
        """vLLM --enable-expert-parallel: each TP rank holds whole experts (E / tp of them) rather than a slice of
        every expert; the weights are the same bytes at data parallel 1, the fused-MoE workspace is wider."""
        par = self.features.parallel if self.features is not None else None
        return bool(par is not None and par.expert_parallel)

    def option(self, key: str) -> str | None:
        """The value of --engine-option KEY=VALUE, None when not given."""
        for k, v in self.engine_options or ():
            if k == key:
                return v
        return None


def refuse_unread_options(req: EngineRequest, title: str, keys: tuple[str, ...]) -> None:
    """InputError (at --engine-option, which check relocates to a file's engine_options) for a key the engine does
    not read. Engine.accepts runs it for the CLI; an engine whose options a deployment file also gives runs it too."""
    for key, _ in req.engine_options or ():
        if key not in keys:
            hint = f"{title} reads " + ", ".join(keys) if keys else f"{title} takes no --engine-option"
            raise InputError(f"{title} has no engine option {key!r}", where="--engine-option", hint=hint)


# the float dtypes every engine loads any 16- or 32-bit checkpoint in (vLLM's --dtype auto, half, bfloat16, float;
# SGLang's and trtllm-serve's the same)
FLOAT_WEIGHTS = ("bf16", "fp16", "fp32")


@dataclass(frozen=True, eq=False, repr=False)
class EngineFlags:
    """How one engine spells the knobs a fix turns (engines/fixes.py), as its users type them."""

    max_len: str  # e.g. "--max-model-len"
    tp: str
    kv_fp8: str  # the whole flag with its value
    util: str | None  # the memory-fraction flag ("{F}" where the value goes), None when the engine has none
    kv_memory: str | None  # an explicit cache-size flag
    kv_fp8_name: str = "fp8"  # the engine's spelling of an fp8 (e4m3) KV cache
    util_limit: Fraction = Fraction(99, 100)
    # the whole flag that quantizes a 16-bit checkpoint's weights to fp8 as it loads (vLLM --quantization fp8); None
    # when the engine has none kvplan models (a 4-bit checkpoint is then the quantized-weights fix)
    weights_fp8: str | None = None
    # the flag that overrides the model's config.json (vLLM --hf-overrides): a longer context by RoPE scaling (YaRN)
    # where max_model_len is past the model's limit; None when the engine has none kvplan models
    config_override: str | None = None

    def util_flag(self, value: str) -> str:
        return self.util.replace("{F}", value) if "{F}" in self.util else f"{self.util} {value}"


@dataclass(frozen=True, eq=False, repr=False)
class Engine:
    """One serving engine's memory model."""

    name: str  # registry key: static, vllm, sglang, trtllm
    title: str  # as people write it: vLLM, SGLang, TensorRT-LLM
    estimate: Callable[..., Any]  # (EngineRequest, *, search_max_seq=True) -> its result dataclass
    kv_dtype: Callable[[EngineRequest], DType]  # the request's KV-cache dtype as this engine reads its spelling
    flags: EngineFlags | None  # None: no launch flags to suggest (static)
    # the memory fraction a request's result was judged at (None: the engine has no such knob or it was not
    # used, e.g. --kv-cache-memory); the fix search starts above it
    util_of: Callable[[EngineRequest, Any], Fraction | None] = lambda req, result: None
    # the highest memory fraction this engine accepts for the request behind a result (vLLM: what is free after
    # the CUDA context at start-up); None: flags.util_limit
    util_max: Callable[[Any], Fraction | None] = lambda result: None
    # the --engine-option keys this engine reads, and whether its budget subtracts --gpu-reserved
    option_keys: tuple[str, ...] = ()
    takes_gpu_reserved: bool = False
    # whether the estimate reads EngineRequest.features (speculative decoding, LoRA, offload, parallelism, KV
    # connectors: kvplan/engines/features/); an engine that does not refuses a request carrying them
    takes_features: bool = False
    # whether the engine can fit the length to its memory at start-up (--seq auto: vLLM's --max-model-len auto)
    fits_length: bool = False
    # the KV-cache dtype spellings the engine reads itself (its kv_dtype's table), which a deployment reader passes to
    # it; () where they depend on the release (SGLang: its release's kv_dtypes) or the engine takes no spelling (static)
    kv_dtype_names: tuple[str, ...] = ()
    # the GPU vendors (catalog's Gpu.vendor) the engine runs on; None: any the catalog has
    gpu_vendors: tuple[str, ...] | None = None
    # whether an fp8 KV cache needs FP8 tensor cores (the catalog's fp8_dense_flops), not only fp8 storage
    fp8_kv_needs_fp8_cores: bool = False
    # (config.json, tokenizer_config.json or None) -> (the length the engine serves when none is given, the largest it
    # accepts), each None when the config names none; None: the engine takes the model's max_context as it is
    derived_max_len: Callable[..., tuple[int | None, float | None]] | None = None
    # the engine's own check of a length past the model's: (seq, spec, raw_config, *, version, env, where) -> a note
    # or None, raising where the engine refuses it (env: the launch's variables, None for one set outside the file);
    # None: the engine has no such rule here (vLLM's is check_vllm_max_len's)
    check_length: Callable[..., str | None] | None = None
    # the option that takes the engine's own launch command line (--vllm-args, --sglang-args; kvplan/requests/), None
    # when there is none
    launch_args_flag: str | None = None
    # whether the engine sizes a paged pool (--block-size, --max-num-seqs, --max-num-batched-tokens set it); the static
    # engine keeps one contiguous cache per sequence
    paged: bool = True
    # the field of the engine's result that names the release it judged by, as people know it (vLLM's vllm_release:
    # 0.33.0); None where the result names none
    release_field: str | None = None
    # (a plan, the model reference) -> (the command that starts one replica, its options file or None, the pool pin in
    # words): the engine's present.py, for `kvplan plan`; None: the engine has no launch command (static)
    launch_command: Callable[..., tuple[str, str | None, str]] | None = None
    # whether `kvplan plan --emit` writes the engine's own deployment files (a `serve --config` file, docker-compose
    # and Kubernetes running its image: vLLM's) beside kvplan's format, which every engine has
    deployment_files: bool = False
    # the key of kvplan's deployment format that pins the release a file is judged by (vllm_version; the check option
    # --vllm-version gives its default); None: the file's image tag or the engine's default release says it
    version_key: str | None = None
    # (the release a request names, None: the default) -> the note a `kvplan check` verdict carries naming the rules it
    # was judged by; None: the verdict's origins say it (engines/<engine>/present.py)
    release_note: Callable[[str | None], str] | None = None
    # whether the engine has releases to choose (--engine-version; kvplan.engines.release); the static engine has none
    has_releases: bool = True
    # the engine's own KV-cache formats beyond the dtypes (vLLM's packed per-token-head ones, engines/vllm/kv_formats.py):
    # its estimate judges them, so a reader passes them on without the generic dtype check
    kv_formats: frozenset[str] = frozenset()
    # the weight formats the engine loads a checkpoint of another format in (its --dtype; fp8 where its online
    # quantization makes it at load); None: any (the static engine sizes what it is told)
    weights_loaded_as: tuple[str, ...] | None = FLOAT_WEIGHTS
    # The parts a deployment reader, the request builder or a command asks of an engine's launch, each the names the
    # engine lists from one of its modules, loaded on first use (engines/lazy.py Part); None where the engine has none
    # (static). A caller asks the record for them and never imports the engine's modules (docs/architecture.md).
    # options: the engine's launch option table and parser: parse_argv (its command line -> its launch arguments),
    #   unmodelled (the options set that kvplan does not model), option_info(version) (a flag -> whether it takes a
    #   value and whether it changes memory), and the engine's own readers of config mappings
    options: Any = None
    # launch: what the launch arguments build: read (the features: speculative decoding, LoRA, offload, parallelism,
    #   disaggregation), and the engine's own (vLLM: online quantization, --hf-overrides)
    launch: Any = None
    # releases: the engine's release registry, the same names on every engine (engines/releases.py REGISTRY: parse,
    #   release, closest, sort_key, at_least, LINES, DEFAULT), and any of its own (vLLM: RELEASES, the flags its
    #   environment sets); None where the engine has no releases (static)
    releases: Any = None

    def loads_weights_as(self, fmt: str) -> bool:
        """Whether the engine can serve a checkpoint of another format with weights in `fmt`. int4 or int8 weights
        come only from a checkpoint quantized so."""
        return self.weights_loaded_as is None or fmt in self.weights_loaded_as

    def accepts(self, req: EngineRequest) -> None:
        """InputError for an --engine-option key, --gpu-reserved or launch features this engine does not read (never
        ignored)."""
        refuse_unread_options(req, self.title, self.option_keys)
        if req.features is not None and not self.takes_features:
            raise InputError(f"the {self.name} engine does not model speculative decoding, LoRA, offload tiers, expert, "
                             "data or context parallelism or KV connectors", where="--vllm-args",
                             hint="they apply to --engine vllm")
        if req.seq_auto and not self.fits_length:
            raise InputError(f"{self.title} has no length fitted to memory at start-up", where="--seq",
                             hint="--seq auto is vLLM's --max-model-len auto; give a length")
        if req.gpu_reserved_bytes is not None and not self.takes_gpu_reserved:
            raise InputError(f"the {self.name} engine's budget does not read it", where="--gpu-reserved",
                             hint="it applies to --engine sglang and trtllm")
