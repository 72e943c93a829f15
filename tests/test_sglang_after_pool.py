"""GPU buffers SGLang makes after the token pool is sized (engines/sglang/after_pool.py): HiCache's write-back staging
and FlashInfer's all-reduce fusion workspace. Both leave the pool as without them; their bytes are checked against
hand arithmetic on the formulas of SGLang's and FlashInfer's source, written out here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.core.errors import InputError
from kvplan.engines.sglang import after_pool, engine, releases
from kvplan.requests.build import build_request

MIB = 2**20
COMPOSE = Path(__file__).parent / "data" / "deployments" / "compose" / "sglang-llama31-8b-device0.yaml"


def _est(model="llama-3.1-8b", *, sglang_args=None, tp=1, gpu="h100-sxm-80gb", version=None):
    req = build_request(model, seq="32K", batch=1, kv_dtype="auto", dtype=None, gpu=gpu, gpu_mem=None, gpus=None,
                        tp=tp, pp=1, sglang_args=sglang_args, engine_version=version)
    return engine.estimate(req)


# ------------------------------------------------------------------------------------------ HiCache staging

@pytest.mark.parametrize("page, tp", [(1, 1), (64, 1), (64, 2)])
def test_hicache_staging_is_64_pages_of_the_pool_cell_after_the_pool(page, tp):
    """0.5.23 pool_host/mha.py prepare_mha_write_back_staging: K and V tensors of [min(host pages, 64) x page,
    layers, KV heads per rank, head_dim] in bf16. Llama-3.1-8B: 32 layers, 8 KV heads of 128."""
    args = f"--enable-hierarchical-cache --page-size {page}"
    e, plain = _est(sglang_args=args, tp=tp), _est(sglang_args=f"--page-size {page}", tp=tp)
    hand = 2 * (64 * page) * 32 * (8 // tp) * 128 * 2
    assert e.features.hicache.staging_gpu_bytes_per_rank == hand
    assert {(1, 1): 8 * MIB, (64, 1): 512 * MIB, (64, 2): 256 * MIB}[(page, tp)] == hand
    assert e.max_total_num_tokens == plain.max_total_num_tokens  # made with the host pool, after the pool
    assert any("write-back staging" in n and f"{hand:,} B" in n for n in e.notes)


def test_hicache_staging_by_release():
    """None before 0.5.14 (0.5.13.post1's mem_cache/memory_pool_host.py has no staging buffers); a host pool of fewer
    than 64 pages stages its own page count (min(self.page_num, 64))."""
    assert after_pool.hicache_staging_bytes(releases.release("0.5.13.post1"), cell_per_rank=131072, page=64,
                                            host_pages=1000) == 0
    assert after_pool.hicache_staging_bytes(releases.release("0.5.14"), cell_per_rank=131072, page=64,
                                            host_pages=1000) == 64 * 64 * 131072
    assert after_pool.hicache_staging_bytes(releases.release("0.5.23"), cell_per_rank=131072, page=16,
                                            host_pages=10) == 10 * 16 * 131072


# ------------------------------------------------------------------------------ FlashInfer fusion workspace

def test_fusion_workspace_at_tp8_leaves_the_pool_and_is_sized_by_hand():
    """Llama-3.1-70B (hidden 8192) at TP 8, SGLang 0.5.23: two workspaces (attention TP and MoE groups, both the 8
    ranks), each FlashInfer 0.7.2 trtllm_ar.py: 2-shot 8 x 2048 x 8192 x 2 = 256 MiB, flags 8 x 256 x 4 = 8,192 B,
    Lamport 3 x 256 MiB. High edge: 258 + 4 + 770 MiB each."""
    e = _est("llama-3.1-70b", sglang_args="--enable-flashinfer-allreduce-fusion", tp=8)
    plain = _est("llama-3.1-70b", tp=8)
    f = e.features.allreduce_fusion
    one = 8 * 2048 * 8192 * 2 + 8 * 256 * 4 + 3 * 8 * 2048 * 8192 * 2
    assert (f.group_sizes, f.max_tokens, f.hidden_size, f.backend) == ((8, 8), 2048, 8192, "auto")
    assert f.low_bytes_per_rank == 2 * one == 2_147_500_032
    assert f.high_bytes_per_rank == 2 * (258 + 4 + 770) * MIB
    assert e.max_total_num_tokens == plain.max_total_num_tokens


@pytest.mark.parametrize("version, groups", [("0.5.10", (2,)), ("0.5.11", (2, 2)), ("0.5.23", (2, 2))])
def test_fusion_workspace_count_by_release(version, groups):
    """One workspace manager up to 0.5.10.post1 (flashinfer_comm_fusion.py _workspace_manager), one per group from
    0.5.11 (_attn_tp_workspace_manager, _moe_tp_workspace_manager). Llama-3.1-8B: hidden 4096."""
    e = _est(sglang_args="--enable-flashinfer-allreduce-fusion", tp=2, version=version)
    f = e.features.allreduce_fusion
    one = 2 * 2048 * 4096 * 2 + 2 * 256 * 4 + 3 * 2 * 2048 * 4096 * 2
    assert f.group_sizes == groups and f.low_bytes_per_rank == len(groups) * one
    assert f.backend == ("trtllm" if version != "0.5.23" else "auto")
    assert e.max_total_num_tokens == _est(tp=2, version=version).max_total_num_tokens


def test_fusion_on_one_gpu_makes_nothing_and_old_flashinfer_is_not_sized():
    """flashinfer_comm_fusion.py returns at "world_size <= 1"; before 0.5.10 the pinned FlashInfer (0.2.x-0.3.x) is not
    read, so the workspace is named without bytes (it is still made after the pool)."""
    assert _est(sglang_args="--enable-flashinfer-allreduce-fusion").features.allreduce_fusion is None
    old = _est(sglang_args="--enable-flashinfer-allreduce-fusion", tp=2, version="0.5.3").features.allreduce_fusion
    assert old.low_bytes_per_rank is None and "not read" in old.formula
    mnnvl = _est(sglang_args="--flashinfer-allreduce-fusion-backend mnnvl", tp=2).features.allreduce_fusion
    assert mnnvl.low_bytes_per_rank is None and mnnvl.backend == "mnnvl"
    off = _est(sglang_args="--enable-flashinfer-allreduce-fusion --enforce-disable-flashinfer-allreduce-fusion", tp=2)
    assert off.features.allreduce_fusion is None and off.features.options == ()


def test_the_lamport_buffer_stops_at_flashinfer_max_comm_size():
    """trtllm_ar.py MAX_COMM_SIZE = 2147483647 & ~((1 << 21) - 1) = 2,145,386,496: 64 ranks x 2048 x 8192 x 2 B =
    2,147,483,648 is over it, so the Lamport buffer is 3 x 2,145,386,496."""
    assert after_pool.MAX_COMM == 2_145_386_496
    assert after_pool.trtllm_buffers(64, 2048, 8192) == (2_147_483_648, 65_536, 3 * 2_145_386_496)


@pytest.mark.parametrize("flag, version, first", [
    ("--enable-flashinfer-allreduce-fusion", "0.4.8", "0.4.9"),
    ("--flashinfer-allreduce-fusion-backend trtllm", "0.5.13.post1", "0.5.14"),
    ("--enforce-disable-flashinfer-allreduce-fusion", "0.5.9", "0.5.10"),
])
def test_a_fusion_flag_before_its_release_is_refused_as_sglang_refuses_it(flag, version, first):
    with pytest.raises(InputError, match=f"from {first}"):
        _est(sglang_args=flag, tp=2, version=version)


# ----------------------------------------------------------------------------------- post-capture sizing

@pytest.mark.parametrize("value, code", [("'1'", 3), ("'true'", 3), ("'0'", 0), ("${POST}", 3)])
def test_post_capture_kv_sizing_is_refused(cli, tmp_path, value, code):
    """SGLANG_ENABLE_POST_CAPTURE_KV_SIZING (environ.py EnvBool: true, 1, yes, y) re-sizes the pool after the CUDA
    graphs (model_runner.py post_capture_resize_kv_pool): the staging and the workspace then come out of the pool."""
    text = COMPOSE.read_text().replace("      HF_TOKEN: <secret>\n", "      HF_TOKEN: <secret>\n"
                                       f"      SGLANG_ENABLE_POST_CAPTURE_KV_SIZING: {value}\n")
    assert "POST_CAPTURE" in text
    path = tmp_path / "compose.yaml"
    path.write_text(text)
    got, out, err = cli("check", path, "--offline", "--gpu", "h100", "--format", "json")
    verdict = json.loads(out)["verdicts"][0]
    assert got == code, (verdict, err)
    if code == 3:
        assert "SGLANG_ENABLE_POST_CAPTURE_KV_SIZING" in verdict["reason"]


# ------------------------------------------------------------------------------- a public log of the workspace

FUSION_LOG = Path(__file__).parent / "data" / "sglang_fusion_logs" / "sglang-pr18341-tp2-fusion-workspace.log"


def test_a_public_tp2_log_allocates_the_three_buffers_after_the_server_is_up():
    """sgl-project/sglang PR 18341's log (tests/data/sglang_fusion_logs/SOURCES.md): at TP 2 each rank makes three
    SymmDeviceMemory buffers whose signal pad offsets are FlashInfer 0.6.x's round_up(size, 2 MiB), and the Lamport
    buffer is initialised as offset / 2 fp16 elements. The model is not named: a two-shot buffer of 24 MiB and a
    Lamport buffer of 68 MiB at 2 ranks x 2048 tokens hold only for 2816 < hidden <= 2901, which takes gpt-oss's
    2880. The buffers come after the server answers /model_info, so after the pool."""
    lines = FUSION_LOG.read_text().splitlines()
    offsets = [int(line.rsplit(": ", 1)[1]) for line in lines if line.startswith("[2026-02-07 05:22:56 TP0]")]
    assert offsets == [24 * MIB, 2 * MIB, 68 * MIB]
    assert int(lines[-1].rsplit(": ", 1)[1]) == offsets[2] // 2 == 35_651_584
    assert lines[0].endswith('"GET /model_info HTTP/1.1" 200 OK') and "SymmDeviceMemory" not in lines[0]

    def rounded(size):
        return -(-size // (2 * MIB)) * (2 * MIB)

    fits = [h for h in range(1024, 8193) if [rounded(b) for b in after_pool.trtllm_buffers(2, 2048, h)] == offsets]
    assert fits[0] == 2817 and fits[-1] == 2901 and 2880 in fits
    w = after_pool.fusion_workspace(releases.release("0.5.10"), backend="trtllm", tp=2, attn_tp=2, hidden=2880,
                                    dtype_bits=16)
    assert w.low_bytes_per_rank <= sum(offsets) <= w.high_bytes_per_rank
    # 0.6.7.post2's SymmDeviceMemory allocates offset + the 2,048-B signal pad, rounded to the 2 MiB granularity
    assert sum(rounded(o + 2048) for o in offsets) == w.high_bytes_per_rank == 100 * MIB
