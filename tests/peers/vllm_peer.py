"""vLLM's own KV-cache configuration code as a test peer: the layers of a launch (the target's, a drafter's, MTP
layers) turned into vLLM KVCacheSpec objects, grouped, sized and counted by vLLM (v1/core/kv_cache_planning.py
get_global_kv_cache_groups / get_kv_cache_configs, kv_cache_utils.py get_kv_cache_capacity), on the CPU.

Runs only where vLLM is importable (a venv with `pip install --no-deps vllm==0.33.0` and the few packages its
config modules import; torch is not run on a GPU: only dataclasses and integer arithmetic are exercised).
The specs are built here from config.json values with vLLM's rules for KV heads per rank (config/model.py
get_num_kv_heads: max(1, kv // tp); MLA one latent of kv_lora_rank + qk_rope_head_dim), independently of kvplan's
layer code; the drafter's layers are registered after the target's, as the drafter's modules are (the layer names
follow vLLM's: model.layers.N..., draft_model.model.layers.N..., the MTP layer model.layers.61...).

The VllmConfig is a stand-in holding the fields these functions read (max_model_len, block size, DCP, the
scheduler's max_num_batched_tokens, the speculative config's lookahead); its properties are vLLM's own
(VllmConfig.num_prefill_lookahead_tokens, max_in_flight_tokens), bound from the real class.

`python tests/peers/vllm_peer.py CASES.json` prints one JSON object per case (scripts/record_vllm_peer.py records
them into tests/data/vllm_peer/).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace as NS


def _dtype(name: str):
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8": torch.float8_e4m3fn, "fp32": torch.float32}[name]


def layer_specs(config: dict, *, tp: int, block_size: int, kv_dtype: str, prefix: str = "model.layers",
                start: int = 0, layers: int | None = None, kinds: list[str] | None = None) -> dict:
    """vLLM KVCacheSpecs for the attention layers of a config.json (text part)."""
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MLAAttentionSpec, SlidingWindowSpec

    cfg = config.get("text_config") or config
    n = layers if layers is not None else cfg["num_hidden_layers"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
    dtype = _dtype(kv_dtype)
    out = {}
    for i in range(n):
        name = f"{prefix}.{start + i}.self_attn.attn"
        kind = kinds[i] if kinds else "full"
        if cfg.get("kv_lora_rank"):
            out[name] = MLAAttentionSpec(block_size=block_size, num_kv_heads=1,
                                         head_size=cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"], dtype=dtype)
        elif kind == "sliding":
            out[name] = SlidingWindowSpec(block_size=block_size, num_kv_heads=max(1, kv // tp), head_size=head_dim,
                                          dtype=dtype, sliding_window=cfg["sliding_window"])
        else:
            out[name] = FullAttentionSpec(block_size=block_size, num_kv_heads=max(1, kv // tp), head_size=head_dim,
                                          dtype=dtype)
    return out


def stand_in_config(*, max_model_len: int, block_size: int, dcp: int, tp: int, mnbt: int, max_num_seqs: int,
                    num_speculative_tokens: int, use_eagle: bool, override: int | None):
    """The fields vLLM's planning functions read, with VllmConfig's own properties bound."""
    from vllm.config import VllmConfig
    from vllm.v1.kv_cache_layout import KVCacheLayout

    class StandIn:
        num_prefill_lookahead_tokens = property(VllmConfig.num_prefill_lookahead_tokens.fget)
        num_lookahead_tokens = property(VllmConfig.num_lookahead_tokens.fget)

    from vllm.config import CacheConfig, ParallelConfig, SchedulerConfig

    c = StandIn()
    c.model_config = NS(max_model_len=max_model_len, original_max_model_len=max_model_len,
                        supports_kv_cache_grouping=False, use_mla=False)
    c.parallel_config = ParallelConfig(tensor_parallel_size=tp, decode_context_parallel_size=dcp)
    c.cache_config = CacheConfig(block_size=block_size, num_gpu_blocks_override=override)
    # the layout the engine core resolves on CUDA (v1/attention/backends/utils.py: LBNHC first; it stays first when
    # mixed page sizes narrow the candidates to block-compact layouts)
    c.cache_config.kv_cache_layout = KVCacheLayout.LBNHC.name
    c.scheduler_config = SchedulerConfig(max_num_batched_tokens=mnbt, max_num_seqs=max_num_seqs,
                                         max_model_len=max_model_len, is_encoder_decoder=False)
    c.scheduler_config.disable_hybrid_kv_cache_manager = False
    spec = None
    if num_speculative_tokens:
        spec = NS(num_speculative_tokens=num_speculative_tokens, use_eagle=lambda: use_eagle,
                  use_eagle_block_drop=lambda: False, use_multi_module_mtp=lambda: False, use_dflash=lambda: False,
                  use_dspark=lambda: False, uses_draft_model=lambda: not use_eagle, method="eagle" if use_eagle else "draft_model")
    c.speculative_config = spec
    c.diffusion_config = None
    c.kv_transfer_config = None
    c.attention_config = NS(hisparse_config=None)
    c.max_concurrent_batches = 2
    c.max_in_flight_tokens = 2 * mnbt  # VllmConfig.max_in_flight_tokens with async scheduling (pp + 1 batches)
    c.device_config = NS(device_type="cuda")
    return c


def run_case(case: dict, root: Path) -> dict:
    from vllm.v1.core import kv_cache_planning as planning
    from vllm.v1.core import kv_cache_utils as utils

    target = json.loads((root / case["config"]).read_text())
    tp, block = case["tp"], case["block_size"]
    kinds = case.get("kinds")
    specs = layer_specs(target, tp=tp, block_size=block, kv_dtype=case.get("kv_dtype", "bf16"), kinds=kinds)
    n_target = (target.get("text_config") or target)["num_hidden_layers"]
    draft = case.get("draft")
    if draft:
        draft_cfg = json.loads((root / draft["config"]).read_text())
        if draft["kind"] == "mtp":
            # the MTP layer: one decoder layer with the target's attention, named after the target's layers
            specs.update(layer_specs(target, tp=tp, block_size=block, kv_dtype=case.get("kv_dtype", "bf16"),
                                     start=n_target, layers=draft.get("layers", 1)))
        else:
            prefix = "draft_model.model.layers" if draft["kind"] == "draft_model" else "drafter.model.layers"
            specs.update(layer_specs(draft_cfg, tp=tp, block_size=block, kv_dtype=case.get("kv_dtype", "bf16"),
                                     prefix=prefix))
    config = stand_in_config(max_model_len=case["max_model_len"], block_size=block, dcp=case.get("dcp", 1), tp=tp,
                             mnbt=case.get("max_num_batched_tokens", 8192), max_num_seqs=case.get("max_num_seqs", 1024),
                             num_speculative_tokens=draft.get("tokens", 0) if draft else 0,
                             use_eagle=bool(draft) and draft["kind"] != "draft_model", override=case.get("override"))
    groups = planning.get_global_kv_cache_groups(config, [specs])
    cfg = planning.get_kv_cache_configs(config, [specs], [case["available"]], groups)[0]
    tokens, concurrency = utils.get_kv_cache_capacity(config, cfg)
    from vllm.v1.core.kv_cache_config_builder import get_kv_cache_config_builder

    bpb = planning._pool_bytes_per_block_from_builder(get_kv_cache_config_builder(config), config, groups)
    return {"name": case["name"], "num_blocks": cfg.num_blocks, "bytes_per_block": bpb,
            "kv_cache_tokens": tokens, "concurrency": concurrency,
            "groups": [{"spec": type(g.kv_cache_spec).__name__, "layers": len(g.layer_names),
                        "block_size": g.kv_cache_spec.block_size} for g in cfg.kv_cache_groups]}


def main(argv: list[str]) -> int:
    cases_path = Path(argv[1])
    root = Path(argv[2]) if len(argv) > 2 else cases_path.parent.parent.parent
    cases = json.loads(cases_path.read_text())
    import vllm

    out = {"vllm_version": vllm.__version__, "results": [run_case(c, root) for c in cases]}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
