"""Tabulate the memory budget of the 42 real vLLM 0.19.0 start-up logs in tests/data/vllm_logs.

Prints a markdown table (one row per log) and the residuals of vLLM 0.19's budget identity

    available_kv = ceil(total x util) - weights - activation_peak - non_torch

(v1/worker/gpu_worker.py:determine_available_memory; the CUDA-graph estimate is *not* subtracted in
0.19.0 because VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 0, envs.py). Every printed GiB
value carries +-0.005 GiB of rounding, so residuals within +-0.02 GiB mean "identity holds".

It also checks each log's block count against the KV bytes per block that the model's architecture
gives (layers, KV heads, head size; MLA latent width), i.e. that
num_gpu_blocks == available_bytes // bytes_per_block for some available_bytes the printed GiB allows.

Run: python benchmarks/vllm_log_table.py [--markdown]
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvplan.engines.vllm.log import gib_bounds, parse_vllm_log_file  # noqa: E402

LOGS = ROOT / "tests" / "data" / "vllm_logs"

# Architecture facts per model (config.json of the Hugging Face repo; text_config for Gemma-3):
# layers, KV heads, head_dim; "mla" is the latent width kv_lora_rank + qk_rope_head_dim; sliding /
# full layer counts and the window for the interleaved models. Every entry is cross-checked by this
# script: num_gpu_blocks must equal available // bytes_per_block within the printed rounding.
ARCH = {
    "codellama/CodeLlama-7b-hf": dict(layers=32, kv=32, hd=128),
    "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic": dict(layers=80, kv=8, hd=128),
    "RedHatAI/Qwen2.5-7B-Instruct-fp8-dynamic": dict(layers=28, kv=4, hd=128),
    "google/gemma-2-27b-it": dict(layers=46, kv=16, hd=128,
                                  sliding=23, full=23, window=4096),
    "google/gemma-2-2b-it": dict(layers=26, kv=4, hd=256,
                                 sliding=13, full=13, window=4096),
    "google/gemma-3-12b-it": dict(layers=48, kv=8, hd=256,
                                  sliding=40, full=8, window=1024),
    "google/gemma-3-4b-it": dict(layers=34, kv=4, hd=256,
                                 sliding=29, full=5, window=1024),
    "google/gemma-7b": dict(layers=28, kv=16, hd=256),
    "ibm-granite/granite-3.1-2b-instruct": dict(layers=40, kv=8, hd=64),
    "ibm-granite/granite-3.1-8b-instruct": dict(layers=40, kv=8, hd=128),
    "ibm-granite/granite-3.3-8b-instruct": dict(layers=40, kv=8, hd=128),
    "ibm-granite/granite-vision-3.3-2b": dict(layers=40, kv=8, hd=64),
    "meta-llama/Llama-3.1-8B-Instruct": dict(layers=32, kv=8, hd=128),
    "microsoft/phi-2": dict(layers=32, kv=32, hd=80),
    "microsoft/phi-4": dict(layers=40, kv=10, hd=128),
    "moonshotai/Kimi-Dev-72B": dict(layers=80, kv=8, hd=128),
    "moonshotai/Kimi-VL-A3B-Instruct": dict(layers=27, mla=512 + 64),
    "Qwen/Qwen1.5-MoE-A2.7B": dict(layers=24, kv=16, hd=128),
    "Qwen/Qwen2.5-7B-Instruct": dict(layers=28, kv=4, hd=128),
    "Qwen/Qwen3-8B": dict(layers=36, kv=8, hd=128),
    "redhatai/Llama-3.3-70B-Instruct-quantized.w8a8": dict(layers=80, kv=8, hd=128),
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16": dict(layers=32, kv=8, hd=128),
    "RedHatAI/Mistral-Small-3.1-24B-Instruct-2503-quantized.w8a8": dict(layers=40, kv=8, hd=128,
                                                                       vocab=131072),
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8": dict(layers=32, kv=8, hd=128),
    "RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8": dict(layers=28, kv=4, hd=128),
}

DTYPE_BYTES = {"torch.bfloat16": 2, "torch.float16": 2, "torch.float32": 4}
BLOCK = 16  # vLLM 0.19 default block size; every log kept it (no "Setting ... block size" line)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def pp_layers(layers: int, pp: int) -> list[int]:
    """vllm/distributed/utils.py:get_pp_indices: remainder to the stages before the last, backwards."""
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    return parts


def kv_layout(arch: dict, tp: int, pp: int, dtype_bytes: int) -> tuple[int, int, int]:
    """(bytes per block of the binding worker, number of KV cache groups, layers per group)."""
    if "mla" in arch:
        page = BLOCK * arch["mla"] * dtype_bytes  # MLA: one latent, never split by TP
    else:
        heads = max(1, arch["kv"] // tp)
        page = BLOCK * heads * 2 * arch["hd"] * dtype_bytes
    if "sliding" in arch:
        lo, hi = sorted((arch["sliding"], arch["full"]))
        group = hi if hi < 1.5 * lo else lo
        groups = cdiv(arch["sliding"], group) + cdiv(arch["full"], group)
        return page * group, groups, group
    layers = max(pp_layers(arch["layers"], pp))  # the stage with most layers has the fewest blocks
    return page * layers, 1, layers


def blocks_per_request(arch: dict, max_len: int, mnbt: int) -> int:
    """Blocks one max-length request needs, summed over groups (0.19 kv_cache_utils)."""
    full = cdiv(max_len, BLOCK)
    if "sliding" not in arch:
        return full
    _, groups, group = kv_layout(arch, 1, 1, 2)
    n_full = cdiv(arch["full"], group)
    n_sw = groups - n_full
    sw = cdiv(min(arch["window"] - 1 + mnbt, max_len), BLOCK) + 1
    return n_full * full + n_sw * sw


def rows():
    index = [json.loads(line) for line in (LOGS / "index.jsonl").read_text().splitlines() if line.strip()]
    for rec in index:
        name = rec["url"].rsplit("/", 1)[1]
        f = parse_vllm_log_file(LOGS / "raw" / name)
        yield name, rec, f


def main() -> None:
    head = ("| log (H100 80GB) | model | tp | pp | max_len | mnbt | weights | peak | non-torch | CG est/actual "
            "| avail KV | total x util | residual | bytes/block | blocks, tokens, concurrency |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    residuals = []
    for name, rec, f in rows():
        arch = ARCH[rec["model_id"]]
        w = f.binding_worker() or f.workers[0]
        requested = f.requested_memory_gib
        peak = w.activation_peak_gib
        non_torch = w.non_torch_gib
        weights = w.weights_gib
        avail = w.available_kv_gib
        residual = avail - (requested - weights - peak - non_torch)
        residuals.append((name, residual))
        dtype_bytes = DTYPE_BYTES[f.dtype]
        bpb, groups, _ = kv_layout(arch, f.tensor_parallel_size, f.pipeline_parallel_size, dtype_bytes)
        lo, hi = gib_bounds(avail)
        # num_gpu_blocks = avail // bpb for some avail in [lo, hi)
        blocks_ok = lo // bpb <= f.num_gpu_blocks <= (hi - 1) // bpb
        tokens_ok = f.kv_cache_tokens == f.num_gpu_blocks // groups * BLOCK
        conc = f.num_gpu_blocks / blocks_per_request(arch, f.max_model_len, f.max_num_batched_tokens)
        conc_ok = f"{conc:.2f}" == f"{f.max_concurrency:.2f}"
        print(
            f"| {name.removesuffix('.log').replace('--h100-80gb--', ' ')} | {rec['model_id'].split('/')[-1][:34]} "
            f"| {f.tensor_parallel_size} "
            f"| {f.pipeline_parallel_size} | {f.max_model_len} | {f.max_num_batched_tokens} | {weights} "
            f"| {peak} | {non_torch} | {w.cuda_graph_estimate_gib}/{w.cuda_graph_actual_gib} | {avail} "
            f"| {requested} | {residual:+.2f} | {bpb} | "
            f"{'yes' if blocks_ok and tokens_ok and conc_ok else f'NO {blocks_ok} {tokens_ok} {conc_ok}'} |"
        )
    worst = max(residuals, key=lambda r: abs(r[1]))
    print()
    print(f"residuals: min {min(r for _, r in residuals):+.2f} max {max(r for _, r in residuals):+.2f} "
          f"GiB; worst {worst[0]} {worst[1]:+.2f}")
    print(f"total x util: 79.19 x 0.95 = {Decimal('79.19') * Decimal('0.95')}")


if __name__ == "__main__":
    main()
