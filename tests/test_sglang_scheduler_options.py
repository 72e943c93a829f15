"""Issue 28: SGLang's scheduler options that users launch with most (ranked by the public deployments, start-up logs
and launch scripts kvplan's data and the code search hold): --disable-radix-cache, --disable-overlap-schedule,
--enable-mixed-chunk and --max-prefill-tokens. Read from SGLang's source on each release line kvplan models
(engines/sglang/features.py SCHEDULER_OPTIONS, launch_args.py unmodelled): they leave a full-attention model's
budget and pool alone, and are refused where they move a hybrid pool or the default fraction's reserve."""

from __future__ import annotations

import pytest

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.engines.sglang import engine
from kvplan.requests.build import build_request

SCHEDULER = "--disable-radix-cache --disable-overlap-schedule --enable-mixed-chunk"


def _est(model="llama-3.1-8b", *, sglang_args=None, gpu="h100-sxm-80gb", version=None):
    req = build_request(model, seq="32K", batch=1, kv_dtype="auto", dtype=None, gpu=gpu, gpu_mem=None, gpus=None, tp=1,
                        pp=1, sglang_args=sglang_args, engine_version=version)
    return engine.estimate(req)


@pytest.mark.parametrize("version", ["0.4.3.post4", "0.5.3", "0.5.23"])
def test_scheduler_options_leave_a_full_attention_pool_alone(version):
    """None of them is read by the pool sizing of a full-attention model (model_runner.py init_memory_pool up to
    0.5.15, pool_configurator.py DefaultPoolConfigurator from 0.5.16) nor by the default fraction's reserve, which on
    0.5.23 for an H100 (81,559 MiB, chunk 8192, decode graphs to bs 512... capped at 256 rows below 92,160 MiB)
    is 512 + 1.5 x 8192 + 1/8 x 1024 + 2 x 256 + 8 x 58 prefill graph sizes = 13,904 MiB with or without them."""
    plain, opts = _est(version=version), _est(sglang_args=SCHEDULER, version=version)
    assert opts.max_total_num_tokens == plain.max_total_num_tokens and opts.available_kv_bytes == plain.available_kv_bytes
    assert opts.max_running_requests == plain.max_running_requests and opts.fits == plain.fits
    assert opts.reserved_mib == plain.reserved_mib
    if version == "0.5.23":
        assert opts.reserved_mib == 512 + 1.5 * 8192 + 128 + 2 * 256 + 8 * 58 == 13904


@pytest.mark.parametrize("model,flag,kind", [
    ("qwen3-next-80b-a3b", "--disable-radix-cache", "state"),  # _calculate_mamba_ratio: 3 requests a slot -> 1
    ("gemma-3-12b", "--disable-radix-cache", "sliding-window"),  # SWARequestCapPoolConfigurator
    ("nemotron-h-56b", "--disable-overlap-schedule", "state"),  # get_mamba_tracking_slots(overlap=...)
])
def test_refused_where_they_split_a_hybrid_pool(model, flag, kind):
    with pytest.raises(UnsupportedError) as info:
        _est(model, sglang_args=flag, gpu="h200-141gb")
    assert kind in info.value.what and info.value.where.endswith(flag)


def test_mixed_chunk_on_a_hybrid_is_read_not_refused():
    """Mixed chunked prefill changes what a prefill batch holds at run time, not the hybrid pool's split."""
    assert _est("gemma-3-12b", sglang_args="--enable-mixed-chunk", gpu="h200-141gb").max_total_num_tokens == \
        _est("gemma-3-12b", gpu="h200-141gb").max_total_num_tokens


def test_sglangs_own_refusal_and_the_draft_without_overlap():
    with pytest.raises(InputError, match="mutually exclusive"):
        _est(sglang_args="--disable-radix-cache --enable-hierarchical-cache")
    with pytest.raises(UnsupportedError, match="spec-v1"):
        _est(sglang_args="--disable-overlap-schedule --speculative-algorithm NEXTN", model="deepseek-v3")


def test_max_prefill_tokens_moves_the_reserve_only_with_chunked_prefill_off():
    """0.5.3+: with chunked prefill off the default fraction's activation reserve is 1.5 x max(max_prefill_tokens,
    2048) MiB (arg_groups/memory_hook.py handle_gpu_memory_settings; server_args.py _handle_gpu_memory_settings on
    0.5.3-0.5.16) and the prefill graphs, sized up to the chunk (-1), capture nothing; with it on the reserve reads
    the chunk only: 13,904 MiB on an H100 whatever --max-prefill-tokens says."""
    assert _est(sglang_args="--max-prefill-tokens 65536").reserved_mib == 13904
    # H100 (81,559 MiB) on 0.5.23: 512 + 1.5 x 32,768 + 1/8 x 1024 + 2 x 256 decode graphs + 0 prefill graphs
    off = _est(sglang_args="--chunked-prefill-size -1 --max-prefill-tokens 32768")
    assert off.reserved_mib == 512 + 1.5 * 32768 + 128 + 512 == 50304
    assert off.mem_fraction_static == "0.383"  # round((81,559 - 50,304) / 81,559, 3) = round(0.38322, 3)
    # at the default 16,384: 24,576 MiB of activation reserve where a chunk of 8,192 reserves 12,288
    default = _est(sglang_args="--chunked-prefill-size -1")
    assert default.reserved_mib == 512 + 1.5 * 16384 + 128 + 512 == 25728
    assert default.mem_fraction_static == "0.685"  # round((81,559 - 25,728) / 81,559, 3) = round(0.68455, 3)
    assert default.chunked_prefill_size == -1  # as SGLang logs it
    # a small budget is floored at 2,048 tokens, then the whole reserve at 10 GiB on a GPU over 60 GiB
    assert _est(sglang_args="--chunked-prefill-size -1 --max-prefill-tokens 1024").reserved_mib == 10240
    # 0.5.3 and 0.5.10 read it the same way (server_args.py: "reserved_mem += max(self.max_prefill_tokens, 2048) *
    # 1.5"); 0.5.3 captures no prefill graphs by default, 0.5.10 none up to a chunk of -1
    for version in ("0.5.3", "0.5.10"):
        assert _est(sglang_args="--chunked-prefill-size -1 --max-prefill-tokens 32768",
                    version=version).reserved_mib == 512 + 1.5 * 32768 + 128 + 2 * 256 == 50304
    # a given fraction is kept as given
    given = _est(sglang_args="--chunked-prefill-size -1 --max-prefill-tokens 65536 --mem-fraction-static 0.85")
    assert given.mem_fraction_static == "0.85"
    req = build_request("llama-3.1-8b", seq="32K", batch=1, kv_dtype="auto", dtype=None, gpu="h100-sxm-80gb",
                        gpu_mem=None, gpus=None, tp=1, pp=1, gpu_util="0.85", sglang_args="--chunked-prefill-size -1")
    assert engine.estimate(req).mem_fraction_static == "0.85"


def test_max_prefill_tokens_on_a_release_before_the_reserve_formula_leaves_the_fraction_alone():
    """0.4.3.post4's fraction is a table by TP size (server_args.py __post_init__): no prefill size in it."""
    plain = _est(version="0.4.3.post4")
    off = _est(sglang_args="--chunked-prefill-size -1 --max-prefill-tokens 65536", version="0.4.3.post4")
    assert off.mem_fraction_static == plain.mem_fraction_static
    assert off.max_total_num_tokens == plain.max_total_num_tokens


def test_check_reads_a_launch_with_them_as_without(cli, tmp_path):
    import json

    launch = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 1 --context-length 8192"
    script = tmp_path / "serve.sh"
    outs = []
    for extra in ("", " --disable-radix-cache --enable-mixed-chunk --num-continuous-decode-steps 4"):
        script.write_text(launch + extra + "\n", encoding="utf-8")
        code, out, err = cli("check", str(script), "--gpu", "h100", "--json")
        assert code in (0, 1), out + err
        outs.append((code, json.loads(out)))
    extra = " --disable-radix-cache --enable-mixed-chunk --num-continuous-decode-steps 4"

    def strip(doc):
        return json.dumps(doc, sort_keys=True).replace(extra, "")

    assert outs[0][0] == outs[1][0] and strip(outs[0][1]) == strip(outs[1][1])


def test_all_reduce_options_on_one_gpu_are_read_and_refused_on_more():
    """On one GPU SGLang creates no all-reduce (distributed/parallel_state.py GroupCoordinator: custom all-reduce only
    when world_size > 1), so --disable-custom-all-reduce, --enable-p2p-check and --enable-nccl-nvls leave the pool
    as without them; across GPUs they move buffers inside the measured distributed-init constant: refused by name."""
    opts = "--disable-custom-all-reduce --enable-p2p-check --enable-nccl-nvls"
    assert _est(sglang_args=opts).max_total_num_tokens == _est().max_total_num_tokens
    for args, tp in ((opts, 2), ("--tp-size 2 --disable-custom-all-reduce", None)):
        req = dict(seq="32K", batch=1, kv_dtype="auto", dtype=None, gpu="h100-sxm-80gb", gpu_mem=None, gpus=None, pp=1)
        with pytest.raises(UnsupportedError) as info:
            build_request("llama-3.1-8b", tp=tp, sglang_args=args, **req)
        assert "distributed-init" in info.value.what, info.value.what
    # --enable-p2p-check only replaces the assumed P2P by the real check (distributed/bootstrap.py): the custom
    # all-reduce can only go, so it is read at any TP
    two = dict(seq="32K", batch=1, kv_dtype="auto", dtype=None, gpu="h100-sxm-80gb", gpu_mem=None, gpus=None, pp=1, tp=2)
    assert engine.estimate(build_request("llama-3.1-8b", sglang_args="--enable-p2p-check", **two)).max_total_num_tokens \
        == engine.estimate(build_request("llama-3.1-8b", **two)).max_total_num_tokens


@pytest.mark.parametrize("option", ["--device npu", "--ep-num-redundant-experts 32", "--enable-eplb",
                                    "--language-model-only", "--enable-multimodal", "--model-impl transformers",
                                    "--moe-runner-backend deep_gemm", "--revision v2", "--mamba-ssm-dtype float32",
                                    "--decode-attention-backend trtllm_mha", "--is-embedding",
                                    "--disable-shared-experts-fusion", "--disable-hybrid-swa-memory",
                                    "--max-mamba-cache-size 64", "--model-config-parser mistral",
                                    "--expert-distribution-recorder-mode stat", "--enable-return-hidden-states",
                                    "--enable-dynamic-chunking", "--speculative-draft-load-format gguf"])
def test_options_that_move_memory_are_refused_by_name(option):
    with pytest.raises(UnsupportedError) as info:
        _est(sglang_args=option)
    assert info.value.where.endswith(option.split()[0]) and "not read from SGLang" not in info.value.what


def test_their_defaults_spelled_out_are_read():
    plain = _est().max_total_num_tokens
    assert _est(sglang_args="--device cuda --model-impl sglang --revision main --moe-runner-backend auto "
                            "--eplb-algorithm deepseek --ep-dispatch-algorithm static "
                            "--decode-attention-backend fa3 --sampling-backend pytorch --lora-backend triton"
                ).max_total_num_tokens == plain


def test_check_reads_the_all_reduce_options_by_the_launchs_own_gpus(cli, tmp_path):
    script = tmp_path / "serve.sh"
    launch = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --context-length 8192 {}\n"
    script.write_text(launch.format("--disable-custom-all-reduce"), encoding="utf-8")
    code, out, err = cli("check", str(script), "--gpu", "h100")
    assert code in (0, 1), out + err
    script.write_text(launch.format("--tp 2 --disable-custom-all-reduce"), encoding="utf-8")
    code, out, err = cli("check", str(script), "--gpu", "h100")
    assert code == 3 and "--disable-custom-all-reduce" in out + err


def test_options_read_only_under_a_refused_gate_stay_behind_it():
    """ONLY_WITH / DRAFT_ONLY: nothing on their own, because what reads them (the offloader, KTransformers, a draft
    worker, ...) runs only under another option kvplan refuses by name. Each gate must stay refused: modelling one
    means reading these too."""
    from kvplan.engines.sglang import features, launch_args as la

    assert all(gate in la.NOT_MODELLED for gate, _ in la.ONLY_WITH.values())
    assert set(la.DRAFT_ONLY.values()) <= set(features.SPEC_NOT_MODELLED)
    plain = _est().max_total_num_tokens
    assert _est(sglang_args="--kt-method AMXINT4 --offload-mode cpu --speculative-ngram-capacity 100 "
                            "--offload-group-size -1").max_total_num_tokens == plain
    for args, named in (("--kt-method AMXINT4 --kt-weight-path /w", "--kt-weight-path"),
                        ("--offload-group-size 4 --offload-mode cpu", "--offload-group-size")):
        with pytest.raises(UnsupportedError) as info:
            _est(sglang_args=args)
        assert info.value.where.endswith(named)
    with pytest.raises(UnsupportedError, match="NGRAM|n-gram"):
        _est(sglang_args="--speculative-algorithm NGRAM --speculative-ngram-capacity 100")


def test_hicache_write_policy_and_host_share_leave_both_pools_alone():
    """Llama-3.1-8B on one H100 with HiCache: the device pool is N tokens as without HiCache, the host pool 2N + 1
    (ratio 2.0, page 1) whatever the write policy or the host share the auto-sizing may fill."""
    e = _est(sglang_args="--enable-hierarchical-cache --hicache-write-policy write_back "
                         "--hicache-host-memory-fraction 0.5")
    n = _est().max_total_num_tokens
    assert e.max_total_num_tokens == n and e.features.hicache.host_tokens == 2 * n + 1


@pytest.mark.parametrize("option", ["--cuda-graph-max-bs-decode 1024", "--disable-cuda-graph", "--enable-torch-compile",
                                    "--disable-prefill-cuda-graph"])
def test_graph_options_move_the_default_fraction_in_estimate_too(option):
    """memory_hook.py reserve_for_graph_mb reads the decode graphs' max batch size (2 MiB each) and the prefill
    graphs' sizes: --cuda-graph-max-bs-decode 1024 on an H100 reserves 2 x (1024 - 512) = 1,024 MiB more than the
    default, a pool 1 GiB smaller than kvplan's default reserve gives. Refused unless the fraction is given (as
    check refused it), then read."""
    with pytest.raises(UnsupportedError) as info:
        _est(sglang_args=option)
    assert info.value.where.endswith(option.split()[0]) and "--mem-fraction-static" in info.value.what
    assert _est(sglang_args=option + " --mem-fraction-static 0.85").mem_fraction_static == "0.85"
