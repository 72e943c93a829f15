"""The launch options' rules on every vLLM release line (kvplan/engines/vllm/option_rules.py): for each rule that
changed, a launch on the last release before the change and on the first after it, with the figures worked by hand
from the two releases' source (docs/research/vllm-features-by-release.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.requests.build import build_request
from kvplan.engines.vllm import engine as vllm
from kvplan.engines.vllm import option_rules, releases

EAGLE3 = Path(__file__).parent / "data" / "spec_decode" / "eagle3-llama3.1-8b"
GIB = 2**30
NIXL = "--kv-transfer-config '" + json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}) + "'"


def est(model: str, version: str, *, vllm_args: str | None = None, **kw):
    req = build_request(model, batch=1, kv_dtype=kw.pop("kv_dtype", "auto"), dtype=None, gpu=kw.pop("gpu", "h100-sxm-80gb"),
                        gpu_mem=None, gpus=None, tp=kw.pop("tp", None), pp=1, seq=kw.pop("seq", "8192"),
                        engine_version=version, vllm_args=vllm_args, **kw)
    return vllm.estimate(req)


def test_every_line_has_option_rules_and_no_line_is_refused_outright():
    for rel in releases.RELEASES:
        r = option_rules.rules(rel)
        assert {"eagle", "eagle3", "mtp", "ngram"} <= r.spec_methods and "NixlConnector" in r.connectors
    # a launch with LoRA on Llama-3.1-8B is judged on every line from 0.12 (0.10-0.11: extra-vocabulary slots)
    slots = {rel.line: est("llama-3.1-8b", rel.version, vllm_args="--enable-lora --max-loras 2").features.lora.gpu_bytes_per_rank
             for rel in releases.RELEASES[2:]}
    assert len(set(slots.values())) == 1  # lora/layers/base_linear.py create_lora_weights: the same code 0.12-0.33
    with pytest.raises(UnsupportedError, match=r"lora_extra_vocab_size.*0\.11\.0 \(0\.11 line\)"):
        est("llama-3.1-8b", "0.11.0", vllm_args="--enable-lora")


def test_speculative_profile_run_v1_runner_until_0_28_v2_from_0_29():
    """0.28 profiles EAGLE-3 on the V1 model runner (rejection sampler warm-up, not modelled: exit 3 unless the budget
    is given); 0.29's V2 runner has no such warm-up, so the estimate is end to end. The pool either side is the same
    layout: 32 target layers + the head's one layer of 8 KV heads x 128 x 2 (K, V) x 2 B in 16-token blocks."""
    spec = "--speculative-config '" + json.dumps({"method": "eagle3", "model": str(EAGLE3), "num_speculative_tokens": 3}) + "'"
    with pytest.raises(UnsupportedError, match="V1 model runner"):
        est("llama-3.1-8b", "0.28.0", vllm_args=spec)
    given = est("llama-3.1-8b", "0.28.0", vllm_args=spec, kv_cache_memory="20GiB")
    assert given.bytes_per_block == 33 * 16 * 8 * 128 * 2 * 2 == 2_162_688
    assert given.num_gpu_blocks == 20 * GIB // 2_162_688 == 9_929
    new = est("llama-3.1-8b", "0.29.0", vllm_args=spec)
    plain = est("llama-3.1-8b", "0.29.0")
    head = new.features.speculative.draft_weights_per_gpu_bytes
    assert new.bytes_per_block == 2_162_688
    assert new.available_kv_bytes == plain.available_kv_bytes - head - new.features.cuda_graph_added_bytes
    # draft models move to the V2 runner in 0.31 (config/vllm.py _get_v2_model_runner_unsupported_features)
    draft = "--speculative-config '" + json.dumps({"model": "llama-3.2-1b", "num_speculative_tokens": 3}) + "'"
    with pytest.raises(UnsupportedError, match="'draft_model' on the V1 model runner"):
        est("llama-3.1-8b", "0.30.0", vllm_args=draft)
    d31, p31 = est("llama-3.1-8b", "0.31.0", vllm_args=draft), est("llama-3.1-8b", "0.31.0")
    drafter = d31.features.speculative.draft_weights_per_gpu_bytes
    assert drafter > 2 * 10**9  # Llama-3.2-1B loads whole: 1.24B parameters in bf16 (its own tied embedding and head)
    assert d31.available_kv_bytes == p31.available_kv_bytes - drafter - d31.features.cuda_graph_added_bytes


def test_speculative_methods_by_release():
    # draft_model proposers exist in V1 from 0.15 (v1/spec_decode/draft_model.py: absent in 0.14.1)
    draft = "--speculative-config '" + json.dumps({"model": "llama-3.2-1b", "num_speculative_tokens": 3}) + "'"
    with pytest.raises(UnsupportedError, match="'draft_model' does not exist"):
        est("llama-3.1-8b", "0.14.1", vllm_args=draft, kv_cache_memory="20GiB")
    r = est("llama-3.1-8b", "0.15.1", vllm_args=draft, kv_cache_memory="20GiB")
    # Llama-3.2-1B: 16 layers of 8 KV heads x 64 in the same pool as the target's 32 of 8 x 128
    assert r.bytes_per_block == (32 * 8 * 128 + 16 * 8 * 64) * 16 * 2 * 2 == 2_621_440
    assert r.num_gpu_blocks == 20 * GIB // 2_621_440 == 8_192


def test_connectors_turn_the_hybrid_manager_off_until_0_21_nixl_keeps_it_from_0_22():
    """Gemma-2-9B (21 sliding-window layers of 4096, 21 full, 8 KV heads x 256) at 32K with NixlConnector: until 0.21
    every connector turns the hybrid KV cache manager off, so each sliding layer holds the whole request; 0.22 keeps
    it for connectors with SupportsHMA, and a request holds 4096 + in-flight tokens in the sliding group."""
    old = est("gemma-2-9b", "0.21.0", vllm_args=NIXL, seq="32768", kv_cache_memory="20GiB")
    new = est("gemma-2-9b", "0.22.1", vllm_args=NIXL, seq="32768", kv_cache_memory="20GiB")
    page = 16 * 8 * 256 * 2 * 2  # one layer's 16-token block: 131,072 B
    assert old.features.kv_transfer.hybrid_manager_off and not new.features.kv_transfer.hybrid_manager_off
    assert old.bytes_per_block == 42 * page and old.blocks_per_request == 32768 // 16 == 2048
    assert old.num_gpu_blocks == 20 * GIB // (42 * page) == 3_900
    # with the manager on: two groups of 21 layers share one block table of 21 x page per block
    assert new.bytes_per_block == 21 * page and new.num_gpu_blocks == 20 * GIB // (21 * page) == 7_801
    # SlidingWindowSpec.max_memory_usage_bytes: cdiv(window - 1 + max_num_batched_tokens (8192 on an H100), 16) + 1
    sliding = -(-(4096 - 1 + 8192) // 16) + 1
    assert sliding == 769 and new.blocks_per_request == 2048 + 769
    assert old.max_concurrency == 3_900 / 2048 and new.max_concurrency == 7_801 / (2048 + 769)


def test_p2p_nccl_connector_until_0_23():
    p2p = "--kv-transfer-config '" + json.dumps({"kv_connector": "P2pNcclConnector", "kv_role": "kv_producer"}) + "'"
    r = est("llama-3.1-8b", "0.23.0", vllm_args=p2p)
    # kv_buffer_size 1e9 on the GPU outside the budget; 32 GiB pinned host pool (a power of two already)
    assert r.features.kv_transfer.gpu_runtime_bytes == 10**9 and r.features.kv_transfer.host_bytes_per_gpu == 32 * GIB
    with pytest.raises(InputError, match="0.24.0 has no KV connector 'P2pNcclConnector'"):
        est("llama-3.1-8b", "0.24.0", vllm_args=p2p)


def test_context_parallel_shards_dcp_x_pcp_until_0_25_dcp_from_0_26():
    """DeepSeek-V3 at TP 8 with DCP 2 and PCP 2 (16 GPUs; the MLA latents split along the sequence): 0.12-0.25 size
    a request by cdiv(M, DCP x PCP) (v1/kv_cache_interface.py), 0.26 by cdiv(M, DCP)."""
    args = "--decode-context-parallel-size 2 --prefill-context-parallel-size 2"
    old = est("deepseek-v3", "0.25.1", gpu="h200", tp=8, seq="32768", vllm_args=args, kv_cache_memory="20GiB")
    new = est("deepseek-v3", "0.26.0", gpu="h200", tp=8, seq="32768", vllm_args=args, kv_cache_memory="20GiB")
    assert old.bytes_per_block == new.bytes_per_block == 61 * 16 * (512 + 64) * 2 == 1_124_352
    assert old.blocks_per_request == 32768 // 4 // 16 == 512
    assert new.blocks_per_request == 32768 // 2 // 16 == 1024
    assert old.num_gpu_blocks == new.num_gpu_blocks == 20 * GIB // 1_124_352 == 19_099
    assert old.max_concurrency == 19_099 / 512 and new.max_concurrency == 19_099 / 1024


def test_dcp_on_gqa_needs_0_12():
    with pytest.raises(UnsupportedError, match="MLA backends"):
        est("llama-3.1-8b", "0.11.0", gpu="h200", tp=16, vllm_args="--decode-context-parallel-size 2")
    assert est("llama-3.1-8b", "0.12.0", gpu="h200", tp=16,
               vllm_args="--decode-context-parallel-size 2").blocks_per_request == 8192 // 2 // 16


def test_skip_layers_unified_until_0_24_padded_from_0_25():
    # 30 fp8 layers + layers 0 and 31 in bf16, 16-token blocks of 8 KV heads x 128 x (K, V)
    r = est("llama-3.1-8b", "0.24.0", kv_dtype="fp8", vllm_args="--kv-cache-dtype-skip-layers 0 31")
    assert r.bytes_per_block == 30 * 16 * 8 * 256 * 1 + 2 * 16 * 8 * 256 * 2 == 1_114_112
    with pytest.raises(UnsupportedError, match=r"pads.*0\.25\.1"):
        est("llama-3.1-8b", "0.25.1", kv_dtype="fp8", vllm_args="--kv-cache-dtype-skip-layers 0 31")
    # before 0.19 the option does not exist: vLLM's own parser refuses it (kvplan/data/vllm_options/0.18.1.json)
    with pytest.raises(InputError, match="0.18.1 has no serve option"):
        est("llama-3.1-8b", "0.18.1", kv_dtype="fp8", vllm_args="--kv-cache-dtype-skip-layers 0 31")
    rules = option_rules.rules("0.18.1")
    assert not rules.has("kv_cache_dtype_skip_layers") and option_rules.rules("0.19.0").has("kv_cache_dtype_skip_layers")


def test_lmcache_offload_backend_v1_connector_until_0_23():
    args = "--kv-offloading-backend lmcache --kv-offloading-size 10"
    r = est("llama-3.1-8b", "0.23.0", tp=2, vllm_args=args)
    # LMCacheConnectorV1 with max_local_cpu_size = 10 GiB / (TP 2 x PP 1) per rank; a rank's token is 64 KiB at TP 2
    assert r.features.kv_offload.tiers[0].tokens == 5 * GIB // (256 * 65536) * 256 == 81_920
    with pytest.raises(UnsupportedError, match="LMCacheMPConnector"):
        est("llama-3.1-8b", "0.24.0", tp=2, vllm_args=args)


def test_native_kv_offload_chunks_page_aligned_from_0_27():
    from kvplan.engines.features.offload import KvOffloadOptions, native_kv_offload

    opts = KvOffloadOptions(backend="native", size_bytes=GIB)
    # a 2,999,000-byte block at world size 1: 0.26 divides the host bytes by it, 0.27 by its page-rounded size
    a26, a27 = option_rules.rules("0.26.0").kv_offload_alignment, option_rules.rules("0.27.1").kv_offload_alignment
    assert (a26, a27) == (1, 4096)
    assert -(-2_999_000 // 4096) * 4096 == 3_002_368
    old = native_kv_offload(opts, bytes_per_block=2_999_000, block_size=16, world_size=1, alignment=a26)
    new = native_kv_offload(opts, bytes_per_block=2_999_000, block_size=16, world_size=1, alignment=a27)
    assert old.tiers[0].tokens == GIB // 2_999_000 * 16 == 358 * 16
    assert new.tiers[0].tokens == GIB // 3_002_368 * 16 == 357 * 16
    with pytest.raises(UnsupportedError, match="kv_bytes_per_rank"):
        est("llama-3.1-8b", "0.13.0", vllm_args="--kv-offloading-size 10")
    # 0.14 sizes it by cpu_bytes_to_use: 10 GiB // (32 layers x 16 x 8 x 128 x 2 x 2 B) blocks of 16 tokens
    r = est("llama-3.1-8b", "0.14.1", vllm_args="--kv-offloading-size 10")
    assert r.features.kv_offload.tiers[0].tokens == 10 * GIB // 2_097_152 * 16 == 81_920


def test_eagle3_head_as_each_release_builds_it():
    """llama_eagle3.py: 0.10-0.11 build one decoder layer whatever num_hidden_layers says (0.12+ all of them); the fc
    takes 3 target hidden states until 0.21 (0.22+: num_aux_hidden_states). The published head (one layer, 3 aux
    states) is built the same everywhere; a two-layer, four-aux variant of it shows both boundaries."""
    import dataclasses

    from kvplan.engines.features import speculative
    from kvplan.engines.vllm import features as vfeat

    spec = "--speculative-config '" + json.dumps({"method": "eagle3", "model": str(EAGLE3), "num_speculative_tokens": 3}) + "'"
    req = build_request("llama-3.1-8b", batch=1, kv_dtype="auto", dtype=None, gpu="h100-sxm-80gb", gpu_mem=None, gpus=None,
                        tp=None, pp=1, seq="8192", engine_version="0.11.0", vllm_args=spec, kv_cache_memory="20GiB")
    sp = req.features.speculative
    assert (sp.head.layers, sp.head.aux_hidden_states) == (1, 3)
    wide = dataclasses.replace(sp, head=dataclasses.replace(sp.head, layers=2, aux_hidden_states=4))
    req = dataclasses.replace(req, features=dataclasses.replace(req.features, speculative=wide))
    h = sp.head.hidden_size
    page = 16 * 8 * 128 * 2 * 2  # one Llama layer's 16-token block
    for version, layers, aux in (("0.11.0", 1, 3), ("0.12.0", 2, 3), ("0.21.0", 2, 3), ("0.22.1", 2, 4)):
        r = vllm.estimate(dataclasses.replace(req, engine_version=version))
        assert r.bytes_per_block == (32 + layers) * page
        built = vfeat.speculative_as_built(req.features, releases.release(version)).head
        assert (built.layers, built.aux_hidden_states) == (layers, aux)
        w = speculative.eagle_weights(built)
        # fc [hidden, aux x hidden] is replicated: 4 aux states add one more hidden x hidden than 3
        assert w.replicated_params == layers * 2 * h + h + h * aux * h + layers * h
        assert r.features.speculative.draft_weights_per_gpu_bytes == w.bytes_per_gpu(1, 16)


RELEASE_PEER = json.loads((Path(__file__).parent / "data" / "vllm_peer" / "release_figures.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("figure", RELEASE_PEER["results"], ids=lambda f: f"{f['case']}@{f['release']}")
def test_blocks_per_request_equal_each_releases_own_code(figure):
    """vLLM's own FullAttentionSpec / MLAAttentionSpec / SlidingWindowSpec.max_memory_usage_bytes of each release
    (tests/peers/vllm_release_peer.py, recorded in tests/data/vllm_peer/release_figures.json): the blocks one
    request takes under DCP 2 x PCP 2, DCP 2, and in Gemma-2's sliding group, against kvplan on that release."""
    case = {c["name"]: c for c in RELEASE_PEER["cases"]}[figure["case"]]
    release = figure["release"]
    if case["spec"] == "mla":
        args = f"--decode-context-parallel-size {case['dcp']}" + (
            f" --prefill-context-parallel-size {case['pcp']}" if case["pcp"] > 1 else "")
        r = est("deepseek-v3", release, gpu="h200", tp=8, seq=str(case["max_model_len"]), vllm_args=args,
                kv_cache_memory="20GiB", block_size=case["block_size"])
        assert r.blocks_per_request == figure["blocks_per_request"]
    else:
        r = est("gemma-2-9b", release, seq=str(case["max_model_len"]), kv_cache_memory="20GiB")
        full = case["max_model_len"] // case["block_size"]  # the full-attention group's blocks
        assert r.blocks_per_request - full == figure["blocks_per_request"]
