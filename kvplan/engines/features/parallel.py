"""Expert, data and context parallelism: how they spread weights and KV over GPUs. Pure.

vLLM 0.33.0 (config/parallel.py ParallelConfig; model_executor/layers/fused_moe/config.py
FusedMoEParallelConfig.make; fused_moe/expert_map_manager.py):

- data parallelism (--data-parallel-size D): D engine cores, each with its own TP x PCP x PP workers and its own
  KV pool; the deployment holds D times the requests one pool holds. Attention and dense layers are replicated
  per replica (sharded by TP only);
- MoE layers are sharded over the TP x PCP x DP ranks of the whole deployment: without expert parallelism as
  tensor parallelism flattened across them (each rank a 1 / (TP x PCP x DP) slice of every expert), with
  --enable-expert-parallel as whole experts, E // EP each and one more on the first E % EP ranks (EP = TP x PCP x
  DP), plus num_redundant_experts with EPLB. A rank's expert weights are therefore the expert weights x
  ceil-share / EP in both cases (equal when EP divides the experts);
- decode context parallelism (--decode-context-parallel-size C, the TP ranks reused when PCP is 1): the KV cache is
  split along the sequence over C ranks, so a request of M tokens takes cdiv(M, C) tokens of blocks on each rank
  (v1/kv_cache_interface.py FullAttentionSpec.max_memory_usage_bytes, max_num_blocks_per_req); for GQA, C must not
  exceed TP / KV heads and must divide the query heads per KV head (config/model.py verify_with_parallel_config);
  TP must be a multiple of C (ParallelConfig.__post_init__ checks); Mamba state is not split;
- prefill context parallelism (--prefill-context-parallel-size P): P x as many GPUs (world = PP x TP x PCP), the
  KV cache replicated over them unless DCP spans the PCP axis (C = P or C = TP x P);
- vLLM 0.19.0 (v1/kv_cache_interface.py): full attention needs cdiv(M, DCP x PCP) tokens of blocks per rank, and
  logs "GPU KV cache size" times DCP x PCP.
A deployment spreads over nodes of `gpus_per_node` GPUs; TP beyond one node is said so (its all-reduce crosses the
network).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.spec import ModelSpec


@dataclass(frozen=True)
class ParallelOptions:
    data_parallel_size: int = 1
    expert_parallel: bool = False
    decode_context_parallel_size: int = 1
    prefill_context_parallel_size: int = 1
    redundant_experts: int = 0  # EPLB num_redundant_experts
    all2all_backend: str | None = None  # None: allgather_reducescatter (vLLM's default)
    nodes: int | None = None  # --nnodes
    gpus_per_node: int | None = None
    where: str = "data_parallel_size"

    @property
    def default(self) -> bool:
        return self == ParallelOptions(where=self.where)


# all2all backends whose buffers kvplan does not model (DeepEP, pplx, NIXL EP, mori allocate GBs of NVL/RDMA buffers)
MODELLED_ALL2ALL = frozenset({None, "allgather_reducescatter", "naive"})


@dataclass(frozen=True)
class ParallelTerms:
    gpus: int  # every GPU of the deployment: TP x PP x PCP x DP
    replicas: int  # DP: engines, each with its own KV pool
    ep_size: int  # ranks the experts spread over (TP x PCP x DP); 1 for a dense model
    experts_per_rank: int | None  # routed experts on the most loaded rank (with EP), None without experts or EP
    expert_share: tuple[int, int] | None  # (numerator, denominator): the fraction of all expert weights on one rank
    kv_shards: int  # DCP: ranks a request's tokens are split over
    kv_replicas_pcp: int  # PCP ranks holding copies of the same KV
    nodes: int | None
    notes: tuple[str, ...]


def validate(spec: ModelSpec, opts: ParallelOptions, *, tp: int, pp: int) -> None:
    where = opts.where
    for name, value in (("data_parallel_size", opts.data_parallel_size),
                        ("decode_context_parallel_size", opts.decode_context_parallel_size),
                        ("prefill_context_parallel_size", opts.prefill_context_parallel_size)):
        if value < 1:
            raise InputError(f"{name} must be at least 1, got {value}", where=where)
    dcp, pcp = opts.decode_context_parallel_size, opts.prefill_context_parallel_size
    if pcp == 1 and tp % dcp:
        raise InputError(f"vLLM refuses it: tp_size={tp} must be divisible by dcp_size={dcp}", where=where)
    if pcp > 1 and dcp not in (1, pcp, tp * pcp):
        raise InputError(f"vLLM refuses it: with PCP {pcp}, DCP must be 1, {pcp} or {tp * pcp}, got {dcp}", where=where)
    if dcp > 1:
        attention = [layer for layer in spec.layer_specs if layer.headed or layer.latent]
        if not attention:
            raise UnsupportedError("decode context parallelism of a model without attention layers", where=where)
        if all(layer.headed for layer in attention):
            kv = max(layer.kv_heads for layer in attention)
            if tp <= kv:
                raise InputError(f"vLLM refuses it: decode context parallelism for GQA/MQA requires tensor parallel size "
                                 f"({tp}) greater than the model's KV heads ({kv})", where=where)
            if dcp > tp // kv:
                raise InputError(f"vLLM refuses it: decode-context-parallel-size ({dcp}) exceeds the maximum ({tp // kv}) "
                                 f"for tensor parallel size {tp} and {kv} KV heads", where=where)
            if (spec.attention_heads // kv) % dcp:
                raise InputError(f"vLLM refuses it: the query heads per KV head ({spec.attention_heads // kv}) must be "
                                 f"divisible by decode-context-parallel-size ({dcp})", where=where)
    if opts.expert_parallel and opts.all2all_backend not in MODELLED_ALL2ALL:
        raise UnsupportedError(f"the {opts.all2all_backend} all2all backend's communication buffers are not modelled",
                               where=where, hint="allgather_reducescatter (vLLM's default) and naive are")
    if opts.redundant_experts and not opts.expert_parallel:
        raise InputError("vLLM refuses num_redundant_experts without expert parallelism (EPLB)", where=where)


def terms(spec: ModelSpec, opts: ParallelOptions, *, tp: int, pp: int) -> ParallelTerms:
    validate(spec, opts, tp=tp, pp=pp)
    dp, dcp, pcp = opts.data_parallel_size, opts.decode_context_parallel_size, opts.prefill_context_parallel_size
    gpus = tp * pp * pcp * dp
    notes: list[str] = []
    ep = tp * pcp * dp
    experts_per_rank = share = None
    if spec.moe is not None:
        experts = spec.moe.experts + opts.redundant_experts
        if opts.expert_parallel and ep > 1:
            experts_per_rank = -(-experts // ep)
            share = (experts_per_rank, spec.moe.experts)
            notes.append(f"expert parallelism over {ep} ranks (TP {tp} x PCP {pcp} x DP {dp}): {experts_per_rank} of "
                         f"{experts} experts on the most loaded rank" + (f" ({opts.redundant_experts} redundant)" if opts.redundant_experts else ""))
        else:
            share = (1, ep)
            if dp * pcp > 1:
                notes.append(f"MoE layers sharded over {ep} ranks (TP {tp} flattened across DP {dp} x PCP {pcp}): each "
                             f"rank holds 1/{ep} of every expert")
    elif opts.expert_parallel:
        notes.append("--enable-expert-parallel on a dense model changes nothing")
    if dp > 1:
        notes.append(f"data parallelism: {dp} replicas, each its own engine and KV pool on {tp * pp * pcp} GPU(s); "
                     "attention and dense weights are replicated per replica")
    kv_replicas = pcp if dcp not in (pcp, tp * pcp) or pcp == 1 else 1
    if pcp > 1 and kv_replicas > 1:
        notes.append(f"prefill context parallelism: {pcp} x the GPUs; each PCP rank keeps its own copy of the KV cache")
    if dcp > 1:
        notes.append(f"decode context parallelism: each request's KV split over {dcp} ranks along the sequence "
                     f"(cdiv(M, {dcp}) tokens of blocks per rank)")
    nodes = opts.nodes
    if opts.gpus_per_node:
        nodes = nodes or -(-gpus // opts.gpus_per_node)
        if tp * pcp > opts.gpus_per_node:
            notes.append(f"TP x PCP = {tp * pcp} spans more than one node of {opts.gpus_per_node} GPUs: its all-reduce "
                         "crosses the network")
        elif pp > 1 and tp * pcp * pp > opts.gpus_per_node:
            notes.append(f"pipeline stages on {nodes} nodes: TP within a node, PP across nodes")
        if dp > 1 and gpus > opts.gpus_per_node:
            notes.append(f"{dp} DP replicas over {nodes} nodes")
    return ParallelTerms(gpus=gpus, replicas=dp, ep_size=ep if spec.moe is not None else 1,
                         experts_per_rank=experts_per_rank, expert_share=share, kv_shards=dcp, kv_replicas_pcp=kv_replicas,
                         nodes=nodes, notes=tuple(notes))


def expert_bytes_per_rank(expert_bytes: int, share: tuple[int, int]) -> int:
    """A rank's part of the routed experts' weights."""
    num, den = share
    return -(-expert_bytes * num // den)
