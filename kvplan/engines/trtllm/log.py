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
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable

from kvplan.engines.logtext import NUMBER as _NUM  # a printed number, one group
from kvplan.engines.logtext import LineRow, dispatch, lines as logical_lines, spaced

__all__ = ["TrtllmLogFigures", "parse_trtllm_log"]

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


@dataclass
class _Reading:
    """What the lines of one TensorRT-LLM start-up give, gathered line by line."""

    top: dict = field(default_factory=dict)
    allocated: list[tuple[Decimal, int]] = field(default_factory=list)  # (GiB, tokens) of each pool allocated
    budgets: list[Decimal] = field(default_factory=list)
    availables: list[tuple[Decimal, Decimal]] = field(default_factory=list)  # (total, available) GiB, each rank
    ranks: set[int] = field(default_factory=set)
    backends: set[str] = field(default_factory=set)
    found: bool = False  # a KV-cache line was seen

    def first(self, key: str, value) -> None:
        if value is not None and self.top.get(key) is None:
            self.top[key] = value


def _first(key: str, read: Callable[[str], Any] = int, *, kv_line: bool = False) -> Callable[[_Reading, str, Any], None]:
    """A handler that keeps the match's first group, read, under `key` the first time a line gives it (`kv_line`:
    the line is one of the KV-cache lines that make the text a TensorRT-LLM log)."""
    def handle(r: _Reading, msg: str, m) -> None:
        r.first(key, read(m[1]))
        if kv_line:
            r.found = True
    return handle


def _on_allocated(r: _Reading, msg: str, m) -> None:
    gib = Decimal(m[1]) / (1024 if m[2] == "MiB" else 1)
    r.allocated.append((gib, int(m[3])))
    r.found = True


def _on_primary(r: _Reading, msg: str, m) -> None:
    r.top["primary_blocks"] = int(m[1])
    r.found = True


def _on_mem_usage(r: _Reading, msg: str, m) -> None:
    r.availables.append((Decimal(m[1]), Decimal(m[2])))
    r.found = True


def _on_peak(r: _Reading, msg: str, m) -> None:
    r.first("peak_gib", Decimal(m[1]))
    r.budgets.append(Decimal(m[2]))
    r.first("free_fraction", m[3])
    if m[5] is not None:
        r.first("total_gib", Decimal(m[5]))
    r.found = True


def _on_runtime(r: _Reading, msg: str, m) -> None:
    r.top["max_seq_len"] = int(m[1])
    r.top["max_num_tokens"] = int(m[3])
    r.top["max_batch_size"] = int(m[4] or m[2])


_TRT_GPT_KEYS = {"maxBatchSize": "max_batch_size", "maxSequenceLen": "max_seq_len", "maxNumTokens": "max_num_tokens",
                 "maxBeamWidth": "max_beam_width"}


def _on_buffers(r: _Reading, msg: str, m) -> None:
    value = Decimal(m[1]) / (1024 if m[2] == "MiB" else 1)
    r.first("runtime_buffers_gib" if m[3] == "runtime buffers" else "decoder_gib", value)


def _engine_version_alone(msg: str):
    """The engine's config version, on a line that names no TensorRT-LLM version (which wins)."""
    return None if _VERSION.search(msg) else _ENGINE_VERSION.search(msg)


def _keep(value: str) -> str:
    return value


# TensorRT-LLM's lines and what each gives; unlike the other readers' tables every row that finds a line reads it
_LINES: tuple[LineRow, ...] = (
    (_VERSION.search, _first("version", _keep)),
    (_engine_version_alone, _first("engine_version", _keep)),
    (_ALLOCATED.search, _on_allocated),
    (_PRIMARY.search, _on_primary),
    (_TPB.search, _first("tokens_per_block")),
    (_MEM_USAGE.search, _on_mem_usage),
    (_ALLOCATE_BYTES.search, _first("kv_cache_bytes", kv_line=True)),
    (_USING_TOKENS.search, _first("using_tokens", kv_line=True)),
    (_WEIGHTS_IN.search, _first("weights_inside_gib", Decimal, kv_line=True)),
    (_WEIGHTS_OUT.search, _first("weights_outside_gib", Decimal, kv_line=True)),
    (_DYNAMIC.search, _first("activation_gib", Decimal, kv_line=True)),
    (_OUTSIDE.search, _first("outside_torch_gib", Decimal, kv_line=True)),
    (_PEAK.search, _on_peak),
    (_ESTIMATED_TOKENS.search, _first("estimated_max_tokens")),
    (_BOTH_SET.search, _first("free_fraction", _keep)),
    (_RUNTIME.search, _on_runtime),
    (_TRT_GPT.search, lambda r, msg, m: r.first(_TRT_GPT_KEYS[m[1]], int(m[2]))),
    (_ENGINE_SIZE.search, _first("engine_size_mib")),
    (_BUFFERS.search, _on_buffers),
    (_CONTEXT_MEM.search, lambda r, msg, m: r.first("execution_context_mib",
                                                    Decimal(m[1]) * (1024 if m[2] == "GiB" else 1))),
    (_MPI.search, _first("mpi_size")),
    (_TP_ARG.search, _first("tp_arg")),
    (_PP_ARG.search, _first("pp_arg")),
    (_SUMMARY_TP.search, _first("tp_summary")),
    (_SUMMARY_PP.search, _first("pp_summary")),
    (_SUMMARY_MODEL.search, _first("model", _keep)),
    (_SUMMARY_KV.search, _first("kv_dtype", _keep)),
    (_SUMMARY_QUANT.search, _first("quantization", _keep)),
    (_MODEL_ARG.search, _first("model", _keep)),
    (_TP_FLAG.search, _first("tp_flag")),
)


def _read_line(r: _Reading, msg: str) -> None:
    if "[TensorRT-LLM]" in msg or "[TRT-LLM]" in msg:
        r.top["evidence"] = True
    if _PYTORCH.search(msg):
        r.backends.add("pytorch")
    if _TENSORRT.search(msg):
        r.backends.add("tensorrt")
    dispatch(_LINES, msg, r, msg, every=True)
    for m in _RANK.finditer(msg):
        if "rank" in msg.lower() and ("GPU" in msg or "executor" in msg or "TP group" in msg):
            r.ranks.add(int(m[1]))


def _layout(r: _Reading) -> tuple[int | None, str | None, int | None]:
    """(TP, where it was read, PP)."""
    top = r.top
    tp, tp_source = None, None
    for key, source in (("tp_summary", "benchmark summary"), ("tp_arg", "LLM arguments"), ("tp_flag", "command line"),
                        ("mpi_size", "MPI size")):
        if top.get(key) is not None:
            tp, tp_source = top[key], source
            break
    pp = top.get("pp_summary") or top.get("pp_arg")
    if top.get("mpi_size") is not None and tp_source == "MPI size" and pp not in (None, 1):
        tp = top["mpi_size"] // pp
    return tp, tp_source, pp


def parse_trtllm_log(text: str) -> TrtllmLogFigures:
    """The figures of one TensorRT-LLM start-up log; ValueError when the text holds none of its lines. Every line
    is read by each row of _LINES whose pattern finds it."""
    r = _Reading()
    for line in logical_lines(text):
        _read_line(r, line.text)
    top, backends = r.top, r.backends
    if not r.found and not top.get("version") and not backends and not top.get("evidence"):
        raise ValueError("not a TensorRT-LLM start-up log: found none of its KV-cache lines ([MemUsageChange] Allocated "
                         "... for max tokens in paged KV cache, Number of blocks in KV cache primary pool, Memory usage "
                         "when calculating max tokens)")
    tp, tp_source, pp = _layout(r)
    pool = r.allocated[-1] if r.allocated else (None, None)
    warm = r.allocated[0] if len(r.allocated) > 1 else (None, None)
    # the binding rank: the least memory available when the pool was sized
    avail = min(r.availables, key=lambda x: x[1]) if r.availables else (None, None)
    return TrtllmLogFigures(
        version=top.get("version") or top.get("engine_version"),
        backend="pytorch" if "pytorch" in backends else ("tensorrt" if "tensorrt" in backends else None),
        model=top.get("model"), tp_size=tp, pp_size=pp, tp_source=tp_source,
        tp_at_least=(max(r.ranks) + 1) if r.ranks and tp is None else None,
        kv_dtype=top.get("kv_dtype"), quantization=top.get("quantization"), tokens_per_block=top.get("tokens_per_block"),
        primary_blocks=top.get("primary_blocks"), pool_gib=pool[0], pool_tokens=pool[1], warmup_pool_gib=warm[0],
        warmup_pool_tokens=warm[1], total_gib=top.get("total_gib") or avail[0], available_gib=avail[1],
        kv_cache_bytes=top.get("kv_cache_bytes"), using_tokens=top.get("using_tokens"),
        weights_inside_gib=top.get("weights_inside_gib"), weights_outside_gib=top.get("weights_outside_gib"),
        activation_gib=top.get("activation_gib"), outside_torch_gib=top.get("outside_torch_gib"),
        peak_gib=top.get("peak_gib"), kv_budget_gib=min(r.budgets) if r.budgets else None,
        free_fraction=top.get("free_fraction"), estimated_max_tokens=top.get("estimated_max_tokens"),
        max_seq_len=top.get("max_seq_len"), max_batch_size=top.get("max_batch_size"),
        max_num_tokens=top.get("max_num_tokens"), engine_size_mib=top.get("engine_size_mib"),
        runtime_buffers_gib=top.get("runtime_buffers_gib"), decoder_gib=top.get("decoder_gib"),
        execution_context_mib=top.get("execution_context_mib"),
    )
