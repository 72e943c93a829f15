"""kvplan's vLLM engine: exact against the 42 real vLLM 0.19.0 logs where vLLM is deterministic, the rules of
docs/engines/vllm.md on hand-checked cases, and properties.

The log models are described by the typed configs in tests/data/vllm_models (see SOURCES.md there); a log
whose model kvplan cannot describe is reported, and the test demands a minimum number described.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.engines.vllm.calibrate import gpu_from_log, request_from_log, resolve_log_model
from kvplan.model.catalog import find_gpu, resolve_model
from kvplan.engines.vllm import budget, releases
from kvplan.engines import vllm
from kvplan.core.errors import InputError, KvplanError, UnsupportedError
from kvplan.engines.api import Hardware
from kvplan.engines.vllm.log import gib_bounds, parse_vllm_log_file

from engine_requests import engine_request, with_fixes

DATA = Path(__file__).parent / "data"
LOGS = sorted((DATA / "vllm_logs" / "raw").glob("*.log"))
MODELS = DATA / "vllm_models"
CONFIGS = DATA / "hf_configs"
GIB = 2**30


def _log_case(path: Path):
    figs = parse_vllm_log_file(path)
    try:
        spec = resolve_log_model(figs.model, models_dir=str(MODELS))
    except KvplanError as err:
        return figs, None, err.one_line()
    hw, _ = gpu_from_log(figs.total_memory_gib)
    req, _ = request_from_log(figs, spec, hw)
    return figs, req, None


@functools.lru_cache(maxsize=None)
def case(name: str):
    """A log's figures and request, read when a test first asks (not while the suite is collected)."""
    return _log_case(DATA / "vllm_logs" / "raw" / name)


DESCRIBED = [p.name for p in LOGS]  # every one: test_every_log_is_described


def test_every_log_is_described():
    missing = {name: case(name)[2] for name in DESCRIBED if case(name)[1] is None}
    assert len(LOGS) == 42
    assert not missing, missing  # every log's model, vision towers included


@pytest.mark.parametrize("name", DESCRIBED)
def test_log_blocks_tokens_concurrency_exact(name):
    """Given the logged KV memory (every byte count that prints as the logged GiB), num_gpu_blocks is in
    kvplan's range, and at a byte count giving the logged blocks, tokens and concurrency are exact."""
    figs, req, _ = case(name)
    worker = figs.binding_worker()
    lo, hi = gib_bounds(worker.available_kv_gib)
    at = lambda avail: vllm.estimate(dataclasses.replace(dataclasses.replace(req, kv_cache_memory=avail, hardware=None), engine_version="0.19"))
    low, high = at(lo), at(hi - 1)
    assert low.num_gpu_blocks <= figs.num_gpu_blocks <= high.num_gpu_blocks
    assert high.num_gpu_blocks - low.num_gpu_blocks <= 0.01 * GIB // low.bytes_per_block + 1
    pinned = at(max(lo, figs.num_gpu_blocks * low.bytes_per_block))
    assert pinned.num_gpu_blocks == figs.num_gpu_blocks
    assert pinned.kv_cache_tokens == figs.kv_cache_tokens
    assert f"{pinned.max_concurrency:.2f}" == f"{figs.max_concurrency:.2f}"
    assert pinned.max_concurrency == figs.num_gpu_blocks / pinned.blocks_per_request
    assert pinned.padding_layers == (figs.padding_layers or 0)
    assert pinned.fits is True
    assert f"Maximum concurrency for {figs.max_model_len:,} tokens per request: {figs.max_concurrency:.2f}x" in \
        "\n".join(pinned.log_lines)


def test_budget_mean_absolute_error_within_3_percent():
    """End to end (GPU memory and flags only): the modelled available KV memory against the logged one."""
    errors = {}
    for name in DESCRIBED:
        figs, req, _ = case(name)
        est = vllm.estimate(dataclasses.replace(req, engine_version="0.19"))
        logged = float(figs.binding_worker().available_kv_gib) * GIB
        errors[name] = abs(est.available_kv_bytes - logged) / logged * 100
    mae = sum(errors.values()) / len(errors)
    assert mae <= 3.0, sorted(errors.items(), key=lambda kv: -kv[1])[:5]
    assert max(errors.values()) < 5.0


def test_budget_terms_of_llama_8b_log():
    """Each modelled term of the plain Llama-3.1-8B run within 0.05 GiB of what vLLM logged."""
    figs, req, _ = case("meta-llama-llama---h100-80gb--tp1pp1dp1--8192-dtbf16.log")
    est = vllm.estimate(dataclasses.replace(req, engine_version="0.19"))
    w = figs.binding_worker()
    assert est.requested_bytes == budget.requested_bytes(85_029_158_912, Fraction(95, 100))
    assert f"{est.requested_bytes / GIB:.2f}" == str(w.requested_memory_gib)
    for got, logged in ((est.weights_per_gpu_bytes, w.weights_gib), (est.activation_peak_bytes, w.activation_peak_gib),
                        (est.non_torch_bytes, w.non_torch_gib), (est.available_kv_bytes, w.available_kv_gib)):
        assert abs(got / GIB - float(logged)) <= 0.05
    assert est.cuda_graph_subtracted is False  # 0.19 logs the estimate but does not subtract it


# ------------------------------------------------------------------------------------------ rules

def _req(spec, seq=8192, **kw):
    return engine_request(spec, seq, **kw)


def test_gemma3_27b_padding_layers():
    est = vllm.estimate(_req(CONFIGS / "gemma-3-27b.json", mem=40 * GIB))
    assert est.padding_warnings == ("Add 8 padding layers, may waste at most 15.38% KV cache memory",)
    assert est.padding_layers == 8
    assert len(est.kv_cache_groups) == 7 and est.group_size == 10
    assert est.bytes_per_block == 10 * 16 * 16 * 256 * 2  # 10 slots x (16 tokens x 16 heads x (128+128) x 2 B)


def test_gemma2_sliding_layers_charged_whole_length_at_8k():
    est = vllm.estimate(dataclasses.replace(_req(MODELS / "google--gemma-2-2b-it", mem=66 * GIB), engine_version="0.19"))
    assert sorted(g.blocks_per_request for g in est.kv_cache_groups) == [512, 513]
    # at 32K the window (4096) bounds the sliding layers: cdiv(4095 + 8192, 16) + 1
    long = vllm.estimate(dataclasses.replace(_req(MODELS / "google--gemma-2-2b-it", seq=32768, mem=66 * GIB), engine_version="0.19"))
    assert sorted(g.blocks_per_request for g in long.kv_cache_groups) == [769, 2048]
    # 0.33 keeps two batches in flight: cdiv(4095 + 16384, 16) + 1
    new = vllm.estimate(dataclasses.replace(_req(MODELS / "google--gemma-2-2b-it", seq=32768, mem=66 * GIB), engine_version="0.33"))
    assert sorted(g.blocks_per_request for g in new.kv_cache_groups) == [1281, 2048]


def test_tokens_logged_differently_by_version():
    r = _req(MODELS / "google--gemma-3-4b-it", mem=62 * GIB)
    old, new = vllm.estimate(dataclasses.replace(r, engine_version="0.19")), vllm.estimate(dataclasses.replace(r, engine_version="0.33"))
    assert old.num_gpu_blocks == new.num_gpu_blocks
    assert old.kv_cache_tokens == old.num_gpu_blocks // 7 * 16
    assert new.kv_cache_tokens == int(new.num_gpu_blocks / new.blocks_per_request * 8192)


def test_not_fit_estimated_max_model_len_by_version():
    spec = resolve_model(str(CONFIGS / "llama-3.1-8b.json"))
    bpb = 32 * 16 * 8 * 256 * 2
    mem = 1000 * bpb + 12345
    old = with_fixes("vllm", dataclasses.replace(_req(spec, seq=131072, mem=mem), engine_version="0.19"))
    new = vllm.estimate(dataclasses.replace(_req(spec, seq=131072, mem=mem), engine_version="0.33"))
    assert old.fits is False and new.fits is False
    assert old.estimated_max_model_len == 16 * 1000
    assert new.estimated_max_model_len == 16 * 999  # 0.33 holds the null block back
    assert "the estimated maximum model length is 16000" in old.log_lines[-1]
    assert "models's max seq len (131072)" in old.log_lines[-1]
    assert old.suggestions and old.suggestions[0].startswith("--max-model-len 15984")  # batch 1 + the null block
    assert any(s.startswith("--kv-cache-memory-bytes") for s in old.suggestions)


def test_tp_replicates_kv_heads():
    spec = resolve_model(str(MODELS / "Qwen--Qwen2.5-7B-Instruct"))  # 4 KV heads
    est = vllm.estimate(_req(spec, tp=8, mem=10 * GIB))
    assert est.kv_cache_groups[0].page_bytes == 16 * 1 * 256 * 2
    with pytest.raises(InputError):
        vllm.estimate(_req(spec, tp=3, mem=10 * GIB))


def test_pp_split_and_min_over_workers():
    spec = resolve_model(str(CONFIGS / "llama-3.1-8b.json"))
    est = vllm.estimate(_req(spec, pp=3, mem=10 * GIB))
    # 32 layers on 3 stages: the remainder goes to the stages counting back from the second to last
    assert [w.layers for w in est.workers] == [11, 11, 10]
    assert est.bytes_per_block == 11 * 16 * 8 * 256 * 2
    assert est.num_gpu_blocks == 10 * GIB // est.bytes_per_block


def test_mla_page_not_split_by_tp():
    spec = resolve_model(str(CONFIGS / "deepseek-v3.json"))
    one, eight = (vllm.estimate(_req(spec, tp=tp, mem=40 * GIB)) for tp in (1, 8))
    assert one.kv_cache_groups[0].page_bytes == eight.kv_cache_groups[0].page_bytes == 16 * 576 * 2


def test_hybrid_mamba_block_size_raised():
    spec = resolve_model(str(CONFIGS / "nemotron-h-56b-base-8k.json"))
    est = vllm.estimate(dataclasses.replace(_req(spec, mem=40 * GIB), engine_version="0.19"))
    assert est.block_size > 16 and est.block_size % 16 == 0
    attn = next(g for g in est.kv_cache_groups if g.kind == "full")
    mamba = next(g for g in est.kv_cache_groups if g.kind == "mamba")
    assert attn.page_bytes == mamba.page_bytes  # the state is padded to the attention page
    assert mamba.blocks_per_request == 1


def test_kv_dtypes():
    spec = resolve_model(str(CONFIGS / "llama-3.1-8b.json"))
    bf16 = vllm.estimate(_req(spec, mem=20 * GIB))
    fp8 = vllm.estimate(_req(spec, kv="fp8", mem=20 * GIB))
    e5m2 = vllm.estimate(_req(spec, kv="fp8_e5m2", mem=20 * GIB))
    assert fp8.bytes_per_block * 2 == bf16.bytes_per_block == e5m2.bytes_per_block * 2
    assert fp8.num_gpu_blocks == 20 * GIB // fp8.bytes_per_block
    with pytest.raises(InputError, match="vLLM has no KV-cache dtype 'int8'"):
        vllm.estimate(_req(spec, kv="int8", mem=20 * GIB))


def test_unknown_version_is_refused():
    """Not a version: bad input (exit 2). Before 0.10 (V0, early V1) or after the newest line: not modelled (exit 3,
    saying which), never the nearest line's rules."""
    from kvplan.core.errors import UnsupportedError

    req = _req(CONFIGS / "llama-3.1-8b.json", mem=GIB)
    with pytest.raises(InputError):
        vllm.estimate(dataclasses.replace(req, engine_version="vllm-latest"))
    for old in ("0.5", "0.6.6.post1", "0.9.2"):
        with pytest.raises(UnsupportedError, match="older than 0.10.*V0"):
            vllm.estimate(dataclasses.replace(req, engine_version=old))
    with pytest.raises(UnsupportedError, match="newer than 0.33"):
        vllm.estimate(dataclasses.replace(req, engine_version="0.34.0"))


def test_weights_over_budget_does_not_start_and_suggests():
    h100 = find_gpu("h100")
    est = with_fixes("vllm", _req(CONFIGS / "llama-3.1-70b.json", seq=32768, hw=Hardware(h100.name, h100.capacity_bytes)))
    assert est.fits is False and est.available_kv_bytes < 0
    # TP 2 leaves about 3.3 GiB per GPU after 65.7 GiB of weights under 0.33's V2 model runner (about 1.4 under the
    # V1 runner's FlashInfer warm-up of 1024 x 128256 x 14 B = 1.71 GiB, where V2 samples plain bf16 logits, 0.24
    # GiB, and half the V1 graph fit, 0.48 GiB less): some 21K tokens at 160 KiB a token; TP 4 is the smallest that fits
    assert any(s.startswith("--tensor-parallel-size 4") for s in est.suggestions)
    hw = Hardware(h100.name, h100.capacity_bytes)
    tp2 = vllm.estimate(_req(CONFIGS / "llama-3.1-70b.json", seq=32768, tp=2, hw=hw))
    tp4 = vllm.estimate(_req(CONFIGS / "llama-3.1-70b.json", seq=32768, tp=4, hw=hw))
    # 0.33's estimate: whole 16-token blocks of the available memory, one held back for the null block
    assert tp2.fits is False and tp4.fits is True
    assert tp2.estimated_max_model_len == (tp2.available_kv_bytes // tp2.bytes_per_block - 1) * 16
    assert 19 * 1024 < tp2.estimated_max_model_len < 23 * 1024


def test_util_above_free_memory_refused():
    h100 = find_gpu("h100")
    est = vllm.estimate(_req(CONFIGS / "llama-3.1-8b.json", hw=Hardware(h100.name, h100.capacity_bytes),
                             gpu_util=Fraction(999, 1000)))
    assert est.fits is False
    assert any("refuses to start" in n for n in est.notes)


def test_fp8_suggestion_when_it_is_the_fix():
    h100 = find_gpu("h100")
    hw = Hardware(h100.name, h100.capacity_bytes)
    est = with_fixes("vllm", _req(CONFIGS / "llama-3.1-8b.json", seq=131072, batch=6, hw=hw))
    assert est.starts is True and est.serves_batch is False and est.fits is False
    assert any(s.startswith("--kv-cache-dtype fp8") for s in est.suggestions)
    fixed = vllm.estimate(_req(CONFIGS / "llama-3.1-8b.json", seq=131072, batch=6, kv="fp8", hw=hw))
    assert fixed.serves_batch is True and fixed.fits is True


def test_default_batch_limits():
    assert budget.default_batch_limits(find_gpu("h100").capacity_bytes, "h100-sxm-80gb", releases.release("0.19")) == (8192, 1024)
    assert budget.default_batch_limits(find_gpu("a100").capacity_bytes, "a100-sxm-80gb", releases.release("0.19")) == (2048, 256)
    assert budget.default_batch_limits(find_gpu("l4").capacity_bytes, "l4-24gb", releases.release("0.33")) == (2048, 256)
    assert budget.default_batch_limits(find_gpu("b200").capacity_bytes, "b200-180gb", releases.release("0.33")) == (16384, 1024)
    assert budget.default_batch_limits(find_gpu("b200").capacity_bytes, "b200-180gb", releases.release("0.19")) == (8192, 1024)


# ------------------------------------------------------------------------------------------ properties

@settings(max_examples=60, deadline=None)
@given(mem=st.integers(min_value=1, max_value=200 * GIB), seq=st.integers(min_value=1, max_value=131072),
       version=st.sampled_from([r.first for r in releases.RELEASES]))
def test_pool_properties(mem, seq, version):
    spec = resolve_model(str(CONFIGS / "gemma-3-27b.json"))
    est = vllm.estimate(dataclasses.replace(_req(spec, seq=seq, mem=mem), engine_version=version))
    assert est.num_gpu_blocks == mem // est.bytes_per_block
    assert est.max_concurrency == est.num_gpu_blocks / est.blocks_per_request
    room = mem - (est.bytes_per_block if releases.release(version).null_block_reserved_before_fit else 0)
    assert est.starts == (est.bytes_per_block * est.blocks_per_request <= room)
    # fits also needs the request's blocks beside the null block: 0.19 starts with one block too few for it
    assert est.fits == (est.starts and est.blocks_per_request <= est.num_gpu_blocks - 1)
    if not est.starts and est.estimated_max_model_len:
        shorter = vllm.estimate(dataclasses.replace(_req(spec, seq=est.estimated_max_model_len, mem=mem), engine_version=version))
        assert shorter.starts
        longer = vllm.estimate(dataclasses.replace(_req(spec, seq=est.estimated_max_model_len + 1, mem=mem), engine_version=version))
        assert not longer.starts


@settings(max_examples=30, deadline=None)
@given(mem=st.integers(min_value=GIB, max_value=100 * GIB))
def test_more_memory_never_fewer_blocks(mem):
    r = _req(CONFIGS / "qwen3-next-80b-a3b-thinking.json", mem=mem)
    a = vllm.estimate(r)
    b = vllm.estimate(dataclasses.replace(r, kv_cache_memory=mem + GIB // 3))
    assert b.num_gpu_blocks >= a.num_gpu_blocks


def _scout_like(pattern=("chunked*3", "full"), architecture="Llama4ForConditionalGeneration"):
    """Llama-4-Scout's attention: 48 layers, 8 KV heads of 128, bf16, chunked-local layers of 8192 tokens with
    every 4th layer full (no RoPE)."""
    from kvplan.core.spec import spec_from_mapping

    return spec_from_mapping(dict(name="scout-like", layers=48, attention_heads=40, kv_heads=8, head_dim=128,
                                  dtype="bf16", params=108_000_000_000, attention_chunk_size=8192,
                                  layout={"pattern": list(pattern)}, architecture=architecture))


def test_chunked_local_layers_hold_the_chunk_and_the_tokens_in_flight():
    """ChunkedLocalAttentionSpec (v1/kv_cache_interface.py): page as full attention, cdiv(min(chunk + in flight,
    max_model_len), B) blocks a request; a group of its own beside the full layers (hybrid manager on by default:
    VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 in both releases)."""
    page = 16 * 8 * (128 + 128) * 2  # 65,536 B: one layer, one block
    r = _req(_scout_like(), seq=131072, mem=40 * GIB)
    old = vllm.estimate(dataclasses.replace(r, engine_version="0.19"))
    # 36 chunked + 12 full: group size 12 (36 >= 1.5 x 12), chunked split in 3 groups, no padding
    assert [(g.kind, g.window, g.layers, g.padding_layers) for g in old.kv_cache_groups] == \
        [("chunked", 8192, 12, 0)] * 3 + [("full", None, 12, 0)]
    assert old.bytes_per_block == 12 * page == 786_432
    # 0.19: in flight = max_num_batched_tokens 8192 -> cdiv(min(8192 + 8192, 131072), 16) = 1024; full: 131072 / 16
    assert [g.blocks_per_request for g in old.kv_cache_groups] == [1024, 1024, 1024, 8192]
    assert old.blocks_per_request == 3 * 1024 + 8192 == 11_264
    assert old.num_gpu_blocks == 40 * GIB // 786_432 == 54_613
    assert old.kv_cache_tokens == 54_613 // 4 * 16 == 218_448
    assert f"{old.max_concurrency:.2f}" == "4.85" and old.max_batch == (54_613 - 1) // 11_264 == 4
    assert old.kv_bytes == 11_264 * 786_432
    # 0.33: two batches in flight -> cdiv(8192 + 16384, 16) = 1536
    new = vllm.estimate(dataclasses.replace(r, engine_version="0.33"))
    assert [g.blocks_per_request for g in new.kv_cache_groups] == [1536, 1536, 1536, 8192]
    assert new.blocks_per_request == 12_800 and new.kv_cache_tokens == int(54_613 / 12_800 * 131072)
    assert any("current chunk plus the tokens in flight" in n for n in new.notes)
    # at 8K the chunk and the tokens in flight reach past max_model_len: every layer is charged 8192 / 16
    short = vllm.estimate(dataclasses.replace(_req(_scout_like(), seq=8192, mem=40 * GIB), engine_version="0.19"))
    assert {g.blocks_per_request for g in short.kv_cache_groups} == {512}
    assert any("charged the whole max_model_len" in n for n in short.notes)


def test_chunked_only_model_is_one_group():
    est = vllm.estimate(dataclasses.replace(_req(_scout_like(pattern=("chunked",)), seq=131072, mem=40 * GIB), engine_version="0.19"))
    (g,) = est.kv_cache_groups
    assert (g.kind, g.layers, g.blocks_per_request) == ("chunked", 48, 1024)
    assert est.bytes_per_block == 48 * 65_536 and est.num_gpu_blocks == 40 * GIB // (48 * 65_536)
    # the chunk caps the blocks of every length: no length runs out of memory, kvplan's token limit caps it
    from kvplan.core.units import MAX_TOKENS

    assert est.max_seq == MAX_TOKENS


def _gpu_req(spec, gpu, **kw):
    g = find_gpu(gpu)
    return _req(spec, hw=Hardware(g.name, g.capacity_bytes), **kw)


def test_qwen3_next_attention_block_by_version_and_gpu():
    """docs/engines/vllm.md 2.5: one Mamba (GDN) state of Qwen3-Next at TP 1 in bf16 is conv 8192 x 3 + recurrent
    32 x 128 x 128, x 2 B = 1,097,728 B; an attention token 2 heads x (256 + 256) x 2 B = 2,048 B: 536 tokens.
    0.19 aligns to 16 -> 544. 0.33 turns prefix caching on for hybrids (mamba_cache_mode align) and on Hopper
    FlashInfer's GDN prefill puts checkpoints on 64-token boundaries -> 64 x cdiv(536, 64) = 576, and a request
    holds 2 + 1 state blocks; with Triton's GDN prefill (A100) 544 and 2 blocks; without prefix caching 544, 1."""
    spec = resolve_model(str(CONFIGS / "qwen3-next-80b-a3b-thinking.json"))
    mem = 20 * GIB

    def run(gpu, version, **kw):
        est = vllm.estimate(dataclasses.replace(_gpu_req(spec, gpu, seq=32768, mem=mem, **kw), engine_version=version))
        mamba = [g for g in est.kv_cache_groups if g.kind == "mamba"]
        return est.block_size, {g.blocks_per_request for g in mamba}, est

    assert run("h100-sxm-80gb", "0.19")[:2] == (544, {1})
    assert run("a100-sxm-80gb", "0.19")[:2] == (544, {1})
    b, held, est = run("h100-sxm-80gb", "0.33")
    assert (b, held) == (576, {3})
    # 12 full layers, 36 GDN layers in 3 groups of 12: cdiv(32768, 576) + 3 x 3 blocks a request; page 576 x 2,048 B
    assert est.blocks_per_request == 57 + 9 and est.bytes_per_block == 12 * 576 * 2048
    assert est.num_gpu_blocks == mem // (12 * 576 * 2048)
    assert est.state_bytes == 3 * 3 * 12 * 576 * 2048  # 3 blocks in each of the 3 Mamba groups, padded pages
    assert run("a100-sxm-80gb", "0.33")[:2] == (544, {2})
    assert run("h100-sxm-80gb", "0.33", prefix_caching=False)[:2] == (544, {1})
    with pytest.raises(UnsupportedError, match="prefix caching"):
        run("h100-sxm-80gb", "0.19", prefix_caching=True)
    # a GPU kvplan cannot place: FlashInfer assumed, and said
    unknown = vllm.estimate(dataclasses.replace(_req(spec, seq=32768, mem=mem), engine_version="0.33"))
    assert unknown.block_size == 576 and any("assumed FlashInfer" in n for n in unknown.notes)


def test_mamba_hybrid_without_gdn_holds_two_state_blocks_on_0_33():
    """Jamba's Mamba layers export no prefill checkpoints: align mode holds 2 state blocks, the block is unchanged."""
    spec = resolve_model(str(CONFIGS / "jamba-1.5-mini.json"))
    old = vllm.estimate(dataclasses.replace(_gpu_req(spec, "h100-sxm-80gb", seq=32768, mem=20 * GIB), engine_version="0.19"))
    new = vllm.estimate(dataclasses.replace(_gpu_req(spec, "h100-sxm-80gb", seq=32768, mem=20 * GIB), engine_version="0.33"))
    assert old.block_size == new.block_size
    assert {g.blocks_per_request for g in old.kv_cache_groups if g.kind == "mamba"} == {1}
    assert {g.blocks_per_request for g in new.kv_cache_groups if g.kind == "mamba"} == {2}
    assert new.state_bytes == 2 * old.state_bytes


# ------------------------------------------------------------------------------------------ CLI

def test_cli_estimate_vllm_json(cli):
    code, out, _ = cli("estimate", CONFIGS / "llama-3.1-8b.json", "--engine", "vllm", "--gpu", "h100", "--seq", "8K",
                       "--json")
    assert code == 0
    d = json.loads(out)
    for key in ("model", "engine", "seq", "batch", "kv_dtype", "dtype", "kv_bytes_per_token", "kv_bytes", "state_bytes",
                "cache_bytes", "params", "weights_bytes", "per_gpu", "fits", "max_batch", "max_seq", "block_size",
                "num_gpu_blocks", "available_kv_bytes", "kv_cache_tokens", "max_concurrency"):
        assert key in d
    assert d["engine"] == "vllm" and d["kv_bytes_per_token"] == 131072 and d["block_size"] == 16
    assert d["estimated_max_model_len"] is None
    assert d["num_gpu_blocks"] == d["available_kv_bytes"] // (32 * 16 * 8 * 256 * 2)


def test_cli_estimate_vllm_does_not_fit(cli):
    code, out, err = cli("estimate", CONFIGS / "llama-3.1-8b.json", "--engine", "vllm", "--kv-cache-memory", "4GiB",
                         "--seq", "128K")
    assert code == 1
    assert "does NOT start" in out and "--max-model-len 32752" in out


def test_cli_estimate_vllm_text_shows_every_budget_term(cli):
    code, out, _ = cli("estimate", MODELS / "google--gemma-3-4b-it", "--engine", "vllm", "--gpu", "h100", "--seq", "8192")
    assert code == 0
    for term in ("requested", "weights", "activation peak", "non-torch", "CUDA graphs", "available KV cache memory",
                 "num_gpu_blocks", "padding"):
        assert term in out


def test_cli_batch_that_does_not_fit_exits_1(cli):
    """vLLM starts, but the pool holds 3 sequences of 128K: 16 do not fit (exit 1), with the fix."""
    code, out, err = cli("estimate", CONFIGS / "llama-3.1-8b.json", "--engine", "vllm", "--gpu", "h100", "--seq", "128K",
                         "--batch", "16", "--json")
    assert code == 1
    d = json.loads(out)
    assert d["starts"] is True and d["fits"] is False and d["max_batch"] == 3 and d["suggestions"]


def test_tied_head_is_stored_once_and_copied_to_the_last_pp_stage():
    """A tied output head is the embedding (one tensor) on one GPU; under PP the last stage holds a copy."""
    import dataclasses

    from kvplan.model import catalog
    from kvplan.core.dtypes import dtype
    from kvplan.engines.vllm.budget import stage_weight_bytes

    spec = catalog.resolve_model("gemma-2-9b")
    assert spec.tie_word_embeddings is True
    untied = dataclasses.replace(spec, tie_word_embeddings=False)
    bf16 = dtype("bf16")
    embed = spec.vocab_size * spec.hidden_size * 2
    # one GPU: the same checkpoint either way (params count the tied head once)
    assert stage_weight_bytes(spec, None, bf16, 1, 1) == stage_weight_bytes(untied, None, bf16, 1, 1)
    # two stages: the first holds the embedding, the last a copy of it as the head: one embedding more
    # than one GPU holds (floor division of the layer bytes per stage may drop a byte or two)
    tied_pp = stage_weight_bytes(spec, None, bf16, 1, 2)
    one_gpu = stage_weight_bytes(spec, None, bf16, 1, 1)
    rotary = (spec.max_context or 0) * spec.head_dim * 2
    assert abs((sum(tied_pp) - 2 * rotary) - (one_gpu[0] - rotary) - embed) <= 2
    # untied: the head was always there; two stages hold exactly the one-GPU bytes between them
    untied_pp = stage_weight_bytes(untied, None, bf16, 1, 2)
    assert abs((sum(untied_pp) - 2 * rotary) - (one_gpu[0] - rotary)) <= 2


@pytest.mark.parametrize("version", ["0.19", "0.33"])
def test_max_seq_holds_when_applied_even_from_a_tiny_max_model_len(version):
    """At --seq 1 vLLM's default max_num_batched_tokens shrinks to max_num_seqs x max_model_len (256 on a 48 GB
    L40S), so the activation peak is small; the longest max_model_len must be judged with the batch limits vLLM
    would pick at that length, or applying it does not fit (found: 28432 reported, 6 of 7 held there)."""
    hw = Hardware("l40s-48gb", find_gpu("l40s-48gb").capacity_bytes)
    tiny = vllm.estimate(dataclasses.replace(_req("llama-3.1-8b", seq=1, batch=7, hw=hw), engine_version=version))
    assert tiny.max_num_batched_tokens == 256 and tiny.max_seq
    at = vllm.estimate(dataclasses.replace(_req("llama-3.1-8b", seq=tiny.max_seq, batch=7, hw=hw), engine_version=version))
    assert at.fits is True
    assert at.max_seq == tiny.max_seq
    past = vllm.estimate(dataclasses.replace(_req("llama-3.1-8b", seq=tiny.max_seq + 1, batch=7, hw=hw), engine_version=version))
    assert past.fits is False


def test_a_pipeline_stage_without_a_kv_cache_layer_cannot_be_judged():
    """Nemotron-Super's layers 42-69 are mostly no_op attention: at --pp 8 one stage holds no layer with a KV cache,
    and its worker's block has 0 bytes. Found: ZeroDivisionError (a traceback); now exit 3, saying why."""
    hw = Hardware("h100-sxm-80gb", find_gpu("h100").capacity_bytes)
    with pytest.raises(UnsupportedError, match="pipeline stage"):
        vllm.estimate(_req("llama-3.3-nemotron-super-49b", pp=8, hw=hw))
    assert vllm.estimate(_req("llama-3.3-nemotron-super-49b", pp=4, hw=hw)).num_gpu_blocks > 0


def test_every_suggested_length_is_checked():
    """Qwen1.5-MoE on two V100 16 GB stages: vLLM refuses to start (0.92 x total is more than is free), and stage 0
    would log an estimated maximum model length of 10288. Suggesting --max-model-len 10288 fixes nothing (it still
    does not start, and the model's context is 8192); suggest.py promises every candidate is re-run. Found: it was
    offered as the first fix."""
    hw = Hardware("v100-sxm2-16gb", find_gpu("v100-sxm2-16gb").capacity_bytes)
    req = _req("qwen1.5-moe-a2.7b", seq=32768, kv="fp8", pp=2, hw=hw)
    est = with_fixes("vllm", req)
    # (with the fused-MoE workspace in the profile, stage 1 has no KV memory left at all, so no length is estimated;
    # where one is, it is past the model's 8192, where vLLM would not start either)
    assert est.starts is False and (est.estimated_max_model_len is None or est.estimated_max_model_len > 8192)
    assert not any(s.startswith("--max-model-len") for s in est.suggestions)
