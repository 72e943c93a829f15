"""The published measurements of tests/data/latency (SOURCES.md says where each came from) as latency_fit
Measurements: each timed piece of work with the floors kvplan computes for it.

    PYTHONPATH=. python scripts/latency_data.py        # one line per source: rows kept, rows left out and why

The floors come from kvplan/analysis/serving.py for the deployment each row describes (model, GPU, TP, weight and
KV dtypes). Where a row is a max-throughput run, the batch it ran at is what kvplan's engine model of that engine
holds at ISL + OSL tokens (capped at the engine's batch limit), as `kvplan plan` would size it.
"""

from __future__ import annotations

import csv
import dataclasses
from functools import lru_cache
from pathlib import Path

from kvplan.analysis.latency_fit import Measurement
from kvplan.analysis.serving import Replica, replica_of
from kvplan.core import dtypes
from kvplan.engines import get
from kvplan.engines.api import EngineRequest, Hardware
from kvplan.engines.runtime.weights import model_weights
from kvplan.model import catalog

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "latency"

MODELS = {
    "meta-llama3-8b-instruct": "llama-3-8b",
    # Llama-3-70B has Llama-3.1-70B's layers, heads and widths (only RoPE scaling and the context differ)
    "meta-llama3-70b-instruct": "llama-3.1-70b",
    "LLaMA v3.1 70B": "llama-3.1-70b", "LLaMA v3.1 8B": "llama-3.1-8b", "LLaMA v3.1 405B": "llama-3.1-405b",
    "Mixtral 8x7B": "mixtral-8x7b", "Llama 3.3 70B": "llama-3.3-70b", "Llama 3.1 8B": "llama-3.1-8b",
    "Llama 3.1 405B": "llama-3.1-405b",
    "Llama 3.1 70B (amd/Llama-3.1-70B-Instruct-FP8-KV)": "llama-3.1-70b",
    "Llama 3.1 405B (amd/Llama-3.1-405B-Instruct-FP8-KV)": "llama-3.1-405b",
}
GPUS = {"H200 141GB HBM3": "h200-141gb", "H100 80GB HBM3": "h100-sxm-80gb", "H100_80GB_HBM3": "h100-sxm-80gb",
        "A100-SXM4-80GB": "a100-sxm-80gb", "A100-PCIE-80GB": "a100-pcie-80gb", "L40S": "l40s-48gb", "H200": "h200-141gb",
        "H100": "h100-sxm-80gb", "MI300X": "mi300x-192gb"}


@dataclasses.dataclass(frozen=True)
class Setup:
    """One deployment a row describes."""

    model: str
    gpu: str
    tp: int
    weights: str  # kvplan weight format
    kv: str  # KV dtype as the engine spells it
    engine: str
    gpu_util: str | None = None
    engine_version: str | None = None  # the release whose rules size the pool (None: the engine's default)


@lru_cache(maxsize=None)
def _request(s: Setup, seq: int) -> EngineRequest:
    from fractions import Fraction

    spec = catalog.resolve_model(s.model)
    entry = catalog.find_gpu(s.gpu)
    return EngineRequest(spec=spec, seq=seq, batch=1, kv_dtype=s.kv, weight_fmt=dtypes.weight_format(s.weights), tp=s.tp,
                         hardware=Hardware(entry.name, entry.capacity_bytes),
                         gpu_util=Fraction(s.gpu_util) if s.gpu_util else None, engine_version=s.engine_version)


@lru_cache(maxsize=None)
def replica(s: Setup) -> Replica:
    req = _request(s, 4096)
    weights, _ = model_weights(req.spec, req.weight_fmt)
    return replica_of(get(s.engine), req, weights)


@lru_cache(maxsize=None)
def held(s: Setup, seq: int) -> int:
    """Requests of `seq` tokens the engine's pool holds at once (capped at its batch limit); 0: it does not start."""
    r = get(s.engine).estimate(_request(s, seq), search_max_seq=False)
    return r.max_batch or 0


def _arch(gpu: str) -> str:
    return catalog.find_gpu(gpu).architecture


def round_measurement(source: str, s: Setup, isl: int, osl: int, output_tokens_per_s: float, label: str) -> Measurement | None:
    """A max-throughput run: B requests of isl + osl tokens, each prefilled once and decoded osl steps; the time of
    one such round is B x osl / throughput."""
    batch = held(s, isl + osl)
    if batch < 1:
        return None
    r = replica(s)
    pre = r.prefill_floor(isl, batch).seconds
    dec = osl * r.decode_floor(batch, isl + osl // 2).seconds
    return Measurement(source, s.gpu, _arch(s.gpu), "round", f"{label}, batch {batch}", pre, dec, osl, batch * osl,
                       batch * osl / output_tokens_per_s)


def trtllm_v014() -> tuple[list[Measurement], list[str]]:
    rows, skipped = [], []
    columns = {"H200 141GB HBM3 FP8": ("h200-141gb", "fp8"), "H100 80GB HBM3 FP8": ("h100-sxm-80gb", "fp8"),
               "H100 80GB HBM3 FP16": ("h100-sxm-80gb", "fp16"), "A100-SXM4-80GB FP16": ("a100-sxm-80gb", "fp16"),
               "A100-PCIE-80GB FP16": ("a100-pcie-80gb", "fp16"), "L40S FP8": ("l40s-48gb", "fp8")}
    with open(DATA / "trtllm_perf_overview_v0.14.csv", newline="") as f:
        for row in csv.DictReader(f):
            isl, osl = (int(x) for x in row["isl_osl"].split("/"))
            for col, (gpu, prec) in columns.items():
                if not row[col]:
                    continue
                # trtllm-bench builds FP8 engines with an FP8 KV cache ("the KV cache will automatically be set to FP8");
                # 0.14 runs TensorRT engines (the default backend before 1.0), with kvplan's rules of that release
                s = Setup(MODELS[row["model"]], gpu, int(row["tp"]), prec, prec, "trtllm", engine_version="0.14.0")
                label = f"{row['model']} {isl}/{osl} {gpu} TP{row['tp']} {prec}"
                m = round_measurement("trtllm-perf-0.14", s, isl, osl, float(row[col]), label)
                (rows.append(m) if m else skipped.append(f"{label}: kvplan's pool holds no request"))
    return rows, skipped


def trtllm_v10() -> tuple[list[Measurement], list[str]]:
    rows, skipped = [], []
    with open(DATA / "trtllm_perf_overview_v1.0.csv", newline="") as f:
        for row in csv.DictReader(f):
            isl, osl = (int(x) for x in row["isl_osl"].split("/"))
            for gpu, tp, col in (("h200-141gb", row["h200_tp"], "H200 (FP8)"), ("h100-sxm-80gb", row["h100_tp"], "H100 (FP8)")):
                # the page runs with --kv_cache_free_gpu_mem_fraction 0.95 "in many cases"; ModelOpt FP8 checkpoints
                # quantize the KV cache to FP8 too
                s = Setup(MODELS[row["model"]], gpu, int(tp), "fp8", "fp8", "trtllm", gpu_util="0.95", engine_version="1.0.0")
                label = f"{row['model']} {isl}/{osl} {gpu} TP{tp} fp8"
                m = round_measurement("trtllm-perf-1.0", s, isl, osl, float(row[col]), label)
                (rows.append(m) if m else skipped.append(f"{label}: kvplan's pool holds no request"))
    return rows, skipped


def nim() -> tuple[list[Measurement], list[str]]:
    """Closed-loop genai-perf runs of NIM (TensorRT-LLM): `concurrency` clients sending requests of fixed lengths.
    With every request the same length the clients start in step: a wave of `concurrency` prompts is prefilled
    (the mean TTFT waits for half the wave), then decoded together; the ITL is taken as `kvplan plan`'s TPOT, one
    decode step plus the share of the prefills that keep the batch full (the waves drift apart as requests finish).
    Rows whose concurrency the pool cannot hold queue and are left out; so are duplicate runs (the first is kept)."""
    rows, skipped, seen = [], [], set()
    with open(DATA / "nim_genai_perf.csv", newline="") as f:
        for row in csv.DictReader(f):
            key = tuple(row[k] for k in ("task_inputs-model", "task_inputs-GPU", "task_inputs-n_gpus", "task_inputs-precision",
                                         "input_config-concurrency", "input_config-synthetic_input_tokens_mean",
                                         "input_config-output_tokens_mean"))
            if key in seen:
                continue
            seen.add(key)
            model, gpu_label, tp, prec, conc, isl, osl = key
            gpu, tp, conc, isl, osl = GPUS[gpu_label], int(tp), int(conc), int(isl), int(osl)
            weights = "fp8" if prec == "fp8" else "fp16"
            s = Setup(MODELS[model], gpu, tp, weights, weights, "trtllm")
            label = f"{model} {isl}/{osl} {gpu} TP{tp} {prec} c={conc}"
            if held(s, isl + osl) < conc:
                skipped.append(f"{label}: {conc} clients, the pool holds {held(s, isl + osl)}")
                continue
            r = replica(s)
            # the mean client of a wave waits for the prompts ahead of it and its own: (concurrency + 1) / 2 of them
            pre = r.prefill_floor(isl, (conc + 1) // 2).seconds
            dec = r.decode_floor(conc, isl + osl // 2).seconds
            rows.append(Measurement("nim-genai-perf", gpu, _arch(gpu), "ttft", label, pre, 0.0, 1, 0,
                                    float(row["time_to_first_token-avg"]) / 1e9))
            share = r.prefill_floor(isl, conc).seconds / osl
            rows.append(Measurement("nim-genai-perf", gpu, _arch(gpu), "tpot", label, share, dec, 1, conc,
                                    float(row["inter_token_latency-avg"]) / 1e9))
    return rows, skipped


def rocm() -> tuple[list[Measurement], list[str]]:
    """vLLM's benchmark_latency.py on MI300X: `batch` prompts prefilled together, then `output` decode steps; the
    command has no --kv-cache-dtype, so the KV cache is 16-bit."""
    rows = []
    with open(DATA / "rocm_vllm_mi300x_latency.csv", newline="") as f:
        for row in csv.DictReader(f):
            batch, isl, osl = int(row["batch_size"]), int(row["input"]), int(row["output"])
            s = Setup(MODELS[row["model"]], "mi300x-192gb", int(row["tp"]), "fp8", "auto", "vllm")
            r = replica(s)
            rows.append(Measurement("rocm-vllm-mi300x", s.gpu, _arch(s.gpu), "latency",
                                    f"{s.model} {isl}/{osl} MI300X TP{row['tp']} fp8 batch {batch}",
                                    r.prefill_floor(isl, batch).seconds, osl * r.decode_floor(batch, isl + osl // 2).seconds,
                                    osl, batch * osl, float(row["mi300x_latency_s"])))
    return rows, []


SOURCES = {"trtllm-perf-0.14": trtllm_v014, "trtllm-perf-1.0": trtllm_v10, "nim-genai-perf": nim,
           "rocm-vllm-mi300x": rocm}


def measurements() -> tuple[list[Measurement], dict[str, list[str]]]:
    out, skipped = [], {}
    for name, read in SOURCES.items():
        rows, left = read()
        out += rows
        skipped[name] = left
    return out, skipped


if __name__ == "__main__":
    data, skipped = measurements()
    for name in SOURCES:
        print(f"{name}: {sum(m.source == name for m in data)} measurements, {len(skipped[name])} rows left out")
        for line in skipped[name][:5]:
            print(f"  left out: {line}")
