"""Issue 28, second pass over SGLang 0.5.23's launch options (engines/sglang/launch_args.py): each read where SGLang
uses it and put in one class. Host-side options leave the budget and the pool as without them; options that move
GPU memory are refused by name with what they move (SGLang's default spelled out is read); options read only
under a refused gate stay behind it; all-reduce options are read on one GPU, where SGLang builds no all-reduce,
and refused on more."""

from __future__ import annotations

import pytest

from kvplan.core.errors import UnsupportedError
from kvplan.engines.sglang import engine
from kvplan.requests.build import build_request


def _est(sglang_args=None, *, tp=1, model="llama-3.1-8b", version=None):
    req = build_request(model, seq="32K", batch=1, kv_dtype="auto", dtype=None, gpu="h100-sxm-80gb", gpu_mem=None,
                        gpus=None, tp=tp, pp=1, sglang_args=sglang_args, engine_version=version)
    return engine.estimate(req)


HOST_SIDE = [
    "--asr-max-buffer-seconds 30 --asr-max-concurrent-sessions 4",
    "--constrained-json-max-whitespace-cnt 2 --enable-strict-thinking --strip-thinking-cache",
    "--warmups voice_chat --use-ray",
    "--image-processor-backend pil --disable-fast-image-processor --mm-preprocess-cache-size-mb 0",
    "--enable-dp-attention-local-control-broadcast --mooncake-ib-device mlx5_0",
    "--disable-flashinfer-autotune --flashinfer-autotune-skip-ops gemm",
    "--radix-eviction-policy lfu --prefill-max-requests 8",
    "--lora-eviction-policy fifo --max-loaded-loras 4 --lora-drain-wait-threshold 1.5 --lora-strict-loading",
    "--max-lora-chunk-size 32",
    "--hicache-storage-prefetch-retry-max-attempts 2 --hicache-storage-prefetch-retry-poll-interval 4",
    """--model-loader-extra-config '{"enable_multithread_load": true, "num_threads": 96}'""",
]


@pytest.mark.parametrize("options", HOST_SIDE)
def test_host_side_options_leave_the_pool_alone(options):
    """Read where SGLang 0.5.23 uses each (launch_args.py NO_GPU_MEMORY): the API server, the grammar compiler, the
    tokenizer's preprocessing, the scheduler's policies, host memory. The pool and the default fraction's reserve
    on an H100 are those of the plain launch: 512 + 1.5 x 8192 + 128 + 2 x 256 + 8 x 58 = 13,904 MiB."""
    plain, given = _est(), _est(options)
    assert given.max_total_num_tokens == plain.max_total_num_tokens
    assert given.reserved_mib == plain.reserved_mib == 512 + 1.5 * 8192 + 128 + 2 * 256 + 8 * 58


@pytest.mark.parametrize("version", ["0.5.10", "0.5.23"])
def test_disable_cuda_graph_padding_keeps_the_graph_reserve(version):
    """It captures every decode batch size 1 ... max_bs instead of a ladder (arg_groups/cuda_graph_hook.py
    generate_decode_cuda_graph_batch_sizes; server_args.py _generate_cuda_graph_batch_sizes in 0.5.10) with the same
    max_bs, and the default fraction reserves 2 MiB x max_bs for the decode graphs whatever the list holds
    (memory_hook.py reserve_for_graph_mb; server_args.py "self.cuda_graph_max_bs * 2"): 256 on an H100."""
    plain, given = _est(version=version), _est("--disable-cuda-graph-padding", version=version)
    assert given.reserved_mib == plain.reserved_mib and given.max_total_num_tokens == plain.max_total_num_tokens
    graphs = 8 * 58 if version == "0.5.23" else 8 * 58  # 0.5.10+: prefill graphs up to the 8,192 chunk, 58 sizes
    assert given.reserved_mib == 512 + 1.5 * 8192 + 128 + 2 * 256 + graphs


@pytest.mark.parametrize("option, what", [
    ("--attn-cp-size 2", "context parallelism"), ("--dcp-size 2", "decode context parallelism"),
    ("--moe-dp-size 2", "MoE data parallelism"), ("--enable-symm-mem", "symmetric memory"),
    ("--triton-attention-num-kv-splits 16", "split buffers"), ("--disable-chunked-prefix-cache", "prefix"),
    ("--enable-deterministic-inference", "deterministic"), ("--fp8-gemm-backend deep_gemm", "FP8 GEMM"),
    ("--mamba-radix-cache-strategy extra_buffer", "extra state buffers"), ("--kv-canary log", "canary"),
    ("--enable-watermark", "watermark"), ("--weight-cache-mode client", "IPC weight cache"),
    ("--enable-weights-cpu-backup", "CPU copy"), ("--encoder-only", "encoder-only"),
    ("--hicache-mem-layout layer_first", "transfer buffers"), ("--enable-multi-layer-eagle", "EAGLE"),
    ("--enable-fused-moe-sum-all-reduce", "fused MoE"), ("--sampling-mask-max-tokens 8192", "mask"),
])
def test_options_that_move_memory_are_refused_by_name(option, what):
    with pytest.raises(UnsupportedError) as info:
        _est(option)
    assert info.value.where.endswith(option.split()[0]) and what in info.value.what, info.value.what
    assert "not read from SGLang" not in info.value.what


def test_their_defaults_spelled_out_are_read():
    plain = _est().max_total_num_tokens
    assert _est("--attn-cp-size 1 --dcp-size 1 --moe-dp-size 1 --triton-attention-num-kv-splits 8 "
                "--fp8-gemm-backend auto --kv-canary none --weight-cache-mode off --hicache-mem-layout page_first "
                "--mamba-backend triton --sampling-mask-max-tokens 4096 --init-expert-location trivial"
                ).max_total_num_tokens == plain


@pytest.mark.parametrize("option", ["--no-enable-tp-lm-head-all-to-all", "--enable-tp-lm-head-all-to-all",
                                    "--no-mm-enable-dp-encoder", "--no-enable-fused-qk-norm-rope"])
def test_an_auto_boolean_is_refused_either_way(option):
    """Their default is None, SGLang's own pick per model and GPU (arg_groups/ hooks): --no-x is a choice too."""
    with pytest.raises(UnsupportedError) as info:
        _est(option)
    assert info.value.where.endswith(option)


def test_options_behind_a_refused_gate_are_read_alone_and_refused_with_it():
    from kvplan.engines.sglang import launch_args as la

    assert all(gate in la.NOT_MODELLED for gate, _ in la.ONLY_WITH.values())
    plain = _est().max_total_num_tokens
    assert _est("--kv-canary-sweep-interval 0 --deepep-config /c.json --eplb-rebalance-num-iterations 100 "
                "--weight-cache-timeout 60 --decoupled-spec-rank 0").max_total_num_tokens == plain
    for args, gate in (("--kv-canary raise --kv-canary-real-data all", "--kv-canary"),
                       ("--enable-eplb --eplb-rebalance-num-iterations 100", "--enable-eplb"),
                       ("--moe-a2a-backend deepep --deepep-config /c.json", "--moe-a2a-backend")):
        with pytest.raises(UnsupportedError) as info:
            _est(args)
        assert info.value.where.endswith(gate), (args, info.value.where)


@pytest.mark.parametrize("option", ["--enable-mscclpp", "--enable-torch-symm-mem", "--pre-warm-nccl",
                                    "--boundary-reduction rs"])
def test_all_reduce_options_are_read_on_one_gpu_and_refused_on_more(option):
    """SGLang builds these communicators only where the group has more than one rank (distributed/parallel_state.py
    "self.world_size > 1"; bootstrap.py pre-warms only with tp, pp or ep > 1; flashinfer_comm_fusion.py returns
    at "world_size <= 1")."""
    assert _est(option).max_total_num_tokens == _est().max_total_num_tokens
    with pytest.raises(UnsupportedError) as info:
        _est(option, tp=2)
    assert info.value.where.endswith(option.split()[0])


@pytest.mark.parametrize("option", ["--enable-flashinfer-allreduce-fusion",
                                    "--enforce-disable-flashinfer-allreduce-fusion",
                                    "--flashinfer-allreduce-fusion-backend trtllm"])
def test_flashinfer_fusion_options_are_read_on_any_number_of_gpus(option):
    """Its workspace is made after the pool is sized (0.5.23 model_executor/runner/base_runner.py _warmup, in the CUDA
    graph capture that follows init_memory_pools): the pool of the plain launch at TP 1 and TP 2
    (tests/test_sglang_after_pool.py sizes the workspace)."""
    for tp in (1, 2):
        assert _est(option, tp=tp).max_total_num_tokens == _est(tp=tp).max_total_num_tokens


def test_a_loader_config_with_keys_the_default_loader_refuses_is_not_judged():
    """SGLang 0.5.23's default loader takes enable_multithread_load and num_threads and raises on any other key
    (model_loader/loader.py _validate_default_loader_extra_config)."""
    assert _est("--model-loader-extra-config {}").max_total_num_tokens == _est().max_total_num_tokens
    with pytest.raises(UnsupportedError) as info:
        _est("""--model-loader-extra-config '{"enable_gds": true}'""")
    with pytest.raises(UnsupportedError):
        _est("--model-loader-extra-config '[1, 2]'")  # not an object: SGLang's .keys() fails
    assert info.value.where.endswith("--model-loader-extra-config")


def test_check_reads_a_launch_with_host_side_options_as_without(cli, tmp_path):
    """The options public launches pass most among those read here (tests/data/deployments: --disable-cuda-graph-
    padding, --model-loader-extra-config with threads): the same verdict and figures as without them."""
    import json

    launch = ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --context-length 8192 "
              "--port 30000{}\n")
    extra = """ --disable-cuda-graph-padding --model-loader-extra-config '{"enable_multithread_load": true}'"""
    script = tmp_path / "serve.sh"
    outs = []
    for more in ("", extra):
        script.write_text("#!/bin/sh\n" + launch.format(more), encoding="utf-8")
        code, out, err = cli("check", str(script), "--gpu", "h100", "--json")
        assert code in (0, 1), out + err
        outs.append((code, json.dumps(json.loads(out), sort_keys=True).replace(json.dumps(extra)[1:-1], "")))
    assert outs[0] == outs[1]
