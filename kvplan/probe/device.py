"""The one place that touches the machine: device choice, allocation, memory counters, OOM detection.

Each device is an object with the same small interface, built around an injectable torch (and, for
CUDA, an injectable `torch.cuda`-like module; for the CPU, injectable /proc readers), so every code
path tests without the hardware — the habit of torch's collect_env.py.
"""

from __future__ import annotations

import gc
import os
import time
from dataclasses import dataclass
from typing import Callable

from kvplan.core.errors import InputError, UnsupportedError

DEVICE_CHOICES = ("auto", "cuda", "cpu", "meta")


@dataclass(frozen=True)
class Counters:
    """A snapshot of what the device says is in use; None where it cannot say."""

    requested: int | None = None
    allocated: int | None = None
    reserved: int | None = None
    driver_used: int | None = None
    rss: int | None = None


def _delta(after: int | None, before: int | None) -> int | None:
    return None if after is None or before is None else after - before


def deltas(after: Counters, before: Counters) -> Counters:
    return Counters(*(_delta(getattr(after, f), getattr(before, f)) for f in Counters.__dataclass_fields__))


class Device:
    """Common behaviour; subclasses say how to count and how to free."""

    kind = "?"

    def __init__(self, torch, label: str):
        self.torch = torch
        self.label = label
        self.name: str | None = None

    # allocation ------------------------------------------------------------------------------
    def torch_dtype(self, name: str):
        dt = getattr(self.torch, name, None)
        if dt is None:
            raise UnsupportedError(f"torch {self.torch.__version__} has no dtype {name}", where="--kv-dtype",
                                   hint="upgrade torch (float8 needs torch >= 2.1) or pick another --kv-dtype")
        return dt

    def empty(self, shape: tuple[int, ...], dtype_name: str):
        return self.torch.empty(shape, dtype=self.torch_dtype(dtype_name), device=self.label)

    def touch(self, tensor) -> None:
        """Write every byte, so the pages are really there (CPU memory is committed lazily). Through a
        uint8 view: a plain memset that every dtype supports (fill_ of float8 is not on every backend)."""
        try:
            view = tensor.view(self.torch.uint8)
        except (RuntimeError, TypeError):
            view = tensor
        view.zero_()

    def is_oom(self, exc: BaseException) -> bool:
        oom = getattr(self.torch, "OutOfMemoryError", None) or getattr(getattr(self.torch, "cuda", None), "OutOfMemoryError", None)
        if oom is not None and isinstance(exc, oom):
            return True
        # the CPU allocator raises a plain RuntimeError (c10/core/impl/alloc_cpu.cpp)
        return isinstance(exc, RuntimeError) and ("can't allocate memory" in str(exc) or "out of memory" in str(exc).lower())

    # counting --------------------------------------------------------------------------------
    def counters(self) -> Counters:
        return Counters()

    def free_bytes(self) -> int | None:
        """Memory this process could still allocate, as the device reports it (None: unknown)."""
        return None

    def total_bytes(self) -> int | None:
        """The device's whole memory as its runtime reports it (None: not a budget to plan against)."""
        return None

    def synchronize(self) -> None:
        pass

    def release(self, *, collect: bool = True) -> None:
        """Give back everything no longer referenced. `collect` also runs the cycle collector (~0.1 s
        with torch loaded): needed after a probe, not before one."""
        if collect:
            gc.collect()

    def now(self) -> float:
        self.synchronize()
        return time.perf_counter()


def _read_statm_rss() -> int | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            resident_pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def _read_mem_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


class CpuDevice(Device):
    """Host memory: tensor storage bytes, and the process RSS (from /proc/self/statm) after touching."""

    kind = "cpu"

    def __init__(self, torch, *, read_rss: Callable[[], int | None] = _read_statm_rss,
                 read_available: Callable[[], int | None] = _read_mem_available):
        super().__init__(torch, "cpu")
        self._read_rss = read_rss
        self._read_available = read_available
        self.name = "cpu"

    def counters(self) -> Counters:
        return Counters(rss=self._read_rss())

    def release(self, *, collect: bool = True) -> None:
        pass  # tensors are freed by reference counting as their lists are cleared; host memory needs no cache flush

    def free_bytes(self) -> int | None:
        return self._read_available()


class MetaDevice(Device):
    """torch's `meta` device: shapes and dtypes, no memory. Checks the layout math at any size."""

    kind = "meta"

    def __init__(self, torch):
        super().__init__(torch, "meta")
        self.name = "meta"

    def touch(self, tensor) -> None:
        pass

    def release(self, *, collect: bool = True) -> None:
        pass  # meta tensors hold no memory: nothing to collect


class CudaDevice(Device):
    """One CUDA device through torch's caching allocator and the driver's view of free memory."""

    kind = "cuda"

    def __init__(self, torch, index: int = 0, *, cuda=None):
        super().__init__(torch, f"cuda:{index}")
        self.cuda = cuda if cuda is not None else torch.cuda
        self.index = index
        self.name = self.cuda.get_device_name(index)

    def counters(self) -> Counters:
        self.cuda.synchronize(self.index)
        stats = self.cuda.memory_stats(self.index)
        free, total = self.cuda.mem_get_info(self.index)
        # requested_bytes: the sizes asked for, before the allocator rounds them (c10/cuda/
        # CUDACachingAllocator.cpp malloc() adds block->requested_size to it, block->size to allocated)
        # an allocator that has never allocated reports no stats at all: nothing requested yet. A torch
        # without the requested_bytes stat (< 2.1) gives None, and the tensors' own bytes are used instead.
        requested = stats.get("requested_bytes.all.current") if stats else 0
        return Counters(requested=requested, allocated=self.cuda.memory_allocated(self.index),
                        reserved=self.cuda.memory_reserved(self.index), driver_used=total - free)

    def free_bytes(self) -> int | None:
        free, _ = self.cuda.mem_get_info(self.index)
        # memory the allocator holds but no tensor uses is ours to hand out too
        return free + self.cuda.memory_reserved(self.index) - self.cuda.memory_allocated(self.index)

    def total_bytes(self) -> int | None:
        return self.cuda.mem_get_info(self.index)[1]

    def synchronize(self) -> None:
        self.cuda.synchronize(self.index)

    def release(self, *, collect: bool = True) -> None:
        if collect:
            gc.collect()
        self.cuda.synchronize(self.index)
        self.cuda.empty_cache()


def select_device(torch, requested: str = "auto", *, local_rank: int | None = None, cuda=None) -> Device:
    """'auto' (CUDA when torch sees one, else the CPU), 'cuda', 'cuda:N', 'cpu' or 'meta'."""
    want = (requested or "auto").strip().lower()
    cuda = cuda if cuda is not None else torch.cuda
    if want == "auto":
        want = "cuda" if cuda.is_available() else "cpu"
    if want == "cpu":
        return CpuDevice(torch)
    if want == "meta":
        return MetaDevice(torch)
    if want == "cuda" or want.startswith("cuda:"):
        if not cuda.is_available():
            built = getattr(getattr(torch, "version", None), "cuda", None)
            why = "this torch build has no CUDA" if not built else "no CUDA device is visible"
            raise InputError(f"--device cuda asked, but {why} (torch {torch.__version__})", where="--device",
                             hint="use --device cpu, or install a CUDA build of torch on a machine with a GPU")
        index = local_rank or 0
        if want.startswith("cuda:"):
            try:
                index = int(want.split(":", 1)[1])
            except ValueError:
                raise InputError(f"bad device {requested!r}", where="--device", hint="cuda, cuda:N, cpu or meta") from None
        count = cuda.device_count()
        if not 0 <= index < count:
            raise InputError(f"device cuda:{index} does not exist ({count} visible)", where="--device")
        cuda.set_device(index)
        return CudaDevice(torch, index, cuda=cuda)
    raise InputError(f"unknown device {requested!r}", where="--device", hint="auto, cuda, cuda:N, cpu or meta")
