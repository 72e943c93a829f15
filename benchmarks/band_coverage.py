"""Does kvplan's band hold what the engine logged? Every public start-up log in tests/data, per engine and release line.

Each log kvplan can describe end to end (the model's config, the GPU, the release and the launch's flags) is scored
twice:

- options unset (the headline): every environment option the launch does not state is left unset, as a user who
  sets none runs kvplan. Each term those options decide takes the release's default, and the band widens to every
  value the term can take (kvplan/engines/vllm/engine.py open_terms); the verdict stays at the band's low edge;
- options given: with what the log shows beyond the launch (VLLM_USE_FLASHINFER_SAMPLER=1 where the log says "Using
  FlashInfer for top-p & top-k sampling"; TensorRT-LLM's execution context where trtllm-build printed it).

Errors are leave-one-source-out: vLLM's, SGLang's and TensorRT-LLM's fitted constants are refitted without the
log's publication (benchmarks/vllm_budget_error.py, benchmarks/sglang_trtllm_error.py, whose scoring this reuses).
vLLM's error is on the "Available KV cache memory" of the worker that sizes the pool, SGLang's and TensorRT-LLM's on
the token pool (the same percentage on the pool's bytes). Every log of tests/data/{vllm_logs, vllm_logs_public,
vllm_logs_features, vllm_auto_fit_logs, sglang_logs, trtllm_logs} is either scored or listed with why not.

    python benchmarks/band_coverage.py [--markdown]   # exit 1 when an engine's band, options unset, covers < 90%
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
BENCH = HERE / "benchmarks"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(BENCH))

import rocm_error as rocm  # noqa: E402
import sglang_trtllm_error as st  # noqa: E402
import vllm_budget_error as vb  # noqa: E402

GIB = 2**30
DATA = HERE / "tests" / "data"
TARGET = 0.9  # issue 28: the band covers >= 90% of the public start-up logs of every engine, options unset

# The launch-option logs (tests/data/vllm_logs_features) whose launch kvplan can describe end to end, as the log's
# non-default args state it. No vLLM constant is fitted on these logs, so their in-sample figures are already
# leave-one-source-out:
# - a weight offload sweep of the same repository as the scored gpu_memory_utilization sweep
#   (TheBuccaneer/vllm-offload-profiles, RTX 3090, vLLM 0.17.1; its logs print neither the activation peak nor the
#   non-torch memory);
# - KubeRay's data-parallel Qwen2.5-0.5B-Instruct on two T4s (vLLM 0.11.0, --data-parallel-size 2 over Ray, one
#   engine a node): each rank sizes its own pool on one T4, float16 as the log prints ("Tesla T4 ... doesn't support
#   torch.bfloat16. Falling back to torch.float16"); the config is the checkpoint's, re-saved (extra_configs/SOURCES.md).
_OFFLOAD = dict(gpu="rtx-3090-24gb", version="0.17.1", seq="8192", util="0.86", dtype=None,
                args="--cpu-offload-gb 12")
FEATURE_RUNS = {
    "buccaneer-rtx3090-v0171-llama31-8b-gmu086-offload12": dict(
        _OFFLOAD, model="vllm_models/meta-llama--Llama-3.1-8B-Instruct"),
    "buccaneer-rtx3090-v0171-qwen25-7b-gmu086-offload12": dict(
        _OFFLOAD, model="vllm_models/Qwen--Qwen2.5-7B-Instruct"),
    "idx-2xt4-ray-dp2-v0110-qwen25-05b": dict(
        model="extra_configs/qwen2.5-0.5b-instruct.json", gpu="t4-16gb", version="0.11.0", seq="32768", util=None,
        dtype="fp16", args="--data-parallel-size 2 --data-parallel-size-local 1 --data-parallel-backend ray"),
}
# why each other launch-option log is not scored end to end
FEATURE_NOT_SCORED = {
    "ascend-v091-llama31-8b-eagle3": "an Ascend NPU (vllm-ascend 0.9.1), not a GPU kvplan models; its pool is checked "
                                     "given the logged memory (tests/test_features_logs.py)",
    "dynamo-issue288-llama8b-weights": "V0 model runner (before 0.10: refused, exit 3); only its weights are used",
    "idx-2xdgxspark-v0211-dsv4-flash-mtp2-tp2": "two DGX Spark GB10 (unified memory), a development build of "
                                                "DeepSeek-V4-Flash with MTP",
    "idx-arm64-v0231-qwen36-27b-nvfp4-mtp2": "the GPU is not named (a development build on an arm64 host)",
    "idx-wsl-v0192-gemma4-26b-a4b-nvfp4-eagle3": "the GPU is not named and no config for the checkpoint",
    "vllm-pr27733-granite4-micro-lora-v0110rc2": "the GPU is not named and no config for the checkpoint",
    "idx-rtx4090d-v092-unsloth-qwen25-vl-3b-bnb4-lora": "vLLM 0.9.2 (before 0.10: refused, exit 3) under Unsloth",
}
SPARK = "DGX Spark GB10 (unified memory); no config for the checkpoint"
AUTO_FIT_NOT_SCORED = ("a development build (0.28-0.29) on an unnamed 16 GB card, exl3 3-bit weights of a local "
                       "checkpoint without a config; tests/test_vllm_auto_len.py checks the length vLLM picks at the "
                       "logged KV memory")


@dataclass(frozen=True)
class Row:
    engine: str  # "vLLM", "SGLang", "TensorRT-LLM (PyTorch)", "TensorRT-LLM (TensorRT engine)"
    line: str  # the release line (each engine's releases.LINES)
    log: str
    error: float  # signed percent, leave-one-source-out
    covered: bool
    low: float  # the band's edges, GiB of KV memory
    high: float
    logged: str  # the logged figure, with its unit

    @property
    def band(self) -> str:
        return f"{self.low:.2f}..{self.high:.2f}"

    @property
    def half_width(self) -> float:
        """Half the band's width as a percentage of its middle: what the open terms and the terms' error cost."""
        middle = (self.low + self.high) / 2
        return 100 * (self.high - self.low) / 2 / abs(middle) if middle else 0.0


# ------------------------------------------------------------------------------------------------ vLLM

def _vllm_features() -> list[Row]:
    from kvplan.engines import vllm
    from kvplan.engines.vllm import releases
    from kvplan.requests.build import build_request

    out = []
    for rec in _index("vllm_logs_features"):
        run = FEATURE_RUNS.get(rec["id"])
        if run is None:
            continue
        logged = float(rec["extracted"]["available_kv_cache_memory"][0].split(": ")[1].split(" GiB")[0])
        req = build_request(str(DATA / run["model"]), seq=run["seq"], batch=1, kv_dtype="auto", dtype=run["dtype"],
                            gpu=run["gpu"], gpu_mem=None, gpus=None, tp=1, pp=1, gpu_util=run["util"],
                            engine_version=run["version"], vllm_args=run["args"])
        est = vllm.estimate(req)
        low, high = est.available_kv_bytes_low / GIB, est.available_kv_bytes_high / GIB
        out.append(Row("vLLM", releases.release(run["version"]).line, rec["id"],
                       100 * (est.available_kv_bytes / GIB - logged) / abs(logged),
                       low - 0.005 <= logged <= high + 0.005, low, high, f"{logged} GiB"))
    return out


def vllm_rows(options_unset: bool) -> tuple[list[Row], list[tuple[str, str]]]:
    public, refused = vb.public_runs()
    skipped: list[tuple[str, str]] = []
    scores = vb.score(vb.h100_runs() + public, options_unset=options_unset, skipped=skipped)
    rows = [Row("vLLM", s.run.line, s.run.name, 100 * (s.loso - s.logged) / abs(s.logged), s.covered,
                s.low / GIB, s.high / GIB, f"{s.run.available} GiB") for s in scores]
    return rows + _vllm_features(), list(refused) + skipped


# ------------------------------------------------------------------------------------------------ SGLang, TensorRT-LLM

def sglang_trtllm_rows(options_unset: bool) -> tuple[list[Row], list[tuple[str, str]]]:
    from kvplan.engines.sglang import releases as sglang_releases
    from kvplan.engines.trtllm import releases as trtllm_releases

    scored, skipped = st.score_e2e(options_unset=options_unset)
    rows = []
    for s in scored:
        if s.engine == "sglang":
            engine, line = "SGLang", sglang_releases.release(s.line).line
        else:
            engine = "TensorRT-LLM (PyTorch)" if s.backend == "pytorch" else "TensorRT-LLM (TensorRT engine)"
            line = trtllm_releases.release(s.line).line
        rows.append(Row(engine, line, s.log, s.error, s.covered, s.band[0] / GIB, s.band[1] / GIB,
                        f"{s.logged:,} tokens"))
    return rows, skipped


# ------------------------------------------------------------------------------------------------ every log

def _index(folder: str) -> list[dict]:
    path = DATA / folder / "index.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _listed_reason(log: str) -> str | None:
    for why, ids in vb.NOT_SCORED.items():
        for entry in ids:
            if entry.split(" (")[0] == log:
                return why + (f" ({entry.split(' (', 1)[1]}" if " (" in entry else "")
    return None


def not_scored(scored: set[str], refused: list[tuple[str, str]],
               st_skipped: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(folder, log, why) for every log in tests/data that is not scored end to end; a log with no reason says so."""
    out = []
    why_refused = dict(refused)
    terms_only = {t[0] for t in vb.TERMS_ONLY}
    for rec in _index("vllm_logs_public"):
        log = rec["id"]
        if log in scored:
            continue
        why = why_refused.get(log) or _listed_reason(log)
        if why and log in terms_only:
            why += "; its printed non-torch figure informs that term's fit"
        out.append(("vllm_logs_public", log, why or "NO REASON LISTED"))
    for rec in _index("vllm_logs_features"):
        log = rec["id"]
        if log not in scored:
            out.append(("vllm_logs_features", log,
                        FEATURE_NOT_SCORED.get(log) or (SPARK if log.startswith("spark-") else "NO REASON LISTED")))
    for path in sorted((DATA / "vllm_auto_fit_logs").glob("*.log")):
        out.append(("vllm_auto_fit_logs", path.stem, AUTO_FIT_NOT_SCORED))
    for log, why in st_skipped:
        folder = "sglang_logs" if any(r["id"] == log for r in _index("sglang_logs")) else "trtllm_logs"
        out.append((folder, log, why))
    return out


# why a log is not scored, grouped: the first group whose words its reason has (the order settles reasons that name
# two causes, e.g. "the GPU is not named and no config": the earlier cause is the one that stops it)
WHY_GROUPS = (
    ("no pool figure in the log", ("no token pool", "crashed before", "start failure", "no model, GPU or release")),
    ("DGX Spark GB10 (unified memory)", ("GB10", "DGX Spark")),
    ("ROCm, Ascend or another non-CUDA device", ("ROCm", "Ascend", "Hygon")),
    ("vLLM before 0.10 (refused)", ("before 0.10", "V0 ")),
    ("the GPU, model, TP size or launch not stated", ("not named", "not stated", "unnamed")),
    ("no public config for the checkpoint", ("config",)),
)
OTHER = "not modelled, or the log contradicts its model (a fork, a tower, a feature, multi-node, an older engine)"
FOLDER_ENGINE = {"vllm_logs_public": "vLLM", "vllm_logs_features": "vLLM", "vllm_auto_fit_logs": "vLLM",
                 "sglang_logs": "SGLang", "trtllm_logs": "TensorRT-LLM"}


def why_group(why: str) -> str:
    for group, words in WHY_GROUPS:
        if any(w in why for w in words):
            return group
    return OTHER


def tally(rows: list[Row], missing: list[tuple[str, str, str]]) -> dict[str, dict[str, int]]:
    """engine -> {"scored": n, "covered": n, <why group>: n}: every log of the folders counted once (the TensorRT-LLM
    backends together, as their folder keeps them)."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        engine = "TensorRT-LLM" if r.engine.startswith("TensorRT-LLM") else r.engine
        t = out.setdefault(engine, {})
        t["scored"] = t.get("scored", 0) + 1
        t["covered"] = t.get("covered", 0) + r.covered
    for folder, _, why in missing:
        t = out.setdefault(FOLDER_ENGINE[folder], {})
        t[why_group(why)] = t.get(why_group(why), 0) + 1
    return out


# ------------------------------------------------------------------------------------------------ report

def summary(rows: list[Row]) -> dict[tuple[str, str], tuple[int, float, int, float]]:
    """(engine, line or "all") -> (n, MAE %, covered, the median band's half width in % of its middle)."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.engine, "all"), []).append(r)
        groups.setdefault((r.engine, r.line), []).append(r)
    return {k: (len(g), statistics.fmean(abs(r.error) for r in g), sum(r.covered for r in g),
                statistics.median(r.half_width for r in g)) for k, g in groups.items()}


def rocm_rows() -> list[Row]:
    """tests/data/rocm_logs (benchmarks/rocm_error.py): AMD Instinct runs; no constant or band was set on them and
    they give no environment option, so unset and given are the same."""
    from kvplan.engines.sglang import releases as sglang_releases
    from kvplan.engines.vllm import releases as vllm_releases

    line = {"vLLM": lambda v: vllm_releases.release(v).line, "SGLang": lambda v: sglang_releases.release(v).line}
    return [Row(r["engine"], line[r["engine"]](r["version"]), r["log"], r["error"], r["covered"], r["low"], r["high"],
                r["logged"]) for r in [rocm.minimax_record()] + rocm.sglang_records()]


def coverage(options_unset: bool) -> tuple[list[Row], list[tuple[str, str]], list[tuple[str, str]]]:
    """Every scored row, vLLM's refusals and SGLang's / TensorRT-LLM's skipped logs."""
    v, refused = vllm_rows(options_unset)
    s, skipped = sglang_trtllm_rows(options_unset)
    return v + s + rocm_rows(), refused, skipped


ENGINES = ("vLLM", "SGLang", "TensorRT-LLM (PyTorch)", "TensorRT-LLM (TensorRT engine)")


def _line_key(line: str) -> tuple:
    return tuple(int(x) if x.isdigit() else 0 for x in line.split("-")[0].replace("x", "0").split("."))


def table(rows: list[list[str]], head: list[str], markdown: bool) -> str:
    return vb.table(rows, head, markdown)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="tables as markdown (for docs/engines/calibration.md)")
    args = ap.parse_args()
    unset, refused, skipped = coverage(options_unset=True)
    given, _, _ = coverage(options_unset=False)
    su, sg = summary(unset), summary(given)

    print("## Band coverage per engine and release line (options unset beside options given)\n")
    out = []
    for engine in ENGINES:
        lines = sorted({k[1] for k in su if k[0] == engine and k[1] != "all"}, key=_line_key)
        for line in ["all"] + lines:
            n, mae_u, cov_u, width_u = su[(engine, line)]
            _, mae_g, cov_g, width_g = sg[(engine, line)]
            out.append([engine if line == "all" else "", line, str(n), f"{mae_u:.2f}", f"{cov_u}/{n}", f"±{width_u:.1f}",
                        f"{mae_g:.2f}", f"{cov_g}/{n}", f"±{width_g:.1f}"])
    print(table(out, ["engine", "release line", "n", "MAE % unset", "band covers, unset", "band % unset (median)",
                      "MAE % given", "band covers, given", "band % given (median)"], args.markdown))

    print("\n## Every scored log, options unset\n")
    given_by_log = {r.log: r for r in given}
    print(table([[r.engine, r.line, r.log[:58], r.logged, f"{r.error:+.2f}", r.band, "yes" if r.covered else "NO",
                  f"{given_by_log[r.log].error:+.2f}", "yes" if given_by_log[r.log].covered else "NO"] for r in unset],
                ["engine", "line", "log", "logged", "err % unset", "band GiB unset", "covered", "err % given",
                 "covered given"], args.markdown))

    scored = {r.log for r in unset}
    missing = not_scored(scored, refused, skipped)
    print(f"\n## Not scored end to end ({len(missing)} logs)\n")
    print(table([[f, log[:62], why[:150]] for f, log, why in missing], ["folder", "log", "why"], args.markdown))

    print("\n## Every log per engine: scored (band covers, options unset) or why not\n")
    counts = tally(unset, missing)
    groups = [g for g, _ in WHY_GROUPS] + [OTHER]
    print(table([[engine, str(sum(t.get(k, 0) for k in ["scored"] + groups)), f"{t.get('scored', 0)} "
                  f"({t.get('covered', 0)})"] + [str(t.get(g, 0)) for g in groups]
                 for engine, t in counts.items()],
                ["engine", "logs", "scored (covered)"] + groups, args.markdown))

    problems = [f"{engine}: band covers {su[(engine, 'all')][2]}/{su[(engine, 'all')][0]} options unset"
                for engine in ENGINES if (engine, "all") in su and su[(engine, "all")][2] < TARGET * su[(engine, "all")][0]]
    problems += [f"{log}: not scored and no reason listed" for _, log, why in missing if why == "NO REASON LISTED"]
    return vb.report_missed(problems)


if __name__ == "__main__":
    sys.exit(main())
