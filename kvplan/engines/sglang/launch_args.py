"""`python -m sglang.launch_server` (and `sglang serve`) arguments read the way SGLang 0.5.23 reads them.

SGLang builds its parser from the ServerArgs dataclass (srt/server_args.py ServerArgs.add_cli_args, with the
fields of srt/arg_groups/fields/); the table below is that parser's option list, dumped from SGLang 0.5.23's own
parser object by scripts/dump_sglang_options.py (every action's option strings, kind and choices). An option
SGLang accepts is accepted here; anything else is refused with a suggestion, as SGLang would refuse to start.

argparse's own rules hold, as in SGLang: `--flag=value` and `--flag value`, an unambiguous prefix of an option
(`--tp 2` for `--tp-size 2`), `--x` / `--no-x` for the boolean options. `--config FILE` is read as SGLang's
ConfigArgumentMerger reads it (srt/utils/server_args_config_parser.py): each key becomes `--key` as written,
`true` adds a store-true flag and `false` adds nothing (other booleans pass `true`/`false`), a list adds its
items, a mapping is passed as JSON; the command line wins over the file.

This module imports no yaml, typer or rich; it turns words into a LaunchArgs record. What each option does to
GPU memory (modelled, or not: cannot judge) is at the end.
"""

from __future__ import annotations

import argparse
from bisect import bisect_left
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping

from kvplan.core.errors import InputError, did_you_mean
from kvplan.engines.runtime import options as value_parsers
from kvplan.engines.runtime.options import ParseError as _ParseError, Parser as _Parser

MIRRORS = "0.5.23"

# Options (and option values) launch_server had in an older release and SGLang MIRRORS refuses, with the last release
# that took them (read from the released wheels' srt/server_args.py, `pip download --no-deps sglang==X`): a launch that
# pins no release may well run that older one, so its refusal here is no verdict on the file.
# --enable-ep-moe: in 0.5.4 (deprecated, it set ep_size = tp_size), gone in 0.5.5;
# --lora-backend flashinfer: 0.5.2 takes any backend name, 0.5.3 has LORA_BACKEND_CHOICES = ["triton", "csgmv"].
# The rest (issue 28): the last release whose parser has the flag, read in that wheel and in the next release's, which
# lacks it (server_args.py and arg_groups/; every release from 0.5.9 to 0.5.23 with its post releases). Launches
# copied from 2025-2026 recipes set --cuda-graph-max-bs above all.
REMOVED_OPTIONS = {
    "--enable-ep-moe": "0.5.4",
    **dict.fromkeys(("--enable-flashinfer-cutlass-moe", "--enable-beta-spec"), "0.5.4"),
    **dict.fromkeys(("--speculative-ngram-min-match-window-size", "--speculative-ngram-max-match-window-size",
                     "--speculative-ngram-branch-length", "--disaggregation-prefill-pp", "--disaggregation-decode-tp",
                     "--disaggregation-decode-dp", "--mm-per-request-timeout", "--mm-max-concurrent-calls",
                     "--disable-hicache-numa-detect"), "0.5.9"),
    **dict.fromkeys(("--enable-double-sparsity", "--ds-channel-config-path", "--ds-heavy-channel-num",
                     "--ds-heavy-token-num", "--ds-heavy-channel-type", "--ds-sparse-decode-threshold",
                     "--multi-item-scoring-delimiter"), "0.5.10.post1"),
    **dict.fromkeys(("--enable-nan-detection", "--record-nolora-graph"), "0.5.12.post1"),
    **dict.fromkeys(("--enable-piecewise-cuda-graph", "--torchao-config", "--keep-mm-feature-on-device",
                     "--debug-tensor-dump-inject", "--hybrid-kvcache-ratio", "--custom-sigquit-handler",
                     "--elastic-ep-rejoin", "--speculative-skip-dp-mlp-sync", "--enable-deepep-waterfill",
                     "--optimistic-prefill-retries"), "0.5.13.post1"),
    **dict.fromkeys(("--cuda-graph-max-bs", "--cuda-graph-bs", "--disable-piecewise-cuda-graph",
                     "--enforce-piecewise-cuda-graph", "--piecewise-cuda-graph-max-tokens",
                     "--piecewise-cuda-graph-tokens", "--piecewise-cuda-graph-compiler", "--enable-breakable-cuda-graph",
                     "--stream-output", "--collect-tokens-histogram", "--enable-expert-distribution-metrics",
                     "--prefill-round-robin-balance", "--nsa-decode-backend", "--nsa-prefill-backend",
                     "--nsa-prefill-cp-mode", "--enable-nsa-prefill-context-parallel", "--enable-prefill-context-parallel",
                     "--prefill-cp-mode", "--dsa-prefill-cp-mode", "--enable-dsa-prefill-context-parallel",
                     "--mamba-scheduler-strategy", "--speculative-dflash-draft-window-size",
                     "--enable-gdn-replayssm-spec"), "0.5.19"),
}
REMOVED_VALUES = {("--lora-backend", "flashinfer"): "0.5.2"}


def removed_in(words: list[str]) -> tuple[str, str] | None:
    """(the option as written, the last release that took it) for the first removed option or value in `words`."""
    for i, word in enumerate(words):
        flag, eq, inline = word.partition("=")
        if flag in REMOVED_OPTIONS:
            return flag, REMOVED_OPTIONS[flag]
        value = inline if eq else (words[i + 1] if i + 1 < len(words) else None)
        if (flag, value) in REMOVED_VALUES:
            return f"{flag} {value}", REMOVED_VALUES[(flag, value)]
    return None

# `kind  flags...  [choices=a|b]  [dest=name]`, one line per option of SGLang 0.5.23's parser:
#   true: store_true          bool: --x / --no-x (BooleanOptionalAction)      str, int, float: one value
#   hint: human_readable_int (1k = 1000, 1K = 1024)                            json: a JSON value
#   list_*: one or more values (nargs +)    star_*: zero or more (nargs *)    optarg: zero or one value
_TABLE = """
    str        --model-path --model
    str        --tokenizer-path
    str        --tokenizer-mode choices=auto|slow
    str        --tokenizer-backend choices=huggingface|fastokens
    int        --tokenizer-worker-num
    int        --detokenizer-worker-num
    true       --skip-tokenizer-init
    str        --load-format choices=auto|pt|safetensors|instanttensor|npcache|dummy|sharded_state|presharded|gguf|expert_pack|bitsandbytes|mistral|layered|flash_rl|remote|remote_instance|fastsafetensors|private|runai_streamer
    str        --model-loader-extra-config
    true       --trust-remote-code
    hint       --context-length
    true       --is-embedding
    true       --enable-multimodal
    str        --revision
    str        --model-impl
    str        --model-config-parser
    str        --json-model-override-args
    str        --dtype choices=auto|half|float16|bfloat16|float|float32
    str        --quantization choices=awq|fp8|mxfp8|gptq|gptq_marlin|awq_marlin|bitsandbytes|gguf|modelopt|modelopt_fp8|modelopt_fp4|nvfp4_online|modelopt_mixed|petit_nvfp4|w8a8_int8|w8a8_fp8|moe_wna16|w4afp8|mxfp4|auto-round|auto-round-int8|compressed-tensors|modelslim|mxfp_w4a8|quark|quark_int4fp8_moe|quark_mxfp4|mlx_q4|mlx_q8|unquant|humming
    str        --quantization-param-path
    str        --kv-cache-dtype choices=auto|fp8_e5m2|fp8_e4m3|mxfp8|bf16|bfloat16|nvfp4|fp4_mx_block16
    true       --enable-fp32-lm-head
    str        --modelopt-quant
    str        --modelopt-checkpoint-restore-path
    str        --modelopt-checkpoint-save-path
    str        --modelopt-export-path
    true       --quantize-and-serve
    str        --rl-quant-profile
    bool       --enable-tf32-matmul --no-enable-tf32-matmul
    float      --mem-fraction-static
    int        --max-running-requests
    int        --max-queued-requests
    hint       --max-total-tokens
    int        --chunked-prefill-size
    int        --prefill-decode-interval
    true       --enable-dynamic-chunking
    hint       --max-prefill-tokens
    int        --prefill-max-requests
    str        --schedule-policy choices=lpm|random|fcfs|dfs-weight|lof|priority|routing-key|hrrn|shortest-prefill-first
    true       --enable-priority-scheduling
    true       --disable-priority-preemption
    int        --default-priority-value
    true       --abort-on-priority-when-disabled
    true       --schedule-low-priority-values-first
    int        --priority-scheduling-preemption-threshold
    str        --retraction-policy choices=length|priority
    float      --schedule-conservativeness
    int        --page-size
    int        --c128-page-size
    float      --swa-full-tokens-ratio
    true       --disable-hybrid-swa-memory
    str        --radix-eviction-policy choices=lru|lfu|slru|priority|tlru
    json       --radix-eviction-policy-config
    true       --prefill-only-disable-kv-cache
    true       --disable-radix-cache
    true       --enable-page-major-kv-layout
    true       --enable-unified-memory
    true       --disable-chunked-prefix-cache
    true       --disable-overlap-schedule
    int        --num-continuous-decode-steps
    int        --scheduler-recv-interval
    true       --enable-mixed-chunk
    int        --nccl-port
    int        --dist-timeout
    str        --dist-init-addr --nccl-init-addr
    int        --gated-launch-port
    int        --nnodes
    int        --node-rank
    int        --tp-size --tensor-parallel-size
    int        --dcp-size --decode-context-parallel-size
    int        --pp-size --pipeline-parallel-size
    int        --pp-max-micro-batch-size
    int        --pp-async-batch-depth
    int        --dp-size --data-parallel-size
    int        --attn-dp-size --attention-data-parallel-size
    str        --load-balance-method choices=auto|round_robin|follow_bootstrap_room|total_requests|total_tokens
    int        --attn-cp-size --attention-context-parallel-size
    int        --moe-dp-size --moe-data-parallel-size
    int        --dwdp-size
    str        --dcp-comm-backend choices=ag_rs|a2a|fi_a2a
    bool       --dcp-replicate-q-proj --no-dcp-replicate-q-proj
    true       --enable-prefill-cp
    str        --cp-strategy choices=zigzag|interleave
    true       --enable-dsa-cache-layer-split
    true       --enable-cp-decode-attn-tp
    true       --enable-kv-cache-sharding
    true       --enable-dp-attention-local-control-broadcast
    true       --enable-dp-lm-head
    bool       --enable-tp-lm-head-all-to-all --no-enable-tp-lm-head-all-to-all
    true       --enable-attn-tp-input-scattered
    true       --enable-shared-experts-attn-tp
    int        --shared-experts-tp-size
    true       --enable-dense-mlp-attn-tp
    true       --enable-layernorm-sp
    true       --disable-attn-tp-gather
    true       --enable-p2p-check
    str        --device
    int        --base-gpu-id
    int        --gpu-id-step
    int        --random-seed
    true       --mlx-enable-sampling
    float      --watchdog-timeout
    float      --soft-watchdog-timeout
    true       --sleep-on-idle
    true       --use-ray
    list_int   --numa-node
    list_int   --gc-threshold
    str        --host
    int        --port
    str        --fastapi-root-path
    true       --smg-grpc-mode
    true       --grpc-mode
    int        --grpc-port
    str        --sidecar
    json       --sidecar-args
    true       --skip-server-warmup
    str        --warmups
    true       --enable-http2
    int        --http2-max-concurrent-streams
    int        --http2-initial-connection-window-size
    str        --ssl-keyfile
    str        --ssl-certfile
    str        --ssl-ca-certs
    str        --ssl-keyfile-password
    true       --enable-ssl-refresh
    str        --api-key
    str        --admin-api-key
    str        --served-model-name
    str        --weight-version
    str        --chat-template
    true       --trust-request-chat-template
    str        --hf-chat-template-name
    str        --completion-template
    str        --file-storage-path
    true       --enable-cache-report
    true       --return-input-ids
    true       --return-output-ids
    json       --default-chat-template-kwargs
    true       --strip-thinking-cache
    true       --enable-strict-thinking
    str        --tool-server
    str        --sampling-defaults choices=openai|model
    int        --asr-max-buffer-seconds
    int        --asr-max-concurrent-sessions
    json       --preferred-sampling-params
    true       --allow-auto-truncate
    int        --stream-interval
    int        --batch-notify-size
    true       --stream-response-default-include-usage
    true       --incremental-streaming-output
    true       --enable-streaming-session
    true       --enable-session-radix-cache
    str        --log-level
    str        --log-level-http
    true       --log-requests
    int        --log-requests-level choices=0|1|2|3
    str        --log-requests-format choices=text|json
    list_str   --log-requests-target
    star_str   --uvicorn-access-log-exclude-prefixes
    str        --crash-dump-folder
    true       --show-time-cost
    true       --enable-metrics
    int        --smg-http-sidecar-port --grpc-http-sidecar-port
    true       --enable-mfu-metrics
    true       --enable-metrics-for-all-schedulers
    int        --load-snapshot-publish-interval
    str        --tokenizer-metrics-custom-labels-header
    list_str   --tokenizer-metrics-allowed-custom-labels
    json       --extra-metric-labels
    list_float --bucket-time-to-first-token
    list_float --bucket-inter-token-latency
    list_float --bucket-e2e-request-latency
    list_str   --prompt-tokens-buckets
    list_str   --generation-tokens-buckets
    float      --gc-warning-threshold-secs
    int        --decode-log-interval
    true       --enable-request-time-stats-logging
    str        --kv-events-config
    str        --load-publish-endpoint
    true       --enable-forward-pass-metrics
    str        --forward-pass-metrics-worker-id
    str        --forward-pass-metrics-ipc-name
    true       --enable-trace
    str        --trace-modules
    str        --otlp-traces-endpoint
    true       --export-metrics-to-file
    str        --export-metrics-to-file-dir
    str        --constrained-json-whitespace-pattern
    true       --constrained-json-disable-any-whitespace
    int        --constrained-json-max-whitespace-cnt
    str        --attention-backend choices=triton|torch_native|flex_attention|dsa|nsa|qsa|dsv4|compressed|fa3|fa4|flashinfer|llada2_cfg_flashinfer|flashmla|trtllm_mla|cutedsl_mla|tokenspeed_mla|trtllm_mha|hpc_ops|minicpm_flashattn|minicpm_flashinfer|aiter|wave|intel_amx|ascend|intel_xpu
    str        --decode-attention-backend choices=triton|torch_native|flex_attention|dsa|nsa|qsa|dsv4|compressed|fa3|fa4|flashinfer|llada2_cfg_flashinfer|flashmla|trtllm_mla|cutedsl_mla|tokenspeed_mla|trtllm_mha|hpc_ops|minicpm_flashattn|minicpm_flashinfer|aiter|wave|intel_amx|ascend|intel_xpu
    true       --enable-lean-attention
    str        --prefill-attention-backend choices=triton|torch_native|flex_attention|dsa|nsa|qsa|dsv4|compressed|fa3|fa4|flashinfer|llada2_cfg_flashinfer|flashmla|trtllm_mla|cutedsl_mla|tokenspeed_mla|trtllm_mha|hpc_ops|minicpm_flashattn|minicpm_flashinfer|aiter|wave|intel_amx|ascend|intel_xpu
    str        --grammar-backend choices=xgrammar|outlines|llguidance|none
    str        --radix-cache-backend
    str        --mm-attention-backend choices=sdpa|fa3|fa4|triton_attn|ascend_attn|aiter_attn|flashinfer_cudnn|amx_attn|xpu_attn
    str        --fp8-gemm-backend choices=auto|deep_gemm|flashinfer_trtllm|flashinfer_cutlass|flashinfer_deepgemm|flashinfer_cutedsl|cutlass|triton|aiter dest=fp8_gemm_runner_backend
    str        --fp4-gemm-backend choices=auto|flashinfer_cudnn|flashinfer_cutedsl|flashinfer_cutlass|flashinfer_trtllm|marlin dest=fp4_gemm_runner_backend
    str        --bf16-gemm-backend choices=auto|cutedsl|gemv|torch
    str        --dsa-prefill-backend choices=flashmla_sparse|flashmla_sparse_q8|flashmla_kv|flashmla_auto|flashinfer_sparse_mla|triton_sparse_mla|fa3|tilelang|triton|aiter|trtllm|intel_xpu
    str        --dsv4-prefill-backend choices=auto|flashmla_sparse|flashmla_sparse_q8
    str        --dsa-decode-backend choices=flashmla_sparse|flashmla_sparse_q8|flashmla_kv|flashmla_auto|flashinfer_sparse_mla|fa3|tilelang|triton|aiter|trtllm|intel_xpu
    str        --dsa-paged-mqa-logits-backend choices=auto|deepgemm|cutedsl|aiter
    str        --dsa-topk-backend choices=sgl-kernel|torch|flashinfer
    true       --disable-flashinfer-autotune
    list_str   --flashinfer-autotune-skip-ops
    str        --mamba-backend choices=triton|flashinfer
    str        --cuda-graph-config
    str        --cuda-graph-backend-decode choices=full|breakable|disabled
    str        --cuda-graph-backend-prefill choices=full|breakable|disabled
    int        --cuda-graph-max-bs-decode
    int        --cuda-graph-max-bs-prefill
    list_int   --cuda-graph-bs-decode
    list_int   --cuda-graph-bs-prefill
    hint       --cuda-graph-prefill-max-context --context-bucket
    true       --disable-prefill-cuda-graph
    true       --disable-decode-cuda-graph
    true       --disable-cuda-graph-padding
    true       --enable-profile-cuda-graph
    true       --enable-cudagraph-gc
    true       --debug-cuda-graph
    true       --enable-layerwise-nvtx-marker
    true       --enable-nccl-nvls
    true       --enable-symm-mem
    true       --triton-attention-reduce-in-fp32
    int        --triton-attention-num-kv-splits
    int        --triton-attention-split-tile-size
    true       --flashinfer-mla-disable-ragged
    bool       --enable-fused-qk-norm-rope --no-enable-fused-qk-norm-rope
    true       --enable-precise-embedding-interpolation
    true       --enable-fused-moe-sum-all-reduce
    true       --enable-deepseek-v4-fp4-indexer
    true       --disable-custom-all-reduce
    true       --enable-mscclpp
    true       --enable-torch-symm-mem
    true       --enable-scattered-sconv
    true       --pre-warm-nccl
    str        --boundary-reduction choices=auto|ar|rs|rsv|rs+rsv
    true       --enable-quant-communications
    true       --enforce-disable-flashinfer-allreduce-fusion
    str        --flashinfer-allreduce-fusion-backend choices=auto|trtllm|mnnvl|cutedsl
    true       --enable-aiter-allreduce-fusion
    true       --enable-torch-compile
    true       --enable-torch-compile-debug-mode
    int        --torch-compile-max-bs
    str        --speculative-algorithm
    str        --uno-lora-path
    str        --speculative-draft-model-path --speculative-draft-model
    str        --speculative-draft-model-revision
    str        --speculative-draft-load-format choices=auto|pt|safetensors|instanttensor|npcache|dummy|sharded_state|presharded|gguf|expert_pack|bitsandbytes|mistral|layered|flash_rl|remote|remote_instance|fastsafetensors|private|runai_streamer
    int        --speculative-num-steps
    int        --speculative-eagle-topk
    int        --speculative-num-draft-tokens
    int        --speculative-dflash-block-size
    int        --speculative-dspark-block-size
    str        --speculative-dspark-sps-table-path
    str        --speculative-dspark-confidence-sts-path
    true       --speculative-dspark-align-verify-tokens-to-graph-tier
    float      --speculative-accept-threshold-single
    float      --speculative-accept-threshold-acc
    true       --speculative-use-rejection-sampling
    str        --speculative-token-map
    str        --speculative-attention-mode choices=prefill|decode
    str        --speculative-draft-attention-backend
    str        --speculative-dsa-topk-backend choices=sgl-kernel|torch|flashinfer
    str        --speculative-draft-kv-cache-dtype choices=auto|fp8_e5m2|fp8_e4m3|bf16|bfloat16
    int        --speculative-draft-window-size
    str        --speculative-moe-runner-backend choices=auto|deep_gemm|triton|triton_kernel|flashinfer_trtllm|experimental_sgl_trtllm|flashinfer_trtllm_routed|flashinfer_cutlass|flashinfer_mxfp4|flashinfer_cutedsl|flashinfer_megamoe|cutlass|aiter|marlin|humming|experimental_sgl_marlin|lora_cutedsl|lora_triton|lora_marlin|hpc_ops|megamoe|intel_xpu
    str        --speculative-moe-a2a-backend choices=none|deepep|mooncake|nixl|mori|ascend_fuseep|flashinfer|megamoe|deepep_v2|pplx|ascend_tp
    bool       --speculative-enable-w4a4-mxfp4-megamoe --no-speculative-enable-w4a4-mxfp4-megamoe
    str        --speculative-draft-model-quantization choices=awq|fp8|mxfp8|gptq|gptq_marlin|awq_marlin|bitsandbytes|gguf|modelopt|modelopt_fp8|modelopt_fp4|nvfp4_online|modelopt_mixed|petit_nvfp4|w8a8_int8|w8a8_fp8|moe_wna16|w4afp8|mxfp4|auto-round|auto-round-int8|compressed-tensors|modelslim|mxfp_w4a8|quark|quark_int4fp8_moe|quark_mxfp4|mlx_q4|mlx_q8|unquant|humming
    true       --enable-multi-layer-eagle
    true       --speculative-adaptive
    str        --speculative-adaptive-config
    str        --decoupled-spec-bind-endpoint
    json       --decoupled-spec-connect-endpoints
    int        --decoupled-spec-rank
    str        --decoupled-spec-role choices=null|verifier|drafter
    str        --spec-trace-dir
    int        --speculative-ngram-min-bfs-breadth
    int        --speculative-ngram-max-bfs-breadth
    str        --speculative-ngram-match-type choices=BFS|PROB
    int        --speculative-ngram-max-trie-depth
    int        --speculative-ngram-capacity
    str        --speculative-ngram-external-corpus-path
    int        --speculative-ngram-external-sam-budget
    int        --speculative-ngram-external-corpus-max-tokens
    int        --ep-size --expert-parallel-size --ep
    str        --moe-a2a-backend choices=none|deepep|mooncake|nixl|mori|ascend_fuseep|flashinfer|megamoe|deepep_v2|pplx|ascend_tp|flashinfer_megamoe
    true       --enable-w4a4-mxfp4-megamoe
    str        --deepep-v2-mode choices=direct|hybrid
    str        --moe-runner-backend choices=auto|deep_gemm|triton|triton_kernel|flashinfer_trtllm|experimental_sgl_trtllm|flashinfer_trtllm_routed|flashinfer_cutlass|flashinfer_mxfp4|flashinfer_cutedsl|flashinfer_megamoe|cutlass|aiter|marlin|humming|experimental_sgl_marlin|lora_cutedsl|lora_triton|lora_marlin|hpc_ops|megamoe|intel_xpu
    str        --flashinfer-mxfp4-moe-precision choices=default|bf16|fp8
    str        --deepep-mode choices=auto|normal|low_latency
    int        --fuseep-mode choices=1|2
    str        --deepep-dispatcher-output-dtype choices=auto|bf16|fp8|int8|nvfp4
    int        --ep-num-redundant-experts
    str        --ep-dispatch-algorithm choices=static|dynamic|fake|lp
    str        --init-expert-location
    true       --enable-eplb
    str        --eplb-algorithm
    int        --eplb-rebalance-num-iterations
    int        --eplb-rebalance-layers-per-chunk
    float      --eplb-min-rebalancing-utilization-threshold
    str        --expert-distribution-recorder-mode choices=stat|stat_approx|per_pass|per_token
    int        --expert-distribution-recorder-buffer-size
    str        --expert-balancedness-report-mode choices=off|server_log|prometheus|both
    str        --deepep-config
    int        --moe-dense-tp-size
    str        --elastic-ep-backend choices=none|mooncake|nixl
    true       --enable-elastic-expert-backup
    str        --mooncake-ib-device
    true       --enable-waterfill
    str        --elastic-ep-join-mode choices=scale|recover dest=ep_join_mode
    int        --elastic-ep-join-rank-offset dest=ep_join_rank_offset
    int        --elastic-ep-initial-size
    int        --max-ep-size
    float      --elastic-ep-scale-timeout
    true       --disable-flashinfer-cutlass-moe-fp4-allgather
    true       --disable-shared-experts-fusion
    true       --enforce-shared-experts-fusion
    int        --max-mamba-cache-size
    str        --mamba-ssm-dtype choices=float32|bfloat16|float16
    int        --mamba-max-states-per-path
    true       --enable-mamba-cache-stochastic-rounding
    int        --mamba-cache-philox-rounds
    float      --mamba-full-memory-ratio
    str        --mamba-radix-cache-strategy choices=auto|no_buffer|extra_buffer|extra_buffer_lazy
    int        --mamba-track-interval
    true       --enable-int8-mamba-checkpoint
    int        --int8-mamba-ckpt-size
    str        --linear-attn-backend choices=triton|cutedsl|flashinfer|flashkda|nvidia_kda|ptx_kda|helion|intel_xpu
    str        --linear-attn-decode-backend choices=triton|cutedsl|flashinfer|flashkda|nvidia_kda|ptx_kda|helion|intel_xpu
    str        --linear-attn-prefill-backend choices=triton|cutedsl|flashinfer|flashkda|nvidia_kda|ptx_kda|helion|intel_xpu
    str        --linear-attn-verify-backend choices=triton|cutedsl|flashinfer|flashkda|nvidia_kda|ptx_kda|helion|intel_xpu|nv_cutedsl
    true       --enable-linear-replayssm
    int        --linear-replayssm-cache-len
    true       --enable-linear-replayssm-spec
    true       --enable-hierarchical-cache --enable-hicache
    str        --hicache-host-memory-mode choices=cache|buffer_only
    float      --hicache-ratio
    int        --hicache-size
    str        --hicache-write-policy choices=write_back|write_through|write_through_selective
    str        --hicache-io-backend choices=direct|kernel|kernel_ascend
    str        --hicache-mem-layout choices=layer_first|page_first|page_first_direct|page_first_kv_split|page_head
    str        --hicache-storage-backend choices=file|sim|mooncake|npu_memcache|hf3fs|nixl|aibrix|dynamic|eic|simm|mori|shm|tensorcast|seaweedfs
    str        --hicache-storage-prefetch-policy choices=best_effort|wait_complete|timeout
    str        --hicache-storage-backend-extra-config
    int        --hicache-storage-prefetch-retry-poll-interval
    int        --hicache-storage-prefetch-retry-max-attempts
    true       --enable-unified-cache-external-linker
    str        --unified-cache-external-linker-backend choices=mooncake|mori|dynamic
    true       --enable-hisparse
    str        --hisparse-config --hierarchical-sparse-attention-extra-config
    true       --enable-broadcast-mm-inputs-process
    true       --enable-prefix-mm-cache
    bool       --mm-enable-dp-encoder --no-mm-enable-dp-encoder
    json       --mm-process-config
    int        --mm-processor-worker-num
    int        --mm-io-worker-num
    list_str   --allowed-media-domains
    int        --media-url-max-file-size-mb
    int        --mm-preprocess-cache-size-mb
    true       --trust-mm-content-hashes
    json       --limit-mm-data-per-request
    true       --enable-mm-global-cache
    str        --image-processor-backend choices=auto|torchvision|pil
    str        --mm-global-cache-backend choices=mooncake
    true       --disable-fast-image-processor
    str        --mm-feature-transport choices=cpu|cuda_ipc|cuda_vmm
    true       --enable-lora
    true       --enable-lora-overlap-loading
    int        --max-lora-rank
    star_str   --lora-target-modules choices=q_proj|k_proj|v_proj|o_proj|q_a_proj|kv_a_proj_with_mqa|q_b_proj|kv_b_proj|wq_b|wk|weights_proj|gate_proj|up_proj|down_proj|qkv_proj|gate_up_proj|embed_tokens|lm_head|qkvr|wo_ud|all
    star_str   --lora-paths
    int        --max-loaded-loras
    int        --max-loras-per-batch
    str        --lora-eviction-policy choices=lru|fifo
    str        --lora-backend choices=triton|csgmv|ascend|torch_native|triton_v2
    int        --max-lora-chunk-size choices=16|32|64|128
    bool       --experts-shared-outer-loras --no-experts-shared-outer-loras
    true       --lora-use-virtual-experts
    bool       --lora-strict-loading --no-lora-strict-loading
    float      --lora-drain-wait-threshold
    true       --enable-two-batch-overlap
    true       --enable-single-batch-overlap
    float      --tbo-token-distribution-threshold
    int        --cpu-offload-gb
    int        --offload-group-size
    int        --offload-num-in-group
    int        --offload-prefetch-step
    str        --offload-mode
    true       --enable-lmcache
    str        --lmcache-config-file
    true       --enable-flexkv
    str        --flexkv-config-file
    str        --kt-weight-path
    str        --kt-method
    int        --kt-cpuinfer
    int        --kt-threadpool-count
    int        --kt-num-gpu-experts
    int        --kt-max-deferred-experts-per-token
    str        --dllm-algorithm
    str        --dllm-algorithm-config
    bool       --dllm-fdfo --no-dllm-fdfo
    str        --disaggregation-mode choices=null|prefill|decode
    str        --disaggregation-transfer-backend choices=mooncake|nixl|ascend|fake|mori|mooncake_tcp
    int        --disaggregation-bootstrap-port
    str        --disaggregation-ib-device
    true       --disaggregation-decode-enable-radix-cache
    true       --disaggregation-decode-enable-offload-kvcache
    str        --disaggregation-decode-retraction-backup choices=cpu_tensor|host_pool|none
    int        --num-reserved-decode-tokens
    int        --disaggregation-decode-extra-slots
    int        --disaggregation-decode-polling-interval
    int        --optimistic-prefill-attempts
    true       --encoder-only
    true       --language-only
    true       --language-model-only
    str        --encoder-transfer-backend choices=auto|zmq_to_scheduler|zmq_to_tokenizer|mooncake
    list_str   --encoder-urls
    int        --encoder-bootstrap-port
    list_str   --encoder-register-urls
    true       --enable-adaptive-dispatch-to-encoder
    true       --enable-pdmux
    str        --pdmux-config-path
    int        --sm-group-num
    str        --startup-weight-load-mode choices=serial|overlap
    star_str   --custom-weight-loader
    true       --weight-loader-disable-mmap
    true       --weight-loader-prefetch-checkpoints
    int        --weight-loader-prefetch-num-threads
    true       --weight-loader-drop-cache-after-load
    str        --remote-instance-weight-loader-seed-instance-ip
    int        --remote-instance-weight-loader-seed-instance-service-port
    json       --remote-instance-weight-loader-send-weights-group-ports
    str        --remote-instance-weight-loader-backend choices=transfer_engine|nccl|modelexpress
    true       --remote-instance-weight-loader-start-seed-via-transfer-engine
    int        --engine-info-bootstrap-port
    str        --modelexpress-config
    str        --download-dir
    optarg     --model-checksum
    true       --delete-ckpt-after-loading
    str        --decrypted-config-file
    str        --decrypted-draft-config-file
    true       --checkpoint-engine-wait-weights-before-ready
    true       --enable-prefill-delayer
    int        --prefill-delayer-max-delay-passes
    float      --prefill-delayer-token-usage-low-watermark
    list_float --prefill-delayer-forward-passes-buckets
    list_float --prefill-delayer-wait-seconds-buckets
    float      --prefill-delayer-queue-min-ratio
    float      --prefill-delayer-max-delay-ms
    int        --min-free-slots-delay
    true       --enable-deterministic-inference
    str        --rl-on-policy-target choices=fsdp
    str        --kv-canary choices=none|log|raise
    int        --kv-canary-sweep-interval
    true       --enable-dynamic-batch-tokenizer
    int        --dynamic-batch-tokenizer-batch-size
    float      --dynamic-batch-tokenizer-batch-timeout
    true       --enable-tokenizer-batch-encode
    true       --disable-tokenizer-batch-decode
    str        --debug-tensor-dump-output-folder
    list_int   --debug-tensor-dump-layers
    str        --debug-tensor-dump-input-file
    true       --enable-memory-saver
    true       --enable-weights-cpu-backup
    true       --enable-draft-weights-cpu-backup
    true       --enable-custom-logit-processor
    true       --enable-return-hidden-states
    str        --return-hidden-states-mode choices=last|full
    true       --enable-return-routed-experts
    true       --enable-return-indexer-topk
    int        --sampling-mask-max-tokens
    true       --disable-outlines-disk-cache
    true       --enable-mis
    str        --weight-cache-mode choices=off|daemon|client
    str        --weight-cache-socket
    int        --weight-cache-timeout
    json       --forward-hooks
    str        --msprobe-dump-config
    bool       --ple-offload-embedding --no-ple-offload-embedding
    str        --ple-offload-backend choices=pinned|file
    str        --ple-offload-dir
    true       --disaggregation-enable-kv-checksum
    true       --enable-pd-role-switch
    int        --speculative-domino-candidate-pool-size
    str        --flashinfer-a2a-dispatch-type choices=auto|bf16|nvfp4|mxfp8
    int        --cuda-graph-max-seq-len-prefill
    str        --prefill-kv-cache-dequant-dtype choices=auto|nvfp4|fp8_e4m3
    str        --dsv4-attn-backend choices=auto|flashmla|flashmla_mega|trtllm
    str        --otlp-service-name
    float      --hicache-host-memory-fraction
    true       --enable-linker-mla-dedup
    int        --swa-prefix-tails
    true       --enable-encoder-swa-bounded-replay
    bool       --enable-decoder-swa-bounded-replay --no-enable-decoder-swa-bounded-replay
    true       --enable-response-store
    float      --disaggregation-decode-host-receive-threshold
    str        --qsa-indexer-dtype choices=auto|bfloat16|fp8_e4m3
    str        --disaggregation-decode-allocation-policy choices=early|prefill_complete
    true       --speculative-use-block-verification
    int        --speculative-draft-sink-size
    true       --disable-aiter-allreduce-fusion-in-prefill
    true       --disable-aiter-allreduce-fusion-in-decode
    true       --enable-amd-monokernel
    int        --dsa-triton-union choices=0|2|4
    bool       --enable-dsa-fused-indexer --no-enable-dsa-fused-indexer
    true       --enable-watermark
    str        --watermark-config
    int        --grpc-response-timeout-secs
    true       --enable-paged-experts
    int        --paged-experts-num-resident
    true       --enable-nvidia-megakernel
    true       --enable-megamoe-for-layernorm-sp
    true       --enable-http-worker-reuseport
    int        --prefill-decode-interval-min-bs
    json       --unified-cache-external-linker-config
    true       --enable-return-aux-hidden-states
    list_int   --return-aux-hidden-state-layer-ids
    str        --sampling-backend choices=intel_xpu|pytorch|flashinfer|ascend
    str        --reasoning-parser choices=auto|apertus2509|beam|deepseek-r1|deepseek-v3|deepseek-v4|deepseek-v41|dots|glm45|ling3|hunyuan|gpt-oss|k2_horizon|kimi|kimi_k2|kimi_k3|mimo|muse|poolside_v1|qwen3|qwen3-thinking|minimax|minimax-append-think|minimax-m3|nanbeige|step3|step3p5|mistral|nemotron_3|granite_thinking_parser|interns1|gemma4|inkling|iquest_q1|cohere_command4|gigachat35|response_template
    str        --tool-call-parser choices=auto|apertus2509|beam|cohere_command4|deepseekv3|deepseekv31|deepseekv32|deepseekv4|deepseekv41|dots|glm|glm45|glm47|gpt-oss|k2_horizon|kimi_k2|kimi_k3|lfm2|ling3|llama3|mimo|minicpm5|mistral|muse|poolside_v1|pythonic|qwen|qwen25|qwen3_coder|spark25|step3|step3p5|minimax-m2|minimax-m3|nanbeige|trinity|interns1|hermes|hunyuan|gigachat3|gigachat35|gemma4|inkling|iquest_q1|response_template
    str        --kv-canary-real-data choices=none|partial|all
    str        --config
    true       --disable-cuda-graph
    true       --enable-dp-attention
    str        --monokernel-backend choices=amd dest=enable_amd_monokernel
    true       --enable-flashinfer-allreduce-fusion
"""


@dataclass(frozen=True, eq=False, repr=False)
class Option:
    """One option of launch_server's table: its argparse dest, kind, flags and choices."""

    dest: str
    kind: str
    flags: tuple[str, ...]
    choices: tuple[str, ...] | None

    @property
    def name(self) -> str:
        return self.flags[0][2:]


@lru_cache(maxsize=None)
def options() -> dict[str, Option]:
    """Every launch_server option, by its long name's dest ('mem_fraction_static'; two flags SGLang stores into
    one dest, such as --monokernel-backend, keep their own entries)."""
    out = {}
    for line in _TABLE.strip().splitlines():
        kind, *rest = line.split()
        if "=" in line:  # choices= or dest= (97 of 531 lines); the others are the kind and the flags alone
            choices = next((tuple(p.split("=", 1)[1].split("|")) for p in rest if p.startswith("choices=")), None)
            dest = next((p.split("=", 1)[1] for p in rest if p.startswith("dest=")), None)
            flags = tuple(p for p in rest if not p.startswith(("choices=", "dest=")))
        else:  # the table's parse runs on every SGLang launch read: about 0.35 ms of its 1 ms skipped
            choices = dest = None
            flags = tuple(rest)
        key = flags[0].lstrip("-").replace("-", "_")
        out[key] = Option(dest or key, kind, flags, choices)
    return out


@lru_cache(maxsize=None)
def _by_flag() -> dict[str, Option]:
    return {flag: opt for opt in options().values() for flag in opt.flags}


def human_readable_int(value: str) -> int:
    """SGLang's human_readable_int (srt/utils/common.py), the same rule as vLLM's: 1k = 1000, 1K = 1024."""
    return value_parsers.human_readable_int(value)


def _float(value: str):
    return value_parsers.exact_float(value)


def _json(value: str):
    import json  # on first use: a launch with no JSON-valued option reads none (json: about 1 ms of start-up)

    return json.loads(value)


human_readable_int.__name__ = "human_readable_int"
_float.__name__ = "float"
_json.__name__ = "JSON"
_TYPES: dict[str, Callable[[str], Any]] = {"str": str, "int": int, "float": _float, "hint": human_readable_int, "json": _json}


@lru_cache(maxsize=None)
def _spellings() -> tuple[list[str], list[str]]:
    """Every option string of the whole parser, sorted, and the options() key of each: each option's flags, and
    for a `bool` one also `--no-X` for each `--X` flag (argparse.BooleanOptionalAction adds them, argparse.py)."""
    pairs = []
    for key, opt in options().items():
        for flag in opt.flags:
            pairs.append((flag, key))
            if opt.kind == "bool" and flag.startswith("--"):
                pairs.append(("--no-" + flag[2:], key))
    pairs.sort()
    return [flag for flag, _ in pairs], [key for _, key in pairs]


def _parser_for(tokens: list[str]) -> _Parser:
    """A parser of the options `tokens` can name: for each token that starts with '-' (the only ones argparse looks
    up as options), every option with a string argparse could match it to (argparse.py _parse_optional and
    _get_option_tuples: the token itself, a string it abbreviates, before any '='; for a single dash, the short flag
    of its first two characters). argparse looks up no other option string, so it reads `tokens` with this parser
    exactly as with the whole table (the same actions, errors and abbreviation ambiguities), without building all
    531 options for every launch (about 6 ms at start-up, benchmarks/cold_start.py)."""

    strings, keys = _spellings()
    wanted = set()
    for token in tokens:
        if not token.startswith("-"):
            continue
        name = token.split("=", 1)[0]
        i = bisect_left(strings, name)
        while i < len(strings) and strings[i].startswith(name):
            wanted.add(keys[i])
            i += 1
        if not name.startswith("--"):
            i = bisect_left(strings, name[:2])
            if i < len(strings) and strings[i] == name[:2]:
                wanted.add(keys[i])
    return _parser(frozenset(wanted))


@lru_cache(maxsize=None)
def _parser(only: frozenset[str] | None = None) -> _Parser:
    """The launch_server parser of every option, or of the options() keys in `only` (_parser_for)."""
    parser = _Parser(prog="sglang.launch_server", add_help=False, argument_default=argparse.SUPPRESS, exit_on_error=False)
    for key, opt in options().items():
        if only is not None and key not in only:
            continue
        if opt.kind == "true":
            parser.add_argument(*opt.flags, dest=opt.dest, action="store_true")
            continue
        if opt.kind == "bool":
            parser.add_argument(*opt.flags, dest=opt.dest, action=argparse.BooleanOptionalAction)
            continue
        base = opt.kind.split("_", 1)[1] if opt.kind.startswith(("list_", "star_")) else opt.kind
        kwargs: dict[str, Any] = {"dest": opt.dest, "type": _TYPES.get(base, str)}
        if opt.kind.startswith("list_"):
            kwargs["nargs"] = "+"
        elif opt.kind.startswith("star_"):
            kwargs["nargs"] = "*"
        elif opt.kind == "optarg":
            kwargs.update(nargs="?", const="")
        if opt.choices is not None and base in ("str", "int"):
            kwargs["choices"] = [kwargs["type"](c) for c in opt.choices]
        parser.add_argument(*opt.flags, **kwargs)
    return parser


@dataclass(frozen=True, eq=False, repr=False)
class LaunchArgs:
    """The options a launch sets explicitly (absent ones take SGLang's defaults)."""

    values: Mapping[str, Any]
    written: Mapping[str, str]  # dest -> the flag as written
    notes: tuple[str, ...] = field(default=())

    def get(self, dest: str, default: Any = None) -> Any:
        return self.values.get(dest, default)

    def given(self, dest: str) -> bool:
        return dest in self.values


def lookup(flag: str) -> Option | None:
    """The option a flag names as argparse resolves it (exact, or a unique prefix); None when none does."""
    name = flag.split("=", 1)[0]
    index = _by_flag()
    if name in index:
        return index[name]
    if name.startswith("--"):
        starts = [f for f in index if f.startswith(name)]
        if len({index[f].dest for f in starts}) == 1:
            return index[starts[0]]
    return None


def takes_value(opt: Option) -> bool:
    return opt.kind not in ("true", "bool")



def option_info(version: str | None = None) -> Callable[[str], tuple[bool | None, bool]]:
    """flag -> (whether it takes a value, None for an option SGLang lacks; whether its value changes what kvplan
    judges), for `kvplan check` to tell which values a file leaves to the environment it can drop. The table is
    SGLang MIRRORS's whatever the release (`version` is not read)."""
    def info(flag: str) -> tuple[bool | None, bool]:
        opt = lookup(flag)
        if opt is None:
            return None, True
        # every option but those read as leaving GPU memory alone: an unclassified one is judged (cannot judge)
        return takes_value(opt), opt.dest not in NO_GPU_MEMORY
    return info

def parse_argv(tokens: list[str], *, where: str, load_config: Callable[[str], Any] | None = None) -> LaunchArgs:
    """A launch_server argument list -> LaunchArgs, refusing what SGLang would refuse."""
    tokens = list(tokens)
    written: dict[str, str] = {}
    notes: list[str] = []
    config_argv: list[str] = []
    argv: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token == "--config":
            if i >= len(tokens):
                raise InputError("--config needs a file", where=f"{where}: --config")
            path = tokens[i]
            i += 1
            if load_config is None:
                raise InputError("--config is not readable here", where=f"{where}: --config")
            config_argv = _argv_from_config(load_config(path), where=path)
            continue
        if token.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", token):
            name = token.split("=", 1)[0]
            opt = lookup(name)
            if opt is None:
                longs = sorted({o.name for o in options().values()})
                raise InputError(f"SGLang {MIRRORS} has no launch_server option {name!r}", where=f"{where}: {name}",
                                 hint=did_you_mean(name.lstrip("-"), longs) or "see `python -m sglang.launch_server --help`")
            if name not in opt.flags:
                notes.append(f"{name!r} is an abbreviation of {opt.name!r} (SGLang's parser accepts it)")
            written.setdefault(opt.dest, name)
        argv.append(token)
    try:
        namespace, extra = _parser_for(config_argv + argv).parse_known_args(config_argv + argv)
    except (_ParseError, argparse.ArgumentError) as err:
        message = str(err)
        match = re.match(r"argument ([^:]+): (.*)", message)
        key = where
        if match:
            flag = match.group(1).split("/")[0]
            opt = _by_flag().get(flag)
            key = f"{where}: {written.get(opt.dest, flag) if opt else flag}"
            message = match.group(2)
        raise InputError(f"SGLang would refuse it: {message}", where=key) from None
    if extra:
        raise InputError(f"SGLang would refuse it: unrecognized arguments: {' '.join(extra)}", where=where)
    return LaunchArgs(values=dict(vars(namespace)), written=written, notes=tuple(notes))


def _argv_from_config(data: Any, *, where: str) -> list[str]:
    if data is None:
        return []
    if not isinstance(data, Mapping):
        raise InputError("an SGLang --config file holds a mapping of option: value", where=where)
    argv: list[str] = []
    for key, value in data.items():
        flag = f"--{key}"
        opt = _by_flag().get(flag)
        if opt is None:
            raise InputError(f"SGLang {MIRRORS} has no launch_server option {key!r}", where=f"{where}: {key}")
        if isinstance(value, bool):
            if opt.kind == "true":
                if value:
                    argv.append(flag)
            else:
                argv += [flag, str(value).lower()]
        elif isinstance(value, list):
            if value:
                argv += [flag, *map(str, value)]
        elif isinstance(value, Mapping):
            import json  # on first use, as in _json

            argv += [flag, json.dumps(value)]
        else:
            argv += [flag, str(value)]
    return argv


# ------------------------------------------------------------------ what each option does to GPU memory

# Set onto kvplan's EngineRequest (engines/sglang/engine.py reads them): model, length, parallelism, the memory
# fraction, the KV dtype, the page, the running-request cap and the chunked-prefill size.
MODELLED = frozenset({
    "model_path", "dtype", "context_length", "tp_size", "pp_size", "dp_size", "mem_fraction_static", "kv_cache_dtype",
    "page_size", "max_running_requests", "chunked_prefill_size", "nnodes", "ep_size", "quantization",
})

# Options that change what SGLang puts in GPU memory in ways kvplan does not model, with SGLang 0.5.23's default:
# set to anything else, the launch cannot be judged (exit 3). --disaggregation-mode and --speculative-algorithm
# (with its draft path, steps, top-k and draft tokens) are modelled by engines/sglang/features.py, which refuses
# the algorithms and backends it does not model; so are --enable-dp-attention / --attn-dp-size (for the model
# classes it read), --enable-lora / --lora-paths (with a given rank and modules), --enable-hierarchical-cache and
# --cpu-offload-gb.
NOT_MODELLED: dict[str, tuple[Any, str]] = {
    "quantization": (None, "online or forced weight quantization changes the weight bytes by layer type"),
    "max_total_tokens": (None, "a fixed token pool instead of the memory budget"),
    "offload_group_size": (0, "layer-group weight offload (OffloaderV2: prefetched groups)"),
    "json_model_override_args": ("{}", "config.json values overridden at load time"),
    "swa_full_tokens_ratio": (None, "the sliding-window pool's share"),
    "mamba_full_memory_ratio": (None, "the Mamba state pool's share"),
    "load_format": ("auto", "a weight format kvplan does not size (bitsandbytes, gguf, ...)"),
    # which group holds which weights (models/deepseek_v2.py: the dense MLP replicated at 1, the shared experts
    # replicated under an all-to-all MoE backend; logits_processor.py: lm_head on the attention-TP group)
    "moe_dense_tp_size": (None, "the dense MLP layers' TP size"),
    "moe_a2a_backend": ("none", "an all-to-all MoE backend (replicated shared experts, its own buffers)"),
    "enable_dp_lm_head": (False, "lm_head split over the attention-TP group"),
    # read from SGLang 0.5.23 where each is used (issue 28); a value other than the default is refused by name
    "device": (None, "a device other than a CUDA or ROCm GPU (npu, xpu, hpu, cpu, mps: hardware_backend/, their own "
                     "memory accounting)"),
    "ep_num_redundant_experts": (0, "redundant expert copies: num_logical + redundant physical experts split over "
                                    "the EP ranks (eplb/expert_location.py), more expert weights a GPU"),
    "enable_eplb": (False, "EPLB's expert rebalancing (eplb/eplb_manager.py, expert_location_updater.py moves expert "
                           "weights between ranks at run time)"),
    "enable_two_batch_overlap": (False, "two-batch overlap's split batches and their CUDA graphs "
                                        "(batch_overlap/two_batch_overlap.py)"),
    "language_model_only": (False, "a VLM served without its vision encoder (models/qwen3_vl.py) and without the "
                                   "default fraction's multimodal factor (arg_groups/memory_hook.py is_vlm)"),
    "enable_multimodal": (None, "a model's vision part forced on or off (configs/model_config.py, models/mllama4.py "
                                "has_vision)"),
    "enable_memory_saver": (False, "torch_memory_saver's releasable regions for the weights and the pool "
                                   "(mem_cache/kv_cache_configurator.py enable_memory_saver)"),
    "mamba_ssm_dtype": (None, "the Mamba state's dtype (the state pool's bytes a request)"),
    "model_impl": ("auto", "the Transformers backend's modelling code (models/transformers.py), not read"),
    "moe_runner_backend": ("auto", "a MoE kernel backend other than SGLang's own pick (its weight layout and "
                                   "workspace, layers/moe/moe_runner/)"),
    "revision": (None, "a checkpoint revision other than the one kvplan reads the config.json of"),
    "speculative_draft_model_revision": (None, "a draft checkpoint revision other than the one kvplan reads"),
    "kt_weight_path": (None, "KTransformers' CPU experts (layers/moe/kt_ep_wrapper.py): experts split between the CPU "
                             "and the GPU"),
    "dllm_algorithm": (None, "a diffusion LM's block decoding (dllm/): its own blocks and attention buffers"),
    "enable_pdmux": (False, "prefill / decode multiplexing: a second attention workspace per SM group "
                            "(model_runner_components/attention_backend_setup.py)"),
    "enable_lmcache": (False, "LMCache's connector and its buffers (mem_cache/storage/lmcache/)"),
    "enable_flexkv": (False, "FlexKV's KV tiers (mem_cache/registry.py)"),
    "enable_hisparse": (False, "HiSparse's sparse KV pools (mem_cache/sparsity/, pool_configurator.py)"),
    "enable_unified_cache_external_linker": (False, "the unified cache's external linker and its pool layout "
                                                    "(mem_cache/unified_cache/, kv_cache_configurator.py)"),
    "elastic_ep_backend": (None, "elastic expert parallelism (elastic_ep/): ranks and experts that join at run time"),
    "enable_elastic_expert_backup": (False, "a backup of expert weights for elastic EP (elastic_ep/)"),
    "is_embedding": (False, "an embedding server: the model class without its lm_head, and its own defaults "
                            "(configs/embedding_model_spec.py, arg_groups/model_hook.py)"),
    "disable_shared_experts_fusion": (False, "DeepSeek-style shared experts kept apart from the fused MoE "
                                             "(models/deepseek_v2.py num_fused_shared_experts): how they split over "
                                             "the ranks"),
    "enforce_shared_experts_fusion": (False, "shared experts fused into the MoE where SGLang would not"),
    "enable_fp32_lm_head": (False, "an fp32 lm_head (model_loader/loader.py, layers/logits_processor.py)"),
    "model_config_parser": ("auto", "a config format other than the one kvplan reads (config.json)"),
    "decrypted_config_file": (None, "an encrypted checkpoint's config, which kvplan does not read"),
    "decrypted_draft_config_file": (None, "an encrypted draft checkpoint's config, which kvplan does not read"),
    "disable_hybrid_swa_memory": (False, "a sliding-window model's layers all kept in the full pool"),
    "max_mamba_cache_size": (None, "the Mamba state pool's size given instead of its ratio"),
    "swa_prefix_tails": (None, "the SWA pool sized from prefix tails (model_executor/pool_configurator.py "
                               "_resolve_swa_prefix_tails)"),
    "expert_distribution_recorder_mode": (None, "the expert distribution recorder's buffers "
                                                "(eplb/expert_distribution.py)"),
    "enable_return_hidden_states": (False, "hidden states kept for each response (model_executor/"
                                           "forward_batch_info.py, the CUDA graphs' outputs)"),
    "enable_return_routed_experts": (False, "the routed experts captured per token (state_capturer/routed_experts.py)"),
    "enable_dynamic_chunking": (False, "PP dynamic chunking: prefill buffers up to --max-prefill-tokens and 1.25 x the "
                                       "chunk (arg_groups/prefill_buffer_ceiling.py)"),
    "debug_tensor_dump_output_folder": (None, "every layer's tensors dumped (model_runner_components/"
                                              "load_model_utils.py hooks)"),
    "speculative_draft_load_format": (None, "a draft weight format kvplan does not size"),
    # issue 28, second pass: read in SGLang 0.5.23 (sglang/srt/, the file named) where each is used; refused by name,
    # SGLang's default spelled out is read
    # parallelism kvplan does not split memory by (parallel_hook.py derives each group; the named files use it)
    "attn_cp_size": (1, "attention context parallelism (layers/cp/, parallel_hook.py): the sequence split over ranks"),
    "dcp_size": (1, "decode context parallelism (the KV cache split over ranks: mem_cache/, disaggregation/common/"
                    "dcp_pack.py)"),
    "moe_dp_size": (1, "MoE data parallelism (model_executor/model_runner_components/moe_ep_setup.py): which "
                       "experts a rank holds"),
    "dwdp_size": (1, "distributed weight data parallelism (layers/moe/dwdp/weight_buffer.py): expert weights "
                     "streamed through buffers"),
    "enable_prefill_cp": (False, "prefill context parallelism (layers/cp/, cuda_graph_buffer_registry.py)"),
    "enable_kv_cache_sharding": (False, "the KV cache sharded by logical page (mem_cache/page_interleave.py, "
                                        "arg_groups/kv_shard_hook.py)"),
    "enable_dsa_cache_layer_split": (False, "the DSA cache split by layer over context-parallel ranks "
                                            "(layers/cp/utils.py, arg_groups/kv_shard_hook.py)"),
    "enable_cp_decode_attn_tp": (False, "context-parallel decode with attention TP (layers/cp/cp_decode_attn_tp.py)"),
    "enable_layernorm_sp": (False, "sequence-parallel layernorm (layers/layernorm_sp.py): activations split over "
                                   "ranks, arg_groups/layernorm_sp_hook.py resizes the prefill graphs"),
    "enable_attn_tp_input_scattered": (False, "attention inputs scattered over the TP group (layers/layer_boundary/"
                                              "layout.py)"),
    "disable_attn_tp_gather": (False, "the attention-TP gather skipped (layers/layer_boundary/layout.py): other "
                                      "activation shapes"),
    "enable_shared_experts_attn_tp": (False, "shared experts on the attention-TP group (models/kimi_k3.py)"),
    "shared_experts_tp_size": (None, "the shared experts' own TP size (distributed/parallel_state.py, "
                                     "models/kimi_k3.py)"),
    "enable_dense_mlp_attn_tp": (False, "dense MLP layers on the attention-TP group (models/kimi_k3.py)"),
    "enable_tp_lm_head_all_to_all": (None, "lm_head split with an all-to-all (layers/logits_processor.py; "
                                           "distributed/bootstrap.py warms its PyNCCL path before the memory is "
                                           "measured)"),
    "pp_max_micro_batch_size": (None, "pipeline micro-batches (managers/scheduler_components/internal_state.py): "
                                      "how many requests each stage holds"),
    "pp_async_batch_depth": (0, "batches in flight between pipeline stages (managers/scheduler_pp_mixin.py)"),
    "max_ep_size": (None, "expert parallelism sized for elastic growth (model_executor/model_runner.py, "
                          "layers/dp_attention.py)"),
    "decoupled_spec_role": ("null", "decoupled speculative decoding: the draft and the verifier on separate servers "
                                    "(server_args.py DecoupledSpecIpcConfig, arg_groups/pd_disaggregation_hook.py)"),
    # kernels and backends that bring their own weight layout, workspace or buffers
    "triton_attention_num_kv_splits": (8, "the triton decode kernel's split buffers (layers/attention/"
                                          "triton_backend.py: max_kv_splits x heads x head dim in fp32 per request, "
                                          "allocated with the backend)"),
    "triton_attention_split_tile_size": (None, "the triton decode kernel's split tiles (layers/attention/"
                                               "triton_backend.py), which size its split buffers"),
    "enable_lean_attention": (None, "lean attention in the triton backend (layers/attention/triton_backend.py): its "
                                    "own partial buffers"),
    "fp8_gemm_runner_backend": ("auto", "an FP8 GEMM kernel other than SGLang's pick (layers/quantization/"
                                        "fp8_utils.py): its weight and scale layout"),
    "fp4_gemm_runner_backend": ("auto", "an FP4 GEMM kernel other than SGLang's pick (layers/quantization/"
                                        "fp4_utils.py): its weight and scale layout"),
    "bf16_gemm_backend": ("auto", "a BF16 GEMM kernel other than SGLang's pick (layers/quantization/unquant.py)"),
    "flashinfer_mxfp4_moe_precision": ("default", "the MXFP4 MoE kernel's activation precision "
                                                  "(layers/quantization/mxfp4_flashinfer_trtllm_moe.py)"),
    "disable_flashinfer_cutlass_moe_fp4_allgather": (False, "FlashInfer's CUTLASS FP4 MoE without its all-gather "
                                                            "(layers/moe/utils.py)"),
    "enable_single_batch_overlap": (False, "single-batch overlap of MoE communication (layers/moe/utils.py, "
                                           "arg_groups/moe_hook.py)"),
    "enable_waterfill": (False, "water-filling expert balancing (layers/moe/topk.py, moe_ep_setup.py)"),
    "enable_paged_experts": (False, "experts paged in and out of the GPU (layers/moe/paged_experts/method.py)"),
    "enable_w4a4_mxfp4_megamoe": (False, "the W4A4 MXFP4 MegaMoE kernel (layers/moe/fused_moe_triton/layer.py): its "
                                         "weight layout"),
    "enable_nvidia_megakernel": (False, "a fused megakernel (kernel_plugins/nvidia/binding.py): its own buffers"),
    "enable_amd_monokernel": (False, "ROCm's monokernel (kernel_plugins/amd/binding.py): its own buffers"),
    "init_expert_location": ("trivial", "a given placement of experts on ranks (eplb/expert_location.py, "
                                        "model_loader/loader.py)"),
    "expert_balancedness_report_mode": ("off", "expert balance reports, which need the expert distribution "
                                               "recorder's buffers (runtime_context.py, eplb/expert_distribution.py)"),
    "mm_attention_backend": (None, "a vision encoder attention kernel other than SGLang's pick "
                                   "(layers/attention/vision.py): its workspace"),
    "mm_enable_dp_encoder": (None, "the vision encoder run data-parallel (models/qwen3_vl.py and others): its "
                                   "weights replicated on each rank"),
    "mm_feature_transport": (None, "multimodal features moved to the scheduler over CUDA IPC or VMM "
                                   "(multimodal/processors/base_processor.py, mem_cache/kv_cache_configurator.py)"),
    "dsa_prefill_backend": (None, "a DSA (DeepSeek sparse attention) prefill kernel (layers/attention/"
                                  "dsa_backend.py): its workspace"),
    "dsa_decode_backend": (None, "a DSA decode kernel (layers/attention/dsa_backend.py): its workspace"),
    "dsa_paged_mqa_logits_backend": ("auto", "the DSA indexer's logits kernel (layers/attention/dsa/"
                                             "paged_mqa_logits_backend.py)"),
    "dsa_topk_backend": ("sgl-kernel", "the DSA indexer's top-k kernel (layers/attention/dsa/dsa_topk_backend.py)"),
    "enable_dsa_fused_indexer": (None, "the fused DSA indexer (layers/attention/dsa/dsa_indexer.py)"),
    "dsa_triton_union": (0, "the DSA triton union kernel (layers/attention/dsa_backend.py)"),
    "dsv4_attn_backend": ("auto", "DeepSeek V4's attention backend (model_executor/pool_configurator.py, "
                                  "mem_cache/deepseek_v4_memory_pool.py): its own pool"),
    "dsv4_prefill_backend": ("auto", "DeepSeek V4's sparse prefill kernel (layers/attention/deepseek_v4_backend.py)"),
    "enable_deepseek_v4_fp4_indexer": (False, "DeepSeek V4's FP4 indexer cache (model_executor/pool_configurator.py)"),
    "qsa_indexer_dtype": ("auto", "the QSA indexer cache's dtype (mem_cache/)"),
    "prefill_kv_cache_dequant_dtype": ("auto", "a prefill-side dequantized KV copy (arg_groups/kv_cache_hook.py)"),
    "flashinfer_mla_disable_ragged": (False, "FlashInfer MLA without its ragged prefill (layers/attention/"
                                             "flashinfer_mla_backend.py): other prefill workspaces"),
    "disable_chunked_prefix_cache": (False, "MLA prefill without the chunked prefix cache (layers/attention/"
                                            "flashinfer_mla_backend.py, model_executor/runner/"
                                            "prefill_cuda_graph_runner.py): the prefix KV gathered whole"),
    "enable_fused_qk_norm_rope": (None, "fused QK-norm + RoPE (models/qwen3_moe.py): its own buffers"),
    "enable_deterministic_inference": (False, "deterministic inference: it changes the attention and sampling "
                                              "backends and the all-reduce (arg_groups/attention_hook.py, "
                                              "overrides.py)"),
    "rl_on_policy_target": (None, "RL on-policy numerics (layers/, model_executor/forward_batch_info.py): other "
                                  "kernels and dtypes"),
    "enable_mis": (False, "multi-item scoring (layers/attention/flashinfer_backend.py, forward_batch_info.py)"),
    # Mamba / linear-attention hybrids: each moves the state pool or its buffers
    "mamba_backend": ("triton", "the Mamba kernels (model_executor/model_runner_components/"
                                "attention_backend_setup.py, arg_groups/mamba_hook.py)"),
    "mamba_radix_cache_strategy": ("auto", "the Mamba radix cache's extra state buffers (arg_groups/"
                                           "model_override_base.py mamba_extra_buffer_of)"),
    "mamba_track_interval": (256, "how often Mamba states are checkpointed for the radix cache "
                                  "(layers/attention/mamba/mamba2_metadata.py, managers/schedule_batch.py)"),
    "mamba_max_states_per_path": (-1, "Mamba states kept per radix path (mem_cache/unified_cache/components/"
                                      "mamba.py)"),
    "enable_mamba_cache_stochastic_rounding": (False, "stochastic rounding of the Mamba state (arg_groups/"
                                                      "mamba_hook.py)"),
    "enable_int8_mamba_checkpoint": (False, "an int8 Mamba checkpoint pool (mem_cache/mamba_checkpoint_pool.py)"),
    "enable_linear_replayssm": (False, "ReplaySSM's linear-attention state buffers (mem_cache/memory_pool.py, "
                                       "unified_memory_pool.py)"),
    "enable_linear_replayssm_spec": (False, "ReplaySSM's draft state buffers (mem_cache/unified_draft_pool.py)"),
    "linear_attn_backend": ("triton", "the linear-attention kernels (layers/attention/hybrid_linear_attn_backend.py)"),
    "linear_attn_decode_backend": (None, "the linear-attention decode kernels (layers/attention/linear/utils.py)"),
    "linear_attn_prefill_backend": (None, "the linear-attention prefill kernels (layers/attention/linear/utils.py)"),
    "linear_attn_verify_backend": (None, "the linear-attention verify kernels (layers/attention/linear/utils.py)"),
    "enable_page_major_kv_layout": (False, "a page-major pool layout for hybrids (mem_cache/kv_cache_configurator.py "
                                           "mamba_envelope_layout)"),
    "enable_scattered_sconv": (False, "scattered short convolutions (models/inkling.py)"),
    "enable_encoder_swa_bounded_replay": (False, "bounded SWA replay (model_executor/pool_configurator.py)"),
    "enable_decoder_swa_bounded_replay": (None, "bounded SWA replay in DeepSeek V4's decoder (mem_cache/"
                                                "kv_cache_builder.py)"),
    "c128_page_size": (16, "the compressed-128 page of DeepSeek V4's pool (hardware_backend/npu/dsv4/"
                           "dsv4_memory_pool.py)"),
    # the pool, its caches and what is kept per request
    "prefill_only_disable_kv_cache": (False, "a prefill-only server without a KV pool (mem_cache/"
                                             "kv_cache_configurator.py)"),
    "enable_unified_memory": (False, "the unified pool for hybrid models (mem_cache/kv_cache_builder.py, "
                                     "model_executor/pool_configurator.py)"),
    "radix_cache_backend": (None, "another radix cache implementation (mem_cache/registry.py)"),
    "enable_session_radix_cache": (False, "the session radix cache (mem_cache/unified_cache/, managers/"
                                          "scheduler.py): requests' KV held across a session"),
    "enable_streaming_session": (False, "streaming sessions on the unified radix cache (mem_cache/registry.py, "
                                        "arg_groups/kv_cache_hook.py)"),
    "hicache_mem_layout": ("page_first", "HiCache's layout: page_first makes its transfer buffers before the KV "
                                         "budget is measured (mem_cache/kv_cache_builder.py prepare_hicache_staging)"),
    "hicache_io_backend": ("kernel", "how HiCache copies pages (mem_cache/pool_host/, hybrid_pool_assembler.py)"),
    "disaggregation_decode_retraction_backup": (None, "where a decode server backs up retracted requests' KV "
                                                      "(mem_cache/kv_cache_builder.py: a host pool and its staging)"),
    "disaggregation_decode_allocation_policy": ("early", "when a decode server allocates a request's KV "
                                                         "(disaggregation/decode.py)"),
    "enable_pd_role_switch": (False, "a server that switches between prefill and decode at run time "
                                     "(disaggregation/role_switch.py, mem_cache/kv_cache_configurator.py)"),
    "kv_canary": ("none", "the KV canary's GPU buffers (kv_canary/plan_input.py, expected_inputs.py)"),
    "enable_watermark": (False, "watermark state per request on the GPU (sampling/watermarking/core.py "
                                "WatermarkState: requests x context window)"),
    "enable_return_aux_hidden_states": (False, "auxiliary hidden states kept per response (layers/"
                                               "logits_processor.py)"),
    "return_aux_hidden_state_layer_ids": (None, "which layers' hidden states are kept (model_executor/"
                                                "model_runner_components/spec_aux_hidden_state.py)"),
    "return_hidden_states_mode": (None, "which hidden states the CUDA graphs keep (model_executor/runner/"
                                        "base_runner.py)"),
    "enable_return_indexer_topk": (False, "the indexer's top-k captured per token (state_capturer/indexer_topk.py)"),
    "sampling_mask_max_tokens": (4096, "the sampler's mask buffers (layers/sampler.py, managers/scheduler.py)"),
    "debug_tensor_dump_layers": (None, "layers whose tensors are dumped (model_executor/model_runner_components/"
                                       "load_model_utils.py hooks)"),
    "forward_hooks": (None, "hooks registered on the model's forward (model_executor/hook_manager.py)"),
    "msprobe_dump_config": (None, "msprobe's precision dumps (model_executor/model_runner_components/misc_utils.py)"),
    # how and which weights are loaded
    "weight_cache_mode": ("off", "weights loaded through an IPC weight cache (model_executor/model_runner_components/"
                                 "load_model_utils.py maybe_enable_ipc_weight_cache)"),
    "startup_weight_load_mode": ("serial", "weights loaded while the rest starts (arg_groups/model_override_base.py "
                                           "startup_weight_load_overlap_of): the order memory is taken in"),
    "modelopt_quant": (None, "ModelOpt quantization at load (model_loader/loader.py, configs/modelopt_config.py)"),
    "modelopt_checkpoint_restore_path": (None, "a ModelOpt checkpoint restored at load (configs/modelopt_config.py)"),
    "quantize_and_serve": (False, "weights quantized at load and served (configs/model_config.py, "
                                  "modelopt_config.py)"),
    "rl_quant_profile": (None, "an RL quantization profile applied at load (configs/load_config.py)"),
    "remote_instance_weight_loader_start_seed_via_transfer_engine": (False, "this server's weights registered with a "
                                                                            "transfer engine for others to load "
                                                                            "(entrypoints/engine.py)"),
    "enable_weights_cpu_backup": (False, "a CPU copy of the weights for memory release (model_executor/"
                                         "model_runner_components/startup_weight_load.py)"),
    "enable_draft_weights_cpu_backup": (False, "a CPU copy of the draft's weights (model_executor/"
                                               "model_runner_components/load_model_utils.py)"),
    # a model's own override may turn the PLE offload on (arg_groups/memory_hook.py re-runs its check "after the
    # model overrides fill in the PLE default"), so its backend and directory are refused, not gated
    "ple_offload_backend": ("pinned", "where the per-layer embedding is offloaded: pinned host memory or a file "
                                      "(models/qwen4_exp.py, arg_groups/memory_hook.py)"),
    "ple_offload_dir": (None, "the file the per-layer embedding is offloaded to (models/qwen4_exp.py)"),
    "ple_offload_embedding": (None, "the per-layer embedding offloaded to host memory (models/qwen4_exp.py, "
                                    "arg_groups/memory_hook.py)"),
    # the encoder / language split of multimodal serving (disaggregation/encoder/)
    "encoder_only": (False, "an encoder-only server: the vision encoder without the language model (models/"
                            "qwen3_vl.py and others)"),
    "language_only": (False, "a language-only server without the vision encoder (layers/dp_attention.py, "
                             "managers/mm_utils.py)"),
    "enable_adaptive_dispatch_to_encoder": (False, "multimodal work dispatched to encoder servers, with a local mm "
                                                   "pool (disaggregation/encoder/receiver.py skip_mm_pool)"),
    "enable_broadcast_mm_inputs_process": (False, "multimodal inputs processed once and broadcast over ranks "
                                                  "(managers/scheduler.py)"),
    "experts_shared_outer_loras": (None, "MoE LoRA weights shared across experts (lora/mem_pool.py): other adapter "
                                         "slot shapes"),
    "lora_use_virtual_experts": (False, "MoE LoRA with virtual experts (lora/lora_manager.py, lora_moe_runners.py)"),
    "enable_multi_layer_eagle": (False, "a multi-layer EAGLE draft (speculative/, mem_cache/kv_cache_configurator.py)"),
    "speculative_draft_attention_backend": (None, "the draft's own attention backend (mem_cache/draft_kv_budget.py, "
                                                  "kv_cache_dtype.py)"),
    "speculative_attention_mode": ("prefill", "which attention mode the draft's verify runs in (speculative/"
                                              "draft_utils.py): other backend workspaces"),
    "speculative_moe_runner_backend": (None, "the draft's MoE kernels (layers/moe/utils.py)"),
    "speculative_moe_a2a_backend": (None, "the draft's all-to-all MoE backend (layers/moe/utils.py)"),
    "speculative_enable_w4a4_mxfp4_megamoe": (None, "the draft's W4A4 MegaMoE kernel (layers/moe/utils.py)"),
    "speculative_dsa_topk_backend": ("sgl-kernel", "the draft's DSA top-k kernel (layers/attention/dsa/"
                                                   "dsa_topk_backend.py)"),
    "speculative_use_rejection_sampling": (False, "rejection sampling for the draft (speculative/eagle_utils.py, "
                                                  "eagle_draft_cuda_graph_runner.py)"),
    "speculative_use_block_verification": (False, "block verification (speculative/eagle_utils.py)"),
    "speculative_draft_sink_size": (None, "attention-sink tokens the draft keeps (speculative/spec_utils.py)"),
    "speculative_adaptive_config": (None, "adaptive speculative parameters (speculative/adaptive_spec_params.py)"),
    "cp_strategy": (None, "how context parallelism splits a sequence (layers/cp/base.py, bcg/)"),
    "dcp_comm_backend": (None, "decode context parallelism's communication (model_executor/runner/base_runner.py)"),
    "dcp_replicate_q_proj": (None, "q_proj replicated over decode-context-parallel ranks (models/deepseek_common/"
                                   "attention_forward_methods/forward_mla.py): more weights a rank"),
    "ep_join_mode": (None, "a rank joining elastic expert parallelism (eplb/expert_location.py, "
                           "model_executor/model_runner_components/cuda_graph_setup.py)"),
    "ep_join_rank_offset": (0, "a joining rank's place in elastic expert parallelism (eplb/expert_location.py)"),
    "elastic_ep_initial_size": (None, "elastic expert parallelism's first size (eplb/expert_location.py, "
                                      "model_executor/model_runner.py)"),
    "elastic_ep_scale_timeout": (600, "elastic expert parallelism's scaling (model_executor/model_runner.py)"),
    "enable_linker_mla_dedup": (False, "MLA pages deduplicated by the Mooncake linker (mem_cache/storage/"
                                       "mooncake_store/mooncake_direct_linker.py)"),
    "disaggregation_enable_kv_checksum": (False, "checksums of transferred KV pages (disaggregation/prefill.py, "
                                                 "decode.py)"),
    "enable_symm_mem": (False, "NCCL symmetric memory: a 4 GB preallocation unless SGLANG_SYMM_MEM_PREALLOC_GB_SIZE "
                               "says otherwise (arg_groups/memory_hook.py), registered windows (distributed/"
                               "parallel_state.py)"),
    "enable_fused_moe_sum_all_reduce": (False, "the fused MoE sum + all-reduce (layers/moe/moe_runner/triton_utils/"
                                               "fused_moe.py): other output buffers"),
    "debug_cuda_graph": (False, "CUDA graphs replaced by eager runs for debugging (model_executor/runner_backend/"
                                "utils.py debug_eager)"),
    "enable_profile_cuda_graph": (False, "a profiler around CUDA graph capture (model_executor/runner/"
                                         "decode_cuda_graph_runner.py)"),
    "enable_torch_compile_debug_mode": (False, "torch.compile's debug mode for the piecewise graphs "
                                               "(model_executor/runner_backend/tc_piecewise_cuda_graph_backend.py)"),
}
# NOT_MODELLED options parsed as --x / --no-x (argparse.BooleanOptionalAction) whose default None lets SGLang decide
# (arg_groups/ hooks resolve it per model and GPU): --no-x is a choice too, refused like --x
AUTO_BOOLS = frozenset({"enable_tp_lm_head_all_to_all", "mm_enable_dp_encoder", "dcp_replicate_q_proj",
                        "enable_fused_qk_norm_rope", "enable_dsa_fused_indexer", "enable_decoder_swa_bounded_replay",
                        "speculative_enable_w4a4_mxfp4_megamoe", "experts_shared_outer_loras",
                        "ple_offload_embedding"})
# --model-loader-extra-config: the keys SGLang 0.5.23's default loader takes (model_loader/loader.py
# _validate_default_loader_extra_config: threads that read the files, host side); it raises on any other key for
# the load formats kvplan reads (auto, safetensors, pt), and the other formats are refused by --load-format
LOADER_EXTRA_KEYS = frozenset({"enable_multithread_load", "num_threads"})
# Options read only when another is set that kvplan refuses by name (NOT_MODELLED): nothing on their own. Each with
# the gate and the SGLang 0.5.23 file that reads them under it (tests check each gate stays refused).
ONLY_WITH: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("offload_mode", "offload_num_in_group", "offload_prefetch_step"),
                    ("offload_group_size", "utils/offloader.py: read only when offload_group_size > 0")),
    **dict.fromkeys(("kt_cpuinfer", "kt_max_deferred_experts_per_token", "kt_method", "kt_num_gpu_experts",
                     "kt_threadpool_count"),
                    ("kt_weight_path", "layers/moe/kt_ep_wrapper.py create_kt_config_from_server_args: no KT config "
                                       "without kt_weight_path")),
    **dict.fromkeys(("dllm_algorithm_config", "dllm_fdfo"), ("dllm_algorithm", "dllm/config.py: nothing when "
                                                                               "dllm_algorithm is None")),
    **dict.fromkeys(("pdmux_config_path", "sm_group_num"),
                    ("enable_pdmux", "multiplex/, attention_backend_setup.py: under enable_pdmux")),
    "lmcache_config_file": ("enable_lmcache", "mem_cache/registry.py: the LMCache radix cache's config"),
    "flexkv_config_file": ("enable_flexkv", "mem_cache/registry.py: FlexKV's config path"),
    "hisparse_config": ("enable_hisparse", "mem_cache/sparsity/factory.py: HiSparse's config"),
    "expert_distribution_recorder_buffer_size": ("expert_distribution_recorder_mode", "eplb/expert_distribution.py: "
                                                 "the recorder's size, built only with a mode (or under --enable-eplb, "
                                                 "refused too)"),
    **dict.fromkeys(("unified_cache_external_linker_backend", "unified_cache_external_linker_config"),
                    ("enable_unified_cache_external_linker", "mem_cache/unified_cache/linker_factory.py, "
                                                             "arg_groups/hicache_hook.py")),
    # issue 28, second pass (SGLang 0.5.23)
    **dict.fromkeys(("kv_canary_real_data", "kv_canary_sweep_interval"),
                    ("kv_canary", "kv_canary/config.py CanaryConfig, read by kv_canary/api.py install_canary, which "
                                  "returns before it when kv_canary is none")),
    **dict.fromkeys(("decoupled_spec_bind_endpoint", "decoupled_spec_connect_endpoints", "decoupled_spec_rank"),
                    ("decoupled_spec_role", "server_args.py: DecoupledSpecIpcConfig only when decoupled_spec_role is "
                                            "not null")),
    "watermark_config": ("enable_watermark", "arg_groups/validation_hook.py refuses it without enable_watermark; "
                                             "sampling/watermarking/ reads it"),
    **dict.fromkeys(("weight_cache_socket", "weight_cache_timeout"),
                    ("weight_cache_mode", "load_model_utils.py maybe_enable_ipc_weight_cache returns when "
                                          "weight_cache_mode is off; weight_cache/daemon.py")),
    **dict.fromkeys(("modelopt_checkpoint_save_path", "modelopt_export_path"),
                    ("modelopt_quant", "configs/modelopt_config.py, model_loader/loader.py: where a ModelOpt "
                                       "quantization run saves its output")),
    **dict.fromkeys(("remote_instance_weight_loader_backend", "remote_instance_weight_loader_seed_instance_ip",
                     "remote_instance_weight_loader_seed_instance_service_port",
                     "remote_instance_weight_loader_send_weights_group_ports", "modelexpress_config"),
                    ("load_format", "arg_groups/model_path_hook.py and model_loader/loader.py RemoteInstanceModelLoader"
                                    ": read for load_format remote_instance")),
    **dict.fromkeys(("deepep_config", "deepep_v2_mode", "deepep_dispatcher_output_dtype", "fuseep_mode",
                     "flashinfer_a2a_dispatch_type"),
                    ("moe_a2a_backend", "layers/moe/token_dispatcher/ (deepep.py, deepep_v2.py), "
                                        "hardware_backend/npu/moe/fuseep.py, layers/moe/utils.py "
                                        "get_flashinfer_a2a_dispatch_type, quantization/humming_utils.py (returns "
                                        "unless DeepEP): each all-to-all backend's settings")),
    **dict.fromkeys(("eplb_rebalance_layers_per_chunk", "eplb_rebalance_num_iterations",
                     "eplb_min_rebalancing_utilization_threshold"),
                    ("enable_eplb", "eplb/eplb_manager.py, built only under enable_eplb (the threshold also by the "
                                    "expert distribution recorder, refused by its mode)")),
    "paged_experts_num_resident": ("enable_paged_experts", "layers/moe/paged_experts/method.py, built under "
                                                           "enable_paged_experts"),
    **dict.fromkeys(("int8_mamba_ckpt_size",), ("enable_int8_mamba_checkpoint", "mem_cache/mamba_checkpoint_pool.py")),
    "mamba_cache_philox_rounds": ("enable_mamba_cache_stochastic_rounding", "arg_groups/mamba_hook.py: the rounding's "
                                                                            "RNG rounds"),
    "linear_replayssm_cache_len": ("enable_linear_replayssm", "mem_cache/memory_pool.py, unified_draft_pool.py: the "
                                                              "ReplaySSM buffers' length"),
    "tbo_token_distribution_threshold": ("enable_two_batch_overlap", "layers/moe/utils.py, batch_overlap/"
                                                                     "two_batch_overlap.py: how two-batch overlap "
                                                                     "splits a batch"),
    **dict.fromkeys(("encoder_register_urls", "enable_mm_global_cache", "mm_global_cache_backend",
                     "enable_prefix_mm_cache"),
                    ("encoder_only", "disaggregation/encoder/server.py, http_server.py: the encoder server's "
                                     "registration and caches (arg_groups/pd_disaggregation_hook.py refuses "
                                     "--enable-prefix-mm-cache without --encoder-only)")),
    "enable_megamoe_for_layernorm_sp": ("enable_layernorm_sp", "arg_groups/layernorm_sp_hook.py, models/muse_spark.py: "
                                                               "MegaMoE under sequence-parallel layernorm"),
    **dict.fromkeys(("encoder_urls", "encoder_transfer_backend"),
                    ("language_only", "managers/tokenizer_manager.py, scheduler_components/request_receiver.py: "
                                      "where a language-only server gets its encoder outputs")),
}
# Options of one draft algorithm that engines/sglang/features.py refuses (SPEC_NOT_MODELLED): read only by its worker
# and its hook in arg_groups/speculative_hook.py (tests check each algorithm stays refused)
DRAFT_ONLY: dict[str, str] = {
    **dict.fromkeys(("speculative_ngram_capacity", "speculative_ngram_external_corpus_max_tokens",
                     "speculative_ngram_external_corpus_path", "speculative_ngram_external_sam_budget",
                     "speculative_ngram_match_type", "speculative_ngram_max_bfs_breadth",
                     "speculative_ngram_max_trie_depth", "speculative_ngram_min_bfs_breadth"), "NGRAM"),
    **dict.fromkeys(("speculative_dflash_block_size", "speculative_domino_candidate_pool_size"), "DFLASH"),
    **dict.fromkeys(("speculative_dspark_align_verify_tokens_to_graph_tier", "speculative_dspark_block_size",
                     "speculative_dspark_confidence_sts_path", "speculative_dspark_sps_table_path"), "DSPARK"),
    "uno_lora_path": "UNO",
}
# The custom all-reduce's buffers and NCCL's are inside the measured distributed-init constant (budget.py
# dist_init_bytes), which these move: refused on more than one GPU. On one (tp_size and pp_size 1) SGLang creates no
# all-reduce at all (distributed/parallel_state.py GroupCoordinator: "use_custom_allreduce and world_size > 1").
MULTI_GPU_ONLY: dict[str, str] = {
    "disable_custom_all_reduce": "the custom all-reduce off: its buffers are inside the measured distributed-init "
                                 "constant",
    "enable_nccl_nvls": "NCCL's NVLink SHARP buffers, not in the measured distributed-init constant",
    # SGLang 0.5.23: each communicator only where the group has more than one rank (distributed/parallel_state.py
    # GroupCoordinator: "use_mscclpp and self.world_size > 1", "use_torch_symm_mem_all_reduce and self.world_size >
    # 1"); the pre-warm only with tp, pp or ep > 1 (distributed/bootstrap.py); the fusions, reductions and quantized
    # collectives below act on an all-reduce, which one GPU does not run. (FlashInfer's fusion workspace is made after
    # the pool is sized: features.py reads its three options on any number of GPUs, after_pool.py sizes it.)
    "enable_mscclpp": "MSCCL++'s all-reduce buffers, not in the measured distributed-init constant",
    "enable_torch_symm_mem": "torch symmetric-memory all-reduce buffers, not in the measured distributed-init constant",
    "pre_warm_nccl": "NCCL warmed up before the memory is measured (distributed/bootstrap.py _prewarm_nccl): its "
                     "buffers, not in the measured distributed-init constant",
    "enable_aiter_allreduce_fusion": "ROCm aiter's all-reduce + RMSNorm fusion (layers/layer_boundary/fusions/"
                                     "allreduce.py) and its workspace",
    "disable_aiter_allreduce_fusion_in_prefill": "aiter's all-reduce fusion off in prefill (layers/layer_boundary/"
                                                 "residual/add_norm.py)",
    "disable_aiter_allreduce_fusion_in_decode": "aiter's all-reduce fusion off in decode (layers/layer_boundary/"
                                                "residual/add_norm.py)",
    "enable_quant_communications": "quantized all-reduce (distributed/parallel_state.py, NPU only)",
    "boundary_reduction": "how a layer boundary reduces over TP: all-reduce or reduce-scatter (layers/layer_boundary/"
                          "factories.py): other activation shapes",
}
# with the default mem_fraction_static (a reserve formula on the CUDA-graph batch sizes and the chunk), these move
# the budget; with an explicit --mem-fraction-static they do not
# the bare flags that set one phase of cuda_graph_config (arg_groups/cuda_graph_hook.py: max_bs, bs, backend and the
# prefill graphs' length of each phase; the reserve reads decode max_bs and the prefill sizes, reserve_for_graph_mb)
MOVES_DEFAULT_FRACTION = ("cuda_graph_bs_decode", "cuda_graph_config", "cuda_graph_backend_decode", "disable_cuda_graph",
                          "enable_torch_compile", "torch_compile_max_bs", "cuda_graph_max_bs_decode",
                          "cuda_graph_max_bs_prefill", "cuda_graph_bs_prefill", "cuda_graph_backend_prefill",
                          "disable_decode_cuda_graph", "disable_prefill_cuda_graph", "cuda_graph_max_seq_len_prefill",
                          "cuda_graph_prefill_max_context")
# attention backends that keep SGLang's default page of one token (others force a page size of their own)
PAGE_ONE_BACKENDS = frozenset({"flashinfer", "triton", "fa3", "torch_native", "flex_attention"})


# Options engines/sglang/features.py reads: modelled there, or refused there by name with its reason
FEATURE_OPTIONS = frozenset({
    "attn_dp_size", "cpu_offload_gb", "disaggregation_decode_enable_offload_kvcache",
    "disaggregation_decode_enable_radix_cache", "disaggregation_decode_extra_slots",
    "disaggregation_decode_host_receive_threshold", "disaggregation_mode", "disaggregation_transfer_backend",
    "enable_dp_attention", "enable_hierarchical_cache", "enable_lora", "hicache_host_memory_mode", "hicache_ratio",
    "hicache_size", "hicache_storage_backend", "lora_paths", "lora_target_modules", "max_lora_rank",
    "max_loras_per_batch", "num_reserved_decode_tokens", "speculative_adaptive", "speculative_algorithm",
    "speculative_draft_kv_cache_dtype", "speculative_draft_model_path", "speculative_draft_model_quantization",
    "speculative_draft_window_size", "speculative_eagle_topk", "speculative_num_draft_tokens", "speculative_num_steps",
    "speculative_token_map", "disable_radix_cache", "disable_overlap_schedule", "enable_mixed_chunk",
    # --max-prefill-tokens: the scheduler's prefill admission budget (managers/schedule_policy.py PrefillAdder) with
    # chunked prefill on, where the prefill buffers read the chunk (runtime_context.py max_prefill_buffer_tokens,
    # 0.5.23; --enable-dynamic-chunking, which reads it, is refused); with it off, the default fraction's activation
    # reserve (features.py unchunked_prefill_tokens, budget.py default_mem_fraction)
    "max_prefill_tokens",
    # FlashInfer's all-reduce fusion (features.py fusion_backend): its workspace comes after the pool is sized
    # (after_pool.py: the warm-up before graph capture, or the first fused all-reduce), out of the reserve
    "enable_flashinfer_allreduce_fusion", "flashinfer_allreduce_fusion_backend",
    "enforce_disable_flashinfer_allreduce_fusion",
})
# read here: --config (its keys are options, each classified), --attention-backend and its decode / prefill
# versions (their page size, below) and MULTI_GPU_ONLY
READ_HERE = frozenset({"config", "attention_backend", "decode_attention_backend", "prefill_attention_backend",
                       "model_loader_extra_config", *MULTI_GPU_ONLY})

# Options that leave what SGLang holds in GPU memory at start-up alone, each with why. Read from SGLang 0.5.23's
# option fields (srt/arg_groups/fields/<file>.py, the namespace and section that declare it): the HTTP / gRPC
# front end, TLS, the API's templates and parsers, the tokenizer processes, logging, metrics and tracing, which
# GPU a rank starts at, and the scheduler's admission policy over a pool already sized. Every other option a
# launch sets is "cannot judge" (exit 3) until it is read: the closed world.
_FRONT_END = "the HTTP/gRPC front end (serving.py, HTTP server): a CPU process, no GPU allocation"
_TLS = "TLS for the HTTP server (serving.py, SSL/TLS): CPU side"
_API = "the OpenAI-compatible API layer (serving.py, API related): request and response handling on the CPU"
_TOKENIZER = "the tokenizer / detokenizer processes (serving.py): CPU side, the model's pool is not touched"
_STREAM = "how responses are streamed (serving.py, Streaming): the HTTP side"
_LOG = "logging, metrics and tracing (observability.py): host-side records, no GPU allocation"
_WHICH_GPU = "which GPU a rank starts on, or a process setting (device.py): not how much memory it takes"
_RENDEZVOUS = "where the distributed ranks meet (parallel.py): an address, port or timeout, no GPU allocation"
_ADMISSION = ("the scheduler's admission and ordering policy (schedule.py): which requests enter a pool already "
              "sized at start-up")
NO_GPU_MEMORY: dict[str, str] = {
    **dict.fromkeys(("host", "port", "fastapi_root_path", "enable_http_worker_reuseport", "smg_grpc_mode", "grpc_mode",
                     "grpc_port", "grpc_response_timeout_secs", "sidecar", "sidecar_args", "enable_http2",
                     "http2_max_concurrent_streams", "http2_initial_connection_window_size"), _FRONT_END),
    **dict.fromkeys(("ssl_keyfile", "ssl_certfile", "ssl_ca_certs", "ssl_keyfile_password", "enable_ssl_refresh"),
                    _TLS),
    **dict.fromkeys(("api_key", "admin_api_key", "served_model_name", "weight_version", "chat_template",
                     "trust_request_chat_template", "hf_chat_template_name", "completion_template",
                     "enable_cache_report", "return_input_ids", "return_output_ids", "reasoning_parser",
                     "default_chat_template_kwargs", "tool_call_parser", "tool_server", "sampling_defaults",
                     "preferred_sampling_params", "allow_auto_truncate"), _API),
    **dict.fromkeys(("tokenizer_path", "tokenizer_mode", "tokenizer_backend", "tokenizer_worker_num",
                     "detokenizer_worker_num", "skip_tokenizer_init", "enable_dynamic_batch_tokenizer",
                     "dynamic_batch_tokenizer_batch_size", "dynamic_batch_tokenizer_batch_timeout",
                     "enable_tokenizer_batch_encode", "disable_tokenizer_batch_decode"), _TOKENIZER),
    **dict.fromkeys(("stream_interval", "batch_notify_size", "stream_response_default_include_usage",
                     "incremental_streaming_output"), _STREAM),
    **dict.fromkeys(("log_level", "log_level_http", "log_requests", "log_requests_level", "log_requests_format",
                     "log_requests_target", "uvicorn_access_log_exclude_prefixes", "crash_dump_folder",
                     "show_time_cost", "enable_metrics", "smg_http_sidecar_port", "enable_mfu_metrics",
                     "enable_metrics_for_all_schedulers", "load_snapshot_publish_interval",
                     "tokenizer_metrics_custom_labels_header", "tokenizer_metrics_allowed_custom_labels",
                     "extra_metric_labels", "bucket_time_to_first_token", "bucket_inter_token_latency",
                     "bucket_e2e_request_latency", "prompt_tokens_buckets", "generation_tokens_buckets",
                     "gc_warning_threshold_secs", "decode_log_interval", "enable_request_time_stats_logging",
                     "kv_events_config", "load_publish_endpoint", "enable_forward_pass_metrics",
                     "forward_pass_metrics_worker_id", "forward_pass_metrics_ipc_name", "enable_trace", "trace_modules",
                     "otlp_traces_endpoint", "otlp_service_name", "export_metrics_to_file",
                     "export_metrics_to_file_dir"), _LOG),
    **dict.fromkeys(("base_gpu_id", "gpu_id_step", "random_seed", "watchdog_timeout", "soft_watchdog_timeout",
                     "sleep_on_idle", "numa_node", "gc_threshold"), _WHICH_GPU),
    **dict.fromkeys(("nccl_port", "dist_timeout", "dist_init_addr", "node_rank", "gated_launch_port"), _RENDEZVOUS),
    **dict.fromkeys(("max_queued_requests", "schedule_policy", "enable_priority_scheduling",
                     "disable_priority_preemption", "default_priority_value", "abort_on_priority_when_disabled",
                     "schedule_low_priority_values_first", "priority_scheduling_preemption_threshold",
                     "schedule_conservativeness", "scheduler_recv_interval", "load_balance_method",
                     "min_free_slots_delay", "enable_prefill_delayer", "prefill_delayer_max_delay_passes",
                     "prefill_delayer_token_usage_low_watermark", "prefill_delayer_forward_passes_buckets",
                     "prefill_delayer_wait_seconds_buckets", "prefill_delayer_queue_min_ratio",
                     "prefill_delayer_max_delay_ms"), _ADMISSION),
    "trust_remote_code": "whether the checkpoint's own Python code may run (model.py); kvplan reads its config.json "
                         "either way",
    "disable_outlines_disk_cache": "outlines' grammar cache on disk (exec_.py)",
    "skip_server_warmup": "the warm-up request entrypoints/http_server.py sends once the server is up, after the pool "
                          "is allocated",
    "grammar_backend": "constrained decoding's token bitmask is made per batch at decode time "
                       "(constrained/xgrammar_backend.py allocate_vocab_mask: vocab / 32 int32 words a request), "
                       "not at start-up",
    **dict.fromkeys(("constrained_json_whitespace_pattern", "constrained_json_disable_any_whitespace"),
                    "how a JSON schema is compiled to a grammar (constrained/base_grammar_backend.py): CPU side"),
    "num_continuous_decode_steps": "decode steps the scheduler runs between polls of its queue (managers/scheduler.py "
                                   "up to 0.5.22; 0.5.23 reads it nowhere but arg_groups/field_order.py)",
    "download_dir": "where the checkpoint is downloaded on disk (model_loader/weight_utils.py)",
    "delete_ckpt_after_loading": "deletes the checkpoint files on disk once loaded (entrypoints/http_server.py)",
    "quantization_param_path": "a JSON file of per-layer KV-cache scaling factors (model_runner_components/"
                               "load_model_utils.py load_kv_cache_scales): one float a layer, the cache's dtype is "
                               "--kv-cache-dtype's",
    "enable_custom_logit_processor": "lets a request carry a logit processor run on each batch's logits "
                                     "(sampling/sampling_batch_info.py): nothing allocated at start-up",
    "disaggregation_bootstrap_port": _RENDEZVOUS,
    "disaggregation_ib_device": "which RDMA NIC the KV transfer engine uses (disaggregation/prefill.py, decode.py "
                                "kv_args.ib_device): the pool it registers is sized without it",
    "file_storage_path": "a directory on disk for HiCache's file storage backend (mem_cache/hicache_storage.py)",
    "hicache_storage_prefetch_policy": "when HiCache prefetches from a storage backend (mem_cache/unified_radix_cache.py"
                                       "): only with --hicache-storage-backend, which kvplan refuses",
    **dict.fromkeys(("weight_loader_disable_mmap", "weight_loader_drop_cache_after_load",
                     "weight_loader_prefetch_checkpoints", "weight_loader_prefetch_num_threads"),
                    "how the checkpoint files are read from disk (model_loader/loader.py: mmap, the page cache, "
                    "prefetch threads): host side, the same weights land on the GPU"),
    "model_checksum": "checks the checkpoint files' hashes on the host (utils/model_file_verifier.py)",
    "checkpoint_engine_wait_weights_before_ready": "when the HTTP server reports ready (entrypoints/http_server.py)",
    **dict.fromkeys(("retraction_policy", "prefill_decode_interval", "prefill_decode_interval_min_bs",
                     "optimistic_prefill_attempts"), _ADMISSION),
    **dict.fromkeys(("allowed_media_domains", "media_url_max_file_size_mb", "trust_mm_content_hashes",
                     "enable_response_store"), _API),
    **dict.fromkeys(("mm_processor_worker_num", "mm_io_worker_num"),
                    "multimodal preprocessing worker processes (multimodal/processors/base_processor.py): CPU side"),
    **dict.fromkeys(("spec_trace_dir", "enable_layerwise_nvtx_marker"), _LOG),
    **dict.fromkeys(("engine_info_bootstrap_port", "encoder_bootstrap_port", "disaggregation_decode_polling_interval"),
                    _RENDEZVOUS),
    "enable_tf32_matmul": "TF32 for float32 matmuls (model_executor/model_runner.py torch.backends flags): precision, "
                          "no allocation",
    **dict.fromkeys(("speculative_accept_threshold_single", "speculative_accept_threshold_acc"),
                    "the draft's acceptance test at run time (speculative/eagle_utils.py, spec_sampling_mask.py)"),
    "enable_cudagraph_gc": "Python's garbage collection during CUDA graph capture (model_executor/runner/"
                           "base_cuda_graph_runner.py freeze_gc): host side",
    "limit_mm_data_per_request": _API,
    "enable_p2p_check": "runs the real P2P check instead of assuming P2P (distributed/bootstrap.py "
                        "monkey_patch_p2p_access_check without it): it can only turn the custom all-reduce off where "
                        "GPUs lack P2P, never add memory, so the distributed-init constants (budget.py, measured on "
                        "launches that keep SGLang's default) hold or understate the pool",
    "hicache_host_memory_fraction": "the share of the host's memory HiCache's auto-sizing may fill "
                                    "(mem_cache/hicache_auto_size.py): the host pool only; engines/sglang/features.py "
                                    "reports the auto-sized host pool as its upper bound at ratio 2.0 either way",
    "hicache_write_policy": "when HiCache copies device pages to the host (managers/cache_controller.py): write "
                            "through or back, the device pool is the same",
    "sampling_backend": "which kernels sample the next token (layers/sampler.py: flashinfer's or torch's, per batch): "
                        "SGLang sizes no pool by a profiling run, and nothing is allocated for it at start-up",
    "lora_backend": "the LoRA kernels (lora/lora_manager.py): with LoRA on, int32 index arrays per token and segment "
                    "(lora/backend/chunked_backend.py, triton_backend.py: KiB); the adapter slots "
                    "(lora/mem_pool.py) are the same for every backend",
    "triton_attention_reduce_in_fp32": "the reduction dtype of the double-sparsity attention backend, per forward "
                                       "(layers/attention/double_sparsity_backend.py up to 0.5.22; 0.5.23 reads it "
                                       "nowhere)",
    "eplb_algorithm": "which rebalancing algorithm EPLB runs (eplb/eplb_manager.py): only with --enable-eplb, which "
                      "kvplan refuses",
    "ep_dispatch_algorithm": "which physical copy of an expert a token goes to (eplb/expert_location.py, "
                             "eplb_manager.py): copies exist only with --ep-num-redundant-experts, which kvplan refuses",
    "deepep_mode": "DeepEP's dispatch mode, read only under an all-to-all MoE backend (arg_groups/moe_hook.py "
                   "_handle_a2a_moe, layers/moe/token_dispatcher/deepep.py): --moe-a2a-backend, which kvplan refuses",
    # issue 28, second pass: read where SGLang 0.5.23 uses each
    **dict.fromkeys(("asr_max_buffer_seconds", "asr_max_concurrent_sessions"),
                    "realtime transcription sessions in the API server (entrypoints/openai/realtime/session.py, "
                    "serving_transcription.py): CPU side"),
    "constrained_json_max_whitespace_cnt": "how a JSON schema is compiled to a grammar (constrained/"
                                           "base_grammar_backend.py): CPU side",
    "enable_strict_thinking": "the grammar of a reasoning model's thinking section (constrained/"
                              "reasoner_grammar_backend.py): the per-batch bitmask is made at decode time either way",
    "strip_thinking_cache": "which of a finished request's tokens stay in the radix cache (managers/schedule_batch.py, "
                            "mem_cache/common.py): run time, in a pool sized at start-up",
    "warmups": "extra warm-up requests the HTTP server sends once the pool is allocated (entrypoints/http_server.py)",
    "debug_tensor_dump_input_file": "the warm-up request's input read from a file (entrypoints/http_server.py), once "
                                    "the pool is allocated",
    "use_ray": "the scheduler processes launched as Ray actors (arg_groups/parallel_hook.py, serving_hook.py check it): "
               "where a rank runs, not what it allocates",
    "custom_weight_loader": "loaders allowed for weight updates at run time (model_executor/model_runner.py, "
                            "startup_weight_load.py): the weights loaded at start are the checkpoint's",
    "mlx_enable_sampling": "sampling on Apple's MLX backend (hardware_backend/mlx/): not a CUDA launch",
    **dict.fromkeys(("image_processor_backend", "disable_fast_image_processor"),
                    "how the tokenizer process preprocesses images at request time (multimodal/processors/"
                    "base_processor.py, utils/hf_transformers/processor.py: pil keeps it on the CPU); the "
                    "scheduler's pool is sized before any request"),
    "mm_preprocess_cache_size_mb": "the tokenizer workers' CPU cache of preprocessed media (multimodal/processors/"
                                   "base_processor.py: \"its own CPU cache\")",
    "enable_precise_embedding_interpolation": "a flag of the vision position embedding's interpolation "
                                              "(models/qwen3_vl.py align_corners): the same tensors",
    "enable_dp_attention_local_control_broadcast": "how control messages reach DP-attention ranks (managers/"
                                                   "data_parallel_controller.py, scheduler_components/"
                                                   "request_receiver.py)",
    "mooncake_ib_device": "which RDMA NIC the Mooncake transfer engine uses (distributed/device_communicators/"
                          "mooncake_transfer_engine.py)",
    **dict.fromkeys(("disable_flashinfer_autotune", "flashinfer_autotune_skip_ops"),
                    "FlashInfer's kernel autotune, run by the CUDA-graph runners after the pool is sized "
                    "(model_executor/runner/flashinfer_autotune.py): which kernels, not the pool"),
    **dict.fromkeys(("radix_eviction_policy", "radix_eviction_policy_config"),
                    "the order cached prefixes leave the radix tree (mem_cache/evict_policy.py: Python strategies, "
                    "no tensors): the same pool"),
    "prefill_max_requests": ("the scheduler's cap on requests per prefill batch (managers/schedule_policy.py); "
                             "model_executor/model_runner_components/kv_pool_runtime.py reads it only with "
                             "--max-mamba-cache-size, refused"),
    **dict.fromkeys(("hicache_storage_prefetch_retry_max_attempts", "hicache_storage_prefetch_retry_poll_interval",
                     "hicache_storage_backend_extra_config"),
                    "HiCache's storage backend: its prefetch retries (managers/scheduler.py) and its config "
                    "(mem_cache/storage/); only with --hicache-storage-backend, which kvplan refuses"),
    "lora_eviction_policy": "which adapter leaves a GPU slot when another is needed (lora/lora_manager.py): the "
                            "slots are --max-loras-per-batch's either way",
    "max_loaded_loras": "a cap on the adapters loaded in host memory (managers/tokenizer_control_mixin.py): the GPU "
                        "slots are --max-loras-per-batch's",
    "lora_drain_wait_threshold": "how long the scheduler waits to drain an adapter (managers/scheduler.py)",
    "lora_strict_loading": "whether an adapter's unexpected weights are an error (lora/lora_manager.py): a check at "
                           "load",
    "enable_lora_overlap_loading": "adapters pinned in host memory and copied on a side stream (lora/mem_pool.py; "
                                   "arg_groups/lora_hook.py: \"requires pinning LoRA adapter weights in CPU "
                                   "memory\"): the GPU slots are --max-loras-per-batch's",
    "max_lora_chunk_size": "csgmv's segment size (lora/backend/chunked_backend.py: int32 index arrays, KiB); the "
                           "adapter slots (lora/mem_pool.py) are the same",
    # --disable-cuda-graph-padding: every decode batch size 1 ... max_bs captured (arg_groups/cuda_graph_hook.py
    # generate_decode_cuda_graph_batch_sizes; server_args.py _generate_cuda_graph_batch_sizes in 0.5.10,
    # _generate_decode_cuda_graph_batch_sizes in 0.5.16), max_bs
    # unchanged; the default fraction's graph reserve reads max_bs only (arg_groups/memory_hook.py
    # reserve_for_graph_mb: 2 MiB x max_bs; server_args.py: cuda_graph_max_bs x 2 from 0.5.3), and the graphs are
    # captured after the pool is sized
    "disable_cuda_graph_padding": "every decode batch size up to the same max captured (arg_groups/cuda_graph_hook.py"
                                  "); the default fraction's reserve reads the max only (memory_hook.py "
                                  "reserve_for_graph_mb), and capture comes after the pool",
}


def classified(dest: str) -> bool:
    """Whether kvplan has read what an option does to GPU memory (modelled, refused by name, or none)."""
    return (dest in MODELLED or dest in NOT_MODELLED or dest in MOVES_DEFAULT_FRACTION or dest in FEATURE_OPTIONS
            or dest in READ_HERE or dest in NO_GPU_MEMORY or dest in ONLY_WITH or dest in DRAFT_ONLY)


def unmodelled(args: LaunchArgs, *, ranks: int | None = None, fraction: bool | None = None) -> list[tuple[str, str]]:
    """(flag as written, why) for each set option that changes memory in ways kvplan does not model, and for each
    option kvplan has not classified at all (the closed world: cannot judge, never passed over). `ranks`: the GPUs
    of one replica (TP x PP) where kvplan's own flags give them; else the launch's own --tp-size x --pp-size (1 each
    when not given, as SGLang reads it); `fraction`: whether a --mem-fraction-static is given, where kvplan's own
    flags can give it (None: the launch's own)."""
    out = [(args.written.get(dest, "--" + dest.replace("_", "-")),
            f"what it does to GPU memory was not read from SGLang {MIRRORS}'s source")
           for dest in args.values if not classified(dest)]
    for dest, (default, why) in NOT_MODELLED.items():
        if not args.given(dest):
            continue
        value = args.get(dest)
        if dest in AUTO_BOOLS:
            out.append((args.written.get(dest, "--" + dest.replace("_", "-")), why))
            continue
        if value in (default, None, False) or (isinstance(default, str) and str(value) == default):
            continue
        if dest in ("load_format", "speculative_draft_load_format") and value in ("auto", "safetensors", "pt"):
            continue
        if dest == "offload_group_size" and isinstance(value, int) and value <= 0:
            continue  # utils/offloader.py: layer-group offload only when it is > 0 (0.5.23's default is -1)
        if (dest, value) in (("device", "cuda"), ("model_impl", "sglang"), ("revision", "main"),
                             ("speculative_draft_model_revision", "main")):
            continue  # SGLang's own choice on a GPU, and the revision kvplan reads
        out.append((args.written.get(dest, "--" + dest.replace("_", "-")), why))
    if fraction is None:
        fraction = args.given("mem_fraction_static")
    if not fraction:
        out += [(args.written.get(dest, "--" + dest.replace("_", "-")),
                 "it moves the default --mem-fraction-static (a reserve formula on the CUDA-graph batch sizes); give "
                 "--mem-fraction-static to judge it") for dest in MOVES_DEFAULT_FRACTION if args.given(dest)][:1]
    extra = args.get("model_loader_extra_config")
    if extra is not None:
        keys = _loader_extra_keys(extra)
        if keys is None or not keys <= LOADER_EXTRA_KEYS:
            out.append((args.written.get("model_loader_extra_config", "--model-loader-extra-config"),
                        "keys SGLang's default loader does not take (model_loader/loader.py "
                        "_validate_default_loader_extra_config reads enable_multithread_load and num_threads only)"))
    if ranks is None:
        ranks = (args.get("tp_size") or 1) * (args.get("pp_size") or 1)
    if ranks > 1:
        out += [(args.written.get(dest, "--" + dest.replace("_", "-")), why)
                for dest, why in MULTI_GPU_ONLY.items() if args.get(dest)]
    for dest in ("attention_backend", "decode_attention_backend", "prefill_attention_backend"):
        backend = args.get(dest)
        if backend is not None and backend not in PAGE_ONE_BACKENDS and not args.given("page_size"):
            out.append((args.written.get(dest, "--" + dest.replace("_", "-")),
                        f"the {backend} backend sets its own page size"))
    return out


def _loader_extra_keys(text: Any) -> frozenset[str] | None:
    """The keys of a --model-loader-extra-config JSON object (SGLang json.loads it: configs/load_config.py); None
    when it is not one."""
    import json  # on first use, as in _json

    try:
        data = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return None
    return frozenset(data) if isinstance(data, Mapping) else None
