"""vLLM launch options beyond the core request (kvplan/engines/features/, engines/vllm/features.py): each term against
hand arithmetic written out here from vLLM's rules (docs/engines/features/), on real models.

The three figures the issue asks for: Llama-3.1-70B with a Llama-3.2-1B draft at TP 4, DeepSeek-V3 with its MTP layer
and decode context parallelism 8, Llama-3.1-8B with 4 LoRA slots of rank 64."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from pathlib import Path

import pytest

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.requests.build import build_request
from kvplan.engines.vllm import engine as vllm
from kvplan.model import catalog

DATA = Path(__file__).parent / "data"
EAGLE3 = DATA / "spec_decode" / "eagle3-llama3.1-8b"
GIB = 2**30


def est(model: str, *, vllm_args: str | None = None, **kw):
    kw.setdefault("seq", "8192")
    kw.setdefault("gpu", "h100-sxm-80gb")
    req = build_request(model, batch=kw.pop("batch", 1), kv_dtype=kw.pop("kv_dtype", "auto"), dtype=None,
                        gpu=kw.pop("gpu"), gpu_mem=None, gpus=None, tp=kw.pop("tp", None), pp=kw.pop("pp", 1),
                        vllm_args=vllm_args, **kw)
    return vllm.estimate(req)


def spec_json(**config) -> str:
    return "--speculative-config '" + json.dumps(config) + "'"


# ------------------------------------------------------------------ LoRA: Llama-3.1-8B, 4 slots of rank 64

def test_lora_slots_of_llama_3_1_8b_by_hand():
    L, r, h, inter, vocab, layers = 4, 64, 4096, 14336, 128256, 32
    q, kv = 32 * 128, 8 * 128
    per_layer = (3 * L * r * h + L * (q + 2 * kv) * r  # qkv_proj: 3 slices of lora_a, lora_b over q + k + v
                 + L * r * q + L * h * r  # o_proj (row parallel)
                 + 2 * L * r * h + L * 2 * inter * r  # gate_up_proj: 2 slices
                 + L * r * inter + L * h * r)  # down_proj
    embed = L * vocab * r + L * h * r  # VocabParallelEmbeddingWithLoRA
    head = L * r * h + L * vocab * r  # LogitsProcessorWithLoRA
    expected = (per_layer * layers + embed + head) * 2  # bf16
    assert expected == 1_477_705_728
    with_lora = est("llama-3.1-8b", vllm_args="--enable-lora --max-loras 4 --max-lora-rank 64")
    plain = est("llama-3.1-8b")
    assert with_lora.features.lora.gpu_bytes_per_rank == expected
    assert with_lora.weights_per_gpu_bytes - plain.weights_per_gpu_bytes == expected
    # the profile run adds the punica shrink buffer: [3 slices, 8192 tokens, 64] float32
    assert with_lora.activation_peak_bytes - plain.activation_peak_bytes == 3 * 8192 * 64 * 4
    assert with_lora.available_kv_bytes == plain.available_kv_bytes - expected - 3 * 8192 * 64 * 4
    assert with_lora.num_gpu_blocks == with_lora.available_kv_bytes // with_lora.bytes_per_block


def test_lora_at_tp2_and_fully_sharded():
    L, r, h, inter, tp = 4, 64, 4096, 14336, 2
    q, kv = 32 * 128 // tp, 8 * 128 // tp
    layer = 3 * L * r * h + L * (q + 2 * kv) * r + L * r * q + L * h * r + 2 * L * r * h + L * 2 * (inter // tp) * r \
        + L * r * (inter // tp) + L * h * r
    once = 2 * (L * 128256 * r + L * h * r)
    t = est("llama-3.1-8b", tp=2, vllm_args="--enable-lora --max-loras 4 --max-lora-rank 64").features.lora
    assert t.gpu_bytes_per_rank == (layer * 32 + once) * 2
    # --fully-sharded-loras: column lora_a takes r / tp, row lora_b out / tp
    ra = r // tp
    sharded = 3 * L * ra * h + L * (q + 2 * kv) * r + L * r * q + L * (h // tp) * r + 2 * L * ra * h \
        + L * 2 * (inter // tp) * r + L * r * (inter // tp) + L * (h // tp) * r
    t = est("llama-3.1-8b", tp=2, vllm_args="--enable-lora --max-loras 4 --max-lora-rank 64 --fully-sharded-loras").features.lora
    assert t.gpu_bytes_per_rank == (sharded * 32 + once) * 2


def test_lora_target_modules_and_refusals():
    t = est("llama-3.1-8b", vllm_args="--enable-lora --max-loras 2 --max-lora-rank 16 --lora-target-modules q_proj v_proj").features.lora
    assert [m.name for m in t.modules] == ["qkv_proj"]  # the packed module of the targeted children, all 3 slices
    assert t.gpu_bytes_per_rank == (3 * 2 * 16 * 4096 + 2 * 6144 * 16) * 32 * 2
    # Mistral's class declares no embedding modules: no embedding or head slots
    assert {m.name for m in est("mistral-7b-v0.1", vllm_args="--enable-lora").features.lora.modules} == {
        "qkv_proj", "o_proj", "gate_up_proj", "down_proj"}
    with pytest.raises(UnsupportedError, match="mixture-of-experts"):
        est("mixtral-8x7b", tp=2, vllm_args="--enable-lora")
    with pytest.raises(InputError, match="max_cpu_loras"):
        est("llama-3.1-8b", vllm_args="--enable-lora --max-loras 4 --max-cpu-loras 2")


# ------------------------------------------------------------------ a 70B target with a 1B draft at TP 4

def test_llama_70b_with_a_1b_draft_at_tp4_by_hand():
    r = est("llama-3.1-70b", tp=4, vllm_args=spec_json(method="draft_model", model="llama-3.2-1b", num_speculative_tokens=5))
    # one group: target and draft layers are all full attention with 16-token blocks (UniformTypeKVCacheSpecs)
    target_page = 16 * (8 // 4) * (128 + 128) * 2  # 2 KV heads per rank of 128, bf16
    draft_page = 16 * (8 // 4) * (64 + 64) * 2  # Llama-3.2-1B: 8 KV heads of 64
    assert r.bytes_per_block == 80 * target_page + 16 * draft_page == 1_441_792
    assert r.blocks_per_request == 8192 // 16
    # the draft's weights on one GPU: its 1,235,814,400 bf16 parameters (tied head) / TP 4, plus its rotary cache
    # (131,072 positions x 64 x 2 B on every rank)
    draft = 1_235_814_400 * 2 // 4 + 131072 * 64 * 2
    s = r.features.speculative
    assert s.draft_weights_per_gpu_bytes == draft and s.draft_kv_layers == 16 and s.lookahead_tokens == 5
    plain = est("llama-3.1-70b", tp=4)
    assert r.weights_per_gpu_bytes - plain.weights_per_gpu_bytes == draft
    # the drafter's 16 layers add to the CUDA-graph estimate at the fitted per-layer, per-graph rate (397,267 B,
    # budget.Constants) times the graphs captured: sizes 1, 2, 4, every 8 to 248, every 16 to 512 = 3 + 31 + 17 = 51
    assert r.cuda_graph_bytes - plain.cuda_graph_bytes == 16 * 397_267 * 51
    assert r.num_gpu_blocks == r.available_kv_bytes // r.bytes_per_block
    assert s.decode_requests_per_step == 8192 // 6


def test_draft_model_rules_vllm_refuses():
    with pytest.raises(InputError, match="must be the same"):
        est("llama-3.1-70b", tp=4, vllm_args=spec_json(method="draft_model", model="llama-3.2-1b",
                                                       num_speculative_tokens=5, draft_tensor_parallel_size=1))
    with pytest.raises(InputError, match="vocabulary"):
        est("llama-2-70b", tp=4, vllm_args=spec_json(model="llama-3.2-1b", num_speculative_tokens=5))
    with pytest.raises(InputError, match="num_speculative_tokens was not"):
        est("llama-3.1-70b", tp=4, vllm_args=spec_json(model="llama-3.2-1b"))
    with pytest.raises(UnsupportedError, match="dspark"):
        est("llama-3.1-8b", vllm_args=spec_json(method="dspark", model="x", num_speculative_tokens=4))


# a DFlash drafter's config.json shaped like the published Qwen3-8B ones (5 Qwen3 layers of the target's width, fc
# over 5 target layers, mask token); built here, not a copy of one
DFLASH = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "num_hidden_layers": 5, "hidden_size": 4096,
          "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288,
          "vocab_size": 151936, "dflash_config": {"target_layer_ids": [1, 9, 17, 25, 33], "mask_token_id": 151669}}


def _dflash(tmp_path, **change):
    (tmp_path / "config.json").write_text(json.dumps({**DFLASH, **change}))
    return spec_json(method="dflash", model=str(tmp_path), num_speculative_tokens=15)


def test_dflash_drafter_by_hand(tmp_path):
    """vLLM 0.33 qwen3_dflash.py: per layer qkv_proj 4,096 x (4,096 + 2 x 1,024), o_proj 4,096 x 4,096, MLP 3 x
    4,096 x 12,288 = 192,937,984, x 5; embed_tokens and lm_head 2 x 151,936 x 4,096 (counted: vLLM shares them only
    when the checkpoint lacks them or they equal the target's): 2,209,349,632 sharded; fc 4,096 x 5 x 4,096, five
    layers' norms (2 x 4,096 + 2 x 128), hidden_norm, norm and mask_embedding: 83,940,608 whole; bf16. Its 5 layers
    join Qwen3-8B's 36 in the pool; lookahead k + 1 = 16 (config/vllm.py num_lookahead_tokens)."""
    base = est("qwen3-8b")
    r = est("qwen3-8b", vllm_args=_dflash(tmp_path))
    s = r.features.speculative
    assert s.method == "dflash" and s.draft_kv_layers == 5 and s.lookahead_tokens == 16
    assert s.draft_weights_per_gpu_bytes == 2 * (2_209_349_632 + 83_940_608)
    assert r.bytes_per_block == (36 + 5) * 16 * 8 * 128 * 2 * 2 and base.bytes_per_block == 36 * 65_536
    assert s.decode_requests_per_step == 8192 // 16
    # a drafter vocabulary of its own adds the int64 draft-to-target map and a smaller head
    small = est("qwen3-8b", vllm_args=_dflash(tmp_path, draft_vocab_size=32_000)).features.speculative
    assert s.draft_weights_per_gpu_bytes - small.draft_weights_per_gpu_bytes == \
        2 * (151_936 - 32_000) * 4_096 - 8 * 32_000


def test_dflash_refused_where_not_read(tmp_path):
    with pytest.raises(UnsupportedError, match="DFlash is modelled from vLLM 0.33.0"):
        est("qwen3-8b", engine_version="0.32.0", vllm_args=_dflash(tmp_path))
    with pytest.raises(UnsupportedError, match="sliding-window"):
        est("qwen3-8b", vllm_args=_dflash(tmp_path, layer_types=["sliding_attention"] * 5))
    with pytest.raises(UnsupportedError, match="model_type"):
        est("qwen3-8b", vllm_args=_dflash(tmp_path, model_type="llama"))


# ------------------------------------------------------------------ DeepSeek-V3: MTP and DCP 8

def test_deepseek_v3_mtp_layer_parameters_by_hand():
    h, inter, experts = 7168, 2048, 256
    mla = (1536 * h + 1536 + 128 * 192 * 1536  # q_a_proj, q_a_layernorm, q_b_proj
           + 576 * h + 512 + 128 * (128 + 128) * 512 + h * 128 * 128)  # kv_a_proj_with_mqa, kv_a_layernorm, kv_b, o
    moe = experts * 3 * inter * h + experts * h + 3 * inter * h  # routed experts, router, one shared expert
    mtp = 3 * h + 2 * h + h * 2 * h + mla + moe  # enorm, hnorm, shared_head.norm, the layer's two norms, eh_proj
    spec = catalog.resolve_model("deepseek-v3")
    assert spec.mtp.layers == 1 and spec.mtp.params == mtp == 11_610_067_968
    # with the shared embedding and head stored again in the checkpoint's MTP module: the 684.5B of the Hub files
    assert spec.params + spec.mtp.params + 2 * 129280 * h == 684_489_830_400


def test_deepseek_v3_mtp_and_dcp8_on_h200_by_hand():
    r = est("deepseek-v3", gpu="h200", tp=8, seq="32768",
            vllm_args=spec_json(method="mtp", num_speculative_tokens=1) + " --decode-context-parallel-size 8")
    # MLA on Hopper with a bf16 KV cache: FLASH_ATTN_MLA, 16-token blocks; 61 layers + the MTP layer, one latent each
    assert r.block_size == 16 and r.features.attention_backend.backend == "FLASH_ATTN_MLA"
    assert r.bytes_per_block == (61 + 1) * 16 * (512 + 64) * 2
    # DCP 8: each rank keeps cdiv(32768, 8) tokens of a request
    assert r.blocks_per_request == 32768 // 8 // 16 == 256
    assert r.max_concurrency == r.num_gpu_blocks / 256
    assert r.kv_cache_tokens == int(r.num_gpu_blocks / 256 * 32768)
    spec = catalog.resolve_model("deepseek-v3")
    edge = 2 * 129280 * 7168 * 16  # bits of the 16-bit embedding and head
    bits = (Fraction(spec.weights_bytes * 8) - edge) / (spec.params - 2 * 129280 * 7168)
    mtp_bytes = -(-spec.mtp.params * bits // 8 // 8)
    assert r.features.speculative.draft_weights_per_gpu_bytes in (mtp_bytes, mtp_bytes + 1)
    plain = est("deepseek-v3", gpu="h200", tp=8, seq="32768")
    # without DCP a request takes 8x the blocks: DCP 8 multiplies the concurrency by 8 (less the MTP layer's share)
    assert plain.blocks_per_request == 2048
    assert r.max_concurrency / plain.max_concurrency == pytest.approx(8 * 61 / 62 * r.available_kv_bytes / plain.available_kv_bytes,
                                                                      rel=1e-3)


def test_dcp_rules_vllm_refuses():
    with pytest.raises(InputError, match="greater than the model's KV heads"):
        est("llama-3.1-8b", tp=8, vllm_args="--decode-context-parallel-size 2")
    with pytest.raises(InputError, match="divisible by dcp_size"):
        est("deepseek-v3", gpu="h200", tp=8, vllm_args="--decode-context-parallel-size 3")
    # GQA with heads replicated: Llama-3.1-8B at TP 16 keeps 1 KV head per rank; DCP 2 splits the tokens instead
    r = est("llama-3.1-8b", gpu="h200", tp=16, vllm_args="--decode-context-parallel-size 2")
    assert r.blocks_per_request == 8192 // 2 // 16


# ------------------------------------------------------------------ EAGLE-3 and host-side methods

def test_eagle3_head_weights_match_the_published_checkpoint():
    r = est("llama-3.1-8b", vllm_args=spec_json(method="eagle3", model=str(EAGLE3), num_speculative_tokens=3))
    h, inter, q, kv = 4096, 14336, 4096, 1024
    sharded = 2 * h * (q + 2 * kv) + q * h + 3 * h * inter + 32000 * h  # qkv over 2 x hidden, o, MLP, draft lm_head
    replicated = 3 * h + h * 3 * h + h  # norms, fc over the 3 aux hidden states, hidden_norm
    expected = (sharded + replicated) * 2 + 8 * 32000  # bf16 + the int64 draft-to-target id map
    assert r.features.speculative.draft_weights_per_gpu_bytes == expected
    # the published model.safetensors of yuhuili/EAGLE3-LLaMA3.1-Instruct-8B is "~811MB" (MiB): within 0.2%
    assert expected / 2**20 == pytest.approx(811, rel=2e-3)
    # its one decoder layer is one more full-attention layer in the pool (same page as the target's)
    assert r.bytes_per_block == 33 * 16 * 8 * 256 * 2


@pytest.mark.parametrize("method", ["ngram", "suffix"])
def test_host_methods_add_nothing_on_the_gpu(method):
    r = est("llama-3.1-8b", vllm_args=spec_json(method=method, num_speculative_tokens=4))
    # 0.33's V2 model runner lacks suffix decoding and hands it to the V1 runner (config/vllm.py
    # _get_v2_model_runner_unsupported_features), whose profile differs: compared with a plain launch on that runner
    plain = est("llama-3.1-8b", engine_options=["VLLM_USE_V2_MODEL_RUNNER=0"] if method == "suffix" else None)
    assert (r.num_gpu_blocks, r.bytes_per_block, r.weights_per_gpu_bytes) == (plain.num_gpu_blocks, plain.bytes_per_block,
                                                                              plain.weights_per_gpu_bytes)
    assert not r.features.speculative.uses_gpu and any("CPU" in n for n in r.notes)


def test_suffix_decoding_falls_back_to_the_v1_runner_on_0_33():
    """0.33.0 config/vllm.py: suffix is among the V2 runner's unsupported speculative methods, ngram is not; the V1
    runner's sampler warm-up is FlashInfer's, R x V x (2 + 12) B, where V2 keeps R x V bf16 logits: at R = 1024 and
    Llama-3.1-8B's 128256 logits the pool differs by at least 1024 x 128256 x 12 B (1.47 GiB) less the V2 runner's
    CUDA-graph centre, i.e. by more than 1 GiB."""
    suffix = est("llama-3.1-8b", vllm_args=spec_json(method="suffix", num_speculative_tokens=4))
    ngram = est("llama-3.1-8b", vllm_args=spec_json(method="ngram", num_speculative_tokens=4))
    assert ngram.available_kv_bytes - suffix.available_kv_bytes > 2**30


def test_speculative_decoding_on_vllm_0_19_needs_the_budget_given():
    with pytest.raises(UnsupportedError, match="rejection sampler"):
        est("llama-3.1-8b", engine_version="0.19", vllm_args=spec_json(method="eagle3", model=str(EAGLE3), num_speculative_tokens=3))
    r = est("llama-3.1-8b", engine_version="0.19", kv_cache_memory="20GiB",
            vllm_args=spec_json(method="eagle3", model=str(EAGLE3), num_speculative_tokens=3))
    assert r.num_gpu_blocks == 20 * GIB // (33 * 16 * 8 * 256 * 2)


# ------------------------------------------------------------------ offload tiers

def test_weight_offload_moves_whole_parameters_in_order():
    # Llama-3.1-8B layer: qkv 6144 x 4096, o 4096 x 4096, gate_up 28672 x 4096, down 4096 x 14336, two norms, bf16
    layer = [6144 * 4096 * 2, 4096 * 4096 * 2, 28672 * 4096 * 2, 4096 * 14336 * 2, 4096 * 2, 4096 * 2]
    moved, budget = 0, 10 * GIB
    for _ in range(32):
        for size in layer:
            if moved >= budget:
                break
            moved += size
    assert moved == 24 * sum(layer) + layer[0] + layer[1] + layer[2] == 10_788_143_104
    r = est("llama-3.1-8b", gpu="rtx-4090-24gb", vllm_args="--cpu-offload-gb 10")
    plain = est("llama-3.1-8b", gpu="rtx-4090-24gb")
    assert r.features.weight_offload.offloaded_bytes == moved
    assert plain.weights_per_gpu_bytes - r.weights_per_gpu_bytes == moved and r.features.host_memory_bytes == moved
    # the 10 GiB moved to the host come back as KV cache: 64K fits on a 24 GB card with it, not without
    long = dict(gpu="rtx-4090-24gb", seq="65536")
    assert est("llama-3.1-8b", vllm_args="--cpu-offload-gb 10", **long).fits and not est("llama-3.1-8b", **long).fits


def test_a_negative_cpu_offload_is_refused_as_vllm_refuses_it(cli):
    # vLLM: OffloadConfig.cpu_offload_gb = Field(default=0, ge=0) (config/offload.py, 0.13-0.33; 0.10's CacheConfig
    # "CPU offload space must be non-negative"); kvplan skipped a negative size and passed the launch (issue 26)
    launch = "serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 --cpu-offload-gb"
    code, out, err = cli("check", "--vllm-args", f"{launch} -1.5", "--gpu", "h100", "--offline")
    assert code == 2 and "not negative, got -1.5" in err, (out, err)
    assert cli("check", "--vllm-args", f"{launch} 0", "--gpu", "h100", "--offline")[0] == 0


def test_native_kv_offload_tier():
    r = est("llama-3.1-8b", vllm_args="--kv-offloading-size 100")
    # CPUOffloadingSpec: 100 GiB // round_up(2 MiB per block x 1 worker, 4096) chunks of one 16-token block
    assert r.features.kv_offload.tiers[0].tokens == 100 * GIB // (32 * 16 * 8 * 256 * 2) * 16 == 819_200
    assert r.features.host_memory_bytes == 100 * GIB
    # TP 2: the size is the total over the ranks, a chunk holds both ranks' halves of a block
    r2 = est("llama-3.1-8b", tp=2, vllm_args="--kv-offloading-size 100")
    assert r2.features.kv_offload.tiers[0].tokens == 100 * GIB // (2 * r2.bytes_per_block) * 16 == 819_200


def test_lmcache_tiers_per_rank():
    conn = "--kv-transfer-config '{\"kv_connector\": \"LMCacheConnectorV1\", \"kv_role\": \"kv_both\"}'"
    r = est("llama-3.1-8b", tp=2, vllm_args=conn)
    # LMCache's default 5 GiB per worker, chunks of 256 tokens of one rank's shard (64 KiB per token at TP 2)
    tier = r.features.kv_offload.tiers[0]
    assert tier.tokens == 5 * GIB // (256 * 65536) * 256 == 81_920
    assert r.features.host_memory_bytes == 2 * 5 * GIB
    # LMCacheConnectorV1 does not implement SupportsHMA: vLLM turns the hybrid manager off
    assert r.features.kv_transfer.hybrid_manager_off


# ------------------------------------------------------------------ expert and data parallelism

def test_deepseek_v3_dp8_ep_on_h200():
    r = est("deepseek-v3", gpu="h200", tp=1, seq="32768", vllm_args="--data-parallel-size 8 --enable-expert-parallel")
    spec = catalog.resolve_model("deepseek-v3")
    p = r.features.parallel
    assert (p.gpus, p.replicas, p.ep_size, p.experts_per_rank) == (8, 8, 8, 32)
    edge = 2 * 129280 * 7168
    bits = (Fraction(spec.weights_bytes * 8) - edge * 16) / (spec.params - edge)
    experts = -(-spec.moe.expert_params * bits // 8)
    assert r.features.expert_weights_per_gpu_bytes == -(-experts * 32 // 256)
    # the deployment holds 8 pools
    assert r.features.deployment_concurrency == 8 * r.max_concurrency
    # without DP the same GPU could not hold the model at TP 1
    assert not est("deepseek-v3", gpu="h200", tp=1, seq="32768").fits


def test_dp_without_ep_flattens_tp_over_the_experts():
    ep = est("qwen3-30b-a3b-2507", tp=1, vllm_args="--data-parallel-size 4 --enable-expert-parallel")
    flat = est("qwen3-30b-a3b-2507", tp=1, vllm_args="--data-parallel-size 4")
    # 128 experts over 4 ranks: whole experts (EP) or a quarter of every expert (TP across DP): the same bytes
    assert ep.features.expert_weights_per_gpu_bytes == flat.features.expert_weights_per_gpu_bytes
    assert ep.weights_per_gpu_bytes == flat.weights_per_gpu_bytes


# ------------------------------------------------------------------ the rest of the list

@pytest.mark.parametrize("gpu, kv, block, backend", [
    ("h200", "auto", 16, "FLASH_ATTN_MLA"), ("h200", "fp8", 64, "FLASHMLA"), ("b200", "auto", 32, "FLASHINFER_MLA"),
    ("a100-80gb", "auto", 16, "TRITON_MLA"),
])
def test_the_mla_backend_sets_the_block_size(gpu, kv, block, backend):
    r = est("deepseek-v3", gpu=gpu, tp=8, kv_dtype=kv, seq="4096")
    assert r.block_size == block and r.bytes_per_block == 61 * block * 576 * (1 if kv == "fp8" else 2)
    assert (r.features.attention_backend.backend if r.features else None) in (backend, None)


def test_attention_backend_named_and_block_size_given():
    assert est("deepseek-v3", gpu="h200", tp=8, seq="4096", vllm_args="--attention-backend CUTLASS_MLA").block_size == 128
    assert est("deepseek-v3", gpu="h200", tp=8, seq="4096", block_size=32).block_size == 32
    # on ROCm, VLLM_ROCM_USE_AITER unset: TRITON_MLA and 16-token blocks (platforms/rocm.py _get_backend_priorities)
    r = est("deepseek-v3", gpu="mi300x", tp=8, seq="4096")
    assert r.block_size == 16 and r.bytes_per_block == 61 * 16 * 576 * 2
    assert est("deepseek-v3", gpu="mi300x", tp=8, seq="4096", block_size=1).bytes_per_block == 61 * 576 * 2


def test_disable_sliding_window():
    r = est("gemma-2-9b", seq="4096", vllm_args="--disable-sliding-window")
    assert [(g.kind, g.layers) for g in r.kv_cache_groups] == [("full", 42)]
    with pytest.raises(InputError, match="sliding window 4,096"):
        est("gemma-2-9b", seq="8192", vllm_args="--disable-sliding-window")


def test_kv_cache_dtype_skip_layers_on_0_19_and_refused_on_0_33():
    r = est("llama-3.1-8b", engine_version="0.19", kv_dtype="fp8", vllm_args="--kv-cache-dtype-skip-layers 0 31")
    assert r.bytes_per_block == 30 * 16 * 8 * 256 * 1 + 2 * 16 * 8 * 256 * 2 == 1_114_112
    with pytest.raises(UnsupportedError, match="pads"):
        est("llama-3.1-8b", kv_dtype="fp8", vllm_args="--kv-cache-dtype-skip-layers 0 31")


def test_num_gpu_blocks_override():
    r = est("llama-3.1-8b", vllm_args="--num-gpu-blocks-override 1000")
    assert r.num_gpu_blocks == 1000 and r.max_concurrency == 1000 / 512 and r.fits
    # 0.33 plans the fit check with the override, less the null block: 499 blocks of 16 tokens
    short = est("llama-3.1-8b", vllm_args="--num-gpu-blocks-override 500")
    assert not short.fits and short.estimated_max_model_len == 499 * 16
    # 0.20.2-0.28 plan it with the override too (get_kv_cache_configs' adjusted_memory), without keeping the null
    # block back; 0.19 checks the profiled memory (an H100 holds 8K) and then takes the 500 blocks
    for version in ("0.20.2", "0.26.0", "0.28.0"):
        old = est("llama-3.1-8b", engine_version=version, vllm_args="--num-gpu-blocks-override 500")
        assert not old.fits and old.estimated_max_model_len == 500 * 16, version
    old = est("llama-3.1-8b", engine_version="0.19.1", vllm_args="--num-gpu-blocks-override 500")
    assert old.starts and old.estimated_max_model_len is None and old.max_batch == 0


def test_mamba_state_dtypes():
    plain = est("jamba-1.5-mini")
    r = est("jamba-1.5-mini", vllm_args="--mamba-ssm-cache-dtype float32")
    spec = catalog.resolve_model("jamba-1.5-mini")
    conv = spec.state.conv_shape[0] * spec.state.conv_shape[1] * 2
    rec = spec.state.recurrent_shape[0] * spec.state.recurrent_shape[1]
    # the recurrent state in float32 instead of bf16: the state page grows by rec x 2 bytes
    assert plain.state_bytes + 2 * rec * 2 * spec.count("state") <= r.state_bytes
    assert conv > 0


def test_online_fp8_quantization_of_a_bf16_checkpoint():
    # the calibration log launched with --quantization fp8 prints "Model loading took 8.49 GiB" (vLLM 0.19, H100)
    log = next((DATA / "vllm_logs" / "raw").glob("*qfp8*"))
    assert "Model loading took 8.49 GiB" in log.read_text(encoding="utf-8", errors="replace")
    r = est("llama-3.1-8b", vllm_args="--quantization fp8")
    assert round(r.weights_per_gpu_bytes / GIB, 2) == 8.49
    with pytest.raises(UnsupportedError, match="online quantization"):
        est("llama-3.1-8b", vllm_args="--quantization awq")


def test_hf_overrides_need_the_config():
    with pytest.raises(UnsupportedError, match="config.json"):
        est("llama-3.1-8b", vllm_args="--hf-overrides '{\"num_key_value_heads\": 4}'")
    r = est(str(DATA / "hf_configs" / "llama-3.1-8b.json"), vllm_args="--hf-overrides '{\"num_key_value_heads\": 4}'")
    assert r.bytes_per_block == 32 * 16 * 4 * 256 * 2


def test_kvplan_flags_are_not_taken_twice():
    # a setting kvplan has a flag for is read as vLLM spells it; given both ways with two values, it is an error
    assert est("llama-3.1-8b", vllm_args="--tensor-parallel-size 2").tp == 2
    with pytest.raises(InputError, match="disagree"):
        est("llama-3.1-8b", vllm_args="--max-model-len 4096")  # est gives --seq 8192
    with pytest.raises(InputError, match="kvplan's MODEL"):
        est("llama-3.1-8b", vllm_args="--model llama-3.1-8b")
    with pytest.raises(UnsupportedError, match="offload-group-size"):
        est("llama-3.1-8b", vllm_args="--offload-group-size 4")


def test_no_options_no_features_record():
    r = est("llama-3.1-8b")
    assert r.features is None
    assert dataclasses.asdict(r)["features"] is None


# ------------------------------------------------------------------ weight offload against public logs

# TheBuccaneer/vllm-offload-profiles at 547be90 (tests/data/vllm_logs_features and vllm_logs_public, index.jsonl):
# one RTX 3090, vLLM 0.17.1, max_model_len 8192, gpu_memory_utilization 0.86, the same launch with and without
# --cpu-offload-gb 12. (model, config folder, logged "Model loading took" GiB with offload and without it,
# "Available KV cache memory" GiB with offload, "GPU KV cache size" tokens with offload)
OFFLOAD_LOGS = [
    ("llama31-8b", "meta-llama--Llama-3.1-8B-Instruct", "2.91", "14.99", "16.79", 137_552),
    ("qwen25-7b", "Qwen--Qwen2.5-7B-Instruct", "2.17", "14.25", "17.48", 327_360),
]


@pytest.mark.parametrize("name, folder, weights, weights_without, available, tokens", OFFLOAD_LOGS,
                         ids=[r[0] for r in OFFLOAD_LOGS])
def test_cpu_offload_matches_the_public_rtx3090_logs(name, folder, weights, weights_without, available, tokens):
    model = str(DATA / "vllm_models" / folder)
    kw = dict(engine_version="0.17.1", gpu="rtx-3090-24gb", gpu_util="0.86")
    off = est(model, vllm_args="--cpu-offload-gb 12", **kw)
    base = est(model, **kw)
    gib = 2**30
    # what stays on the GPU prints as the log's "Model loading took" (two decimals; 5 MiB of slack for the rounding)
    assert abs(off.weights_bytes / gib - float(weights)) <= 0.005 + 5 / 1024
    # vLLM moves whole tensors until 12 GiB are on the host (so a little more); the two logs' weights differ by
    # that, within the weights' known residual (Qwen2.5-7B loads 0.06 GiB more than its tensors, docs/engines)
    moved = base.weights_bytes - off.weights_bytes
    assert 12 * gib <= moved < 12 * gib + 256 * 2**20
    assert abs((float(weights_without) - float(weights)) - moved / gib) <= 0.06
    # end to end, the offloaded launch's budget and pool: inside the band, and within 0.5% of the log
    assert off.available_kv_bytes_low <= float(available) * gib <= off.available_kv_bytes_high
    assert abs(off.available_kv_bytes / gib - float(available)) / float(available) < 0.005
    assert abs(off.kv_cache_tokens - tokens) / tokens < 0.005


# ------------------------------------------------------------------ --enforce-eager: no CUDA graphs

def test_enforce_eager_takes_the_cuda_graph_estimate_off_the_budget_where_vllm_subtracts_it():
    """vLLM captures no graph with --enforce-eager, so it profiles none (gpu_model_runner.py profile_cudagraph_memory
    is skipped when cudagraph_mode is NONE) and subtracts none: from 0.20 the pool grows by exactly the estimate a
    default launch subtracts; on 0.19, which logs the estimate but does not subtract it, the pool is the same."""
    for version, subtracted in (("0.22.0", True), ("0.33.0", True), ("0.19.0", False)):
        default = est("llama-3.1-8b", engine_version=version)
        eager = est("llama-3.1-8b", engine_version=version, vllm_args="--enforce-eager")
        graphs = default.cuda_graph_bytes
        assert graphs > 100 * 2**20 and eager.cuda_graph_bytes == 0
        assert eager.available_kv_bytes - default.available_kv_bytes == (graphs if subtracted else 0), version
        assert "enforce_eager" in eager.features.options
    # the public Kaggle run (tests/data/vllm_logs_public trietnguyeminh-kaggle-2xt4-v0220-qwen3-8b-tp2-eager-fp16):
    # 2x T4, Qwen3-8B in fp16 at 0.85, eager; vLLM logged 4.11 GiB. With the default graphs subtracted kvplan said
    # 3.05 GiB, outside its band; without them the band holds the logged figure.
    run = est(str(DATA / "vllm_models" / "Qwen--Qwen3-8B"), gpu="t4-16gb", tp=2, gpu_util="0.85", engine_version="0.22.0",
              vllm_args="--enforce-eager", seq="8192")
    assert run.available_kv_bytes_low <= 4.11 * GIB <= run.available_kv_bytes_high


def test_the_sampler_variable_in_a_deployments_environment(cli, tmp_path):
    """VLLM_USE_FLASHINFER_SAMPLER in the engine's environment (compose `environment:`, a container's `env:`) is
    read as --engine-option passes it. On 0.21+ FlashInfer's sampler is the default, so =0 (scripts set it to skip
    FlashInfer's JIT) leaves less for the KV cache; before, a file with it passed on the default's figures. A value
    set outside the file (`valueFrom`) is judged as 0, the sampler needing the most memory; a value vLLM cannot read
    as an integer is the file's error, at that variable."""
    def compose(env: str) -> Path:
        path = tmp_path / f"c{len(list(tmp_path.iterdir()))}" / "docker-compose.yml"
        path.parent.mkdir()
        path.write_text("services:\n  vllm:\n    image: vllm/vllm-openai:v0.21.0\n" + env +
                        "    command: --model llama-3.1-8b --max-model-len 8192\n")
        return path

    def available(path: Path, *extra: str) -> int:
        code, out, err = cli("check", path, "--gpu", "h100", "--json", *extra)
        assert code == 0, out + err
        return json.loads(out)["verdicts"][0]["figures"]["available_kv_bytes"]

    plain = available(compose(""))
    native = available(compose("    environment:\n      - VLLM_USE_FLASHINFER_SAMPLER=0\n"))
    assert available(compose("    environment:\n      VLLM_USE_FLASHINFER_SAMPLER: '1'\n")) == plain > native
    # the command line's --engine-option outranks the file, as for any other option
    assert available(compose("    environment:\n      - VLLM_USE_FLASHINFER_SAMPLER=0\n"),
                     "--engine-option", "VLLM_USE_FLASHINFER_SAMPLER=1") == plain
    # the same estimate as --engine-option on the plain file
    assert available(compose(""), "--engine-option", "VLLM_USE_FLASHINFER_SAMPLER=0") == native

    # a script's export reaches the commands after it; a container gets it only through `docker run -e NAME`
    for name, launch, expected in (("host", "vllm serve llama-3.1-8b", native),
                                   ("docker", "docker run --gpus all vllm/vllm-openai:v0.21.0", plain),
                                   ("docker-e", "docker run --gpus all -e VLLM_USE_FLASHINFER_SAMPLER vllm/vllm-openai:v0.21.0",
                                    native)):
        script = tmp_path / f"{name}.sh"
        script.write_text(f"#!/bin/bash\nexport VLLM_USE_FLASHINFER_SAMPLER=0\n{launch}"
                          f"{' --model llama-3.1-8b' if 'docker' in name else ''} --max-model-len 8192\n")
        extra = () if "docker" in name else ("--vllm-version", "0.21.0")
        assert available(script, *extra) == expected, name
    manifest = tmp_path / "k8s.yaml"
    manifest.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: v}\nspec:\n  template:\n    spec:\n      containers:\n"
        "      - name: vllm\n        image: vllm/vllm-openai:v0.21.0\n"
        "        args: [--model, llama-3.1-8b, --max-model-len, '8192']\n"
        "        env:\n        - name: VLLM_USE_FLASHINFER_SAMPLER\n"
        "          valueFrom: {configMapKeyRef: {name: vllm, key: sampler}}\n"
        "        resources: {limits: {nvidia.com/gpu: 1}}\n")
    code, out, err = cli("check", manifest, "--gpu", "h100", "--json")
    verdict = json.loads(out)["verdicts"][0]
    assert code == 0 and verdict["figures"]["available_kv_bytes"] == native, out + err
    assert any("set outside the file" in note for note in verdict["notes"])

    code, out, err = cli("check", compose("    environment:\n      - VLLM_USE_FLASHINFER_SAMPLER=true\n"), "--gpu", "h100")
    assert code == 2 and "environment VLLM_USE_FLASHINFER_SAMPLER" in err and "as an integer" in err, out + err


def test_a_length_past_the_models_limit_with_vllm_allow_long_max_model_len(cli, tmp_path):
    """vLLM refuses a max_model_len above the model's derived limit unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is "1" or
    "true" (vllm/config/model.py _get_and_verify_max_len; envs.py reads value.strip().lower() in ("1", "true")).
    check called such a deployment invalid even with the variable set, and estimate said it does not start. Set
    from outside the file, the verdict depends on it: cannot judge, until --engine-option says."""
    def script(name: str, env: str) -> Path:
        path = tmp_path / f"{name}.sh"
        path.write_text(f"#!/bin/bash\n{env}vllm serve llama-3.1-8b --max-model-len 200000\n")
        return path

    def status(path: Path, *extra: str) -> tuple[int, dict]:
        code, out, err = cli("check", path, "--gpu", "h100", "--json", *extra)
        return code, json.loads(out)["verdicts"][0]

    code, verdict = status(script("on", "export VLLM_ALLOW_LONG_MAX_MODEL_LEN=1\n"))
    assert code == 0 and verdict["status"] == "pass", verdict
    assert any("VLLM_ALLOW_LONG_MAX_MODEL_LEN lets vLLM start" in n for n in verdict["notes"])
    assert status(script("true", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=' TRUE' "))[1]["status"] == "pass"
    for name, env in (("unset", ""), ("yes", "export VLLM_ALLOW_LONG_MAX_MODEL_LEN=yes\n")):  # "yes" is off to vLLM
        code, verdict = status(script(name, env))
        assert code == 2 and verdict["status"] == "invalid" and "above the model's limit of 131,072" in verdict["reason"]
    unknown = script("unknown", "export VLLM_ALLOW_LONG_MAX_MODEL_LEN=$ALLOW\n")
    code, verdict = status(unknown)
    assert code == 3 and verdict["status"] == "cannot_judge" and "set outside the file" in verdict["reason"]
    assert status(unknown, "--engine-option", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")[1]["status"] == "pass"
    assert status(unknown, "--engine-option", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=0")[1]["status"] == "invalid"

    (tmp_path / "d.yaml").write_text("name: a\nengine: vllm\nmodel: llama-3.1-8b\ngpu: h100\nmax_model_len: 200000\n"
                                     "engine_options:\n  VLLM_ALLOW_LONG_MAX_MODEL_LEN: 1\n")
    assert status(tmp_path / "d.yaml")[1]["status"] == "pass"

    base = ("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "h100", "--seq", "200000", "--json")
    code, out, _ = cli(*base)
    assert code == 1 and not json.loads(out)["fits"]
    code, out, _ = cli(*base, "--engine-option", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
    assert code == 0 and json.loads(out)["fits"]


def test_vllm_memory_profiler_estimate_cudagraphs_moves_the_graph_estimate_in_or_out(cli, tmp_path):
    """VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (envs.py, bool(int(value)); default 0 in 0.18-0.19, 1 from 0.20):
    on, determine_available_memory takes the CUDA-graph estimate out of the budget. kvplan followed the release's
    default whatever the deployment set, so =1 on 0.19 judged the pool larger than vLLM makes it by the whole
    estimate. Before 0.18 there is no estimate and the variable changes nothing."""
    def estimate(version: str, value: str | None = None) -> dict:
        extra = ("--engine-option", f"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS={value}") if value is not None else ()
        code, out, err = cli("estimate", "llama-3.1-8b", "--engine", "vllm", "--engine-version", version, "--gpu", "h100",
                             "--seq", "8K", "--optimistic", "--json", *extra)
        assert code == 0, out + err
        return json.loads(out)

    for version, default in (("0.19.0", False), ("0.21.0", True)):
        base = estimate(version)
        on, off = estimate(version, "1"), estimate(version, "0")
        graphs = base["cuda_graph_bytes"]
        assert graphs > 0 and base["cuda_graph_subtracted"] is default
        assert on["available_kv_bytes"] == off["available_kv_bytes"] - graphs
        assert base["available_kv_bytes"] == (on if default else off)["available_kv_bytes"]
    old = estimate("0.17.1")
    assert estimate("0.17.1", "1")["available_kv_bytes"] == old["available_kv_bytes"] and old["cuda_graph_bytes"] == 0

    def compose(env: str) -> tuple[int, dict]:
        path = tmp_path / f"c{len(list(tmp_path.iterdir()))}" / "docker-compose.yml"
        path.parent.mkdir()
        path.write_text("services:\n  vllm:\n    image: vllm/vllm-openai:v0.19.0\n" + env +
                        "    command: --model llama-3.1-8b --max-model-len 8192\n")
        code, out, err = cli("check", path, "--gpu", "h100", "--json")
        return code, json.loads(out)["verdicts"][0]

    plain = compose("")[1]["figures"]["available_kv_bytes"]
    assert compose("    environment:\n      - VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0\n")[1]["figures"]["available_kv_bytes"] == plain
    code, verdict = compose("    environment:\n      - VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1\n")
    on_019 = verdict["figures"]["available_kv_bytes"]
    assert code == 0 and on_019 < plain
    code, verdict = compose("    environment:\n      - VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS\n")  # from the shell
    assert verdict["figures"]["available_kv_bytes"] == on_019
    assert any("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is set outside the file" in n for n in verdict["notes"])
    code, verdict = compose("    environment:\n      - VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=on\n")
    assert code == 2 and "as an integer" in verdict["reason"]
