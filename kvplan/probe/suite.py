"""The GPU verification matrix (scripts/gpu-verify.sh): every layer kind, two dtypes, both layouts,
find-max and a decode benchmark, in one process, in well under 3 minutes on one GPU; a JSON report.

    python -m kvplan.probe.suite --device cuda --out gpu-verify.json
    python -m kvplan.probe.suite --device cpu --out dry-run.json      # small shapes: the test suite runs this

Each case is a `kvplan probe` request run in-process (one torch import, one CUDA context). A case
passes when the probe matches (or, for the out-of-memory case, when the device refuses and the
memory comes back), and when nothing stays allocated after it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kvplan.model import catalog
from kvplan.core.errors import InputError, KvplanError
from kvplan.requests.build import build_request
from kvplan.probe import load_torch, ProbeOutOfMemory
from kvplan.probe.runner import ProbeOptions, run_probe
from kvplan.core.units import parse_size
from kvplan.probe.device import select_device
from kvplan import engines

# GPU shapes fit one 80 GB card with room to spare (each case alone; they run one after another).
# The CPU dry run keeps every case under ~0.5 GB.


@dataclass(frozen=True)
class Case:
    name: str
    what: str
    model: str
    gpu: dict
    cpu: dict
    options: dict = field(default_factory=dict)
    expect: str = "match"  # or "oom": the device must refuse, and give everything back


CASES = (
    Case("gqa-bf16-static", "GQA, 32 layers x 8 KV heads", "llama-3.1-8b", {"seq": "32K", "batch": 8}, {"seq": 256, "batch": 2}),
    Case("gqa-fp8-paged", "GQA, fp8 e4m3 KV, vLLM block pools", "llama-3.1-8b", {"seq": "32K", "batch": 8, "kv_dtype": "fp8"},
         {"seq": 250, "batch": 2, "kv_dtype": "fp8"}, {"layout": "paged"}),
    Case("gqa-int4-static", "int4 KV packed two to a byte", "llama-3.1-8b", {"seq": "8K", "batch": 4, "kv_dtype": "int4"},
         {"seq": 128, "batch": 1, "kv_dtype": "int4"}),
    Case("gqa-tp8-shard", "one TP rank of 8 (one KV head per rank)", "llama-3.1-70b", {"seq": "32K", "batch": 8, "tp": 8},
         {"seq": 128, "batch": 1, "tp": 8}),
    Case("mla-bf16-static-pp4", "MLA latent, one pipeline stage of 4", "deepseek-v3", {"seq": "8K", "batch": 8, "pp": 4},
         {"seq": 128, "batch": 1, "pp": 4}),
    Case("mla-fp8-paged-tp8", "MLA latent, fp8, paged, TP 8 x PP 2 (latent whole on every rank)", "deepseek-v3",
         {"seq": "8K", "batch": 8, "kv_dtype": "fp8", "tp": 8, "pp": 2}, {"seq": 128, "batch": 1, "kv_dtype": "fp8", "tp": 8, "pp": 2},
         {"layout": "paged"}),
    Case("sliding-bf16-static", "sliding window 4096 on alternate layers, capped", "gemma-2-9b", {"seq": "8K", "batch": 16},
         {"seq": 256, "batch": 1}),
    Case("sliding-fp8-paged", "sliding + full pools, fp8", "gemma-2-9b", {"seq": "8K", "batch": 16, "kv_dtype": "fp8"},
         {"seq": 256, "batch": 1, "kv_dtype": "fp8"}, {"layout": "paged"}),
    Case("hybrid-jamba-static", "Mamba state + attention (1 in 8)", "jamba-1.5-mini", {"seq": "32K", "batch": 8},
         {"seq": 128, "batch": 1}),
    Case("hybrid-qwen3next-paged", "gated delta-net state + attention (1 in 4), paged", "qwen3-next-80b-a3b",
         {"seq": "32K", "batch": 8}, {"seq": 128, "batch": 1}, {"layout": "paged"}),
    Case("hybrid-nemotronh-static", "Mamba2 + attention + MLP-only layers", "nemotron-h-56b", {"seq": "8K", "batch": 4},
         {"seq": 64, "batch": 1}),
    Case("bench-gqa-bf16", "decode attention bandwidth, time per output token", "llama-3.1-8b", {"seq": "8K", "batch": 16},
         {"seq": 128, "batch": 1}, {"bench": True}),
    Case("find-max-static", "largest batch at 32K that fits in 95% of free memory", "llama-3.1-8b", {"seq": "32K"},
         {"seq": 256}, {"find_max": True}),
    Case("find-max-paged-fp8", "most fp8 blocks that fit, under a 16 GiB cap", "qwen2.5-7b", {"seq": "32K", "kv_dtype": "fp8"},
         {"seq": 256, "kv_dtype": "fp8"}, {"find_max": True, "layout": "paged", "max_bytes": "16GiB"}),
    Case("vllm-pool-gqa", "vLLM's own pool for this GPU (num_gpu_blocks from its budget model), per-layer tensors",
         "llama-3.1-8b", {"seq": "32K"}, {"seq": 4096, "kv_cache_memory": "64MiB"}, {"engine": "vllm", "layout": "paged"}),
    Case("vllm-pool-sliding", "vLLM's pool for sliding + full groups: shared slots", "gemma-2-9b", {"seq": "8K"},
         {"seq": 4096, "kv_cache_memory": "64MiB"}, {"engine": "vllm", "layout": "paged"}),
    Case("oom-refused", "a 1 TiB cache: refused cleanly, memory given back", "llama-3.1-8b", {"seq": "128K", "batch": 64},
         {"seq": "128K", "batch": 64}, expect="oom"),
)
CPU_FIND_MAX_BYTES = "200MiB"


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


# bundled spec name -> its config.json copy in tests/data/hf_configs, where the file name differs
CONFIG_FILES = {"qwen3-next-80b-a3b": "qwen3-next-80b-a3b-thinking", "nemotron-h-56b": "nemotron-h-56b-base-8k"}


def model_ref(name: str) -> str:
    """The bundled spec's name when kvplan has it, else the copy of its config.json in a checkout's
    tests/data/hf_configs (a wheel without the spec, or a checkout from before it was bundled)."""
    try:
        catalog.resolve_model(name)
        return name
    except (InputError, ModuleNotFoundError, FileNotFoundError):
        path = _repo_root() / "tests" / "data" / "hf_configs" / f"{CONFIG_FILES.get(name, name)}.json"
        if path.exists():
            return str(path)
        raise


def _request(case: Case, shape: dict):
    return build_request(model_ref(case.model), seq=str(shape["seq"]), batch=shape.get("batch", 1),
                         kv_dtype=shape.get("kv_dtype", "auto"), dtype=None, gpu=None, gpu_mem=None, gpus=None,
                         tp=shape.get("tp"), pp=shape.get("pp", 1), kv_cache_memory=shape.get("kv_cache_memory"))


def run_case(case: Case, device, torch, *, small: bool) -> dict:
    from dataclasses import asdict

    shape = case.cpu if small else case.gpu
    opts = dict(case.options)
    if opts.get("find_max") and small:
        opts["max_bytes"] = CPU_FIND_MAX_BYTES
    if "max_bytes" in opts:
        opts["max_bytes"] = parse_size(opts["max_bytes"])
    entry: dict = {"name": case.name, "what": case.what, "model": case.model, "shape": shape, "options": case.options,
                   "expect": case.expect}
    device.release()
    baseline = device.counters()
    start = time.perf_counter()
    try:
        req = _request(case, shape)
        engine_estimate = None
        if engines.get(opts.get("engine", "static")).paged:
            engine_estimate = engines.get(opts["engine"]).estimate
        result = run_probe(req, ProbeOptions(device=device.label, **opts), engine_estimate=engine_estimate, torch=torch,
                           device=device, dist_env=False)
        entry["result"] = asdict(result)
        ok = result.match and (result.find_max is None or result.find_max.match)
        entry["ok"] = ok if case.expect == "match" else False
        entry["summary"] = _summary(result)
    except ProbeOutOfMemory as err:
        entry["error"] = err.one_line()
        entry["ok"] = case.expect == "oom"
        entry["summary"] = "refused: " + err.what
    except KvplanError as err:
        entry["error"] = err.one_line()
        entry["ok"] = False
        entry["summary"] = "error: " + err.one_line()
    device.release()
    after = device.counters()
    leaked = {k: getattr(after, k) - getattr(baseline, k) for k in ("requested", "allocated")
              if getattr(after, k) is not None and getattr(baseline, k) is not None}
    entry["left_allocated_bytes"] = leaked or None
    if any(leaked.values()):
        entry["ok"] = False
        entry["summary"] = entry.get("summary", "") + f" · LEAKED {leaked}"
    entry["seconds"] = round(time.perf_counter() - start, 3)
    return entry


def _summary(result) -> str:
    if result.find_max is not None:
        fm = result.find_max
        return (f"find-max {fm.unit}: measured {fm.measured_max} vs predicted {fm.predicted_max} "
                f"({fm.limited_by}, budget {fm.budget_bytes:,} B)")
    text = f"estimated {result.estimated_bytes:,} B, measured {result.measured_bytes:,} B"
    if result.allocated_delta_bytes is not None:
        text += f", allocated {result.allocated_delta_bytes:,}, reserved {result.reserved_delta_bytes:,}, driver {result.driver_delta_bytes:,}"
    if result.rss_delta_bytes is not None:
        text += f", RSS {result.rss_delta_bytes:,}"
    if result.bench is not None:
        b = result.bench
        text += f"; decode {b.seconds_per_token * 1e3:.3f} ms/token at {b.achieved_bytes_per_s / 1e9:.1f} GB/s"
        if b.catalog_fraction is not None:
            text += f" ({b.catalog_fraction:.0%} of {b.gpu}'s {b.catalog_bytes_per_s / 1e12:.2f} TB/s)"
    return text


def run_suite(device_name: str = "cuda", *, small: bool | None = None, only: list[str] | None = None, torch=None) -> dict:
    torch = torch or load_torch()
    start = time.perf_counter()
    device = select_device(torch, device_name)
    small = device.kind != "cuda" if small is None else small
    cases = [c for c in CASES if not only or c.name in only]
    entries = []
    for case in cases:
        entry = run_case(case, device, torch, small=small)
        entries.append(entry)
        print(f"{'ok  ' if entry['ok'] else 'FAIL'} {case.name:26s} {entry['seconds']:7.2f} s  {entry['summary']}", file=sys.stderr)
    report = {
        "suite": "kvplan probe GPU verification", "device": device.kind, "device_name": device.name,
        "torch_version": str(torch.__version__), "cuda_version": getattr(torch.version, "cuda", None), "small_shapes": small,
        "cases": entries, "passed": sum(e["ok"] for e in entries), "failed": sum(not e["ok"] for e in entries),
        "seconds": round(time.perf_counter() - start, 3),
    }
    if device.kind == "cuda":
        free, total = device.cuda.mem_get_info(device.index)
        report["device_total_bytes"] = total
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvplan.probe.suite", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N, cpu or auto")
    parser.add_argument("--out", default=None, help="write the JSON report here (default: stdout)")
    parser.add_argument("--small", action="store_true", help="the small CPU shapes even on a GPU")
    parser.add_argument("--only", action="append", help="run only this case (repeatable)")
    args = parser.parse_args(argv)

    try:
        report = run_suite(args.device, small=True if args.small else None, only=args.only)
    except KvplanError as err:
        print(f"error: {err.one_line()}", file=sys.stderr)
        return err.exit_code
    text = json.dumps(report, indent=2, default=list)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
        print(f"{report['passed']} passed, {report['failed']} failed in {report['seconds']:.1f} s on {report['device_name']}; "
              f"report: {args.out}", file=sys.stderr)
    else:
        print(text)
    return 0 if report["failed"] == 0 else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
