"""The CUDA code paths without a GPU: a fake `torch.cuda` that keeps the caching allocator's books
(requested, 512-byte-rounded allocated, 2 MiB segments reserved, driver free) over `meta` tensors, and
raises torch.OutOfMemoryError past its capacity. Frees are seen through weakref finalizers, so the
counters going back to zero proves the probe let go of every tensor.
"""

from __future__ import annotations

import json
import weakref
from math import prod
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kvplan.model import catalog  # noqa: E402
from kvplan.core.dtypes import dtype as lookup_dtype  # noqa: E402
from kvplan.engines import EngineRequest  # noqa: E402
from kvplan.core.errors import InputError  # noqa: E402
from kvplan.probe.device import CpuDevice, CudaDevice, select_device  # noqa: E402
from kvplan.probe.runner import ProbeOptions, run_probe  # noqa: E402

CONFIGS = Path(__file__).parent / "data" / "hf_configs"

MiB = 1 << 20
GiB = 1 << 30


class FakeCuda:
    """Enough of torch.cuda for the probe, with CUDACachingAllocator's rounding rules
    (c10/cuda/CUDACachingAllocator.cpp: sizes rounded to 512 B; segments of 2 MiB multiples)."""

    OutOfMemoryError = torch.OutOfMemoryError

    def __init__(self, capacity: int, *, name: str = "NVIDIA H200", context: int = 500 * MiB, available: bool = True):
        self.capacity, self.context, self.name, self.available = capacity, context, name, available
        self.requested = self.allocated = self.live_segments = self.cached_segments = 0
        self.alive = 0
        self.empty_cache_calls = 0
        self.ever_allocated = False

    # the parts of torch.cuda the probe calls
    def is_available(self):
        return self.available

    def device_count(self):
        return 1 if self.available else 0

    def set_device(self, index):
        pass

    def get_device_name(self, index=0):
        return self.name

    def synchronize(self, index=None):
        pass

    def memory_stats(self, index=0):
        if not self.ever_allocated:
            return {}  # what a fresh CUDA caching allocator reports
        return {"requested_bytes.all.current": self.requested}

    def memory_allocated(self, index=0):
        return self.allocated

    def memory_reserved(self, index=0):
        return self.live_segments + self.cached_segments

    def mem_get_info(self, index=0):
        return self.capacity - self.context - self.memory_reserved(), self.capacity

    def empty_cache(self):
        self.empty_cache_calls += 1
        self.cached_segments = 0

    # the allocator
    def alloc(self, shape, dtype):
        t = torch.empty(shape, dtype=dtype, device="meta")
        n = prod(shape) * t.element_size()
        size = max(512, -(-n // 512) * 512)
        segment = -(-size // (2 * MiB)) * 2 * MiB
        if self.live_segments + self.cached_segments + segment > self.capacity - self.context:
            self.cached_segments = 0  # like the real one: free the cache and retry once
            if self.live_segments + segment > self.capacity - self.context:
                raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {size} bytes (fake)")
        self.ever_allocated = True
        self.requested += n
        self.allocated += size
        self.live_segments += segment
        self.alive += 1
        weakref.finalize(t, self._free, n, size, segment)
        return t

    def _free(self, n, size, segment):
        self.requested -= n
        self.allocated -= size
        self.live_segments -= segment
        self.cached_segments += segment
        self.alive -= 1


class FakeCudaDevice(CudaDevice):
    def __init__(self, fake: FakeCuda):
        super().__init__(torch, 0, cuda=fake)

    def empty(self, shape, dtype_name):
        return self.cuda.alloc(shape, self.torch_dtype(dtype_name))


def _request(name, *, seq, batch=1, kv="auto", tp=1, pp=1):
    spec = catalog.resolve_model(str(CONFIGS / f"{name}.json"))
    return EngineRequest(spec=spec, seq=seq, batch=batch, kv_dtype=kv,
                         weight_fmt=None, tp=tp, pp=pp)


H200 = 150_109_945_856  # what the runtime reports (kvplan gpus)


def test_cuda_match_and_allocator_counters():
    fake = FakeCuda(H200)
    dev = FakeCudaDevice(fake)
    res = run_probe(_request("llama-3.1-8b", seq=32768, batch=8), ProbeOptions(), torch=torch, device=dev, dist_env=False)
    expected = 8 * 32768 * 131072  # 128 KiB per token
    assert res.device == "cuda" and res.device_name == "NVIDIA H200"
    assert res.match and res.measured_bytes == res.requested_delta_bytes == expected
    assert res.allocated_delta_bytes == expected  # every tensor is a multiple of 512 B
    assert res.reserved_delta_bytes == res.driver_delta_bytes >= expected
    rank = res.ranks[0]
    assert rank.deltas.left_after_free_requested_bytes == 0 and rank.deltas.left_after_free_reserved_bytes == 0
    assert fake.alive == 0 and fake.requested == 0 and fake.empty_cache_calls >= 1


def test_cuda_allocator_rounding_is_reported_not_counted():
    fake = FakeCuda(H200)
    # an fp8 MLA latent of 3 tokens is 3 x 576 = 1,728 B; the allocator hands out 2,048 B for it
    res = run_probe(_request("deepseek-v3", seq=3, kv="fp8"), ProbeOptions(), torch=torch, device=FakeCudaDevice(fake), dist_env=False)
    assert res.match and res.measured_bytes == res.requested_delta_bytes == res.estimated_bytes == 61 * 1728
    assert res.allocated_delta_bytes == 61 * 2048
    assert fake.alive == 0


def test_cuda_out_of_memory_outside_find_max(cli, monkeypatch):
    fake = FakeCuda(8 * GiB)
    monkeypatch.setattr("kvplan.probe.runner.select_device", lambda *a, **k: FakeCudaDevice(fake))
    code, out, err = cli("probe", CONFIGS / "llama-3.1-8b.json", "--seq", "32K", "--batch", "8", "--device", "cuda")
    assert code == 1 and out == ""
    assert err.startswith("error: ") and "ran out of memory" in err and "Traceback" not in err and err.count("\n") == 1
    assert fake.alive == 0 and fake.requested == 0


def test_cuda_find_max_default_budget_is_095_of_free():
    fake = FakeCuda(80 * GiB)
    res = run_probe(_request("llama-3.1-8b", seq=32768), ProbeOptions(find_max=True), torch=torch, device=FakeCudaDevice(fake),
                    dist_env=False)
    fm = res.find_max
    free = 80 * GiB - 500 * MiB
    assert fm.budget_bytes == free * 95 // 100 and "0.95 x free" in fm.budget_source
    assert fm.unit == "sequences" and fm.unit_bytes == 4 * GiB
    assert fm.measured_max == fm.predicted_max == fm.budget_bytes // (4 * GiB) and fm.limited_by == "budget" and fm.match
    assert fake.alive == 0


def test_cuda_find_max_until_the_device_refuses():
    fake = FakeCuda(40 * GiB, context=0)
    res = run_probe(_request("qwen2.5-7b", seq=4096), ProbeOptions(find_max=True, layout="paged", max_fraction=1),
                    torch=torch, device=FakeCudaDevice(fake), dist_env=False)
    fm = res.find_max
    # qwen2.5-7b: 28 layers x 4 KV heads x 128 x 2 x bf16 = 56 KiB per token; a block of 16 holds 896 KiB in 56 pools
    assert fm.unit == "blocks" and fm.unit_bytes == 16 * 28 * 4 * 128 * 2 * 2
    assert fm.budget_bytes == 40 * GiB
    assert fm.limited_by == "out of memory"  # 2 MiB segments per pool chunk: the device is full before the budget
    assert 0 < fm.measured_max < fm.predicted_max and not fm.match
    assert fake.alive == 0 and fake.requested == 0


def test_cuda_select_device():
    fake = FakeCuda(H200)
    dev = select_device(torch, "cuda", cuda=fake)
    assert isinstance(dev, CudaDevice) and dev.label == "cuda:0" and dev.name == "NVIDIA H200"
    assert isinstance(select_device(torch, "auto", cuda=fake), CudaDevice)
    with pytest.raises(InputError, match="does not exist"):
        select_device(torch, "cuda:3", cuda=fake)
    absent = FakeCuda(H200, available=False)
    assert isinstance(select_device(torch, "auto", cuda=absent), CpuDevice)
    with pytest.raises(InputError) as err:
        select_device(torch, "cuda", cuda=absent)
    assert err.value.exit_code == 2


def test_cuda_oom_is_recognised():
    dev = FakeCudaDevice(FakeCuda(H200))
    assert dev.is_oom(torch.OutOfMemoryError("CUDA out of memory"))
    assert not dev.is_oom(ValueError("x"))


def test_bench_compares_with_the_catalog_bandwidth():
    fake = FakeCuda(H200)
    res = run_probe(_request("llama-3.1-8b", seq=64, batch=2), ProbeOptions(bench=True), torch=torch,
                    device=FakeCudaDevice(fake), dist_env=False)
    b = res.bench
    assert b.gpu == "h200-141gb" and b.catalog_bytes_per_s == 4_800_000_000_000
    assert b.kv_bytes_per_step == res.measured_bytes
    assert b.catalog_seconds_per_token == pytest.approx(res.measured_bytes / 4.8e12)
    assert b.catalog_fraction == pytest.approx(b.achieved_bytes_per_s / 4.8e12, rel=1e-3)
    assert fake.alive == 0


def test_cuda_probe_json_through_the_cli(cli, monkeypatch):
    fake = FakeCuda(H200)
    monkeypatch.setattr("kvplan.probe.runner.select_device", lambda *a, **k: FakeCudaDevice(fake))
    code, out, _ = cli("probe", CONFIGS / "deepseek-v3.json", "--seq", "8K", "--batch", "4", "--kv-dtype", "fp8", "--layout", "paged",
                       "--device", "cuda", "--json")
    data = json.loads(out)
    assert code == 0 and data["match"] and data["device"] == "cuda"
    assert data["measured_bytes"] == data["requested_delta_bytes"] == 61 * 4 * 8192 * 576
    assert fake.alive == 0


def test_engine_pool_sized_from_the_device_itself():
    vllm = pytest.importorskip("kvplan.engines.vllm.engine")
    fake = FakeCuda(H200)
    seen = []

    def estimate(req):
        seen.append(req.hardware)
        return vllm.estimate(req)

    res = run_probe(_request("llama-3.1-8b", seq=8192), ProbeOptions(layout="paged", engine="vllm"), engine_estimate=estimate,
                    torch=torch, device=FakeCudaDevice(fake), dist_env=False)
    (hw,) = seen
    assert hw.capacity_bytes == H200 and hw.name == "h200-141gb"  # the device's own memory, named from the catalog
    assert res.match and res.measured_bytes == res.requested_delta_bytes and res.blocks_source.startswith("vllm")
    assert fake.alive == 0
