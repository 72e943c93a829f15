"""kvplan's SGLang engine against the rules and worked example of docs/engines/sglang.md (SGLang 0.5.23)."""

from __future__ import annotations

import dataclasses

import json
from fractions import Fraction
from pathlib import Path

import pytest

from kvplan.core import dtypes
from kvplan.engines import EngineRequest, sglang
from kvplan.engines.sglang import engine as sglang_engine
from kvplan.core.errors import InputError, UnsupportedError

from engine_requests import engine_request, with_fixes

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
GIB = 2**30


def _req(name, seq=131072, **kw):
    return engine_request(CONFIGS / f"{name}.json", seq, **kw)


@pytest.mark.parametrize("gpu_mib, tp, want", [
    (81559, 1, "0.83"), (81559, 8, "0.812"), (143771, 1, "0.903"), (143771, 8, "0.893"), (15360, 1, "0.735"),
    (23028, 1, "0.684"), (40960, 1, "0.823"), (46068, 1, "0.843"), (81920, 1, "0.83"), (95830, 1, "0.855"),
    (183359, 1, "0.854"), (183359, 8, "0.849"), (24564, 8, "0.658"),
])
def test_default_mem_fraction_static(gpu_mib, tp, want):
    """The table of docs/engines/sglang.md S4 (text-only, CUDA, default flags)."""
    frac, _, _ = sglang.default_mem_fraction(gpu_mib, tp, 1, mla=False)
    assert frac == Fraction(want)


def test_worked_example_tokens_and_requests():
    """Llama-3.1-8B, one H100: rest 54,033,158,189 B (from the measured P and A) -> 412,240 tokens, 2048 requests."""
    est = sglang.estimate(_req("llama-3.1-8b", mem=54_033_158_189))
    assert est.cell_size == 131_072
    assert est.max_total_num_tokens == 412_240
    assert est.max_running_requests == 2048
    assert est.fits and est.max_batch == 3  # 412,240 // 131,072
    four = sglang.estimate(_req("llama-3.1-8b", mem=54_033_158_189, batch=4))
    assert four.starts is True and four.fits is False and four.serves_batch is False


def test_modelled_budget_close_to_worked_example():
    est = sglang.estimate(_req("llama-3.1-8b", gpu="h100"))
    assert est.mem_fraction_static == "0.83" and est.gpu_mem_mib == 81559
    assert abs(est.max_total_num_tokens - 412_240) / 412_240 < 0.005


def test_sliding_window_sized_as_full_outside_the_whitelist():
    gemma = sglang.estimate(_req("gemma-2-9b", seq=8192, mem=10 * GIB))
    assert gemma.swa_tokens is None
    assert gemma.cell_size == 42 * 8 * 512 * 2  # every layer at full length
    assert any("sized as full attention" in n for n in gemma.notes)
    oss = sglang.estimate(_req("gpt-oss-20b", seq=8192, mem=10 * GIB))
    assert oss.swa_tokens == int(oss.max_total_num_tokens * Fraction(4, 5))
    per = 8 * 128 * 2  # 8 KV heads x (64 + 64) x 2 B
    assert oss.max_total_num_tokens == int(10 * GIB // (12 * per + Fraction(4, 5) * 12 * per))


def test_page_size_rounds_down():
    est = sglang.estimate(_req("llama-3.1-8b", mem=54_033_158_189, block_size=64))
    assert est.max_total_num_tokens == 412_240 // 64 * 64


def test_mla_not_split_by_tp_and_replicated_heads():
    ds = [sglang.estimate(_req("deepseek-v3", seq=8192, tp=tp, mem=10 * GIB)) for tp in (1, 8)]
    assert ds[0].cell_size == ds[1].cell_size == 576 * 61 * 2
    qwen = sglang.estimate(_req("qwen2.5-7b", seq=8192, tp=8, mem=10 * GIB))  # 4 KV heads: one per rank
    assert qwen.cell_size == 1 * 256 * 28 * 2


def test_pp_split_gives_extra_layers_to_the_last_stages():
    assert sglang_engine._pp_counts(10, 4) == [2, 2, 3, 3]


def test_mamba_hybrid_state_pool():
    est = sglang.estimate(_req("qwen3-next-80b-a3b-thinking", seq=8192, mem=40 * GIB))
    assert est.max_mamba_cache_size and est.max_mamba_cache_size > 0
    # SSM state in float32: 32 heads x 128 x 128 x 4 B + conv 8192 x 3 x 2 B, per GDN layer, 36 layers
    assert est.mamba_state_per_request_bytes == 36 * (32 * 128 * 128 * 4 + 8192 * 3 * 2)
    assert est.cell_size == 12 * 2 * 512 * 2  # attention layers only


def test_refusals():
    with pytest.raises(UnsupportedError, match="Jamba"):
        sglang.estimate(_req("jamba-1.5-mini", seq=8192, mem=GIB))
    with pytest.raises(InputError, match="SGLang has no KV-cache dtype 'fp8'"):
        sglang.estimate(_req("llama-3.1-8b", kv="fp8", mem=GIB))


def test_too_small_pool_starts_but_caps_requests():
    est = with_fixes("sglang", _req("llama-3.1-8b", seq=131072, mem=8 * GIB))
    assert est.fits is False and est.estimated_max_model_len == est.max_total_num_tokens - 1
    assert any("--context-length" in s for s in est.suggestions)
    assert any(s.startswith("--kv-cache-dtype fp8_e4m3") or s.startswith("--context-length") for s in est.suggestions)


def test_cli_sglang(cli):
    code, out, _ = cli("estimate", CONFIGS / "llama-3.1-8b.json", "--engine", "sglang", "--gpu", "h100", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["engine"] == "sglang" and d["max_total_num_tokens"] > 400_000 and d["fits"] is True
    code, _, err = cli("estimate", CONFIGS / "jamba-1.5-mini.json", "--engine", "sglang", "--gpu", "h100")
    assert code == 3 and err.startswith("error:")


# ------------------------------------------------------------------ chunked-local attention (Llama 4)

def _scout_like(pattern=("chunked*3", "full"), architecture="Llama4ForConditionalGeneration", **extra):
    from kvplan.core.spec import spec_from_mapping

    return spec_from_mapping(dict(name="scout-like", layers=48, attention_heads=40, kv_heads=8, head_dim=128,
                                  dtype="bf16", params=108_000_000_000, attention_chunk_size=8192,
                                  layout={"pattern": list(pattern)}, architecture=architecture, **extra))


def _spec_req(spec, seq=131072, mem=40 * GIB):
    return EngineRequest(spec=spec, seq=seq, batch=1, kv_dtype="auto",
                         weight_fmt=None, kv_cache_memory=mem)


def test_llama4_chunked_layers_are_the_swa_pool():
    """S12: Llama4ForConditionalGeneration is a hybrid-SWA architecture; its SWA window is attention_chunk_size
    (resolve_sliding_window_size), its SWA layers (i + 1) % 4 != 0, i.e. the chunked ones."""
    est = sglang.estimate(_spec_req(_scout_like()))
    per_layer = 8 * (128 + 128) * 2  # 4,096 B a token
    assert est.cell_size == 12 * per_layer == 49_152  # the full layers only
    # cell = 49,152 + 0.8 x 36 x 4,096 = 167,116.8 B; 40 GiB / that = 257,003.6
    assert est.max_total_num_tokens == 257_003 and est.swa_tokens == int(257_003 * 0.8) == 205_602
    assert est.fits is True and est.max_batch == 1  # 257,003 // 131,072
    assert est.kv_bytes == 12 * per_layer * 131072 + 36 * per_layer * 8192
    # the SWA pool must exceed the window (the chunk) plus a page, or SGLang refuses to start:
    # 10,240 tokens (10,240 x 167,116.8 B) leave 8,192 SWA slots; 10,243 leave 8,194
    tight = sglang.estimate(_spec_req(_scout_like(), seq=4096, mem=1_711_276_032 + 1000))
    assert (tight.max_total_num_tokens, tight.swa_tokens, tight.starts) == (10_240, 8_192, False)
    enough = sglang.estimate(_spec_req(_scout_like(), seq=4096, mem=1_711_777_382 + 1000))
    assert (enough.max_total_num_tokens, enough.swa_tokens, enough.starts) == (10_243, 8_194, True)


def test_chunked_layers_outside_the_whitelist_are_sized_as_full():
    est = sglang.estimate(_spec_req(_scout_like(architecture="Llama4ForCausalLM")))
    assert est.cell_size == 48 * 4096 and est.swa_tokens is None
    assert est.max_total_num_tokens == 40 * GIB // (48 * 4096) == 218_453
    assert any("chunked-local layers are sized as full attention" in n for n in est.notes)


def test_chunked_layers_sglang_cannot_place_are_refused():
    with pytest.raises(UnsupportedError, match="others"):  # SGLang fixes Llama 4's SWA layers by index
        sglang.estimate(_spec_req(_scout_like(pattern=("full", "chunked*3"))))
    with pytest.raises(UnsupportedError, match="one window"):
        sglang.estimate(_spec_req(_scout_like(pattern=("chunked", "sliding", "full", "full"), sliding_window=4096)))
    with pytest.raises(UnsupportedError, match="only Llama 4"):
        sglang.estimate(_spec_req(_scout_like(architecture="GptOssForCausalLM")))


@pytest.mark.parametrize("batch", [1, 3, 4000])
def test_max_seq_is_the_longest_context_length_that_fits(batch):
    """max_seq is the largest --context-length L at which `fits` holds for `batch` requests: L = N fits (requests
    are capped at min(L - 1, N - 1) = L - 1 either way), so max_seq is not N - 1; and max_running_requests, which
    grows as L shrinks (S11), is judged at L, not at --seq (found: max_seq 55705 with N = 55706 for
    Llama-3.1-70B on 17 GiB, where --context-length 55706 fits)."""
    def at(seq):
        return sglang.estimate(_req("llama-3.1-70b", seq=seq, mem=17 * GIB, batch=batch))

    est = at(8192)
    assert est.max_seq and est.max_seq <= est.max_total_num_tokens
    assert at(est.max_seq).fits is True
    assert at(est.max_seq + 1).fits is False
    if batch == 1:
        assert est.max_seq == est.max_total_num_tokens


def test_requests_take_whole_pages():
    """With --page-size 64 (kvplan's --block-size) a request of 65 tokens takes two pages, 128 token slots
    (mem_cache paged allocator): 8192 slots hold 64 such requests, not 8192 // 65 = 126. Found: max_batch 126."""
    est = sglang.estimate(_req("llama-3.1-8b", seq=65, mem=GIB, block_size=64))
    assert est.page_size == 64 and est.max_total_num_tokens == 8192
    assert est.max_batch == 64
    assert sglang.estimate(_req("llama-3.1-8b", seq=65, mem=GIB, block_size=64, batch=65)).fits is False
    longest = sglang.estimate(_req("llama-3.1-8b", seq=65, mem=GIB, block_size=64, batch=64)).max_seq
    assert longest == 128  # two pages each: 64 x 128 = 8192
