"""What else a launch puts in GPU (and host) memory besides the model and its KV cache: speculative decoding,
LoRA adapter slots, weight and KV offload tiers, expert / data / context parallelism, disaggregated prefill and
the options that change the cache's layout (docs/engines/features/).

Each module turns a ModelSpec and the options into integer terms (bytes, tokens, blocks), citing the engine file
and function it follows; none imports an engine package, typer, rich or yaml. The engines (kvplan/engines/vllm/
features.py for vLLM) put the terms into their layout and budget. `Features` is the one record of the options a
deployment sets, carried on EngineRequest.features (None: none of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvplan.engines.lazy import module_getattr

if TYPE_CHECKING:  # the option records load with their modules, when a launch sets one (benchmarks/cold_start.py)
    from kvplan.engines.features.disagg import KvTransferOptions
    from kvplan.engines.features.lora import LoraOptions
    from kvplan.engines.features.offload import KvOffloadOptions, WeightOffloadOptions
    from kvplan.engines.features.parallel import ParallelOptions
    from kvplan.engines.features.speculative import SpeculativeOptions


@dataclass(frozen=True)
class Features:
    """Every option beyond the core request that changes what a launch holds in memory, as the deployment set it.
    A field left at its default changes nothing."""

    speculative: SpeculativeOptions | None = None
    lora: LoraOptions | None = None
    weight_offload: WeightOffloadOptions | None = None
    kv_offload: KvOffloadOptions | None = None
    parallel: ParallelOptions | None = None
    kv_transfer: KvTransferOptions | None = None
    quantization: str | None = None  # online weight quantization method (vLLM --quantization), as written
    kv_cache_dtype_skip_layers: tuple[str, ...] = ()  # layer indices or "sliding_window": KV kept in the model dtype
    mamba_cache_dtype: str | None = None  # conv state dtype (vLLM --mamba-cache-dtype), None: auto
    mamba_ssm_cache_dtype: str | None = None  # recurrent state dtype (vLLM --mamba-ssm-cache-dtype), None: auto
    disable_sliding_window: bool = False
    num_gpu_blocks_override: int | None = None
    attention_backend: str | None = None  # a backend named by the user (vLLM --attention-backend), None: chosen
    language_model_only: bool = False  # the vision tower is not loaded (vLLM --language-model-only)
    # vLLM --enforce-eager: no CUDA graph is captured, so none is profiled (gpu_model_runner.py profile_cudagraph_memory
    # is skipped when cudagraph_mode is NONE, 0.18+) and none comes off the budget (0.20+)
    enforce_eager: bool = False
    text_only: bool = False  # every multimodal limit is 0 (--limit-mm-per-prompt): no encoder profile or cache
    # the load a disaggregated prefill -> decode link is sized for (kvplan --rate, --prompt)
    rate: float | None = None  # requests per second
    prompt_tokens: int | None = None  # None: max_model_len
    link_bytes_per_s: int | None = None  # the link to compare with (kvplan --link-bandwidth); None: the node's, by GPU
    # an SGLang launch's modelled options (kvplan/engines/sglang/features.py SglangOptions: disaggregation, speculative
    # decoding); typed loosely because that module builds on this package
    sglang: Any = None

    @property
    def any(self) -> bool:
        return self != Features()


__all__ = ["Features", "KvOffloadOptions", "KvTransferOptions", "LoraOptions", "ParallelOptions", "SpeculativeOptions",
           "WeightOffloadOptions"]
# a feature's module (lora, offload, disagg, speculative, parallel, backend) and its option record load on first use:
# an estimate without launch options reads none of them (PEP 562)
__getattr__ = module_getattr(__name__, {
    "KvTransferOptions": "kvplan.engines.features.disagg", "LoraOptions": "kvplan.engines.features.lora",
    "KvOffloadOptions": "kvplan.engines.features.offload", "WeightOffloadOptions": "kvplan.engines.features.offload",
    "ParallelOptions": "kvplan.engines.features.parallel", "SpeculativeOptions": "kvplan.engines.features.speculative"})
