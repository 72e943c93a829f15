"""vLLM's --max-model-len auto / -1 (kvplan --seq auto): the length vLLM picks at start-up.

The reference below is vLLM's own search, re-derived by hand from the releases' source (read from the wheels,
`pip download --no-deps vllm==X`): v1/core/kv_cache_utils.py _auto_fit_max_model_len and
_estimate_max_model_len_from_groups (0.33: v1/core/kv_cache_planning.py). For one group of full-attention layers
it tests max_memory_usage = group size x page x cdiv(M, block size) <= memory, by binary search over 1 ... the
derived length (left/right/mid as written there, no rounding), the derived length kept when it fits; 0.33 (and
0.29+, kvplan's null_block_reserved_before_fit) searches against the memory less one block (check_memory).
"""

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

from kvplan.engines import get
from kvplan.requests.build import build_request


def vllm_search(fits, original: int) -> int:
    """_estimate_max_model_len_from_groups, as vLLM writes it."""
    left, right = 1, original
    if not fits(left):
        return 0
    result = 1
    while left <= right:
        mid = (left + right) // 2
        if fits(mid):
            result = mid
            left = mid + 1
        else:
            right = mid - 1
    return result


# Llama-3.1-8B (the bundled spec: 32 layers, 8 KV heads, head_dim 128, bf16): FullAttentionSpec.page_size_bytes =
# 2 (K and V) x block 16 x 8 heads x 128 x 2 bytes = 65,536 per layer; one group of 32 layers
PAGE = 2 * 16 * 8 * 128 * 2
LAYERS, BLOCK, DERIVED = 32, 16, 131072


def picked_by_vllm(memory: int, *, null_block_kept: bool) -> int:
    check = memory - LAYERS * PAGE if null_block_kept else memory
    return vllm_search(lambda m: LAYERS * PAGE * -(-m // BLOCK) <= check, DERIVED)


def estimate(version: str, memory: int, **kw):
    req = build_request("llama-3.1-8b", seq="auto", batch=1, kv_dtype="auto", dtype=None, gpu=None, gpu_mem=None,
                        gpus=None, tp=None, pp=1, kv_cache_memory=str(memory), engine_version=version, **kw)
    return get("vllm").estimate(req)


@pytest.mark.parametrize("version,null_block_kept", [("0.14.1", False), ("0.22.1", False), ("0.29.0", True),
                                                      ("0.33.0", True)])
@pytest.mark.parametrize("memory", [LAYERS * PAGE * 1 + 5, 1_000_000_007, 3 * 2**30 + 12345, 17 * 2**30 + 1,
                                    16 * 2**30 + LAYERS * PAGE])
def test_given_budget_picks_the_length_vllm_searches(version, null_block_kept, memory):
    r = estimate(version, memory)
    want = picked_by_vllm(memory, null_block_kept=null_block_kept)
    assert r.auto_max_model_len == want
    assert r.auto_max_model_len_low == r.auto_max_model_len_high == want  # a given budget has no band
    if want:
        assert r.seq == want and r.starts
        # the pool is the one the budget gives, whatever the length (num_blocks = memory // bytes per block)
        assert r.num_gpu_blocks == memory // (LAYERS * PAGE)
    else:
        assert r.starts is False and r.fits is False


def test_full_length_kept_when_it_fits():
    # 16 GiB + one block holds 8,192 blocks of 2 MiB (one request of 131,072) with the null block kept back
    r = estimate("0.33.0", 16 * 2**30 + LAYERS * PAGE)
    assert r.auto_max_model_len == DERIVED == r.seq
    # one byte less and 0.33 picks the longest length below it (whole blocks: 8,191 x 16)
    assert estimate("0.33.0", 16 * 2**30 + LAYERS * PAGE - 1).auto_max_model_len == 8191 * 16
    # 0.22 keeps no block back: 16 GiB exactly is enough there
    assert estimate("0.22.1", 16 * 2**30).auto_max_model_len == DERIVED


def test_releases_without_auto_are_refused_by_name(cli):
    for version in ("0.10.2", "0.11.0", "0.13.0"):
        code, out, err = cli("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "h100", "--seq", "auto",
                             "--engine-version", version)
        assert code == 3 and f"vLLM {version} has no --max-model-len auto" in err and "0.14.0" in err, err
    code, _, err = cli("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "h100", "--engine-version", "0.13.0",
                       "--vllm-args", "--max-model-len -1")
    assert code == 3 and "vLLM 0.13.0 has no --max-model-len auto" in err
    code, _, err = cli("estimate", "llama-3.1-8b", "--engine", "sglang", "--gpu", "h100", "--seq", "auto")
    assert code == 2 and "--max-model-len auto" in err


def test_pipeline_parallel_auto_on_the_global_fit_releases_is_refused(cli):
    # 0.14-0.16 fit the whole model's groups against the smallest worker's memory (get_kv_cache_configs)
    code, _, err = cli("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "l4", "--pp", "2", "--seq", "auto",
                       "--engine-version", "0.16.0")
    assert code == 3 and "pipeline parallel 2" in err
    code, out, err = cli("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "l4", "--pp", "2", "--seq", "auto",
                         "--json")
    assert code in (0, 1), err
    r = json.loads(out)
    assert r["auto_max_model_len"] == r["seq"]


def test_modelled_budget_auto_in_vllm_args_text_json_and_band(cli):
    base = ("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "l4")
    code, out, err = cli(*base, "--vllm-args", "--max-model-len auto", "--json")
    assert code == 0, err
    r = json.loads(out)
    pick = r["auto_max_model_len"]
    # the pick is the longest length whose one request fits the modelled KV memory, less the null block (0.33)
    assert pick == r["seq"] == picked_by_vllm(r["available_kv_bytes"], null_block_kept=True) < DERIVED
    assert r["auto_max_model_len_low"] <= pick < r["auto_max_model_len_high"]  # estimate judges at the low edge
    assert r["auto_max_model_len_low"] == picked_by_vllm(r["available_kv_bytes_low"], null_block_kept=True)
    # -1 and --seq auto are the same launch
    assert json.loads(cli(*base, "--seq", "-1", "--json")[1])["auto_max_model_len"] == pick
    code, out, _ = cli(*base, "--seq", "auto")
    assert code == 0 and f"vLLM will pick" in out and f"{pick:,}" in out
    # a length the user gives is judged as given (no pick)
    assert json.loads(cli(*base, "--seq", "8K", "--json")[1])["auto_max_model_len"] is None


def test_core_options_pasted_in_vllm_args_are_read_as_vllm_spells_them(cli):
    base = ("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "l40s", "--json")
    pasted = json.loads(cli(*base, "--vllm-args", "--tensor-parallel-size 2 --gpu-memory-utilization 0.85 "
                                                   "--kv-cache-dtype fp8 --max-model-len 32k --max-num-seqs 64")[1])
    flags = json.loads(cli(*base, "--tp", "2", "--gpu-util", "0.85", "--kv-dtype", "fp8", "--seq", "32k",
                           "--max-num-seqs", "64")[1])
    for key in ("seq", "tp", "kv_dtype", "available_kv_bytes", "num_gpu_blocks", "max_num_seqs",
                "gpu_memory_utilization"):
        assert pasted[key] == flags[key], key
    # the same setting both ways with two values is an error, with one value it is fine
    code, _, err = cli(*base, "--tp", "2", "--vllm-args", "--tensor-parallel-size 4")
    assert code == 2 and "disagree" in err
    assert cli(*base, "--tp", "2", "--vllm-args", "-tp 2")[0] == 0


def test_check_judges_an_auto_launch_by_the_low_edge(cli, tmp_path):
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\nvllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len auto\n")
    code, out, err = cli("check", script, "--gpu", "l4", "--json")
    assert code == 0, out + err
    verdict = json.loads(out)["verdicts"][0]
    low = json.loads(cli("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "l4", "--seq", "auto",
                         "--json")[1])["auto_max_model_len_low"]
    assert verdict["status"] == "pass" and verdict["max_model_len"] == low
    assert f"starts at max_model_len {low:,}" in verdict["reason"]
    pinned = tmp_path / "pinned.sh"
    pinned.write_text("#!/bin/bash\nvllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len -1 "
                      "--kv-cache-memory-bytes 3000000000\n")
    verdict = json.loads(cli("check", pinned, "--gpu", "l4", "--json")[1])["verdicts"][0]
    assert verdict["max_model_len"] == picked_by_vllm(3_000_000_000, null_block_kept=True)


def test_kvplan_yaml_takes_auto_and_vllms_kv_formats(cli, tmp_path):
    given = tmp_path / "given.yaml"
    given.write_text("name: a\nengine: vllm\nmodel: llama-3.1-8b\ngpu: l4\nmax_model_len: auto\n"
                     "kv_cache_memory_bytes: 3000000000\n")
    verdict = json.loads(cli("check", given, "--json")[1])["verdicts"][0]
    assert verdict["status"] == "pass" and verdict["max_model_len"] == picked_by_vllm(3_000_000_000, null_block_kept=True)
    packed = tmp_path / "packed.yaml"
    packed.write_text("name: b\nengine: vllm\nmodel: llama-3.1-8b\ngpu: l4\nmax_model_len: 8192\n"
                      "kv_cache_dtype: int8_per_token_head\n")
    verdict = json.loads(cli("check", packed, "--json")[1])["verdicts"][0]
    assert verdict["status"] == "pass" and verdict["kv_cache_dtype"] == "int8_per_token_head"
    other = tmp_path / "sglang.yaml"
    other.write_text("name: c\nengine: sglang\nmodel: llama-3.1-8b\ngpu: l4\nmax_model_len: auto\n")
    code, out, _ = cli("check", other, "--json")
    assert code == 2 and json.loads(out)["verdicts"][0]["status"] == "invalid"


def test_the_auto_fit_line_is_worded_as_each_release_logs_it():
    """_auto_fit_max_model_len's info line: 0.14-0.31 "... available GPU memory (X GiB available for KV cache)",
    0.32+ "... available KV cache memory (X GiB GPU)" (_kv_cache_device_name), after "Available KV cache memory"."""
    memory = 3 * 2**30 + 12345
    old = estimate("0.22.1", memory).log_lines
    assert old[1] == (f"INFO Auto-fit max_model_len: reduced from {DERIVED} to {picked_by_vllm(memory, null_block_kept=False)}"
                      " to fit in available GPU memory (3.0 GiB available for KV cache)")
    assert old[0].startswith("INFO Available KV cache memory")
    new = estimate("0.33.0", memory).log_lines
    assert new[1] == (f"INFO Auto-fit max_model_len: reduced from {DERIVED} to {picked_by_vllm(memory, null_block_kept=True)}"
                      " to fit in available KV cache memory (3.0 GiB GPU)")
    full = estimate("0.22.1", 17 * 2**30).log_lines
    assert f"INFO Auto-fit max_model_len: full model context length {DERIVED} fits in available GPU memory" in full


# ------------------------------------------------------------------ public logs of auto launches

AUTO_LOGS = Path(__file__).parent / "data" / "vllm_auto_fit_logs"
QWEN36_27B = Path(__file__).parent / "data" / "public_models" / "nvidia--Qwen3.6-27B-NVFP4"
GIB = 2**30


def _logged(text: str, pattern: str) -> str:
    return re.search(pattern, text).group(1)


@pytest.mark.parametrize("log", ["yeasah-vllm-golite-qwen3.8-27b-cold.log", "yeasah-vllm-golite-qwen3.8-27b-warm.log"])
def test_the_length_a_public_auto_launch_logged(log):
    """A 16 GB card, Qwen3.8-27B (exl3), --max-model-len -1 --kv-cache-dtype turboquant_4bit_nc with prefix caching,
    on a 0.28-line build (tests/data/vllm_auto_fit_logs/SOURCES.md). The log prints the KV memory to 0.01 GiB: kvplan
    picks the logged length somewhere in that interval, at the block size and pool the log prints."""
    text = (AUTO_LOGS / log).read_text(encoding="utf-8")
    memory = Decimal(_logged(text, r"Available KV cache memory: ([\d.]+) GiB"))
    picked = int(_logged(text, r"Auto-fit max_model_len: reduced from 262144 to (\d+)"))
    tokens = int(_logged(text, r"GPU KV cache size: ([\d,]+) tokens").replace(",", ""))

    def at(gib: Decimal):
        req = build_request(str(QWEN36_27B), seq=None, batch=1, kv_dtype="auto", dtype=None, gpu=None, gpu_mem=None,
                            gpus=None, tp=None, pp=1, kv_cache_memory=str(int(gib * GIB)), engine_version="0.28.0",
                            vllm_args="--max-model-len -1 --kv-cache-dtype turboquant_4bit_nc --enable-prefix-caching "
                                      "--language-model-only --max-num-seqs 1")
        return get("vllm").estimate(req)

    low, high = at(memory - Decimal("0.005")), at(memory + Decimal("0.005") - Decimal("0.000001"))
    assert low.block_size == high.block_size == 3072  # "Setting attention block size to 3072 tokens"
    assert picked in (low.auto_max_model_len, high.auto_max_model_len), (low.auto_max_model_len, high.auto_max_model_len)
    assert tokens in (low.kv_cache_tokens, high.kv_cache_tokens)
    # the cold start's interval holds one pick only: kvplan names it exactly
    if log.endswith("cold.log"):
        assert low.auto_max_model_len == high.auto_max_model_len == picked == 172_032
