"""The SGLang (32) and TensorRT-LLM (22) logs of tests/data read as pasted, and calibrate's figures on them.

The parsers are checked against the lines each index copied out of its log ("extracted"), with the test's own
simple regexes; the calibrate figures against arithmetic written out here from the logs' printed values.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from kvplan.engines.logcheck import CANNOT_JUDGE, MATCH, calibrate_path
from kvplan.engines.logtext import detect_engine
from kvplan.engines.sglang.log import parse_sglang_log
from kvplan.engines.trtllm.log import parse_trtllm_log
from log_data import DATA, index, numbers, raw_files, text

GIB = 2**30
SGLANG = index("sglang_logs")
TRTLLM = index("trtllm_logs")
SGL = {r["id"]: r for r in SGLANG}
TRT = {r["id"]: r for r in TRTLLM}


def test_every_log_is_listed_and_detected():
    assert len(SGLANG) == 32 and len(TRTLLM) == 22
    for r in SGLANG:
        assert detect_engine(text("sglang_logs", r)) == "sglang", r["id"]
    for r in TRTLLM:
        assert detect_engine(text("trtllm_logs", r)) == "trtllm", r["id"]


@pytest.mark.parametrize("rec", SGLANG, ids=lambda r: r["id"])
def test_sglang_figures_equal_the_copied_lines(rec):
    f = parse_sglang_log(text("sglang_logs", rec))
    lines = rec["extracted"]
    tokens = numbers([x for x in lines if "KV Cache is allocated" in x], r"#tokens: (\d+)")
    if tokens:
        assert {p.tokens for r in f.ranks for p in r.pools} == set(tokens)
    ends = numbers([x for x in lines if "Load weight end" in x], r"avail mem=([\d.]+) GB")
    if ends:
        assert f.binding_rank().free_after_load_gib == min(ends)  # SGLang takes the minimum over ranks
    # a speculative run loads a draft model after the target: its "Load weight begin" (free memory after the
    # target's weights) is not the rank's free memory before loading, so only each rank's first begin line counts
    first_begin = {}
    for x in lines:
        if "Load weight begin" in x:
            first_begin.setdefault(re.search(r"^\[[^\]]*?((?: (?:DP|TP|PP|EP)\d+)*)\]", x).group(1) if x.startswith("[") else "", x)
    begins = numbers(list(first_begin.values()), r"avail mem=([\d.]+) GB")
    if begins:
        assert min(r.free_before_load_gib for r in f.ranks if r.free_before_load_gib is not None) == min(begins)
    totals = numbers([x for x in lines if x.lstrip("[").split("]")[-1].lstrip().startswith("max_total_num_tokens=")
                      or "max_total_num_tokens=" in x], r"max_total_num_tokens=(\d+)")
    if totals:
        assert f.max_total_num_tokens == totals[0]
    kv_sizes = numbers([x for x in lines if "KV size:" in x and "K size" not in x], r"KV size: ([\d.]+) GB")
    if kv_sizes:
        assert {p.kv_gib for r in f.ranks for p in r.pools} == set(kv_sizes)
    for key, pattern in (("mem_fraction_static", r"mem_fraction_static=([\d.]+)"), ("tp_size", r"tp_size=(\d+)")):
        args = [x for x in rec.get("server_args") or [] if re.search(pattern, x)]
        if args:
            value = numbers(args, pattern)[0]
            assert (f.mem_fraction_static if key == "mem_fraction_static" else f.tp_size) == value


@pytest.mark.parametrize("rec", TRTLLM, ids=lambda r: r["id"])
def test_trtllm_figures_equal_the_copied_lines(rec):
    f = parse_trtllm_log(text("trtllm_logs", rec))
    lines = rec["extracted"]
    allocated = [x for x in lines if "for max tokens in paged KV cache" in x]
    if allocated:
        last = allocated[-1]
        assert f.pool_tokens == numbers([last], r"paged KV cache \((\d+)\)")[0]
        assert f.pool_gib == numbers([last], r"Allocated ([\d.]+) GiB")[0]
    primary = numbers(lines, r"(?:primary pool: |primary blocks=)(\d+)")
    if primary:
        assert f.primary_blocks == primary[-1]
    usage = [x for x in lines if "Memory usage when calculating max tokens" in x]
    if usage:
        assert f.available_gib == min(numbers(usage, r"available: ([\d.]+) GiB"))
    using = numbers(lines, r"Using (\d+) (?:total )?tokens in paged KV cache")
    if using:
        assert f.using_tokens == using[0]
    budgets = numbers(lines, r"available KV cache memory when calculating max tokens: ([\d.]+) GiB")
    if budgets:
        assert f.kv_budget_gib == min(budgets)


# --- SGLang paste forms and figures --------------------------------------------------------------------------------


def test_sglang_rank_heads_and_a_complete_log():
    f = parse_sglang_log(text("sglang_logs", SGL["didier-durand-qwq32b-4xL4-tp4-v0.4.3"]))
    assert [r.rank for r in f.ranks] == ["TP0", "TP1", "TP2", "TP3"]
    assert (f.tp_size, f.tp_source, f.mem_fraction_static) == (4, "server_args", Decimal("0.85"))
    r = f.binding_rank()
    assert (r.free_before_load_gib, r.free_after_load_gib, r.pools[0].tokens) == (Decimal("21.63"), Decimal("6.09"), 46611)


def test_sglang_dp_tp_ep_heads_and_mla_kv_size():
    f = parse_sglang_log(text("sglang_logs", SGL["sglang-pr11309-dsv32-exp-8xb200-dp8-attn-fixed"]))
    (rank,) = f.ranks
    assert rank.rank == "DP0 TP0" and rank.pools[0].kv_gib == Decimal("43.67") and rank.pools[0].tokens == 975424
    assert (f.tp_size, f.tp_source) == (8, "command line")  # "$ python -m sglang.launch_server ... --tp 8"
    g = parse_sglang_log(text("sglang_logs", SGL["sglang-pr17392-dp-attn-ep-4gpu-bf16-deepgemm"]))
    assert {r.rank for r in g.ranks} == {"DP2 TP2 EP2", "DP3 TP3 EP3"}


def test_sglang_bare_lines_without_rank_or_time():
    f = parse_sglang_log(text("sglang_logs", SGL["vllm21348-sglang-qwen3-235b-fp8-4xh100-tp4"]))
    assert f.ranks[0].pools[0].tokens == 367404 and f.ranks[0].pools[0].k_gib == Decimal("8.23")
    assert f.tp_size is None  # nothing in two bare lines says the TP


def test_sglang_pool_from_the_logged_budget_with_the_log_s_own_cell():
    """didier-durand, 4 x L4: rest = A - P x (1 - mem_fraction_static) from the printed P = 21.63, A = 6.09 GiB
    (each +-0.005), the cell (K + V) / (#tokens + 1 page) from the printed 1.42 + 1.42 GiB (each +-0.005)."""
    log = raw_files("sglang_logs", SGL["didier-durand-qwq32b-4xL4-tp4-v0.4.3"])[0]
    r = calibrate_path(log)
    by = {f.name: f for f in r.figures}
    lo = (Decimal("6.085") - Decimal("21.635") * Decimal("0.15")) * GIB
    hi = (Decimal("6.095") - Decimal("21.625") * Decimal("0.15")) * GIB
    cell_lo, cell_hi = Decimal("2.83") * GIB / 46612, Decimal("2.85") * GIB / 46612
    low, high = int(lo // cell_hi), int(hi // cell_lo)
    fig = by["KV pool #tokens (logged budget), the log's cell"]
    assert fig.predicted == f"{low:,}–{high:,}" and low <= 46611 <= high and fig.match is True
    assert by["max_total_num_tokens (the KV pool's #tokens)"].match is True
    assert r.status == CANNOT_JUDGE and "cannot describe" in r.reason  # QwQ-32B's config is not in tests/data


def test_sglang_kv_size_given_the_pool_needs_the_right_tp():
    """Qwen3-235B-A22B-FP8 at TP 4 (the vLLM command of the same issue): 94 layers x 4 KV heads / 4 x 128 x 2 bytes
    = 96,256 B per token each for K and V; (367,404 + 1) tokens -> 32.94 GiB for both, logged 8.23 + 8.23 = 16.46:
    the figure only agrees at TP 4, which the SGLang line alone does not say, so it is not judged a mismatch."""
    log = raw_files("sglang_logs", SGL["vllm21348-sglang-qwen3-235b-fp8-4xh100-tp4"])[0]
    r = calibrate_path(log, model=str(DATA / "public_models" / "Qwen--Qwen3-235B-A22B-FP8" / "config.json"))
    fig = next(f for f in r.figures if f.name.startswith("K + V size"))
    assert fig.match is False and fig.assumed and r.status == CANNOT_JUDGE
    assert fig.predicted == f"{(367404 + 1) * 94 * 4 * 128 * 2 * 2 / GIB:.2f}"


def test_sglang_pool_with_cpu_offload_from_the_logged_budget_on_0_5_9():
    """TianyangChen357's 2 x RTX A4500, Qwen3-14B in float16 at TP 2 with --cpu-offload-gb 48 and
    --mem-fraction-static 0.65 (its launch script). Offloading leaves SGLang's pool rule alone: rest = A - P x 0.35
    with the lowest rank's printed P = 18.73 and A = 17.22 GB (GiB, each +-0.005), over a cell of 40 layers x 8 / 2
    KV heads x 128 x 2 (K, V) x 2 bytes = 81,920 B holds the logged 139,814 tokens."""
    rec = SGL["tianyangchen-2xa4500-qwen3-14b-fp16-tp2-cpuoffload48"]
    f = parse_sglang_log(text("sglang_logs", rec))
    r = f.binding_rank()
    assert (r.free_before_load_gib, r.free_after_load_gib) == (Decimal("18.73"), Decimal("17.22"))
    cell = 40 * 8 // 2 * 128 * 2 * 2
    low = int((Decimal("17.215") - Decimal("18.735") * Decimal("0.35")) * GIB // cell)
    high = int((Decimal("17.225") - Decimal("18.725") * Decimal("0.35")) * GIB // cell)
    assert low <= r.pools[0].tokens == 139814 <= high
    # the K size the log prints is (tokens + 1) x half the cell
    assert f"{(139814 + 1) * cell / 2 / GIB:.2f}" == "5.33"


def test_sglang_hicache_host_pool_on_0_5_7():
    """udbhav-ag's 0.5.7 run with --enable-hierarchical-cache, --hicache-ratio 4: the GPU pool (25,169 tokens) is
    sized as without it, then "Allocating 11.55 GB host memory" (decimal GB): int(25,169 x 4) tokens plus one page
    of Llama-3.2-3B's 28 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 114,688 B a token."""
    from kvplan.engines.sglang.feature_terms import SglangOptions
    from kvplan.engines.sglang import releases
    from kvplan.engines.sglang.features import hicache_terms

    log = text("sglang_logs", SGL["udbhav-48gb-v0.5.7-llama32-3b-hicache-mooncake"])
    logged = re.search(r"Allocating ([\d.]+) GB host memory for hierarchical KV cache", log).group(1)
    tokens = parse_sglang_log(log).ranks[0].pools[0].tokens
    terms = hicache_terms(SglangOptions(hicache=True, hicache_ratio=4.0), cell_per_rank=28 * 8 * 128 * 2 * 2,
                          device_tokens=tokens, page=1, ranks=1, rel=releases.release("0.5.7"))
    assert (tokens, terms.host_tokens) == (25169, 25169 * 4 + 1)
    assert terms.staging_gpu_bytes_per_rank == 0  # 0.5.7 makes no write-back staging (from 0.5.14: after_pool.py)
    assert f"{terms.host_bytes / 1e9:.2f}" == logged == "11.55"


# --- TensorRT-LLM paste forms and figures --------------------------------------------------------------------------


def test_trtllm_consistency_and_given_pool_on_an_engine_run():
    """shaamil101, 8 x H100, Llama-3.1-70B, TensorRT engine: 85,336 primary blocks x 32 tokens = 2,730,752; the
    benchmark summary says "KV Cache Dtype: FP8", so 80 layers x 8 / 8 KV heads x 128 x 2 (K, V) x 1 byte = 20,480 B
    a token: 2,730,752 x 20,480 B = 52.08 GiB, as logged."""
    log = raw_files("trtllm_logs", TRT["shaamil101-llama31-70b-fp8-8xh100-tp8-engine-v0.16"])[0]
    f = parse_trtllm_log(log.read_text(encoding="utf-8"))
    assert f.primary_blocks * f.tokens_per_block == f.pool_tokens == 2730752
    assert (f.tp_size, f.tp_source, f.backend) == (8, "benchmark summary", "tensorrt")
    r = calibrate_path(log, model=str(DATA / "hf_configs" / "llama-3.1-70b.json"))
    by = {x.name: x for x in r.figures}
    assert by["pool tokens (primary blocks x tokens per block)"].match is True
    pool = by["pool memory (logged tokens x bytes per token)"]
    assert pool.logged == "52.08" and pool.predicted == f"{2730752 * 80 * 1 * 128 * 2 * 1 / GIB:.2f}" == "52.08"
    # the engine backend of 0.16 (kvplan/engines/trtllm/releases.py 0.12-0.17), TP and KV dtype all stated; the
    # total the runtime prints (79.10 GiB) fits both H100s of the catalog, so the modelled pool rests on an assumed
    # GPU and the log cannot be judged as a whole, whatever that figure says
    assert not r.assumed and r.rules == "0.12-0.17 tensorrt"
    modelled = by["KV pool memory (modelled)"]
    assert modelled.assumed and modelled.assumed[0].startswith("GPU h100")
    assert r.status == (CANNOT_JUDGE if modelled.match is False else MATCH)


def test_trtllm_pytorch_backend_budget_lines():
    log = raw_files("trtllm_logs", TRT["waynehacking8-llama31-8b-fp8-h100-tp1-kv090-v0.20"])[0]
    f = parse_trtllm_log(log.read_text(encoding="utf-8"))
    assert f.backend == "pytorch" and f.version == "0.20.0" and (f.tp_size, f.kv_dtype) == (1, "FP8")
    assert (f.warmup_pool_tokens, f.pool_tokens, f.pool_gib) == (9216, 1002304, Decimal("61.18"))
    assert (f.kv_budget_gib, f.estimated_max_tokens, f.free_fraction) == (Decimal("61.17"), 1002276,
                                                                         "0.8999999761581421")
    assert (f.activation_gib, f.outside_torch_gib) == (Decimal("1.05"), Decimal("2.17"))
    # Llama-3.1-8B, fp8 KV: 32 layers x 8 KV heads x 128 x 2 (K, V) x 1 byte = 65,536 B a token for both the pool and
    # the estimator (T2 = T3 at TP 1): 61.17 GiB (+-0.005) / 65,536 B holds the logged 1,002,276
    r = calibrate_path(log, model=str(DATA / "vllm_models" / "meta-llama--Llama-3.1-8B-Instruct"))
    by = {x.name: x for x in r.figures}
    est = by["estimated max tokens (logged budget / estimator bytes per token)"]
    lo, hi = int(Decimal("61.165") * GIB) // 65536, int(Decimal("61.175") * GIB) // 65536
    assert est.predicted == f"{lo:,}–{hi:,}" and est.match is True
    assert by["pool memory (logged tokens x bytes per token)"].predicted == f"{1002304 * 65536 / GIB:.2f}" == "61.18"
    assert r.status == MATCH and r.rules == "0.19-0.21 pytorch"  # the release line kvplan mirrors for 0.20


def test_trtllm_old_runtime_lines():
    f = parse_trtllm_log(raw_files("trtllm_logs", TRT["trtllm-1400-smoothquant-7b-a100-v0.8"])[0].read_text())
    assert (f.kv_cache_bytes, f.using_tokens) == (69524783104, 132608)
    assert f.kv_cache_bytes // f.using_tokens == 32 * 4096 * 2 * 2  # Llama-2-7B's bytes a token in fp16, TP 1
    g = parse_trtllm_log(raw_files("trtllm_logs", TRT["trtllm-2268-qwen15-7b-40gb-v0.13dev"])[0].read_text())
    assert (g.total_gib, g.available_gib, g.primary_blocks) == (Decimal("39.39"), Decimal("21.89"), 631)


def test_a_log_without_kv_lines_cannot_be_judged():
    log = raw_files("trtllm_logs", TRT["trtllm-2683-deepseek-v3-int4wo-8xh20-tp8"])[0]
    r = calibrate_path(log)
    assert r.status == CANNOT_JUDGE and not r.figures
