"""`kvplan plan` against published deployments: for every comparison a publication measured (one model and request
shape, several GPU kinds or TP sizes), run the plan search on exactly those configurations with latency factors
fitted WITHOUT that publication (leave-one-source-out), and check

- the estimate: the plan's throughput per GPU lies inside its band around the measured one;
- the ranking: the configuration the publication measured best (most output tokens per second per GPU) is among the
  plan's top two.

    PYTHONPATH=. python scripts/plan_published.py            # every comparison, then the summary
    PYTHONPATH=. python scripts/plan_published.py --docs     # the table docs/plan.md shows

tests/test_plan_published.py checks the documented table and summary against this.
"""

from __future__ import annotations

import csv
import dataclasses
import sys
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency_data as ld  # noqa: E402

from kvplan import engines  # noqa: E402
from kvplan.analysis import latency_fit, plan  # noqa: E402
from kvplan.analysis import workload as wl  # noqa: E402
from kvplan.requests.build import build_request  # noqa: E402
from kvplan.model import catalog, fleet  # noqa: E402
from kvplan.model.efficiency import Factors  # noqa: E402

SOURCE_TITLES = {
    "trtllm-perf-0.14": "TensorRT-LLM 0.14 performance overview",
    "trtllm-perf-1.0": "TensorRT-LLM 1.0 performance overview",
    "nim-genai-perf": "NIM GenAI-Perf benchmarks",
}
NIM_CONCURRENCY = 50  # the NIM comparisons are taken at 50 clients, a load every configuration holds
# the comparisons docs/plan.md lists (the summary covers all of them); chosen to span GPUs, engines' releases,
# dense and MoE, short and long prompts, before the results were known to the listing
DOCUMENTED = (
    ("trtllm-perf-0.14", "llama-3.1-70b 1000/1000 fp8 on h100-sxm-80gb"),
    ("trtllm-perf-0.14", "llama-3.1-70b 128/2048 fp8 on h200-141gb"),
    ("trtllm-perf-0.14", "llama-3.1-70b 2048/128 fp16 on a100-sxm-80gb"),
    ("trtllm-perf-0.14", "llama-3.1-70b 500/2000 fp8 on l40s-48gb"),
    ("trtllm-perf-0.14", "llama-3.1-70b 5000/500 fp16 on a100-pcie-80gb"),
    ("trtllm-perf-0.14", "mixtral-8x7b 1000/1000 fp8 on h100-sxm-80gb"),
    ("trtllm-perf-0.14", "mixtral-8x7b 2048/2048 fp16 on a100-sxm-80gb"),
    ("trtllm-perf-0.14", "mixtral-8x7b 128/128 fp8 on l40s-48gb"),
    ("trtllm-perf-1.0", "llama-3.3-70b 1000/1000 fp8"),
    ("trtllm-perf-1.0", "llama-3.1-405b 2048/2048 fp8"),
    ("trtllm-perf-1.0", "llama-3.1-8b 20000/2000 fp8"),
    ("nim-genai-perf", "llama-3.1-70b 200/1000 fp8 at 50 clients"),
    ("nim-genai-perf", "llama-3-8b 2000/200 fp16 at 50 clients"),
)


@dataclass(frozen=True)
class Config:
    label: str  # "h100-sxm-80gb TP2"
    gpu: str
    tp: int
    measured_per_gpu: float  # output tokens/s per GPU
    predicted_per_gpu: float | None
    band: tuple[float, float] | None  # the band of the factors that predicted it
    basis: str | None

    @property
    def ratio(self) -> float | None:
        return self.predicted_per_gpu / self.measured_per_gpu if self.predicted_per_gpu else None

    @property
    def in_band(self) -> bool:
        return self.ratio is not None and self.band[0] <= self.ratio <= self.band[1]


@dataclass(frozen=True)
class Comparison:
    source: str
    what: str
    configs: tuple[Config, ...]

    @property
    def best(self) -> Config:
        return max(self.configs, key=lambda c: c.measured_per_gpu)

    @property
    def plan_order(self) -> list[Config]:
        return sorted((c for c in self.configs if c.predicted_per_gpu), key=lambda c: -c.predicted_per_gpu)

    @property
    def best_rank(self) -> int | None:
        order = self.plan_order
        return order.index(self.best) + 1 if self.best in order else None


@lru_cache(maxsize=None)
def _measurements():
    return ld.measurements()[0]


@lru_cache(maxsize=None)
def _fit_without(source: str) -> latency_fit.Fitted:
    return latency_fit.fit([m for m in _measurements() if m.source != source])


def factors_without(source: str):
    fitted = _fit_without(source)

    def factors_for(gpu: str, architecture: str) -> Factors:
        for key, measured in ((f"gpu:{gpu}", True), (f"arch:{architecture}", False), ("all", False)):
            if key in fitted.levels:
                return dataclasses.replace(fitted.levels[key], measured=measured)
        raise KeyError(gpu)

    return factors_for


# the TensorRT-LLM release each publication ran (latency_data.py sizes its measurements with the same rules)
RELEASES = {"trtllm-perf-0.14": "0.14.0", "trtllm-perf-1.0": "1.0.0", "nim-genai-perf": None}


def _search(source, model, gpu, weights, kv, isl, osl, load_kind, concurrency=None, gpu_util=None):
    base = build_request(model, seq=str(isl + osl), batch=1, kv_dtype="auto", dtype=weights, gpu=None, gpu_mem=None,
                         gpus=None, tp=None, pp=1, engine_version=RELEASES[source])
    if gpu_util:
        base = dataclasses.replace(base, gpu_util=Fraction(gpu_util))
    if load_kind == "rate":  # a trickle: one replica; its sustained rate at the most it holds is the max throughput
        load = plan.load_of([wl.Request(isl, osl)], concurrency=None, rate=1e-6, max_model_len=isl + osl, description="")
    else:
        load = plan.load_of([wl.Request(isl, osl)], concurrency=concurrency, rate=None, max_model_len=isl + osl,
                            description="")
    axes = plan.Axes(gpus=(catalog.find_gpu(gpu),), engines=("trtllm",), kv_dtypes=(kv,), max_gpus=8)
    return plan.search(base, load, plan.Targets(), axes, prices={}, get_engine=engines.get,
                       factors_for=factors_without(source), node_of=fleet.node)


def _config(result, gpu: str, tp: int, measured_per_gpu: float, *, osl: int, kind: str) -> Config:
    label = f"{gpu} TP{tp}"
    for p in result.plans:
        if p.tp == tp and p.pp == 1 and p.replicas == 1:
            per_gpu = (p.requests_per_s_per_replica * osl if kind == "rate" else p.output_tokens_per_s) / tp
            f = result_factors(result, p)
            return Config(label, gpu, tp, measured_per_gpu, per_gpu, f, p.latency_basis)
    return Config(label, gpu, tp, measured_per_gpu, None, None, None)


def result_factors(result, p) -> tuple[float, float]:
    t = p.tpot
    return (t.low_ms / t.estimate_ms, t.high_ms / t.estimate_ms)


def trtllm_v014() -> list[Comparison]:
    cols = {"H200 141GB HBM3 FP8": ("h200-141gb", "fp8"), "H100 80GB HBM3 FP8": ("h100-sxm-80gb", "fp8"),
            "H100 80GB HBM3 FP16": ("h100-sxm-80gb", "fp16"), "A100-SXM4-80GB FP16": ("a100-sxm-80gb", "fp16"),
            "A100-PCIE-80GB FP16": ("a100-pcie-80gb", "fp16"), "L40S FP8": ("l40s-48gb", "fp8")}
    groups: dict = {}
    with open(ld.DATA / "trtllm_perf_overview_v0.14.csv", newline="") as f:
        for row in csv.DictReader(f):
            for col, (gpu, prec) in cols.items():
                if row[col]:
                    groups.setdefault((ld.MODELS[row["model"]], row["isl_osl"], gpu, prec), {})[int(row["tp"])] = (
                        float(row[col]) / int(row["tp"]))
    out = []
    for (model, io, gpu, prec), measured in groups.items():
        if len(measured) < 2:
            continue
        isl, osl = (int(x) for x in io.split("/"))
        result = _search("trtllm-perf-0.14", model, gpu, prec, prec, isl, osl, "rate")
        configs = tuple(_config(result, gpu, tp, m, osl=osl, kind="rate") for tp, m in sorted(measured.items()))
        out.append(Comparison("trtllm-perf-0.14", f"{model} {io} {prec} on {gpu}", configs))
    return out


def trtllm_v10() -> list[Comparison]:
    out = []
    with open(ld.DATA / "trtllm_perf_overview_v1.0.csv", newline="") as f:
        for row in csv.DictReader(f):
            model = ld.MODELS[row["model"]]
            isl, osl = (int(x) for x in row["isl_osl"].split("/"))
            configs = []
            for gpu, tp, col in (("h200-141gb", int(row["h200_tp"]), "H200 (FP8)"), ("h100-sxm-80gb", int(row["h100_tp"]), "H100 (FP8)")):
                result = _search("trtllm-perf-1.0", model, gpu, "fp8", "fp8", isl, osl, "rate", gpu_util="0.95")
                configs.append(_config(result, gpu, tp, float(row[col]) / tp, osl=osl, kind="rate"))
            out.append(Comparison("trtllm-perf-1.0", f"{model} {row['isl_osl']} fp8", tuple(configs)))
    return out


def nim() -> list[Comparison]:
    groups: dict = {}
    with open(ld.DATA / "nim_genai_perf.csv", newline="") as f:
        for row in csv.DictReader(f):
            if int(row["input_config-concurrency"]) != NIM_CONCURRENCY:
                continue
            model = ld.MODELS[row["task_inputs-model"]]
            prec = "fp8" if row["task_inputs-precision"] == "fp8" else "fp16"
            key = (model, int(row["input_config-synthetic_input_tokens_mean"]), int(row["input_config-output_tokens_mean"]), prec)
            cfg = (ld.GPUS[row["task_inputs-GPU"]], int(row["task_inputs-n_gpus"]))
            groups.setdefault(key, {}).setdefault(cfg, float(row["output_token_throughput-avg"]) / cfg[1])
    out = []
    for (model, isl, osl, prec), measured in groups.items():
        if len(measured) < 2:
            continue
        configs = []
        for (gpu, tp), m in sorted(measured.items()):
            result = _search("nim-genai-perf", model, gpu, prec, prec, isl, osl, "concurrency", concurrency=NIM_CONCURRENCY)
            configs.append(_config(result, gpu, tp, m, osl=osl, kind="concurrency"))
        out.append(Comparison("nim-genai-perf", f"{model} {isl}/{osl} {prec} at {NIM_CONCURRENCY} clients", tuple(configs)))
    return out


def comparisons() -> list[Comparison]:
    return trtllm_v014() + trtllm_v10() + nim()


@dataclass(frozen=True)
class Summary:
    comparisons: int
    best_first: int
    best_top_two: int
    configs: int
    in_band: int


def summarize(comps: list[Comparison]) -> Summary:
    configs = [c for comp in comps for c in comp.configs if c.predicted_per_gpu]
    return Summary(len(comps), sum(c.best_rank == 1 for c in comps), sum((c.best_rank or 99) <= 2 for c in comps),
                   len(configs), sum(c.in_band for c in configs))


def docs_table(comps: list[Comparison]) -> str:
    by_key = {(c.source, c.what): c for c in comps}
    lines = ["| publication | deployment | configurations measured (output tok/s per GPU) | best measured | kvplan's estimate for it (band) | its rank in the plan |",
             "|---|---|---|---|---|---|"]
    for key in DOCUMENTED:
        c = by_key[key]
        b = c.best
        measured = ", ".join(f"{x.label.split()[-1] if c.source == 'trtllm-perf-0.14' else x.label} {x.measured_per_gpu:,.0f}"
                             for x in c.configs)
        # the band is on time (measured / estimated between low and high), so on throughput it is estimate / high..low
        lo, hi = (b.predicted_per_gpu / b.band[1], b.predicted_per_gpu / b.band[0]) if b.predicted_per_gpu else (0, 0)
        estimate = (f"{b.predicted_per_gpu:,.0f} ({lo:,.0f}–{hi:,.0f}){'' if b.in_band else ': measured outside'}"
                    if b.predicted_per_gpu else "—")
        lines.append(f"| {SOURCE_TITLES[c.source]} | {c.what} | {measured} | {b.label} | {estimate} | "
                     f"{_rank(c)} |")
    return "\n".join(lines)


def _rank(c: Comparison) -> str:
    if c.best_rank is None:  # the plan dropped it: at the band's low edge the configuration holds no request
        return f"not in the plan ({len(c.plan_order)} planned)"
    return f"{c.best_rank} of {len(c.plan_order)}"


def summary_line(s: Summary) -> str:
    return (f"Over all {s.comparisons} comparisons the three publications allow, the configuration measured best is "
            f"kvplan's first in {s.best_first} and among its top two in {s.best_top_two}; {s.in_band} of {s.configs} "
            f"configurations' measured throughput lies inside the band of kvplan's estimate.")


def main() -> int:
    comps = comparisons()
    if "--docs" in sys.argv[1:]:
        print(docs_table(comps))
        print()
        print(summary_line(summarize(comps)))
        return 0
    for c in comps:
        order = ", ".join(x.label for x in c.plan_order)
        ratios = ", ".join(f"{x.label} {x.ratio:.2f}" if x.ratio else f"{x.label} —" for x in c.configs)
        print(f"{c.source:17} {c.what:55} best {c.best.label:18} rank {c.best_rank}  plan order [{order}]  estimate/measured [{ratios}]")
    print()
    print(summary_line(summarize(comps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
