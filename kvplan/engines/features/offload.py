"""Offload tiers: weights kept in host memory (--cpu-offload-gb) and KV blocks copied to host memory or disk
(--kv-offloading-size with vLLM's native backend, LMCache). Pure.

Weights (vLLM 0.33.0 model_executor/offloader/uva.py UVAOffloader._maybe_offload_to_cpu; 0.19.0
model_executor/models/utils.py maybe_offload_to_cpu, the same loop): the decoder layers of each worker are walked
in order and their parameters moved to pinned host memory one by one, until the bytes moved reach
cpu_offload_gb x 2^30 ("The space in GiB to offload to CPU, per GPU"); the parameter that crosses the line moves
whole, the embedding and output head never move. The GPU keeps the rest; the host holds what moved, per GPU.
SGLang 0.5.23 runs the same loop (utils/offloader.py OffloaderV1.maybe_offload_to_cpu over the decoder layers
make_layers builds, cpu_offload_gb x 1024**3 per rank process), in its own models' parameter order
(SGLANG_LAYER_ORDER: its Qwen3Attention registers q_norm and k_norm before qkv_proj).

KV offload, native (config/vllm.py VllmConfig._post_init_kv_transfer_config: --kv-offloading-size S makes an
OffloadingConnector with cpu_bytes_to_use = S x 2^30, summed over the TP ranks): v1/kv_offload/cpu/spec.py
CPUOffloadingSpec keeps num_chunks = cpu_bytes_to_use // round_up(bytes_per_block x world_size x
blocks_per_chunk, page size) chunks of blocks_per_chunk GPU blocks (1 unless kv_connector_extra_config says), the
page size being mmap.PAGESIZE (4096 on x86-64 Linux). So the host tier holds num_chunks x blocks_per_chunk blocks
of block_size tokens, for every TP rank together, in S GiB of pinned memory.

KV offload, LMCache (lmcache 0.5.6 v1/config.py: chunk_size 256, max_local_cpu_size 5.0 GiB, max_local_disk_size
0 by default; storage_backend/local_cpu_backend.py: int(max_local_cpu_size x 1024**3) bytes of pinned memory per
worker; MLA models save only on the first rank, save_only_first_rank): each TP rank keeps chunks of 256 tokens of
its own KV shard, so a rank holds (cpu bytes // chunk bytes) x 256 tokens; the disk tier likewise with
max_local_disk_size x 1024**3 bytes. With --kv-offloading-backend lmcache vLLM 0.33 starts LMCacheMPConnector and
leaves the size to the LMCache server (kv_offloading_size is not passed on).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.spec import ModelSpec
from kvplan.core.layers import kv_heads_per_rank

GIB = 2**30
PAGE_SIZE = 4096  # mmap.PAGESIZE on x86-64 Linux: the alignment of one offloaded chunk (SharedOffloadRegion)
LMCACHE_CHUNK_TOKENS = 256
LMCACHE_CPU_GIB_DEFAULT = 5  # lmcache v1/config.py max_local_cpu_size default (GiB: x 1024**3)


@dataclass(frozen=True)
class WeightOffloadOptions:
    cpu_offload_bytes: int  # per GPU (cpu_offload_gb x 2^30)
    params: tuple[str, ...] = ()  # --cpu-offload-params: only parameters whose name holds one of these segments
    where: str = "cpu_offload_gb"


@dataclass(frozen=True)
class KvOffloadOptions:
    backend: str  # native | lmcache
    size_bytes: int | None = None  # native: cpu_bytes_to_use, all TP ranks together
    blocks_per_chunk: int = 1
    lmcache_cpu_bytes: int | None = None  # per worker (max_local_cpu_size x 1024**3)
    lmcache_disk_bytes: int = 0  # per worker (max_local_disk_size x 1024**3)
    lmcache_chunk_tokens: int = LMCACHE_CHUNK_TOKENS
    where: str = "kv_offloading_size"


# ------------------------------------------------------------------------------------------- weights

# the parameters of one decoder layer in the order vLLM registers them (model_executor/models/llama.py
# LlamaDecoderLayer: self_attn.qkv_proj, self_attn.o_proj, mlp.gate_up_proj, mlp.down_proj, the two norms;
# Qwen2 adds the qkv bias after its weight, Qwen3 q_norm / k_norm after o_proj, Gemma-2 four norms)
_LAYER_ORDER = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "llama", "GraniteForCausalLM": "llama",
    "Phi3ForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3", "Gemma2ForCausalLM": "gemma2",
}


# SGLang 0.5.23 (models/llama.py, which also serves Phi3ForCausalLM; mistral.py MistralForCausalLM(LlamaForCausalLM);
# qwen2.py; qwen3.py Qwen3Attention: q_norm, k_norm, then qkv_proj, o_proj)
SGLANG_LAYER_ORDER = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "llama", "Phi3ForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3_norms_first",
}


def layer_parameters(spec: ModelSpec, tp: int, bits: int, *, orders: dict[str, str] | None = None) -> list[tuple[str, int]]:
    """(name, bytes on one rank) of one decoder layer's parameters, in the engine's order (`orders`: vLLM's by
    default, SGLANG_LAYER_ORDER for SGLang)."""
    orders = _LAYER_ORDER if orders is None else orders
    style = orders.get(spec.architecture or "")
    if style is None or spec.moe is not None or spec.hidden_size is None or spec.intermediate_size is None:
        raise UnsupportedError(f"weight offload of {spec.architecture or spec.name} is not modelled", where="cpu_offload_gb",
                               hint="kvplan walks the decoder-layer parameters of dense " + ", ".join(sorted(orders)))

    h, inter = spec.hidden_size, spec.intermediate_size
    kv_layer = next(layer for layer in spec.layer_specs if layer.headed)
    q = spec.attention_heads * spec.head_dim // tp
    kv = kv_heads_per_rank(kv_layer.kv_heads, tp) * spec.head_dim
    b = bits // 8
    norms_first = [("self_attn.q_norm.weight", spec.head_dim * b), ("self_attn.k_norm.weight", spec.head_dim * b)]
    out = norms_first if style == "qwen3_norms_first" else []
    out.append(("self_attn.qkv_proj.weight", (q + 2 * kv) * h * b))
    if style == "qwen2":
        out.append(("self_attn.qkv_proj.bias", (q + 2 * kv) * b))
    out.append(("self_attn.o_proj.weight", h * q * b))
    if style == "qwen3":
        out += [("self_attn.q_norm.weight", spec.head_dim * b), ("self_attn.k_norm.weight", spec.head_dim * b)]
    out += [("mlp.gate_up_proj.weight", 2 * (inter // tp) * h * b), ("mlp.down_proj.weight", h * (inter // tp) * b)]
    norms = 4 if style == "gemma2" else 2
    out += [(f"norm{i}.weight", h * b) for i in range(norms)]
    return out


@dataclass(frozen=True)
class WeightOffloadTerms:
    requested_bytes: int  # cpu_offload_gb x 2^30 per GPU
    offloaded_bytes: int  # what moves (whole parameters, at most the decoder layers of the worker)
    parameters_moved: int


def weight_offload(spec: ModelSpec, opts: WeightOffloadOptions, *, tp: int, bits: int, layers_on_worker: int,
                   orders: dict[str, str] | None = None) -> WeightOffloadTerms:
    """The bytes the offloader moves to the host on one GPU holding `layers_on_worker` decoder layers (`orders`:
    layer_parameters')."""
    if bits not in (16, 32):
        raise UnsupportedError("weight offload of a quantized checkpoint is not modelled (its parameters and scales "
                               "move one by one)", where=opts.where, hint="kvplan models 16- and 32-bit weights")
    params = layer_parameters(spec, tp, bits, orders=orders)
    moved = count = 0
    for _ in range(layers_on_worker):
        if moved >= opts.cpu_offload_bytes:
            break
        for name, size in params:
            if moved >= opts.cpu_offload_bytes:
                break
            if opts.params and not any(f".{p}." in f".{name}." for p in opts.params):
                continue
            moved += size
            count += 1
    return WeightOffloadTerms(requested_bytes=opts.cpu_offload_bytes, offloaded_bytes=moved, parameters_moved=count)


# ------------------------------------------------------------------------------------------- KV

@dataclass(frozen=True)
class KvTier:
    name: str  # gpu | cpu | disk
    tokens: int  # tokens of KV this tier holds (one DP replica, every TP rank's shard of them)
    bytes_per_gpu: int | None  # what one GPU's share of the tier takes (None: not per GPU)
    host_bytes: int  # host memory (or disk) the tier takes for one DP replica


@dataclass(frozen=True)
class KvOffloadTerms:
    backend: str
    tiers: tuple[KvTier, ...]  # the host and disk tiers (the GPU tier is the engine's pool)
    host_memory_bytes: int  # pinned host memory per DP replica
    disk_bytes: int
    notes: tuple[str, ...]


def native_kv_offload(opts: KvOffloadOptions, *, bytes_per_block: int, block_size: int, world_size: int,
                      alignment: int = PAGE_SIZE) -> KvOffloadTerms:
    """vLLM's native OffloadingConnector host tier (CPUOffloadingSpec). `alignment`: the bytes each chunk is rounded
    up to (1 until 0.26, the page from 0.27: kvplan/engines/vllm/option_rules.py KV_OFFLOAD_ALIGNMENT)."""
    if opts.size_bytes is None or opts.size_bytes <= 0:
        raise InputError("kv_offloading_size must be a positive number of GiB", where=opts.where)
    chunk = bytes_per_block * world_size * opts.blocks_per_chunk
    aligned = -(-chunk // alignment) * alignment
    chunks = opts.size_bytes // aligned
    tokens = chunks * opts.blocks_per_chunk * block_size
    padded = f"each padded to {aligned:,} B (page {alignment} B)" if alignment > 1 else "not padded"
    notes = (f"{chunks:,} chunks of {opts.blocks_per_chunk} block(s) x {world_size} worker(s) x {bytes_per_block:,} B, "
             f"{padded}, in {opts.size_bytes:,} B of pinned host memory",)
    return KvOffloadTerms(backend="native", tiers=(KvTier("cpu", tokens, opts.size_bytes // world_size, opts.size_bytes),),
                          host_memory_bytes=opts.size_bytes, disk_bytes=0, notes=notes)


def lmcache_kv_offload(opts: KvOffloadOptions, *, token_bytes_per_rank: int, tp: int, mla: bool) -> KvOffloadTerms:
    """LMCache's local CPU (and disk) tiers, each TP rank its own (MLA: the first rank only)."""
    cpu = opts.lmcache_cpu_bytes if opts.lmcache_cpu_bytes is not None else LMCACHE_CPU_GIB_DEFAULT * GIB
    chunk_bytes = token_bytes_per_rank * opts.lmcache_chunk_tokens
    savers = 1 if mla else tp
    tiers = []
    cpu_tokens = cpu // chunk_bytes * opts.lmcache_chunk_tokens
    tiers.append(KvTier("cpu", cpu_tokens, cpu, cpu * savers))
    disk = opts.lmcache_disk_bytes
    if disk:
        tiers.append(KvTier("disk", disk // chunk_bytes * opts.lmcache_chunk_tokens, disk, disk * savers))
    notes = [f"LMCache keeps chunks of {opts.lmcache_chunk_tokens} tokens ({chunk_bytes:,} B on one rank) in "
             f"{cpu:,} B of pinned memory per {'first rank (MLA: save_only_first_rank)' if mla else 'TP rank'}"]
    return KvOffloadTerms(backend="lmcache", tiers=tuple(tiers), host_memory_bytes=cpu * savers, disk_bytes=disk * savers,
                          notes=tuple(notes))
