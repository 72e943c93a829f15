"""The serving-time model (kvplan/analysis/serving.py): its floors against hand arithmetic, and the estimates' shape
(linear in the factors, monotone in the batch, Little's law)."""

from __future__ import annotations

import pytest

from kvplan.analysis import serving
from kvplan.core.cache import CacheModel
from kvplan.core.dtypes import dtype
from kvplan.model import catalog
from kvplan.model.efficiency import Factors, factors_for

H100 = catalog.find_gpu("h100-sxm-80gb")
SPEC = catalog.resolve_model("llama-3.1-8b")
WEIGHTS = 16_060_522_496  # bf16: 8,030,261,248 parameters x 2 bytes (docs/latency.md's worked example)


def replica(tp=1, pp=1, link=None, kv="bf16"):
    return serving.Replica(CacheModel(SPEC, dtype(kv), tp, pp), WEIGHTS, "bf16", H100.bf16_dense_flops,
                           H100.hbm_bandwidth_bytes_per_s, link)


def test_decode_floor_is_docs_worked_example():
    # docs/latency.md: one decode step at 2,047 cached tokens reads 16,060,522,496 + 131,072 x 2,047 B
    # = 16,328,826,880 B, / 3.35e12 B/s = 4.87 ms (memory-bound)
    f = replica().decode_floor(1, 2047)
    assert f.memory_s == pytest.approx(16_328_826_880 / 3.35e12)
    assert f.bound == "memory" and f.comm_s == 0
    assert round(f.seconds * 1e3, 2) == 4.87


def test_prefill_floor_is_docs_worked_example():
    # docs/latency.md: prefill of 1,024 tokens = 16,721,121,378,304 FLOPs / 989e12 = 16.91 ms (compute-bound)
    f = replica().prefill_floor(1024)
    assert f.compute_s == pytest.approx(16_721_121_378_304 / 989e12)
    assert f.bound == "compute"


def test_batch_reads_weights_once_and_every_sequence_cache():
    # 225 sequences at 2,047: 16,060,522,496 + 225 x 131,072 x 2,047 B (docs/latency.md: 22.81 ms)
    f = replica().decode_floor(225, 2047)
    assert f.memory_s == pytest.approx((16_060_522_496 + 225 * 131_072 * 2047) / 3.35e12)
    assert round(f.seconds * 1e3, 2) == 22.81


def test_tensor_parallel_allreduce_by_hand():
    # Llama-3.1-8B: 32 layers, hidden 4096. TP 4 over 450 GB/s per direction: per token
    # 2 all-reduces x 32 layers x 4096 x 2 B x 2 x 3/4 / 450e9 s
    r = replica(tp=4, link=450_000_000_000)
    per_token = 2 * 32 * 4096 * 2 * 2 * 3 / 4 / 450e9
    f = r.decode_floor(8, 1000)
    assert f.comm_s == pytest.approx(8 * per_token)
    assert f.memory_s == pytest.approx((WEIGHTS + 8 * 131_072 * 1000) / (4 * 3.35e12))
    assert replica(tp=4, link=None).decode_floor(8, 1000).comm_s == 0  # an unknown link is not timed


def test_pipeline_runs_micro_batches_on_the_whole_model():
    # PP 2: 16 sequences decode as micro-batches of 8 through both stages; each stage reads half the weights
    f2 = replica(pp=2).decode_floor(16, 500)
    f1 = replica().decode_floor(8, 500)
    assert f2.memory_s == pytest.approx(f1.memory_s) and f2.compute_s == pytest.approx(f1.compute_s)


def test_moe_reads_more_experts_with_the_batch():
    moe = catalog.resolve_model("mixtral-8x7b")
    weights = 2 * moe.params
    r = serving.Replica(CacheModel(moe, dtype("bf16")), weights, "bf16", H100.bf16_dense_flops,
                        H100.hbm_bandwidth_bytes_per_s, None)
    active = -(-weights * moe.active_params // moe.params)
    assert r.weights_read(1) == active
    assert r.weights_read(2) == 2 * active
    assert r.weights_read(64) == weights  # every expert read at a large batch


FACTORS = Factors(prefill=1.5, decode=2.0, step_s=0.004, sequence_step_s=1e-5, band_low=0.8, band_high=1.3,
                  basis="test", measured=True)


def test_tpot_is_the_fitted_linear_form():
    r = replica()
    t = serving.tpot(r, FACTORS, batch=32, prompt=1000, output=400)
    step = r.decode_floor(32, 1000 + 200).seconds
    prefills = r.prefill_floor(1000, 32).seconds
    assert t.seconds == pytest.approx(2.0 * step + 0.004 + 1e-5 * 32 + 1.5 * prefills / 400)
    assert (t.low_s, t.high_s) == pytest.approx((0.8 * t.seconds, 1.3 * t.seconds))
    assert t.floor_s == pytest.approx(step)


def test_ttft_waits_one_decode_step():
    r = replica()
    alone = serving.ttft(r, FACTORS, prompt=2000, batch=0, context=0)
    busy = serving.ttft(r, FACTORS, prompt=2000, batch=64, context=3000)
    assert alone.seconds == pytest.approx(1.5 * r.prefill_floor(2000).seconds + 0.004)
    assert busy.seconds - alone.seconds == pytest.approx(2.0 * r.decode_floor(64, 3000).seconds + 0.004 + 64e-5)
    assert busy.floor_s == alone.floor_s  # the floor is the prefill alone


def test_littles_law():
    r = replica()
    op = serving.operating_point(r, FACTORS, batch=48, prompt=800, output=300)
    assert op.requests_per_s == pytest.approx(48 / (op.ttft.seconds + 299 * op.tpot.seconds))
    assert op.output_tokens_per_s == pytest.approx(op.requests_per_s * 300)


def test_largest_batch_meets_the_target_and_one_more_does_not():
    r = replica()
    target = 0.030
    b = serving.largest_batch(r, FACTORS, limit=4096, prompt=500, output=500, tpot_target_s=target)
    assert 1 <= b < 4096
    assert serving.tpot(r, FACTORS, batch=b, prompt=500, output=500).seconds <= target
    assert serving.tpot(r, FACTORS, batch=b + 1, prompt=500, output=500).seconds > target
    assert serving.largest_batch(r, FACTORS, limit=100, prompt=500, output=500, tpot_target_s=None) == 100
    assert serving.largest_batch(r, FACTORS, limit=100, prompt=500, output=500, tpot_target_s=1e-4) == 0


def test_meets_states():
    e = serving.Estimate(seconds=0.010, low_s=0.008, high_s=0.013, floor_s=0.004)
    assert [e.meets(t) for t in (0.020, 0.011, 0.005, 0.003, None)] == ["yes", "band", "estimate", "floor", None]


def test_fp8_weights_use_the_fp8_peak_where_the_gpu_has_one():
    assert serving.peak_flops(H100, "fp8_e4m3") == H100.fp8_dense_flops
    a100 = catalog.find_gpu("a100-80gb")
    assert a100.fp8_dense_flops is None and serving.peak_flops(a100, "fp8_e4m3") == a100.bf16_dense_flops


def test_factors_fall_back_to_the_architecture_then_all_gpus():
    measured = factors_for("h100-sxm-80gb", "hopper")
    assert measured.measured and measured.basis.startswith("h100-sxm-80gb")
    b200 = factors_for("b200-180gb", "blackwell")  # no Blackwell measurement: every GPU's factors
    assert not b200.measured and "all GPUs" in b200.basis
    h100_pcie = factors_for("h100-pcie-80gb", "hopper")  # no H100 PCIe measurement: Hopper's
    assert not h100_pcie.measured and "hopper" in h100_pcie.basis


def test_prefills_at_a_percentile_is_the_compound_poisson_normal_quantile():
    # hand arithmetic: 100 + ceil(2.3263 x sqrt(100 x 1)) = 100 + 24; 64 + ceil(1.6449 x sqrt(64 x 2)) = 64 + ceil(18.61)
    assert serving.prefills_at(100, 2.3263, 1.0) == 124
    assert serving.prefills_at(64, 1.6449, 2.0) == 83
    assert serving.prefills_at(64, 0.0, 2.0) == 64  # P50: the mean, tpot's default
    r = replica()
    mean = serving.tpot(r, FACTORS, batch=32, prompt=1000, output=400)
    p99 = serving.tpot(r, FACTORS, batch=32, prompt=1000, output=400, prefills=serving.prefills_at(32, 2.3263, 1.0))
    assert p99.seconds > mean.seconds and p99.floor_s == mean.floor_s  # only the prefill share grows
