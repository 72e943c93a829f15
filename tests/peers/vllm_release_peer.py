"""vLLM's own per-request KV sizing, release by release: v1/kv_cache_interface.py of each unpacked release, with
the few vLLM modules it imports stood in (VllmConfig as a namespace, cdiv, get_dtype_size, a logger), so the
spec classes' `max_memory_usage_bytes` run without a GPU or vLLM's dependencies. Test-only; writes the figures
tests/test_feature_lines.py compares kvplan with (tests/data/vllm_peer/release_figures.json).

    python tests/peers/vllm_release_peer.py OUT.json /tmp/vllm-0.10.2 /tmp/vllm-0.25.1 ...

Each argument is an unpacked wheel (`pip download --no-deps vllm==X`, unzip); the release is read from its
dist-info or folder name."""

from __future__ import annotations

import json
import logging
import math
import re
import sys
import types
from pathlib import Path

import torch

# the launches whose per-request blocks the rules of option_rules.py change (one per rule, both sides)
CASES = [
    # DeepSeek-V3's MLA latent (576 x bf16) at 32K: tokens per rank under DCP 2 and PCP 2 (CONTEXT_SHARDS)
    dict(name="mla-dcp2-pcp2-32k", spec="mla", max_model_len=32768, dcp=2, pcp=2, block_size=16),
    # the same with DCP 2 alone (every release with DCP)
    dict(name="mla-dcp2-32k", spec="mla", max_model_len=32768, dcp=2, pcp=1, block_size=16),
    # Gemma-2's sliding group at 32K (window 4096, 8192 batched tokens): what the hybrid manager charges it
    dict(name="sliding-4096-32k", spec="sliding", max_model_len=32768, dcp=1, pcp=1, block_size=16, window=4096,
         max_num_batched_tokens=8192),
]


def _stub_vllm() -> None:
    """The modules kv_cache_interface.py imports, reduced to what its sizing uses."""
    pkg = types.ModuleType("vllm")
    pkg.__path__ = []
    mods = {"vllm": pkg}
    for name in ("vllm.config", "vllm.logger", "vllm.multimodal", "vllm.utils", "vllm.utils.math_utils",
                 "vllm.utils.torch_utils", "vllm.utils.mem_utils"):
        mods[name] = types.ModuleType(name)
    mods["vllm.utils"].__path__ = []
    mods["vllm.config"].VllmConfig = object
    for m in ("vllm.config",):
        mods[m].CacheConfig = object
    mods["vllm.logger"].init_logger = logging.getLogger
    mods["vllm.multimodal"].MULTIMODAL_REGISTRY = None
    cdiv = lambda a, b: -(-a // b)  # noqa: E731
    size = lambda dtype: torch.tensor([], dtype=dtype).element_size()  # noqa: E731
    for m in ("vllm.utils", "vllm.utils.math_utils"):
        mods[m].cdiv = cdiv
        mods[m].round_up = lambda x, y: -(-x // y) * y
    for m in ("vllm.utils", "vllm.utils.torch_utils"):
        mods[m].get_dtype_size = size
    sys.modules.update(mods)


def _load(src: Path):
    """vLLM's module itself where it imports from the unpacked tree (0.20+ here), else with the stand-ins."""
    sys.path.insert(0, str(src))
    try:
        from vllm.v1 import kv_cache_interface

        return kv_cache_interface, "imported"
    except ImportError:
        pass
    sys.path.remove(str(src))
    for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
        del sys.modules[name]
    _stub_vllm()
    import importlib.util

    path = src / "vllm" / "v1" / "kv_cache_interface.py"
    spec = importlib.util.spec_from_file_location("vllm.v1.kv_cache_interface", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module, "stand-ins"


def _release(src: Path) -> str:
    info = sorted(src.glob("vllm-*.dist-info"))
    text = info[0].name if info else src.name
    return re.search(r"(\d+\.\d+\.\d+(?:\.\d+)?)", text).group(1)


def _blocks(kci, case: dict) -> int:
    ns = types.SimpleNamespace
    config = ns(model_config=ns(max_model_len=case["max_model_len"]),
                parallel_config=ns(decode_context_parallel_size=case["dcp"], prefill_context_parallel_size=case["pcp"]),
                scheduler_config=ns(max_num_batched_tokens=case.get("max_num_batched_tokens", 8192)),
                cache_config=ns(mamba_cache_mode="none"), speculative_config=None)
    if case["spec"] == "mla":
        kw = dict(block_size=case["block_size"], num_kv_heads=1, head_size=576, dtype=torch.bfloat16)
        spec = kci.MLAAttentionSpec(**kw) if hasattr(kci, "MLAAttentionSpec") else kci.FullAttentionSpec(**kw, use_mla=True)
    else:
        kw = dict(block_size=case["block_size"], num_kv_heads=8, head_size=256, dtype=torch.bfloat16,
                  sliding_window=case["window"])
        if "use_mla" in getattr(kci.SlidingWindowSpec, "__dataclass_fields__", {}):
            kw["use_mla"] = False
        spec = kci.SlidingWindowSpec(**kw)
    return spec.max_memory_usage_bytes(config) // spec.page_size_bytes


def one(src: Path) -> list[dict]:
    kci, how = _load(src)
    release = _release(src)
    text = (src / "vllm" / "v1" / "kv_cache_interface.py").read_text()
    has_pcp = tuple(int(x) for x in release.split(".")[:2]) >= (0, 12)  # --prefill-context-parallel-size from 0.12.0
    # 0.26+ size sliding windows by VllmConfig.max_in_flight_tokens, a scheduler figure this stand-in does not derive
    own_in_flight = "max_in_flight_tokens" not in text
    return [dict(release=release, case=case["name"], blocks_per_request=_blocks(kci, case), loaded=how)
            for case in CASES if (case["pcp"] == 1 or has_pcp) and (case["spec"] != "sliding" or own_in_flight)]


def main(argv: list[str]) -> int:
    import subprocess

    if argv[0] == "--one":  # one release per process: each imports its own `vllm`
        print(json.dumps(one(Path(argv[1]))))
        return 0
    out, sources = Path(argv[0]), [Path(a) for a in argv[1:]]
    results = []
    for src in sources:
        done = subprocess.run([sys.executable, __file__, "--one", str(src)], capture_output=True, text=True, check=True)
        results += json.loads(done.stdout.strip().splitlines()[-1])
    out.write_text(json.dumps(dict(produced_by="tests/peers/vllm_release_peer.py: v1/kv_cache_interface.py "
                                                "max_memory_usage_bytes of each release", cases=CASES, results=results),
                              indent=1) + "\n", encoding="utf-8")
    print(f"{len(results)} figures from {len(sources)} releases -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
