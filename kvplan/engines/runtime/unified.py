"""Unified memory: what the host holds of a pool it shares with the GPU before an engine starts. Engine-neutral
runtime physics, pure integers of bytes.

On an integrated GPU (DGX Spark's GB10: one LPDDR5X pool that CUDA reports as an integrated device; the catalog's
`interconnect: unified`) the operating system, its page cache, containers and daemons live in the memory the engine
counts as the GPU's. The engines read the free memory there from the host (vLLM 0.12+ and SGLang 0.5.9+:
psutil.virtual_memory().available, which counts reclaimable page cache as free; vllm/utils/mem_utils.py
MemorySnapshot.measure, sglang utils/common.py get_available_gpu_memory), so what they find free at start is the
pool less the host's share. That share is not in the launch: it is measured, as "Free memory on device (F/T GiB)"
in vLLM's own start-up line on GB10 machines that ran nothing else (public readings below).

Each reading's T - F is the host's share plus vLLM's CUDA context (and, on the multi-node readings, the NCCL
communicators, which vLLM 0.11+ sets up before its first reading); less those, as kvplan's vLLM budget models them,
it is the host's share. When a launch does not say what is in use (--gpu-reserved, a site profile), an engine takes
every value between the smallest and the largest share (`in_use_range`), adds its own context, and judges at the
largest: the band's low edge.
Machines running other models hold more (a public DGX Spark TensorRT-LLM log: 49 GiB), and so do machines left
with stale /dev/shm segments of crashed runs (a public 2-node runbook read 96.75 GiB free on such a worker, left
out here); those say it with --gpu-reserved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan.engines import lazy

if TYPE_CHECKING:
    from kvplan.engines.runtime import startup
else:  # SGLang's context model: read by the SGLang readings below, on a unified GPU only (benchmarks/cold_start.py)
    startup = lazy.module("kvplan.engines.runtime.startup")

GIB = 2**30


MIB = 2**20
# What each reading holds beside the host's share: vLLM's CUDA context, and at TP >= 2 its NCCL communicators too, as
# kvplan models them (kvplan/engines/vllm/budget.py CUDA_CONTEXT_ONE_GPU / CUDA_CONTEXT_MULTI_GPU; the readings are
# vLLM's, so its decomposition applies; tests/test_vllm_budget.py checks the two stay equal)
READING_CONTEXT_ONE_GPU = 522 * MIB
READING_CONTEXT_MULTI_GPU = 1546 * MIB


@dataclass(frozen=True)
class Reading:
    """One public start-up reading on a GB10 machine that ran no other model: vLLM's "Free memory on device
    (free/total GiB)" or SGLang's "Load weight begin. avail mem=free GB" (GiB despite the label; the total is then
    the catalog's 121.63), at the engines' two-decimal rounding, and the tensor-parallel size of the run (None: the
    source does not say; taken as one GPU, the smaller context, so the larger share)."""

    total_gib: str
    free_gib: str
    tp: int | None
    where: str  # the public source
    what: str  # what the machine ran beside the engine, as the source says
    sglang: bool = False  # SGLang's reading: its own CUDA context (runtime/startup.py) is inside it

    @property
    def logged_share_bytes(self) -> int:
        """total - free as logged: the host's share plus the engine's CUDA context (and NCCL at TP >= 2)."""
        return round((float(self.total_gib) - float(self.free_gib)) * GIB)

    @property
    def host_share_bytes(self) -> int:
        """What the host held: the logged share less the engine's context at the run's TP."""
        if self.sglang:
            context, dist = startup.startup_bytes(startup.constants(), tp=self.tp or 1, pp=1, architecture="blackwell",
                                                  link=None)
            return max(self.logged_share_bytes - context - dist, 0)
        context = READING_CONTEXT_MULTI_GPU if self.tp is not None and self.tp > 1 else READING_CONTEXT_ONE_GPU
        return max(self.logged_share_bytes - context, 0)


HOST_SHARE_READINGS = (
    Reading("121.63", "113.1", 3, "public GB10 tuning notes, code-search id 60295833630",
            "two settled nodes of a TP 3 boot after a host-side settle gate (MemAvailable >= 112 GiB)"),
    Reading("121.63", "112.9", None, "public DGX Spark serving notes, code-search id 58293460125",
            "page cache cleared with `sparkrun setup clear-cache` just before the launch"),
    Reading("121.69", "111.4", 2, "public Hy3 2-Spark recipe README, code-search id 68617561178",
            "'boot free memory is only ~111.4/121.69 GiB' (TP 2, one process per node)"),
    Reading("121.63", "110.48", None, "public GB10 serving notes, code-search id 68339916495",
            "0.92 fails: 'Free memory on device cuda:0 (110.48/121.63 GiB) ... less than desired'"),
    Reading("121.69", "109.83", None, "public Ray Serve deployment helper, code-search id 68926970876",
            "quoted failure of gpu_memory_utilization 0.92"),
    Reading("121.63", "104.1", 3, "public GB10 tuning notes, code-search id 60295833630",
            "the third node of the same boot, started while the previous container's memory was still settling"),
    Reading("121.69", "102.2", 2, "https://github.com/MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks/issues/47",
            "headless (multi-user.target), page cache dropped, TP 2 over two nodes: 101.3-102.2 GiB free at boot"),
    Reading("121.69", "101.3", 2, "https://github.com/MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks/issues/47",
            "the same machines' lowest reading"),
    Reading("121.69", "100.94", 3, "public 3-node DGX Spark runbook, code-search id 57917567333",
            "'the OS, dockerd, open-webui (~1 GiB on rank 0) and the exporters' resident; TP 3 over three nodes"),
    # SGLang 0.5.16 on one DGX Spark (tests/data/sglang_logs: sostrowsk/dgx-spark-local-llm at 4b548646, three launches)
    Reading("121.63", "115.36", 1, "tests/data/sglang_logs spark-sglang0516-laguna-s21-int4-dflash",
            "SGLang, one GPU, nothing else named", sglang=True),
    Reading("121.63", "115.26", 1, "tests/data/sglang_logs spark-sglang0516-laguna-s21-nvfp4-dflash-try1",
            "SGLang, one GPU, nothing else named", sglang=True),
    Reading("121.63", "114.99", 1, "tests/data/sglang_logs spark-sglang0516-laguna-s21-nvfp4-dflash-try2",
            "SGLang, one GPU, nothing else named", sglang=True),
)


@dataclass(frozen=True)
class HostShare:
    """The host's share of a unified pool before an engine starts: the smallest, the median and the largest of the
    public readings (bytes), each less vLLM's context at its run's TP. An engine adds its own context on top."""

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


# --- Grace superchips (GH200, GB200): the HBM is the GPU's, and a NUMA node the host allocates from ----------------
# CUDA reports the GPU as discrete (deviceQuery "Integrated GPU sharing Host Memory: No" on a GH200 480GB, driver 12.2,
# and a GH200 120GB, driver 12.9; cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_INTEGRATED) = 0 on a GH200 144G HBM3e,
# driver 13.2: docs/gpus.md). So the engines take their discrete path there and read the free memory with
# cudaMemGetInfo: vLLM 0.10-0.11 always, 0.12-0.19 unless the capability is (8.7, 11.0, 12.1), 0.20+ unless torch's
# is_integrated (vllm/utils/mem_utils.py MemorySnapshot.measure; read in 0.10.2, 0.11.0, 0.12.0, 0.19.0, 0.20.2,
# 0.33.0); SGLang on every release (0.5.9+ take psutil only where props.is_integrated: srt/utils/common.py
# get_available_gpu_memory, read in 0.5.9 and 0.5.23). vLLM's PR #35356 meant is_integrated to cover GH200, but CUDA's
# attribute is 0 there. The budget is then the discrete one on the HBM total, but the HBM is onlined as a NUMA node
# the kernel allocates from, and cudaMemGetInfo counts the pages the host keeps there (page cache) as used: a public
# GH200 144G start-up read 74.9 of 142.5 GiB free (vllm-project/vllm#35313, quoted in #35356). What the host holds
# there is not in the launch and no public idle readings bound it, so without --gpu-reserved it is "cannot judge".
SUPERCHIP_HBM_READING = "a public GH200 start-up read 74.9 of 142.5 GiB free (vllm-project/vllm#35356)"


def superchip_reason(engine: str) -> str:
    """Why an engine's free memory on a Grace superchip's HBM is not in the launch (the comment above)."""
    return (f"{engine} reads the free memory of this GPU with cudaMemGetInfo (CUDA reports it as discrete, not "
            "integrated), and its HBM is a NUMA node the operating system allocates from: the page cache the host keeps "
            f"there counts as used ({SUPERCHIP_HBM_READING}), and no public readings bound it")


def in_use_range() -> HostShare:
    """What the host holds before the engine starts, over the public readings."""
    from statistics import median  # the stdlib's statistics module: loaded for a unified GPU only (start-up time)

    shares = sorted(r.host_share_bytes for r in HOST_SHARE_READINGS)
    return HostShare(low_bytes=shares[0], nominal_bytes=int(median(shares)), high_bytes=shares[-1])


def describe(share: HostShare) -> str:
    """The range as a note says it."""
    return (f"{share.low_bytes / GIB:.2f}-{share.high_bytes / GIB:.2f} GiB (median {share.nominal_bytes / GIB:.2f}; "
            f"{len(HOST_SHARE_READINGS)} public readings of idle DGX Spark machines, docs/gpus.md)")


# --- the host's growth during vLLM's profile ------------------------------------------------------------------------
# vLLM's non-torch memory is the growth of (total - free) - torch.cuda.memory_reserved() from the worker's first
# snapshot (init_device, before the weights) to the end of the profile run (vllm/utils/mem_utils.py memory_profiling
# and MemorySnapshot.measure, vllm/v1/worker/gpu_worker.py determine_available_memory; read in 0.12.0 and 0.13.0). On
# a unified pool "free" is the host's: psutil.virtual_memory().available from 0.12 (MemAvailable, which counts clean
# page cache as free, so the mmapped safetensors' pages leave it unchanged), cudaMemGetInfo before (MemFree-like:
# the page cache the load fills counts as used). So every byte of anonymous memory anything on the host takes between
# the two snapshots is non-torch memory to vLLM. What takes it is not in vLLM's source: the largest piece kvplan
# can name is torch.compile, which V1 runs inside the profile run on a cold cache ("Compiling a graph ... takes
# 45.10 s" before "Available KV cache memory" in the public GB10 log): Inductor's compile workers, one interpreter
# with torch imported per CPU (torch/_inductor/config.py decide_compile_threads: min(32, CPUs); GB10 has 20 Arm
# cores), alive until the pool quiesces. The ceiling below is those workers at the anonymous memory of a Python
# process that imported torch (measured on kvplan's build machine: RssAnon 143 MiB after `import torch`, torch 2.13;
# an estimate of the mechanism, not fitted to a log). The one public GB10 log lost 1.80 GiB to this term over
# kvplan's discrete-GPU model (docs/gpus.md), under the 2.79 GiB ceiling. The source does not bound it: a host that
# starts other work during the profile loses more; a site profile's measured non-torch memory settles it.
COMPILE_WORKERS_GB10 = 20
COMPILE_WORKER_ANON_BYTES = 143 * MIB


def profile_growth_ceiling(free_reader: str, checkpoint_bytes: int) -> int:
    """The most the host's growth between vLLM's first snapshot and the end of its profile adds to its non-torch
    memory on a unified pool: Inductor's compile workers, plus, where the free figure leaves page cache out
    (`free_reader` "cuda": cudaMemGetInfo, 0.10-0.11), the checkpoint's pages the load reads in."""
    workers = COMPILE_WORKERS_GB10 * COMPILE_WORKER_ANON_BYTES
    return workers + (checkpoint_bytes if free_reader != "psutil" else 0)
