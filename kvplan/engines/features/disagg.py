"""Disaggregated prefill / decode and the other KV connectors (--kv-transfer-config). Pure.

vLLM 0.33.0 (distributed/kv_transfer/kv_connector/factory.py, v1/*; config/kv_transfer.py KVTransferConfig):

- which connectors exist: per release (kvplan/engines/vllm/option_rules.py CONNECTORS, from factory.py of each
  release: P2pNcclConnector until 0.23, NIXL pull/push from 0.24, ...);
- buffers: NIXL and Mooncake register the KV cache itself for RDMA reads (no second GPU copy); with
  kv_buffer_device "cpu" NIXL keeps a host mirror of the whole cache (nixl/base_worker.py host_xfer_buffers).
  0.19's P2pNcclConnector receives into GPU tensors up to kv_buffer_size bytes (1e9 by default,
  p2p_nccl_engine.py buffer_size_threshold) allocated after the pool is sized, so they must fit in the memory
  vLLM leaves outside gpu_memory_utilization, and keeps a pinned host pool of mem_pool_size_gb (32 GiB by
  default, rounded up to a power of two; tensor_memory_pool.py);
- the hybrid KV cache manager: until 0.21 any connector turns it off (0.13-0.21 unless
  --no-disable-hybrid-kv-cache-manager asks otherwise); from 0.22 only a connector without SupportsHMA does
  (config/vllm.py VllmConfig.__post_init__; the sets per release: option_rules.CONNECTORS_HMA): sliding-window
  layers are then charged the whole max_model_len and hybrid Mamba models fail to start;
- P2pNcclConnector's buffers (kv_buffer_size 1e9, mem_pool_size_gb 32) are the same in every release that has it
  (0.10.2-0.23.0, p2p_nccl_engine.py P2pNcclEngine.__init__);
- what moves: a prefill instance sends each request's prompt KV to a decode instance, every TP rank its own shard
  (prompt tokens x that rank's KV bytes per token); the link must carry rate x that.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from kvplan.core.errors import InputError, UnsupportedError

# which connectors each release registers, and which keep the hybrid KV cache manager (SupportsHMA), are rules of the
# release: kvplan/engines/vllm/option_rules.py CONNECTORS and CONNECTORS_HMA
# connectors whose memory kvplan models (GPU and host buffers as above); the rest exit 3
MODELLED = frozenset({"NixlConnector", "NixlPullConnector", "NixlPushConnector", "MooncakeConnector",
                      "LMCacheConnectorV1", "LMCacheMPConnector", "OffloadingConnector", "SimpleCPUOffloadConnector",
                      "MultiConnector", "P2pNcclConnector"})
ROLES = frozenset({"kv_producer", "kv_consumer", "kv_both"})
P2P_DEFAULT_BUFFER = 10**9  # KVTransferConfig.kv_buffer_size
P2P_DEFAULT_POOL_GIB = 32  # p2p_nccl_engine.py DEFAULT_MEM_POOL_SIZE_GB


@dataclass(frozen=True)
class KvTransferOptions:
    connector: str
    role: str | None
    buffer_device: str = "cuda"
    buffer_bytes: int | None = None  # kv_buffer_size (P2pNccl)
    extra: tuple[tuple[str, Any], ...] = ()  # kv_connector_extra_config items
    children: tuple["KvTransferOptions", ...] = ()  # MultiConnector
    where: str = "kv_transfer_config"

    def extra_value(self, key: str, default: Any = None) -> Any:
        return dict(self.extra).get(key, default)


def read_config(value: Any, *, where: str, connectors: frozenset, release: str) -> KvTransferOptions:
    """A kv_transfer_config as a launch gives it (JSON text or a mapping), checked against the connectors the release
    registers (`connectors`: kvplan/engines/vllm/option_rules.py CONNECTORS; `release` names it in errors)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise InputError(f"is not JSON: {err.msg}", where=where) from None
    if not isinstance(value, Mapping):
        raise InputError(f"must be a mapping, got {type(value).__name__}", where=where)
    connector = value.get("kv_connector")
    if not isinstance(connector, str) or not connector:
        raise InputError("names no kv_connector", where=where, hint='e.g. {"kv_connector": "NixlConnector", "kv_role": "kv_both"}')
    if connector not in connectors:
        raise InputError(f"vLLM {release} has no KV connector {connector!r}", where=f"{where}: kv_connector",
                         hint=", ".join(sorted(connectors)))
    if connector not in MODELLED:
        raise UnsupportedError(f"the {connector}'s buffers are not modelled", where=f"{where}: kv_connector",
                               hint="kvplan models " + ", ".join(sorted(MODELLED)))
    role = value.get("kv_role")
    if role is not None and role not in ROLES:
        raise InputError(f"kv_role must be one of {sorted(ROLES)}, got {role!r}", where=f"{where}: kv_role")
    extra = value.get("kv_connector_extra_config") or {}
    if not isinstance(extra, Mapping):
        raise InputError("kv_connector_extra_config must be a mapping", where=where)
    children: tuple[KvTransferOptions, ...] = ()
    if connector == "MultiConnector":
        subs = extra.get("connectors") or []
        if not isinstance(subs, list) or not subs:
            raise InputError("MultiConnector lists no connectors", where=f"{where}: kv_connector_extra_config")
        children = tuple(read_config(dict(sub, kv_role=sub.get("kv_role", role)), where=f"{where}.connectors[{i}]",
                                     connectors=connectors, release=release) for i, sub in enumerate(subs))
    buffer = value.get("kv_buffer_size")
    return KvTransferOptions(connector=connector, role=role, buffer_device=str(value.get("kv_buffer_device") or "cuda"),
                             buffer_bytes=int(float(buffer)) if buffer is not None else None,
                             extra=tuple(sorted((str(k), v if not isinstance(v, (list, dict)) else json.dumps(v, sort_keys=True))
                                                for k, v in extra.items())),
                             children=children, where=where)


def supports_hma(opts: KvTransferOptions, hma: frozenset | None) -> bool:
    """Whether vLLM keeps its hybrid KV cache manager with this connector. `hma`: the connectors with SupportsHMA in
    the release (option_rules.CONNECTORS_HMA); None where the release turns it off for every connector (until 0.21:
    config/vllm.py "turn HMA off for connector unless specifically enabled")."""
    if hma is None:
        return False
    if opts.connector == "MultiConnector":
        return all(supports_hma(child, hma) for child in opts.children)
    return opts.connector in hma


@dataclass(frozen=True)
class TransferTerms:
    connector: str
    role: str | None
    hybrid_manager_off: bool  # the connector turns vLLM's hybrid KV cache manager off
    gpu_runtime_bytes: int  # GPU memory the connector allocates after the pool is sized (outside the budget)
    host_bytes_per_gpu: int  # pinned host memory per GPU
    bytes_per_token_per_rank: int  # KV one prompt token sends from one TP rank
    bytes_per_token: int  # ... from every TP rank together
    notes: tuple[str, ...]


def terms(opts: KvTransferOptions, *, token_bytes_per_rank: int, tp: int, gpu_pool_bytes: int | None,
          hma: frozenset | None) -> TransferTerms:
    """The connector's buffers and what one prompt token of KV costs to move."""
    notes: list[str] = []
    gpu = host = 0
    for leaf in opts.children or (opts,):
        if leaf.connector == "P2pNcclConnector":
            gpu += leaf.buffer_bytes if leaf.buffer_bytes is not None else P2P_DEFAULT_BUFFER
            pool_gib = float(leaf.extra_value("mem_pool_size_gb", P2P_DEFAULT_POOL_GIB))
            pool = int(pool_gib * 2**30)
            host += 1 << (pool - 1).bit_length()  # TensorMemoryPool rounds to a power of two
            notes.append("P2pNcclConnector receives KV into GPU tensors of up to kv_buffer_size bytes after the pool is "
                         "sized (outside gpu_memory_utilization) and keeps a pinned host pool")
        elif leaf.connector.startswith("Nixl") and leaf.buffer_device == "cpu":
            if gpu_pool_bytes is None:
                raise UnsupportedError("NIXL's host buffer mirrors the KV pool, which needs a GPU to size", where=leaf.where)
            host += gpu_pool_bytes
            notes.append("NIXL with kv_buffer_device cpu mirrors the whole KV cache in host memory")
    hma_off = not supports_hma(opts, hma)
    if hma_off:
        notes.append(f"{opts.connector} does not support vLLM's hybrid KV cache manager: vLLM turns it off "
                     "(sliding-window layers are charged the whole max_model_len; hybrid Mamba models do not start)")
    return TransferTerms(connector=opts.connector, role=opts.role, hybrid_manager_off=hma_off, gpu_runtime_bytes=gpu,
                         host_bytes_per_gpu=host, bytes_per_token_per_rank=token_bytes_per_rank,
                         bytes_per_token=token_bytes_per_rank * tp, notes=tuple(notes))


# per-direction bandwidth of one GPU's link to its peers in a node, by the catalog's interconnect and architecture
# (datasheets quote NVLink bidirectional: H100/H200 900 GB/s = 450 each way, B200 1.8 TB/s, A100 600 GB/s, V100
# 300 GB/s; PCIe x16 Gen4 32 GB/s and Gen5 64 GB/s each way)
LINK_BYTES_PER_S = {
    ("nvlink", "volta"): 150 * 10**9, ("nvlink", "ampere"): 300 * 10**9, ("nvlink", "hopper"): 450 * 10**9,
    ("nvlink", "blackwell"): 900 * 10**9,
    ("pcie", "turing"): 16 * 10**9, ("pcie", "ampere"): 32 * 10**9, ("pcie", "ada"): 32 * 10**9,
    ("pcie", "hopper"): 64 * 10**9, ("pcie", "blackwell"): 64 * 10**9,
}


def link_of(given_bytes_per_s: int | None, hardware) -> tuple[int | None, str]:
    """(bytes a second, what it is) of the link a disaggregated server's KV travels: --link-bandwidth when given,
    else the catalog GPU's own link to its peers (LINK_BYTES_PER_S; None where the table has no figure for it)."""
    if given_bytes_per_s is not None:
        return given_bytes_per_s, "--link-bandwidth"
    facts = hardware.facts if hardware is not None and hardware.name else None
    if facts is None:
        return None, "--link-bandwidth"
    return (LINK_BYTES_PER_S.get((facts.interconnect, facts.architecture)),
            f"{facts.interconnect} of one {facts.name} (per direction, within a node)")


@dataclass(frozen=True)
class LinkNeed:
    rate: float  # requests per second
    prompt_tokens: int
    bytes_per_request: int  # every TP rank together
    bytes_per_s: float  # the deployment
    bytes_per_s_per_gpu: float  # one TP rank's share
    link_bytes_per_s: int | None  # the link compared against
    link: str  # what it is
    utilisation: float | None  # bytes_per_s_per_gpu / link


def link_need(t: TransferTerms, *, rate: float, prompt_tokens: int, tp: int, link_bytes_per_s: int | None, link: str) -> LinkNeed:
    per_request = t.bytes_per_token * prompt_tokens
    per_s = per_request * rate
    per_gpu = per_s / tp
    return LinkNeed(rate=rate, prompt_tokens=prompt_tokens, bytes_per_request=per_request, bytes_per_s=per_s,
                    bytes_per_s_per_gpu=per_gpu, link_bytes_per_s=link_bytes_per_s, link=link,
                    utilisation=per_gpu / link_bytes_per_s if link_bytes_per_s else None)
