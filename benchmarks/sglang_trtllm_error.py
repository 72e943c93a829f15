"""How far kvplan's SGLang and TensorRT-LLM pools are from what the engines built, over the real start-up logs.

Three measurements, each on every log that allows it (tests/data/sglang_logs, tests/data/trtllm_logs):

1. end to end: from the GPU and the launch flags only (model config, GPU, tp, release, dtype, memory fraction,
   build settings), kvplan predicts the token pool, leave-one-source-out: the measured constants
   (kvplan/engines/sglang/budget.py, kvplan/engines/trtllm/budget.py) are refitted without the logs of the
   scored log's source, and the band is judged the same way;
2. SGLang's "free before loading" P (CUDA context, distributed init), leave-one-source-out, on every log that
   prints it for a catalog GPU;
3. given the budget the engine logged (its free memory, fraction, bytes per token), the pool within the rounding
   of the printed figures.

Every log not scored in one of them is listed with the reason. The logged figures are read from each log's
index.jsonl "extracted" lines (verbatim from the log) by a small private reader below.

    python benchmarks/sglang_trtllm_error.py [--markdown]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

GIB = 2**30
DATA = HERE / "tests" / "data"
LLAMA_8B = DATA / "vllm_models" / "meta-llama--Llama-3.1-8B-Instruct" / "config.json"


# ----------------------------------------------------------------------------------- the logs' figures
def records(engine: str) -> list[dict]:
    path = DATA / f"{engine}_logs" / "index.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _all(lines, pattern) -> list[tuple[str, ...]]:
    rx = re.compile(pattern)
    return [m.groups() for line in lines for m in [rx.search(line)] if m]


def figures(rec: dict) -> dict:
    """The memory figures a log prints (the last one of a kind where the engine prints it per rank or twice)."""
    lines = rec.get("extracted") or []
    out: dict = {}
    if tokens := _all(lines, r"#tokens: (\d+)"):
        out["tokens"] = int(tokens[-1][0])
    if total := _all(lines, r"max_total_num_tokens=(\d+)"):
        out["tokens"] = int(total[-1][0])
    if begin := _all(lines, r"Load weight begin\. avail mem=([\d.]+) GB"):
        out["free_before"] = min(Fraction(x[0]) for x in begin)
    if end := _all(lines, r"Load weight end\..*avail mem=([\d.]+) GB(?:, mem usage=([\d.]+) GB)?"):
        low = min(end, key=lambda x: Fraction(x[0]))
        out["free_after"] = Fraction(low[0])
        if low[1]:
            out["load_usage"] = Fraction(low[1])
    if kv := _all(lines, r"K size: ([\d.]+) GB, V size: ([\d.]+) GB"):
        out["k_v"] = (Fraction(kv[-1][0]), Fraction(kv[-1][1]))
    if alloc := _all(lines, r"Allocated ([\d.]+) GiB for max tokens in paged KV cache \((\d+)\)"):
        out["alloc_gib"], out["tokens"] = Fraction(alloc[-1][0]), int(alloc[-1][1])
        out["alloc_line"] = max(i for i, line in enumerate(lines) if "for max tokens in paged KV cache" in line)
    if blocks := _all(lines, r"Number of blocks in KV cache primary pool: (\d+)"):
        out["blocks"] = int(blocks[-1][0])
    if tpb := _all(lines, r"Number of tokens per block: (\d+)"):
        out["tokens_per_block"] = int(tpb[-1][0])
    if avail := _all(lines, r"available KV cache memory when calculating max tokens: ([\d.]+) GiB.*kv size is (\d+)"):
        out["pt_available"], out["kv_size"] = Fraction(avail[-1][0]), int(avail[-1][1])
    # the last estimate of max_tokens, in log order (the profiled one follows the warm-up pool's)
    for i, line in enumerate(lines):
        if m := re.search(r"Estimated max tokens in KV cache : (\d+)", line):
            out["max_tokens"], out["max_tokens_line"] = int(m.group(1)), i
        if m := re.search(r"set \(to ([\d.]+) and (\d+)(?: with free memory|, respectively)", line):
            out["fraction"], out["max_tokens"], out["max_tokens_line"] = Fraction(m.group(1)), int(m.group(2)), i
    if engine := _all(lines, r"Memory usage when calculating max tokens in paged kv cache: total: ([\d.]+) GiB, "
                              r"available: ([\d.]+) GiB"):
        out["engine_total"] = Fraction(engine[0][0])
        out["engine_available"] = min(Fraction(x[1]) for x in engine)
    return out


# ------------------------------------------------------------------------------------ end-to-end runs
@dataclass(frozen=True)
class Run:
    engine: str
    model: Path
    gpu: str | None = None
    gpu_mem: str | None = None
    tp: int = 1
    seq: int | None = None
    version: str | None = None
    util: str | None = None
    dtype: str | None = None
    kv: str = "auto"
    options: tuple[str, ...] = ()
    backend: str | None = None
    kind: str = ""  # the GPU kind as the table groups it
    why: str = ""  # what the run takes from the log (flags) and what it assumes


RUNS = {
    "vllm21348-sglang-qwen3-235b-fp8-4xh100-tp4": Run(
        "sglang", DATA / "public_models" / "Qwen--Qwen3-235B-A22B-FP8" / "config.json", gpu="h100-sxm-80gb", tp=4,
        util="0.93", version="0.4.9", kind="H100 x4",
        why="--tp 4 --mem-fraction-static 0.93; the release is not printed (July 2025: 0.4.9, inferred)"),
    "sglang-pr4826-gemma3-multimodal-141gb-tp1-v0.4.4": Run(
        "sglang", DATA / "vllm_models" / "google--gemma-3-4b-it" / "config.json", gpu="h200-141gb", version="0.4.4.post2",
        kind="H200 (inferred)", why="defaults; the GPU is not named (an H200 fits its 139.21 GiB free); gemma-3-4b-it "
                                    "fits its 8.13 GiB of weights; main of late March 2025 = 0.4.4.post2"),
    "waynehacking8-llama31-8b-fp8-h100-tp1-kv090-v0.20": Run(
        "trtllm", LLAMA_8B, gpu="h100-sxm-80gb", seq=257, version="0.20.0", util="0.9", dtype="fp8", kv="fp8",
        options=("backend=pytorch", "max_batch_size=2048", "max_num_tokens=8192"), backend="pytorch", kind="H100",
        why="trtllm-bench: max_seq_len 257, max_num_requests 2048, max_num_tokens 8192, fraction 0.9; the FP8 "
            "checkpoint (ModelOpt, FP8 KV) as --dtype fp8 --kv-dtype fp8"),
    "waynehacking8-llama31-8b-fp8-h100-tp1-kv095-oom-v0.20": Run(
        "trtllm", LLAMA_8B, gpu="h100-sxm-80gb", seq=257, version="0.20.0", util="0.95", dtype="fp8", kv="fp8",
        options=("backend=pytorch", "max_batch_size=4096", "max_num_tokens=8192"), backend="pytorch", kind="H100",
        why="as the 0.9 run with fraction 0.95 and max_num_requests 4096"),
    "waynehacking8-llama31-8b-fp8-h100-tp1-kv080-v0.20": Run(
        "trtllm", LLAMA_8B, gpu="h100-sxm-80gb", seq=269, version="0.20.0", util="0.8", dtype="fp8", kv="fp8",
        options=("backend=pytorch", "max_batch_size=2048", "max_num_tokens=4608"), backend="pytorch", kind="H100",
        why="the same repository's fraction-0.8 step: max_seq_len 269, max_num_requests 2048, max_num_tokens 4608"),
    "sro-sa-tinyllama-1.1b-48gb-pytorch-v1.1.0": Run(
        "trtllm", DATA / "public_models" / "TinyLlama--TinyLlama-1.1B-Chat-v1.0" / "config.json", gpu_mem="47.37GiB",
        seq=2049, version="1.1.0", dtype="bf16", kv="bf16", options=("backend=pytorch",), backend="pytorch",
        kind="48 GB (unnamed)", why="trtllm-serve defaults, max_seq_len 2049; the GPU by its logged 47.37 GiB"),
    "shaamil101-llama31-70b-fp8-8xh100-tp8-engine-v0.16": Run(
        "trtllm", DATA / "hf_configs" / "llama-3.1-70b.json", gpu="h100-sxm-80gb", tp=8, seq=25000, version="0.16.0",
        util="0.9", dtype="fp8", kv="fp8", backend="tensorrt", kind="H100 x8",
        options=("backend=tensorrt", "max_batch_size=2048", "max_num_tokens=8192", "activation_bytes=1013.01MiB"),
        why="engine built with max_batch_size 2048, max_num_tokens 8192, max_seq_len 25000, FP8 weights and KV; "
            "trtllm-build's execution context (1013.01 MiB) as activation_bytes"),
    "trtllm-4275-llama31-8b-fp8-rtx5090-engine-v0.19": Run(
        "trtllm", LLAMA_8B, gpu="rtx-5090-32gb@wsl", seq=2048, version="0.19.0", dtype="fp8", kv="fp8",
        backend="tensorrt", kind="RTX 5090",
        options=("backend=tensorrt", "max_batch_size=2048", "max_num_tokens=1024", "max_input_len=1024"),
        why="trtllm-build --max_batch_size 2048 --max_input_len 1024 --max_num_tokens 1024 --max_seq_len 2048, FP8 "
            "weights and KV; the execution context is not printed (modelled); WSL2 on Windows 11 (the issue's System Info)"),
    "faradawn-h200-trtllm120rc4-pytorch-llama3-8b": Run(
        "trtllm", DATA / "hf_configs" / "meta-llama-3-8b.json", gpu="h200-141gb", seq=1025, version="1.2.0rc4",
        util="0.9", options=("backend=pytorch", "max_batch_size=32", "max_num_tokens=1024"), backend="pytorch",
        kind="H200", why="trtllm-serve: max_seq_len 1025, max_batch_size 32, max_num_tokens 1024, fraction 0.9 (the "
                         "LLM-args dump); Meta-Llama-3-8B-Instruct by the base model's config (the same layout)"),
}
# logs with a pool but no end-to-end run, and why
NOT_E2E = {
    # The log loaded QwQ-32B's first config: it prints context_len=131072, the value of the March 2025 file
    # (QwenLM/QwQ#26 asks why it later became 40960). That file's text was found once, in a model report whose
    # repository the search tools do not name, so it cannot be stored with provenance; the current file (40960) and
    # the base Qwen2.5-32B's are other files.
    "didier-durand-qwq32b-4xL4-tp4-v0.4.3": "Qwen/QwQ-32B's config.json as the log loaded it (max_position_embeddings "
                                            "131072: the log's context_len) is in no attributable public repository; "
                                            "the current file (40960) and the base Qwen2.5-32B's are other files, so "
                                            "it is not used (scored for P and given its budget)",
    # mattbucci/2x-3090-GA102-300-A1-sglang-inference writes its AWQ checkpoints' configs with its own converters
    # (scripts/quantize/convert_devstral_ct_to_awq.py, convert_gemma4_31b_ct_to_awq.py, convert_gemma4_26b_ct_to_awq.py)
    # (they read the source config.json and write the AWQ one into the output folder) and commits none of them; its
    # SGLang patches Gemma-4's model code (patches/004-gemma4-causal-lm-fix.patch,
    # 023-gemma4-quant-config-detection.patch, 039-gemma4-dense-bringup.patch at 84aca72)
    "mattbucci-3090-devstral24b-awq-fp8kv-tp2-v0.5.12": "a locally built AWQ checkpoint whose config the repository's "
                                                        "converter writes and never commits, on a fork of 0.5.12 with "
                                                        "25 patches",
    "mattbucci-3090-gemma4-31b-awq-swa-tp2-v0.5.12": "a locally built AWQ checkpoint whose config the repository's "
                                                     "converter writes and never commits; the fork patches Gemma-4's "
                                                     "model code",
    "mattbucci-3090-gemma4-26b-moe-awq-swa-tp2-v0.5.12": "a locally built AWQ checkpoint: only the unquantized base "
                                                         "config is public (the converter's output is never "
                                                         "committed); the fork patches Gemma-4's model code",
    # TianyangChen357/LLM's launch script: 2 x RTX A4500, --cpu-offload-gb 48; its ServerArgs dump has exactly 0.5.9's
    # fields. kvplan reads --cpu-offload-gb on 0.5.1-0.5.23 (engines/sglang/releases.py WEIGHT_OFFLOAD), but has no
    # RTX A4500 in its catalog: no public reading of its CUDA total was found (nvidia-smi's 20470 MiB is public, and is
    # not what SGLang's free-memory readings start from); the pool is checked given its logged budget (given_budget)
    "tianyangchen-2xa4500-qwen3-14b-fp16-tp2-cpuoffload48": "the RTX A4500 is not in the GPU catalog (no public "
                                                            "reading of its CUDA total; nvidia-smi's 20470 MiB only); "
                                                            "its --cpu-offload-gb on 0.5.9 is modelled",
    "udbhav-48gb-v0.5.7-llama32-3b-hicache-mooncake": "the GPU is not named (a 48 GB-class card: 44.11 GB free before "
                                                      "loading) and no config for Llama-3.2-3B in tests/data",
    "sglang-pr18040-granite4-h-micro-16gb-bench-one-batch": "the GPU is not named (a ~16 GB card) and no config",
    "club3090-1261-2x5090-nvfp4-hybrid-gdn-fp8kv": "the model is not named (an NVFP4 hybrid with a draft model)",
    "ktransformers-1870-qwen35moe-2x4090-tp2-kt": "KTransformers keeps the experts on the CPU: the GPU weights are not "
                                                  "the model's",
    "ktransformers-1988-dsv4-5090d-32g-fp8kv": "DeepSeek-V4's compressed-attention pools are not modelled (a fork)",
    "inferencex-2128-dsv4-pro-fp8-8xh200-tp8-no-kv-room": "DeepSeek-V4 is not modelled (the log is a start failure)",
    # DP attention is modelled (engines/sglang/features.py); the indexer's pool is what stops these two
    "sglang-pr11309-dsv32-exp-8xb200-dp8-attn-fixed": "SGLang's pool for DeepSeek-V3.2's indexed MLA layers (the NSA "
                                                      "indexer's keys) is not modelled (exit 3); a main build with the "
                                                      "PR, and the -Exp checkpoint's own files are not public (V3.2's are)",
    "sglang-pr11309-dsv32-exp-8xb200-dp8-attn-main": "SGLang's pool for DeepSeek-V3.2's indexed MLA layers is not "
                                                     "modelled (exit 3); a main build patched to mem-fraction 0.8",
    "sglang-pr11716-8gpu-141gb-tp8-kv": "the model is not named",
    "sglang-pr15464-mimo-v2-flash-swa-tp4plus": "the GPU and the TP size are not stated",
    "sglang-pr17392-dp-attn-ep-4gpu-bf16-deepgemm": "the model and GPU are not stated (DP attention)",
    "triton-tutorials-150-trtllm-pytorch-triton-78gib": "the model, GPU and release are not stated",
    "waynehacking8-llama31-8b-fp8-h100-tp2-kv080-crash-v0.20": "the run crashed before sizing its final pool",
    "jeansblog-dgxspark-gb10-gpt-oss-120b-pytorch-v1.1.0rc3": "DGX Spark (unified memory): refused with exit 3 unless "
                                                              "--gpu-reserved says what the host holds",
    "trtllm-224-llama2-7b-a10-triton-v0.5": "0.5's TensorRT-engine backend is refused (exit 3: its closed runtime's "
                                           "sizing was not read, releases.py ENGINE_READ); below",
    "trtllm-1400-smoothquant-7b-a100-v0.8": "0.8's TensorRT-engine backend is refused (exit 3, as 0.5's); the model is "
                                           "not named (\"XXXX\")",
    "tensorrtllm-backend-366-mistral7b-4xa10g-triton": "the TP size, fraction and build settings are not stated",
    "tensorrtllm-backend-366-mistral7b-4xa10g-runpy": "the TP size, fraction and build settings are not stated",
    "trtllm-2268-qwen15-7b-40gb-v0.13dev": "the GPU is not named, no build settings, no config (a fine-tune of "
                                          "Qwen1.5-7B); given its budget, 631 blocks (tests/test_engine_trtllm.py)",
    "spark-sglang0516-laguna-s21-int4-dflash": "DGX Spark GB10 (unified memory: refused, exit 3) with DFlash speculative "
                                               "decoding (not modelled); no public config for the checkpoint",
    "spark-sglang0516-laguna-s21-nvfp4-dflash-try1": "DGX Spark GB10 (unified memory: refused, exit 3) with DFlash "
                                                     "speculative decoding (not modelled); no public config",
    "spark-sglang0516-laguna-s21-nvfp4-dflash-try2": "DGX Spark GB10 (unified memory: refused, exit 3) with DFlash "
                                                     "speculative decoding (not modelled); no public config",
    "shun8686-ascend-a3-sglang-dsr1-w4a8-pd-prefill-dp2-ep16-eagle": "an Ascend NPU (not a GPU kvplan models) with a "
                                                                    "w4a8 checkpoint",
    "shun8686-ascend-a3-sglang-dsr1-w4a8-pd-decode-dp16-ep16-eagle": "an Ascend NPU (not a GPU kvplan models) with a "
                                                                    "w4a8 checkpoint",
    "shun8686-ascend-a3-sglang-dsr1-w4a8-dp16-ep16-eagle": "an Ascend NPU (not a GPU kvplan models) with a w4a8 "
                                                          "checkpoint",
    "tritondist-h100-trtllm-pytorch-disagg-tinyllama-tp2": "a February 2025 main build (0.18 dev) of the PyTorch "
                                                           "workflow, which kvplan does not model (exit 3); its pool "
                                                           "(18.88 GiB, 1,800,032 tokens) is 0.25 of the free memory",
    "idx-trtllm-docs-v012dev-llama2-7b-fp8-engine-80gb": "the page's pool does not fit the model it names: 62.99 GiB for "
                                                          "294,848 tokens is 229,390 B a token, where Llama-2-7B's FP8 "
                                                          "KV is 262,144 (32 layers x 32 KV heads x 128 x 2 x 1 B); a "
                                                          "documentation sample, likely captured with another model",
}


def build(run: Run):
    from kvplan.requests.build import build_request
    from kvplan.model.catalog import find_gpu
    from kvplan.core.errors import KvplanError

    gpu, gpu_mem = run.gpu, run.gpu_mem
    if gpu is not None:
        try:
            find_gpu(gpu)
            gpu_mem = None
        except KvplanError:
            gpu = None  # not in this catalog yet: the logged total memory instead
    return build_request(str(run.model), seq=str(run.seq) if run.seq else None, batch=1, kv_dtype=run.kv,
                         dtype=run.dtype, gpu=gpu, gpu_mem=gpu_mem, gpus=None, tp=run.tp, pp=1, gpu_util=run.util,
                         engine_version=run.version, engine_options=list(run.options))


def source_of(rec: dict) -> str:
    """Where a log was published, the unit a fold leaves out: "owner/repo#N" for an issue or pull request (every
    comment of a thread together), "owner/repo" for a committed file (every file of the repository together)."""
    m = re.match(r"https://github\.com/([^/]+/[^/]+)/(?:issues|pull)/(\d+)", rec.get("url") or "")
    return f"{m.group(1)}#{m.group(2)}" if m else rec["repository"]


@dataclass
class Scored:
    log: str
    engine: str
    line: str
    backend: str
    kind: str
    logged: int
    predicted: int
    error: float  # percent
    covered: bool
    band: tuple[int, int]
    note: str = ""


def implied_buffers() -> Fraction:
    """The RTX 5090 log's runtime + decoder buffers, implied by its total and available memory (it prints no
    breakdown): total - available - CUDA context - weights - execution context, in GiB (budget.py ENGINE_BUFFERS)."""
    from kvplan.engines import trtllm
    from kvplan.engines.sglang import budget as sb

    log = "trtllm-4275-llama31-8b-fp8-rtx5090-engine-v0.19"
    rec = next(r for r in records("trtllm") if r["id"] == log)
    fig = figures(rec)
    est = trtllm.estimate(build(RUNS[log]), search_max_seq=False)
    used = (fig["engine_total"] - fig["engine_available"]) * GIB
    return (used - sb.constants().context_other - est.weights_per_gpu_bytes - est.activation_peak_bytes) / GIB


# options a run takes from its log's figures rather than from its launch (what a user planning it would not know)
FROM_THE_LOG = ("activation_bytes",)


def as_a_user_would(run: Run) -> Run:
    """The run with only what its launch states: the options read off the log's figures dropped (FROM_THE_LOG)."""
    kept = tuple(o for o in run.options if o.split("=", 1)[0] not in FROM_THE_LOG)
    return replace(run, options=kept)


def score_e2e(options_unset: bool = False) -> tuple[list[Scored], list[tuple[str, str]]]:
    """Every run's token pool from the GPU and the flags, leave-one-source-out; `options_unset`: without the options
    taken from the log's figures (as_a_user_would)."""
    from kvplan.engines import sglang, trtllm
    from kvplan.engines.trtllm import budget as tb

    scored, skipped = [], []
    for engine in ("sglang", "trtllm"):
        for rec in records(engine):
            log = rec["id"]
            run = RUNS.get(log)
            fig = figures(rec)
            if run is None:
                skipped.append((log, NOT_E2E.get(log, "no token pool in the excerpt")))
                continue
            if options_unset:
                run = as_a_user_would(run)
            src = source_of(rec)
            with tb.leaving_out({src}):
                est = (sglang if engine == "sglang" else trtllm).estimate(build(run), search_max_seq=False)
            if engine == "sglang":
                predicted, cell, line = est.max_total_num_tokens, est.cell_size, est.sglang_version
                backend = "-"
                logged_bytes = fig["tokens"] * cell
                lo, hi = est.available_kv_bytes_low, est.available_kv_bytes_high
                covered = lo - cell <= logged_bytes <= hi + cell
            else:
                predicted, line, backend = est.kv_cache_tokens, est.trtllm_version, est.backend
                unit = est.tokens_per_block * est.bytes_per_token
                logged_bytes = fig["tokens"] * est.bytes_per_token
                lo, hi = est.available_kv_bytes_low, est.available_kv_bytes_high
                covered = lo - unit <= logged_bytes <= hi + unit
            err = 100 * (predicted - fig["tokens"]) / fig["tokens"]
            scored.append(Scored(log, engine, line, backend, run.kind, fig["tokens"], predicted, err, covered, (lo, hi),
                                 run.why))
    return scored, skipped


# trtllm-build settings a run takes from its engine's build (kvplan/engines/trtllm/build_settings.py): dropped, the
# band spans every value they can take
BUILD_SETTINGS = ("max_batch_size", "max_num_tokens", "max_input_len")


def score_build_open() -> list[Scored]:
    """The TensorRT-engine runs as a user who does not know the engine's build would run kvplan: the options read off
    the log and the build settings dropped (as_a_user_would, BUILD_SETTINGS), leave-one-source-out."""
    from kvplan.engines import trtllm
    from kvplan.engines.trtllm import budget as tb

    out = []
    for rec in records("trtllm"):
        run = RUNS.get(rec["id"])
        if run is None or run.backend != "tensorrt":
            continue
        run = as_a_user_would(run)
        run = replace(run, options=tuple(o for o in run.options if o.split("=", 1)[0] not in BUILD_SETTINGS))
        fig = figures(rec)
        with tb.leaving_out({source_of(rec)}):
            est = trtllm.estimate(build(run), search_max_seq=False)
        unit = est.tokens_per_block * est.bytes_per_token
        logged_bytes = fig["tokens"] * est.bytes_per_token
        lo, hi = est.available_kv_bytes_low, est.available_kv_bytes_high
        err = 100 * (est.kv_cache_tokens - fig["tokens"]) / fig["tokens"]
        out.append(Scored(rec["id"], "trtllm", est.trtllm_version, est.backend, run.kind, fig["tokens"],
                          est.kv_cache_tokens, err, lo - unit <= logged_bytes <= hi + unit, (lo, hi),
                          "build settings open: " + ", ".join(est.band_open)))
    return out


# ------------------------------------------------------------------------------ SGLang's P (free before load)
def score_free_before() -> list[tuple[str, str, float, float]]:
    from kvplan.engines.sglang import budget as sb

    out = []
    from kvplan.engines.runtime import startup

    logged = {o.log: o for o in startup.OBSERVATIONS}
    for log, group, err in sb.free_before_errors():
        out.append((log, group, float(logged[log].free_before_gib), err / GIB))
    return out


# --------------------------------------------------------------------------------- given the logged budget
def _cell_from_config(path: Path, tp: int, kv: str = "auto") -> int:
    from kvplan.requests.build import build_request
    from kvplan.engines import sglang

    req = build_request(str(path), seq="1024", batch=1, kv_dtype=kv, dtype=None, gpu=None, gpu_mem=None, gpus=None,
                        tp=tp, pp=1, kv_cache_memory="1GiB")
    return sglang.estimate(req).cell_size


def given_budget() -> tuple[list[tuple[str, str, str, bool]], list[tuple[str, str]]]:
    """(log, check, detail, within the rounding) for every check a log's printed figures allow."""
    half = Fraction(1, 200)  # two decimals: +-0.005
    rows, skipped = [], []
    for rec in records("sglang"):
        fig, log = figures(rec), rec["id"]
        if "speculative" in str(rec.get("feature", "")):  # a draft model's pools are sized from the same budget
            skipped.append((log, f"{rec['feature'].split(':')[0]}: the draft's pools share the budget, so the "
                                 "target's pool is not A - P (1 - mfs)"))
            continue
        done = False
        mfs_text = str(rec.get("mem_fraction_static") or "")
        mfs = Fraction(m.group(0)) if (m := re.match(r"0\.\d+", mfs_text)) else None
        if log == "sglang-pr4826-gemma3-multimodal-141gb-tp1-v0.4.4":
            mfs = Fraction(88, 100) * Fraction(95, 100)  # 0.4.4's default x the multimodal factor (R1)
        cell = None
        if rec.get("config"):
            try:
                cell = _cell_from_config(HERE / rec["config"], rec.get("tp_size") or 1,
                                         "fp8_e4m3" if "fp8" in str(rec.get("kv_cache_dtype")) else "auto")
            except Exception:  # noqa: BLE001 - a config kvplan cannot read is reported as not checked
                cell = None
        cells = (cell, cell)
        if cell is None and "k_v" in fig and "tokens" in fig:
            k, v = fig["k_v"]  # cell from the printed K/V sizes (no config): (N + 1) rows each, +-0.005 GiB
            cells = (int((k + v - 2 * half) * GIB / (fig["tokens"] + 1)), math.ceil((k + v + 2 * half) * GIB /
                                                                                     (fig["tokens"] + 1)))
            cell = cells[0]
        text = " ".join(rec.get("extracted") or [])
        swa_log = "Use sliding window" in text or "SWAKVPool" in text
        if "free_before" in fig and "free_after" in fig and mfs is not None and cell and "tokens" in fig and not swa_log:
            P, A = fig["free_before"], fig["free_after"]
            if "load_usage" in fig and log.startswith("sglang-pr4826"):
                P = A + fig["load_usage"]
            lo = int(((A - half) - (P + half) * (1 - mfs)) * GIB) // cells[1]
            hi = int(((A + half) - (P - half) * (1 - mfs)) * GIB) // cells[0]
            ok = lo <= fig["tokens"] <= hi
            rows.append((log, "rest = A - P (1 - mfs) -> tokens", f"{lo:,}..{hi:,} vs {fig['tokens']:,}", ok))
            done = True
        if "k_v" in fig and "tokens" in fig and rec.get("config") and cell and not swa_log:
            k, v = fig["k_v"]
            size = Fraction((fig["tokens"] + 1) * cell, 2 * GIB)
            ok = abs(size - k) <= half and abs(size - v) <= half
            rows.append((log, "K/V sizes = (tokens + 1) x cell / 2", f"{float(size):.3f} vs {float(k)} GiB", ok))
            done = True
        if m := re.search(r"full_layer_tokens=(\d+), swa_layer_tokens=(\d+)", text):
            full, swa = int(m.group(1)), int(m.group(2))
            ok = swa == int(full * Fraction(4, 5))
            rows.append((log, "swa = int(full x 0.8)", f"{full:,} x 0.8 -> {int(full * 0.8):,} vs {swa:,}", ok))
            done = True
        if not done:
            skipped.append((log, "the excerpt lacks the pool or the figures it is sized from"))
    for rec in records("trtllm"):
        fig, log = figures(rec), rec["id"]
        done = False
        if "pt_available" in fig and "max_tokens" in fig:
            lo = int((fig["pt_available"] - half) * GIB) // fig["kv_size"]
            hi = int((fig["pt_available"] + half) * GIB) // fig["kv_size"]
            ok = lo <= fig["max_tokens"] <= hi
            rows.append((log, "max_tokens = available // kv size", f"{lo:,}..{hi:,} vs {fig['max_tokens']:,}", ok))
            if fig.get("alloc_line", -1) > fig.get("max_tokens_line", 0):  # the pool was built from this estimate
                tpb = fig.get("tokens_per_block", 32)
                want = -(-fig["max_tokens"] // tpb) * tpb
                rows.append((log, "pool = ceil(max_tokens / block) blocks", f"{want:,} vs {fig['tokens']:,}",
                             want == fig["tokens"]))
            done = True
        if "engine_available" in fig and ("blocks" in fig or "tokens" in fig) and rec.get("config"):
            from kvplan.engines import trtllm

            run = RUNS.get(log)
            if run is not None:
                est = trtllm.estimate(build(run), search_max_seq=False)
                bpt, tpb = est.bytes_per_token, fig.get("tokens_per_block") or est.tokens_per_block
                frac = Fraction(rec.get("free_gpu_memory_fraction") and "0.9" or "0.9")
                f32 = __import__("kvplan.engines.trtllm.budget", fromlist=["float32"]).float32(frac)
                lo = -(-(int(int((fig["engine_available"] - half) * GIB) * f32) // bpt) // tpb)
                hi = -(-(int(int((fig["engine_available"] + half) * GIB) * f32) // bpt) // tpb)
                blocks = fig.get("blocks") or fig["tokens"] // tpb
                rows.append((log, "blocks = ceil(fraction x available / bytes / block)", f"{lo:,}..{hi:,} vs {blocks:,}",
                             lo <= blocks <= hi))
                done = True
        if "alloc_gib" in fig and "tokens" in fig:
            bpt = fig.get("kv_size") if fig.get("alloc_line", -1) > fig.get("max_tokens_line", -1) else None
            if bpt is None and log in RUNS:
                from kvplan.engines import trtllm

                bpt = trtllm.estimate(build(RUNS[log]), search_max_seq=False).bytes_per_token
            if bpt:
                size = Fraction(fig["tokens"] * bpt, GIB)
                rows.append((log, "allocated GiB = tokens x bytes per token", f"{float(size):.3f} vs {float(fig['alloc_gib'])}",
                             abs(size - fig["alloc_gib"]) <= half))
                done = True
        text = " ".join(rec.get("extracted") or [])
        if m := re.search(r"Allocate (\d+) bytes for k/v cache\.\s*.*?Using (\d+) (?:total )?tokens", text):
            nbytes, ntok = int(m.group(1)), int(m.group(2))
            rows.append((log, "bytes = tokens x bytes per token", f"{nbytes:,} / {ntok:,} = {nbytes / ntok:,.1f} B",
                         nbytes % ntok == 0))
            done = True
        if not done:
            skipped.append((log, "the excerpt lacks the pool or the figures it is sized from"))
    return rows, skipped


# ------------------------------------------------------------------------------------------------ report
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="tables as markdown (for docs)")
    args = ap.parse_args()
    md = args.markdown

    def table(head, rows):
        if md:
            print("| " + " | ".join(head) + " |")
            print("|" + "---|" * len(head))
            for r in rows:
                print("| " + " | ".join(str(c) for c in r) + " |")
        else:
            widths = [max(len(str(x)) for x in [h] + [r[i] for r in rows]) for i, h in enumerate(head)]
            print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
            for r in rows:
                print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
        print()

    scored, skipped = score_e2e()
    print("## End to end, leave-one-source-out: the token pool from the GPU and the flags\n")
    table(["log", "engine", "release", "backend", "GPU", "logged tokens", "kvplan tokens", "error %", "band GiB",
           "band covers"],
          [(s.log, s.engine, s.line, s.backend, s.kind, f"{s.logged:,}", f"{s.predicted:,}", f"{s.error:+.2f}",
            f"{s.band[0] / GIB:.2f}..{s.band[1] / GIB:.2f}", "yes" if s.covered else "NO") for s in scored])
    groups: dict[tuple, list[Scored]] = {}
    for s in scored:
        groups.setdefault((s.engine, s.backend), []).append(s)
        groups.setdefault((s.engine, s.backend, s.line), []).append(s)
        groups.setdefault((s.engine, s.backend, s.kind), []).append(s)
    rows = []
    for key in sorted(groups, key=lambda k: (k[0], k[1], len(k), str(k[2:]))):
        g = groups[key]
        mae = sum(abs(s.error) for s in g) / len(g)
        cover = sum(s.covered for s in g)
        rows.append((key[0], key[1], key[2] if len(key) > 2 else "all", len(g), f"{mae:.2f}", f"{cover}/{len(g)}"))
    print("Mean absolute error by engine, backend, release line and GPU kind:\n")
    table(["engine", "backend", "release / GPU", "runs", "MAE %", "band covers"], rows)
    print("Not scored end to end:\n")
    table(["log", "why"], skipped)

    print("## TensorRT engines with their build settings left open (max_batch_size, max_num_tokens, max_input_len)\n")
    table(["log", "release", "GPU", "logged tokens", "kvplan tokens", "error %", "band GiB", "band covers"],
          [(s.log, s.line, s.kind, f"{s.logged:,}", f"{s.predicted:,}", f"{s.error:+.2f}",
            f"{s.band[0] / GIB:.2f}..{s.band[1] / GIB:.2f}", "yes" if s.covered else "NO") for s in score_build_open()])

    print("## SGLang's free memory before loading (P), leave-one-source-out\n")
    table(["log", "layout", "logged P GiB", "kvplan - log GiB"],
          [(log, g, f"{p:.2f}", f"{e:+.3f}") for log, g, p, e in score_free_before()])

    print("## Diagnostics\n")
    from dataclasses import replace as _replace

    from kvplan.engines import trtllm as _trt
    from kvplan.engines.trtllm import budget as _tb

    shaamil = "shaamil101-llama31-70b-fp8-8xh100-tp8-engine-v0.16"
    rec = next(r for r in records("trtllm") if r["id"] == shaamil)
    fig = figures(rec)
    others = min(Fraction(x) for x in re.findall(r"available: ([\d.]+) GiB", " ".join(rec["extracted"]))
                 if Fraction(x) > fig["engine_available"])
    extra = others - fig["engine_available"]
    with _tb.leaving_out({source_of(rec)}):
        est = _trt.estimate(_replace(build(RUNS[shaamil]), gpu_reserved_bytes=int(extra * GIB)), search_max_seq=False)
    print(f"- {shaamil}: the rank that sizes the pool (the minimum over ranks) has {float(extra):.2f} GiB less free "
          f"than the next ({float(fig['engine_available'])} vs {float(others)} GiB); given as --gpu-reserved "
          f"{float(extra):.2f}GiB the error is {100 * (est.kv_cache_tokens - fig['tokens']) / fig['tokens']:+.2f}%.")
    print("- unified memory (DGX Spark GB10, jeansblog-dgxspark-gb10-gpt-oss-120b-pytorch-v1.1.0rc3, trtllm-serve "
          "1.1.0rc3: 49.28 GiB outside torch, 5.95 GiB for the KV cache, max_seq_len reduced to 86,720):")
    from kvplan.core.errors import KvplanError
    from kvplan.requests.build import build_request
    for engine, version in (("trtllm", "1.1.0rc3"), ("sglang", "0.5.23")):
        try:
            req = build_request("gpt-oss-120b", seq="131072", batch=1, kv_dtype="auto", dtype=None, gpu="gb10", gpu_mem=None,
                                gpus=None, tp=1, pp=1, engine_version=version)
            __import__(f"kvplan.engines.{engine}", fromlist=["estimate"]).estimate(req)
            print(f"  {engine} {version}: NOT refused")
        except KvplanError as err:
            print(f"  {engine} {version}: refused, exit {err.exit_code}: {err.what}")
    # the engine backend of the releases whose sizing was not read (kvplan/engines/trtllm/releases.py ENGINE_READ):
    # each public log of one, launched as the log says, is refused rather than scored
    print("- TensorRT-engine backend before 0.12 (closed runtime, sizing not read):")
    for log, version, gpu, gpu_mem, options in (
            ("trtllm-224-llama2-7b-a10-triton-v0.5", "0.5.0", None, "24GB", ["max_batch_size=25"]),
            ("trtllm-1400-smoothquant-7b-a100-v0.8", "0.8.0", "a100-80gb", None,
             ["max_batch_size=1", "max_num_tokens=4096", "max_input_len=4096"])):
        try:
            req = build_request(str(DATA / "hf_configs" / "llama-2-7b.json"), seq="4096", batch=1, kv_dtype="fp16",
                                dtype=None, gpu=gpu, gpu_mem=gpu_mem, gpus=None, tp=1, pp=1, engine_version=version,
                                engine_options=["backend=tensorrt", *options])
            __import__("kvplan.engines.trtllm", fromlist=["estimate"]).estimate(req)
            print(f"  {log} ({version}): NOT refused")
        except KvplanError as err:
            print(f"  {log} ({version}): refused, exit {err.exit_code}: {err.what}")
    print()

    rows, skipped = given_budget()
    print("## Given the logged budget: within the rounding of the printed figures\n")
    table(["log", "check", "figures", "within"], [(a, b, c, "yes" if d else "NO") for a, b, c, d in rows])
    print(f"{sum(r[3] for r in rows)} of {len(rows)} checks within the rounding, on "
          f"{len({r[0] for r in rows})} logs\n")
    print("Not checked given the budget:\n")
    table(["log", "why"], skipped)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
