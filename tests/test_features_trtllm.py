"""TensorRT-LLM's launch options as modelled terms (kvplan/engines/trtllm/features.py; issue 14): attention DP,
speculative decoding (MTP, one-model Eagle3), the cache transceiver of disaggregated serving, kv_cache_config's caps,
and the `trtllm-serve disaggregated` reader (check/readers/trtllm_disagg.py). Every figure is worked out by hand
from the model's config and TensorRT-LLM's rules (the file and function are named in each test); all in-process."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest

from kvplan.core import yamlio
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.engines import trtllm
from kvplan.engines.trtllm import serve_args

from engine_requests import engine_request

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "deployments" / "trtllm"
EAGLE3 = DATA / "spec_decode" / "eagle3-llama3.1-8b"
MIB = 2**20


def _est(model, seq=8192, *, options=(), **kw):
    return trtllm.estimate(engine_request(model, seq, engine_options=tuple(options) or None, **kw), search_max_seq=False)


@pytest.fixture(scope="module")
def deepseek_mtp_adp():
    """DeepSeek-V3 (bundled: 61 layers of MLA, kv_lora_rank 512 + rope 64; one MTP module) at TP 8 on H200s, MTP 1
    with attention DP: the deployment issue 14 names."""
    opts = (("enable_attention_dp", "true"), ("speculative_config.decoding_type", "MTP"),
            ("speculative_config.num_nextn_predict_layers", "1"))
    return _est("deepseek-v3", tp=8, gpu="h200", options=opts), _est("deepseek-v3", tp=8, gpu="h200")


def test_mtp_layer_joins_the_pool_not_the_estimator(deepseek_mtp_adp):
    with_mtp, plain = deepseek_mtp_adp
    # MLA keeps one latent per layer (SELFKONLY: kv_factor 1), bf16: (512 + 64) x 2 = 1,152 B per layer.
    # get_cache_size_per_token counts pp_layers(get_num_attention_layers()) = the 61 target layers;
    # get_pp_layers appends get_num_spec_layers = num_nextn_predict_layers = 1 layer on the last PP rank
    assert with_mtp.estimator_bytes_per_token == plain.estimator_bytes_per_token == 61 * 1152 == 70_272
    assert with_mtp.bytes_per_token == 62 * 1152 == 71_424
    assert plain.bytes_per_token == 70_272
    s = with_mtp.features.speculative
    assert (s.decoding_type, s.kv_layers, s.max_draft_len, s.extra_kv_tokens) == ("MTP", 1, 1, 0)
    # the pool stores 71,424 B for each of its tokens
    assert with_mtp.per_gpu.cache_bytes == with_mtp.num_blocks * 32 * 71_424


def test_mtp_weights_and_attention_dp_pools(deepseek_mtp_adp):
    with_mtp, plain = deepseek_mtp_adp
    spec = with_mtp and engine_request("deepseek-v3").spec
    # the MTP module: 11,610,067,968 parameters, of them one MoE layer's routed experts
    # (653,908,770,816 / 58 MoE layers = 11,274,289,152) split over the 8 ranks, the other 335,778,816 whole
    # (attention DP), at the checkpoint's linear bits
    from kvplan.engines.vllm.features import linear_bits

    experts = Fraction(653_908_770_816, 58)
    assert spec.mtp.params == 11_610_067_968 and experts == 11_274_289_152
    bits = linear_bits(spec, None, __import__("kvplan.core.dtypes", fromlist=["dtype"]).dtype("bf16"))
    expected = math.ceil((Fraction(11_610_067_968) - experts + experts / 8) * bits / 8)
    assert with_mtp.features.speculative.weights_per_gpu_bytes == expected
    f = with_mtp.features
    assert f.attention_dp and f.kv_head_split == 1 and f.pools == 8
    # each of the 8 ranks runs its own pool of the same size: the deployment holds 8 x one pool's requests
    assert with_mtp.max_concurrency == with_mtp.num_blocks // (8192 // 32)
    assert f.deployment_concurrency == 8 * with_mtp.max_concurrency
    # attention DP keeps attention and dense weights whole on every rank: more weights per GPU than TP 8 alone
    assert with_mtp.weights_per_gpu_bytes > plain.weights_per_gpu_bytes + with_mtp.features.speculative.weights_per_gpu_bytes
    assert f.weights_added_per_gpu_bytes == with_mtp.weights_per_gpu_bytes - plain.weights_per_gpu_bytes


def test_attention_dp_keeps_every_kv_head_on_a_rank():
    # Llama-3.1-70B: 80 layers, 8 KV heads of 128. TP 4 splits them 2 per rank; attention DP keeps all 8
    # (KVCacheManager.__init__: tp_size = 1 if mapping.enable_attention_dp): 80 x 8 x 128 x 2 (K, V) x 2 B
    dp = _est("llama-3.1-70b", tp=4, gpu="h200", options=(("enable_attention_dp", "true"),))
    tp = _est("llama-3.1-70b", tp=4, gpu="h200")
    assert dp.bytes_per_token == dp.estimator_bytes_per_token == 80 * 8 * 128 * 2 * 2 == 327_680
    assert tp.bytes_per_token == 80 * 2 * 128 * 2 * 2 == 81_920
    # a dense model: every weight whole on each rank, so the pool is what TP 1 weights leave
    assert dp.weights_per_gpu_bytes > 3 * tp.weights_per_gpu_bytes


def test_eagle3_one_model_head():
    est = _est("llama-3.1-8b", gpu="h100", options=(("speculative_config.decoding_type", "Eagle3"),
                                                     ("speculative_config.max_draft_len", "3"),
                                                     ("speculative_config.speculative_model_dir", str(EAGLE3))))
    # one EAGLE-3 layer (num_eagle_layers unset -> 1) with the target's 8 KV heads of 128: 8 x 128 x 2 x 2 = 4,096 B
    assert est.estimator_bytes_per_token == 32 * 4096 and est.bytes_per_token == 33 * 4096
    s = est.features.speculative
    assert s.extra_kv_tokens == 3 - 1  # get_num_extra_kv_tokens: max_draft_len - 1 for one-model Eagle3
    # the head (config.json: hidden 4096, 32 heads, 8 KV heads, intermediate 14336, draft vocabulary 32,000):
    # qkv over 2 x hidden (8,192 x 6,144) + o 4,096 x 4,096 + MLP 3 x 4,096 x 14,336 + lm_head 32,000 x 4,096, TP 1;
    # fc 4,096 x 3 x 4,096, norms 2 x 4,096 + 4,096 + hidden_norm 4,096; fp16; d2t int64 x 32,000
    sharded = 8192 * 6144 + 4096 * 4096 + 3 * 4096 * 14336 + 32000 * 4096
    replicated = 4096 * 3 * 4096 + 2 * 4096 + 4096 + 4096
    assert s.weights_per_gpu_bytes == 2 * (sharded + replicated) + 8 * 32000


def test_transceiver_buffers_default_and_sized():
    plain = _est("llama-3.1-8b", gpu="h100", options=(("cache_transceiver_config.backend", "UCX"),))
    t = plain.features.transceiver
    # TRTLLM_KVCACHE_TRANSFER_BUFFER_SIZE's default "512MB" (parseMemorySize: MB = 1024 x 1024), one send + one receive
    assert (t.buffer_bytes, t.buffers, t.total_bytes) == (512 * MIB, 2, 1_073_741_824)
    sized = _est("llama-3.1-8b", gpu="h100", options=(("cache_transceiver_config.backend", "NIXL"),
                                                      ("cache_transceiver_config.max_tokens_in_buffer", "8192")))
    # computeTransferBufferSize: per layer (min(window 8,192 rounded to blocks, 8,192) + one block of 32) tokens x
    # 8 KV heads x 128 x 2 x 2 B = 4,096 B, over 32 layers
    assert sized.features.transceiver.buffer_bytes == (8192 + 32) * 4096 * 32 == 1_077_936_128
    assert sized.features.after_pool_fits and sized.fits
    # the pool is sized before the transceiver exists: the same blocks either way
    assert sized.num_blocks == plain.num_blocks == _est("llama-3.1-8b", gpu="h100").num_blocks


def test_transceiver_that_cannot_fit_fails_the_start():
    # 128K tokens in the buffer: (131,072 + 32) x 131,072 B = 17,184,063,488 B each, 34.4 GB for two, beside a pool
    # of 0.9 of what the profile leaves: more than the 10 % the fraction keeps back
    est = _est("llama-3.1-8b", seq=131072, gpu="h100", options=(("cache_transceiver_config.backend", "UCX"),
                                                                ("cache_transceiver_config.max_tokens_in_buffer", "131072")))
    assert est.features.transceiver.buffer_bytes == (131072 + 32) * 131072
    assert est.features.after_pool_fits is False and est.fits is False
    problem = est.pool_view().problem
    assert type(problem).__name__ == "Refused" and "transfer buffers" in problem.message


def test_kv_cache_caps_take_the_smaller():
    # KvCacheCreator.configure_kv_cache_capacity: min(the fraction's budget, max_tokens x bytes per token), and
    # max_gpu_total_bytes likewise
    capped = _est("llama-3.1-8b", gpu="h100", options=(("max_tokens", "30000"),))
    # whole blocks of 32 tokens, rounded down on the 1.x line (releases.py PYTORCH_BLOCKS)
    assert capped.max_tokens == 30_000 and capped.num_blocks == 30_000 // 32 == 937
    by_bytes = _est("llama-3.1-8b", gpu="h100", options=(("max_gpu_total_bytes", str(4 * 2**30)),))
    assert by_bytes.max_tokens == 4 * 2**30 // 131_072 == 32_768
    roomy = _est("llama-3.1-8b", gpu="h100", options=(("max_attention_window", "8192,8192"),))
    assert roomy.num_blocks == _est("llama-3.1-8b", gpu="h100").num_blocks  # clamped to max_seq_len: no change


@pytest.mark.parametrize("options, words", [
    ((("speculative_config.decoding_type", "Draft_Target"),), "own KV cache manager"),
    ((("speculative_config.decoding_type", "Eagle3"), ("speculative_config.max_draft_len", "3"),
      ("speculative_config.eagle3_one_model", "false")), "two-model EAGLE-3"),
    ((("speculative_config.decoding_type", "MTP"),), "no multi-token-prediction modules"),
    ((("max_attention_window", "4096"),), "below max_seq_len"),
    ((("cache_transceiver_config.backend", "NIXL"), ("cache_transceiver_config.transceiver_runtime", "PYTHON")),
     "runtime's buffers"),
])
def test_what_is_not_modelled_says_so(options, words):
    with pytest.raises(UnsupportedError, match=words):
        _est("llama-3.1-8b", gpu="h100", options=options)


def test_bad_option_values_are_bad_input():
    with pytest.raises(InputError, match="no cache transceiver backend"):
        _est("llama-3.1-8b", gpu="h100", options=(("cache_transceiver_config.backend", "TCP"),))
    with pytest.raises(InputError, match="not true or false"):
        _est("llama-3.1-8b", gpu="h100", options=(("enable_attention_dp", "maybe"),))


# ------------------------------------------------------------------ the disaggregated config reader

def test_disagg_groups_inherit_and_replace_the_fraction():
    from kvplan.check.readers import trtllm_disagg

    doc = yamlio.load_yaml(CORPUS / "disagg-config-tinyllama.yaml")
    groups = {role: args for role, args, _ in trtllm_disagg.server_groups(doc, where="f")}
    # the top-level free_gpu_memory_fraction 0.25 builds the generation group's kv_cache_config (get_llm_args); the
    # context group's own kv_cache_config (0.2) replaces it
    assert groups["generation"]["kv_cache_config"] == {"free_gpu_memory_fraction": 0.25}
    assert groups["context"]["kv_cache_config"] == {"free_gpu_memory_fraction": 0.2}
    assert groups["context"]["model"] == "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
    assert "urls" not in groups["context"] and "hostname" not in groups["context"]
    doc["context_servers"]["backend"] = "tensorrt"  # the top level says pytorch: extract_disagg_cfg refuses it
    with pytest.raises(InputError, match="both at the top level and in context_servers"):
        trtllm_disagg.server_groups(doc, where="f")


def test_disagg_groups_read_onto_engine_options():
    from kvplan.check.readers import trtllm_disagg

    doc = yamlio.load_yaml(CORPUS / "disagg-config-ctxtp4-gentp4-deepseek-r1-fp4-mtp.yaml")
    (_, ctx, n_ctx), (_, gen, n_gen) = trtllm_disagg.server_groups(doc, where="f")
    assert (n_ctx, n_gen, ctx["max_seq_len"], gen["max_seq_len"]) == (1, 1, 8232, 10240)
    opts = serve_args.engine_options(ctx, where="f")
    assert opts == {"speculative_config.decoding_type": "MTP", "speculative_config.max_draft_len": "1",
                    "cache_transceiver_config.backend": "NIXL", "cache_transceiver_config.transceiver_runtime": "PYTHON",
                    "cache_transceiver_config.max_tokens_in_buffer": "16384"}
    adp = yamlio.load_yaml(CORPUS / "disagg-config-ctxtp2-gentp2-deepseek-v3-lite-adp-mtp.yaml")
    (_, ctx, _), (_, gen, _) = trtllm_disagg.server_groups(adp, where="f")
    # the top-level speculative_config reaches both groups; attention DP only the context group
    assert serve_args.engine_options(ctx, where="f")["enable_attention_dp"] == "true"
    assert "enable_attention_dp" not in serve_args.engine_options(gen, where="f")
    assert serve_args.engine_options(gen, where="f")["speculative_config.num_nextn_predict_layers"] == "1"


def test_check_judges_each_group_with_its_transceiver():
    from kvplan.check import deployment, run

    options = deployment.CheckOptions(models_dirs=(str(DATA / "public_models"),), gpu="h100")
    report = run.run_check([str(CORPUS / "disagg-config-tinyllama.yaml")], options)
    ctx, gen = report.verdicts
    assert (ctx.status, gen.status) == ("pass", "pass") and report.exit_code == 0
    # the fractions differ (0.2 and 0.25): the generation group's pool is the larger
    assert gen.figures.available_kv_bytes > ctx.figures.available_kv_bytes
    assert any("cache transceiver (DEFAULT): 2 transfer buffers of 536,870,912 B" in n for n in ctx.notes)


# ------------------------------------------------------------------ the commands

MTP_ADP = ["--engine-option", "enable_attention_dp=true", "--engine-option", "speculative_config.decoding_type=MTP"]


def test_estimate_json_and_exit_codes(cli):
    import json

    code, out, _ = cli(*["estimate", "deepseek-v3", "--seq", "8K", "--gpu", "h200", "--tp", "8", "--engine", "trtllm",
                        *MTP_ADP, "--json"])
    d = json.loads(out)
    assert code == 0 and d["bytes_per_token"] == 62 * 1152 and d["features"]["pools"] == 8
    assert d["features"]["deployment_concurrency"] == 8 * d["max_concurrency"]
    # 34 GB of transfer buffers beside a 0.9 pool on an 80 GB H100: a definite no (exit 1)
    code, out, _ = cli(*["estimate", "llama-3.1-8b", "--seq", "128K", "--gpu", "h100", "--engine", "trtllm",
                        "--engine-option", "cache_transceiver_config.backend=UCX",
                        "--engine-option", "cache_transceiver_config.max_tokens_in_buffer=131072", "--json"])
    assert code == 1 and json.loads(out)["features"]["after_pool_fits"] is False
    code, out, _ = cli(*["estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", "trtllm",
                        "--engine-option", "speculative_config.decoding_type=Draft_Target", "--json"])
    assert code == 3 and "own KV cache manager" in json.loads(out)["error"]["what"]


def test_explain_derives_each_term(cli):
    import json

    code, out, _ = cli(*["explain", "deepseek-v3", "--seq", "8K", "--gpu", "h200", "--tp", "8", *MTP_ADP, "--json"])
    assert code == 0
    terms = {t["what"]: t for t in json.loads(out)["extra_terms"]}
    assert "71,424 B per token, the estimator counts 70,272 B" in terms["MTP layers in the KV cache manager"]["formula"]
    mtp = _est("deepseek-v3", tp=8, gpu="h200", options=(("enable_attention_dp", "true"),
                                                         ("speculative_config.decoding_type", "MTP")))
    assert terms["drafter weights on one GPU"]["bytes"] == mtp.features.speculative.weights_per_gpu_bytes


def test_llm_api_fields_onto_option_keys():
    # kv_cache_config's caps and windows, as an LLM-API YAML writes them (a list for max_attention_window)
    opts = serve_args.engine_options({"model": "m", "kv_cache_config": {"max_tokens": 4096, "max_attention_window": [8192, 8192],
                                                                       "free_gpu_memory_fraction": 0.8}}, where="f")
    assert opts == {"max_tokens": "4096", "max_attention_window": "8192,8192"}
    with pytest.raises(UnsupportedError, match="speculative_config.eagle_choices"):
        serve_args.engine_options({"speculative_config": {"decoding_type": "Eagle3", "eagle_choices": [[0]]}}, where="f")


def test_lora_peft_cache_pages():
    # Llama-3.1-8B (hidden 4096, 32 heads, 8 KV heads of 128, intermediate 14336), TP 1, rank 64, 4 LoRAs, seven
    # modules. loraModule.cpp: one rank's in + out per module: attn_q 4096 + 4096, attn_k / attn_v 4096 + 1024,
    # attn_dense 4096 + 4096, mlp_h_to_4h / mlp_gate / mlp_4h_to_h 4096 + 14336.
    # peftCacheManager.cpp getPageManagerConfig: page width = the smallest, 5,120; slots per page =
    # max(8 x (2 + 1 + 1 + 2 + 4 + 4 + 4) x 32 layers, ceil(64 x 18,432 / 5,120)) = max(4,608, 231) = 4,608;
    # getMaxNumSlots: num_device_module_layer 64 x 32 x 7 x 4 = 57,344, x ceil(18,432 / 5,120) = 229,376 slots,
    # in ceil(229,376 / 4,608) = 50 pages of 4,608 x 5,120 bf16 elements
    modules = "attn_q,attn_k,attn_v,attn_dense,mlp_h_to_4h,mlp_4h_to_h,mlp_gate"
    opts = (("lora_config.max_lora_rank", "64"), ("lora_config.max_loras", "4"),
            ("lora_config.lora_target_modules", modules))
    est = _est("llama-3.1-8b", gpu="h100", options=opts)
    lo = est.features.lora
    assert (lo.page_width, lo.slots_per_page, lo.device_pages) == (5120, 4608, 50)
    assert lo.device_bytes == 50 * 4608 * 5120 * 2 == 2_359_296_000
    assert est.features.after_pool_bytes == lo.device_bytes and est.features.after_pool_fits
    # the pool is sized before the PEFT cache exists
    assert est.num_blocks == _est("llama-3.1-8b", gpu="h100").num_blocks
    # attn_q alone: attn_k and attn_v are the missing q/k/v modules, counted in the module-layers (_util.py)
    one = _est("llama-3.1-8b", gpu="h100", options=(("lora_config.max_loras", "4"),
                                                    ("lora_config.lora_target_modules", "attn_q"))).features.lora
    # one module of 8,192: width 8,192, 8 x 1 x 32 = 256 slots per page (min 64 x 8,192 / 8,192 = 64);
    # 64 (default rank) x 32 x 3 x 4 = 24,576 slots, 96 pages
    assert (one.page_width, one.slots_per_page, one.device_pages) == (8192, 256, 96)
    with pytest.raises(UnsupportedError, match="without max_loras"):
        _est("llama-3.1-8b", gpu="h100", options=(("lora_config.lora_target_modules", "attn_q"),))
    with pytest.raises(UnsupportedError, match="without lora_target_modules"):
        _est("llama-3.1-8b", gpu="h100", options=(("lora_config.max_loras", "4"),))


def test_transceiver_bytes_a_prompt_token_sends():
    # Llama-3.1-8B at TP 2: each rank holds 4 of the 8 KV heads, 32 x 4 x 128 x 2 x 2 = 65,536 B per token; a
    # request's prompt goes out from both ranks
    est = _est("llama-3.1-8b", tp=2, gpu="h100", options=(("cache_transceiver_config.backend", "UCX"),))
    t = est.features.transceiver
    assert (t.bytes_per_token_per_rank, t.bytes_per_token) == (65_536, 131_072)
