"""kvplan.engines.vllm.log on the 88 public vLLM logs of tests/data/vllm_logs_public, as users pasted them.

Each record of index.jsonl copies its log's key lines ("extracted") and says how the log was pasted
("paste_form"); the figures the parser reads are checked against those copied lines with the test's own simple
regexes, and each paste form of issue 11 has a test on the log that shows it (the only one made here by
transforming a real log, named so, is the hard wrap that hid tensor_parallel_size: no public log of a TP 2 run
was stored wrapped).
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from kvplan.engines.logtext import detect_engine, lines, paste_traits
from kvplan.engines.vllm.log import parse_vllm_log
from log_data import DATA, index, numbers, text

FOLDER = "vllm_logs_public"
RECORDS = index(FOLDER)
BY_ID = {r["id"]: r for r in RECORDS}
def parsed(rid: str):
    return parse_vllm_log(text(FOLDER, BY_ID[rid]))


def test_every_public_log_is_listed_and_read():
    assert len(RECORDS) == 90
    for r in RECORDS:
        assert detect_engine(text(FOLDER, r)) == "vllm", r["id"]
        parse_vllm_log(text(FOLDER, r))  # raises on a text without vLLM's lines


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: r["id"])
def test_figures_equal_the_lines_the_index_copied(rec):
    f = parse_vllm_log(text(FOLDER, rec))
    ex = rec["extracted"]
    if "available_kv_cache_memory" in ex:
        logged = numbers(ex["available_kv_cache_memory"], r"memory: (-?[\d.]+) GiB")
        # several workers: the pool is sized by the one with the least memory
        assert f.binding_worker().available_kv_gib == min(logged)
    if "gpu_kv_cache_size" in ex:
        assert f.kv_cache_tokens == min(numbers(ex["gpu_kv_cache_size"], r"size: ([\d,]+) tokens"))
    if "max_concurrency" in ex:
        assert Decimal(f"{f.max_concurrency:.2f}") in numbers(ex["max_concurrency"], r": ([\d.]+)x")
        assert f.max_concurrency_tokens in numbers(ex["max_concurrency"], r"for ([\d,]+) tokens")
    if "model_loading" in ex:
        weights = numbers(ex["model_loading"], r"took ([\d.]+) Gi?B")
        assert {w.weights_gib for w in f.workers if w.weights_gib is not None} <= set(weights) | {
            w for w in (f.weights_gib,) if w is not None}
    if "blocks" in ex:
        assert f.num_gpu_blocks == numbers(ex["blocks"], r"(?:GPU|CUDA|cuda|rocm) blocks: (\d+)")[-1]
        cpu = numbers(ex["blocks"], r"CPU blocks: (\d+)")
        assert f.num_cpu_blocks == (cpu[0] if cpu else None)
    if "num_gpu_blocks_final" in ex:
        assert f.num_gpu_blocks == numbers(ex["num_gpu_blocks_final"], r"is: (\d+)")[0]
    if "free_memory_on_device" in ex:
        line = ex["free_memory_on_device"][0]
        assert f.startup_free_gib == numbers([line], r"device \(([\d.]+)/")[0]
        assert f.startup_total_gib == numbers([line], r"/([\d.]+) GiB\)")[0]
    if "memory_profile" in ex and "rest of the memory" in " ".join(ex["memory_profile"]):
        kv = numbers(ex["memory_profile"], r"KV Cache is ([\d.]+)GiB")
        assert {w.available_kv_gib for w in f.workers if w.available_kv_gib is not None} <= set(kv)
    if "error" in ex and "stored in KV cache" in ex["error"][0]:
        assert f.tokens_capacity == numbers(ex["error"], r"stored in KV cache \((\d+)\)")[0]
    if "error" in ex and "estimated maximum model length" in ex["error"][0]:
        assert f.estimated_max_model_len == numbers(ex["error"], r"length is (\d+)")[0]
    engine_lines = [v for v in ex.get("version", []) if "Initializing" in v]
    if engine_lines:
        assert f.vllm_version == re.search(r"\(v([^)]+)\)", engine_lines[0]).group(1)


# --- one test per paste form of issue 11 ------------------------------------------------------------------------


def test_ansi_codes_without_the_esc_byte():
    """GitHub drops the ESC byte: "[1;36m(EngineCore_0 pid=82)[0;0m" still labels the line."""
    r = BY_ID["idx-40gb-llama31-8b-fp16-ansi-v01011"]
    assert "[1;36m(EngineCore_0 pid=82)[0;0m" in text(FOLDER, r)
    f = parsed(r["id"])
    assert f.workers[0].name == "EngineCore_0" and f.workers[0].pid == 82
    assert (f.available_kv_gib, f.kv_cache_tokens, f.num_gpu_blocks) == (Decimal("19.25"), 157648, 9853)
    assert "ANSI colour codes without the ESC byte" in paste_traits(text(FOLDER, r))
    g = parsed("vllm-issue16692-2x8xh800-ray-tp16-deepseek-v3")  # "[36m(RayWorkerWrapper pid=858)[0m"
    assert g.kv_cache_tokens == 304704 and g.max_concurrency == 9.30


def test_nested_ray_labels_belong_to_the_innermost_process():
    f = parsed("ray-pr65486-rayserve-nested-prefix-hopper")
    (worker,) = f.workers  # the long and the short prefix chains both end in (Worker pid=29271)
    assert (worker.name, worker.pid, worker.available_kv_gib) == ("Worker", 29271, Decimal("54.45"))
    # a bare "Worker" label: vLLM names a worker Worker_TPk / Worker_PPk only when TP / PP is above 1
    assert (f.tensor_parallel_size, f.pipeline_parallel_size) == (1, 1)
    assert (f.kv_cache_tokens, f.max_concurrency_tokens) == (396448, 131072)


def test_a_terminal_wrap_is_joined_mid_word():
    r = BY_ID["arcb70-issue4-intel-arc-pro-b70-wrapped-error"]
    raw = text(FOLDER, r)
    assert "_initialize_k\nv_caches" in raw and "KV cach\ne is needed" in raw
    joined = " ".join(line.text for line in lines(raw))
    assert "_initialize_kv_caches" in joined and "KV cache is needed" in joined
    f = parsed(r["id"])
    assert (f.needed_kv_gib, f.available_kv_gib, f.max_model_len) == (Decimal("4.26"), Decimal("4.25"), 100000)


def test_a_reflowed_excerpt_without_heads_is_read():
    r = BY_ID["idx-mi300x-gemma4-e2b-wrapped"]
    traits = paste_traits(text(FOLDER, r))
    assert "3 hard-wrapped line(s) joined" in traits and "no `LEVEL MM-DD hh:mm:ss` heads (an excerpt)" in traits
    f = parsed(r["id"])
    assert (f.startup_free_gib, f.startup_total_gib) == (Decimal("191.36"), Decimal("191.69"))
    assert f.gpu_memory_utilization == 0.9 and f.requested_memory_gib == Decimal("172.52")
    assert (f.total_consumed_gib, f.activation_peak_gib, f.cuda_graph_actual_gib) == (
        Decimal("11.88"), Decimal("5.59"), Decimal("3.9"))
    assert f.available_kv_gib == Decimal("155.04")  # "Current kv cache memory\nin use is 155.04 GiB."
    assert (f.kv_cache_tokens, f.max_concurrency) == (9026017, 275.45)


def test_a_hard_wrap_that_hid_tensor_parallel_size_is_joined():
    """Issue 11: a wrapped log hid `tensor_parallel_size=2` and calibrate used TP 1. A real TP 2 log, cut as a
    terminal cuts it (every line into pieces of W columns, mid-word) at a W that splits that very setting, reads as
    the log itself."""
    src = DATA / "vllm_logs" / "raw" / "qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192.log"
    original = src.read_text(encoding="utf-8")

    def cut(width: int) -> str:
        return "\n".join(line[i:i + width] for line in original.splitlines() for i in range(0, max(len(line), 1), width))

    width = next(w for w in range(90, 140) if not any("tensor_parallel_size=2" in x for x in cut(w).splitlines()))
    wrapped = cut(width)
    assert "tensor_parallel_size=2" not in wrapped  # split over two lines
    a, b = parse_vllm_log(original), parse_vllm_log(wrapped)
    assert (b.tensor_parallel_size, b.tp_source) == (2, "engine config")
    for field in ("model", "max_model_len", "available_kv_gib", "kv_cache_tokens", "max_concurrency", "num_gpu_blocks",
                  "weights_gib", "non_torch_gib"):
        assert getattr(a, field) == getattr(b, field), field
    assert [w.available_kv_gib for w in a.workers] == [w.available_kv_gib for w in b.workers]


def test_excerpts_without_the_log_head_are_read():
    f = parsed("vllm-issue21348-4xh100-qwen3-235b-fp8")  # two bare lines inside a fence
    assert (f.available_kv_gib, f.kv_cache_tokens) == (Decimal("8.11"), 178880)
    g = parsed("idx-rtxpro6000-llama31-70b-awq-marlin-v0140rc2-noprefix")  # "INFO [file.py:N] ..." lines
    assert (g.weights_gib, g.available_kv_gib, g.kv_cache_tokens) == (Decimal("37.09"), Decimal("38.71"), 126832)


def test_v0_lines():
    f = parsed("vllm-issue10517-rtx3090-llama31-8b-20k")  # "GPU blocks: 1952, # CPU blocks: 2048" (the "# " lost)
    assert (f.num_gpu_blocks, f.num_cpu_blocks, f.engine_generation) == (1952, 2048, "V0")
    assert (f.weights_gib, f.total_memory_gib, f.available_kv_gib) == (Decimal("14.9888"), Decimal("23.58"),
                                                                         Decimal("3.81"))
    assert parsed("vllm-pr12126-h100-llama32-11b-vision").num_gpu_blocks == 6001  # "# CUDA blocks"
    assert parsed("idx-a100-40gb-phi4-mini-ft-v073-indented").num_gpu_blocks == 13618  # "# cuda blocks", indented
    hygon = parsed("idx-hygon-dcu-8x-deepseek32b-medical-quoted")  # "# rocm blocks", quoted in Chinese prose
    assert (hygon.num_gpu_blocks, hygon.available_kv_gib, hygon.non_torch_gib) == (40178, Decimal("39.51"),
                                                                                   Decimal("1.78"))
    table = parsed("vllm-pr10511-80gb-llama3-8b-tp1-tp2")  # the short-lived one-term-per-line table
    assert (table.weights_gib, table.non_torch_gib, table.activation_peak_gib, table.available_kv_gib) == (
        Decimal("14.96"), Decimal("1.79"), Decimal("1.26"), Decimal("53.29"))
    assert table.runs == 2 and table.tensor_parallel_size == 1  # the complete first run; the TP 2 one is cut


def test_model_loading_took_in_every_wording():
    assert parsed("vllm-issue23278-h100-gpt-oss-120b-negative-kv").weights_gib == Decimal("65.9651")  # "GiB and"
    assert parsed("hf-cookbook-t4-llama32-3b-unsloth-v082").weights_gib == Decimal("6.0160")  # "GB and", wrapper
    assert parsed("idx-rx7800xt-rocm-ovis2-8b-gptq-docker-v0112dev").weights_gib == Decimal("7.8926")  # "GiB memory and"


def test_several_workers_judge_by_the_one_that_binds_the_pool():
    v0 = parsed("vllm-issue16570-4xa100-40gb-qwen25-vl-72b")  # V0 driver + VllmWorkerProcess pids
    assert v0.binding_worker().available_kv_gib == Decimal("0.04") and v0.tp_at_least == 3
    r = BY_ID["idx-l40s-8x-qwen3-235b-2507-fp8-tp8-ep-v0102"]
    f = parse_vllm_log(text(FOLDER, r))
    assert f.binding_worker().available_kv_gib == Decimal("10.64")
    assert len(f.capacity_reports) == 8 and f.kv_cache_tokens == 237344 == f.num_gpu_blocks * 16
    assert f.runs == 2  # the author's summary (a TP 4 command) and the real log (TP 8)
    assert (f.tensor_parallel_size, f.tp_source) == (8, "engine config")


def test_tp_and_pp_from_any_line_that_shows_them():
    assert parsed("vllm-issue13061-2x4090-r1-distill-qwen-14b").tensor_parallel_size == 2  # `--tensor_parallel_size 2`
    pp2 = parsed("vllm-issue34076-5070ti-5090d-pp2-qwen3-coder-30b-fp8")  # `--pipeline-parallel-size 2` inline
    assert (pp2.tensor_parallel_size, pp2.pipeline_parallel_size, pp2.estimated_max_model_len) == (1, 2, 34736)
    labels = parsed("club3090-issue104-2x3090-qwen36-27b-autoround")  # Worker_TP0 / Worker_TP1 only
    assert (labels.tensor_parallel_size, labels.tp_at_least, labels.pipeline_parallel_size) == (None, 2, 1)
    uniproc = parsed("idx-rtx5090laptop-wsl-llama32-3b-nvfp4-grep")  # the worker's lines come from EngineCore
    assert (uniproc.tensor_parallel_size, uniproc.tp_source) == (1, "one worker inside the engine core")


def test_no_false_joins_in_logs_that_are_not_wrapped():
    for folder in ("vllm_logs", "sglang_logs", "trtllm_logs"):
        for path in sorted((DATA / folder / "raw").glob("*.log")):
            traits = paste_traits(path.read_text(encoding="utf-8", errors="replace"))
            assert not any("hard-wrapped" in t for t in traits), path.name
