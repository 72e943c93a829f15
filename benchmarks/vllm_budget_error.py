"""How far kvplan's modelled vLLM budget is from what vLLM measured, per GPU kind and release line.

For every real start-up log kvplan can describe (tests/data/vllm_logs: 42 H100 / vLLM 0.19.0 logs;
tests/data/vllm_logs_public: the public logs of other GPUs and releases, PUBLIC below), kvplan predicts the
"Available KV cache memory" of the same launch end to end -- from the GPU, the release and the launch flags only,
as `kvplan estimate --engine vllm` does before the run -- twice:

- in-sample: with the constants fitted on all logs (kvplan/engines/vllm/budget.py FITTED);
- leave-one-source-out (LOSO): with every fitted constant refitted without the log's source, so a constant fitted
  on a log never scores that log, nor its siblings of the same setup. A source is one publication: a repository's
  benchmark folder or one issue thread (PUBLIC's `source`; the entries without one are their own). The 42 H100
  logs count as one source each: they come from one benchmark run but each is a separate launch, and leaving all
  42 out would leave nothing to fit the 0.19 constants on.

It also checks the band (available +- the budget's uncertainty) against the logged value, and, given the logged
KV memory, that kvplan's block count, token count and concurrency are vLLM's exactly.

    python benchmarks/vllm_budget_error.py [--markdown]     # exit 1 when an acceptance target is missed

Targets (issue 11): in-sample on the 42 H100 / 0.19 logs < 1%; on the logs outside H100 / 0.19, LOSO MAE <= 2%
and the band covering >= 90% of runs; the given-budget figures exact on every log that prints them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from kvplan.core.dtypes import dtype as lookup_dtype  # noqa: E402
from kvplan.core import dtypes  # noqa: E402
from kvplan.core.errors import KvplanError  # noqa: E402
from kvplan.engines import vllm  # noqa: E402
from kvplan.engines.api import EngineRequest, Hardware  # noqa: E402
from kvplan.engines.features import Features, ParallelOptions  # noqa: E402
from kvplan.engines.vllm import budget as B  # noqa: E402
from kvplan.engines.vllm import releases  # noqa: E402
from kvplan.engines.vllm.engine import budget_edges, budgets_for, release_for  # noqa: E402
from kvplan.engines.vllm.log import gib_bounds, parse_vllm_log_file  # noqa: E402
from kvplan.model import catalog  # noqa: E402

GIB = 2**30
LOGS = HERE / "tests" / "data" / "vllm_logs"
PUBLIC_LOGS = HERE / "tests" / "data" / "vllm_logs_public"
MODELS = HERE / "tests" / "data" / "vllm_models"


@dataclass
class Run:
    name: str
    group: str  # "h100-0.19" (the 42), "public" (provenance: thread or repository), "public-index-id", "assumed",
    # "public-h100-0.18" (public runs on the 42's GPU and release line: scored, in neither the fit nor the targets)
    gpu_kind: str
    request: EngineRequest
    available: Decimal | None  # logged GiB of the worker that sizes the pool
    weights: Decimal | None = None
    peak: Decimal | None = None
    non_torch: Decimal | None = None
    graph_estimate: Decimal | None = None
    consumed: Decimal | None = None  # 0.27+: weights + non-torch + what torch keeps after the profile
    blocks: int | None = None
    tokens: int | None = None
    concurrency: float | None = None
    note: str = ""
    source: str = ""  # the publication it came from; "" = its own (see the module docstring)

    @property
    def origin(self) -> str:
        return self.source or self.name

    @property
    def release(self) -> releases.Release:
        return release_for(self.request)  # the release under the run's environment options

    @property
    def line(self) -> str:
        return self.release.line


# ------------------------------------------------------------------------------------------ the 42 H100 logs

_TORCH = {"torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32"}


def h100_runs() -> list[Run]:
    from kvplan.core import dtypes

    h100 = catalog.find_gpu("h100-sxm-80gb")
    out = []
    for path in sorted((LOGS / "raw").glob("*.log")):
        figs = parse_vllm_log_file(path)
        short = figs.model.rstrip("/").split("/")[-1].lower()
        folder = next(p for p in MODELS.iterdir() if p.is_dir() and p.name.lower().split("--")[-1] == short)
        spec = catalog.resolve_model(str(folder))
        act = _TORCH.get(str(figs.dtype))
        if act and act != spec.dtype:
            spec = dataclasses.replace(spec, dtype=act)
        fmt = dtypes.weight_format("fp8") if (figs.quantization or "").lower() == "fp8" and spec.weights_bytes is None else None
        req = EngineRequest(spec=spec, seq=figs.max_model_len, batch=1, kv_dtype=figs.kv_cache_dtype or "auto",
                            weight_fmt=fmt, tp=figs.tensor_parallel_size or 1, pp=figs.pipeline_parallel_size or 1,
                            hardware=Hardware(h100.name, h100.capacity_bytes),
                            gpu_util=Fraction(str(figs.gpu_memory_utilization)), max_num_seqs=figs.max_num_seqs,
                            max_num_batched_tokens=figs.max_num_batched_tokens, engine_version=figs.vllm_version)
        w = figs.binding_worker()
        out.append(Run(path.stem, "h100-0.19", "H100 80GB", req, w.available_kv_gib, w.weights_gib,
                       w.activation_peak_gib, w.non_torch_gib, w.cuda_graph_estimate_gib, blocks=figs.num_gpu_blocks,
                       tokens=figs.kv_cache_tokens, concurrency=figs.max_concurrency))
    return out


# ------------------------------------------------------------------------------------------ the public logs

# Each public log kvplan scores, with its launch as the log and its thread state it (index.jsonl has the provenance;
# the figures are the printed ones, copied from the raw log). `config` is the model config the log's checkpoint has
# (exact) or one of the same architecture (related: the 2507 / Instruct checkpoints differ only in max_position).
PUBLIC = [
    dict(id="idx-l40s-8x-qwen3-235b-2507-fp8-tp8-ep-v0102", group="public-index-id", gpu="l40s-48gb",
         config="tests/data/public_models/Qwen--Qwen3-235B-A22B-FP8", version="0.10.2", tp=8, ep=True, seq=32768,
         util="0.9", available="10.64", weights="27.72", peak="1.4", non_torch="0.21", blocks=14834, tokens=237344,
         concurrency=7.24, max_position=262144,
         note="8 x L40S (PCIe), expert parallel; related config (the 2507 checkpoint has the same layout and "
              "max_position_embeddings 262144, index.jsonl); the pool's worker logged 10.64 GiB and 237,344 tokens"),
    dict(id="idx-h200-2x-qwen3-next-80b-tp2-v0102", group="public-index-id", gpu="h200-141gb",
         config="tests/data/hf_configs/qwen3-next-80b-a3b-thinking.json", version="0.10.2", tp=2, seq=262144,
         util="0.9", available="44.59", weights="74.28", peak="5.58", non_torch="1.38", blocks=7162, tokens=973760,
         concurrency=14.77, note="2 x H200 (NVLink); Thinking sibling's config (same architecture)"),
    dict(id="idx-rtxpro6000-4x-qwen3-235b-fp8-tp4-v0271", group="public-index-id", gpu="rtx-pro-6000-96gb",
         config="tests/data/public_models/Qwen--Qwen3-235B-A22B-FP8", version="0.27.1", tp=4, seq=32768, util="0.9",
         max_num_seqs=32, available="27.85", consumed="56.89", weights="55.19", tokens=621392, concurrency=18.96,
         max_position=262144,
         note="4 x RTX PRO 6000 (PCIe across sockets); 0.27 prints the pool ('kv cache memory in use'), not "
              "'Available KV cache memory': the pool is within one block of it"),
    dict(id="idx-4x3090-qwen3-vl-30b-a3b-tp4-v0110", group="public-index-id", gpu="rtx-3090-24gb",
         config="tests/data/public_models/Qwen--Qwen3-VL-30B-A3B-Instruct", version="0.11.0", tp=4, seq=65536,
         util="0.9", available="2.31", weights="14.77", blocks=6297, tokens=100752, concurrency=1.54,
         note="4 x RTX 3090 (PCIe); multimodal MoE with a video encoder profile"),
    # TheBuccaneer/vllm-offload-profiles at 547be90: one RTX 3090, vLLM 0.17.1, max_model_len 8192, a sweep of
    # gpu_memory_utilization (one source: its runs are left out together)
] + [
    dict(id=f"buccaneer-rtx3090-v0171-{run}", group="public", gpu="rtx-3090-24gb",
         config="tests/data/vllm_models/" + ("meta-llama--Llama-3.1-8B-Instruct" if run.startswith("llama")
                                             else "Qwen--Qwen2.5-7B-Instruct"),
         version="0.17.1", tp=1, seq=8192, util=util, available=available,
         weights="14.99" if run.startswith("llama") else "14.25", tokens=tokens,
         note="RTX 3090 (a desktop card); a gpu_memory_utilization sweep of one repository",
         source="TheBuccaneer/vllm-offload-profiles")
    for run, util, available, tokens in (
        ("llama31-8b-gmu090-offload0-baseline", "0.90", "5.68", 46544),
        ("llama31-8b-gmu090-offload0-failed", "0.90", "5.61", 45968),
        ("llama31-8b-gmu086-offload0", "0.86", "4.73", 38736),
        ("llama31-8b-gmu075-offload0-kv_vram", "0.75", "2.13", 17424),
        ("llama31-8b-gmu070-offload0-kv_vram-failed", "0.70", "0.95", None),
        ("qwen25-7b-gmu090-offload0-baseline", "0.90", "6.32", 118304),
        ("qwen25-7b-gmu086-offload0", "0.86", "5.35", 100256),
        ("qwen25-7b-gmu065-offload0-kv_vram", "0.65", "0.49", 9088),
        ("qwen25-7b-gmu065-offload0-kv_vram-failed", "0.65", "0.41", None),
        ("qwen25-7b-gmu060-offload0-kv_vram-failed", "0.60", "-0.7", None))
] + [
    dict(id="abinav-l4-v0110-llama31-8b", group="assumed", gpu="l4-24gb",
         config="tests/data/vllm_models/meta-llama--Llama-3.1-8B-Instruct", version="0.11.0", tp=1, seq=32000,
         util="0.92", max_num_seqs=128, available="4.75", weights="14.9889", blocks=2434, tokens=38944,
         concurrency=1.22, note="GPU not named: an L4 inferred from the repository's name (demo_env_l4); TensorFlow "
                                 "start-up lines in the same log"),
    dict(id="vediosifter-rtxpro6000-server-v0120-qwen3-30b-a3b-2507", group="public", gpu="rtx-pro-6000-96gb",
         config="tests/data/extra_configs/qwen3-30b-a3b-instruct-2507.json", version="0.12.0", tp=1, seq=4096,
         util="0.85", available="18.15", weights="56.9342", tokens=198288, concurrency=48.41,
         note="RTX PRO 6000 Blackwell Server Edition; enforce_eager (0.12 does not subtract graphs either way)"),
    dict(id="autoscientists-a100-80gb-v0261rc1-qwen3-coder-30b-a3b", group="public", gpu="a100-sxm-80gb",
         config="tests/data/extra_configs/qwen3-coder-30b-a3b-instruct.json", version="0.26.1", tp=1, seq=131072,
         util="0.9", max_num_seqs=16, available="13.84", weights="56.93", tokens=151216, concurrency=1.15,
         note="A100 80GB (79.25 GiB in the log); Qwen3-Coder-30B-A3B-Instruct's own config.json"),
    dict(id="localai-rtx3090-v0191-phi3-mini-4k", group="public", gpu="rtx-3090-24gb@wsl",
         config="tests/data/hf_configs/phi-3-mini-4k-instruct.json", version="0.19.1", tp=1, seq=4096, util="0.85",
         dtype="fp16", available="13.06", weights="7.12", tokens=35648, concurrency=8.67,
         note="RTX 3090 under WSL2 (a Windows driver, 596.21, in the repository's README; 'WSL is detected'): "
              "WSL2 reports nvidia-smi's 24576 MiB as the total, not native Linux's 23.58 GiB (catalog.WSL_SUFFIXES)"),
    dict(id="duotalk-a5000-v0130-qwen25-14b-awq", group="public", gpu="rtx-a5000-24gb",
         config="tests/data/extra_configs/qwen2.5-14b-instruct-awq.json", version="0.13.0", tp=1, seq=8192,
         util="0.9", available="10.39", weights="9.3795", tokens=56736, concurrency=6.93,
         note="RTX A5000, named by the repository's guide (the log does not print the device); AWQ 4-bit, dtype half"),
    # repository files found with the code search (one repository each; the commit in index.jsonl)
    dict(id="controllersearch-l40s-v0112-qwen25-coder-14b", group="public", gpu="l40s-48gb",
         config="tests/data/extra_configs/qwen2.5-14b-instruct.json", version="0.11.2", tp=1, seq=16384, util="0.9",
         available="10.93", weights="27.5681", tokens=59712, concurrency=3.64,
         note="L40S (the repository's README and notebook output); Qwen2.5-Coder-14B-Instruct by Qwen2.5-14B-Instruct's "
              "config (the same layers, heads, widths and vocabulary)"),
    dict(id="trainsft-a100-80gb-v0100-qwen3-14b", group="public", gpu="a100-sxm-80gb",
         config="tests/data/extra_configs/qwen3-14b.json", version="0.10.0", tp=1, seq=32768, util="0.9",
         available="42.44", weights="27.5185", tokens=278144, concurrency=8.49,
         note="A100-SXM4-80GB (a training log of the same repository and machine)"),
    dict(id="telcorag-h200-v0150-qwen3-30b-a3b-2507-gmu05", group="public", gpu="h200-141gb",
         config="tests/data/extra_configs/qwen3-30b-a3b-instruct-2507.json", version="0.15.0", tp=1, seq=16000,
         util="0.5", available="6.71", weights="56.93", tokens=73296, concurrency=4.58,
         note="H200 (its fused-MoE config file in the log); gpu_memory_utilization 0.5"),
    dict(id="kolyangg-mlops-h100-v0102-qwen3-30b-a3b-2507", group="public", gpu="h100-sxm-80gb",
         config="tests/data/extra_configs/qwen3-30b-a3b-instruct-2507.json", version="0.10.2", tp=1, seq=6144,
         util="0.9", available="8.68", weights="56.9342", non_torch="0.07", tokens=94784, concurrency=15.43,
         note="H100 80GB HBM3 (its fused-MoE config file in the log); 0.10.2; prints its non-torch memory (0.07 GiB)"),
    dict(id="nnamdi-mlops-h100-v0221-qwen3-30b-a3b-2507-fp8", group="public", gpu="h100-sxm-80gb",
         config="tests/data/extra_configs/qwen3-30b-a3b-instruct-2507.json", version="0.22.1", tp=1, seq=8192,
         util="0.92", weight_fmt="fp8", max_num_seqs=64, mnbt=8192, available="42.54", weights="29.08",
         tokens=464656, note="H100 80GB HBM3 (its fused-MoE config file in the log); online FP8 (--quantization fp8); "
                             "0.22's default gpu_memory_utilization, 0.92"),
    dict(id="videocutting-2xh100-v0120-qwen3-30b-a3b-tp2", group="public", gpu="h100-sxm-80gb",
         config="tests/data/public_models/Qwen--Qwen3-30B-A3B/config.json", version="0.12.0", tp=2, seq=40960,
         util="0.9", max_num_seqs=64, available="41.68", weights="28.4571", tokens=910464,
         note="2x H100 80GB HBM3 (the fused-MoE config file both workers looked for); TP 2"),
    dict(id="evaldataset-8xh100-v0100-qwen3-32b-tp8-kvfp8", group="public", gpu="h100-sxm-80gb",
         config="tests/data/public_models/Qwen--Qwen3-32B/config.json", version="0.10.0", tp=8, seq=32768, util="0.9",
         kv="fp8", available="55.62", weights="7.6871", tokens=3644816,
         note="8x H100 80GB HBM3 (a judge log of the same cluster and night); TP 8, FP8 KV; the pool's worker has "
              "55.62 GiB (others 55.71, 56.08)"),
    dict(id="gatech-llminference-h100-v0171-llama31-8b-gmu095", group="public", gpu="h100-sxm-80gb",
         config="tests/data/vllm_models/meta-llama--Llama-3.1-8B-Instruct/config.json", version="0.17.1", tp=1,
         seq=32768, util="0.95", available="58.15", weights="14.99", tokens=476336, concurrency=14.54,
         note="H100 80GB HBM3 (an nvidia-smi dump of the same job); 0.17.1"),
    dict(id="trietnguyeminh-kaggle-2xt4-v0220-qwen3-8b-tp2-eager-fp16", group="public", gpu="t4-16gb",
         config="tests/data/vllm_models/Qwen--Qwen3-8B/config.json", version="0.22.0", tp=2, seq=8192, util="0.85",
         dtype="fp16", eager=True, available="4.11", weights="7.64", tokens=59856, concurrency=7.31,
         note="2x T4 on Kaggle (the notebook prints both); fp16, --enforce-eager (no CUDA graphs)"),
    # the site samples with FlashInfer (the log: "Using FlashInfer for top-p & top-k sampling": 0.10 uses it wherever
    # flashinfer is installed), given as the variable that selects it on every line, VLLM_USE_FLASHINFER_SAMPLER=1
    dict(id="dennislee-a100-80gb-v01011-qwen2-7b-gmu05", group="public", gpu="a100-sxm-80gb",
         config="tests/data/vllm_models/Qwen--Qwen2.5-7B-Instruct/config.json", version="0.10.1.1", tp=1, seq=16384,
         util="0.5", available="24.83", weights="14.2488", tokens=464848, concurrency=28.37,
         options=(("vllm_use_flashinfer_sampler", "1"),),
         note="A100 80GB (the repository's README and file names); Qwen2-7B-Instruct by Qwen2.5-7B-Instruct's config "
              "(the same shapes; the weights agree to 0.0001 GiB); FlashInfer's sampler (the log says so)"),
    dict(id="dennislee-a100-80gb-v01011-qwen2-7b-gmu025", group="public", gpu="a100-sxm-80gb",
         config="tests/data/vllm_models/Qwen--Qwen2.5-7B-Instruct/config.json", version="0.10.1.1", tp=1, seq=16384,
         util="0.25", available="5.01", weights="14.2488", tokens=93872, concurrency=5.73,
         options=(("vllm_use_flashinfer_sampler", "1"),), note="the same at 0.25"),
    dict(id="dennislee-2xa100-80gb-v01011-qwen2-7b-tp2-gmu025", group="assumed", gpu="a100-sxm-80gb",
         config="tests/data/vllm_models/Qwen--Qwen2.5-7B-Instruct/config.json", version="0.10.1.1", tp=2, seq=16384,
         util="0.25", available="12.02", weights="7.1217", tokens=450192, concurrency=27.48,
         options=(("vllm_use_flashinfer_sampler", "1"),),
         note="the same at TP 2; which A100 80GB is not stated (SXM with NVLink assumed), and the log says custom "
              "all-reduce is off for want of P2P"),
    dict(id="vllmbench-h100-v0180-qwen3-8b-baseline-eager", group="public-h100-0.18", gpu="h100-sxm-80gb",
         config="tests/data/vllm_models/Qwen--Qwen3-8B/config.json", version="0.18.0", tp=1, seq=8128, util="0.95",
         available="57.51", weights="15.27", tokens=418784, concurrency=51.52,
         note="H100 80GB HBM3 on RunPod (the sweep's environment.txt); enforce_eager; the 42's GPU and release line"),
    dict(id="vllmbench-h100-v0180-qwen3-8b-kvfp8", group="public-h100-0.18", gpu="h100-sxm-80gb",
         config="tests/data/vllm_models/Qwen--Qwen3-8B/config.json", version="0.18.0", tp=1, seq=8128, util="0.95",
         kv="fp8", available="57.5", weights="15.27", tokens=837440,
         note="the same sweep with --kv-cache-dtype fp8 (CUDA graphs on)"),
    dict(id="memsuit-a100-v0171-llama31-8b-instruct", group="assumed", gpu="a100-sxm-80gb",
         config="tests/data/vllm_models/meta-llama--Llama-3.1-8B-Instruct/config.json", version="0.17.1", tp=1,
         seq=32768, util="0.9", available="55.79", weights="14.99", tokens=457024, concurrency=13.95,
         note="an A100 (the repository's script); the 80GB size inferred from the figures"),
    dict(id="faradawn-h200-v0112-llama3-8b", group="public", gpu="h200-141gb",
         config="tests/data/hf_configs/meta-llama-3-8b.json", version="0.11.2", tp=1, seq=1024, util="0.9",
         available="105.97", weights="14.9596", tokens=868080, concurrency=847.73,
         note="H200; Meta-Llama-3-8B-Instruct, related config (the base model's: the same layout)"),
    dict(id="energyllm-a100-v0110-llama31-8b", group="assumed", gpu="a100-sxm-40gb",
         config="tests/data/vllm_models/meta-llama--Llama-3.1-8B-Instruct", version="0.11.0", tp=1, seq=4096,
         util="0.9", available="19.24", weights="14.9889", tokens=157584, concurrency=38.47,
         note="GPU not named: a 40 GB A100 inferred from the figures"),
    dict(id="vllm-issue27508-h100-gpt-oss-120b-low-kv", group="public", gpu="h100-sxm-80gb",
         config="tests/data/hf_configs/gpt-oss-120b.json", version="0.11.0", tp=1, seq=131072, util="0.95",
         mnbt=1024, available="1.71", note="vllm#27508; release inferred (0.11; the thread says 0.10.2 or 0.11)"),
    dict(id="vllm-issue23278-h100-gpt-oss-120b-negative-kv", group="assumed", gpu="h100-sxm-80gb",
         config="tests/data/hf_configs/gpt-oss-120b.json", version="0.10.1", tp=1, seq=131072, util="0.9",
         available="-2.14", weights="65.97", note="vllm#23278; launch flags not shown: vLLM's defaults assumed"),
    dict(id="idx-40gb-llama31-8b-fp16-ansi-v01011", group="assumed", gpu="a100-sxm-40gb",
         config="tests/data/vllm_models/meta-llama--Llama-3.1-8B-Instruct", version="0.10.1.1", tp=1, seq=131072,
         util="0.9", dtype="fp16", available="19.25", weights="14.99", blocks=9853, tokens=157648, concurrency=1.20,
         note="GPU not named: a 40 GB A100 inferred (14.99 GiB weights + 19.25 GiB KV at 0.9); index id only"),
    # a course note in the search index (id 70682754770; no repository or path): the official 0.31.0 image with only
    # --model, on one A100 80GB
    dict(id="idx-a100-80gb-v0310-llama31-8b-defaults", group="public-index-id", gpu="a100-pcie-80gb",
         config="tests/data/vllm_models/meta-llama--Llama-3.1-8B-Instruct/config.json", version="0.31.0", tp=1,
         seq=131072, util="0.92", available="56.21", weights="15.0", consumed="15.26", tokens=460496,
         concurrency=3.51, options=(("compile_cache", "cold"),),
         note="A100 80GB: 79.25 GiB total as the catalog's PCIe card reads (the SXM's 79.26); "
              "0.31's default gpu_memory_utilization 0.92 and the model's 131072; a cold torch.compile cache: the "
              "note's `docker run` mounts ~/.cache/huggingface only, so the container's ~/.cache/vllm starts empty"),
    # Freshair129/Private-Runtime-Platform at d66cbe8: vLLM 0.30.0 under Xinference in Docker Desktop (WSL2: the
    # checkpoint on a 9P mount) on an RTX 5060 Ti 16 GB, scb10x/typhoon2.5-qwen3-4b (a Qwen3-4B-Instruct-2507
    # fine-tune; the log prints its Qwen3Config). Xinference builds the engine itself: ENGINE_CONTEXT's 2048 batched
    # tokens, which the log prints, and max_num_seqs 256 from Xinference's model config; a warm torch.compile cache
    # ("Directly load AOT compilation", 0.54 s), given as the log shows it
    dict(id="prp-rtx5060ti-wsl-v0300-xinference-typhoon25-qwen3-4b-gmu070", group="public", gpu="rtx-5060-ti-16gb",
         config="tests/data/public_models/Qwen--Qwen3-4B-Instruct-2507/config.json", version="0.30.0", tp=1, seq=8192,
         util="0.7", max_num_seqs=256, available="2.71", weights="7.64", consumed="7.89", tokens=19744,
         concurrency=2.41, options=(("compile_cache", "warm"), ("entry_point", "engine")),
         note="RTX 5060 Ti 16 GB under WSL2 (15.9 GiB total as vLLM reads it there); vLLM built by Xinference; "
              "typhoon2.5-qwen3-4b by Qwen3-4B-Instruct-2507's config", source="Freshair129/Private-Runtime-Platform"),
    dict(id="tw10519-gb10-v0130nv-gpt-oss-20b-abliterated", group="public-unified", gpu="gb10-128gb",
         config="tests/data/hf_configs/gpt-oss-20b.json", version="0.13.0", tp=1, seq=8192, util="0.25", mnbt=2048,
         available="12.94", weights="13.7193", tokens=282624, concurrency=54.44,
         note="DGX Spark GB10, NGC 0.13.0 build; a gpt-oss-20b fine-tune, the base's config (same layout); the host's "
              "growth during the profile is vLLM's non-torch memory on the unified pool, an open term (runtime/"
              "unified.py profile_growth_ceiling); max_num_batched_tokens 2048 as logged (GB10's tier), given so the "
              "given-budget figures, computed without the GPU, keep it"),
]

# Public logs that are not scored (no config) but print a budget term: they inform the fits of those terms.
# (log, release, GPU, tp, pp, printed non-torch GiB)
TERMS_ONLY = [
    ("idx-80gb-llava-v16-mistral-7b-v0102", "0.10.2", "h100-sxm-80gb", 1, 1, "0.07"),
    ("idx-b300-deepseek-v4-flash-0731-dspark-v0260", "0.26.0", "b300-288gb", 1, 1, "0.23"),
]

# Why each other public log is not scored end to end (tests/data/vllm_logs_public/index.jsonl).
NOT_SCORED = {
    "V0 or early V1 (before 0.10: refused, exit 3)": [
        "vllm-issue10517-rtx3090-llama31-8b-20k", "vllm-issue10517-rtx3090-llama31-8b-29k",
        "vllm-pr10511-80gb-llama3-8b-tp1-tp2", "vllm-pr12126-h100-llama32-11b-vision",
        "vllm-pr12569-80gb-llama31-70b-w8a8-v1", "vllm-issue13061-2x4090-r1-distill-qwen-14b",
        "vllm-issue15340-24gb-deepseek-r1-gguf-v0", "vllm-issue15928-mi308-deepseek-v3-v1",
        "vllm-issue16570-4xa100-40gb-qwen25-vl-72b", "vllm-issue16692-2x8xh800-ray-tp16-deepseek-v3",
        "vllm-issue7593-8xl4-gemma2-9b-v0", "oci-aqua-troubleshooting-a10-llama31-8b-maxlen-error",
        "hf-cookbook-t4-llama32-3b-unsloth-v082", "vllm-pr14447-rtx3090-deepseek-r1-awq-moe-wna16",
        "idx-hygon-dcu-8x-deepseek32b-medical-quoted", "idx-a100-40gb-phi4-mini-ft-v073-indented"],
    "no config for the checkpoint (config null in index.jsonl)": [
        "vllm-issue34076-5070ti-5090d-pp2-qwen3-coder-30b-fp8", "idx-80gb-llava-v16-mistral-7b-v0102",
        "hf-cookbook-grpo-colocate-qwen2-05b-v0110", "idx-rtxpro6000-llama31-70b-awq-marlin-v0140rc2-noprefix",
        "idx-rtx5090laptop-wsl-llama32-3b-nvfp4-grep", "idx-mi300x-gemma4-e2b-wrapped",
        "anton-rtx3090-v0100-qwen3-30b-a3b-awq",
        "zjpzhao-t4-v0110-qwen3vl-embed-2b-pooling (also a pooling runner: no sampler warm-up)"],
    # the launch options are judged on every line 0.10-0.33 now (engines/vllm/option_rules.py); what else stops these
    # is in docs/research/vllm-features-by-release.md ("The public logs refused ...")
    "release before 0.10 (inferred: posted before 0.10.0), and its logged pool disagrees with 0.10's rules": [
        "vllm-issue21348-4xh100-qwen3-235b-fp8 (kv-transfer-config: LMCache)"],
    "speculative MTP on Qwen3.6-27B: no readable config (AutoRound checkpoint not found; the related NVFP4 export's "
    "qwen3_5_vision tower), launch cut or not shown, patched club-3090 images; the pool does not match": [
        "club3090-issue295-2x3090-qwen36-27b-int4-p2p-on", "club3090-issue294-2x3090-qwen36-27b-int4-p2p-off",
        "club3090-issue104-2x3090-qwen36-27b-autoround", "club3090-issue91-2x3090-v0201-qwen36-27b",
        "club3090-issue127-6x3090-tp4-qwen36-27b", "club3090-pr594-2x3090-qwen36-27b-fp8-kvfp8"],
    "an option kvplan does not model (exit 3)": [
        "idx-b300-deepseek-v4-flash-0731-dspark-v0260 (DSpark speculative decoding, sparse MLA indexer)"],
    "weights not modelled (NVFP4 / modelopt checkpoint)": ["club3090-issue612-rtx5090-qwen36-35b-a3b-nvfp4"],
    "ROCm on a GPU outside the catalog (Radeon RX 7800 XT / RX 9070 XT; one unnamed)": [
        "idx-rx7800xt-rocm-ovis2-8b-gptq-docker-v0112dev", "amdgoose-rocm-v0170-qwen25-7b",
        "apollo-rx9070xt-rocm-v0140rc1-r1-distill-qwen14b-awq"],
    "unified memory (DGX Spark GB10): no public config for the gemma-4 AWQ / NVFP4 repackagings": [
        "spark-v0251-gemma4-26b-a4b-awq-int4", "spark-v0251-gemma4-26b-a4b-nvfp4"],
    "no public config for the checkpoint (Qwen3.5-27B, Qwen3.6-27B-FP8: hybrid GDN models with a vision tower)": [
        "lambo-4x3090-v0190-qwen35-27b-tp4-eager", "meetingtranslator-h100-v0271-qwen36-27b-fp8-eager-failed"],
    # counting the tower is easy (transformers 5.24: 576,388,336); what stops it is the video encoder profile that
    # comes with it (docs/engines/calibration.md, "Not scored")
    "a vision tower kvplan does not count (qwen3_vl), kept refused: its video encoder profile is not modelled": [
        "sglangvllmprof-h200-v0190-qwen3-vl-8b"],
    "a locally trained checkpoint under NeMo-RL (sleep mode, Ray workers; the B200 inferred from the machine type)": [
        "gke-nemorl-b200-v0112-gemma3-27b-grpo-eval-8xdp"],
    "no public config for the checkpoint (a Llama-3-70B AWQ export, an FP8 R1-distill-Qwen-32B, Qwen3-4B-2507)": [
        "kagaho-2xl40s-v0160-llama3-70b-instruct-awq-tp2", "elloraa-l40s-v0110-r1-distill-qwen-32b-fp8-fp16",
        "augmentedmcqa-rtxa6000-v0112-qwen3-4b-instruct-2507"],
    "TP 4 across nodes over Ray (NCCL over the network; kvplan's non-torch terms are one node's)": [
        "dennislee-4xa100-80gb-v01011-gpt-oss-120b-tp4-ray"],
    "no model, GPU or release in the excerpt": [
        "arcb70-issue4-intel-arc-pro-b70-wrapped-error", "ray-pr65486-rayserve-nested-prefix-hopper"],
}


def public_runs() -> tuple[list[Run], list[tuple[str, str]]]:
    """The scored public runs, and (id, why) for those kvplan cannot describe."""
    out, refused = [], []
    for r in PUBLIC:
        try:
            spec = catalog.resolve_model(str(HERE / r["config"]))
        except KvplanError as err:
            refused.append((r["id"], err.one_line().replace(str(HERE) + "/", "")))
            continue
        if spec.weights_unknown and spec.weights_bytes is None:  # a tower kvplan cannot size: no budget to score
            refused.append((r["id"], f"the weights are unknown: {spec.weights_unknown}"))
            continue
        if r.get("dtype"):
            spec = dataclasses.replace(spec, dtype=r["dtype"])
        if r.get("max_position"):  # the checkpoint's own max_position_embeddings (its rotary cache) where it differs
            spec = dataclasses.replace(spec, max_context=r["max_position"])
        gpu = catalog.find_gpu(r["gpu"])
        req = EngineRequest(spec=spec, seq=r["seq"], batch=1, tp=r["tp"], pp=r.get("pp", 1),
                            kv_dtype=r.get("kv", "auto"), engine_options=r.get("options"),
                            weight_fmt=dtypes.weight_format(r["weight_fmt"]) if r.get("weight_fmt") else None,
                            hardware=Hardware(gpu.name, gpu.capacity_bytes), gpu_util=Fraction(r["util"]),
                            max_num_seqs=r.get("max_num_seqs"), max_num_batched_tokens=r.get("mnbt"),
                            engine_version=r["version"],
                            features=Features(parallel=ParallelOptions(expert_parallel=True)) if r.get("ep")
                            else Features(enforce_eager=True) if r.get("eager") else None)
        dec = lambda k: Decimal(r[k]) if r.get(k) is not None else None  # noqa: E731
        out.append(Run(r["id"], r["group"], gpu.name, req, dec("available"), dec("weights"), dec("peak"),
                       dec("non_torch"), consumed=dec("consumed"), blocks=r.get("blocks"), tokens=r.get("tokens"),
                       concurrency=r.get("concurrency"), note=r["note"], source=r.get("source", "")))
    return out, refused


# ------------------------------------------------------------------------------------------ fitting

def _g(d: Decimal | None) -> float | None:
    return None if d is None else float(d) * GIB


def _limits(run: Run) -> tuple[int, int]:
    hw = run.request.hardware
    return B.resolve_batch_limits(run.request.max_num_batched_tokens, run.request.max_num_seqs, run.request.seq,
                                  hw.capacity_bytes, hw.name, run.release)


def _sampler_phase(run: Run, constants: B.Constants) -> tuple[int, int, float]:
    """(logits R x V, the rest of the sampler phase without the per-logit work, its sampler kind) of the pool's
    stage: R x V x dtype + T x hidden x dtype + the persistent MoE workspace + the base + multimodal."""
    spec, rel = run.request.spec, run.release
    T, seqs = _limits(run)
    R = min(T, seqs)
    b = lookup_dtype(spec.dtype).bits // 8
    logits = R * spec.vocab_size
    persistent = (B.moe_workspace_bytes(spec, T, run.request.tp, b, rel, run.request.expert_parallel)
                  if rel.fused_moe == releases.MOE_MODULAR else 0)
    received = 2 * T * spec.hidden_size * b if run.request.pp > 1 else 0
    rest = logits * b + T * spec.hidden_size * b + persistent + received
    if spec.vision_params:
        rest += constants.multimodal_profile_bytes
    kind = rel.sampler if not (rel.sampler == releases.SAMPLER_TRITON and R < 8) else releases.SAMPLER_SORT
    return logits, rest, kind


def _sampler_dominates(run: Run, constants: B.Constants) -> bool:
    act = B.activation_peak(run.request.spec, lookup_dtype(run.request.spec.dtype), stage=run.request.pp - 1,
                            pp=run.request.pp, tp=run.request.tp, max_num_batched_tokens=_limits(run)[0],
                            max_num_seqs=_limits(run)[1], release=run.release, constants=constants,
                            expert_parallel=run.request.expert_parallel)
    logits, rest, kind = _sampler_phase(run, constants)
    return act.bytes <= rest + logits * float(constants.sampler(kind)) + constants.profile_base_bytes + 1


def _ols(xs: list[float], ys: list[float]) -> tuple[float, float]:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def fit(runs: list[Run]) -> tuple[B.Constants, dict[str, int]]:
    """Every fitted constant of budget.Constants from these logs (those without data keep FITTED's value), and how
    many logs informed each. The same procedure as the comments in budget.py describe."""
    c = B.FITTED
    used: dict[str, int] = {}
    # the Triton sampler's bytes per logit and the base: least squares over the dense text-only logs whose peak is the
    # sampler's (0.17-0.20 releases)
    tri = [r for r in runs if r.peak is not None and r.release.sampler == releases.SAMPLER_TRITON
           and r.request.spec.moe is None and not r.request.spec.vision_params and _sampler_dominates(r, c)]
    samplers = dict(c.sampler_bytes_per_logit)
    base = c.profile_base_bytes
    if len(tri) >= 3:
        xs, ys = [], []
        for r in tri:
            logits, rest, _ = _sampler_phase(r, c)
            xs.append(logits)
            ys.append(_g(r.peak) - rest)
        intercept, slope = _ols(xs, ys)
        base, samplers[releases.SAMPLER_TRITON] = round(intercept), Fraction(round(slope * 100), 100)
        used["sampler (triton) + base"] = len(tri)
    # the sort sampler is derived (budget.py), not fitted
    c = dataclasses.replace(c, sampler_bytes_per_logit=tuple(samplers.items()), profile_base_bytes=base)
    # FP8 block-quantized MoE checkpoints: mean loading overhead over the logs that print their weights
    fp8 = [r for r in runs if r.weights is not None and r.request.spec.quant_method == "fp8" and r.request.spec.moe]
    if fp8:
        bare = dataclasses.replace(c, fp8_moe_loading_bytes=0)
        extra = [_g(r.weights) - budgets_for(r.request, bare)[-1].weights_bytes for r in fp8]
        c = dataclasses.replace(c, fp8_moe_loading_bytes=round(statistics.fmean(extra)))
        used["FP8 MoE loading"] = len(fp8)
    else:
        c = dataclasses.replace(c, fp8_moe_loading_bytes=0)
    # multimodal: mean excess of the multimodal logs' peak over the text model's
    mm = [r for r in runs if r.peak is not None and r.request.spec.vision_params]
    if mm:
        zero = dataclasses.replace(c, multimodal_profile_bytes=0)
        excess = [_g(r.peak) - _modelled_peak(r, zero) for r in mm]
        c = dataclasses.replace(c, multimodal_profile_bytes=round(statistics.fmean(excess)))
        used["multimodal profile"] = len(mm)
    # non-torch by setup: the median of the printed figures (NVLink TP > 2 brought back to TP 2 by the per-rank slope);
    # a setup no training log shows falls back to other setups of the training logs (never to FITTED, which the
    # left-out log may have informed)
    setups: dict[str, list[tuple[int, float]]] = {}
    for r in runs:
        if r.non_torch is None:
            continue
        facts = r.request.hardware.facts
        setup = B.non_torch_setup(r.request.tp, r.request.pp, r.release, facts.interconnect if facts else None)
        setups.setdefault(setup, []).append((r.request.tp, _g(r.non_torch)))
    for _name, version, gpu, tp, pp, value in TERMS_ONLY:  # never scored, so in every fit
        setup = B.non_torch_setup(tp, pp, releases.release(version), catalog.find_gpu(gpu).interconnect)
        setups.setdefault(setup, []).append((tp, _g(Decimal(value))))
    # the per-rank slope from one release line's TP-2 and TP-4 NVLink logs (0.19): across lines the level differs
    slope_runs = [r for r in runs if r.non_torch is not None and r.request.tp in (2, 4) and r.release.line == "0.18-0.19"]
    tp2 = [_g(r.non_torch) for r in slope_runs if r.request.tp == 2]
    tp4 = [_g(r.non_torch) for r in slope_runs if r.request.tp == 4]
    per_rank = round((statistics.fmean(tp4) - statistics.fmean(tp2)) / 2) if tp2 and tp4 else c.non_torch_per_extra_rank
    table = {}
    for setup, values in setups.items():
        per = per_rank if setup == "nvlink" else 0
        # the median: the Granite-3.x text models' 0.46 GiB (unexplained) would pull a mean off every other one-GPU log
        table[setup] = round(statistics.median(v - per * max(tp - 2, 0) for tp, v in values))
        used[f"non-torch ({setup})"] = len(values)
    one = table.get("one", table.get("one-0.10"))
    table.setdefault("one", one)
    table.setdefault("one-0.10", table["one"])
    table.setdefault("pp", table["one"])
    table.setdefault("pcie", min(table["one"], table["one-0.10"]) + 64 * 2**20)  # budget.py: one GPU + NCCL PCIe
    table.setdefault("nvlink", statistics.fmean(table[k] for k in ("pcie", "one")))
    c = dataclasses.replace(c, non_torch_bytes=tuple(table.items()), non_torch_per_extra_rank=per_rank)
    # CUDA-graph estimate: least squares on layers x capture sizes over the logs that print it
    gr = [r for r in runs if r.graph_estimate is not None]
    if len(gr) >= 3:
        xs = [r.request.spec.layers // r.request.pp * B.cuda_graph_capture_sizes(_limits(r)[1], _limits(r)[0], r.release)
              for r in gr]
        intercept, slope = _ols(xs, [_g(r.graph_estimate) for r in gr])
        c = dataclasses.replace(c, cuda_graph_base_bytes=round(intercept), cuda_graph_per_layer_size=Fraction(round(slope)))
        used["CUDA-graph estimate"] = len(gr)
    return c, used


def _modelled_peak(run: Run, constants: B.Constants) -> int:
    T, seqs = _limits(run)
    return B.activation_peak(run.request.spec, lookup_dtype(run.request.spec.dtype), stage=run.request.pp - 1,
                             pp=run.request.pp, tp=run.request.tp, max_num_batched_tokens=T, max_num_seqs=seqs,
                             release=run.release, constants=constants, expert_parallel=run.request.expert_parallel).bytes


def _persistent(run: Run) -> int:
    T, _ = _limits(run)
    if run.release.fused_moe != releases.MOE_MODULAR:
        return 0
    return B.moe_workspace_bytes(run.request.spec, T, run.request.tp, lookup_dtype(run.request.spec.dtype).bits // 8,
                                 run.release, run.request.expert_parallel)


# ------------------------------------------------------------------------------------------ scoring

@dataclass
class Score:
    run: Run
    in_sample: int  # predicted available bytes
    loso: int
    band: int  # the half width of the band (its widest side)
    given: str  # "exact" / "differs: ..." / "n/a"
    low: int = 0  # the band's edges (LOSO constants): the budget's error, widened by every open term
    high: int = 0

    @property
    def logged(self) -> float:
        return float(self.run.available) * GIB

    def error(self, predicted: int) -> float:
        return abs(predicted - self.logged) / abs(self.logged) * 100

    @property
    def covered(self) -> bool:
        return self.low - 0.005 * GIB <= self.logged <= self.high + 0.005 * GIB


def predict(run: Run, constants: B.Constants) -> tuple[int, int, int]:
    """(available bytes of the pool's worker, the low and high edges of its band) with these constants; the band is
    the engine's (engine.budget_edges: the terms' error, widened by what the launch leaves open)."""
    budgets = budgets_for(run.request, constants)
    shapes = vllm.estimate(dataclasses.replace(run.request, kv_cache_memory=GIB, hardware=None)).workers
    worker = min(range(len(budgets)), key=lambda i: (budgets[i].available_bytes // shapes[i].bytes_per_block, i))
    low, high = budget_edges(run.request, budgets, constants=constants)
    return budgets[worker].available_bytes, low[worker], high[worker]


def given_budget(run: Run) -> str:
    """Given the logged KV memory (every byte count that prints as it), are blocks, tokens and concurrency vLLM's?"""
    if run.available is None or run.available <= 0 or (run.blocks, run.tokens, run.concurrency) == (None, None, None):
        return "n/a"
    lo, hi = gib_bounds(run.available)
    req = dataclasses.replace(run.request, hardware=None)
    low = vllm.estimate(dataclasses.replace(req, kv_cache_memory=lo))
    high = vllm.estimate(dataclasses.replace(req, kv_cache_memory=hi - 1))
    candidates = [run.blocks] if run.blocks is not None else list(range(low.num_gpu_blocks, high.num_gpu_blocks + 1))
    bad = []
    if run.blocks is not None and not low.num_gpu_blocks <= run.blocks <= high.num_gpu_blocks:
        bad.append(f"blocks {run.blocks:,} outside {low.num_gpu_blocks:,}-{high.num_gpu_blocks:,}")
    for blocks in candidates:
        at = vllm.estimate(dataclasses.replace(req, kv_cache_memory=blocks * low.bytes_per_block))
        tokens_ok = run.tokens is None or at.kv_cache_tokens == run.tokens
        conc_ok = run.concurrency is None or f"{at.max_concurrency:.2f}" == f"{run.concurrency:.2f}"
        if tokens_ok and conc_ok:
            return "exact" if not bad else "differs: " + "; ".join(bad)
    bad.append(f"tokens {at.kv_cache_tokens:,} vs {run.tokens}, concurrency {at.max_concurrency:.2f} vs {run.concurrency}")
    return "differs: " + "; ".join(bad)


def without_source(runs: list[Run], run: Run) -> list[Run]:
    """The runs a leave-one-source-out fit may use to score `run`."""
    return [r for r in runs if r.origin != run.origin]


def score(runs: list[Run], *, options_unset: bool = False, skipped: list | None = None) -> list[Score]:
    """Every run's scores. `options_unset`: kvplan is given none of the run's environment options (a user who set
    none), so each term they decide takes the release's default and its band; the fit still uses them. A run
    kvplan can no longer describe is listed in `skipped` with why, not scored."""
    out = []
    for run in runs:
        if run.available is None:
            continue
        scored = dataclasses.replace(run, request=dataclasses.replace(run.request, engine_options=None)) \
            if options_unset else run
        try:
            loso_constants, _ = fit(without_source(runs, run))
            ins, _, _ = predict(scored, B.FITTED)
            loso, low, high = predict(scored, loso_constants)
        except KvplanError as err:
            if skipped is None:
                raise
            skipped.append((run.name, err.one_line()))
            continue
        out.append(Score(scored, ins, loso, max(loso - low, high - loso), given_budget(scored), low, high))
    return out


# ------------------------------------------------------------------------------------------ report

def mae(scores: list[Score], which: str) -> float | None:
    if not scores:
        return None
    return statistics.fmean(s.error(s.in_sample if which == "in" else s.loso) for s in scores)


def table(rows: list[list[str]], head: list[str], markdown: bool) -> str:
    if markdown:
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                         + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)] if rows else [len(h) for h in head]
    fmt = "  ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths))
    return "\n".join([fmt.format(*head)] + [fmt.format(*r) for r in rows])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="tables as markdown (for docs/engines/calibration.md)")
    ap.add_argument("--json", action="store_true", help="every run's figures as JSON")
    ap.add_argument("--options-unset", action="store_true",
                    help="score as a user who sets no environment option (VLLM_USE_FLASHINFER_SAMPLER, ...) would")
    args = ap.parse_args()

    public, refused = public_runs()
    runs = h100_runs() + public
    skipped: list[tuple[str, str]] = []
    scores = score(runs, options_unset=args.options_unset, skipped=skipped)
    refused = list(refused) + skipped
    constants, used = fit(runs)
    if args.json:
        print(json.dumps([{"log": s.run.name, "group": s.run.group, "gpu": s.run.gpu_kind, "line": s.run.line,
                           "logged_gib": float(s.run.available), "in_sample_gib": s.in_sample / GIB,
                           "loso_gib": s.loso / GIB, "band_gib": s.band / GIB, "covered": s.covered,
                           "given_budget": s.given} for s in scores], indent=1))
        return 0

    print("## Every run (available KV memory of the pool's worker, GiB)\n")
    rows = [[s.run.name[:58], s.run.group, s.run.gpu_kind, s.run.line, str(s.run.request.tp), str(s.run.available),
             f"{s.in_sample / GIB:.2f}", f"{s.error(s.in_sample):.2f}", f"{s.loso / GIB:.2f}", f"{s.error(s.loso):.2f}",
             f"±{s.band / GIB:.2f}", "yes" if s.covered else "NO", s.given] for s in scores]
    print(table(rows, ["log", "group", "GPU", "line", "tp", "logged", "in-sample", "err %", "LOSO", "LOSO err %",
                       "band", "covered", "given-budget figures"], args.markdown))

    print("\n## By GPU kind and release line\n")
    keys = sorted({(s.run.gpu_kind, s.run.line) for s in scores}, key=lambda k: (k[1], k[0]))
    rows = []
    for gpu, line in keys:
        ss = [s for s in scores if (s.run.gpu_kind, s.run.line) == (gpu, line)]
        rows.append([gpu, line, str(len(ss)), f"{mae(ss, 'in'):.2f}", f"{mae(ss, 'loso'):.2f}",
                     f"{sum(s.covered for s in ss)}/{len(ss)}"])
    print(table(rows, ["GPU", "line", "logs", "in-sample MAE %", "LOSO MAE %", "band covers"], args.markdown))

    h100 = [s for s in scores if s.run.group == "h100-0.19"]
    outside = [s for s in scores if s.run.group in ("public", "public-index-id")]
    attributed = [s for s in outside if s.run.group == "public"]
    index_only = [s for s in outside if s.run.group == "public-index-id"]
    assumed = [s for s in scores if s.run.group == "assumed"]
    # public runs on the 42's GPU and release line (another patch release): neither fitted on nor "outside"
    same_line = [s for s in scores if s.run.group == "public-h100-0.18"]
    # unified memory (DGX Spark): an open term of up to 2.79 GiB (runtime/unified.py profile_growth_ceiling) puts the
    # modelled value 1.80 GiB (13.9%) over its one log; scored and in the band's coverage, outside issue 11's MAE
    # target, which is the discrete GPUs'
    unified_pool = [s for s in scores if s.run.group == "public-unified"]
    print("\n## Summary\n")
    # a percentage of a pool of a few hundred MiB measures the pool's size more than the model: two identical
    # launches in one repository logged 0.49 and 0.41 GiB (TheBuccaneer, Qwen2.5-7B at 0.65). The GiB column and
    # the >= 1 GiB row say how much of the figure that is; the target stays the all-runs percentage.
    large = [s for s in outside if abs(s.logged) >= GIB]
    rows = []
    for name, ss in (("H100 / 0.19 (the 42)", h100), ("outside H100 / 0.19, all scored", outside),
                     ("  attributed by thread or repository", attributed), ("  attributed by index id only", index_only),
                     ("  logged pool of 1 GiB or more", large),
                     ("launch or GPU assumed (not in the targets)", assumed),
                     ("unified memory, DGX Spark (not in the MAE target)", unified_pool),
                     ("H100 on the 42's line, 0.18.0 (not in the targets)", same_line)):
        if ss:
            rows.append([name, str(len(ss)), f"{mae(ss, 'in'):.2f}", f"{mae(ss, 'loso'):.2f}",
                         f"{statistics.fmean(abs(s.loso - s.logged) for s in ss) / GIB:.3f}",
                         f"{sum(s.covered for s in ss)}/{len(ss)}",
                         f"{sum(s.given == 'exact' for s in ss)}/{sum(s.given != 'n/a' for s in ss)}"])
    print(table(rows, ["logs", "n", "in-sample MAE %", "LOSO MAE %", "LOSO MAE GiB", "band covers",
                       "given-budget exact"], args.markdown))

    print("\n## Term residuals, leave-one-log-out (modelled - logged, GiB; where the log prints the term)\n")
    rows = []
    for label, pick in (("weights", lambda r, b: (b.weights_bytes, r.weights)),
                        ("activation peak", lambda r, b: (b.activation_peak_bytes, r.peak)),
                        ("non-torch", lambda r, b: (b.non_torch_bytes, r.non_torch))):
        for kind in ("text", "multimodal"):
            res = []
            for r in runs:
                if (kind == "multimodal") != bool(r.request.spec.vision_params):
                    continue
                loso, _ = fit(without_source(runs, r))
                try:
                    b = budgets_for(r.request, loso)[-1]
                except KvplanError:  # a run kvplan can no longer describe (listed under "Not scored")
                    continue
                model, logged = pick(r, b)
                if logged is not None:
                    res.append(model / GIB - float(logged))
            if res:
                res.sort(key=abs)
                p90 = res[min(len(res) - 1, int(0.9 * len(res)))]
                rows.append([label, kind, str(len(res)), f"{min(res):+.2f}", f"{max(res):+.2f}", f"{abs(p90):.2f}"])
    print(table(rows, ["term", "models", "logs", "min", "max", "|p90|"], args.markdown))

    print("\n## Not scored end to end (public logs)\n")
    for name, why in refused:
        print(f"- kvplan cannot describe the model: {name} ({why})")
    for why, ids in NOT_SCORED.items():
        print(f"- {why}: {len(ids)} — " + ", ".join(ids))

    print("\n## The constants fitted on all logs (budget.py FITTED holds them)\n")
    for name, value in dataclasses.asdict(constants).items():
        print(f"- {name}: {value}")
    print("  logs per constant: " + ", ".join(f"{k} {v}" for k, v in used.items()))

    problems = []
    if mae(h100, "in") >= 1:
        problems.append(f"in-sample MAE on the 42 H100 / 0.19 logs {mae(h100, 'in'):.2f}% (target < 1%)")
    if outside and mae(outside, "loso") > 2:
        problems.append(f"LOSO MAE outside H100 / 0.19 {mae(outside, 'loso'):.2f}% (target <= 2%)")
    if outside and sum(s.covered for s in outside) < 0.9 * len(outside):
        problems.append(f"band covers {sum(s.covered for s in outside)}/{len(outside)} outside H100 / 0.19 (target 90%)")
    inexact = [s.run.name for s in scores if s.given.startswith("differs")]
    if inexact:
        problems.append("given-budget figures differ: " + ", ".join(inexact))
    return report_missed(problems)


def report_missed(problems: list[str]) -> int:
    """Print each target the run missed; the exit code says whether there was one (band_coverage.py uses it too)."""
    print()
    for p in problems:
        print(f"MISSED: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
