"""Read the figures a vLLM start-up log prints about memory and the KV cache. Pure, stdlib only.

vLLM (v1 engine) logs, per worker process, the terms of its KV-cache budget (weights, profiled
activation peak, non-torch memory, CUDA-graph estimate, the memory left for the cache) and, once per
engine, what it made of that memory (blocks, tokens, concurrency). kvplan's vLLM engine model is
calibrated and tested against such logs; this module turns one log's text into a frozen record.

Where each figure comes from (vLLM 0.19.0 file:function; 0.33.0 prints the same lines unless noted):
- "worker init memory snapshot: ... total_memory=79.19GiB ..."   v1/worker/gpu_worker.py:init_device (DEBUG)
- "worker requested memory: 75.23GiB"                             v1/worker/gpu_worker.py:init_device (DEBUG)
- "Model loading took 12.56 GiB memory and ..."                   v1/worker/gpu_model_runner.py:load_model
- "Memory profiling takes ... Total non KV cache memory: ...; torch peak memory increase: ...;
   non-torch forward increase memory: ...; weights memory: ..."   utils/mem_utils.py:MemoryProfilingResult
   (0.33 prints "total consumed (from mem_get_info): X" instead of the non-torch term)
- "Estimated CUDA graph memory: 0.84 GiB total"                   v1/worker/gpu_model_runner.py:profile_cudagraph_memory
- "Available KV cache memory: 61.66 GiB"                          v1/worker/gpu_worker.py:determine_available_memory
- "GPU KV cache size: N tokens", "Maximum concurrency for M tokens per request: X.XXx"
                                                                  v1/core/kv_cache_utils.py:_report_kv_cache_config
   (0.33 prints both on one line: v1/core/kv_cache_utils.py:update_kv_cache_capacity)
- "Graph capturing finished in N secs, took X GiB"                v1/worker/gpu_model_runner.py:capture_model
- "Free memory on device (F/T GiB) on startup. ... `--kv-cache-memory=B` ..." (DEBUG)
                                                                  v1/worker/gpu_worker.py:compile_or_warm_up_model
- "vllm cache_config_info with initialization after num_gpu_blocks is: N"
                                                                  v1/metrics/loggers.py (DEBUG)

GiB figures are kept as the printed decimals (`decimal.Decimal`), never floats: vLLM prints
`round(bytes / 2**30, 2)` (utils/mem_utils.py:format_gib) or `%.2f`, so a printed value stands for an
interval of byte counts, which `gib_bounds` gives exactly.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

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
# Rounding of printed GiB values


def vllm_format_gib(num_bytes: int) -> str:
    """The text vLLM prints for a byte count (utils/mem_utils.py:format_gib): str(round(b / 2**30, 2)).

    b / 2**30 is exact in binary floating point for any realistic b (a division by a power of two),
    and Python's round() is correctly rounded with ties to even, so this is a pure function of b.
    """
    return f"{round(num_bytes / GIB, 2)}"


def gib_bounds(value: Decimal | str) -> tuple[int, int]:
    """The byte interval [low, high) whose members vLLM prints as `value` GiB (2-decimal rounding).

    A member b satisfies round(b / 2**30, 2) == value. Exact, integers only: with c = 100 * value,
    b qualifies when |200 * b - c * 2**31| < 2**30, and on a tie (200 * b == (2c +- 1) * 2**30,
    possible because 2**30 / 200 = 2**27 / 25) round-half-even keeps b only when c is even.
    "%.2f" formatting (used for the CUDA-graph figures) rounds the same way.
    """
    d = Decimal(value)
    scaled = d * 100
    if scaled != scaled.to_integral_value():
        raise ValueError(f"{value!r} has more than 2 decimals; not a printed vLLM GiB figure")
    c = int(scaled)
    lo_num = (2 * c - 1) * GIB  # 200 * (lower boundary in bytes)
    hi_num = (2 * c + 1) * GIB  # 200 * (upper boundary in bytes)
    low = -((-lo_num) // 200)  # ceil
    if low * 200 == lo_num and c % 2 != 0:
        low += 1  # tie at the lower boundary rounds to c - 1 (even)
    high = -((-hi_num) // 200)  # ceil: first b at or past the upper boundary
    if high * 200 == hi_num and c % 2 == 0:
        high += 1  # tie at the upper boundary rounds down to c (even), so it is a member
    if c == 0:
        # round() keeps the sign: (-0.005, 0) prints "-0.0", [0, 0.005) prints "0.0"
        if d.is_signed():
            high = 0
        else:
            low = 0
    return low, high


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
    total_memory_gib: Decimal | None = None  # init snapshot: torch.cuda.mem_get_info total
    init_free_memory_gib: Decimal | None = None  # init snapshot, after CUDA context and NCCL init
    init_non_torch_gib: Decimal | None = None  # init snapshot: CUDA context (+ NCCL at TP/PP >= 2)
    requested_memory_gib: Decimal | None = None  # ceil(total_memory x gpu_memory_utilization)
    weights_gib: Decimal | None = None  # "Model loading took" (or the profiling line's weights term)
    activation_peak_gib: Decimal | None = None  # torch peak memory increase during the profile run
    non_torch_gib: Decimal | None = None  # non-torch increase since the init snapshot (0.19)
    total_consumed_gib: Decimal | None = None  # 0.33: free memory drop since init (mem_get_info)
    total_non_kv_gib: Decimal | None = None  # the profiling line's "Total non KV cache memory"
    cuda_graph_estimate_gib: Decimal | None = None  # "Estimated CUDA graph memory" (profiled)
    cuda_graph_actual_gib: Decimal | None = None  # graph pool after the real capture
    available_kv_gib: Decimal | None = None  # this worker's KV budget ("in use" on the advice line)
    kv_cache_memory_to_requested_bytes: int | None = None  # exact: the advice line's first number
    kv_cache_memory_to_gpu_bytes: int | None = None  # exact: the advice line's second number


@dataclass(frozen=True)
class VllmLogFigures:
    """The launch settings and memory figures of one vLLM start-up log. None where absent.

    Single-valued memory fields are those of the reporting worker (the one that logged
    "Available KV cache memory", rank 0); `workers` holds every worker's own figures.
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
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None  # as printed ("%.2fx")
    max_concurrency_tokens: int | None = None  # the M of "for M tokens per request"
    num_gpu_blocks: int | None = None
    padding_layers: int | None = None  # "Add N padding layers" (hybrid models with uneven groups)
    estimated_max_model_len: int | None = None  # from the "To serve at least one request" error
    needed_kv_gib: Decimal | None = None  # from the same error
    non_default_args: dict | None = field(default=None, hash=False)
    workers: tuple[VllmWorkerFigures, ...] = ()

    def binding_worker(self) -> VllmWorkerFigures | None:
        """The worker with the least KV memory (the one that sizes the pool when layers are equal).

        Under pipeline parallelism the stages may hold different layer counts, so the pool is the
        minimum of available // (page x layers) per worker; this picks by memory alone.
        """
        known = [w for w in self.workers if w.available_kv_gib is not None]
        if not known:
            return None
        return min(known, key=lambda w: w.available_kv_gib)


# --------------------------------------------------------------------------------------------------
# Line splitting

# "(EngineCore pid=283) " opens every record of a multi-process vLLM; progress bars written with
# carriage returns can put two records on one physical line, so records are split at each label.
_PROC = re.compile(r"\((?P<name>[A-Za-z][\w.-]*) pid=(?P<pid>\d+)\)\s?")
_HEAD = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?\s+"
    r"\[(?P<src>[^\]]*)\]\s?(?P<msg>.*)$"
)


@dataclass(frozen=True)
class _Record:
    name: str | None
    pid: int | None
    src: str
    msg: str


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # vLLM colours its level names when writing to a terminal


def _records(text: str) -> list[_Record]:
    out: list[_Record] = []
    for raw in _ANSI.sub("", text).splitlines():
        for piece in raw.split("\r"):
            labels = list(_PROC.finditer(piece))
            if not labels:
                m = _HEAD.match(piece.strip())
                if m:
                    out.append(_Record(None, None, m["src"], m["msg"]))
                continue
            for i, lab in enumerate(labels):
                end = labels[i + 1].start() if i + 1 < len(labels) else len(piece)
                m = _HEAD.match(piece[lab.end():end].strip())
                if m:
                    out.append(_Record(lab["name"], int(lab["pid"]), m["src"], m["msg"]))
    return out


# --------------------------------------------------------------------------------------------------
# Message patterns

_NUM = r"(-?\d+(?:\.\d+)?)"
_INT = r"(\d[\d,]*)"

_SNAPSHOT = re.compile(
    rf"worker init memory snapshot: .*?free_memory={_NUM}GiB, total_memory={_NUM}GiB, "
    rf"\w+_memory={_NUM}GiB, torch_memory={_NUM}GiB, non_torch_memory={_NUM}GiB"
)
_REQUESTED = re.compile(rf"worker requested memory: {_NUM}\s?GiB")
_LOADING = re.compile(rf"Model loading took {_NUM} GiB memory")
_PROFILE = re.compile(rf"Memory profiling takes [\d.]+ seconds\. Total non KV cache memory: {_NUM}GiB; (?P<rest>.*)")
_PEAK = re.compile(rf"torch peak memory increase: {_NUM}GiB")
_NON_TORCH = re.compile(rf"non-torch forward increase memory: {_NUM}GiB")
_CONSUMED = re.compile(rf"total consumed \(from mem_get_info\): {_NUM}GiB")
_PROFILE_WEIGHTS = re.compile(rf"weights memory: {_NUM}GiB")
_CG_ESTIMATE = re.compile(rf"Estimated CUDA graph memory: {_NUM} GiB total")
_CG_CAPTURED = re.compile(rf"Graph capturing finished in [\d.]+ secs, took {_NUM} GiB")
_CG_POOL = re.compile(rf"CUDA graph pool memory: {_NUM} GiB \(actual\), {_NUM} GiB \(estimated\)")
_AVAILABLE = re.compile(rf"Available KV cache memory: {_NUM} GiB")
_ADVICE = re.compile(
    r"Free memory on device \(.*?`--kv-cache-memory=(-?\d+)`.*?`--kv-cache-memory=(-?\d+)`"
    rf".*?Current kv cache memory in use is {_NUM} GiB"
)
_ADVICE_UTIL = re.compile(r"Desired GPU memory utilization is \(([\d.]+), ")
_REQUESTED_UTIL = re.compile(r"Requested memory: ([\d.]+) \(util\)")
_KV_TOKENS = re.compile(rf"KV cache size: {_INT} tokens")
_CONCURRENCY = re.compile(rf"Maximum concurrency for {_INT} tokens per request: ([\d.]+)x")
_NUM_BLOCKS = re.compile(r"num_gpu_blocks is: (\d+)")
_PADDING = re.compile(r"Add (\d+) padding layers")
_TOO_SMALL = re.compile(rf"max seq len \((\d+)\), \({_NUM} GiB KV cache is needed")
_EST_LEN = re.compile(r"the estimated maximum model length is (\d+)")
_VERSION_ENGINE = re.compile(r"Initializing a V1 LLM engine \(v([^)]+)\) with config: (?P<cfg>.*)")
_VERSION_BANNER = re.compile(r"\bversion (\d+\.\d+\.\d+\S*)")
_NON_DEFAULT = re.compile(r"non-default args: (\{.*\})\s*$")
_MNBT = re.compile(
    r"(?:Defaulting max_num_batched_tokens to |Chunked prefill is enabled with max_num_batched_tokens=)(\d+)"
)
_MAX_SEQS = re.compile(r"Defaulting max_num_seqs to (\d+)")
_BACKEND = re.compile(r"Using (\w+) attention backend")
_BLOCK_SET = re.compile(r"Setting (?:kv cache|attention) block size to (\d+)")

# keys of the engine config line ("with config: model='...', ..., kv_cache_dtype=auto, ...")
_CFG = {
    "model": re.compile(r"(?:^|, )model='([^']*)'"),
    "dtype": re.compile(r"(?:^|, )dtype=([^,]+)"),
    "max_seq_len": re.compile(r"(?:^|, )max_seq_len=(\d+)"),
    "tensor_parallel_size": re.compile(r"(?:^|, )tensor_parallel_size=(\d+)"),
    "pipeline_parallel_size": re.compile(r"(?:^|, )pipeline_parallel_size=(\d+)"),
    "quantization": re.compile(r"(?:^|, )quantization=([^,]+)"),
    "enforce_eager": re.compile(r"(?:^|, )enforce_eager=(True|False)"),
    "kv_cache_dtype": re.compile(r"(?:^|, )kv_cache_dtype=([^,]+)"),
    "enable_prefix_caching": re.compile(r"(?:^|, )enable_prefix_caching=(True|False|None)"),
}


def _dec(s: str | None) -> Decimal | None:
    return None if s is None else Decimal(s)


def _int(s: str) -> int:
    return int(s.replace(",", ""))


def _bool(s: str | None) -> bool | None:
    return {"True": True, "False": False}.get(s) if s is not None else None


# --------------------------------------------------------------------------------------------------
# Parsing


def parse_vllm_log(text: str) -> VllmLogFigures:
    """The figures of one vLLM start-up log; raises ValueError when the text is not one."""
    records = _records(text)
    workers: dict[int | None, dict] = {}
    names: dict[int | None, str | None] = {}
    order: list[int | None] = []
    top: dict = {}
    engine_cfg: dict[str, str] = {}
    non_default: dict | None = None
    reporting_pid: object = ...  # the pid that logged "Available KV cache memory"

    def worker(rec: _Record) -> dict:
        if rec.pid not in workers:
            workers[rec.pid] = {}
            order.append(rec.pid)
        names[rec.pid] = rec.name
        return workers[rec.pid]

    def first(key: str, value) -> None:
        if value is not None and top.get(key) is None:
            top[key] = value

    for rec in records:
        msg = rec.msg
        if rec.pid in names:
            names[rec.pid] = rec.name
        if m := _VERSION_ENGINE.search(msg):
            first("vllm_version", m[1])
            cfg = m["cfg"]
            for key, pat in _CFG.items():
                if (k := pat.search(cfg)) and key not in engine_cfg:
                    engine_cfg[key] = k[1].strip()
        elif (m := _VERSION_BANNER.search(msg)) and "entrypoints" in rec.src:
            first("banner_version", m[1])
        elif m := _NON_DEFAULT.search(msg):
            if non_default is None:
                try:
                    parsed = ast.literal_eval(m[1])
                except (ValueError, SyntaxError):
                    parsed = None  # a repr vLLM could not print as literals (an enum, an object)
                if isinstance(parsed, dict):
                    non_default = parsed
        elif m := _SNAPSHOT.search(msg):
            w = worker(rec)
            w.setdefault("init_free_memory_gib", _dec(m[1]))
            w.setdefault("total_memory_gib", _dec(m[2]))
            w.setdefault("init_non_torch_gib", _dec(m[5]))
        elif m := _REQUESTED.search(msg):
            worker(rec).setdefault("requested_memory_gib", _dec(m[1]))
        elif m := _LOADING.search(msg):
            worker(rec)["weights_gib"] = _dec(m[1])
        elif m := _PROFILE.search(msg):
            w = worker(rec)
            rest = m["rest"]
            w["total_non_kv_gib"] = _dec(m[1])
            if k := _PEAK.search(rest):
                w["activation_peak_gib"] = _dec(k[1])
            if k := _NON_TORCH.search(rest):
                w["non_torch_gib"] = _dec(k[1])
            if k := _CONSUMED.search(rest):
                w["total_consumed_gib"] = _dec(k[1])
            if k := _PROFILE_WEIGHTS.search(rest):
                w["profile_weights_gib"] = _dec(k[1])
        elif m := _CG_ESTIMATE.search(msg):
            worker(rec)["cuda_graph_estimate_gib"] = _dec(m[1])
        elif m := _CG_CAPTURED.search(msg):
            worker(rec)["cuda_graph_actual_gib"] = _dec(m[1])
        elif m := _CG_POOL.search(msg):
            w = worker(rec)
            w["cuda_graph_actual_gib"] = _dec(m[1])
            w.setdefault("cuda_graph_estimate_gib", _dec(m[2]))
        elif m := _AVAILABLE.search(msg):
            worker(rec)["available_kv_gib"] = _dec(m[1])
            if reporting_pid is ...:
                reporting_pid = rec.pid
        elif m := _ADVICE.search(msg):
            w = worker(rec)
            w["kv_cache_memory_to_requested_bytes"] = int(m[1])
            w["kv_cache_memory_to_gpu_bytes"] = int(m[2])
            w.setdefault("available_kv_gib", _dec(m[3]))
            if k := _ADVICE_UTIL.search(msg):
                first("util_from_log", k[1])
        elif m := _REQUESTED_UTIL.search(msg):
            first("util_from_log", m[1])
        elif "GPU KV cache size" in msg or "Maximum concurrency for" in msg:
            # 0.19 prints two lines, 0.33 one line holding both
            if k := _KV_TOKENS.search(msg):
                first("kv_cache_tokens", _int(k[1]))
            if k := _CONCURRENCY.search(msg):
                first("max_concurrency_tokens", _int(k[1]))
                first("max_concurrency", float(k[2]))
        elif m := _NUM_BLOCKS.search(msg):
            first("num_gpu_blocks", int(m[1]))
        elif m := _PADDING.search(msg):
            # one warning per attention type that needed padding; every worker may repeat it
            top.setdefault("padding_by_line", set()).add((rec.pid, m[0], msg))
        elif m := _TOO_SMALL.search(msg):
            first("needed_kv_gib", _dec(m[2]))
            if k := _EST_LEN.search(msg):
                first("estimated_max_model_len", int(k[1]))
        elif m := _MNBT.search(msg):
            # "Defaulting max_num_batched_tokens to N" comes first; the scheduler's
            # "Chunked prefill is enabled with max_num_batched_tokens=N" is the final value
            top["max_num_batched_tokens"] = int(m[1])
        elif m := _MAX_SEQS.search(msg):
            top["max_num_seqs"] = int(m[1])
        elif m := _BACKEND.search(msg):
            first("attention_backend", m[1])
        elif m := _BLOCK_SET.search(msg):
            top["block_size_logged"] = int(m[1])

    version = top.get("vllm_version") or top.get("banner_version")
    if version is None and non_default is None and not workers and top.get("kv_cache_tokens") is None:
        raise ValueError(
            "not a vLLM start-up log: found no vLLM version banner, engine config, memory "
            "profiling or KV-cache line"
        )

    worker_records = []
    # rank order (Worker_TP0, Worker_TP1, ...) reads better than the order the processes logged in
    for pid in sorted(order, key=lambda p: (_natural(names.get(p) or ""), p is None, p or 0)):
        w = dict(workers[pid])
        profile_weights = w.pop("profile_weights_gib", None)
        w.setdefault("weights_gib", profile_weights)
        worker_records.append(VllmWorkerFigures(pid=pid, name=names.get(pid), **w))
    by_pid = {w.pid: w for w in worker_records}
    reporting = by_pid.get(reporting_pid) if reporting_pid is not ... else None
    if reporting is None:
        reporting = next((w for w in worker_records if w.total_non_kv_gib is not None), None)
    if reporting is None and worker_records:
        reporting = worker_records[0]

    def from_workers(attr: str):
        """The reporting worker's figure, else the first worker that has it."""
        if reporting is not None and getattr(reporting, attr) is not None:
            return getattr(reporting, attr)
        return next((getattr(w, attr) for w in worker_records if getattr(w, attr) is not None), None)

    nd = non_default or {}

    def pick(*candidates):
        return next((c for c in candidates if c is not None), None)

    util = nd.get("gpu_memory_utilization")
    if util is None and top.get("util_from_log") is not None:
        util = float(top["util_from_log"])
    quant = engine_cfg.get("quantization")
    if quant in (None, "None"):
        quant = nd.get("quantization")
    block_size = pick(top.get("block_size_logged"), nd.get("block_size"))
    padding = top.get("padding_by_line")
    padding_layers = None
    if padding:
        # a warning is repeated per worker; count the distinct warnings of one process
        first_pid = min(padding, key=lambda t: (t[0] is None, t[0] or 0))[0]
        padding_layers = sum(int(_PADDING.search(m)[1]) for pid, _, m in padding if pid == first_pid)

    return VllmLogFigures(
        vllm_version=version,
        model=pick(engine_cfg.get("model"), nd.get("model"), nd.get("model_tag")),
        tensor_parallel_size=pick(_opt_int(engine_cfg.get("tensor_parallel_size")), nd.get("tensor_parallel_size")),
        pipeline_parallel_size=pick(
            _opt_int(engine_cfg.get("pipeline_parallel_size")), nd.get("pipeline_parallel_size")
        ),
        max_model_len=pick(_opt_int(engine_cfg.get("max_seq_len")), _opt_int(nd.get("max_model_len"))),
        gpu_memory_utilization=None if util is None else float(util),
        kv_cache_dtype=pick(engine_cfg.get("kv_cache_dtype"), nd.get("kv_cache_dtype")),
        dtype=pick(engine_cfg.get("dtype"), nd.get("dtype")),
        quantization=quant,
        block_size=block_size,
        enable_prefix_caching=pick(_bool(engine_cfg.get("enable_prefix_caching")), nd.get("enable_prefix_caching")),
        enforce_eager=pick(_bool(engine_cfg.get("enforce_eager")), nd.get("enforce_eager")),
        max_num_batched_tokens=pick(nd.get("max_num_batched_tokens"), top.get("max_num_batched_tokens")),
        max_num_seqs=pick(nd.get("max_num_seqs"), top.get("max_num_seqs")),
        attention_backend=top.get("attention_backend"),
        total_memory_gib=from_workers("total_memory_gib"),
        requested_memory_gib=from_workers("requested_memory_gib"),
        weights_gib=from_workers("weights_gib"),
        activation_peak_gib=from_workers("activation_peak_gib"),
        non_torch_gib=from_workers("non_torch_gib"),
        total_consumed_gib=from_workers("total_consumed_gib"),
        total_non_kv_gib=from_workers("total_non_kv_gib"),
        cuda_graph_gib=from_workers("cuda_graph_estimate_gib"),
        cuda_graph_actual_gib=from_workers("cuda_graph_actual_gib"),
        available_kv_gib=from_workers("available_kv_gib"),
        kv_cache_tokens=top.get("kv_cache_tokens"),
        max_concurrency=top.get("max_concurrency"),
        max_concurrency_tokens=top.get("max_concurrency_tokens"),
        num_gpu_blocks=top.get("num_gpu_blocks"),
        padding_layers=padding_layers,
        estimated_max_model_len=top.get("estimated_max_model_len"),
        needed_kv_gib=top.get("needed_kv_gib"),
        non_default_args=non_default,
        workers=tuple(worker_records),
    )


def _natural(name: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def _opt_int(v) -> int | None:
    if v is None:
        return None
    if isinstance(v, int):
        return v
    try:
        return int(str(v).replace(",", ""))
    except ValueError:
        return None  # a human-readable length such as "8k" in the args; the engine line has the number


def parse_vllm_log_file(path: str | Path) -> VllmLogFigures:
    """Read and parse a log file; ValueError (naming the file) when it is unreadable or not a vLLM log."""
    from kvplan.core import files
    from kvplan.core.errors import InputError

    p = Path(path)
    try:  # the bounded reader: a FIFO or /dev/zero named as a log is refused, not read forever
        text = files.read_text(p, limit=files.MAX_LOG_BYTES, errors="replace", what="logs")
    except InputError as exc:
        raise ValueError(f"{p}: cannot read the file ({exc.what})") from None
    try:
        return parse_vllm_log(text)
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from exc
