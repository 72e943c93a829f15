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
    # SGLang has no plain fp8 (kvplan takes it as fp8_e4m3: test_sglang_kv_spelling.py); fp16 no release takes
    with pytest.raises(InputError, match="SGLang has no KV-cache dtype 'fp16'"):
        sglang.estimate(_req("llama-3.1-8b", kv="fp16", mem=GIB))


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


# ------------------------------------------------------------------ release lines (kvplan/engines/sglang/releases.py)

from kvplan.engines.sglang import budget as sglang_budget
from kvplan.engines.sglang import releases as sglang_releases
from kvplan.model.catalog import find_gpu
from kvplan.engines.api import Hardware

DATA = Path(__file__).parent / "data"


def _hw(name):
    g = find_gpu(name)
    return Hardware(g.name, g.capacity_bytes)


@pytest.mark.parametrize("version, key, line", [
    ("0.4.3.post4", (0, 4, 3, 4), "0.4.0-0.4.5"), ("v0.4.2.post2-rocm630", (0, 4, 2, 2), "0.4.0-0.4.5"),
    ("0.5", (0, 5, 23, 0), "0.5.20-0.5.23"), ("0.4", (0, 4, 10, 2), "0.4.7.post1-0.5.2"),
    ("0.4.7.post1", (0, 4, 7, 1), "0.4.7.post1-0.5.2"), ("0.5.12", (0, 5, 12, 0), "0.5.10-0.5.19"),
])
def test_release_versions_parse_into_lines(version, key, line):
    rel = sglang_releases.release(version)
    assert rel.key == key and rel.line == line


@pytest.mark.parametrize("version, error", [("0.5.0", InputError), ("banana", InputError),
                                            ("0.2.9", UnsupportedError), ("0.6.0", UnsupportedError)])
def test_versions_outside_the_registry_are_refused(version, error):
    """No such release (0.5.0 was never published) or no version: bad input; a release not read: cannot judge
    (engines/releases.py)."""
    with pytest.raises(error):
        sglang_releases.release(version)


@pytest.mark.parametrize("version, gpu_mib, tp, want", [
    # the TP table (server_args.py ServerArgs.__post_init__): 0.4.x >=4: 0.85 -- the L4 x4 log's server_args print
    # mem_fraction_static=0.85 (didier-durand-qwq32b-4xL4-tp4-v0.4.3); 0.3.0: >=8 is 0.83, 0.3.6: 0.82, 0.4.0: 0.81
    ("0.4.3.post4", 23034, 4, "0.85"), ("0.3.0", 81559, 8, "0.83"), ("0.3.6", 81559, 8, "0.82"),
    ("0.4.0", 81559, 8, "0.81"), ("0.4.4", 40960, 1, "0.88"),  # the A800-40G log prints 0.88 at tp 1
    # 0.4.6 over 81920 MiB: (143771 - 13 x 1024) / 143771, unrounded
    ("0.4.6", 143771, 1, Fraction(143771 - 13312, 143771)),
    # 0.4.7: B200 > 180,000 MiB -> 0.79; H200: min(0.88 + 48 x 1024 x 0.12 / 143771, (143771 - 18432) / 143771)
    ("0.4.7", 183359, 1, "0.79"), ("0.4.7", 143771, 1, Fraction(143771 - 18432, 143771)),
    # 0.4.7.post1: H100 (9.5 + 1/2) GiB reserved: round((81559 - 10240) / 81559, 3) = round(0.87444, 3)
    ("0.4.7.post1", 81559, 1, "0.874"), ("0.5.2", 23034, 4, "0.858"),  # (2.8 + 0.4) x 1024 = 3276.8 MiB
    # 0.5.5 (no prefill graphs by default): L40S bin C 4096, B 32: 512 + 6144 + 128 + 64 = 6848 MiB,
    # round(39220 / 46068, 3) = 0.851 -- the auto value the L40S log prints (sglang-pr13023)
    ("0.5.5", 46068, 1, "0.851"),
    # 0.5.10: prefill graphs on, 50 sizes up to 4096: + 400 MiB -> 7248, round(38820 / 46068, 3) = 0.843
    ("0.5.10", 46068, 1, "0.843"),
])
def test_default_mem_fraction_per_release(version, gpu_mib, tp, want):
    frac, _, _ = sglang.default_mem_fraction(gpu_mib, tp, 1, mla=False, rel=sglang_releases.release(version))
    assert frac == (want if isinstance(want, Fraction) else Fraction(want))


def test_real_log_server_args_fractions():
    """The mem_fraction_static three logs print without the flag, against the release rule."""
    by_id = {json.loads(line)["id"]: json.loads(line) for line in
             (DATA / "sglang_logs" / "index.jsonl").read_text(encoding="utf-8").splitlines()}
    assert "mem_fraction_static=0.85" in by_id["didier-durand-qwq32b-4xL4-tp4-v0.4.3"]["server_args"][0]
    assert "mem_fraction_static=0.851" in by_id["sglang-pr13023-llama31-8b-l40s-server-args"]["server_args"][0]
    assert "mem_fraction_static=0.88" in by_id["sglang-4708-gemma3-4b-a800-40g-server-args"]["server_args"][0]


@pytest.mark.parametrize("version, name, outcome", [
    ("0.5.23", "fp16", InputError), ("0.4.0", "float16", InputError),  # no release takes fp16 (R9)
    ("0.5.3", "bf16", InputError), ("0.5.4", "bf16", "bf16"),  # bf16 from 0.5.4
    ("0.4.1", "fp8_e4m3", InputError), ("0.4.1.post6", "fp8_e4m3", "fp8_e4m3"),
    ("0.5.23", "mxfp8", UnsupportedError),  # accepted by SGLang, scales not modelled: exit 3
])
def test_kv_dtype_choices_per_release(version, name, outcome):
    req = _req("llama-3.1-8b", kv=name, mem=GIB, engine_version=version)
    if isinstance(outcome, str):
        assert sglang.estimate(req).kv_dtype == outcome
    else:
        with pytest.raises(outcome):
            sglang.estimate(req)


def test_multimodal_factor_and_pool_of_the_gemma3_log():
    """sglang-pr4826 (0.4.4 main, gemma-3-4b on a ~141 GB card): "Load weight end ... avail mem=131.08 GB, mem
    usage=8.13 GB", "#tokens: 834615". 0.4.4 multiplies the default 0.88 by 0.95 for a multimodal model (R1):
    0.836; rest = 131.08 - 139.21 x 0.164 = 108.24956 GiB; cell = 34 layers x 4 heads x (256 + 256) x 2 B =
    139,264; int(108.24956 x 2**30) // 139,264 = 834,603, and the printed figures' rounding (+-0.005 GiB each)
    spans 834,569 ... 834,637: the logged 834,615 is in it."""
    rel = sglang_releases.release("0.4.4.post2")
    assert sglang_budget.multimodal_factor(rel, 419_816_304, user_given=True) == Fraction(95, 100)
    mfs = Fraction(88, 100) * Fraction(95, 100)
    lo = int((Fraction("131.075") - Fraction("139.215") * (1 - mfs)) * GIB) // 139_264
    hi = int((Fraction("131.085") - Fraction("139.205") * (1 - mfs)) * GIB) // 139_264
    assert lo <= 834_615 <= hi
    spec = DATA / "vllm_models" / "google--gemma-3-4b-it" / "config.json"
    est = sglang.estimate(engine_request(spec, 8192, gpu="h200-141gb", engine_version="0.4.4.post2"))
    assert est.mem_fraction_static == "0.836" and est.cell_size == 139_264 and est.swa_tokens is None


def test_the_l4_log_pool_from_its_logged_budget():
    """didier-durand-qwq32b-4xL4-tp4-v0.4.3: P 21.63, A 6.09, mem_fraction_static 0.85, 46,611 tokens. QwQ-32B
    (64 layers, 8 KV heads, head_dim 128, bf16) at tp 4: cell = 64 x 2 x 256 x 2 B = 65,536; rest = 6.09 - 21.63 x
    0.15 = 2.8455 GiB -> 46,620 tokens; the rounding of the printed figures spans 46,526 ... 46,714. 0.4.3 has no
    page rounding (R3)."""
    lo = int((Fraction("6.085") - Fraction("21.635") * Fraction(15, 100)) * GIB) // 65_536
    hi = int((Fraction("6.095") - Fraction("21.625") * Fraction(15, 100)) * GIB) // 65_536
    assert lo <= 46_611 <= hi
    assert not sglang_releases.release("0.4.3.post4").page_rounding


def test_free_before_load_out_of_sample():
    """P modelled with constants fitted without the log's own source: L4 x4 over PCIe within 0.3 GiB of the
    logged 21.63 (its CUDA context is then the mean of the Hopper logs, 0.55 GiB, against its own 0.29)."""
    errors = {log: e for log, _, e in sglang_budget.free_before_errors()}
    assert abs(errors["didier-durand-qwq32b-4xL4-tp4-v0.4.3"]) < 0.3 * GIB
    assert abs(errors["sglang-pr4826-gemma3-multimodal-141gb-tp1-v0.4.4"]) < 0.15 * GIB
    # in-sample the fit reproduces the L4 log: 22.045 GiB - 0.285 context - 0.13 NCCL = 21.63
    b = sglang_budget.budget(find_gpu("l4").capacity_bytes, weights=0, mfs=Fraction(1), tp=4, pp=1,
                             architecture="ada", link="pcie")
    assert abs(b.free_before_load_bytes - int(Fraction("21.63") * GIB)) < 0.006 * GIB


def test_weight_residual_recomputed():
    """budget.WEIGHT_RESIDUALS: the gemma-3-4b log's 8.13 GiB of load against kvplan's weights (8.072 GiB)."""
    from kvplan.engines.runtime.weights import stage_weight_bytes
    from kvplan.core.dtypes import dtype

    spec = resolve_gemma = __import__("kvplan.model.catalog", fromlist=["resolve_model"]).resolve_model(
        str(DATA / "vllm_models" / "google--gemma-3-4b-it" / "config.json"))
    w = stage_weight_bytes(spec, None, dtype("bf16"), 1, 1)[0]
    want = dict(sglang_budget.WEIGHT_RESIDUALS)["sglang-pr4826-gemma3-multimodal-141gb-tp1-v0.4.4"]
    assert abs((Fraction("8.13") * GIB - w) / w - want) < Fraction(5, 10000)


def test_gpu_reserved_comes_off_the_free_memory():
    base = sglang.estimate(_req("llama-3.1-8b", seq=8192, gpu="h100"))
    less = sglang.estimate(_req("llama-3.1-8b", seq=8192, gpu="h100", gpu_reserved_bytes=GIB))
    assert base.free_before_load_bytes - less.free_before_load_bytes == GIB
    # rest = A - P (1 - mfs) loses mfs x 1 GiB (the float steps round it by a byte at most)
    assert abs((base.available_kv_bytes - less.available_kv_bytes) - GIB * 0.83) <= 2


@pytest.mark.parametrize("version, page", [("0.5.6", 1), ("0.5.7", 64)])
def test_blackwell_mha_pages(version, page):
    """0.5.7+ picks trtllm_mha on sm100 for MHA models: pages of 64 tokens (R7)."""
    est = sglang.estimate(_req("llama-3.1-8b", seq=8192, gpu="b200", engine_version=version))
    assert est.page_size == page and est.max_total_num_tokens % page == 0


def test_page_size_flag_before_it_existed():
    with pytest.raises(InputError, match="0.4.4"):
        sglang.estimate(_req("llama-3.1-8b", mem=GIB, block_size=16, engine_version="0.4.3"))


@pytest.mark.parametrize("version, split", [("0.4.9", False), ("0.4.9.post3", True), ("0.5.6", True),
                                            ("0.5.7", False), ("0.5.23", False)])
def test_gemma3_sliding_pool_per_era(version, split):
    """R4: 0.4.9.post3-0.5.6 split every model class with a sliding window, Gemma-3 included; 0.5.7 none; 0.5.8+
    the allowlist, without Gemma-3. Gemma-3-27B: 62 layers (52 sliding, 10 full), 16 KV heads x 256 x 2 B = 8,192
    B per layer; 10 GiB // (62 x 8,192) = 21,140 tokens all-full; split: int(21,140 x 62 / (0.8 x 52 + 10)) =
    25,400 full, int(25,400 x 0.8) = 20,320 sliding."""
    est = sglang.estimate(_req("gemma-3-27b", seq=8192, mem=10 * GIB, engine_version=version))
    if split:
        assert (est.max_total_num_tokens, est.swa_tokens) == (25_400, 20_320)
    else:
        assert (est.max_total_num_tokens, est.swa_tokens) == (21_140, None)


def test_gpt_oss_sliding_pool_per_era():
    """gpt-oss joined the sliding classes in 0.5.1, but server_args.py's GPT-OSS branch sets disable_hybrid_swa_memory
    = True in 0.5.1-0.5.7 (one pool for every layer); 0.5.8-0.5.9 only with trtllm_mha (its default on SM100) or
    speculative decoding; the 0.5.8 allowlist keeps the split elsewhere, and 0.5.10 on every GPU."""
    def split(v, **kw):
        return sglang.estimate(_req("gpt-oss-20b", seq=8192, mem=10 * GIB, engine_version=v, **kw)).swa_tokens
    assert split("0.4.10") is None and split("0.5.1") is None and split("0.5.7") is None
    assert split("0.5.8") == int(242_725 * Fraction(4, 5)) and split("0.5.10", gpu="b200") is not None
    assert split("0.5.8", gpu="b200") is None  # trtllm_mha, GPT-OSS's default on SM100 in 0.5.8
    assert split("0.5.8", gpu="b200", engine_options=(("attention_backend", "triton"),)) == int(242_725 * Fraction(4, 5))


def test_mamba_rules_per_release():
    with pytest.raises(UnsupportedError, match="0.5.2"):
        sglang.estimate(_req("qwen3-next-80b-a3b-thinking", seq=8192, mem=40 * GIB, engine_version="0.5.1"))
    fixed = sglang.estimate(_req("qwen3-next-80b-a3b-thinking", seq=8192, mem=40 * GIB, engine_version="0.5.2"))
    per = fixed.mamba_state_per_request_bytes
    assert fixed.max_mamba_cache_size == 512 and fixed.available_kv_bytes == 40 * GIB - 512 * per
    # 0.5.3.post2: ratio 0.2: state budget = rest x 0.2 / 1.2
    low = sglang.estimate(_req("qwen3-next-80b-a3b-thinking", seq=8192, mem=40 * GIB, engine_version="0.5.3.post2"))
    assert low.max_mamba_cache_size == int((40 * GIB * Fraction(1, 6) - per) // per)


def test_unified_memory_is_refused_or_needs_what_is_in_use():
    # 0.4.9.post3-0.5.8 read cudaMemGetInfo's free memory, which leaves the page cache out: no reading covers it
    with pytest.raises(UnsupportedError, match="shares its memory") as info:
        sglang.estimate(_req("llama-3.1-8b", seq=8192, gpu="gb10", engine_version="0.5.8"))
    assert info.value.exit_code == 3 and "--gpu-reserved" in info.value.hint
    given = sglang.estimate(_req("llama-3.1-8b", seq=8192, gpu="gb10", gpu_reserved_bytes=49 * GIB))
    assert given.fits is not None and given.in_use_bytes == 49 * GIB
    # 0.3.6-0.4.9.post2 read nvidia-smi's memory.total, which GB10 does not print: SGLang stops at start
    old = sglang.estimate(_req("llama-3.1-8b", seq=8192, gpu="gb10", engine_version="0.4.6"))
    assert old.fits is False and old.starts is False and "No GPU memory values found" in " ".join(old.notes)


def test_unified_memory_host_share_band():
    """SGLang 0.5.9+ reads an integrated GPU's free memory from psutil (utils/common.py get_available_gpu_memory), as
    vLLM's public GB10 readings did (kvplan/engines/runtime/unified.py). Not given, the host's share is judged at the
    largest reading, total - free = 121.69 - 100.94 GiB of a TP-3 run less vLLM's 1546 MiB of context and NCCL there:
    P = capacity - SGLang's own CUDA context - that share; the band's top is the pool at the smallest share."""
    from kvplan.engines.runtime import unified
    est = sglang.estimate(_req("llama-3.1-8b", seq=8192, gpu="gb10"))
    capacity = find_gpu("gb10").capacity_bytes
    largest = round((121.69 - 100.94) * GIB) - 1546 * 2**20
    assert max(r.host_share_bytes for r in unified.HOST_SHARE_READINGS) == largest
    assert est.free_before_load_bytes == capacity - est.cuda_context_bytes - largest and est.in_use_bytes == largest
    # the pool moves by mem_fraction_static of each byte: the smallest share's pool tops the band
    smallest = min(r.host_share_bytes for r in unified.HOST_SHARE_READINGS)
    told = sglang.estimate(_req("llama-3.1-8b", seq=8192, gpu="gb10", gpu_reserved_bytes=smallest))
    assert told.available_kv_bytes_high == est.available_kv_bytes_high
    assert told.available_kv_bytes > est.available_kv_bytes
    assert any("shares its memory with the host" in n for n in est.notes)


def test_short_pool_says_sglang_starts():
    """R3: SGLang never shrinks the context nor fails on a short pool; requests are capped at N - 1."""
    est = sglang.estimate(_req("llama-3.1-8b", seq=131072, mem=8 * GIB))
    view = est.pool_view()
    # `starts` means "starts and serves one request of seq" (docs/json.md): false; the engine does start, with the
    # requests capped, which estimated_max_model_len and the problem's action say
    assert est.fits is False and est.starts is False and est.estimated_max_model_len == est.max_total_num_tokens - 1
    assert "SGLang starts" in view.problem.action and f"{est.max_total_num_tokens - 1:,}" in view.problem.action


def test_band_and_pin_flag():
    est = sglang.estimate(_req("llama-3.1-8b", seq=8192, gpu="h100"))
    assert est.available_kv_bytes_low < est.available_kv_bytes < est.available_kv_bytes_high
    assert est.pin_flag.startswith("--max-total-tokens ") and est.pinned_fits is True
    pinned = int(est.pin_flag.split()[-1])
    assert pinned == (est.available_kv_bytes_low // est.cell_size) and pinned < est.max_total_num_tokens
    given = sglang.estimate(_req("llama-3.1-8b", seq=8192, mem=10 * GIB))
    assert given.available_kv_bytes_low == given.available_kv_bytes_high == 10 * GIB and given.marginal is None


def test_site_profile_terms_apply():
    """A calibration profile's memory in use comes off P like --gpu-reserved; its non-torch figure replaces the
    measured CUDA context and distributed init."""
    from kvplan.engines.calibration import SiteProfile

    reserved = sglang.estimate(_req("llama-3.1-8b", seq=8192, gpu="h100", gpu_reserved_bytes=GIB))
    site = sglang.estimate(_req("llama-3.1-8b", seq=8192, gpu="h100", site=SiteProfile(None, memory_in_use_bytes=GIB)))
    assert site.free_before_load_bytes == reserved.free_before_load_bytes
    own = sglang.estimate(_req("llama-3.1-8b", seq=8192, gpu="h100", site=SiteProfile(None, non_torch_bytes=400 * 2**20)))
    assert own.free_before_load_bytes == find_gpu("h100").capacity_bytes - 400 * 2**20 and own.dist_init_bytes == 0
