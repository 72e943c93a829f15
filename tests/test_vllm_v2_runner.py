"""vLLM's V2 model runner (0.28+) and torch.compile's cache in the budget (kvplan/engines/vllm/budget.py, releases.py,
engine.py): which runner a launch gets (config/vllm.py VllmConfig.use_v2_model_runner, 0.28.0 and 0.29.0-0.33.0),
its sampler warm-up by hand from v1/worker/gpu/sample/*.py, and the cold-cache term as an open term of the band."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path

import pytest

from kvplan.core.errors import UnsupportedError
from kvplan.engines.vllm import budget, releases
from kvplan.engines.vllm.engine import budget_edges, budgets_for, open_terms, release_for

from engine_requests import engine_request

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "tests" / "data" / "hf_configs"
QWEN3_4B = ROOT / "tests" / "data" / "public_models" / "Qwen--Qwen3-4B-Instruct-2507" / "config.json"
GIB = 2**30


def _req(model, version, options=None, gpu="h100-sxm-80gb", **kw):
    return engine_request(model, 8192, gpu=gpu, engine_version=version, engine_options=options, **kw)


@pytest.mark.parametrize(("model", "version", "runner"), [
    ("llama-3.1-8b.json", "0.27.1", releases.RUNNER_V1),  # before 0.28: the V1 runner only
    ("llama-3.1-8b.json", "0.28.0", releases.RUNNER_V2),  # 0.28: dense, not hybrid
    ("mixtral-8x7b-v0.1.json", "0.28.0", releases.RUNNER_V1),  # 0.28: a MoE outside DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
    ("qwen3-next-80b-a3b-thinking.json", "0.28.0", releases.RUNNER_V1),  # 0.28: a hybrid
    ("mixtral-8x7b-v0.1.json", "0.29.0", releases.RUNNER_V2),  # 0.29+: every model
    ("qwen3-next-80b-a3b-thinking.json", "0.33.0", releases.RUNNER_V2),
])
def test_the_runner_each_release_gives_a_model(model, version, runner):
    assert release_for(_req(CONFIGS / model, version)).model_runner == runner


def test_the_environment_variable_chooses_the_runner_from_0_28():
    llama = CONFIGS / "llama-3.1-8b.json"
    assert release_for(_req(llama, "0.33.0", (("vllm_use_v2_model_runner", "0"),))).model_runner == releases.RUNNER_V1
    assert release_for(_req(CONFIGS / "mixtral-8x7b-v0.1.json", "0.28.0",
                            (("vllm_use_v2_model_runner", "1"),))).model_runner == releases.RUNNER_V2
    with pytest.raises(UnsupportedError, match="V2 model runner"):  # not read before 0.28: refused, not guessed
        release_for(_req(llama, "0.27.1", (("vllm_use_v2_model_runner", "1"),)))


def test_the_v2_sampler_warm_up_by_hand():
    """Qwen3-4B on a 16 GiB card (the small tier: 2048 tokens, 256 sequences): 256 dummy requests of 151936 bf16
    logits, plus gumbel_sample's int64 index and float32 maximum per request and 1024-logit block (149 blocks); the
    V1 runner's FlashInfer warm-up adds 12 B a logit of float32 work (releases.SAMPLER_FLASHINFER)."""
    v2 = budgets_for(_req(QWEN3_4B, "0.29.0", (("compile_cache", "warm"),), gpu="rtx-5060-ti-16gb"))[0]
    assert v2.sampler_bytes == 256 * 151936 * 2 + 256 * 149 * 12
    v1 = budgets_for(_req(QWEN3_4B, "0.29.0", (("compile_cache", "warm"), ("vllm_use_v2_model_runner", "0")),
                          gpu="rtx-5060-ti-16gb"))[0]
    assert v1.sampler_bytes == 256 * 151936 * (2 + 12)


def test_the_v2_graph_estimate_is_half_the_v1_fit():
    """budget.V2_GRAPH_CENTRE: the middle of what the source leaves (about nothing to the V1 runner's extrapolation)."""
    options = (("compile_cache", "warm"),)
    v2 = budgets_for(_req(QWEN3_4B, "0.29.0", options, gpu="rtx-5060-ti-16gb"))[0]
    v1 = budgets_for(_req(QWEN3_4B, "0.29.0", options + (("vllm_use_v2_model_runner", "0"),), gpu="rtx-5060-ti-16gb"))[0]
    assert v1.cuda_graph_bytes == budget.cuda_graph_bytes(36, 51)  # 36 layers, capture sizes 1..512
    assert v2.cuda_graph_bytes == -(-v1.cuda_graph_bytes // 2)


def test_a_cold_compile_cache_costs_what_the_public_pair_shows():
    """0.53 GiB more consumed memory and 0.45 GiB more transient peak (search index id 68573043236), in the budget
    exactly; the band of a launch that does not say covers both states, and saying narrows it."""
    warm = _req(QWEN3_4B, "0.30.0", (("compile_cache", "warm"),), gpu="rtx-5060-ti-16gb")
    cold = dataclasses.replace(warm, engine_options=(("compile_cache", "cold"),))
    open_ = dataclasses.replace(warm, engine_options=None)
    w, c = budgets_for(warm)[0], budgets_for(cold)[0]
    assert w.available_bytes - c.available_bytes == round(0.53 * GIB + 0.45 * GIB)
    low_open, high_open = budget_edges(open_, budgets_for(open_))
    low_warm, high_warm = budget_edges(warm, budgets_for(warm))
    low_cold, _ = budget_edges(cold, budgets_for(cold))
    assert low_open[0] == low_cold[0] < low_warm[0] and high_open[0] == high_warm[0]


def test_the_public_rtx_5060_ti_pair_inside_the_band_with_nothing_given():
    """Freshair129/Private-Runtime-Platform: 0.29.0 cold logs 1.45 GiB, 0.30.0 warm (under Xinference: the engine's
    own 2048 / 256) 2.71 GiB (tests/data/vllm_logs_public); with no option given one band holds both."""
    for version, logged, extra in (("0.29.0", 1.45, {}), ("0.30.0", 2.71, {"max_num_seqs": 256})):
        req = _req(QWEN3_4B, version, None, gpu="rtx-5060-ti-16gb", gpu_util=Fraction(7, 10), **extra)
        low, high = budget_edges(req, budgets_for(req))
        assert low[0] <= logged * GIB <= high[0], version


def test_enforce_eager_has_no_compile_term():
    from kvplan.engines.features import Features
    eager = _req(QWEN3_4B, "0.29.0", None, gpu="rtx-5060-ti-16gb", features=Features(enforce_eager=True))
    assert not any("torch.compile" in t.why for t in open_terms(eager))
