"""Read the figures a vLLM start-up log prints about memory and the KV cache, as users paste it. Pure, stdlib only.

vLLM logs, per worker process, the terms of its KV-cache budget (weights, profiled activation peak, non-torch
memory, CUDA-graph estimate, the memory left for the cache) and, once per engine (0.10: once per worker), what
it made of that memory (blocks, tokens, concurrency). kvplan's vLLM engine model is compared with such logs;
this module turns one log's text into a frozen record. The paste forms (labels, colours, hard wraps, excerpts
without the `INFO MM-DD hh:mm:ss [file.py:N]` head) are undone by kvplan/engines/logtext.py; here each line's
text is searched for vLLM's own phrases.

Where each figure comes from (vLLM 0.19.0 file:function unless a release is named; research/vllm/releases.md):
- "worker init memory snapshot: ... free_memory=78.68GiB, total_memory=79.19GiB ..."  v1/worker/gpu_worker.py:init_device (DEBUG)
- "worker requested memory: 75.23GiB"                             v1/worker/gpu_worker.py:init_device (DEBUG)
- "Model loading took 12.56 GiB memory and ..."                   v1/worker/gpu_model_runner.py:load_model; 0.8.0
  "... 19.5904 GB and N seconds", 0.8.5-0.11 "... GiB and N seconds"; V0 "Loading model weights took 14.9888 GB"
  (worker/model_runner.py; GB there is bytes / 2**30)
- "Memory profiling takes ... Total non KV cache memory: ...; torch peak memory increase: ...;
   non-torch forward increase memory: ...; weights memory: ..."   utils/mem_utils.py:MemoryProfilingResult
   (0.33 prints "total consumed (from mem_get_info): X" instead of the non-torch term)
- V0 (worker/worker.py:determine_num_available_blocks): "the current vLLM instance can use total_gpu_memory (T)
  x gpu_memory_utilization (U) = R", "model weights take W; non_torch_memory takes N; PyTorch activation peak
  memory takes P; the rest of the memory reserved for KV Cache is K"; 0.6.4 one line "Memory profiling results:
  total_gpu_memory=... kv_cache_size=..."; a short-lived table of the same terms, one per line
- "Estimated CUDA graph memory: 0.84 GiB total"                   v1/worker/gpu_model_runner.py:profile_cudagraph_memory
- "Available KV cache memory: 61.66 GiB"                          v1/worker/gpu_worker.py:determine_available_memory
- "GPU KV cache size: N tokens", "Maximum concurrency for M tokens per request: X.XXx"
                                                                  v1/core/kv_cache_utils.py:_report_kv_cache_config
   (0.10 prints the pair once per worker, before the minimum is taken; 0.28+ prints both on one line)
- V0 / early V1: "# GPU blocks: N, # CPU blocks: M" (0.7: "# cuda blocks", ROCm "# rocm blocks"; executor_base.py
  initialize_cache), "# GPU blocks: N" (V1 0.7 kv_cache_utils.py)
- "Graph capturing finished in N secs, took X GiB"                v1/worker/gpu_model_runner.py:capture_model
- "Free memory on device (F/T GiB) on startup. ... Actual usage is ... `--kv-cache-memory=B` ... Current kv cache
  memory in use is X GiB" (0.10.2: "... is N bytes")              v1/worker/gpu_worker.py:compile_or_warm_up_model
- "vllm cache_config_info with initialization after num_gpu_blocks is: N"     v1/metrics/loggers.py
- TP and PP: the engine config line, the non-default args (or 0.8's `args: Namespace(...)`), a `vllm serve` command
  line in the paste, "rank 0 in world size N ...", and, as a lower bound only, the worker labels (Worker_TP3).

GiB figures are kept as the printed decimals (`decimal.Decimal`), never floats: vLLM prints
`round(bytes / 2**30, 2)` (utils/mem_utils.py:format_gib) or `%.2f` (`%.4f` for V0's weights), so a printed
value stands for an interval of byte counts, which `gib_bounds` gives exactly.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from kvplan.engines.logtext import NUMBER as _NUM  # a printed number, one group
from kvplan.engines.logtext import Line, LineRow, Needs, dispatch, lines as logical_lines, message, spaced
from kvplan.engines.runtime.logs import gib_bounds, vllm_format_gib  # GiB as vLLM prints it (re-exported)
from kvplan.core import files
from kvplan.core.errors import InputError

GIB = 2**30

__all__ = [
    "VllmLogFigures",
    "VllmWorkerFigures",
    "gib_bounds",
    "parse_vllm_log",
    "parse_vllm_log_file",
    "vllm_format_gib",
]


# --------------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class VllmWorkerFigures:
    """What one worker process (one GPU) logged about its memory. None where it logged nothing.

    In a TP/PP deployment vLLM logs its INFO lines from the first rank only, but the DEBUG profiling
    lines from every rank; the KV pool is sized by the worker with the fewest blocks
    (v1/core/kv_cache_utils.py:get_kv_cache_configs takes the minimum over workers), which under
    pipeline parallelism is usually the last stage (it holds the logits and the sampler).
    """

    pid: int | None
    name: str | None  # the last process label seen for the pid, e.g. "Worker_PP3", "EngineCore"
    total_memory_gib: Decimal | None = None  # init snapshot: torch.cuda.mem_get_info total (V0: total_gpu_memory)
    init_free_memory_gib: Decimal | None = None  # init snapshot, after CUDA context and NCCL init
    init_non_torch_gib: Decimal | None = None  # init snapshot: CUDA context (+ NCCL at TP/PP >= 2)
    requested_memory_gib: Decimal | None = None  # ceil(total_memory x gpu_memory_utilization)
    weights_gib: Decimal | None = None  # "Model loading took" (or the profiling line's weights term)
    activation_peak_gib: Decimal | None = None  # torch peak memory increase during the profile run
    non_torch_gib: Decimal | None = None  # non-torch increase since the init snapshot (0.19; V0's non_torch_memory)
    total_consumed_gib: Decimal | None = None  # 0.27+: free memory drop since init (mem_get_info)
    total_non_kv_gib: Decimal | None = None  # the profiling line's "Total non KV cache memory"
    cuda_graph_estimate_gib: Decimal | None = None  # "Estimated CUDA graph memory" (profiled)
    cuda_graph_actual_gib: Decimal | None = None  # graph pool after the real capture
    available_kv_gib: Decimal | None = None  # this worker's KV budget ("in use" on the advice line)
    kv_cache_memory_to_requested_bytes: int | None = None  # exact: the advice line's first number
    kv_cache_memory_to_gpu_bytes: int | None = None  # exact: the advice line's second number
    available_kv_bytes: int | None = None  # exact: 0.10.2's "Current kv cache memory in use is N bytes"


@dataclass(frozen=True)
class CapacityReport:
    """One "GPU KV cache size" / "Maximum concurrency" report (vLLM 0.10 prints one per worker's config)."""

    tokens: int | None
    concurrency: float | None  # as printed ("%.2f")
    concurrency_tokens: int | None  # the M of "for M tokens per request"


@dataclass(frozen=True)
class VllmLogFigures:
    """The launch settings and memory figures of one vLLM start-up log. None where absent.

    Single-valued memory fields are those of the reporting worker (the one that logged
    "Available KV cache memory", rank 0); `workers` holds every worker's own figures. Where the log
    states TP or PP, `tensor_parallel_size` / `pipeline_parallel_size` hold it and `*_source` says where
    it was read; where it only shows worker labels, `tp_at_least` / `pp_at_least` are the lower bounds.
    """

    vllm_version: str | None = None
    model: str | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None  # a float, as vLLM multiplies it (math.ceil(total x util))
    kv_cache_dtype: str | None = None  # "auto", "fp8", ... as printed
    dtype: str | None = None  # as printed in the engine config, e.g. "torch.bfloat16"
    quantization: str | None = None  # None when the engine config says None
    block_size: int | None = None  # only when set by the user or logged as changed; else unknown
    enable_prefix_caching: bool | None = None
    enforce_eager: bool | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    attention_backend: str | None = None
    total_memory_gib: Decimal | None = None
    requested_memory_gib: Decimal | None = None
    weights_gib: Decimal | None = None
    activation_peak_gib: Decimal | None = None
    non_torch_gib: Decimal | None = None
    total_consumed_gib: Decimal | None = None
    total_non_kv_gib: Decimal | None = None
    cuda_graph_gib: Decimal | None = None  # the profiled estimate (what vLLM >= 0.21 subtracts)
    cuda_graph_actual_gib: Decimal | None = None
    available_kv_gib: Decimal | None = None
    kv_cache_tokens: int | None = None  # the binding report's (fewest tokens)
    max_concurrency: float | None = None  # as printed ("%.2fx"), of the same report
    max_concurrency_tokens: int | None = None  # the M of "for M tokens per request"
    num_gpu_blocks: int | None = None
    padding_layers: int | None = None  # "Add N padding layers" (hybrid models with uneven groups)
    estimated_max_model_len: int | None = None  # from the "To serve at least one request" error
    needed_kv_gib: Decimal | None = None  # from the same error
    non_default_args: dict | None = field(default=None, hash=False)
    workers: tuple[VllmWorkerFigures, ...] = ()
    # read from pastes (excerpts, V0, several workers)
    engine_generation: str | None = None  # "V0" or "V1" where the log shows which
    tp_source: str | None = None  # where tensor_parallel_size was read
    pp_source: str | None = None
    tp_at_least: int | None = None  # from worker labels / worker count when TP is not stated
    pp_at_least: int | None = None
    max_model_len_source: str | None = None
    num_gpu_blocks_source: str | None = None  # "num_gpu_blocks is" (V1), "# GPU blocks" (V0 / V1 0.7), ...
    num_cpu_blocks: int | None = None
    tokens_capacity: int | None = None  # V0 error: "maximum number of tokens that can be stored in KV cache (N)"
    capacity_reports: tuple[CapacityReport, ...] = ()
    startup_free_gib: Decimal | None = None  # "Free memory on device (F/T GiB) on startup"
    startup_total_gib: Decimal | None = None
    refused_at_startup: bool = False  # "... on startup is less than desired GPU memory utilization"
    platform: str | None = None  # "cuda", "rocm" ("Automatically detected platform")
    runs: int = 1  # start-ups in the file (the one with the most figures is read)
    layout_conflicts: tuple[str, ...] = ()  # sources that disagree about TP or PP, e.g. "TP 4 (command line)"

    def binding_worker(self) -> VllmWorkerFigures | None:
        """The worker with the least KV memory (the one that sizes the pool when layers are equal).

        Under pipeline parallelism the stages may hold different layer counts, so the pool is the
        minimum of available // (page x layers) per worker; this picks by memory alone.
        """
        known = [w for w in self.workers if w.available_kv_gib is not None or w.available_kv_bytes is not None]
        if not known:
            return None
        # 0.10.2 prints each worker's budget in bytes too: ranks that print the same GiB differ there
        return min(known, key=lambda w: w.available_kv_bytes if w.available_kv_bytes is not None
                   else w.available_kv_gib * GIB)


# --------------------------------------------------------------------------------------------------
# Message patterns (spaced(): a literal space also matches none or several, for joined wraps and tables)

_INT = r"(\d[\d,]*)"

_SNAPSHOT = spaced(
    rf"worker init memory snapshot: .*?free_memory={_NUM}GiB, total_memory={_NUM}GiB, "
    rf"\w+_memory={_NUM}GiB, torch_memory={_NUM}GiB, non_torch_memory={_NUM}GiB"
)
_REQUESTED = spaced(rf"worker requested memory: {_NUM} ?GiB")
_LOADING = Needs("took", spaced(rf"(?:Model loading took|Loading model weights took) {_NUM} (Gi?B)"))
_PROFILE = spaced(rf"Memory profiling takes [\d.]+ seconds\. Total non KV cache memory: {_NUM}GiB;(?P<rest>.*)")
_PEAK = spaced(rf"torch peak memory increase: {_NUM}GiB")
_NON_TORCH = spaced(rf"non-torch forward increase memory: {_NUM}GiB")
_CONSUMED = spaced(rf"total consumed \(from mem_get_info\): {_NUM}GiB")
_PROFILE_WEIGHTS = spaced(rf"weights memory: {_NUM}GiB")
# V0 (worker/worker.py) and the 0.6.4 one-line form
_V0_CAN_USE = spaced(rf"the current vLLM instance can use total_gpu_memory \({_NUM}GiB\) x gpu_memory_utilization "
                     rf"\({_NUM}\) = {_NUM}GiB")
_V0_TERMS = spaced(rf"model weights take {_NUM}GiB; non_torch_memory takes {_NUM}GiB; PyTorch activation peak memory "
                   rf"takes {_NUM}GiB; the rest of the memory reserved for KV Cache is {_NUM}GiB")
_V0_RESULTS = spaced(r"Memory profiling results: (?P<rest>.*\S=.*)")
_V0_KEY = re.compile(rf"(\w+)={_NUM}(?:GiB)?")
# the short-lived table (one term per line after "Memory profiling results:")
_V0_TABLE = {key: Needs(term, re.compile(rf"(?:^|\]\s*){term}\s+{_NUM}{unit}")) for key, term, unit in (
    ("total_gpu_memory", "total_gpu_memory", "GiB"),
    ("gpu_memory_utilization", "gpu_memory_utilization", r"\s*$"),
    ("requested", "the current vLLM instance can use", "GiB"),
    ("weights", "model weights take", "GiB"),
    ("non_torch", "non_torch_memory", "GiB"),
    ("peak", "PyTorch activation peak memory", "GiB"),
    ("available", "available_kv_cache_memory", "GiB"),
)}
_CG_ESTIMATE = spaced(rf"Estimated CUDA graph memory: {_NUM} GiB total")
_CG_CAPTURED = spaced(rf"Graph capturing finished in [\d.]+ secs?, took {_NUM} GiB")
_CG_POOL = spaced(rf"CUDA graph pool memory: {_NUM} GiB \(actual\), {_NUM} GiB \(estimated\)")
_AVAILABLE = spaced(rf"Available KV cache memory: {_NUM} GiB")
# the advice line (gpu_worker.py:compile_or_warm_up_model), piece by piece: releases reword its middle
_FREE = spaced(rf"Free memory on device (?:\S+ )?\({_NUM}/{_NUM} GiB\) on startup")
_FREE_REFUSED = spaced(r"on startup is less than desired GPU memory utilization")
_FREE_UTIL = spaced(rf"Desired GPU memory utilization is \(([\d.]+), {_NUM} GiB\)")
_FREE_WEIGHT = spaced(rf"{_NUM} GiB for weight")
_FREE_PEAK = spaced(rf"{_NUM} GiB for peak activation")
_FREE_NON_TORCH = spaced(rf"{_NUM} GiB for non-torch memory")
_FREE_CONSUMED = spaced(rf"{_NUM} GiB for consumed memory")
_FREE_GRAPHS = spaced(rf"{_NUM} GiB for CUDAGraph memory")
_ADVICE_BYTES = re.compile(r"`--kv-cache-memory=(-?\d+)`")
_IN_USE = spaced(rf"Current kv cache memory in use is {_NUM} (GiB|bytes)")
_REQUESTED_UTIL = spaced(r"Requested memory: ([\d.]+) \(util\)")
_GRAPH_UTIL = spaced(r"The current --gpu-memory-utilization=([\d.]+) is equivalent")
_KV_TOKENS = spaced(rf"GPU KV cache size: {_INT} tokens")
_CONCURRENCY = spaced(rf"Maximum concurrency for {_INT} tokens per request: ([\d.]+)x")
_NUM_BLOCKS = spaced(r"num_gpu_blocks is: (\d+)")
_DEVICE_BLOCKS = Needs("blocks:", spaced(r"(?:#\s*)?\b(GPU|CUDA|cuda|rocm|xpu|hpu|tpu|neuron) blocks: (\d+)(?:, # CPU blocks: (\d+))?"))
_PADDING = re.compile(r"Add (\d+) padding layers")
_TOO_SMALL = spaced(rf"max seq len \((\d+)\), \({_NUM} Gi?B KV cache is needed, which is larger than the available KV "
                    rf"cache memory \({_NUM} Gi?B\)")
_EST_LEN = spaced(r"the estimated maximum model length is (\d+)")
_V0_TOO_SMALL = spaced(r"The model's max seq len \((\d+)\) is larger than the maximum number of tokens that can be "
                       r"stored in KV cache \((\d+)\)")
_VERSION_ENGINE = spaced(r"Initializing a (V[01]) LLM engine \(v([^)\s]+)\) with config: (?P<cfg>.*)")
_VERSION_SERVER = spaced(r"vLLM API server version (\d+\.\d+\S*)")
_VERSION_BANNER = re.compile(r"[█▀▄]\s+version (\d+\.\d+\.\d+\S*)")  # the 0.1x block-letter banner
_NON_DEFAULT = spaced(r"non-default args: (\{.*)")
_NAMESPACE = spaced(r"args: Namespace\((.*)")
_MNBT = spaced(
    r"(?:Defaulting max_num_batched_tokens to |Chunked prefill is enabled with max_num_batched_tokens=)(\d+)"
)
_MAX_SEQS = spaced(r"Defaulting max_num_seqs to (\d+)")
_BACKEND = re.compile(r"Using (\w+) attention backend|Using (Flash Attention|FlashInfer|XFormers|Triton|ROCmFlashAttention) backend")
_BLOCK_SET = spaced(r"Setting (?:kv cache|attention) block size to (\d+)")
_MAX_LEN = spaced(r"Using max model len (\d+)")
_WORLD = spaced(r"rank \d+ in world size (\d+) is assigned as DP rank \d+, PP rank (\d+),(?: PCP rank \d+,)? TP rank (\d+)")
_WORLD_SIZE = Needs("world_size=", re.compile(r"\bworld_size=(\d+) rank=\d+"))
_PLATFORM = spaced(r"Automatically detected platform (\w+)")
_COMMAND = Needs("vllm", re.compile(r"(?:^|[\s`$])(?:vllm serve|vllm\.entrypoints\.openai\.api_server|vllm/vllm-openai\S*)(?=\s|$)"))
_LABEL_RANK = {"tp": re.compile(r"TP ?(\d+)"), "pp": re.compile(r"PP ?(\d+)")}
# v1/executor/multiproc_executor.py WorkerProc.setup_proc_title_and_log_prefix: "Worker" + _DP{r} if dp > 1, + _PP{r}
# if pp > 1, (+ _PCP{r}), + _TP{r} if tp > 1, (+ _DCP{r}), + _EP{r} with expert parallelism
_V1_WORKER = re.compile(r"Worker(?:_DP\d+)?(?:_PP\d+)?(?:_PCP\d+)?(?:_TP\d+)?(?:_DCP\d+)?(?:_EP\d+)?")
# lines only a worker prints: with one GPU the engine core runs the worker itself (UniProcExecutor), so they come
# from the EngineCore process
_WORKER_PHRASES = spaced(r"Available KV cache memory|Model loading took|Memory profiling takes|Estimated CUDA graph")

# keys of the engine config line ("with config: model='...', ..., kv_cache_dtype=auto, ...") and of 0.8's
# `args: Namespace(...)`, which spells values the same way
_CFG = {
    "model": re.compile(r"(?:^|, )model='([^']*)'"),
    "dtype": re.compile(r"(?:^|, )dtype=([^,]+)"),
    "max_seq_len": re.compile(r"(?:^|, )max_seq_len=(\d+)"),
    "max_model_len": re.compile(r"(?:^|, )max_model_len=(\d+)"),
    "tensor_parallel_size": re.compile(r"(?:^|, )tensor_parallel_size=(\d+)"),
    "pipeline_parallel_size": re.compile(r"(?:^|, )pipeline_parallel_size=(\d+)"),
    "quantization": re.compile(r"(?:^|, )quantization=([^,]+)"),
    "enforce_eager": re.compile(r"(?:^|, )enforce_eager=(True|False)"),
    "kv_cache_dtype": re.compile(r"(?:^|, )kv_cache_dtype=([^,]+)"),
    "enable_prefix_caching": re.compile(r"(?:^|, )enable_prefix_caching=(True|False|None)"),
    "gpu_memory_utilization": re.compile(r"(?:^|, )gpu_memory_utilization=([\d.]+)"),
    "block_size": re.compile(r"(?:^|, )block_size=(\d+)"),
    "max_num_seqs": re.compile(r"(?:^|, )max_num_seqs=(\d+)"),
    "max_num_batched_tokens": re.compile(r"(?:^|, )max_num_batched_tokens=(\d+)"),
}
# `vllm serve` options a pasted command line may show (either spelling, "=" or a space before the value)
_FLAGS = {
    "tensor_parallel_size": r"--tensor[-_]parallel[-_]size|-tp",
    "pipeline_parallel_size": r"--pipeline[-_]parallel[-_]size|-pp",
    "max_model_len": r"--max[-_]model[-_]len",
    "gpu_memory_utilization": r"--gpu[-_]memory[-_]utilization",
    "kv_cache_dtype": r"--kv[-_]cache[-_]dtype",
    "dtype": r"--dtype",
    "quantization": r"--quantization|-q",
    "block_size": r"--block[-_]size",
    "max_num_seqs": r"--max[-_]num[-_]seqs",
    "max_num_batched_tokens": r"--max[-_]num[-_]batched[-_]tokens",
    "model": r"--model",
}
_FLAG_VALUE = {key: re.compile(rf"(?:^|\s)(?:{flags})(?:=|\s+)([^\s\\`]+)") for key, flags in _FLAGS.items()}
# a quoted key of the non-default args dict, for excerpts cut before its end (or holding objects literal_eval
# cannot read)
_ARG_VALUE = re.compile(r"'(\w+)': ('(?:[^'\\]|\\.)*'|-?\d+(?:\.\d+)?|True|False|None)")


def _dec(s: str | None) -> Decimal | None:
    return None if s is None else Decimal(s)


def _int(s: str) -> int:
    return int(s.replace(",", ""))


def _bool(s: str | None) -> bool | None:
    return {"True": True, "False": False}.get(s) if s is not None else None


def _literal(s: str):
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError):
        return s.strip("'")


def _dict_text(text: str) -> str | None:
    """The balanced {...} at the start of text (None when the excerpt cut it off)."""
    depth, quote = 0, None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
            if depth == 0:
                return text[:i + 1]
    return None


def _non_default_args(text: str) -> dict | None:
    """The non-default args dict: read whole when it is a literal, else the quoted scalar keys it shows."""
    whole = _dict_text(text)
    if whole is not None:
        try:
            parsed = ast.literal_eval(whole)
            if isinstance(parsed, dict):
                return parsed
        except (ValueError, SyntaxError):
            pass  # a repr vLLM could not print as literals (an enum, an object): keep the plain keys
    found = {k: _literal(v) for k, v in _ARG_VALUE.findall(text)}
    return found or None


# --------------------------------------------------------------------------------------------------
# Parsing

_FIGURE_PATTERNS = (_AVAILABLE, _KV_TOKENS, _CONCURRENCY, _NUM_BLOCKS, _DEVICE_BLOCKS, _LOADING, _PROFILE, _V0_CAN_USE,
                    _V0_TERMS, _V0_RESULTS, _FREE, _TOO_SMALL, _V0_TOO_SMALL, _SNAPSHOT, _CG_ESTIMATE,
                    _V0_TABLE["available"], _V0_TABLE["total_gpu_memory"])


def _has_figure(rec: Line) -> bool:
    return any(p.search(rec.text) for p in _FIGURE_PATTERNS)


def _runs(records: list[Line]) -> list[tuple[list[Line], int]]:
    """The start-ups a paste holds, each with its count of figure lines: a new one begins at a `vllm serve` command
    or a server banner that follows memory or capacity figures of an earlier one."""
    runs: list[tuple[list[Line], int]] = [([], 0)]
    for rec in records:
        figure = _has_figure(rec)
        lines, figures = runs[-1]
        if figures and (_COMMAND.search(rec.text) or _VERSION_SERVER.search(rec.text) or _VERSION_BANNER.search(rec.text)):
            runs.append(([], 0))
            lines, figures = runs[-1]
        lines.append(rec)
        runs[-1] = (lines, figures + figure)
    return [r for r in runs if r[0]]


def _command_lines(records: list[Line]) -> list[str]:
    """`vllm serve ...` commands in the paste, with their backslash-continued lines joined."""
    out: list[str] = []
    i = 0
    while i < len(records):
        text = records[i].text
        if _COMMAND.search(text):
            parts = [text]
            while parts[-1].rstrip().endswith("\\") and i + 1 < len(records):
                i += 1
                parts.append(records[i].text)
            out.append(" ".join(p.rstrip().rstrip("\\") for p in parts))
        i += 1
    return out


def _command_model(command: str) -> str | None:
    """The model a command names: --model, else the first positional after `serve` / the image."""
    m = _COMMAND.search(command)
    rest = command[m.end():].replace("\\", " ").split() if m else []
    for token in rest:
        if token.startswith("-"):
            break
        return token.strip("`'\"")
    return None


@dataclass
class _Reading:
    """What the lines of one vLLM start-up give, gathered line by line before the figures are picked."""

    workers: dict[int | None, dict] = field(default_factory=dict)  # pid -> that worker's figures
    names: dict[int | None, str | None] = field(default_factory=dict)
    order: list[int | None] = field(default_factory=list)
    top: dict = field(default_factory=dict)  # figures of the whole run
    engine_cfg: dict[str, str] = field(default_factory=dict)
    non_default: dict | None = None
    reporting_pid: Any = ...  # the pid that logged "Available KV cache memory" (... until one does)
    reports: list[dict] = field(default_factory=list)  # "GPU KV cache size" / "Maximum concurrency" reports
    table: dict[str, Decimal] = field(default_factory=dict)  # V0's profile table

    def worker(self, rec: Line) -> dict:
        if rec.pid not in self.workers:
            self.workers[rec.pid] = {}
            self.order.append(rec.pid)
        self.names[rec.pid] = rec.name
        return self.workers[rec.pid]

    def first(self, key: str, value) -> None:
        if value is not None and self.top.get(key) is None:
            self.top[key] = value

    def reported_by(self, pid: int | None) -> None:
        if self.reporting_pid is ...:
            self.reporting_pid = pid


def _labels(r: _Reading, rec: Line) -> None:
    """What the process label tells: TP / PP ranks, V1 worker names, extra worker processes."""
    if rec.pid in r.names:
        r.names[rec.pid] = rec.name
    if rec.name:
        for key, pat in _LABEL_RANK.items():
            if k := pat.search(rec.name):
                r.top[f"{key}_label_max"] = max(r.top.get(f"{key}_label_max", 0), int(k[1]) + 1)
        if _V1_WORKER.fullmatch(rec.name):
            r.top.setdefault("v1_worker_labels", set()).add(rec.name)
        if "VllmWorkerProcess" in rec.name or "RayWorkerWrapper" in rec.name:
            r.top.setdefault("extra_workers", set()).add(rec.pid)
        if rec.name.startswith("EngineCore") and _WORKER_PHRASES.search(rec.text):
            r.top["engine_core_worker"] = True


def _on_engine_config(r: _Reading, rec: Line, m) -> None:
    r.first("engine_generation", m[1])
    r.first("vllm_version", m[2])
    cfg = m["cfg"]
    for key, pat in _CFG.items():
        if (k := pat.search(cfg)) and key not in r.engine_cfg:
            r.engine_cfg[key] = k[1].strip()


def _on_non_default(r: _Reading, rec: Line, m) -> None:
    if r.non_default is None:
        r.non_default = _non_default_args(m[1])
        r.top["non_default_whole"] = _dict_text(m[1]) is not None


def _on_namespace(r: _Reading, rec: Line, m) -> None:
    for key, pat in _CFG.items():
        if k := pat.search(m[1]):
            r.top.setdefault("namespace", {}).setdefault(key, k[1].strip().strip("'"))


def _on_snapshot(r: _Reading, rec: Line, m) -> None:
    w = r.worker(rec)
    w.setdefault("init_free_memory_gib", _dec(m[1]))
    w.setdefault("total_memory_gib", _dec(m[2]))
    w.setdefault("init_non_torch_gib", _dec(m[5]))


def _on_profile(r: _Reading, rec: Line, m) -> None:
    w = r.worker(rec)
    rest = m["rest"]
    w["total_non_kv_gib"] = _dec(m[1])
    for pat, key in ((_PEAK, "activation_peak_gib"), (_NON_TORCH, "non_torch_gib"),
                     (_CONSUMED, "total_consumed_gib"), (_PROFILE_WEIGHTS, "profile_weights_gib")):
        if k := pat.search(rest):
            w[key] = _dec(k[1])


def _on_v0_can_use(r: _Reading, rec: Line, m) -> None:
    w = r.worker(rec)
    w.setdefault("total_memory_gib", _dec(m[1]))
    w.setdefault("requested_memory_gib", _dec(m[3]))
    r.first("util_from_log", m[2])
    r.first("engine_generation", "V0")


def _on_v0_terms(r: _Reading, rec: Line, m) -> None:
    w = r.worker(rec)
    w.setdefault("profile_weights_gib", _dec(m[1]))
    w["non_torch_gib"] = _dec(m[2])
    w["activation_peak_gib"] = _dec(m[3])
    w["available_kv_gib"] = _dec(m[4])
    r.first("engine_generation", "V0")
    r.reported_by(rec.pid)


def _on_v0_results(r: _Reading, rec: Line, m) -> None:
    values = {k: Decimal(v) for k, v in _V0_KEY.findall(m["rest"])}
    w = r.worker(rec)
    if "total_gpu_memory" in values:
        w.setdefault("total_memory_gib", values["total_gpu_memory"])
    if "non_torch_memory" in values:
        w["non_torch_gib"] = values["non_torch_memory"]
    if "kv_cache_size" in values:
        w["available_kv_gib"] = values["kv_cache_size"]
        r.reported_by(rec.pid)
    if "gpu_memory_utilization" in values:
        r.first("util_from_log", str(values["gpu_memory_utilization"]))
    r.first("engine_generation", "V0")


def _on_graph_pool(r: _Reading, rec: Line, m) -> None:
    w = r.worker(rec)
    w["cuda_graph_actual_gib"] = _dec(m[1])
    w.setdefault("cuda_graph_estimate_gib", _dec(m[2]))


def _on_available(r: _Reading, rec: Line, m) -> None:
    r.worker(rec)["available_kv_gib"] = _dec(m[1])
    r.reported_by(rec.pid)


def _on_free_on_device(r: _Reading, rec: Line, m) -> None:
    """0.10.2+'s "Free memory on device ... on startup" line: the memory seen at start and its advice."""
    msg = rec.text
    w = r.worker(rec)
    r.first("startup_free_gib", _dec(m[1]))
    r.first("startup_total_gib", _dec(m[2]))
    w.setdefault("total_memory_gib", _dec(m[2]))
    w.setdefault("init_free_memory_gib", _dec(m[1]))
    if _FREE_REFUSED.search(msg):
        r.top["refused_at_startup"] = True
    if k := _FREE_UTIL.search(msg):
        r.first("util_from_log", k[1])
        w.setdefault("requested_memory_gib", _dec(k[2]))
    for pat, key in ((_FREE_WEIGHT, "weights_gib"), (_FREE_PEAK, "activation_peak_gib"),
                     (_FREE_NON_TORCH, "non_torch_gib"), (_FREE_CONSUMED, "total_consumed_gib"),
                     (_FREE_GRAPHS, "cuda_graph_actual_gib")):
        if k := pat.search(msg):
            w.setdefault(key, _dec(k[1]))
    advice = _ADVICE_BYTES.findall(msg)
    if len(advice) >= 2:
        w["kv_cache_memory_to_requested_bytes"] = int(advice[0])
        w["kv_cache_memory_to_gpu_bytes"] = int(advice[1])
    if k := _IN_USE.search(msg):
        if k[2] == "bytes":
            w["available_kv_bytes"] = int(Decimal(k[1]))
        else:
            w.setdefault("available_kv_gib", _dec(k[1]))


def _capacity_line(msg: str) -> bool:
    return bool("GPU KV cache size" in msg or "Maximum concurrency for" in msg or _KV_TOKENS.search(msg)
                or _CONCURRENCY.search(msg))


def _on_capacity(r: _Reading, rec: Line, m) -> None:
    # 0.19 prints two lines, 0.28+ one line holding both; 0.10 a pair per worker
    msg = rec.text
    k_tok, k_conc = _KV_TOKENS.search(msg), _CONCURRENCY.search(msg)
    if k_tok:
        r.reports.append({"tokens": _int(k_tok[1])})
    if k_conc:
        if not r.reports or "concurrency" in r.reports[-1] or (k_tok is None and r.reports[-1].get("closed")):
            r.reports.append({})
        r.reports[-1].update(concurrency=float(k_conc[2]), concurrency_tokens=_int(k_conc[1]))


def _on_num_blocks(r: _Reading, rec: Line, m) -> None:
    r.first("num_gpu_blocks", int(m[1]))
    r.first("num_gpu_blocks_source", "num_gpu_blocks is")


def _on_device_blocks(r: _Reading, rec: Line, m) -> None:
    r.top["device_blocks"] = int(m[2])  # the last one: the executor's minimum over workers
    if m[3] is not None:
        r.first("num_cpu_blocks", int(m[3]))
        r.first("engine_generation", "V0")


def _on_padding(r: _Reading, rec: Line, m) -> None:
    # one warning per attention type that needed padding; every worker may repeat it
    r.top.setdefault("padding_by_line", set()).add((rec.pid, m[0], message(rec.text)))


def _on_too_small(r: _Reading, rec: Line, m) -> None:
    r.first("needed_kv_gib", _dec(m[2]))
    r.first("error_max_len", int(m[1]))
    r.worker(rec).setdefault("available_kv_gib", _dec(m[3]))
    r.reported_by(rec.pid)
    if k := _EST_LEN.search(rec.text):
        r.first("estimated_max_model_len", int(k[1]))


def _on_v0_too_small(r: _Reading, rec: Line, m) -> None:
    r.first("error_max_len", int(m[1]))
    r.first("tokens_capacity", int(m[2]))


def _setter(key: str, where: str = "worker", how: Callable = _dec) -> Callable[[_Reading, Line, Any], None]:
    """A handler that keeps the first group of the match under `key`: in the worker's figures (the last line wins),
    or the run's (`first`: the first line wins; `last`: the last one)."""
    def handle(r: _Reading, rec: Line, m) -> None:
        if where == "worker":
            r.worker(rec)[key] = how(m[1])
        elif where == "first":
            r.first(key, how(m[1]))
        else:
            r.top[key] = how(m[1])
    return handle


def _keep(value: str) -> str:
    return value


# vLLM's lines and what each gives, tried in this order; the first that matches a line takes it
_LINES: tuple[LineRow, ...] = (
    (_VERSION_ENGINE.search, _on_engine_config),
    (_VERSION_SERVER.search, _setter("server_version", "first", _keep)),
    (_VERSION_BANNER.search, _setter("banner_version", "first", _keep)),
    (_NON_DEFAULT.search, _on_non_default),
    (_NAMESPACE.search, _on_namespace),
    (_SNAPSHOT.search, _on_snapshot),
    (_REQUESTED.search, lambda r, rec, m: r.worker(rec).setdefault("requested_memory_gib", _dec(m[1]))),
    (_LOADING.search, _setter("weights_gib")),
    (_PROFILE.search, _on_profile),
    (_V0_CAN_USE.search, _on_v0_can_use),
    (_V0_TERMS.search, _on_v0_terms),
    (_V0_RESULTS.search, _on_v0_results),
    (_CG_ESTIMATE.search, _setter("cuda_graph_estimate_gib")),
    (_CG_CAPTURED.search, _setter("cuda_graph_actual_gib")),
    (_CG_POOL.search, _on_graph_pool),
    (_AVAILABLE.search, _on_available),
    (_FREE.search, _on_free_on_device),
    (_REQUESTED_UTIL.search, _setter("util_from_log", "first", _keep)),
    (_GRAPH_UTIL.search, _setter("util_from_log", "first", _keep)),
    (_capacity_line, _on_capacity),
    (_NUM_BLOCKS.search, _on_num_blocks),
    (_DEVICE_BLOCKS.search, _on_device_blocks),
    (_PADDING.search, _on_padding),
    (_TOO_SMALL.search, _on_too_small),
    (_V0_TOO_SMALL.search, _on_v0_too_small),
    # "Defaulting max_num_batched_tokens to N" comes first; the scheduler's "Chunked prefill is enabled with
    # max_num_batched_tokens=N" is the final value
    (_MNBT.search, _setter("max_num_batched_tokens", "last", int)),
    (_MAX_SEQS.search, _setter("max_num_seqs", "last", int)),
    (_BACKEND.search, lambda r, rec, m: r.first("attention_backend", m[1] or m[2])),
    (_BLOCK_SET.search, _setter("block_size_logged", "last", int)),
    (_MAX_LEN.search, _setter("max_len_logged", "first", int)),
    (_WORLD.search, _setter("world_size", "first", int)),
    (_WORLD_SIZE.search, _setter("world_size", "first", int)),
)


def _read_line(r: _Reading, rec: Line) -> None:
    _labels(r, rec)
    msg = rec.text
    if m := _PLATFORM.search(msg):
        r.first("platform", m[1].lower())
    if dispatch(_LINES, msg, r, rec):
        return
    for key, needs in _V0_TABLE.items():
        if found := needs.search(msg):
            r.table.setdefault(key, Decimal(found[1]))
            break


def _close_table(r: _Reading) -> None:
    """The table form of V0's profile (one run's terms, the driver worker's)."""
    if not r.table:
        return
    w = r.workers.setdefault(None, {})
    if None not in r.order:
        r.order.append(None)
    for key, field_name in (("total_gpu_memory", "total_memory_gib"), ("requested", "requested_memory_gib"),
                            ("weights", "profile_weights_gib"), ("non_torch", "non_torch_gib"),
                            ("peak", "activation_peak_gib"), ("available", "available_kv_gib")):
        if key in r.table:
            w.setdefault(field_name, r.table[key])
    if "gpu_memory_utilization" in r.table:
        r.first("util_from_log", str(r.table["gpu_memory_utilization"]))
    if "available" in r.table and r.reporting_pid is ...:
        r.reporting_pid = None
    r.first("engine_generation", "V0")


def _worker_figures(r: _Reading) -> tuple[list[VllmWorkerFigures], dict[str, Any]]:
    """The workers in rank order, and each figure of the reporting worker (else of the first worker that has it)."""
    worker_records = []
    # rank order (Worker_TP0, Worker_TP1, ...) reads better than the order the processes logged in
    for pid in sorted(r.order, key=lambda p: (_natural(r.names.get(p) or ""), p is None, p or 0)):
        w = dict(r.workers[pid])
        profile_weights = w.pop("profile_weights_gib", None)
        w.setdefault("weights_gib", profile_weights)
        worker_records.append(VllmWorkerFigures(pid=pid, name=r.names.get(pid), **w))
    by_pid = {w.pid: w for w in worker_records}
    reporting = by_pid.get(r.reporting_pid) if r.reporting_pid is not ... else None
    if reporting is None:
        reporting = next((w for w in worker_records if w.total_non_kv_gib is not None), None)
    if reporting is None and worker_records:
        reporting = worker_records[0]

    def from_workers(attr: str):
        if reporting is not None and getattr(reporting, attr) is not None:
            return getattr(reporting, attr)
        return next((getattr(w, attr) for w in worker_records if getattr(w, attr) is not None), None)

    figures = {name: from_workers(attr) for name, attr in (
        ("total_memory_gib", "total_memory_gib"), ("requested_memory_gib", "requested_memory_gib"),
        ("weights_gib", "weights_gib"), ("activation_peak_gib", "activation_peak_gib"),
        ("non_torch_gib", "non_torch_gib"), ("total_consumed_gib", "total_consumed_gib"),
        ("total_non_kv_gib", "total_non_kv_gib"), ("cuda_graph_gib", "cuda_graph_estimate_gib"),
        ("cuda_graph_actual_gib", "cuda_graph_actual_gib"), ("available_kv_gib", "available_kv_gib"))}
    return worker_records, figures


def _pick(*candidates):
    return next((c for c in candidates if c is not None), None)


def _settings(r: _Reading, commands: list[str]) -> tuple[dict[str, Any], tuple[tuple[Any, str], ...]]:
    """The launch's settings, each from the first source that states it (engine config, non-default args, 0.8's
    Namespace, the log's own lines, a pasted command line), and the candidates for max_model_len among them."""
    engine_cfg, top = r.engine_cfg, r.top
    nd = r.non_default or {}
    ns = top.get("namespace", {})
    flags: dict[str, str] = {}
    for command in commands:
        for key, pat in _FLAG_VALUE.items():
            if (k := pat.search(command)) and key not in flags:
                flags[key] = k[1].strip("'\"")
        if "model" not in flags and (model := _command_model(command)):
            flags["model"] = model
    layout = _parallel_layout(engine_cfg, nd, bool(top.get("non_default_whole")), ns, flags, commands, top)
    tp, tp_source, pp, pp_source, tp_at_least, pp_at_least, layout_conflicts = layout
    util = nd.get("gpu_memory_utilization")
    if util is None:
        util = _pick(_opt_float(engine_cfg.get("gpu_memory_utilization")), _opt_float(ns.get("gpu_memory_utilization")),
                     _opt_float(top.get("util_from_log")), _opt_float(flags.get("gpu_memory_utilization")))
    quant = engine_cfg.get("quantization")
    if quant in (None, "None"):
        quant = _pick(nd.get("quantization"), None if ns.get("quantization") in (None, "None") else ns.get("quantization"),
                      flags.get("quantization"))
    block_size = _pick(top.get("block_size_logged"), _opt_int(nd.get("block_size")), _opt_int(ns.get("block_size")),
                       _opt_int(flags.get("block_size")))
    max_len_candidates = ((_opt_int(engine_cfg.get("max_seq_len")), "engine config"),
                          (_opt_int(nd.get("max_model_len")), "non-default args"),
                          (_opt_int(ns.get("max_model_len")), "args"), (top.get("max_len_logged"), "Using max model len"),
                          (_opt_int(flags.get("max_model_len")), "command line"))
    return dict(
        model=_pick(engine_cfg.get("model"), nd.get("model"), nd.get("model_tag"), ns.get("model"), flags.get("model")),
        tensor_parallel_size=tp, pipeline_parallel_size=pp, layout_conflicts=layout_conflicts, tp_source=tp_source,
        pp_source=pp_source, tp_at_least=tp_at_least, pp_at_least=pp_at_least,
        gpu_memory_utilization=None if util is None else float(util),
        kv_cache_dtype=_pick(engine_cfg.get("kv_cache_dtype"), nd.get("kv_cache_dtype"), ns.get("kv_cache_dtype"),
                             flags.get("kv_cache_dtype")),
        dtype=_pick(engine_cfg.get("dtype"), nd.get("dtype"), ns.get("dtype"), flags.get("dtype")),
        quantization=quant, block_size=block_size,
        enable_prefix_caching=_pick(_bool(engine_cfg.get("enable_prefix_caching")), nd.get("enable_prefix_caching"),
                                    _bool(ns.get("enable_prefix_caching"))),
        enforce_eager=_pick(_bool(engine_cfg.get("enforce_eager")), nd.get("enforce_eager"),
                            _bool(ns.get("enforce_eager"))),
        max_num_batched_tokens=_pick(_opt_int(nd.get("max_num_batched_tokens")), top.get("max_num_batched_tokens"),
                                     _opt_int(ns.get("max_num_batched_tokens")),
                                     _opt_int(flags.get("max_num_batched_tokens"))),
        max_num_seqs=_pick(_opt_int(nd.get("max_num_seqs")), top.get("max_num_seqs"), _opt_int(ns.get("max_num_seqs")),
                           _opt_int(flags.get("max_num_seqs"))),
        non_default_args=r.non_default,
    ), max_len_candidates


def _pool_figures(r: _Reading, max_len_candidates: tuple[tuple[Any, str], ...]) -> dict[str, Any]:
    """What the log says of the pool: tokens, concurrency, blocks, padding, the length it was sized for."""
    top = r.top
    padding = top.get("padding_by_line")
    padding_layers = None
    if padding:
        # a warning is repeated per worker; count the distinct warnings of one process
        first_pid = min(padding, key=lambda t: (t[0] is None, t[0] or 0))[0]
        padding_layers = sum(int(_PADDING.search(m)[1]) for pid, _, m in padding if pid == first_pid)
    capacity = tuple(CapacityReport(x.get("tokens"), x.get("concurrency"), x.get("concurrency_tokens"))
                     for x in r.reports)
    # the pool is the minimum over workers (v1/core/kv_cache_utils.py unify_kv_cache_configs): the report with the
    # fewest tokens is the binding one
    binding = min((c for c in capacity if c.tokens is not None), key=lambda c: c.tokens, default=None)
    if binding is None and capacity:
        binding = min(capacity, key=lambda c: c.concurrency if c.concurrency is not None else float("inf"))
    conc_tokens = binding.concurrency_tokens if binding else None
    candidates = max_len_candidates + ((conc_tokens, "Maximum concurrency line"),
                                       (top.get("error_max_len"), "error line"))
    max_len, max_len_source = next(((v, s) for v, s in candidates if v is not None), (None, None))
    num_blocks = top.get("num_gpu_blocks")
    blocks_source = top.get("num_gpu_blocks_source")
    if num_blocks is None and top.get("device_blocks") is not None:
        num_blocks, blocks_source = top["device_blocks"], "# GPU blocks"
    return dict(max_model_len=max_len, max_model_len_source=max_len_source,
                kv_cache_tokens=binding.tokens if binding else None,
                max_concurrency=binding.concurrency if binding else None, max_concurrency_tokens=conc_tokens,
                num_gpu_blocks=num_blocks, num_gpu_blocks_source=blocks_source, padding_layers=padding_layers,
                capacity_reports=capacity)


@lru_cache(maxsize=128)
def parse_vllm_log(text: str) -> VllmLogFigures:
    """The figures of one vLLM start-up log; raises ValueError when the text holds none. Remembered per text: a
    log is read by calibrate, check's site profiles and the benchmarks alike, and its figures are frozen. Each line
    goes to the first of _LINES whose pattern it matches."""
    counted = _runs(logical_lines(text))
    runs = [r for r, _ in counted]
    counts = [n for _, n in counted]
    with_figures = [r for r, n in counted if n]
    # the start-up with the most figure lines (a summary quoting a few lines, a second run cut short, lose)
    records = runs[max(range(len(runs)), key=lambda i: (counts[i], -i))] if runs else []
    reading = _Reading()
    for rec in records:
        _read_line(reading, rec)
    _close_table(reading)
    top = reading.top
    commands = _command_lines(records)
    version = top.get("vllm_version") or top.get("server_version") or top.get("banner_version")
    has_figures = bool(reading.workers or reading.reports or top.get("num_gpu_blocks") is not None
                       or top.get("device_blocks") is not None or top.get("tokens_capacity") is not None)
    if not has_figures and not (version or reading.engine_cfg or reading.non_default or top.get("namespace")):
        raise ValueError(
            "not a vLLM start-up log: found none of vLLM's start-up lines (version banner, engine config, "
            "non-default args, memory profile, Available KV cache memory, GPU KV cache size, # GPU blocks)"
        )
    worker_records, worker_figures = _worker_figures(reading)
    settings, max_len_candidates = _settings(reading, commands)
    generation = top.get("engine_generation")
    if generation is None and version is not None and _version_key(version) >= (0, 11):
        generation = "V1"  # V0 was removed in 0.11
    return VllmLogFigures(
        vllm_version=version, **settings, **worker_figures, **_pool_figures(reading, max_len_candidates),
        attention_backend=top.get("attention_backend"), estimated_max_model_len=top.get("estimated_max_model_len"),
        needed_kv_gib=top.get("needed_kv_gib"), workers=tuple(worker_records), engine_generation=generation,
        num_cpu_blocks=top.get("num_cpu_blocks"), tokens_capacity=top.get("tokens_capacity"),
        startup_free_gib=top.get("startup_free_gib"), startup_total_gib=top.get("startup_total_gib"),
        refused_at_startup=bool(top.get("refused_at_startup")), platform=top.get("platform"),
        runs=len(with_figures) or 1,
    )


def _parallel_layout(engine_cfg: dict, nd: dict, nd_whole: bool, ns: dict, flags: dict, commands: list[str],
                     top: dict):
    """(tp, tp_source, pp, pp_source, tp_at_least, pp_at_least, conflicts): TP and PP from every line that shows
    them, the first source in this order winning; a lower bound where only worker labels show ranks."""
    found: dict[str, list[tuple[int, str]]] = {"tensor_parallel_size": [], "pipeline_parallel_size": []}
    for key, values in found.items():
        for value, source in ((_opt_int(engine_cfg.get(key)), "engine config"), (_opt_int(nd.get(key)), "non-default args"),
                              (_opt_int(ns.get(key)), "args"), (_opt_int(flags.get(key)), "command line")):
            if value is not None:
                values.append((value, source))
        if nd_whole and key not in nd:
            # vLLM prints every argument that differs from its default: a whole dict without the key says 1
            values.append((1, "non-default args (not set: 1)"))
        if commands and not flags.get(key) and not any("--config" in c for c in commands) and flags.get("model"):
            values.append((1, "command line (not set: 1)"))
    world = top.get("world_size")
    tp_values, pp_values = found["tensor_parallel_size"], found["pipeline_parallel_size"]
    if world is not None:
        if world == 1:
            tp_values.append((1, "world size 1"))
            pp_values.append((1, "world size 1"))
        elif tp_values and world % tp_values[0][0] == 0:
            pp_values.append((world // tp_values[0][0], f"world size {world} / TP"))
    labels = top.get("v1_worker_labels") or set()
    if labels:
        # the label format states which of TP and PP is above 1 (not the size: only the ranks that logged show)
        if not any("_PP" in n for n in labels):
            pp_values.append((1, "worker labels (no _PP rank)"))
        if not any("_TP" in n for n in labels):
            tp_values.append((1, "worker labels (no _TP rank)"))
    if top.get("engine_core_worker") and not labels and not top.get("extra_workers"):
        tp_values.append((1, "one worker inside the engine core"))
        pp_values.append((1, "one worker inside the engine core"))
    extra = len(top.get("extra_workers", ())) + (1 if top.get("extra_workers") else 0)  # V0: + the driver
    tp_floor = max(top.get("tp_label_max", 0), extra) or None
    pp_floor = top.get("pp_label_max")
    conflicts: list[str] = []

    def settle(values: list[tuple[int, str]], floor: int | None, what: str):
        if not values:
            return None, None, floor
        value, source = values[0]
        distinct = sorted({v for v, _ in values})
        if len(distinct) > 1:
            conflicts.append(f"{what} " + ", ".join(f"{v} ({s})" for v, s in values))
        if floor is not None and value < floor:
            conflicts.append(f"{what} {value} ({source}) but worker labels show rank {floor - 1}")
        return value, source, None

    tp, tp_source, tp_at_least = settle(tp_values, tp_floor, "TP")
    pp, pp_source, pp_at_least = settle(pp_values, pp_floor, "PP")
    return tp, tp_source, pp, pp_source, tp_at_least, pp_at_least, tuple(conflicts)


def _natural(name: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def _version_key(version: str) -> tuple[int, int]:
    m = re.match(r"v?(\d+)\.(\d+)", version)
    return (int(m[1]), int(m[2])) if m else (0, 0)


def _opt_int(v) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    try:
        return int(str(v).replace(",", ""))
    except ValueError:
        return None  # a human-readable length such as "8k" in the args; the engine line has the number


def _opt_float(v) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def parse_vllm_log_file(path: str | Path) -> VllmLogFigures:
    """Read and parse a log file; ValueError (naming the file) when it is unreadable or not a vLLM log."""
    p = Path(path)
    try:  # the bounded reader: a FIFO or /dev/zero named as a log is refused, not read forever
        text = files.read_text(p, limit=files.MAX_LOG_BYTES, errors="replace", what="logs")
    except InputError as exc:
        raise ValueError(f"{p}: cannot read the file ({exc.what})") from None
    try:
        return parse_vllm_log(text)
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from exc
