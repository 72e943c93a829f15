"""Unified memory: what the host holds of a pool it shares with the GPU before an engine starts. Engine-neutral
runtime physics, pure integers of bytes.

On an integrated GPU (DGX Spark's GB10: one LPDDR5X pool that CUDA reports as an integrated device; the catalog's
`interconnect: unified`) the operating system, its page cache, containers and daemons live in the memory the engine
counts as the GPU's. The engines read the free memory there from the host (vLLM 0.12+ and SGLang 0.5.9+:
psutil.virtual_memory().available, which counts reclaimable page cache as free; vllm/utils/mem_utils.py
MemorySnapshot.measure, sglang utils/common.py get_available_gpu_memory), so what they find free at start is the
pool less the host's share. That share is not in the launch: it is measured, as "Free memory on device (F/T GiB)"
in vLLM's own start-up line on GB10 machines that ran nothing else (public readings below).

HOST_SHARE_READINGS holds T - F of each reading: the host's share plus the CUDA context (and, on the multi-node
readings, the NCCL communicators, which vLLM 0.11+ sets up before its first reading). When a launch does not say
what is in use (--gpu-reserved, a site profile), an engine takes every value between the smallest and the largest
of them (`in_use_range`, less the engine's own modelled context), and judges at the largest: the band's low edge.
Machines running other models hold more (a public DGX Spark TensorRT-LLM log: 49 GiB), and so do machines left
with stale /dev/shm segments of crashed runs (a public 2-node runbook read 96.75 GiB free on such a worker, left
out here); those say it with --gpu-reserved.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

GIB = 2**30


@dataclass(frozen=True)
class Reading:
    """One public vLLM start-up reading on a GB10 machine that ran no other model: "Free memory on device
    (free/total GiB)", at vLLM's two-decimal rounding."""

    total_gib: str
    free_gib: str
    where: str  # the public source
    what: str  # what the machine ran beside the engine, as the source says

    @property
    def share_bytes(self) -> int:
        """total - free: the host's share plus the engine's CUDA context (and NCCL where the source ran TP >= 2)."""
        return round((float(self.total_gib) - float(self.free_gib)) * GIB)


HOST_SHARE_READINGS = (
    Reading("121.63", "113.1", "public GB10 tuning notes, code-search id 60295833630",
            "two settled nodes of a TP 3 boot after a host-side settle gate (MemAvailable >= 112 GiB)"),
    Reading("121.63", "112.9", "public DGX Spark serving notes, code-search id 58293460125",
            "page cache cleared with `sparkrun setup clear-cache` just before the launch"),
    Reading("121.69", "111.4", "public Hy3 2-Spark recipe README, code-search id 68617561178",
            "'boot free memory is only ~111.4/121.69 GiB' (TP 2, one process per node)"),
    Reading("121.63", "110.48", "public GB10 serving notes, code-search id 68339916495",
            "0.92 fails: 'Free memory on device cuda:0 (110.48/121.63 GiB) ... less than desired'"),
    Reading("121.69", "109.83", "public Ray Serve deployment helper, code-search id 68926970876",
            "quoted failure of gpu_memory_utilization 0.92"),
    Reading("121.63", "104.1", "public GB10 tuning notes, code-search id 60295833630",
            "the third node of the same boot, started while the previous container's memory was still settling"),
    Reading("121.69", "102.2", "https://github.com/MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks/issues/47",
            "headless (multi-user.target), page cache dropped, TP 2 over two nodes: 101.3-102.2 GiB free at boot"),
    Reading("121.69", "101.3", "https://github.com/MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks/issues/47",
            "the same machines' lowest reading"),
    Reading("121.69", "100.94", "public 3-node DGX Spark runbook, code-search id 57917567333",
            "'the OS, dockerd, open-webui (~1 GiB on rank 0) and the exporters' resident; TP 3 over three nodes"),
)


@dataclass(frozen=True)
class HostShare:
    """The host's share of a unified pool, less the engine's own context: the smallest, the median and the largest
    of the public readings (bytes)."""

    low_bytes: int
    nominal_bytes: int
    high_bytes: int

    def at_edge(self, edge: str | None) -> int:
        """The share an engine's budget is judged by at a band edge: the largest at the low edge ("low"), the smallest
        at the high edge, the median for the modelled value (None)."""
        return {"low": self.high_bytes, "high": self.low_bytes}.get(edge or "", self.nominal_bytes)


def shares_with_host(facts) -> bool:
    """Whether a catalog GPU is an integrated device whose one pool the host shares (catalog interconnect "unified":
    GB10). GH200 and GB200 have their own HBM beside the host's memory and are not covered by these readings."""
    return facts is not None and getattr(facts, "interconnect", None) == "unified"


def in_use_range(context_bytes: int) -> HostShare:
    """What the host holds before the engine starts, as the engine's own budget counts it (its CUDA context modelled
    apart): each reading's share less `context_bytes`, never below 0."""
    shares = sorted(max(r.share_bytes - context_bytes, 0) for r in HOST_SHARE_READINGS)
    return HostShare(low_bytes=shares[0], nominal_bytes=int(median(shares)), high_bytes=shares[-1])


def describe(share: HostShare) -> str:
    """The range as a note says it."""
    return (f"{share.low_bytes / GIB:.2f}-{share.high_bytes / GIB:.2f} GiB (median {share.nominal_bytes / GIB:.2f}; "
            f"{len(HOST_SHARE_READINGS)} public readings of idle DGX Spark machines, docs/gpus.md)")
