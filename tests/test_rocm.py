"""vLLM and SGLang on ROCm (MI300X-class GPUs): the rules read from the engines' ROCm code paths, and the public
MI300X start-up log that prints vLLM's budget split (tests/data/vllm_logs_public idx-mi300x-gemma4-e2b-wrapped).

Sources read (pip download --no-deps vllm==X / sglang==X):
- vllm/v1/sample/ops/topk_topp_sampler.py TopKTopPSampler.__init__ (0.12.0, 0.19.0, 0.27.1, 0.33.0): FlashInfer's
  sampler only under current_platform.is_cuda(), which is False on ROCm; forward_native otherwise, whose
  apply_top_k_top_p sorts before 0.17 and runs the Triton kernel from 0.17 (>= 8 rows);
- vllm/v1/worker/gpu_worker.py determine_available_memory: 0.19.0 and 0.20.2 skip profile_cudagraph_memory on ROCm
  ("not current_platform.is_rocm()"), 0.26.0 includes it ("is_cuda_alike()", vllm#44825);
- vllm/platforms/rocm.py: block size 16 when not given (check_and_update_config, 0.10.2 / 0.14.1); from 0.19 the
  backend's preferred size, ROCM_ATTN first in _get_backend_priorities (0.19.0, 0.33.0), whose kernel takes 16
  (v1/attention/backends/rocm_attn.py get_supported_kernel_block_sizes); KV shape (2, blocks, block, heads, head)
  (rocm_attn.py get_kv_cache_shape, 0.33.0), the same bytes as CUDA's; fp8_dtype float8_e4m3fnuz on gfx94x
  (platforms/rocm.py fp8_dtype), one byte like e4m3fn.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from kvplan.engines import sglang, vllm
from kvplan.engines.vllm import budget, releases
from kvplan.engines.vllm.engine import budgets_for, release_for
from kvplan.engines.sglang.releases import release as sglang_release
from kvplan.engines.vllm.log import parse_vllm_log
from kvplan.model.catalog import find_gpu, resolve_model

from engine_requests import engine_request
from log_data import index, text

GIB = 2**30
MI300X_LOG = "idx-mi300x-gemma4-e2b-wrapped"


def _rel(version: str, gpu: str = "mi300x", **kw):
    return release_for(engine_request("llama-3.1-8b", gpu=gpu, engine_version=version, **kw))


@pytest.mark.parametrize("version, sampler", [
    ("0.10.2", releases.SAMPLER_SORT), ("0.14.1", releases.SAMPLER_SORT), ("0.17.1", releases.SAMPLER_TRITON),
    ("0.19.0", releases.SAMPLER_TRITON), ("0.21.0", releases.SAMPLER_TRITON), ("0.27.1", releases.SAMPLER_TRITON),
    ("0.33.0", releases.SAMPLER_TRITON)])
def test_rocm_never_takes_flashinfers_sampler(version, sampler):
    assert _rel(version).sampler == sampler
    # the variable is read inside the is_cuda() branch only: setting it on ROCm changes nothing
    assert _rel(version, engine_options=((releases.FLASHINFER_SAMPLER_OPTION, "1"),)).sampler == sampler
    assert not _rel(version).sampler_by_install
    # on an H100 the same 0.33 launch warms FlashInfer's sampler up (envs.py default True from 0.21)
    if version == "0.33.0":
        assert _rel(version, gpu="h100").sampler == releases.SAMPLER_FLASHINFER


@pytest.mark.parametrize("version, estimated", [
    ("0.14.1", False), ("0.19.0", False), ("0.20.2", False), ("0.25.0", False), ("0.26.0", True), ("0.33.0", True)])
def test_the_graph_estimate_on_rocm_starts_in_026(version, estimated):
    rel = _rel(version)
    assert (rel.cuda_graph_estimated, rel.cuda_graph_subtracted) == (estimated, estimated)
    b = budgets_for(engine_request("llama-3.1-8b", gpu="mi300x", engine_version=version))[0]
    assert (b.cuda_graph_bytes > 0) == estimated
    # on CUDA 0.20+ subtracts it (0.20.2 read)
    if version in ("0.20.2", "0.25.0"):
        assert _rel(version, gpu="h100").cuda_graph_subtracted


@pytest.mark.parametrize("version", ["0.10.2", "0.19.0", "0.33.0"])
def test_block_16_and_cudas_page_on_mi300x(version):
    r = vllm.estimate(engine_request("llama-3.1-8b", gpu="mi300x", engine_version=version, seq=4096, kv="fp8"))
    # Llama-3.1-8B: 32 layers, 8 KV heads of 128; K and V; fp8 (e4m3fnuz) one byte
    assert r.block_size == 16 and r.bytes_per_block == 32 * 16 * 8 * 128 * 2 * 1
    assert r.num_gpu_blocks and r.num_gpu_blocks > 0


def test_mi300x_budget_by_hand():
    """0.19.0 on one MI300X: the CUDA terms with the ROCm sampler (Triton, 12.36 B a logit) and no graph term."""
    b = budgets_for(engine_request("llama-3.1-8b", gpu="mi300x", engine_version="0.19.0", seq=4096))[0]
    total = find_gpu("mi300x").capacity_bytes
    assert b.requested_bytes == -(-total * 9 // 10)  # math.ceil from 0.14
    assert b.cuda_graph_bytes == 0 and not b.cuda_graph_subtracted
    assert b.available_bytes == b.requested_bytes - b.weights_bytes - b.activation_peak_bytes - b.non_torch_bytes
    # the sampler phase: R = min(1024, 8192) requests x vocab 128256 x (2 + 12.36) bytes (>= 8 rows: Triton)
    assert b.sampler_bytes == -(-1024 * 128256 * (2 + Fraction(1236, 100)) // 1)


def test_the_rocm_band_is_wider_than_cudas():
    on_h100 = budgets_for(engine_request("llama-3.1-8b", gpu="h100", engine_version="0.19.0", seq=4096))[0]
    on_mi = budgets_for(engine_request("llama-3.1-8b", gpu="mi300x", engine_version="0.19.0", seq=4096))[0]
    # non-torch +-1 GiB (CUDA's one-GPU band 224 MiB), the total +-0.3% of the requested memory
    extra = (budget.ROCM_BAND_NON_TORCH["one"] - budget.BAND_NON_TORCH["one"]
             + -(-on_mi.requested_bytes * 3 // 1000))
    assert on_mi.uncertainty_bytes - on_h100.uncertainty_bytes >= extra


def test_the_public_mi300x_log_total_is_inside_the_band():
    """vLLM's own reading of an MI300X (191.69 GiB total, 0.9 x it requested: 172.52 GiB) against kvplan's requested
    memory (the catalog's 191.98 GiB HIP device query) and its ROCm total band, out of sample."""
    rec = next(r for r in index("vllm_logs_public") if r["id"] == MI300X_LOG)
    f = parse_vllm_log(text("vllm_logs_public", rec))
    assert (f.startup_total_gib, f.requested_memory_gib, f.gpu_memory_utilization) == (
        Decimal("191.69"), Decimal("172.52"), 0.9)
    b = budgets_for(engine_request("llama-3.1-8b", gpu="mi300x", engine_version="0.27.1", gpu_util=Fraction(9, 10)))[0]
    logged = float(f.requested_memory_gib) * GIB
    half = b.requested_bytes * budget.ROCM_BAND_TOTAL_FRACTION
    assert abs(b.requested_bytes - logged) <= half + 0.005 * GIB
    # without the ROCm band the catalog figure alone would be 0.27 GiB off
    assert abs(b.requested_bytes - logged) > 0.2 * GIB


def test_sglang_on_mi300x_widens_its_band():
    on_h200 = sglang.estimate(engine_request("llama-3.1-8b", gpu="h200", seq=4096))
    on_mi = sglang.estimate(engine_request("llama-3.1-8b", gpu="mi300x", seq=4096))
    w_h200 = on_h200.available_kv_bytes_high - on_h200.available_kv_bytes_low
    w_mi = on_mi.available_kv_bytes_high - on_mi.available_kv_bytes_low
    # 2 x (0.3% of 191.98 GiB + 1 GiB) x mem_fraction_static, beyond the CUDA band
    assert w_mi - w_h200 >= 2 * 0.7 * (0.003 * 191.98 + 1) * GIB


# ------------------------------------------------------------------------- public ROCm figures, out of sample

ROOT = Path(__file__).resolve().parent.parent
ROCM_LOGS = ROOT / "tests" / "data" / "rocm_logs"


def _rocm_record(rid: str) -> dict:
    return next(r for r in map(json.loads, (ROCM_LOGS / "index.jsonl").read_text().splitlines()) if r["id"] == rid)


def test_minimax_m2_on_two_mi300x_v0171():
    """vllm-project/recipes#273: vLLM 0.17.1 (ROCm wheel), 2x MI300X at TP 2, "KV cache: 497,600 tokens". 0.17
    logs num_gpu_blocks // groups x 16 (one group of 62 full layers here), so the pool is 31,100 blocks of
    62 x 16 x 4 heads x 128 x 2 (K, V) x 2 bytes = 2,031,616 B. Scored with vLLM's defaults (the launch is not shown)
    and no option (VLLM_ROCM_USE_AITER=1 there: the band covers AITER's kernels). Not fitted on: out of sample."""
    rec = _rocm_record("recipes-pr273-minimax-m2-2xmi300x-v0171")
    raw = (ROOT / rec["raw_file"]).read_text()
    logged_tokens = int(raw.split("KV cache: ")[1].split(" tokens")[0].replace(",", ""))
    assert logged_tokens == 497_600
    spec = resolve_model(str(ROOT / rec["config"]))
    req = engine_request(spec, seq=spec.max_context, gpu="mi300x", tp=2, engine_version="0.17.1")
    r = vllm.estimate(req)
    assert r.block_size == 16 and r.bytes_per_block == 62 * 16 * 4 * 128 * 2 * 2
    logged_bytes = logged_tokens // 16 * r.bytes_per_block
    assert r.available_kv_bytes_low <= logged_bytes <= r.available_kv_bytes_high
    modelled = budgets_for(req)[0].available_bytes
    # kvplan's modelled budget (before the band) is within 2% of what the run got (measured: +1.7%)
    assert abs(modelled - logged_bytes) / logged_bytes < 0.02


@pytest.mark.parametrize("version, model, tp, factor", [
    ("0.4.6.post5", "llama-3.1-8b", 1, None),            # no aiter rule yet
    ("0.4.7", "llama-3.1-8b", 1, Fraction(85, 100)),     # model_runner.py 0.4.7-0.5.4: `... *= 0.85`
    ("0.5.4", "llama-3.1-8b", 1, Fraction(85, 100)),
    ("0.5.4.post1", "llama-3.1-8b", 1, Fraction(9, 10)),  # 0.5.4.post1: `... *= 0.90`
    ("0.5.5", "llama-3.1-8b", 1, Fraction(85, 100)),      # 0.5.4.post2+: `... *= 0.85`
    ("0.5.7", "deepseek-v3", 8, Fraction(85, 100)),       # MLA, 128 KV heads / 8 = 16 per rank: aiter
    ("0.5.7", "deepseek-v3", 4, None),                    # 32 per rank: triton, no factor
])
def test_sglang_aiter_fraction_by_release_and_heads(version, model, tp, factor):
    """SGLang on ROCm multiplies mem_fraction_static for its aiter backend with a context over 8192; aiter serves
    MLA only with 16 or 128 KV heads per TP rank (server_args.py, 0.5.4.post1 / 0.5.5 / 0.5.7)."""
    on_mi = sglang.estimate(engine_request(model, seq=32768, gpu="mi300x", tp=tp, engine_version=version))
    short = sglang.estimate(engine_request(model, seq=8192, gpu="mi300x", tp=tp, engine_version=version))
    # the result carries the fraction as SGLang prints it (a decimal string)
    assert Fraction(on_mi.mem_fraction_static) == Fraction(short.mem_fraction_static) * (factor or 1)


def test_sglang_aiter_fraction_applies_to_a_given_fraction():
    """A given --mem-fraction-static 0.85 is multiplied too: AMD's MI300X nightly logs print 0.7224999999999999."""
    r = sglang.estimate(engine_request("llama-3.1-8b", seq=32768, gpu="mi300x", engine_version="0.5.5",
                                       gpu_util=Fraction(85, 100)))
    assert Fraction(r.mem_fraction_static) == Fraction(7225, 10000)


@pytest.mark.parametrize("version, block", [("0.14.1", 16), ("0.19.0", 1), ("0.20.2", 16), ("0.33.0", 16)])
def test_aiter_mla_block_by_release(version, block):
    """VLLM_ROCM_USE_AITER=1: ROCM_AITER_MLA (platforms/rocm.py); its kernel sizes [1] in 0.12.0 / 0.19.0 (0.19
    then picks 1: v1/attention/backend.py get_preferred_block_size), MultipleOf(1) in 0.20.2 / 0.26.0 / 0.27.1
    (16 kept); 0.12-0.17 set 16 before the backend (check_and_update_config)."""
    on = (("vllm_rocm_use_aiter", "1"),)
    r = vllm.estimate(engine_request("deepseek-v3", seq=4096, gpu="mi300x", tp=8, engine_version=version,
                                     engine_options=on))
    assert r.block_size == block and r.bytes_per_block == 61 * block * 576 * 2
    # unset (envs.py default "False"): TRITON_MLA, 16
    assert vllm.estimate(engine_request("deepseek-v3", seq=4096, gpu="mi300x", tp=8, engine_version=version)).block_size == 16


def test_aiter_mla_refuses_the_default_block_before_012():
    from kvplan.core.errors import UnsupportedError
    with pytest.raises(UnsupportedError, match="block size 1"):
        vllm.estimate(engine_request("deepseek-v3", seq=4096, gpu="mi300x", tp=8, engine_version="0.10.2",
                                     engine_options=(("vllm_rocm_use_aiter", "1"),)))
    r = vllm.estimate(engine_request("deepseek-v3", seq=4096, gpu="mi300x", tp=8, engine_version="0.10.2",
                                     block_size=1, engine_options=(("vllm_rocm_use_aiter", "1"),)))
    assert r.block_size == 1


@pytest.mark.parametrize("value, on", [("1", True), ("true", True), ("True", True), ("0", False), ("yes", False)])
def test_aiter_flag_as_vllm_reads_it(value, on):
    # envs.py: os.getenv("VLLM_ROCM_USE_AITER", "False").lower() in ("true", "1")
    assert releases.aiter_flag(value) is on
    assert _rel("0.33.0", engine_options=((releases.ROCM_AITER_OPTION, value),)).rocm_aiter is on


def test_aiter_off_narrows_the_band_by_the_moe_workspace():
    """Given VLLM_ROCM_USE_AITER=0, the band drops AITER's terms: the fused-MoE workspace and 3 of the activation
    band's 5%."""
    def band(opts):
        return budgets_for(engine_request("deepseek-v3", seq=4096, gpu="mi300x", tp=8, engine_options=opts))[0]
    unset, off = band(None), band(((releases.ROCM_AITER_OPTION, "0"),))
    assert unset.available_bytes == off.available_bytes  # the centre is the default's (AITER off)
    assert unset.uncertainty_bytes - off.uncertainty_bytes >= off.moe_workspace_bytes > 0


def test_check_reads_vllm_rocm_use_aiter_from_the_environment():
    from kvplan.check.readers.vllm_serve import environment_options
    options, _ = environment_options({"VLLM_ROCM_USE_AITER": "1"}, "compose.yaml")
    assert (releases.ROCM_AITER_OPTION, "1") in options
    from kvplan.check import shell
    # a value the file takes from outside (a ${VAR} the readers mark): left open, the band covers both
    assert environment_options({"VLLM_ROCM_USE_AITER": shell.MARK + "AITER"}, "compose.yaml")[0] == ()
    assert environment_options({"VLLM_ROCM_USE_AITER": None}, "compose.yaml")[0] == ()


def test_instinct_totals_as_the_engines_print_them():
    """vLLM's and torch's totals in public ROCm reports: MI355X "(126.77/287.98 GiB)" (vLLM's start-up refusal),
    MI325X "255.98 GiB" (vLLM 0.20.2 ROCm reports, a HIP OOM message), to the printed digit; MI300X reads 191.69 GiB
    in four vLLM logs where the catalog keeps the HIP device query's 191.98 (docs/gpus.md), inside the ROCm band."""
    assert round(find_gpu("mi355x").capacity_bytes / GIB, 2) == 287.98
    assert round(find_gpu("mi325x").capacity_bytes / GIB, 2) == 255.98
    gap = find_gpu("mi300x").capacity_bytes - 191.69 * GIB
    assert 0 < gap <= float(find_gpu("mi300x").capacity_bytes * budget.ROCM_BAND_TOTAL_FRACTION)


SGLANG_CI = [r for r in map(json.loads, (ROCM_LOGS / "index.jsonl").read_text().splitlines()) if r["engine"] == "sglang"]


def _ci_request(rec: dict):
    """The launch of an AMD CI log as index.jsonl records it (kvplan_request), on the record's GPU and release."""
    q = rec["kvplan_request"]
    model = str(ROOT / q["model"]) if q["model"].endswith(".json") else q["model"]
    opts = tuple((q.get("engine_options") or {}).items()) or None
    return engine_request(model, seq=q["seq"], gpu=rec["gpu_catalog"], tp=q["tp"],
                          engine_version=rec["engine_version"].split()[0], gpu_util=Fraction(q["gpu_util"]),
                          max_num_batched_tokens=q.get("max_num_batched_tokens"), max_num_seqs=q.get("max_num_seqs"),
                          engine_options=opts)


@pytest.mark.parametrize("rec", SGLANG_CI, ids=lambda r: r["id"])
def test_sglang_on_instinct_ci_logs(rec):
    """AMD's SGLang nightly runs (michael-amd/sglang-ci) on 8x MI300X / MI355X at TP 8: Qwen3-30B-A3B-Thinking-2507
    (sanity check, --mem-fraction-static 0.85, aiter), DeepSeek-V3-0324 FP8 (online benchmark, 0.9, aiter) and gpt-oss
    (MI355X sanity check, triton, one pool: disable_hybrid_swa_memory in 0.5.1-0.5.7). Out of sample:
    the pool kvplan predicts is within 4% of the logged one and inside the band; the fraction SGLang prints is
    kvplan's (0.5.4.post1+: after the aiter factor; before, server_args prints the given value and model_runner.py
    multiplies it by 0.85 afterwards)."""
    text = (ROOT / rec["raw_file"]).read_text(encoding="utf-8", errors="replace")
    tokens = int(re.search(r"max_total_num_tokens=(\d+)", text).group(1))
    printed = Fraction(re.search(r"mem_fraction_static=([\d.]+)", text).group(1)).limit_denominator(10000)
    r = sglang.estimate(_ci_request(rec))
    version = rec["engine_version"].split()[0]
    # aiter unless the launch names another backend: SGLang's ROCm default for MHA and for DeepSeek's 16 heads a rank
    aiter = (rec["kvplan_request"].get("engine_options") or {}).get("attention_backend", "aiter") == "aiter"
    late = sglang_release(version).at_least("0.5.4.post1")
    assert Fraction(r.mem_fraction_static) == (printed * Fraction(85, 100) if aiter and not late else printed)
    logged = tokens * r.cell_size
    assert r.available_kv_bytes_low - r.cell_size <= logged <= r.available_kv_bytes_high + r.cell_size
    assert abs(r.max_total_num_tokens - tokens) / tokens < 0.04  # measured +0.53% ... +3.48%


def _rocm_expert_bytes(i_pad: int, h_pad: int, layers: int = 36, experts: int = 128) -> int:
    """One rank's MXFP4 experts by hand (mxfp4.py create_weights): gate_up [2 I, H/2] uint8 + a scale byte per 32 +
    bf16 bias [2 I]; down [H, I/2] + scales + bf16 bias [H]."""
    gate_up = 2 * i_pad * h_pad // 2 + 2 * i_pad * h_pad // 32 + 2 * i_pad * 2
    down = h_pad * i_pad // 2 + h_pad * i_pad // 32 + h_pad * 2
    return layers * experts * (gate_up + down)


@pytest.mark.parametrize("version, gpu, tiles", [
    ("0.11.0", "mi300x", (3072, 3072)),  # 0.11.0 create_weights on ROCm: I and H to 256
    ("0.14.1", "mi300x", (2944, 2944)),  # get_padding_alignment: 128 on gfx942
    ("0.14.1", "mi355x", (3072, 3072)),  # 256 on gfx950
    ("0.19.0", "mi300x", (3072, 3072)),  # oracle/mxfp4.py: is_rocm -> 256 / 256
])
def test_gpt_oss_experts_as_rocm_pads_them(version, gpu, tiles):
    """gpt-oss-120b (36 layers x 128 experts, I = H = 2880) at TP 1: the experts as vLLM allocates them on ROCm,
    against Hopper's triton_kernels layout (I to 64, H unpadded) of the same release and model."""
    from kvplan.engines.vllm.budget import mxfp4_backend, rocm_mxfp4_backend
    from kvplan.engines.runtime.weights import mxfp4_expert_bytes
    rel = releases.release(version)
    spec = resolve_model("gpt-oss-120b")
    kernel = rocm_mxfp4_backend(rel, find_gpu(gpu).compute_capability)
    assert mxfp4_expert_bytes(spec, 1, kernel)[1] == _rocm_expert_bytes(*tiles)
    on_rocm = budgets_for(engine_request("gpt-oss-120b", gpu=gpu, engine_version=version, seq=8192))[0]
    on_h100 = budgets_for(engine_request("gpt-oss-120b", gpu="h100", engine_version=version, seq=8192))[0]
    hopper = mxfp4_backend(rel, "9.0")
    assert on_rocm.weights_bytes - on_h100.weights_bytes == (mxfp4_expert_bytes(spec, 1, kernel)[1]
                                                              - mxfp4_expert_bytes(spec, 1, hopper)[1])


def test_gpt_oss_band_spans_aiter_and_emulation_from_027():
    """0.27+ on ROCm: AITER_MXFP4_BF16 (256-padded) or EMULATION (32-wide blocks): the band holds both layouts."""
    on_026 = budgets_for(engine_request("gpt-oss-120b", gpu="mi300x", engine_version="0.26.0", seq=8192))[0]
    on_027 = budgets_for(engine_request("gpt-oss-120b", gpu="mi300x", engine_version="0.27.1", seq=8192))[0]
    gap = _rocm_expert_bytes(3072, 3072) - _rocm_expert_bytes(2880, 2880)
    assert on_027.uncertainty_bytes - on_026.uncertainty_bytes >= gap


@pytest.mark.parametrize("version, limits", [("0.27.1", (8192, 1024)), ("0.28.0", (16384, 1024))])
def test_mi300x_scheduler_tier(version, limits):
    """engine/arg_utils.py get_batch_defaults tests the device's total: 0.28's >= 160 GiB tier (16384 tokens) takes an
    MI300X too, as vllm-project/vllm#53961 reports ("captures MI300X (191.98 GiB)"); before, the >= 70 GiB tier."""
    from kvplan.engines.vllm.budget import default_batch_limits
    g = find_gpu("mi300x")
    assert default_batch_limits(g.capacity_bytes, g.name, releases.release(version)) == limits
    # vLLM reads 191.69 GiB there (docs/gpus.md): the same tier either way
    assert default_batch_limits(int(191.69 * GIB), g.name, releases.release(version)) == limits
