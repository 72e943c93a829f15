"""Write tests/data/transformers_truth.json: what transformers allocates for every bundled config.json.

For each file in tests/data/hf_configs/ the peer (tests/peers/hf_peer.py) builds the model on `meta`, runs
one token through a StaticCache of N tokens (default 8192, batch 1, model built in bfloat16 so the K/V
are bfloat16) and records the cache tensors, grouped per layer kind, and the parameter count. A second run
in transformers' own default dtype (the config's) is recorded too, because that is what a plain
`from_config` does (Gemma-2 -> float32, GPT-2 and gpt-oss -> float32 for want of a dtype).

The output is deterministic (sorted keys, no timings); timings go to stderr.

    python scripts/make_transformers_truth.py            # rewrite the file
    python scripts/make_transformers_truth.py --check    # exit 1 if the file differs from a fresh run
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CONFIG_DIR = REPO / "tests" / "data" / "hf_configs"
TRUTH = REPO / "tests" / "data" / "transformers_truth.json"


def _load_peer():
    # by path, so that neither `tests` nor `scripts` has to be an importable package
    spec = importlib.util.spec_from_file_location("kvplan_hf_peer", REPO / "tests" / "peers" / "hf_peer.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


def _entry(peer, path: Path, n_tokens: int, batch: int, dtype: str,
           default_dtype_too: bool = True) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    r = peer.run_peer(path, n_tokens, batch=batch, dtype=dtype)
    e: dict[str, Any] = {
        "config_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "transformers_version": r.transformers_version,
        "model_type": r.model_type,
        "built": r.built,
        "cannot_build_reason": r.reason,
    }
    if not r.built:
        return e, time.perf_counter() - t0
    default = peer.run_peer(path, n_tokens, batch=batch, dtype=None) if default_dtype_too else None
    e.update(
        {
            "model_class": r.model_class,
            "cache_class": r.cache_class,
            "attn_implementation": r.attn_implementation,
            "dtype": {
                "config": r.config_dtype,
                "text_config": r.text_config_dtype,
                "transformers_default": r.default_build_dtype,
                "built": r.build_dtype,
            },
            "quantization_config_ignored": r.quantization_config_ignored,
            "cache_layer_classes": dict(r.layer_classes),
            "cache": r.layer_summary(),
            "kv_bytes": r.kv_bytes,
            "state_bytes": r.state_bytes,
            "cache_bytes": r.cache_bytes,
            "at_transformers_default_dtype": None if default is None else {
                "built": default.built,
                "cannot_build_reason": default.reason,
                "notes": list(default.notes),
                "dtype": default.build_dtype,
                "kv_bytes": default.kv_bytes,
                "state_bytes": default.state_bytes,
                "cache_bytes": default.cache_bytes,
            },
            "params_total": r.params_total,
            "params_with_duplicates": r.params_with_duplicates,
            "params_vision": r.params_vision,
            "params_projector": r.params_projector,
            "tied_embeddings": r.tied_embeddings,
            "notes": list(r.notes),
        }
    )
    return e, time.perf_counter() - t0


def build_truth(n_tokens: int, batch: int, dtype: str, config_dir: Path = CONFIG_DIR,
                default_dtype_too: bool = True) -> dict[str, Any]:
    import torch
    import transformers

    peer = _load_peer()
    configs: dict[str, Any] = {}
    t_all = time.perf_counter()
    # the 2025-2026 corpus keeps ModelOpt's hf_quant_config.json files beside the configs: they are not models
    for path in sorted(p for p in config_dir.glob("*.json") if not p.name.endswith(".hf_quant_config.json")):
        try:
            e, dt = _entry(peer, path, n_tokens, batch, dtype, default_dtype_too)
        except Exception as err:  # a config transformers rejects outside the peer's own checks: recorded, not fatal
            e, dt = {"built": False, "cannot_build_reason": f"{type(err).__name__}: {str(err).splitlines()[0][:300]}",
                     "config_sha256": hashlib.sha256(path.read_bytes()).hexdigest()}, 0.0
        configs[path.name] = e
        if e["built"]:
            what = f"cache {e['cache_bytes']} B, params {e['params_total']}"
        else:
            what = f"cannot build: {e['cannot_build_reason']}"
        print(f"{dt:6.2f}s  {path.name}: {what}", file=sys.stderr)
    print(f"{time.perf_counter() - t_all:6.2f}s  total", file=sys.stderr)
    return {
        "generator": "scripts/make_transformers_truth.py (peer: tests/peers/hf_peer.py)",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "n_tokens": n_tokens,
        "batch": batch,
        "dtype": dtype,
        "method": (
            "model built on the meta device from the config (native transformers classes only, no remote code), "
            "one token run through StaticCache(config, max_cache_len=n_tokens), every tensor of every cache layer "
            "read back (bytes = numel x element_size); params = sum(p.numel() for p in model.parameters()), "
            "tied tensors once"
        ),
        "configs": configs,
    }


def dumps(truth: dict[str, Any]) -> str:
    return json.dumps(truth, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--out", type=Path, default=TRUTH)
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    ap.add_argument("--configs", type=Path, default=CONFIG_DIR, help="the folder of config.json files to measure")
    ap.add_argument("--one-dtype", action="store_true",
                    help="measure in --dtype only, not again in transformers' default dtype (halves the time)")
    args = ap.parse_args(argv)
    text = dumps(build_truth(args.tokens, args.batch, args.dtype, args.configs, not args.one_dtype))
    if args.check:
        if args.out.read_text(encoding="utf-8") != text:
            print(f"{args.out} differs from a fresh run; regenerate it", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date", file=sys.stderr)
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
