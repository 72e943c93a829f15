"""kvplan.engines.vllm.log against the 42 real vLLM 0.19.0 start-up logs in tests/data/vllm_logs.

The logs come from llm-d-incubation/llm-d-planner PR 205 (see tests/data/vllm_logs/README.md);
index.jsonl copies their key lines verbatim, and the tests check the parser against those lines with
independent, deliberately simple regexes.
"""

from __future__ import annotations

import ast
import json
import random
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from kvplan.engines.vllm.log import (
    GIB,
    VllmLogFigures,
    gib_bounds,
    parse_vllm_log,
    parse_vllm_log_file,
    vllm_format_gib,
)

DATA = Path(__file__).parent / "data" / "vllm_logs"
RAW = DATA / "raw"
INDEX = [json.loads(line) for line in (DATA / "index.jsonl").read_text().splitlines() if line.strip()]
LOG_FILES = sorted(RAW.glob("*.log"))
BLOCK = 16  # vLLM 0.19 CacheConfig.DEFAULT_BLOCK_SIZE; no log changed it


def _file_of(rec: dict) -> Path:
    return RAW / rec["url"].rsplit("/", 1)[1]


_parsed: dict[Path, VllmLogFigures] = {}


def parsed(path: Path) -> VllmLogFigures:
    if path not in _parsed:
        _parsed[path] = parse_vllm_log_file(path)
    return _parsed[path]


def test_fixture_is_complete():
    assert len(LOG_FILES) == 42
    assert len(INDEX) == 42
    assert {_file_of(r) for r in INDEX} == set(LOG_FILES)


@pytest.mark.parametrize("path", LOG_FILES, ids=lambda p: p.stem)
def test_every_log_parses_completely(path):
    f = parsed(path)
    for name in (
        "vllm_version", "model", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len",
        "gpu_memory_utilization", "kv_cache_dtype", "dtype", "enable_prefix_caching",
        "max_num_batched_tokens", "max_num_seqs", "total_memory_gib", "requested_memory_gib",
        "weights_gib", "activation_peak_gib", "non_torch_gib", "total_non_kv_gib", "cuda_graph_gib",
        "cuda_graph_actual_gib", "available_kv_gib", "kv_cache_tokens", "max_concurrency",
        "max_concurrency_tokens", "num_gpu_blocks", "non_default_args",
    ):
        assert getattr(f, name) is not None, name
    assert f.vllm_version == "0.19.0"
    assert len(f.workers) == f.tensor_parallel_size * f.pipeline_parallel_size
    assert f.max_concurrency_tokens == f.max_model_len
    # every worker logged its whole profile
    for w in f.workers:
        assert None not in (w.total_memory_gib, w.activation_peak_gib, w.non_torch_gib,
                            w.total_non_kv_gib, w.available_kv_gib, w.kv_cache_memory_to_requested_bytes)


def _number(line: str, pattern: str) -> str:
    m = re.search(pattern, line)
    assert m, (pattern, line)
    return m.group(1)


@pytest.mark.parametrize("rec", INDEX, ids=lambda r: r["id"])
def test_figures_equal_the_index(rec):
    text = _file_of(rec).read_text(encoding="utf-8")
    for lines in rec["verbatim"].values():
        for line in lines:
            assert line in text  # the index quotes the raw log

    f = parsed(_file_of(rec))
    v = rec["verbatim"]
    assert f.vllm_version == rec["vllm_version"]
    assert _number(v["version_banner"][0], r"version (\S+)") == f.vllm_version
    assert f.model == rec["model_id"]
    assert f.tensor_parallel_size == rec["tensor_parallel_size"]
    assert f.pipeline_parallel_size == rec["pipeline_parallel_size"]
    assert f.gpu_memory_utilization == rec["gpu_memory_utilization"]
    assert f.max_model_len == rec["max_model_len"]
    assert f.kv_cache_dtype == rec["kv_cache_dtype"]
    assert f.dtype == rec["dtype"]
    assert f.quantization == (None if rec["quantization"] == "None" else rec["quantization"])
    assert f.enable_prefix_caching == rec["enable_prefix_caching"]
    assert f.block_size == rec["block_size"]  # null in the index: never printed

    assert f.non_default_args == ast.literal_eval(_number(v["non_default_args"][0], r"non-default args: (\{.*\})"))
    assert f.total_memory_gib == Decimal(_number(v["memory_snapshot"][0], r"total_memory=([\d.]+)GiB"))
    assert f.weights_gib == Decimal(_number(v["model_loading"][0], r"took ([\d.]+) GiB"))
    assert f.available_kv_gib == Decimal(_number(v["available_kv"][0], r"memory: ([\d.]+) GiB"))
    assert f.kv_cache_tokens == int(_number(v["kv_cache_size"][0], r"size: ([\d,]+) tokens").replace(",", ""))
    conc = v["max_concurrency"][0]
    assert f.max_concurrency_tokens == int(_number(conc, r"for ([\d,]+) tokens").replace(",", ""))
    assert f.max_concurrency == float(_number(conc, r": ([\d.]+)x$"))
    assert f.num_gpu_blocks == int(_number(v["num_gpu_blocks"][0], r"is: (\d+)"))
    assert (f.padding_layers is not None) == ("padding_warning" in v)


# --- tokens vs blocks -----------------------------------------------------------------------------
# vLLM 0.19 logs "GPU KV cache size" as num_blocks // len(kv_cache_groups) * block_size
# (v1/core/kv_cache_utils.py:_report_kv_cache_config). Uniform models have one group, so the figure
# is num_gpu_blocks x 16. Models mixing sliding-window and full attention get one group per
# `group_size` layers of each type (kv_cache_utils.py:_get_kv_cache_groups_uniform_page_size:
# group_size = the smaller type's layer count, or the larger one when larger < 1.5 x smaller),
# all groups drawing from one block pool, so the printed token count is divided by the group count.
# Layer counts from each model's config.json (text_config for Gemma-3); layer_types / the
# sliding_window_pattern give the split.
HYBRID = {
    # model: (sliding layers, full layers, window)
    "google/gemma-2-2b-it": (13, 13, 4096),  # 26 layers, alternating
    "google/gemma-2-27b-it": (23, 23, 4096),  # 46 layers, alternating
    "google/gemma-3-4b-it": (29, 5, 1024),  # 34 layers, 5 sliding : 1 full
    "google/gemma-3-12b-it": (40, 8, 1024),  # 48 layers, 5 sliding : 1 full
}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _groups(sliding: int, full: int) -> tuple[int, int, int]:
    """(sliding groups, full groups, padding layers) by vLLM 0.19's grouping rule."""
    lo, hi = sorted((sliding, full))
    size = hi if hi < 1.5 * lo else lo
    n_sw, n_full = _cdiv(sliding, size), _cdiv(full, size)
    return n_sw, n_full, (n_sw * size - sliding) + (n_full * size - full)


def test_tokens_are_blocks_times_16_except_the_hybrid_sliding_window_models():
    differ = {rec["model_id"] for rec in INDEX
              if parsed(_file_of(rec)).kv_cache_tokens != parsed(_file_of(rec)).num_gpu_blocks * BLOCK}
    assert differ == set(HYBRID)


@pytest.mark.parametrize("rec", INDEX, ids=lambda r: r["id"])
def test_tokens_and_concurrency_follow_the_group_rules(rec):
    f = parsed(_file_of(rec))
    m, mnbt = f.max_model_len, f.max_num_batched_tokens
    full_blocks = _cdiv(m, BLOCK)  # FullAttentionSpec.max_memory_usage_bytes / page
    if rec["model_id"] in HYBRID:
        sliding, full, window = HYBRID[rec["model_id"]]
        n_sw, n_full, padding = _groups(sliding, full)
        groups = n_sw + n_full
        # SlidingWindowSpec.max_memory_usage_bytes: cdiv(min(W - 1 + mnbt, M), block) + 1 blocks
        per_request = n_full * full_blocks + n_sw * (_cdiv(min(window - 1 + mnbt, m), BLOCK) + 1)
        assert (f.padding_layers or 0) == padding
    else:
        groups, per_request = 1, full_blocks
    assert f.kv_cache_tokens == f.num_gpu_blocks // groups * BLOCK
    # get_max_concurrency_for_kv_cache_config: num_blocks / blocks one max-length request needs
    assert f"{f.num_gpu_blocks / per_request:.2f}" == f"{f.max_concurrency:.2f}"


# --- budget identity ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", LOG_FILES, ids=lambda p: p.stem)
def test_budget_identity_of_vllm_0_19(path):
    """available = ceil(total x util) - weights - peak - non_torch; the CUDA-graph estimate is NOT
    subtracted in 0.19.0 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 0). Each printed
    figure is rounded to 0.01 GiB, so the identity holds to +-0.02 GiB on the printed values."""
    f = parsed(path)
    assert f.requested_memory_gib == (f.total_memory_gib * Decimal(str(f.gpu_memory_utilization))).quantize(
        Decimal("0.01"))
    for w in f.workers:
        assert abs(w.total_non_kv_gib - (w.weights_gib + w.activation_peak_gib + w.non_torch_gib)) <= Decimal("0.015")
        residual = w.available_kv_gib - (w.requested_memory_gib - w.total_non_kv_gib)
        assert abs(residual) <= Decimal("0.01")
        # had 0.19 subtracted the graph estimate (0.49-1.92 GiB here), available would be that much lower
        if_graphs_subtracted = w.requested_memory_gib - w.total_non_kv_gib - w.cuda_graph_estimate_gib
        assert w.available_kv_gib - if_graphs_subtracted > Decimal("0.45")


def test_pipeline_parallel_pool_is_sized_by_the_worker_with_least_memory():
    """get_kv_cache_configs takes the minimum block count over workers: with PP=4 the last stage
    (logits + sampler in its profile) has the least memory, not the rank-0 worker that prints
    "Available KV cache memory"."""
    f = parsed(RAW / "meta-llama-llama-3-1-8b---h100-80gb--tp1pp4dp1--8192.log")
    assert f.available_kv_gib == Decimal("69.8")  # what rank 0 (PP0) printed
    w = f.binding_worker()
    assert w.name == "Worker_PP3" and w.available_kv_gib == Decimal("68.89")
    # Llama-3.1-8B: 32 layers / 4 stages = 8 per stage; 8 KV heads x 128 x 2 (K, V) x 2 bytes x 16 tokens
    bytes_per_block = 8 * 16 * 8 * 128 * 2 * 2
    lo, hi = gib_bounds(w.available_kv_gib)
    assert lo // bytes_per_block <= f.num_gpu_blocks <= (hi - 1) // bytes_per_block
    lo0, _ = gib_bounds(f.available_kv_gib)
    assert lo0 // bytes_per_block > f.num_gpu_blocks  # rank 0 alone would have given more blocks


def test_the_advice_line_gives_exact_bytes():
    """The DEBUG advice line prints two byte-exact suggestions; their difference is exactly
    init free memory - requested memory (gpu_worker.py:compile_or_warm_up_model)."""
    f = parsed(RAW / "codellama-codellama-7b-h--h100-80gb--tp1pp1dp1--8192.log")
    (w,) = f.workers
    assert w.kv_cache_memory_to_requested_bytes == 65088610304
    assert w.kv_cache_memory_to_gpu_bytes == 68789657600
    gap = w.kv_cache_memory_to_gpu_bytes - w.kv_cache_memory_to_requested_bytes
    assert vllm_format_gib(gap) == f"{Decimal('78.68') - Decimal('75.23')}"  # init free - requested


# --- GiB rounding ---------------------------------------------------------------------------------


def test_gib_bounds_agree_with_vllm_rounding_at_every_edge():
    rng = random.Random(1234)
    values = ["0.0", "0.01", "0.12", "0.13", "0.37", "0.38", "0.62", "0.88", "12.56", "61.66", "79.19", "-0.01"]
    values += [f"{rng.randrange(0, 8000) / 100:.2f}" for _ in range(200)]
    for text in values:
        lo, hi = gib_bounds(text)
        assert lo < hi
        want = str(float(Decimal(text)))  # how str(round(x, 2)) spells it: "61.66", "42.8", "0.0"
        for b in (lo, lo + 1, hi - 1, (lo + hi) // 2):
            assert vllm_format_gib(b) == want, (text, b)
        for b in (lo - 1, hi):
            assert vllm_format_gib(b) != want, (text, b)


def test_gib_bounds_ties_round_half_even():
    # 0.125 GiB = 2**27 bytes exactly: round(0.125, 2) == 0.12; 0.375 GiB rounds up to 0.38
    assert vllm_format_gib(2**27) == "0.12"
    assert gib_bounds("0.12")[1] == 2**27 + 1
    assert gib_bounds("0.13")[0] == 2**27 + 1
    assert vllm_format_gib(3 * 2**27) == "0.38"
    assert gib_bounds("0.38")[0] == 3 * 2**27
    assert gib_bounds("0.0") == (0, gib_bounds("0.01")[0])
    assert gib_bounds("-0.0")[1] == 0
    assert gib_bounds(Decimal("61.66")) == gib_bounds("61.66")
    lo, hi = gib_bounds("61.66")
    assert lo == -(-(12331 * GIB) // 200) and hi - lo in (GIB // 100, GIB // 100 + 1)
    # V0 prints its weights with "%.4f" (worker/model_runner.py "Loading model weights took 14.9888 GB"): a
    # value with more than two decimals stands for its own, narrower interval
    lo, hi = gib_bounds("14.9888")
    for b in (lo, hi - 1):
        assert f"{b / GIB:.4f}" == "14.9888"
    for b in (lo - 1, hi):
        assert f"{b / GIB:.4f}" != "14.9888"


# --- inputs that are not 0.19 logs ---------------------------------------------------------------


def test_a_vllm_0_33_style_log():
    """0.33 prints capacity on one line and 'total consumed' instead of the non-torch term
    (v1/core/kv_cache_utils.py:update_kv_cache_capacity, utils/mem_utils.py:MemoryProfilingResult)."""
    text = "\n".join([
        "(EngineCore pid=7) INFO 05-01 10:00:00 [v1/engine/core.py:140] Initializing a V1 LLM engine (v0.33.0) "
        "with config: model='Qwen/Qwen3-8B', speculative_config=None, dtype=torch.bfloat16, max_seq_len=40960, "
        "tensor_parallel_size=1, pipeline_parallel_size=1, quantization=None, enforce_eager=False, "
        "kv_cache_dtype=fp8, enable_prefix_caching=True, enable_chunked_prefill=True",
        "(EngineCore pid=7) DEBUG 05-01 10:00:01 [v1/worker/gpu_worker.py:545] worker init memory snapshot: "
        "torch_peak=0.0GiB, free_memory=139.1GiB, total_memory=139.8GiB, cuda_memory=0.7GiB, "
        "torch_memory=0.0GiB, non_torch_memory=0.7GiB, timestamp=1.0, auto_measure=True",
        "(EngineCore pid=7) DEBUG 05-01 10:00:01 [v1/worker/gpu_worker.py:547] worker requested memory: 128.62GiB",
        "(EngineCore pid=7) INFO 05-01 10:00:09 [v1/worker/gpu_model_runner.py:5089] Model loading took 15.27 GiB "
        "memory and 8.000000 seconds",
        "(EngineCore pid=7) DEBUG 05-01 10:00:20 [v1/worker/gpu_worker.py:780] Memory profiling takes 9.10 seconds. "
        "Total non KV cache memory: 18.4GiB; torch peak memory increase: 2.2GiB; total consumed (from "
        "mem_get_info): 16.1GiB; weights memory: 15.27GiB.",
        "(EngineCore pid=7) INFO 05-01 10:00:20 [v1/worker/gpu_model_runner.py:6410] Estimated CUDA graph memory: "
        "0.85 GiB total",
        "(EngineCore pid=7) INFO 05-01 10:00:20 [v1/worker/gpu_worker.py:790] Available KV cache memory: 109.37 GiB",
        "(EngineCore pid=7) INFO 05-01 10:00:21 [v1/core/kv_cache_utils.py:1147] GPU KV cache size: 1,592,770 "
        "tokens, Maximum concurrency for 40,960 tokens per request: 38.89x",
    ])
    f = parse_vllm_log(text)
    assert f.vllm_version == "0.33.0"
    assert (f.model, f.max_model_len) == ("Qwen/Qwen3-8B", 40960)
    assert (f.kv_cache_dtype, f.enable_prefix_caching) == ("fp8", True)
    assert f.quantization is None and f.non_default_args is None and f.gpu_memory_utilization is None
    assert f.total_consumed_gib == Decimal("16.1") and f.non_torch_gib is None
    assert f.activation_peak_gib == Decimal("2.2") and f.cuda_graph_gib == Decimal("0.85")
    assert (f.kv_cache_tokens, f.max_concurrency_tokens, f.max_concurrency) == (1592770, 40960, 38.89)


def test_coloured_output_is_read():
    text = ("\x1b[1;36m(EngineCore pid=9)\x1b[0;0m \x1b[32mINFO\x1b[0m 05-01 10:00:20 [v1/worker/gpu_worker.py:436] "
            "Available KV cache memory: 61.66 GiB\n")
    assert parse_vllm_log(text).available_kv_gib == Decimal("61.66")


def test_the_does_not_fit_error_is_read():
    text = (
        "INFO 05-01 10:00:00 [entrypoints/utils.py:299] vLLM API server version 0.19.0\n"
        "ERROR 05-01 10:00:30 [v1/engine/core.py:900] ValueError: To serve at least one request with the "
        "models's max seq len (131072), (16.0 GiB KV cache is needed, which is larger than the available KV "
        "cache memory (9.5 GiB). Based on the available memory, the estimated maximum model length is 77808. "
        "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
    )
    f = parse_vllm_log(text)
    assert f.vllm_version == "0.19.0"
    assert f.needed_kv_gib == Decimal("16.0") and f.estimated_max_model_len == 77808


@pytest.mark.parametrize("content", [
    "", "hello world\n", "INFO this is some other program\n", "\x00\x01\x02 binary junk \xff",
    "(Worker pid=3) INFO 01-01 00:00:00 [x.py:1] something unrelated\n",
])
def test_garbage_raises_value_error(tmp_path, content):
    p = tmp_path / "not-vllm.log"
    p.write_text(content, encoding="utf-8", errors="surrogateescape")
    with pytest.raises(ValueError, match="not a vLLM start-up log") as exc:
        parse_vllm_log_file(p)
    assert "not-vllm.log" in str(exc.value)


def test_missing_file_raises_value_error(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        parse_vllm_log_file(tmp_path / "absent.log")


def test_parser_imports_only_the_standard_library():
    code = ("import sys, kvplan.engines.vllm.log; "
            "bad = {'typer', 'rich', 'yaml', 'torch'} & {m.split('.')[0] for m in sys.modules}; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[1])


def test_figures_are_frozen():
    f = parsed(LOG_FILES[0])
    with pytest.raises(AttributeError):
        f.num_gpu_blocks = 1  # type: ignore[misc]


def _gated_patterns():
    from kvplan.engines.logtext import Needs
    from kvplan.engines.vllm import log

    found = {name: value for name, value in vars(log).items() if isinstance(value, Needs)}
    found.update({f"_V0_TABLE[{key}]": value for key, value in log._V0_TABLE.items()})
    return found


def test_a_gated_pattern_never_matches_a_line_without_its_literal():
    """logtext.Needs skips a pattern on lines without its literal: over every line of every vLLM log in tests/data,
    the pattern alone finds nothing the gate skipped, and the literal is written in the pattern itself."""
    from kvplan.engines.logtext import lines

    gated = _gated_patterns()
    assert {"_COMMAND", "_LOADING", "_DEVICE_BLOCKS", "_WORLD_SIZE", "_V0_TABLE[available]"} <= set(gated)
    texts = [p.read_text(errors="replace") for p in sorted((DATA.parent).rglob("*.log"))]
    assert len(texts) > 150
    hits = dict.fromkeys(gated, 0)
    for text in texts:
        for rec in lines(text):
            for name, needs in gated.items():
                if needs.pattern.search(rec.text):
                    assert needs.literal in rec.text, (name, rec.text)
                    hits[name] += 1
    for name, needs in gated.items():
        assert needs.literal.replace(" ", "") in needs.pattern.pattern.replace("\\s*", "").replace(" ", ""), name
    # the corpus exercises the gates it tests (the V0 table form is rare: one paste holds it)
    assert all(hits[name] for name in ("_COMMAND", "_LOADING", "_DEVICE_BLOCKS", "_WORLD_SIZE")), hits
