"""Generate docs/configs.md: every config.json kvplan is tested on, what kvplan makes of it, and transformers' count.

    python scripts/make_config_table.py                 # rewrite docs/configs.md from the truth files
    python scripts/make_config_table.py --check         # exit 1 if docs/configs.md is stale
    python scripts/make_config_table.py --refresh-extra # rerun transformers on tests/data/extra_configs (needs
                                                        # torch + transformers) and rewrite its truth file first

Columns: the layer layout kvplan resolves, KV bytes one token adds (bf16, all layers, before any window is
full), the cache of one sequence at 8K and 128K tokens in the static engine (sliding layers capped at their
window, MLA latents, state layers' fixed state; bf16), and parameters: kvplan's and transformers'
`sum(p.numel())` on the meta device, from tests/data/transformers_truth.json (shared configs) and
tests/data/extra_configs/truth/transformers_truth.json (extra configs). Nothing in the table is typed by hand.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kvplan.core.cache import CacheModel  # noqa: E402
from kvplan.model.catalog import resolve_model  # noqa: E402
from kvplan.core.dtypes import dtype  # noqa: E402
from kvplan.core.errors import KvplanError  # noqa: E402
from kvplan.core.spec import MLA, STATE  # noqa: E402
from kvplan.core.units import format_bytes  # noqa: E402

SHARED = REPO / "tests" / "data" / "hf_configs"
EXTRA = REPO / "tests" / "data" / "extra_configs"
SHARED_TRUTH = REPO / "tests" / "data" / "transformers_truth.json"
EXTRA_TRUTH = EXTRA / "truth" / "transformers_truth.json"
OUT = REPO / "docs" / "configs.md"
BF16 = dtype("bf16")


# transformers 5.24's Llama4ForConditionalGeneration.forward runs its language model (which fills the cache) and then
# reads `outputs.image_outputs` from the language model's MoeCausalLMOutputWithPast, which has no such field
TEXT_FORWARD_FAILURE = "has no attribute 'image_outputs'"


def peer_module():
    spec = importlib.util.spec_from_file_location("kvplan_hf_peer", REPO / "tests" / "peers" / "hf_peer.py")
    peer = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = peer
    spec.loader.exec_module(peer)
    return peer


def run_peer(peer, path: Path, n_tokens: int = 8192, dtype: str = "bfloat16"):
    """peer.run_peer, and where the multimodal forward fails after the text model ran (TEXT_FORWARD_FAILURE), the
    same measurement with the forward of the text model alone (`model.language_model`): the cache it fills and the
    parameters (of the whole model, vision tower included) are the same objects the full forward would use."""
    r = peer.run_peer(path, n_tokens, dtype=dtype)
    if r.built or TEXT_FORWARD_FAILURE not in (r.reason or ""):
        return r
    import dataclasses
    import time

    import torch
    from transformers import StaticCache
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        d = peer.load_config_dict(path)
        cfg = peer._make_config(d)
        t0 = time.perf_counter()
        with torch.device("meta"):
            model = peer._model_class(cfg, d)._from_config(cfg, dtype=getattr(torch, dtype))
        model.eval()
        t1 = time.perf_counter()
        cache = StaticCache(config=model.config, max_cache_len=int(n_tokens))
        with torch.no_grad():
            model.language_model(input_ids=torch.zeros((1, 1), dtype=torch.long, device="meta"), cache=cache, use_cache=True)
        t2 = time.perf_counter()
        tensors = tuple(peer._walk_cache(cache, peer._mla_dims(model.config.get_text_config(decoder=True))))
        total, with_dups, vision, projector, tied = peer._params(model)
    finally:
        hf_logging.set_verbosity(level)
    from collections import Counter

    return dataclasses.replace(
        r, built=True, reason=None, model_class=type(model).__name__, cache_class=type(cache).__name__,
        tensors=tensors, cache_bytes=sum(t.nbytes for t in tensors if t.kind != "counter"), params_total=total,
        params_with_duplicates=with_dups, params_vision=vision, params_projector=projector, tied_embeddings=tied,
        layer_classes=tuple(sorted(Counter(type(layer).__name__ for layer in cache.layers).items())),
        build_seconds=round(t1 - t0, 3), forward_seconds=round(t2 - t1, 3),
        notes=(f"the full forward fails ({r.reason}); measured with the forward of model.language_model",))


def refresh_extra_truth() -> None:
    """Run the peer (tests/peers/hf_peer.py) on every extra config and keep the figures the table needs."""
    peer = peer_module()
    out = {}
    for path in sorted(EXTRA.glob("*.json")):
        r = run_peer(peer, path)
        entry = {"built": r.built, "cannot_build_reason": r.reason, "transformers_version": r.transformers_version}
        if r.built:
            entry.update(params_total=r.params_total, kv_bytes=r.kv_bytes, state_bytes=r.state_bytes,
                         params_vision=r.params_vision, params_projector=r.params_projector)
            if any(TEXT_FORWARD_FAILURE in n for n in r.notes):
                entry["notes"] = list(r.notes)
        out[path.name] = entry
    doc = {"n_tokens": 8192, "batch": 1, "dtype": "bfloat16",
           "generator": "scripts/make_config_table.py --refresh-extra (peer: tests/peers/hf_peer.py)", "configs": out}
    EXTRA_TRUTH.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _layout(spec) -> str:
    parts = [spec.layout_summary()]
    attention = [layer for layer in spec.layer_specs if layer.kind in ("full", "sliding", "chunked")]
    if attention:
        kv = sorted({layer.kv_heads for layer in attention})
        dims = f"{spec.head_dim}" if (spec.v_head_dim or spec.head_dim) == spec.head_dim else f"{spec.head_dim}/{spec.v_head_dim}"
        parts.append(f"{'/'.join(map(str, kv))} KV x {dims}")
    if spec.count(MLA):
        parts.append(f"latent {spec.mla.kv_lora_rank}+{spec.mla.qk_rope_head_dim}")
    if spec.count(STATE):
        s = spec.state
        parts.append(f"state {list(s.conv_shape)}+{list(s.recurrent_shape)}")
    return "; ".join(parts)


def _params(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


def _row(path: Path, truth: dict) -> str:
    entry = truth.get(path.name, {})
    try:
        spec = resolve_model(str(path))
    except KvplanError as err:
        message = err.one_line().replace(str(REPO) + "/", "").replace("|", "/")
        return f"| {path.name} | refused (exit {err.exit_code}): {message} | | | | | |"
    cache = CacheModel(spec, BF16)
    per_token = cache.kv_bytes_per_token
    at = {n: cache.footprint(n, 1).cache_bytes for n in (8192, 131072)}
    beyond = spec.max_context is not None and spec.max_context < 131072
    theirs = entry.get("params_total") if entry.get("built") else None
    if theirs is None:
        delta = "not built: " + (entry.get("cannot_build_reason") or "no figure").split(";")[0][:60].replace("|", "/")
    else:
        delta = f"{(spec.params - theirs) / theirs:+.3%}"
    return (f"| {path.name} | {_layout(spec)} | {format_bytes(per_token)} | {format_bytes(at[8192])} | "
            f"{format_bytes(at[131072])}{' †' if beyond else ''} | {_params(spec.params)} | {_params(theirs)} ({delta}) |")


def render() -> str:
    shared_truth = json.loads(SHARED_TRUTH.read_text())["configs"]
    extra_truth = json.loads(EXTRA_TRUTH.read_text())["configs"] if EXTRA_TRUTH.is_file() else {}
    head = ("| config | layout (layers; KV heads x head dim; latent; state shapes) | KV / token | cache @ 8K | "
            "cache @ 128K | params (kvplan) | params (transformers) |\n|---|---|---|---|---|---|---|\n")
    lines = [
        "# The config.json files kvplan is tested on",
        "",
        "Generated by `python scripts/make_config_table.py` from the configs in `tests/data/` and the transformers",
        "truth files; do not edit by hand. KV / token: bytes one token adds over all layers in bf16, before any",
        "sliding window is full. Cache: one sequence in the static engine (transformers' StaticCache layout: sliding",
        "layers keep their window, MLA layers the latent, state layers a fixed state in vLLM's shapes, see",
        "docs/spec-schema.md `state`), bf16 K/V whatever the file's dtype. † = beyond the model's max_context.",
        "Parameters: kvplan's count and transformers' `sum(p.numel())` on the meta device (relative difference).",
        "",
        "## The 27 shared configs (tests/data/hf_configs)",
        "",
        head.rstrip("\n"),
    ]
    lines += [_row(p, shared_truth) for p in sorted(SHARED.glob("*.json"))]
    lines += ["", "## Extra configs (tests/data/extra_configs, provenance in its SOURCES.md)", "", head.rstrip("\n")]
    lines += [_row(p, extra_truth) for p in sorted(EXTRA.glob("*.json"))]
    lines += ["", "Mistral-Small-3.1: transformers 5 ties the output head by Mistral3Config's default; the checkpoint does not,",
              "and kvplan counts its separate lm_head (131072 x 5120 = 671,088,640 parameters, the whole difference).", ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/configs.md differs from a fresh render")
    ap.add_argument("--refresh-extra", action="store_true", help="rerun transformers on the extra configs first")
    args = ap.parse_args()
    if args.refresh_extra:
        refresh_extra_truth()
    text = render()
    if args.check:
        if not OUT.is_file() or OUT.read_text(encoding="utf-8") != text:
            print("stale: docs/configs.md (run python scripts/make_config_table.py)", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
