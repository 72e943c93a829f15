"""Read the figures a TensorRT-LLM start-up log prints about memory and its paged KV pool, as users paste it. Pure,
stdlib only. Paste forms are undone by kvplan/engines/logtext.py; each line is searched for TensorRT-LLM's phrases.

Two backends print different lines (research/trtllm/releases.md):
- the TensorRT-engine runtime (C++; trtllm-build engines, Triton's tensorrtllm_backend): "Loaded engine size: N MiB",
  "TRTGptModel maxBatchSize / maxSequenceLen / maxNumTokens: N", "[MemUsageChange] Allocated X GB GPU memory for
  runtime buffers / decoder", "Memory usage when calculating max tokens in paged kv cache: total: T GiB, available:
  A GiB", "Number of blocks in KV cache primary pool: B", "Number of tokens per block: 32.", 0.5-0.8: "Allocate B
  bytes for k/v cache.", "Using N [total ]tokens in paged KV cache[, and M blocks per sequence]";
- the PyTorch backend (trtllm-serve, trtllm-bench, the LLM API; "[TRT-LLM] [I]" lines): "Memory used after loading
  model weights (inside|outside torch) in memory usage profiling: X GiB", "Memory dynamically allocated during
  inference (inside torch) …: X GiB", "Memory used outside torch (e.g., NCCL and CUDA graphs) …: X GiB", "Peak memory
  during memory usage profiling (torch + non-torch): P GiB, available KV cache memory when calculating max tokens:
  K GiB, fraction is set F, kv size is S. device total memory T GiB", "Estimated max tokens in KV cache : N",
  "max_seq_len=…, max_num_requests=…, max_num_tokens=…";
- both: "[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (N)" (the PyTorch backend prints it twice:
  the warm-up pool, then the real one), "Max KV cache blocks per sequence: …, tokens per block=32, primary
  blocks=B, secondary blocks=0".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from kvplan.engines.logtext import lines as logical_lines, spaced

__all__ = ["TrtllmLogFigures", "parse_trtllm_log"]

_NUM = r"(-?\d+(?:\.\d+)?)"
_VERSION = spaced(r"TensorRT[- ]LLM version: (\d+\.\d+\S*)")
_ENGINE_VERSION = spaced(r"Engine version (\d+\.\d+\S*) found in the config file")
_ALLOCATED = spaced(rf"\[MemUsageChange\] Allocated {_NUM} (GiB|MiB) for max tokens in paged KV cache \((\d+)\)")
_PRIMARY = spaced(r"(?:Number of blocks in KV cache primary pool: |primary blocks=)(\d+)")
_TPB = spaced(r"(?:Number of tokens per block: |tokens per block=)(\d+)")
_MEM_USAGE = spaced(rf"Memory usage when calculating max tokens in paged kv cache: total: {_NUM} GiB, available: {_NUM} GiB")
_ALLOCATE_BYTES = spaced(r"Allocate (\d+) bytes for k/v cache")
_USING_TOKENS = spaced(r"Using (\d+) (?:total )?tokens in paged KV cache")
_WEIGHTS_IN = spaced(rf"Memory used after loading model weights \(inside torch\) in memory usage profiling: {_NUM} GiB")
_WEIGHTS_OUT = spaced(rf"Memory used after loading model weights \(outside torch\) in memory usage profiling: {_NUM} GiB")
_DYNAMIC = spaced(rf"Memory dynamically allocated during inference \(inside torch\) in memory usage profiling: {_NUM} GiB")
_OUTSIDE = spaced(rf"Memory used outside torch \(e\.g\., NCCL and CUDA graphs\) in memory usage profiling: {_NUM} GiB")
_PEAK = spaced(rf"Peak memory during memory usage profiling \(torch \+ non-torch\): {_NUM} GiB, available KV cache memory "
               rf"when calculating max tokens: {_NUM} GiB, fraction is set ([\d.]+)(?:, kv size is (\d+))?"
               rf"(?:.*?device total memory {_NUM} GiB)?")
_ESTIMATED_TOKENS = spaced(r"Estimated max tokens in KV cache ?: (\d+)")
_BOTH_SET = spaced(r"Both free_gpu_memory_fraction and max_tokens are set \(to ([\d.]+) and (\d+)")
_RUNTIME = spaced(r"max_seq_len=(\d+), max_num_requests=(\d+), max_num_tokens=(\d+)(?:, max_batch_size=(\d+))?")
_ENGINE_SIZE = spaced(r"Loaded engine size: (\d+) MiB")
_TRT_GPT = spaced(r"TRTGptModel (maxBatchSize|maxSequenceLen|maxNumTokens|maxBeamWidth): (\d+)")
_BUFFERS = spaced(rf"\[MemUsageChange\] Allocated {_NUM} (GB|MiB|GiB) GPU memory for (runtime buffers|decoder)")
_CONTEXT_MEM = spaced(rf"\[MemUsageChange\] Allocated {_NUM} (MiB|GiB) for execution context memory")
_MPI = spaced(r"MPI size: (\d+)")
_RANK = re.compile(r"\b[Rr]ank (\d+)\b")
_TP_ARG = re.compile(r"\btensor_parallel_size=(\d+)")
_PP_ARG = re.compile(r"\bpipeline_parallel_size=(\d+)")
_SUMMARY_TP = spaced(r"^TP Size: (\d+)")
_SUMMARY_PP = spaced(r"^PP Size: (\d+)")
_SUMMARY_MODEL = re.compile(r"^Model:\s+(\S+)")
_SUMMARY_KV = re.compile(r"^KV Cache Dtype:\s+(\S+)")
_SUMMARY_QUANT = re.compile(r"^Quantization:\s+(\S+)")
_MODEL_ARG = re.compile(r"\bmodel='([^']+)'")
_TP_FLAG = re.compile(r"(?:^|\s)--tp[_-]size(?:=|\s+)(\d+)")
_PYTORCH = spaced(r"PyTorchConfig\(|PYTORCH BACKEND|Memory used after loading model weights|tensorrt_llm/_torch|"
                  r"available KV cache memory when calculating max tokens")
_TENSORRT = spaced(r"TRTGptModel|Loaded engine size|Memory usage when calculating max tokens in paged kv cache|"
                   r"Allocate \d+ bytes for k/v cache|Using \d+ (?:total )?tokens in paged KV cache")


@dataclass(frozen=True)
class TrtllmLogFigures:
    version: str | None = None
    backend: str | None = None  # "pytorch" | "tensorrt" as the lines show
    model: str | None = None
    tp_size: int | None = None
    pp_size: int | None = None
    tp_source: str | None = None
    tp_at_least: int | None = None
    kv_dtype: str | None = None  # as the benchmark summary prints it ("FP8")
    quantization: str | None = None  # the benchmark summary's ("FP8", "None")
    tokens_per_block: int | None = None
    primary_blocks: int | None = None  # the last one printed (the real pool)
    pool_gib: Decimal | None = None  # "Allocated X GiB for max tokens in paged KV cache (N)", the last
    pool_tokens: int | None = None
    warmup_pool_gib: Decimal | None = None  # the first of two (PyTorch backend)
    warmup_pool_tokens: int | None = None
    total_gib: Decimal | None = None  # "total: T GiB" / "device total memory T GiB"
    available_gib: Decimal | None = None  # "available: A GiB" (TensorRT runtime; the minimum over ranks)
    kv_cache_bytes: int | None = None  # "Allocate B bytes for k/v cache"
    using_tokens: int | None = None  # "Using N tokens in paged KV cache"
    weights_inside_gib: Decimal | None = None
    weights_outside_gib: Decimal | None = None
    activation_gib: Decimal | None = None  # dynamically allocated during inference (inside torch)
    outside_torch_gib: Decimal | None = None  # NCCL, CUDA graphs, context
    peak_gib: Decimal | None = None
    kv_budget_gib: Decimal | None = None  # "available KV cache memory when calculating max tokens"
    free_fraction: str | None = None  # as printed ("0.8999999761581421")
    estimated_max_tokens: int | None = None
    max_seq_len: int | None = None
    max_batch_size: int | None = None
    max_num_tokens: int | None = None
    engine_size_mib: int | None = None
    runtime_buffers_gib: Decimal | None = None
    decoder_gib: Decimal | None = None
    execution_context_mib: Decimal | None = None


def parse_trtllm_log(text: str) -> TrtllmLogFigures:
    """The figures of one TensorRT-LLM start-up log; ValueError when the text holds none of its lines."""
    top: dict = {}
    allocated: list[tuple[Decimal, int]] = []
    budgets: list[Decimal] = []
    availables: list[tuple[Decimal, Decimal]] = []
    ranks: set[int] = set()
    backends: set[str] = set()
    found = False

    def first(key, value):
        if value is not None and top.get(key) is None:
            top[key] = value

    for line in logical_lines(text):
        msg = line.text
        if "[TensorRT-LLM]" in msg or "[TRT-LLM]" in msg:
            top["evidence"] = True
        if _PYTORCH.search(msg):
            backends.add("pytorch")
        if _TENSORRT.search(msg):
            backends.add("tensorrt")
        if m := _VERSION.search(msg):
            first("version", m[1])
        elif m := _ENGINE_VERSION.search(msg):
            first("engine_version", m[1])
        if m := _ALLOCATED.search(msg):
            gib = Decimal(m[1]) / (1024 if m[2] == "MiB" else 1)
            allocated.append((gib, int(m[3])))
            found = True
        if m := _PRIMARY.search(msg):
            top["primary_blocks"] = int(m[1])
            found = True
        if m := _TPB.search(msg):
            first("tokens_per_block", int(m[1]))
        if m := _MEM_USAGE.search(msg):
            availables.append((Decimal(m[1]), Decimal(m[2])))
            found = True
        if m := _ALLOCATE_BYTES.search(msg):
            first("kv_cache_bytes", int(m[1]))
            found = True
        if m := _USING_TOKENS.search(msg):
            first("using_tokens", int(m[1]))
            found = True
        for pat, key in ((_WEIGHTS_IN, "weights_inside_gib"), (_WEIGHTS_OUT, "weights_outside_gib"),
                         (_DYNAMIC, "activation_gib"), (_OUTSIDE, "outside_torch_gib")):
            if m := pat.search(msg):
                first(key, Decimal(m[1]))
                found = True
        if m := _PEAK.search(msg):
            first("peak_gib", Decimal(m[1]))
            budgets.append(Decimal(m[2]))
            first("free_fraction", m[3])
            if m[5] is not None:
                first("total_gib", Decimal(m[5]))
            found = True
        if m := _ESTIMATED_TOKENS.search(msg):
            first("estimated_max_tokens", int(m[1]))
        if m := _BOTH_SET.search(msg):
            first("free_fraction", m[1])
        if m := _RUNTIME.search(msg):
            top["max_seq_len"] = int(m[1])
            top["max_num_tokens"] = int(m[3])
            top["max_batch_size"] = int(m[4] or m[2])
        if m := _TRT_GPT.search(msg):
            key = {"maxBatchSize": "max_batch_size", "maxSequenceLen": "max_seq_len", "maxNumTokens": "max_num_tokens",
                   "maxBeamWidth": "max_beam_width"}[m[1]]
            first(key, int(m[2]))
        if m := _ENGINE_SIZE.search(msg):
            first("engine_size_mib", int(m[1]))
        if m := _BUFFERS.search(msg):
            value = Decimal(m[1]) / (1024 if m[2] == "MiB" else 1)
            first("runtime_buffers_gib" if m[3] == "runtime buffers" else "decoder_gib", value)
        if m := _CONTEXT_MEM.search(msg):
            first("execution_context_mib", Decimal(m[1]) * (1024 if m[2] == "GiB" else 1))
        if m := _MPI.search(msg):
            first("mpi_size", int(m[1]))
        for m in _RANK.finditer(msg):
            if "rank" in msg.lower() and ("GPU" in msg or "executor" in msg or "TP group" in msg):
                ranks.add(int(m[1]))
        if m := _TP_ARG.search(msg):
            first("tp_arg", int(m[1]))
        if m := _PP_ARG.search(msg):
            first("pp_arg", int(m[1]))
        if m := _SUMMARY_TP.search(msg):
            first("tp_summary", int(m[1]))
        if m := _SUMMARY_PP.search(msg):
            first("pp_summary", int(m[1]))
        if m := _SUMMARY_MODEL.search(msg):
            first("model", m[1])
        if m := _SUMMARY_KV.search(msg):
            first("kv_dtype", m[1])
        if m := _SUMMARY_QUANT.search(msg):
            first("quantization", m[1])
        if m := _MODEL_ARG.search(msg):
            first("model", m[1])
        if m := _TP_FLAG.search(msg):
            first("tp_flag", int(m[1]))
    if not found and not top.get("version") and not backends and not top.get("evidence"):
        raise ValueError("not a TensorRT-LLM start-up log: found none of its KV-cache lines ([MemUsageChange] Allocated "
                         "... for max tokens in paged KV cache, Number of blocks in KV cache primary pool, Memory usage "
                         "when calculating max tokens)")
    tp, tp_source = None, None
    for key, source in (("tp_summary", "benchmark summary"), ("tp_arg", "LLM arguments"), ("tp_flag", "command line"),
                        ("mpi_size", "MPI size")):
        if top.get(key) is not None:
            tp, tp_source = top[key], source
            break
    pp = top.get("pp_summary") or top.get("pp_arg")
    if top.get("mpi_size") is not None and tp_source == "MPI size" and pp not in (None, 1):
        tp = top["mpi_size"] // pp
    pool = allocated[-1] if allocated else (None, None)
    warm = allocated[0] if len(allocated) > 1 else (None, None)
    # the binding rank: the least memory available when the pool was sized
    avail = min(availables, key=lambda x: x[1]) if availables else (None, None)
    return TrtllmLogFigures(
        version=top.get("version") or top.get("engine_version"),
        backend="pytorch" if "pytorch" in backends else ("tensorrt" if "tensorrt" in backends else None),
        model=top.get("model"), tp_size=tp, pp_size=pp, tp_source=tp_source,
        tp_at_least=(max(ranks) + 1) if ranks and tp is None else None,
        kv_dtype=top.get("kv_dtype"), quantization=top.get("quantization"), tokens_per_block=top.get("tokens_per_block"),
        primary_blocks=top.get("primary_blocks"), pool_gib=pool[0], pool_tokens=pool[1], warmup_pool_gib=warm[0],
        warmup_pool_tokens=warm[1], total_gib=top.get("total_gib") or avail[0], available_gib=avail[1],
        kv_cache_bytes=top.get("kv_cache_bytes"), using_tokens=top.get("using_tokens"),
        weights_inside_gib=top.get("weights_inside_gib"), weights_outside_gib=top.get("weights_outside_gib"),
        activation_gib=top.get("activation_gib"), outside_torch_gib=top.get("outside_torch_gib"),
        peak_gib=top.get("peak_gib"), kv_budget_gib=min(budgets) if budgets else None,
        free_fraction=top.get("free_fraction"), estimated_max_tokens=top.get("estimated_max_tokens"),
        max_seq_len=top.get("max_seq_len"), max_batch_size=top.get("max_batch_size"),
        max_num_tokens=top.get("max_num_tokens"), engine_size_mib=top.get("engine_size_mib"),
        runtime_buffers_gib=top.get("runtime_buffers_gib"), decoder_gib=top.get("decoder_gib"),
        execution_context_mib=top.get("execution_context_mib"),
    )
