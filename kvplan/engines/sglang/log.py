"""Read the figures an SGLang start-up log prints about memory and its token pool, as users paste it. Pure, stdlib.

Paste forms (colour codes, hard wraps, wrappers) are undone by kvplan/engines/logtext.py; each line's text is
searched for SGLang's phrases. Rank heads: `[2025-03-08 12:29:13 TP0]`, `[2025-10-07 23:17:19 DP0 TP0]`,
`[2026-05-07 13:39:13 DP3 TP3 EP3]`, `[TP0]`, or none (`[2026-05-08 20:28:07]`, bare lines).

What each figure is (research/sglang/releases.md R3, R6; every "GB" SGLang prints is GiB: get_available_gpu_memory
divides by 1 << 30, the pool lines by 1024**3):
- "Load weight begin. avail mem=P GB": P, the free memory before the weights (model_runner.py, after
  init_torch_distributed);
- "Load weight end. [elapsed=…, ]type=…, [dtype=… | quant=…], avail mem=A GB[, mem usage=W GB]": A and the weights;
- "KV Cache is allocated. [dtype: …, ]#tokens: N, K size: X GB, V size: Y GB" (MLA: "KV size: X GB"): the pool,
  sized (N + page) tokens (mem_cache/memory_pool.py); a speculative draft or an SWA pool prints a second line;
- "max_total_num_tokens=N, chunked_prefill_size=…, max_prefill_tokens=…, max_running_requests=…, context_len=L
  [, available_gpu_mem=X GB]" (managers/scheduler.py);
- "Use sliding window memory pool. full_layer_tokens=F, swa_layer_tokens=S"; "SWAKVPool mem usage: X GB, swa size:
  S, full size: F"; "Mamba Cache is allocated. max_mamba_cache_size: M, conv_state size: X GB, ssm_state size: Y GB";
- "Memory profiling: available_gpu_memory=A GB, total_gpu_memory=T GB, mem_fraction_static=F, rest_memory=R GB"
  (a KTransformers build);
- "Init torch distributed ends. [elapsed=…, ]mem usage=X GB"; "Capture cuda graph end. … mem usage=X GB";
- server_args=ServerArgs(...): model_path, tp_size, pp_size, dp_size, mem_fraction_static, context_length,
  kv_cache_dtype, page_size, chunked_prefill_size, max_running_requests, max_total_tokens, enable_dp_attention.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable

from kvplan.engines.logtext import NUMBER as _NUM  # a printed number, one group
from kvplan.engines.logtext import LineRow, dispatch, lines as logical_lines, spaced

__all__ = ["SglangLogFigures", "SglangPool", "SglangRank", "parse_sglang_log"]

_RANK_HEAD = re.compile(r"^\[(?:\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\s*)?(?P<rank>(?:(?:DP|PP|TP|EP|CP)\d+\s*)*)\]\s*")
_BEGIN = spaced(rf"Load weight begin\. avail mem={_NUM} GB")
_END = spaced(rf"Load weight end\.(?P<rest>.*?)avail mem={_NUM} GB(?:, mem usage={_NUM} GB)?")
_END_TYPE = re.compile(r"type=(\w+)")
_KV = spaced(rf"KV Cache is allocated\.(?: dtype: (?P<dtype>[\w.]+),)? #tokens: (?P<n>\d+), "
             rf"(?:K size: (?P<k>{_NUM[1:-1]}) GB, V size: (?P<v>{_NUM[1:-1]}) GB|KV size: (?P<kv>{_NUM[1:-1]}) GB)")
_POOL_END = spaced(rf"Memory pool end\. avail mem={_NUM} GB")
_MAX_TOTAL = spaced(r"max_total_num_tokens=(\d+)(?P<rest>.*)")
_SWA_SPLIT = spaced(r"Use sliding window memory pool\. full_layer_tokens=(\d+), swa_layer_tokens=(\d+)")
_SWA_POOL = spaced(rf"SWAKVPool mem usage: {_NUM} GB, swa size: (\d+), full size: (\d+)")
_MAMBA = spaced(rf"Mamba Cache is allocated\. max_mamba_cache_size: (\d+), conv_state size: {_NUM} ?GB, ssm_state size: "
                rf"{_NUM} ?GB")
_PROFILING = spaced(rf"Memory profiling: available_gpu_memory={_NUM} GB, total_gpu_memory={_NUM} GB, "
                    rf"mem_fraction_static=([\d.]+), rest_memory={_NUM} GB")
_DIST = spaced(rf"Init torch distributed ends\.(?: elapsed=[\d.]+ s,)? mem usage={_NUM} GB")
_GRAPH_END = spaced(rf"Capture cuda graph end\..*?mem usage={_NUM} GB")
_KV_DTYPE = spaced(r"Using KV cache dtype: ([\w.]+)")
_NO_ROOM = spaced(r"Loaded weights leave no GPU memory for the KV cache")
_SERVER_ARGS = spaced(r"server_args=ServerArgs\((?P<args>.*)")
_COMMAND = re.compile(r"(?:sglang\.launch_server|sglang serve|sglang\.bench_\w+)(?=\s|$)")
_ARG_KEYS = ("model_path", "tp_size", "pp_size", "dp_size", "ep_size", "mem_fraction_static", "context_length",
             "kv_cache_dtype", "page_size", "chunked_prefill_size", "max_running_requests", "max_total_tokens",
             "enable_dp_attention", "quantization", "dtype", "attention_backend", "speculative_algorithm")
_ARG = {k: re.compile(rf"(?:^|[(,]\s*){k}=('(?:[^'\\]|\\.)*'|[^,()]+)") for k in _ARG_KEYS}
_FLAGS = {
    "tp_size": r"--tp(?:-size)?|--tensor-parallel-size",
    "pp_size": r"--pp(?:-size)?|--pipeline-parallel-size",
    "dp_size": r"--dp(?:-size)?|--data-parallel-size",
    "mem_fraction_static": r"--mem-fraction-static",
    "context_length": r"--context-length",
    "kv_cache_dtype": r"--kv-cache-dtype",
    "page_size": r"--page-size",
    "model_path": r"--model-path|--model",
    "chunked_prefill_size": r"--chunked-prefill-size",
    "max_running_requests": r"--max-running-requests",
}
_FLAG_VALUE = {k: re.compile(rf"(?:^|\s)(?:{f})(?:=|\s+)([^\s\\`]+)") for k, f in _FLAGS.items()}


@dataclass(frozen=True)
class SglangPool:
    """One "KV Cache is allocated" line."""

    tokens: int
    k_gib: Decimal | None
    v_gib: Decimal | None
    kv_gib: Decimal | None  # MLA's one figure
    dtype: str | None

    @property
    def total_gib(self) -> Decimal | None:
        if self.kv_gib is not None:
            return self.kv_gib
        if self.k_gib is not None and self.v_gib is not None:
            return self.k_gib + self.v_gib
        return None


@dataclass(frozen=True)
class SglangRank:
    """What one rank (one GPU) logged. None where it logged nothing."""

    rank: str  # "TP0", "DP0 TP0", "" for a log without rank heads
    dist_init_gib: Decimal | None = None
    free_before_load_gib: Decimal | None = None  # P
    free_after_load_gib: Decimal | None = None  # A
    weights_gib: Decimal | None = None
    pools: tuple[SglangPool, ...] = ()
    pool_end_free_gib: Decimal | None = None
    cuda_graph_gib: Decimal | None = None
    mamba_slots: int | None = None
    mamba_gib: Decimal | None = None


@dataclass(frozen=True)
class SglangLogFigures:
    model: str | None = None
    architecture: str | None = None  # the "type=" of Load weight end
    tp_size: int | None = None
    pp_size: int | None = None
    dp_size: int | None = None
    tp_source: str | None = None
    pp_source: str | None = None
    tp_at_least: int | None = None
    mem_fraction_static: Decimal | None = None
    context_length: int | None = None
    kv_cache_dtype: str | None = None
    kv_dtype_logged: str | None = None  # "Using KV cache dtype: torch.float8_e4m3fn"
    page_size: int | None = None
    chunked_prefill_size: int | None = None
    max_running_requests: int | None = None
    enable_dp_attention: bool | None = None
    max_total_num_tokens: int | None = None
    context_len: int | None = None  # the scheduler's figure
    available_gpu_mem_gib: Decimal | None = None
    full_layer_tokens: int | None = None
    swa_layer_tokens: int | None = None
    total_gpu_memory_gib: Decimal | None = None  # only the KTransformers "Memory profiling" line prints it
    rest_memory_gib: Decimal | None = None
    no_room: bool = False
    ranks: tuple[SglangRank, ...] = ()

    def binding_rank(self) -> SglangRank | None:
        """The rank SGLang sizes the pool by: P and A are minima over ranks (all_reduce MIN), so the rank with the
        least free memory after loading."""
        known = [r for r in self.ranks if r.free_after_load_gib is not None]
        if known:
            return min(known, key=lambda r: r.free_after_load_gib)
        return self.ranks[0] if self.ranks else None


def _value(raw: str | None):
    if raw is None:
        return None
    raw = raw.strip()
    if raw in ("None", "null"):
        return None
    if raw in ("True", "False"):
        return raw == "True"
    return raw.strip("'\"")


def _int(v) -> int | None:
    try:
        return None if v is None or isinstance(v, bool) else int(str(v))
    except ValueError:
        return None


def _dec(v) -> Decimal | None:
    try:
        return None if v is None or isinstance(v, bool) else Decimal(str(v))
    except ArithmeticError:
        return None


@dataclass
class _Reading:
    """What the lines of one SGLang start-up give, gathered line by line: per rank ("TP0", "DP1 TP2", "" for a log
    without rank heads), server_args, a pasted command line and the run's own figures."""

    ranks: dict[str, dict] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    args: dict[str, object] = field(default_factory=dict)
    flags: dict[str, str] = field(default_factory=dict)
    top: dict = field(default_factory=dict)

    def rank(self, key: str) -> dict:
        if key not in self.ranks:
            self.ranks[key] = {"pools": []}
            self.order.append(key)
        return self.ranks[key]


def _on_server_args(r: _Reading, key: str, msg: str, m) -> None:
    for k, pat in _ARG.items():
        if (v := pat.search(m["args"])) and k not in r.args:
            r.args[k] = _value(v[1])


def _on_command(r: _Reading, key: str, msg: str, m) -> None:
    for k, pat in _FLAG_VALUE.items():
        if (v := pat.search(msg)) and k not in r.flags:
            r.flags[k] = v[1].strip("'\"")


def _on_load_end(r: _Reading, key: str, msg: str, m) -> None:
    rank = r.rank(key)
    rank["free_after_load_gib"] = Decimal(m[2])
    if m[3] is not None:
        rank["weights_gib"] = Decimal(m[3])
    if t := _END_TYPE.search(m["rest"]):
        r.top.setdefault("architecture", t[1])


def _on_kv_allocated(r: _Reading, key: str, msg: str, m) -> None:
    r.rank(key)["pools"].append(SglangPool(tokens=int(m["n"]), k_gib=_dec(m["k"]), v_gib=_dec(m["v"]),
                                           kv_gib=_dec(m["kv"]), dtype=m["dtype"]))


def _on_max_total(r: _Reading, key: str, msg: str, m) -> None:
    top, rest = r.top, m["rest"]
    top.setdefault("max_total_num_tokens", int(m[1]))
    for pattern, name, read in ((r"context_len=(\d+)", "context_len", int),
                                (rf"available_gpu_mem={_NUM} GB", "available_gpu_mem_gib", Decimal),
                                (r"max_running_requests=(\d+)", "max_running_logged", int),
                                (r"chunked_prefill_size=(-?\d+)", "chunked_logged", int)):
        if found := re.search(pattern, rest):
            top.setdefault(name, read(found[1]))


def _on_swa_split(r: _Reading, key: str, msg: str, m) -> None:
    r.top.setdefault("full_layer_tokens", int(m[1]))
    r.top.setdefault("swa_layer_tokens", int(m[2]))


def _on_swa_pool(r: _Reading, key: str, msg: str, m) -> None:
    r.top.setdefault("full_layer_tokens", int(m[3]))
    r.top.setdefault("swa_layer_tokens", int(m[2]))


def _on_mamba(r: _Reading, key: str, msg: str, m) -> None:
    rank = r.rank(key)
    rank["mamba_slots"] = int(m[1])
    rank["mamba_gib"] = Decimal(m[2]) + Decimal(m[3])


def _on_profiling(r: _Reading, key: str, msg: str, m) -> None:
    r.top.setdefault("total_gpu_memory_gib", Decimal(m[2]))
    r.top.setdefault("profiling_mfs", Decimal(m[3]))
    r.top.setdefault("rest_memory_gib", Decimal(m[4]))
    r.rank(key).setdefault("free_after_load_gib", Decimal(m[1]))


def _rank_figure(name: str) -> Callable[[_Reading, str, str, Any], None]:
    """A handler that keeps the line's first figure (GB) as the rank's `name`, the first time the rank logs it."""
    def handle(r: _Reading, key: str, msg: str, m) -> None:
        r.rank(key).setdefault(name, Decimal(m[1]))
    return handle


def _on_no_room(r: _Reading, key: str, msg: str, m) -> None:
    r.top["no_room"] = True


# SGLang's lines and what each gives, tried in this order; the first that matches a line takes it
_LINES: tuple[LineRow, ...] = (
    (_SERVER_ARGS.search, _on_server_args),
    (_COMMAND.search, _on_command),
    (_BEGIN.search, _rank_figure("free_before_load_gib")),
    (_END.search, _on_load_end),
    (_KV.search, _on_kv_allocated),
    (_POOL_END.search, _rank_figure("pool_end_free_gib")),
    (_MAX_TOTAL.search, _on_max_total),
    (_SWA_SPLIT.search, _on_swa_split),
    (_SWA_POOL.search, _on_swa_pool),
    (_MAMBA.search, _on_mamba),
    (_PROFILING.search, _on_profiling),
    (_DIST.search, _rank_figure("dist_init_gib")),
    (_GRAPH_END.search, _rank_figure("cuda_graph_gib")),
    (_KV_DTYPE.search, lambda r, key, msg, m: r.top.setdefault("kv_dtype_logged", m[1])),
    (_NO_ROOM.search, _on_no_room),
)


def _read_line(r: _Reading, text: str) -> None:
    """One line: its rank head (what it says of the layout), then the first row of _LINES that finds it."""
    msg, top = text, r.top
    head = _RANK_HEAD.match(msg)
    key = " ".join(head["rank"].split()) if head else ""
    if head:
        msg = msg[head.end():]
    if head and re.match(r"\[\d{4}-", head[0]):
        top["ranked_heads" if key else "unranked_heads"] = True
    if key:
        top.setdefault("rank_words", set()).update(re.findall(r"[A-Z]+", key))
        if m := re.search(r"TP(\d+)", key):
            top["tp_label_max"] = max(top.get("tp_label_max", 0), int(m[1]) + 1)
    dispatch(_LINES, msg, r, key, msg)


def _layout(r: _Reading) -> tuple[int | None, str | None, int | None, str | None]:
    """(TP, where it was read, PP, where it was read)."""
    args, flags, top = r.args, r.flags, r.top

    def sourced(key: str):
        if args.get(key) is not None and _int(args[key]) is not None:
            return _int(args[key]), "server_args"
        if flags.get(key) is not None and _int(flags[key]) is not None:
            return _int(flags[key]), "command line"
        if key in ("tp_size", "pp_size") and any(k in args for k in ("model_path", "mem_fraction_static")):
            return None, None  # server_args cut before the key: not stated
        return None, None

    tp, tp_source = sourced("tp_size")
    pp, pp_source = sourced("pp_size")
    # managers/scheduler.py run_scheduler_process: the log prefix gets " TP{rank}" only when tp_size > 1 and
    # " PP{rank}" only when pp_size > 1, so timestamped heads without them state TP 1 / PP 1 (bench_one_batch
    # prefixes TP0 on one GPU too, so a TP rank alone is a lower bound)
    words = top.get("rank_words", set())
    if top.get("unranked_heads") and not top.get("ranked_heads"):
        if tp is None:
            tp, tp_source = 1, "rank heads (no TP rank)"
        if pp is None:
            pp, pp_source = 1, "rank heads (no PP rank)"
    elif top.get("ranked_heads") and "TP" in words and "PP" not in words and pp is None:
        pp, pp_source = 1, "rank heads (no PP rank)"
    return tp, tp_source, pp, pp_source


def parse_sglang_log(text: str) -> SglangLogFigures:
    """The figures of one SGLang start-up log; ValueError when the text holds none of SGLang's lines. Each line goes
    to the first of _LINES whose pattern it matches."""
    r = _Reading()
    for line in logical_lines(text):
        _read_line(r, line.text)
    args, flags, top = r.args, r.flags, r.top
    if not r.ranks and not args and top.get("max_total_num_tokens") is None and not top.get("no_room"):
        raise ValueError("not an SGLang start-up log: found none of SGLang's start-up lines (server_args, Load weight "
                         "begin/end, KV Cache is allocated, max_total_num_tokens)")
    tp, tp_source, pp, pp_source = _layout(r)
    tp_floor = top.get("tp_label_max")
    mfs = _dec(args.get("mem_fraction_static")) or _dec(flags.get("mem_fraction_static")) or top.get("profiling_mfs")
    rank_records = []
    for key in sorted(r.order, key=lambda k: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", k)]):
        data = dict(r.ranks[key])
        data["pools"] = tuple(data["pools"])
        rank_records.append(SglangRank(rank=key, **data))
    return SglangLogFigures(
        model=_value(str(args["model_path"])) if args.get("model_path") else flags.get("model_path"),
        architecture=top.get("architecture"), tp_size=tp, pp_size=pp, dp_size=_int(args.get("dp_size")),
        tp_source=tp_source, pp_source=pp_source, tp_at_least=tp_floor if tp is None else None,
        mem_fraction_static=mfs,
        context_length=_int(args.get("context_length")) or _int(flags.get("context_length")),
        kv_cache_dtype=args.get("kv_cache_dtype") or flags.get("kv_cache_dtype"),
        kv_dtype_logged=top.get("kv_dtype_logged"),
        page_size=_int(args.get("page_size")) or _int(flags.get("page_size")),
        chunked_prefill_size=_int(args.get("chunked_prefill_size")) or top.get("chunked_logged"),
        max_running_requests=_int(args.get("max_running_requests")) or top.get("max_running_logged"),
        enable_dp_attention=args.get("enable_dp_attention") if isinstance(args.get("enable_dp_attention"), bool) else None,
        max_total_num_tokens=top.get("max_total_num_tokens"), context_len=top.get("context_len"),
        available_gpu_mem_gib=top.get("available_gpu_mem_gib"), full_layer_tokens=top.get("full_layer_tokens"),
        swa_layer_tokens=top.get("swa_layer_tokens"), total_gpu_memory_gib=top.get("total_gpu_memory_gib"),
        rest_memory_gib=top.get("rest_memory_gib"), no_room=bool(top.get("no_room")), ranks=tuple(rank_records),
    )
