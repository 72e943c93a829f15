"""--bench: time one decode attention step over the allocated cache, per layer group.

Decode is memory-bound: each new token reads every cached K and V of every layer once. The probe
runs torch.nn.functional.scaled_dot_product_attention with one query token per sequence over one
layer of each attention group (the others are identical), and scales by the layer count:
    seconds per output token (KV attention only) = sum over groups of layers x seconds per layer
    achieved bandwidth = K/V bytes read per step / that time
beside the catalog HBM bandwidth of the GPU (kvplan gpus), whose ratio says how close the kernel
gets. Weights, MLPs and everything else in a real step are left out: this is the KV part alone.
GQA: the query heads of a rank attend over its KV heads with enable_gqa (torch >= 2.5), else the
K/V are repeated (which costs memory and is noted). MLA: absorbed decode attends over the latent as K
and its first kv_lora_rank columns as V (FlashMLA reads the latent once; SDPA may read it twice).
"""

from __future__ import annotations

from typing import Any

from kvplan.core.errors import InputError, UnsupportedError, KvplanError
from kvplan.probe.device import Device
from kvplan.probe.layout import RankPlan, TensorSpec
from kvplan.probe.result import BenchGroup, BenchResult
from kvplan.core.spec import ModelSpec
from kvplan.model import catalog

MIN_SECONDS = 0.2
MAX_ITERS = 50
WARMUP = 2


def _sdpa(torch, q, k, v, notes: list[str]):
    F = torch.nn.functional
    if q.shape[1] == k.shape[1]:
        return F.scaled_dot_product_attention(q, k, v)
    try:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    except TypeError:  # torch < 2.5 has no enable_gqa
        if "repeat" not in " ".join(notes):
            notes.append("torch without enable_gqa: K/V repeated per query head (extra memory and reads)")
        rep = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(q, k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1))


def _time(device: Device, fn, *, min_seconds: float, max_iters: int) -> tuple[float, int]:
    for _ in range(WARMUP):
        fn()
    t0 = device.now()
    fn()
    once = max(device.now() - t0, 1e-9)
    iters = max(1, min(max_iters, int(min_seconds / once)))
    t0 = device.now()
    for _ in range(iters):
        fn()
    return (device.now() - t0) / iters, iters


def bench(held: list[tuple[TensorSpec, Any]], plan: RankPlan, spec: ModelSpec, device: Device, *,
          min_seconds: float = MIN_SECONDS, max_iters: int = MAX_ITERS, catalog_lookup=None) -> BenchResult:
    torch = device.torch
    by_layer: dict[int, dict[str, Any]] = {}
    for s, t in held:
        by_layer.setdefault(s.layer, {})[s.role] = t
    if device.kind == "meta":
        raise InputError("--bench needs real memory; the meta device has none", where="--bench", hint="use --device cuda or cpu")
    q_heads = max(1, spec.attention_heads // plan.tp)
    parts = latent = k = v = q = None
    notes: list[str] = []
    groups = []
    total_iters = 0
    try:
        with torch.inference_mode():
            for g in plan.groups:
                # attention is timed over what the probe allocated: K and V, or the MLA latent (a state, or the raw
                # slots of an engine's shared pool, is not attention)
                parts = by_layer.get(g.layers[0], {}) if g.layers else {}
                if "k" not in parts and "latent" not in parts:
                    continue
                layer = spec.layer_specs[g.layers[0]]
                if "latent" in parts:
                    latent = parts["latent"]
                    if not latent.dtype.is_floating_point or latent.element_size() < 2:
                        raise UnsupportedError(f"--bench needs a 16- or 32-bit KV dtype, not {latent.dtype}", where="--bench",
                                               hint="add --kv-dtype bf16 (torch's attention has no fp8/int KV path)")
                    k = latent.unsqueeze(1)  # [batch, 1, len, latent]: one shared "head"
                    v = latent[..., :layer.mla.kv_lora_rank].unsqueeze(1)
                    read = latent.untyped_storage().nbytes()
                else:
                    k, v = parts["k"], parts["v"]
                    if not k.dtype.is_floating_point or k.element_size() < 2:
                        raise UnsupportedError(f"--bench needs a 16- or 32-bit KV dtype, not {k.dtype}", where="--bench",
                                               hint="add --kv-dtype bf16 (torch's attention has no fp8/int KV path)")
                    read = k.untyped_storage().nbytes() + v.untyped_storage().nbytes()
                heads = q_heads
                if heads % k.shape[1]:
                    notes.append(f"{g.label}: {heads} query heads do not group over {k.shape[1]} KV heads; timed as MHA")
                    heads = k.shape[1]
                q = torch.zeros((k.shape[0], heads, 1, k.shape[-1]), dtype=k.dtype, device=k.device)
                seconds, iters = _time(device, lambda: _sdpa(torch, q, k, v, notes), min_seconds=min_seconds, max_iters=max_iters)
                total_iters += iters
                del q, k, v
                groups.append(BenchGroup(label=g.label, layers=len(g.layers), bytes_per_layer=read, seconds_per_layer=seconds,
                                         bytes_per_s=int(read / seconds)))
    finally:
        # no tensor reference may outlive the probe, not even through a traceback's frame
        by_layer.clear()
        parts = latent = k = v = q = None  # noqa: F841
    if not groups:
        raise InputError("--bench times attention, and this rank has no attention layer", where="--bench")
    kv_bytes = sum(b.layers * b.bytes_per_layer for b in groups)
    per_token = sum(b.layers * b.seconds_per_layer for b in groups)
    return summarize(tuple(groups), kv_bytes, per_token, device, total_iters, tuple(notes), catalog_lookup)


def catalog_gpu(device: Device, lookup=None):
    """The catalog entry whose name matches the CUDA device name, or None."""
    if device.kind != "cuda" or not device.name:
        return None

    try:
        return (lookup or catalog.find_gpu)(device.name)
    except (KvplanError, OSError, ModuleNotFoundError, FileNotFoundError):
        return None


def summarize(groups, kv_bytes: int, per_token: float, device: Device, iters: int, notes, lookup=None) -> BenchResult:
    gpu = catalog_gpu(device, lookup)
    bw = gpu.hbm_bandwidth_bytes_per_s if gpu else None
    achieved = int(kv_bytes / per_token) if per_token > 0 else 0
    return BenchResult(groups=groups, kv_bytes_per_step=kv_bytes, seconds_per_token=per_token, achieved_bytes_per_s=achieved,
                       gpu=gpu.name if gpu else None, catalog_bytes_per_s=bw,
                       catalog_fraction=achieved / bw if bw else None,
                       catalog_seconds_per_token=kv_bytes / bw if bw else None, iterations=iters, notes=tuple(notes))
