"""GPU buffers SGLang allocates after the token pool is sized: HiCache's write-back staging and FlashInfer's
all-reduce fusion workspace. Pure: integers of bytes out.

Both come after the pool on SGLang's default path, so they come out of the memory mem_fraction_static leaves free
(the reserve that also holds the CUDA graphs and the activations), never out of the pool:

- the pool is sized in managers/scheduler.py init_model_worker (init_memory_pools), then the CUDA graphs are
  captured (init_all_cuda_graphs), then the radix cache and HiCache's host pool are built
  (kv_cache_builder.build_kv_cache), whose constructor makes the staging (read in 0.5.14, 0.5.17, 0.5.20, 0.5.22,
  0.5.23: mem_cache/memory_pool_host.py, then pool_host/mha.py _init_write_back_staging_buffers);
- the fusion workspace is made at the first fused all-reduce up to 0.5.10.post1 (layers/flashinfer_comm_fusion.py
  ensure_workspace_initialized, called from the forward: read in 0.4.9, 0.4.10.post2, 0.5.1, 0.5.3, 0.5.8, 0.5.10,
  0.5.10.post1), and from 0.5.11 in the warm-up before graph capture, after init_memory_pool (0.5.11-0.5.13
  model_executor/model_runner.py initialize: kernel_warmup, _pre_initialize_flashinfer_allreduce_workspace; 0.5.14+
  model_executor/runner/base_runner.py _warmup).

The exception is SGLang's opt-in post-capture sizing (SGLANG_ENABLE_POST_CAPTURE_KV_SIZING=1, 0.5.16+): the pool is
re-sized after the graphs, so both come out of it then (0.5.22+ even make the staging early on purpose:
kv_cache_builder.py prepare_hicache_staging, "HiCache staging prepared before KV sizing"). kvplan does not model
that path and refuses the variable (engines/sglang/environment.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the caller hands the release in
    from kvplan.engines.sglang.releases import Release

MIB = 2**20

# --------------------------------------------------------------------------------------- HiCache staging
# pool_host/base.py (0.5.16+; memory_pool_host.py in 0.5.14) _WRITE_BACK_STAGING_PAGE_CHUNK = 64
STAGING_PAGE_CHUNK = 64
STAGING_FIRST = "0.5.14"  # 0.5.13.post1's host pools have no staging (mem_cache/memory_pool_host.py)


def hicache_staging_bytes(rel: Release, *, cell_per_rank: int, page: int, host_pages: int) -> int:
    """One rank's write-back staging under the page_first layout (the default; the only one kvplan accepts).

    MHA (pool_host/mha.py prepare_mha_write_back_staging): a K and a V tensor of
    [min(host pages, 64) x page tokens, layers, KV heads per rank, head_dim] in the KV dtype; MLA (pool_host/mla.py):
    one tensor of [tokens, layers, 1, kv_cache_dim]. Either way that is staging tokens x the pool's bytes per token
    of one rank. SGLang skips it when its staged JIT kernel cannot take the row (hicache.py
    can_use_write_back_jit_kernel: heads x head_dim x dtype bytes not a multiple of 16), so this is its upper
    edge; it is after the pool either way."""
    if not rel.at_least(STAGING_FIRST):
        return 0
    return min(host_pages, STAGING_PAGE_CHUNK) * page * cell_per_rank


# ---------------------------------------------------------------------------- FlashInfer fusion workspace
BACKEND_CHOICE = "0.5.14"  # --flashinfer-allreduce-fusion-backend; TRT-LLM's workspace before it
# the fusion's flags and the first release whose server_args.py has each (read: 0.4.8 has none of them, 0.4.9 the
# first; the backend is not in 0.5.13.post1, in 0.5.14; the forced off not in 0.5.9, in 0.5.10)
FUSION_FLAGS = {"--enable-flashinfer-allreduce-fusion": "0.4.9", "--flashinfer-allreduce-fusion-backend": BACKEND_CHOICE,
                "--enforce-disable-flashinfer-allreduce-fusion": "0.5.10"}
# the tokens the workspace is made for: ensure_workspace_initialized's max_token_num (0.5.1+: 2048, the same as
# FUSE_ALLREDUCE_MAX_BATCH_SIZE in layers/communicator.py, later layers/layer_boundary/residual/add_norm.py)
FUSION_TOKENS = (("0.5.1", 2048),)
# from 0.5.11 one workspace for the attention-TP group and one for the MoE group (flashinfer_comm_fusion.py
# _attn_tp_workspace_manager, _moe_tp_workspace_manager; pre_initialize_workspaces makes both, read in 0.5.11)
TWO_WORKSPACES = "0.5.11"
# sized from the FlashInfer that 0.5.10 onward pin: 0.6.7.post2 (0.5.10), 0.6.12 (0.5.13-0.5.14) and 0.7.2 (0.5.23)
# read, the same three buffers in each; older releases pin FlashInfer 0.2.x-0.3.x, published as sources only, not
# read here (their workspace is still made after the pool)
SIZED_FROM = "0.5.10"
FLAG_COUNT = 256  # flashinfer/comm/trtllm_ar.py BarrierFlagCount
MAX_COMM = 2147483647 & ~((1 << 21) - 1)  # trtllm_ar.py MAX_COMM_SIZE: INT32_MAX rounded down to 2 MiB
GRANULE = 2 * MIB  # the 2 MiB rounding of 0.6.7.post2, and the CUDA allocation granularity of NVIDIA GPUs
SIGNAL_PAD = 2048  # flashinfer/comm/mnnvl.py SIGNAL_PAD_SIZE, added before rounding (0.7.2 SymmDeviceMemory)


@dataclass(frozen=True)
class FusionWorkspace:
    backend: str  # as resolved from the flags: auto | trtllm | mnnvl | cutedsl
    group_sizes: tuple[int, ...]  # the ranks of each group a rank holds a workspace for
    max_tokens: int | None  # the tokens each is made for; None: not read for this release
    hidden_size: int
    low_bytes_per_rank: int | None  # the three buffers of each as FlashInfer asks for them; None: not sized
    high_bytes_per_rank: int | None  # each buffer rounded to 2 MiB and given 2 MiB more (pad, granularity)
    formula: str


def trtllm_buffers(world: int, tokens: int, hidden: int) -> tuple[int, int, int]:
    """FlashInfer's three IPC buffers of one TRT-LLM fusion workspace on one rank (flashinfer/comm/trtllm_ar.py
    trtllm_create_ipc_workspace_for_all_reduce_fusion, the same in 0.6.7.post2, 0.6.12 and 0.7.2, 16-bit model):
    the two-shot buffer world x tokens x hidden x 2, the barrier flags world x 256 x 4 and the Lamport buffer
    3 x min(world x tokens x hidden x 2, MAX_COMM_SIZE). Each rank allocates its own and maps its peers'."""
    comm = world * tokens * hidden * 2
    return comm, world * FLAG_COUNT * 4, 3 * min(comm, MAX_COMM)


def _rounded(size: int) -> int:
    return -(-size // GRANULE) * GRANULE + GRANULE


def fusion_groups(rel: Release, *, tp: int, attn_tp: int) -> tuple[int, ...]:
    """The groups a rank makes a workspace for, by their ranks: one on the TP group up to 0.5.10.post1
    (get_tensor_model_parallel_world_size), from 0.5.11 the MoE group's (the TP group's ranks: kvplan takes
    --ep-size 1 or TP only) and the attention-TP group's; a group of one rank makes none ("world_size <= 1")."""
    groups = (tp, attn_tp) if rel.at_least(TWO_WORKSPACES) else (tp,)
    return tuple(g for g in groups if g > 1)


def fusion_workspace(rel: Release, *, backend: str, tp: int, attn_tp: int, hidden: int,
                     dtype_bits: int) -> FusionWorkspace:
    """What one rank holds for the fusion; sized for the TRT-LLM backend of a 16-bit model (auto picks it on Hopper:
    flashinfer_comm_fusion.py _resolve_backend), otherwise given without bytes."""
    tokens = None
    for first, value in FUSION_TOKENS:
        if rel.at_least(first):
            tokens = value
    groups = fusion_groups(rel, tp=tp, attn_tp=attn_tp)
    if not rel.at_least(BACKEND_CHOICE):
        backend = "trtllm"  # the only one before the backend flag (0.5.10: create_allreduce_fusion_workspace "trtllm")
    why = ("the MNNVL and CuTe DSL workspaces are not sized" if backend not in ("auto", "trtllm") else
           "a 32-bit model's Lamport buffers are not sized" if dtype_bits != 16 else
           f"the FlashInfer SGLang {rel.version} pins is not read" if tokens is None or not rel.at_least(SIZED_FROM)
           else "")
    if why or tokens is None:
        return FusionWorkspace(backend=backend, group_sizes=groups, max_tokens=tokens, hidden_size=hidden,
                               low_bytes_per_rank=None, high_bytes_per_rank=None, formula=why)
    parts = [trtllm_buffers(world, tokens, hidden) for world in groups]
    low = sum(sum(p) for p in parts)
    high = sum(_rounded(b) for p in parts for b in p)
    formula = " + ".join(("" if n == 1 else f"{n} x ") + f"(2-shot {w} x {tokens} x {hidden} x 2 B + flags {w} x 256 x "
                         f"4 B + Lamport 3 x min({w} x {tokens} x {hidden} x 2 B, {MAX_COMM:,} B))"
                         for w, n in sorted(Counter(groups).items(), reverse=True))
    return FusionWorkspace(backend=backend, group_sizes=groups, max_tokens=tokens, hidden_size=hidden,
                           low_bytes_per_rank=low, high_bytes_per_rank=high,
                           formula=(formula or "no group of more than one rank") + "; high: each buffer rounded up "
                           "to 2 MiB, plus 2 MiB")
