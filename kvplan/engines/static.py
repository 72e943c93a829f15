"""The static engine: contiguous preallocation of every sequence to its full length, as transformers'
StaticCache does (transformers/cache_utils.py StaticLayer / StaticSlidingWindowLayer)."""

from __future__ import annotations

from kvplan.engines import plan
from kvplan.engines import EngineRequest

ENGINE_VERSION = "transformers 5.x StaticCache semantics"


def estimate(req: EngineRequest) -> plan.Estimate:
    hardware = req.hardware
    if hardware is not None and req.gpu_util is not None and hardware.reserve_bytes is None:
        hardware = plan.Hardware(hardware.name, hardware.capacity_bytes, gpu_util=req.gpu_util)
    if req.kv_cache_memory is not None:
        # the cache gets exactly this much per GPU: the reserve is whatever the weights and it leave
        weights, _ = plan.model_weights(req.spec, req.weight_fmt)
        needed = -(-weights // (req.tp * req.pp)) + req.kv_cache_memory
        capacity = hardware.capacity_bytes if hardware is not None else needed
        hardware = plan.Hardware(hardware.name if hardware else None, capacity, reserve_bytes=max(capacity - needed, 0))
    return plan.estimate(req.spec, seq=req.seq, batch=req.batch, kv_dtype=req.kv_dtype, weight_fmt=req.weight_fmt,
                         tp=req.tp, pp=req.pp, hardware=hardware)
