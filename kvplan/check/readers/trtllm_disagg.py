"""`trtllm-serve disaggregated -c disagg_config.yaml`: the context and generation server groups of a TensorRT-LLM
disaggregated deployment, each judged as its own deployment (its own tensor parallel size, kv_cache_config,
cache_transceiver_config, speculative_config, ...), per instance.

Read the way TensorRT-LLM reads it (tensorrt_llm/llmapi/disagg_utils.py extract_disagg_cfg, extract_ctx_gen_cfgs,
extract_router_config; commands/serve.py disaggregated_mpi_worker):
- the keys extract_disagg_cfg names (hostname, port, disagg_cluster, conditional_disagg_config, ...) belong to the
  disaggregated server itself; every other top-level key is inherited by both groups, and a group that sets the
  same key to another value is refused ("specified both in the top-level and in the ... section, but with
  different values");
- a group's num_instances and urls (as many urls as instances) say how many servers it runs; `router` is popped;
- each server's arguments go through get_llm_args and update_llm_args_with_extra_dict, as `trtllm-serve` does:
  `free_gpu_memory_fraction` builds a kv_cache_config, which a kv_cache_config of the group's own replaces.
The LLM-API mapping of each group is then judged by trtllm_serve.read_llm_api.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from kvplan.check.items import Skip, Workload
from kvplan.check.report import FORMAT_TRTLLM_DISAGG
from kvplan.core.errors import InputError
from kvplan.check.readers.trtllm_serve import yaml_key
from kvplan.check.readers import claims as formats

# the format test, apart from the reader (readers/claims.py), still answers here
ROLES = formats.TRTLLM_ROLES
claims = formats.trtllm_disagg

# extract_disagg_cfg's own parameters: the disaggregated server's, not inherited by the groups
SERVER_KEYS = frozenset({"hostname", "port", "max_retries", "perf_metrics_max_requests", "return_perf_metrics",
                         "perf_metrics_output_dir", "conditional_disagg_config", "otlp_config", "disagg_cluster",
                         "node_id", "schedule_style", "allow_request_chat_template", "gen_strip_message_history",
                         "gen_tokids_ctxbytes", "num_workers", "disagg_coordinator_url", *ROLES})
# a group's keys that are not LLM-API options (extract_ctx_gen_cfgs, extract_router_config)
GROUP_KEYS = frozenset({"num_instances", "urls", "router"})


def server_groups(doc: Mapping, *, where: str) -> list[tuple[str, dict, int]]:
    """(role, the LLM-API mapping one server of the group starts with, instances) for each group."""
    inherited = {str(k): v for k, v in doc.items() if k not in SERVER_KEYS}
    out = []
    for role in ROLES:
        group = doc.get(role)
        if group is None:
            continue
        if not isinstance(group, Mapping):
            raise InputError(f"{role} must be a mapping", where=f"{where}: {role}")
        own = {str(k): v for k, v in group.items()}
        for key, value in inherited.items():
            if key in own and own[key] != value:
                raise InputError(f"TensorRT-LLM refuses it: {key} is set both at the top level and in {role}, with "
                                 "different values (disagg_utils.extract_disagg_cfg)", where=f"{where}: {role}.{key}",
                                 hint="set it in one place")
        merged = {**inherited, **own}
        instances = merged.get("num_instances", 1)
        if isinstance(instances, bool) or not isinstance(instances, int) or instances < 1:
            raise InputError(f"num_instances must be a whole number of at least 1, got {instances!r}",
                             where=f"{where}: {role}.num_instances")
        urls = merged.get("urls")
        if urls is not None and (not isinstance(urls, list) or len(urls) != instances):
            raise InputError(f"TensorRT-LLM refuses it: {len(urls) if isinstance(urls, list) else urls!r} urls for "
                             f"{instances} instance(s) (extract_ctx_gen_cfgs)", where=f"{where}: {role}.urls",
                             hint="one url per instance")
        args = {k: v for k, v in merged.items() if k not in GROUP_KEYS}
        out.append((role.replace("_servers", ""), llm_args(args), instances))
    return out


def llm_args(args: Mapping) -> dict:
    """A server's arguments as get_llm_args + update_llm_args_with_extra_dict leave them: free_gpu_memory_fraction
    becomes kv_cache_config's, unless the server's own kv_cache_config replaces it."""
    out = dict(args)
    fraction = out.pop("free_gpu_memory_fraction", None)
    if fraction is not None and out.get("kv_cache_config") is None:
        out["kv_cache_config"] = {"free_gpu_memory_fraction": fraction}
    return out


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    """One workload per server group; each is judged per instance."""
    items = []
    groups = server_groups(doc, where=where)
    if groups and not any(args.get("model") for _, args, _ in groups) and all(
            isinstance(doc.get(f"{role}_servers"), Mapping) and doc[f"{role}_servers"].get("urls") for role, _, _ in groups):
        # `trtllm-serve disaggregated -c` starts only the proxy; with urls and no model its servers are started by
        # their own `trtllm-serve MODEL --config ...` commands (which are judged where they are written)
        return [Skip(source, document, Path(source).stem, FORMAT_TRTLLM_DISAGG, "a disaggregated proxy config: its "
                     "context and generation servers run at the urls it lists, started by their own trtllm-serve commands")]
    for role, args, instances in groups:
        tp = args.get("tensor_parallel_size") or 1
        pp = args.get("pipeline_parallel_size") or 1
        notes = [f"{role} servers: {instances} instance(s), judged per instance"
                 + (f" ({instances} x {tp * pp} GPUs in all)" if isinstance(tp, int) and isinstance(pp, int) else "")]
        if "free_gpu_memory_fraction" in doc and (doc.get(f"{role}_servers") or {}).get("kv_cache_config") is not None:
            notes.append(f"{role} servers: their kv_cache_config replaces the one the top-level free_gpu_memory_fraction "
                         "builds (update_llm_args_with_extra_dict)")
        items.append(Workload(source=source, document=document, name=f"{role} servers", fmt=FORMAT_TRTLLM_DISAGG,
                              where=f"{where}: {role}_servers", base_dir=base_dir, engine_config=("trtllm", args),
                              key=yaml_key, flag_style=False, notes=tuple(notes), requests_gpus=True))
    return items
