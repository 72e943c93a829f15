"""Write tests/data/transformers_truth_deepseek_v4.json: what transformers keeps for DeepSeek-V4's compressed attention.

transformers 5.24 has no StaticCache for DeepSeek-V4 (its layer types are not in cache_utils' static mapping: the
2026 corpus truth records KeyError 'compressed_sparse_attention'); the model keeps its cache in a DynamicCache of
DeepseekV4HCACache / DeepseekV4CSACache layers. For each deepseek_v4 config.json of the 2026 corpus this builds the
model on `meta` in bfloat16, runs N tokens through it (one prefill of N, batch 1) and reads back every tensor the
cache then holds (window keys and values, compressed entries, indexer keys, the open window's buffers, the CSA
overlap), for N around the window and compression boundaries and at 8K / 32K. Parameters: sum(p.numel()).

    python scripts/make_deepseek_v4_truth.py            # rewrite the file (about a minute)
    python scripts/make_deepseek_v4_truth.py --check    # exit 1 if the file differs from a fresh run
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "data" / "hf_configs_2026"
TRUTH = REPO / "tests" / "data" / "transformers_truth_deepseek_v4.json"
TOKENS = (1, 3, 4, 5, 127, 128, 129, 130, 1000, 8192, 32768)


def _cache_bytes(cache) -> int:
    import torch

    total = 0
    for layer in cache.layers:
        for value in vars(layer).values():
            for t in value.values() if isinstance(value, dict) else (value,):
                if isinstance(t, torch.Tensor) and t.dim() > 0:  # 0-d tensors are position counters
                    total += t.numel() * t.element_size()
    return total


def _measure(path: Path) -> dict:
    import torch
    from transformers import DeepseekV4Config
    from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4ForCausalLM

    raw = json.loads(path.read_text())
    fields = {k: v for k, v in raw.items() if k not in ("model_type", "architectures", "quantization_config")}
    config = DeepseekV4Config(**fields)
    with torch.device("meta"):
        model = DeepseekV4ForCausalLM(config).to(torch.bfloat16)
    kv = {}
    for n in TOKENS:
        out = model(input_ids=torch.zeros(1, n, dtype=torch.long, device="meta"), use_cache=True)
        kv[str(n)] = _cache_bytes(out.past_key_values)
    return {"config_sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "dtype": "bfloat16",
            "layer_types": dict(sorted({t: config.layer_types.count(t) for t in config.layer_types}.items())),
            "cache_bytes_at_tokens": kv, "params_total": sum(p.numel() for p in model.parameters())}


def build() -> dict:
    import torch
    import transformers

    configs = {}
    for path in sorted(CORPUS.glob("*.json")):
        if path.name.endswith(".hf_quant_config.json") or json.loads(path.read_text()).get("model_type") != "deepseek_v4":
            continue
        configs[path.name] = _measure(path)
        print(f"{path.name}: {configs[path.name]['cache_bytes_at_tokens']}", file=sys.stderr)
    return {"generator": "scripts/make_deepseek_v4_truth.py", "transformers_version": transformers.__version__,
            "torch_version": torch.__version__,
            "method": "model built on meta in bfloat16 from the config (quantization_config dropped), one prefill of N "
                      "tokens, batch 1, with use_cache; bytes = numel x element_size of every tensor of every cache "
                      "layer (0-d counters left out)", "configs": configs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = ap.parse_args(argv)
    text = json.dumps(build(), indent=1, sort_keys=True) + "\n"
    if args.check:
        if TRUTH.read_text() != text:
            print(f"{TRUTH} differs from a fresh run; regenerate it", file=sys.stderr)
            return 1
        return 0
    TRUTH.write_text(text)
    print(f"wrote {TRUTH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
