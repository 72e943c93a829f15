"""SGLang's launch options kvplan models (kvplan/engines/sglang/features.py): prefill / decode disaggregation and
EAGLE / EAGLE-3 / NEXTN speculative decoding, each checked by hand arithmetic from SGLang 0.5.23's rules on real
models (bundled specs, the EAGLE-3 head's config.json vendored in examples/deploy/models/). All in-process."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.requests.build import build_request
from kvplan.engines.sglang import budget, engine

ROOT = Path(__file__).resolve().parents[1]
GIB_BYTES = 2**30
HEAD = ROOT / "examples" / "deploy" / "models" / "eagle3-llama3.1-8b"
H100_MIB = 81559  # nvidia-smi memory.total of an H100 SXM (the catalog's reading)


def _est(model="llama-3.1-8b", *, sglang_args=None, tp=1, gpu="h100-sxm-80gb", seq="32K", version=None, dtype=None, **kw):
    req = build_request(model, seq=seq, batch=1, kv_dtype="auto", dtype=dtype, gpu=gpu, gpu_mem=None, gpus=None, tp=tp,
                        pp=1, sglang_args=sglang_args, engine_version=version, **kw)
    return engine.estimate(req)


# ----------------------------------------------------------------------------------------- disaggregation

def test_decode_and_prefill_servers_reserve_their_own_slack():
    """memory_hook.py handle_gpu_memory_settings at TP 2 on an H100 (chunked prefill 8192, decode graphs to bs 256):
    colocated: 512 + 1.5 x 8192 + 2/8 x 1024 + 2 x 256 + 8 x 58 prefill graph sizes = 14,032 MiB;
    decode:    512 + 1.5 x max(256 running x 1 token, 2048) + 256 + 2 x 256 = 4,352 -> the 10,240 MiB floor;
    prefill:   512 + 1.5 x 8192 + 256 + 8 x 58 (no decode graphs) = 13,520 MiB."""
    both, _, r_both = budget.default_mem_fraction(H100_MIB, 2, 1, False)
    dec, _, r_dec = budget.default_mem_fraction(H100_MIB, 2, 1, False, disaggregation_mode="decode")
    pre, _, r_pre = budget.default_mem_fraction(H100_MIB, 2, 1, False, disaggregation_mode="prefill")
    assert (r_both, r_dec, r_pre) == (14032, 10240, 13520)
    assert dec == Fraction("0.874") == Fraction(str(round((81559 - 10240) / 81559, 3)))
    assert pre == Fraction("0.834") and both == Fraction("0.828")
    # a decode server of 600 running requests with 4 draft tokens each sizes its slack on 2,400 tokens:
    # 512 + 1.5 x 2400 + 128 + 2 x 256 = 4,752 (under the floor too); on a 40 GiB A100 (no floor) it shows
    _, _, r = budget.default_mem_fraction(40960, 1, 1, False, disaggregation_mode="decode", max_running_requests=600,
                                          draft_tokens=4)
    assert r == 512 + 1.5 * 2400 + 128 + 2 * 32  # decode graphs to bs 32 on a 40 GiB GPU at TP 1


def test_decode_server_pool_transfer_and_link():
    """Llama-3.1-8B at TP 2: one rank's cell is 4 KV heads x 128 x 2 (K, V) x 2 B x 32 layers = 65,536 B; a 4,096-token
    prompt moves 65,536 x 2 ranks x 4,096 = 536,870,912 B; at 10 req/s each GPU takes 2.68 GB/s, 0.60% of an H100's
    450 GB/s NVLink each way."""
    base = _est(tp=2)
    dec = _est(tp=2, sglang_args="--disaggregation-mode decode", rate="10", prompt="4K")
    d = dec.features.disaggregation
    assert (d.mode, d.transfer_backend, d.radix_cache) == ("decode", "mooncake", False)
    assert d.bytes_per_token_per_rank == 65536 and d.bytes_per_token == 131072
    assert d.link.bytes_per_request == 536_870_912 and d.link.bytes_per_s_per_gpu == 536_870_912 * 10 / 2
    assert round(d.link.utilisation * 100, 2) == 0.60
    assert d.reserved_decode_tokens == 512 and d.extra_slots == 0
    # same cell, a larger fraction: the pool is the same rule over a larger rest
    assert dec.cell_size == base.cell_size == 65536 and dec.mem_fraction_static == "0.874"
    assert dec.max_total_num_tokens == dec.available_kv_bytes // 65536 > base.max_total_num_tokens


def test_decode_extra_slots():
    """--max-running-requests 16 (per worker <= 32): 2 x 16 = 32 extra rows of int32 x (32,768 + 4) = 4,194,816 B."""
    d = _est(tp=2, sglang_args="--disaggregation-mode decode", max_num_seqs=16).features.disaggregation
    assert d.extra_slots == 32 and d.extra_slots_bytes == 32 * (32768 + 4) * 4 == 4_194_816
    d = _est(tp=2, sglang_args="--disaggregation-mode decode --disaggregation-decode-extra-slots 5").features.disaggregation
    assert d.extra_slots == 5
    p = _est(tp=2, sglang_args="--disaggregation-mode prefill", max_num_seqs=16).features.disaggregation
    assert p.extra_slots == 0 and p.reserved_decode_tokens == 0


# ----------------------------------------------------------------------------------------- speculative decoding

def test_eagle3_head_weights_cell_and_running_cap():
    """The EAGLE-3 head of Llama-3.1-8B (1 layer, draft vocabulary 32,000), one H100:
    TP-sharded: qkv 8,192 x (4,096 + 2 x 1,024) + o 4,096^2 + MLP 3 x 4,096 x 14,336 + lm_head 32,000 x 4,096
              = 50,331,648 + 16,777,216 + 176,160,768 + 131,072,000 = 374,341,632;
    replicated: norms 2 x 4,096 + 4,096, fc 4,096 x 3 x 4,096, hidden_norm 4,096 = 50,348,032;
    bytes: (374,341,632 + 50,348,032) x 2 + d2t 8 x 32,000 = 849,635,328.
    While the pool is sized the head's own embed_tokens (128,256 x 4,096 x 2 B = 1,050,673,152) is still resident
    (eagle_worker_v2.py: init_lm_head runs in alloc_memory_pool, after the target's pool is sized).
    Cell: 131,072 + int(131,072 x 1 / 32) = 135,168. --max-running-requests 48 caps the decode graphs at 48:
    reserve 512 + 1.5 x 8,192 + 128 + 2 x 48 + 8 x 58 = 13,488 MiB."""
    base = _est()
    spec = _est(sglang_args=f"--speculative-algorithm EAGLE3 --speculative-draft-model-path {HEAD}")
    s = spec.features.speculative
    assert s.draft_weights_per_gpu_bytes == (374_341_632 + 50_348_032) * 2 + 8 * 32000 == 849_635_328
    assert s.draft_duplicates_per_gpu_bytes == 128256 * 4096 * 2 == 1_050_673_152
    assert spec.weights_per_gpu_bytes - base.weights_per_gpu_bytes == 849_635_328 + 1_050_673_152
    assert (s.target_cell_bytes, s.draft_cell_bytes, spec.cell_size) == (131072, 4096, 135168)
    assert spec.reserved_mib == 13488 and spec.mem_fraction_static == "0.835"
    assert spec.max_running_requests == 48 and s.max_running_requests_default == 48
    assert spec.max_total_num_tokens == spec.available_kv_bytes // 135168
    # the auto parameters for a Llama target (speculative_hook.py _auto_choose_speculative_params): 5, 4, 8
    assert (s.num_steps, s.eagle_topk, s.num_draft_tokens) == (5, 4, 8)
    one = _est(sglang_args=f"--speculative-algorithm EAGLE3 --speculative-draft-model-path {HEAD} "
                           "--speculative-num-steps 3 --speculative-eagle-topk 1", max_num_seqs=64).features.speculative
    assert (one.num_draft_tokens, one.max_running_requests_default) == (4, None)  # topk 1: steps + 1


def test_nextn_on_deepseek_v3_uses_its_mtp_layer():
    """DeepSeek-V3 at TP 8 on H200: MLA cell 61 x 576 x 1 B (fp8 KV) = 35,136 B, not split by TP; the MTP layer adds
    int(35,136 x 1 / 61) = 576 B; its 11,610,067,968 parameters load beside the target at the checkpoint's bits / 8,
    and its own embedding and head are resident while the pool is sized."""
    req = build_request("deepseek-v3", seq="16K", batch=1, kv_dtype="fp8_e4m3", dtype=None, gpu="h200-141gb",
                        gpu_mem=None, gpus=None, tp=8, pp=1, sglang_args="--speculative-algorithm NEXTN")
    e = engine.estimate(req)
    s = e.features.speculative
    assert (s.algorithm, s.draft_layers, s.target_cell_bytes, s.draft_cell_bytes) == ("NEXTN", 1, 35136, 576)
    assert (s.num_steps, s.eagle_topk, s.num_draft_tokens) == (3, 1, 4)
    assert 11_610_067_968 // 8 < s.draft_weights_per_gpu_bytes < 11_610_067_968 * 2 // 8
    # the NextN model's own embed_tokens and lm_head (deepseek_nextn.py), bf16, 129,280 x 7,168 / 8 each
    assert s.draft_duplicates_per_gpu_bytes == 2 * 129280 * 7168 * 2 // 8 == 463_339_520


@pytest.mark.parametrize("args, err, needle", [
    ("--speculative-algorithm STANDALONE --speculative-draft-model-path no-such-draft", UnsupportedError, "offline"),
    ("--speculative-algorithm STANDALONE --speculative-draft-model-path qwen3-8b", InputError, "vocabulary"),
    ("--speculative-algorithm DFLASH", UnsupportedError, "DFlash"),
    ("--speculative-algorithm NGRAM", UnsupportedError, "n-gram"),
    ("--speculative-algorithm NEXTN", UnsupportedError, "MTP layers"),
    ("--speculative-algorithm EAGLE --speculative-draft-model-path /no/such/head", UnsupportedError, "offline"),
    ("--speculative-draft-model-path x", InputError, "without --speculative-algorithm"),
    ("--disaggregation-mode decode --disaggregation-transfer-backend ascend", UnsupportedError, "ascend"),
    ("--disaggregation-mode prefill --disaggregation-transfer-backend fake", InputError, "fake"),
    ("--enable-dp-attention --dp-size 2", UnsupportedError, "LlamaForCausalLM"),
    ("--enable-hierarchical-cache --hicache-storage-backend file", UnsupportedError, "storage tier"),
    ("--enable-lora", InputError, "--max-lora-rank and --lora-target-modules"),
    ("--lora-paths a=/x", UnsupportedError, "adapters"),
    ("--enable-lora --max-lora-rank 8 --lora-target-modules all", UnsupportedError, "all"),
    ("--enable-lora --max-lora-rank 8 --lora-target-modules embed_tokens", UnsupportedError, "embed_tokens"),
    # issue 28: a pasted --context-length is read as SGLang spells it; beside another --seq it is bad input
    ("--context-length 8192", InputError, "--context-length 8192 and --seq 32K disagree"),
])
def test_refusals(args, err, needle):
    with pytest.raises(err) as info:
        _est(sglang_args=args)
    assert needle in str(info.value), str(info.value)


def test_a_decode_server_with_a_draft_receives_its_kv_too():
    """Llama-3.1-8B at TP 2 with the EAGLE-3 head: each rank receives 65,536 B of the target's KV per token plus the
    head's own layer, 4 KV heads per rank x 128 x 2 x 2 B = 2,048 B; the reserve's activation slack is 48 running
    x 4 draft tokens = 192 -> 2,048 tokens."""
    e = _est(tp=2, sglang_args=f"--disaggregation-mode decode --speculative-algorithm EAGLE3 "
                               f"--speculative-draft-model-path {HEAD} --speculative-num-steps 3 --speculative-eagle-topk 1")
    d = e.features.disaggregation
    assert d.bytes_per_token_per_rank == 65536 + 2048 and d.bytes_per_token == 2 * 67584
    assert e.reserved_mib == 10240  # 512 + 1.5 x 2,048 + 256 + 2 x 48 = 3,936, raised to the floor
    nextn = build_request("deepseek-v3", seq="16K", batch=1, kv_dtype="fp8_e4m3", dtype=None, gpu="h200-141gb",
                          gpu_mem=None, gpus=None, tp=8, pp=1,
                          sglang_args="--speculative-algorithm NEXTN --disaggregation-mode prefill")
    # MLA: the latent of 61 + 1 layers, 576 B each in fp8, whole on every rank
    assert engine.estimate(nextn).features.disaggregation.bytes_per_token_per_rank == 62 * 576


def test_combinations_and_releases_not_modelled():
    with pytest.raises(UnsupportedError, match="0.5.23"):
        _est(sglang_args="--disaggregation-mode decode", version="0.5.10")


def test_cli_json_keys_are_documented(cli):
    text = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    for args in ("--disaggregation-mode decode", f"--speculative-algorithm EAGLE3 --speculative-draft-model-path {HEAD}"):
        code, out, _ = cli("estimate", "llama-3.1-8b", "--seq", "32K", "--gpu", "h100", "--tp", "2", "--engine", "sglang",
                           "--sglang-args", args, "--rate", "5", "--json") if "disagg" in args else \
            cli("estimate", "llama-3.1-8b", "--seq", "32K", "--gpu", "h100", "--engine", "sglang", "--sglang-args", args,
                "--json")
        assert code == 0, out
        features = json.loads(out)["features"]
        keys = set(features) | {k for v in features.values() if isinstance(v, dict) for k in v}
        missing = sorted(k for k in keys if f"`{k}`" not in text)
        assert not missing, missing
    code, _, err = cli("estimate", "llama-3.1-8b", "--engine", "vllm", "--sglang-args", "--disaggregation-mode decode")
    assert code == 2 and "--engine sglang" in err


# ----------------------------------------------------------------------------------------- attention data parallelism

def test_dp_attention_on_qwen3_235b():
    """Qwen3-235B-A22B at TP 8 with 8 attention-DP workers on H200 (143,771 MiB):
    attention 94 x (4,096 x (64 + 2 x 4) x 128 + 8,192 x 4,096) = 6,702,497,792 parameters, embedding 151,936 x 4,096
    = 622,329,856; in bf16 over attention TP 1 instead of 8: 13,404,995,584 x 7/8 + 1,244,659,712 x 7/8
    = 12,818,448,384 B more per GPU. A rank keeps all 4 KV heads: 4 x 128 x 2 x 2 B x 94 = 192,512 B per token
    (48,128 at TP 8: one replicated head). Reserve: 15,312 + 512 x 8 x 3 + 512 x 8 x 1.5 = 33,744 MiB -> 0.765."""
    base = _est("qwen3-235b-a22b", tp=8, gpu="h200-141gb")
    dp = _est("qwen3-235b-a22b", tp=8, gpu="h200-141gb", sglang_args="--enable-dp-attention --dp-size 8",
              max_num_seqs=1024)
    a = dp.features.dp_attention
    assert a.weights_added_per_gpu_bytes == 12_818_448_384 == (13_404_995_584 - 13_404_995_584 // 8) + (
        1_244_659_712 - 1_244_659_712 // 8)
    assert dp.weights_per_gpu_bytes - base.weights_per_gpu_bytes == 12_818_448_384
    assert (base.cell_size, dp.cell_size, a.kv_heads_per_rank) == (48128, 192512, 4)
    assert (base.reserved_mib, dp.reserved_mib, dp.mem_fraction_static) == (15312, 15312 + 512 * 8 * 4.5, "0.765")
    assert a.max_running_requests_per_worker == 1024 // 8 and dp.max_running_requests <= 128
    assert a.deployment_max_batch == 8 * dp.max_batch and dp.kv_bytes == base.kv_bytes  # the model's KV is the same
    assert dp.pool_view().replicas == 8 and dp.chunked_prefill_size == 8192 // 8
    # --attn-dp-size is the same layout
    same = _est("qwen3-235b-a22b", tp=8, gpu="h200-141gb", sglang_args="--attn-dp-size 8", max_num_seqs=1024)
    assert same.max_total_num_tokens == dp.max_total_num_tokens
    with pytest.raises(InputError, match="divisible"):
        _est("qwen3-235b-a22b", tp=8, gpu="h200-141gb", sglang_args="--attn-dp-size 3")


def test_dp_attention_on_deepseek_v3_by_hand():
    """DeepSeek-V3 (models/deepseek_v2.py): under DP attention q_b_proj, kv_b_proj and o_proj and the embedding shard
    over attention TP instead of TP; the fused a-projection is whole on every rank either way, the dense MLPs, shared
    and routed experts and lm_head stay on TP. Per layer 1,536 x 128 x 192 + 512 x 128 x (128 + 128) + 128 x 128 x
    7,168 = 171,966,464; x 61 = 10,489,954,304 parameters; embedding 129,280 x 7,168 = 926,679,040. In bf16 (--dtype,
    so the bytes are whole) at TP 8: D = 8 (attention TP 1) holds 7/8 of both more, D = 2 (attention TP 4) 1/4 - 1/8."""
    attention, embed = 2 * 10_489_954_304, 2 * 926_679_040
    base = _est("deepseek-v3", tp=8, gpu="b300", seq="8K", dtype="bf16")
    for d, attn_tp in ((8, 1), (2, 4)):
        dp = _est("deepseek-v3", tp=8, gpu="b300", seq="8K", dtype="bf16", sglang_args=f"--enable-dp-attention --dp {d}")
        a = dp.features.dp_attention
        want = (attention // attn_tp - attention // 8) + (embed // attn_tp - embed // 8)
        assert a.weights_added_per_gpu_bytes == want == dp.weights_per_gpu_bytes - base.weights_per_gpu_bytes, d
        assert (a.attn_dp_size, a.attn_tp_size) == (d, attn_tp)
        # the MLA latent (512 + 64) is whole on every rank with or without it: 61 x 576 x 2 B a token
        assert dp.cell_size == base.cell_size == 61 * 576 * 2
        assert dp.pool_view().replicas == d
    assert want == 2_854_158_336
    # what moves weights to other groups is refused, not ignored
    for option in ("--enable-dp-lm-head", "--moe-dense-tp-size 1", "--moe-a2a-backend deepep"):
        with pytest.raises(UnsupportedError, match=option.split()[0]):
            _est("deepseek-v3", tp=8, gpu="b300", seq="8K", sglang_args=f"--enable-dp-attention --dp 8 {option}")


def test_cpu_offload_gb_moves_whole_decoder_parameters_by_hand():
    """utils/offloader.py OffloaderV1: each rank walks its decoder layers and moves parameters whole to pinned host
    memory until 4 x 1024**3 bytes are reached. Llama-3.1-8B in bf16, per layer: qkv_proj (4,096 + 2 x 1,024) x 4,096
    x 2 = 50,331,648, o_proj 33,554,432, gate_up_proj 234,881,024, down_proj 117,440,512 and two norms of 8,192:
    436,224,000. Nine layers are 3,926,016,000; the tenth's qkv, o and gate_up reach 4,244,783,104, still short,
    and its down_proj crosses: 4,362,223,616 B in 9 x 6 + 4 = 58 parameters. 40 GB moves all 32 layers."""
    base = _est(gpu="l4", seq="8K")
    four = _est(gpu="l4", seq="8K", sglang_args="--cpu-offload-gb 4")
    off = four.features.weight_offload
    assert (off.offloaded_bytes, off.parameters_moved) == (4_362_223_616, 58)
    assert base.weights_per_gpu_bytes - four.weights_per_gpu_bytes == 4_362_223_616
    assert four.max_total_num_tokens > base.max_total_num_tokens
    every = _est(gpu="l4", seq="8K", sglang_args="--cpu-offload-gb 40").features.weight_offload
    assert (every.offloaded_bytes, every.parameters_moved) == (32 * 436_224_000, 32 * 6)
    # at TP 2 each rank moves its own shards (per GPU, as SGLang's per-process offloader does)
    tp2 = _est(gpu="l4", seq="8K", tp=2, sglang_args="--cpu-offload-gb 40").features.weight_offload
    assert tp2.offloaded_bytes == 32 * (436_224_000 - 2 * 8_192) // 2 + 32 * 2 * 8_192


@pytest.mark.parametrize("model,args,words", [
    ("deepseek-v3", "--cpu-offload-gb 10", "quantized checkpoint"),
    ("llama-3.1-8b", "--offload-group-size 4", "--offload-group-size"),
    ("llama-3.1-8b", "--cpu-offload-gb 4 --enable-lora --max-lora-rank 8 --lora-target-modules q_proj", "with attention data parallelism, speculative decoding or LoRA"),
])
def test_cpu_offload_refuses_what_was_not_read(model, args, words):
    with pytest.raises(UnsupportedError, match=words):
        _est(model, tp=8 if model == "deepseek-v3" else 1, gpu="h200-141gb", seq="8K", sglang_args=args)


QWEN3_14B = str(ROOT / "tests" / "data" / "extra_configs" / "qwen3-14b.json")


@pytest.mark.parametrize("version", ["0.5.1", "0.5.9", "0.5.16", "0.5.22"])
def test_cpu_offload_is_read_on_the_releases_whose_offloader_is_0_5_23s(version):
    """OffloaderV1.maybe_offload_to_cpu is one loop from 0.5.1 to 0.5.23 (offloader.py, then utils/offloader.py),
    and models/qwen3.py registers q_norm, k_norm, qkv_proj, o_proj in that order throughout. TianyangChen357's
    launch: Qwen3-14B in float16 at TP 2 with --cpu-offload-gb 48. One rank's decoder layer, by hand: q_norm and
    k_norm 2 x 128 x 2 = 512; qkv_proj (40 + 2 x 8) / 2 x 128 x 5,120 x 2 = 36,700,160; o_proj 5,120 x 2,560 x 2 =
    26,214,400; gate_up_proj 2 x 8,704 x 5,120 x 2 = 178,257,920; down_proj 89,128,960; two norms 20,480: 330,322,432
    B in 6 + 2 parameters. 40 layers are 13,212,897,280 B, under 48 x 1024**3 = 51,539,607,552: every one moves."""
    kw = dict(gpu="rtx-3090-24gb", seq="8K", tp=2, dtype="fp16", gpu_util="0.65")
    base = _est(QWEN3_14B, version=version, **kw)
    off = _est(QWEN3_14B, version=version, sglang_args="--cpu-offload-gb 48", **kw)
    moved = off.features.weight_offload
    assert (moved.offloaded_bytes, moved.parameters_moved) == (40 * 330_322_432, 40 * 8) == (13_212_897_280, 320)
    assert base.weights_per_gpu_bytes - off.weights_per_gpu_bytes == 13_212_897_280
    # what stays: the embedding and the untied lm_head, each 151,936 / 2 rows x 5,120 x 2 B, and the final norm
    # (10,240 B); SGLang's log of this launch prints "Load weight end. ... mem usage=1.50 GB" (GiB) on both ranks
    stays = 2 * 75_968 * 5_120 * 2 + 5_120 * 2
    assert abs(off.weights_per_gpu_bytes - stays) < 0.05 * GIB_BYTES
    assert abs(off.weights_per_gpu_bytes / GIB_BYTES - 1.50) < 0.06


@pytest.mark.parametrize("version", ["0.4.10.post2", "0.4.3", "0.3.6"])
def test_cpu_offload_before_0_5_1_is_refused_by_release(version):
    """0.3.x-0.4.x keep another offloader (utils.py maybe_offload_to_cpu, module-level counters) kvplan did not
    read: "cannot judge", naming the release, and the options alone are still judged."""
    with pytest.raises(UnsupportedError, match=f"--cpu-offload-gb on SGLang {version} is not modelled"):
        _est(QWEN3_14B, version=version, gpu="rtx-3090-24gb", seq="8K", tp=2, dtype="fp16",
             sglang_args="--cpu-offload-gb 48")
    assert _est(QWEN3_14B, version=version, gpu="rtx-3090-24gb", seq="8K", tp=2, dtype="fp16").max_total_num_tokens > 0


def test_check_reads_dp_attention_inside_the_tp_group(cli):
    code, out, _ = cli("check", ROOT / "examples" / "deploy" / "features" / "sglang-dp-attention.sh", "--gpu", "h100",
                       "--format", "json")
    verdict = json.loads(out)["verdicts"][0]
    assert code == 0 and verdict["gpus"] == 4 and verdict["status"] == "pass"


# ----------------------------------------------------------------------------------------- LoRA and HiCache

LINEAR = "q_proj k_proj v_proj o_proj gate_proj up_proj down_proj"


def test_lora_slots_on_llama_8b():
    """4 slots of rank 64 on every linear module of Llama-3.1-8B (lora/mem_pool.py shapes), per layer:
    qkv 4 x 192 x 4,096 + 4 x 6,144 x 64 = 4,718,592; o 4 x 64 x 4,096 + 4 x 4,096 x 64 = 2,097,152;
    gate_up 4 x 128 x 4,096 + 4 x 28,672 x 64 = 9,437,184; down 4 x 64 x 14,336 + 4 x 4,096 x 64 = 4,718,592;
    20,971,520 x 32 layers x 2 B = 1,342,177,280 B, taken from the pool's budget."""
    base = _est()
    lo_est = _est(sglang_args=f"--enable-lora --max-lora-rank 64 --lora-target-modules {LINEAR} --max-loras-per-batch 4")
    lo = lo_est.features.lora
    by_name = {m.name: m for m in lo.modules}
    assert by_name["qkv_proj"].a_shape == (4, 192, 4096) and by_name["qkv_proj"].b_shape == (4, 6144, 64)
    assert lo.gpu_bytes_per_rank == (4_718_592 + 2_097_152 + 9_437_184 + 4_718_592) * 32 * 2 == 1_342_177_280
    assert lo_est.weights_per_gpu_bytes - base.weights_per_gpu_bytes == 1_342_177_280
    assert lo_est.max_total_num_tokens < base.max_total_num_tokens
    # the same element counts as vLLM's slots for these modules (kvplan/engines/features/lora.py)
    from kvplan.engines.features import lora as vllm_lora
    from kvplan.model import catalog

    spec = catalog.resolve_model("llama-3.1-8b")
    for tp in (1, 2, 8):
        ours = _est(tp=tp, sglang_args=f"--enable-lora --max-lora-rank 64 --lora-target-modules {LINEAR} "
                                       "--max-loras-per-batch 4").features.lora
        theirs = vllm_lora.terms(spec, vllm_lora.LoraOptions(max_loras=4, max_lora_rank=64, target_modules=tuple(
            LINEAR.split())), tp=tp, model_bits=16, max_num_batched_tokens=8192)
        assert ours.gpu_bytes_per_rank == theirs.gpu_bytes_per_rank, tp
    # the default 8 slots, one module
    one = _est(sglang_args="--enable-lora --max-lora-rank 16 --lora-target-modules o_proj").features.lora
    assert one.gpu_bytes_per_rank == (8 * 16 * 4096 + 8 * 4096 * 16) * 32 * 2


def test_lora_refused_on_moe():
    with pytest.raises(UnsupportedError, match="LoRA slots"):
        _est("qwen3-235b-a22b", tp=8, gpu="h200-141gb", sglang_args=f"--enable-lora --max-lora-rank 8 --lora-target-modules {LINEAR}")


def test_hicache_host_tier():
    """Llama-3.1-8B on one H100: 131,072 B per token; ratio 2 of the device pool's N tokens -> 2N + 1 page (page 1);
    --hicache-size 100 -> int(100e9 // 131,072) = 762,939 + 1 = 762,940 tokens, 100,000,071,680 B."""
    e = _est(sglang_args="--enable-hierarchical-cache")
    h = e.features.hicache
    n = e.max_total_num_tokens
    assert (h.device_tokens, h.host_tokens, h.ratio, h.auto_sized) == (n, 2 * n + 1, 2.0, True)
    assert h.host_bytes_per_rank == (2 * n + 1) * 131072 == h.host_bytes
    assert e.max_total_num_tokens == _est().max_total_num_tokens  # nothing more on the GPU
    sized = _est(sglang_args="--enable-hierarchical-cache --hicache-size 100").features.hicache
    assert (sized.host_tokens, sized.host_bytes_per_rank, sized.ratio) == (762_940, 100_000_071_680, None)
    r = _est(tp=2, sglang_args="--enable-hierarchical-cache --hicache-ratio 1.5").features.hicache
    assert r.host_tokens == int(r.device_tokens * 1.5) + 1 and r.host_bytes == 2 * r.host_tokens * 65536 and not r.auto_sized
    with pytest.raises(UnsupportedError, match="decode server"):
        _est(tp=2, sglang_args="--enable-hierarchical-cache --disaggregation-mode decode")


def test_sweep_takes_sglang_args(cli):
    code, out, _ = cli("sweep", "llama-3.1-8b", "--seq", "32K", "--gpu", "h100", "--tp", "1,2", "--engine", "sglang",
                       "--sglang-args", "--disaggregation-mode decode", "-f", "jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 2 and all(r["error"] is None for r in rows), out
    plain = [json.loads(line) for line in cli("sweep", "llama-3.1-8b", "--seq", "32K", "--gpu", "h100", "--tp", "1,2",
                                             "--engine", "sglang", "-f", "jsonl")[1].splitlines()]
    # a decode server's larger default fraction holds more requests at each TP
    assert all(r["max_batch"] >= p["max_batch"] for r, p in zip(rows, plain)) and rows[1]["max_batch"] > plain[1]["max_batch"]
    code, _, err = cli("sweep", "llama-3.1-8b", "--engine", "vllm", "--sglang-args", "--disaggregation-mode decode")
    assert code == 2 and "--engine sglang" in err


def test_standalone_draft_model():
    """Llama-3.1-70B at TP 4 with Llama-3.2-1B as a STANDALONE draft on H100: the draft loads whole (its own embedding
    and head) over TP 4, its 16 layers add int(cell x 16 / 80) to the cell; steps (3, 1, 4); no duplicates."""
    base = _est("llama-3.1-70b", tp=4, seq="16K")
    e = _est("llama-3.1-70b", tp=4, seq="16K", sglang_args="--speculative-algorithm STANDALONE "
                                                          "--speculative-draft-model-path llama-3.2-1b")
    s = e.features.speculative
    # 70B at TP 4: 8 KV heads / 4 = 2 per rank x 128 x 2 x 2 B x 80 layers = 81,920 B; x 16 / 80 = 16,384
    assert (s.target_cell_bytes, s.draft_cell_bytes, s.draft_layers) == (81920, 16384, 16)
    assert (s.num_steps, s.eagle_topk, s.num_draft_tokens, s.draft_duplicates_per_gpu_bytes) == (3, 1, 4, 0)
    from kvplan.core.dtypes import dtype
    from kvplan.engines.vllm.budget import stage_weight_bytes
    from kvplan.model import catalog

    draft = catalog.resolve_model("llama-3.2-1b")
    assert s.draft_weights_per_gpu_bytes == stage_weight_bytes(draft, None, dtype(draft.dtype), 4, 1)[0]
    assert e.weights_per_gpu_bytes - base.weights_per_gpu_bytes == s.draft_weights_per_gpu_bytes
    assert e.cell_size == 81920 + 16384


# ----------------------------------------------------------------------------------------- kvplan's own deployment YAML

def test_a_kvplan_deployment_takes_sglang_args_as_the_launch_script_does(tmp_path, cli):
    """The same launch two ways: examples/deploy/features/sglang-hicache.sh (read by the launch-script reader), and
    kvplan's YAML with its options in `sglang_args`. The verdict and every figure are the same."""
    script = ROOT / "examples" / "deploy" / "features" / "sglang-hicache.sh"
    doc = tmp_path / "hicache.yaml"
    doc.write_text("name: hicache\nengine: sglang\nmodel: meta-llama/Llama-3.1-8B-Instruct\ngpu: h100\nmax_model_len: 32768\n"
                   "sglang_args: --enable-hierarchical-cache --hicache-size 100\n")
    figures = []
    for path in (script, doc):
        code, out, err = cli("check", path, "--gpu", "h100", "--json")
        assert code == 0, err
        (verdict,) = json.loads(out)["verdicts"]
        figures.append((verdict["status"], verdict["figures"], [n for n in verdict["notes"] if "HiCache" in n]))
    assert figures[0] == figures[1] and figures[0][2]  # the host tier is read, and named


@pytest.mark.parametrize("doc, where, needle", [
    ("engine: vllm\nsglang_args: --enable-hierarchical-cache\n", "sglang_args", "applies to engine sglang"),
    ("engine: sglang\nsglang_args: --no-such-flag 3\n", "sglang_args", "has no launch_server option '--no-such-flag'"),
    ("engine: sglang\nsglang_args: [--enable-hierarchical-cache]\n", "sglang_args", "one line of text"),
    ("engine: sglang\nenable_lora: true\nsglang_args: --enable-lora\n", "enable_lora", "is a vLLM option"),
    ("engine: sglang\nsglang_args: --disaggregation-mode decode\nlmcache: {max_local_cpu_size: 5}\n", "lmcache",
     "is a vLLM option"),  # not silently dropped beside sglang_args
    ("engine: sglang\nsglang_args: --disaggregation-mode decode\nrequest_rate: abc\n", "request_rate",
     "requests per second"),
    ("engine: sglang\nsglang_args: --disaggregation-mode decode\nprompt_tokens: lots\n", "prompt_tokens",
     "not a token count"),
    ("engine: sglang\nrequest_rate: 2\n", "request_rate", "write SGLang's launch options in sglang_args"),
    ("engine: sglang\nengine_options: {mem_fraction_static: 0.7}\n", "engine_options", "SGLang has no engine option"),
    ("engine: trtllm\nengine_options: {max_batch_size: [8]}\n", "engine_options.max_batch_size", "must be one value"),
    ("engine: trtllm\nengine_options: 8\n", "engine_options", "must be a mapping"),
])
def test_engine_settings_in_a_kvplan_deployment_are_read_strictly(tmp_path, cli, doc, where, needle):
    path = tmp_path / "d.yaml"
    path.write_text("name: d\nmodel: llama-3.1-8b\ngpu: h100\n" + doc)
    code, _, err = cli("check", path)
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 2 and len(lines) == 1, err
    assert f"{path}: {where} — " in lines[0] and needle in lines[0]


def test_engine_options_in_a_kvplan_deployment_are_the_clis_engine_options(tmp_path, cli):
    """TensorRT-LLM's max_batch_size written as `engine_options` judges as `estimate --engine-option` computes it."""
    path = tmp_path / "trt.yaml"
    path.write_text("name: trt\nengine: trtllm\nmodel: llama-3.1-8b\ngpu: h100\nmax_model_len: 8192\n"
                    "engine_options: {max_batch_size: 64, enable_attention_dp: false}\n")
    code, out, err = cli("check", path, "--json")
    assert code == 0, err
    (verdict,) = json.loads(out)["verdicts"]
    code, est, err = cli("estimate", "llama-3.1-8b", "--engine", "trtllm", "--gpu", "h100", "--seq", "8192",
                         "--engine-option", "max_batch_size=64", "--engine-option", "enable_attention_dp=false", "--json")
    assert code == 0, err
    est = json.loads(est)
    assert verdict["figures"]["cache_bytes"] == est["per_gpu"]["cache_bytes"]
    assert verdict["figures"]["weights_bytes"] == est["per_gpu"]["weights_bytes"]


def test_a_vllm_deployments_engine_options(cli, tmp_path):
    """kvplan YAML `engine_options` for engine vllm: VLLM_USE_FLASHINFER_SAMPLER (spelled as in the environment, or as
    --engine-option reads it) changes the sampler as --engine-option does; any other key is refused at the file, not
    dropped (it passed without a word before vLLM read any option)."""
    base = "name: a\nengine: vllm\nmodel: llama-3.1-8b\ngpu: h100\nmax_model_len: 8K\nvllm_version: '0.10.1'\n"
    figures = {}
    for name, extra in (("plain", ""), ("env", "engine_options:\n  VLLM_USE_FLASHINFER_SAMPLER: 1\n"),
                        ("lower", "engine_options:\n  vllm_use_flashinfer_sampler: 1\n")):
        (tmp_path / f"{name}.yaml").write_text(base + extra)
        code, out, _ = cli("check", tmp_path / f"{name}.yaml", "--json")
        assert code == 0, out
        figures[name] = json.loads(out)["verdicts"][0]["figures"]["available_kv_bytes"]
    code, out, _ = cli("check", tmp_path / "plain.yaml", "--engine-option", "VLLM_USE_FLASHINFER_SAMPLER=1", "--json")
    assert figures["env"] == figures["lower"] == json.loads(out)["verdicts"][0]["figures"]["available_kv_bytes"]
    assert figures["env"] > figures["plain"]
    (tmp_path / "bad.yaml").write_text(base + "engine_options:\n  max_batch_size: 64\n")
    code, out, _ = cli("check", tmp_path / "bad.yaml", "--json")
    verdict = json.loads(out)["verdicts"][0]
    assert code == 2 and verdict["status"] == "invalid" and "no engine option 'max_batch_size'" in verdict["reason"]
