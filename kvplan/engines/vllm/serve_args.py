"""`vllm serve` arguments read the way vLLM 0.19.0 reads them: from a `--config` YAML file or a command line.

vLLM builds its `serve` parser from EngineArgs, FrontendArgs and the serve subcommand
(vllm/engine/arg_utils.py EngineArgs.add_cli_args, vllm/entrypoints/openai/cli_args.py
make_arg_parser, vllm/entrypoints/cli/serve.py). The table below is that parser's option list,
dumped from vLLM 0.19.0's own parser object (every action's option strings, value type and
choices), so an option vLLM accepts is accepted here and anything else is refused with a suggestion.

How vLLM turns a config file into arguments (vllm/utils/argparse_utils.py
FlexibleArgumentParser.load_config_file and parse_args), mirrored here:
  - each key becomes `--key`; underscores in the name become dashes (`max_model_len` works);
  - `true` adds the bare flag, `false` adds nothing (so `enforce-eager: false` is vLLM's default);
  - a list adds its items as separate values, a mapping is passed as JSON, anything else as str(value),
    which is why `tensor-parallel-size: 4.0` is refused (int('4.0') fails in vLLM too);
  - argparse accepts an unambiguous prefix of an option (`--max-model` for `--max-model-len`).
Token counts use vLLM's human_readable_int: 1k = 1000, 1K = 1024, 25.6k = 25600, no decimals with
binary suffixes.

This module imports no yaml, typer or rich; it turns text and mappings into a ServeArgs record.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable, Mapping

from kvplan.core.errors import InputError, did_you_mean
from kvplan.engines.vllm import releases

# The vLLM release lines whose `serve` options are mirrored are kvplan/engines/vllm/releases.py's; `version` below is
# a line ("0.19", "0.33"), the key of the table's only= marks.
DEFAULT_VERSION = releases.DEFAULT.line

# One table for both releases: `kind  flags...  [choices=a|b|...]  [only=RELEASE]`; the first flag is the long
# name, a flag written !--x sets a switch off, and a line marked only=0.19 or only=0.33 is an option of (or the
# spelling in) that release alone; every other line is in both.
#   flag: an on/off switch     true: store_true        int, float, str: one value
#   hint: vLLM's human_readable_int                    hint_auto: that, or -1 / auto (max-model-len)
#   opt_*: also "None" or "" for None                  json: a JSON object (a mapping in YAML)
#   list_*: one or more values                         optarg: zero or one value    append: repeatable
#   config: another config file
# 0.19 switches are argparse's BooleanOptionalAction (--x / --no-x). 0.33 registers EnableDisableAction in its
# place (vllm/utils/argparse_utils.py FlexibleArgumentParser.__init__), which also takes --disable-x for
# --enable-x and --enable-x for --disable-x: _ENABLE_DISABLE releases derive that inverse; the table leaves it out.
_INVERSE_PREFIXES = {"--enable-": "--disable-", "--disable-": "--enable-"}
_TABLE = """
    true       --headless
    int        --api-server-count -asc
    config     --config
    true       --grpc  only=0.33
    list_str   --lora-modules
    str        --chat-template
    str        --chat-template-content-format  choices=auto|openai|string
    flag       --trust-request-chat-template !--no-trust-request-chat-template
    flag       --trust-request-mm-kwargs !--no-trust-request-mm-kwargs  only=0.33
    json       --default-chat-template-kwargs
    json       --reasoning-effort-map  only=0.33
    str        --response-role
    flag       --return-tokens-as-token-ids !--no-return-tokens-as-token-ids
    flag       --enable-auto-tool-choice !--no-enable-auto-tool-choice
    flag       --exclude-tools-when-tool-choice-none !--no-exclude-tools-when-tool-choice-none
    str        --tool-call-parser
    str        --tool-parser-plugin
    str        --tool-strict-level  choices=auto|function|parameter  only=0.33
    str        --tool-server
    str        --log-config-file  only=0.19
    opt_int    --max-log-len
    flag       --enable-prompt-tokens-details !--no-enable-prompt-tokens-details
    flag       --enable-per-request-metrics !--no-enable-per-request-metrics  only=0.33
    flag       --enable-server-load-tracking !--no-enable-server-load-tracking
    flag       --enable-force-include-usage !--no-enable-force-include-usage
    int        --sse-keep-alive-interval  only=0.33
    flag       --enable-tokenizer-info-endpoint !--no-enable-tokenizer-info-endpoint
    flag       --enable-log-outputs !--no-enable-log-outputs
    flag       --enable-log-deltas !--no-enable-log-deltas
    flag       --cohere-is-reasoning-model !--no-cohere-is-reasoning-model  only=0.33
    str        --cohere-format  only=0.33
    str        --anthropic-disabled-thinking-effort  choices=auto|high|low|max|medium|none|xhigh  only=0.33
    flag       --log-error-stack !--no-log-error-stack
    flag       --tokens-only !--no-tokens-only
    flag       --enable-scale-out !--no-enable-scale-out  only=0.33
    str        --fingerprint-mode  choices=custom|full|hash|none  only=0.33
    str        --fingerprint-value  only=0.33
    str        --host
    int        --port
    opt_int    --grpc-port  only=0.33
    int        --data-parallel-supervisor-port  only=0.33
    float      --dp-supervisor-probe-interval-s  only=0.33
    float      --dp-supervisor-probe-timeout-s  only=0.33
    int        --dp-supervisor-probe-failure-threshold  only=0.33
    str        --uds
    str        --uvicorn-log-level  choices=critical|debug|error|info|trace|warning
    flag       --disable-uvicorn-access-log !--no-disable-uvicorn-access-log
    str        --disable-access-log-for-endpoints
    flag       --allow-credentials !--no-allow-credentials
    json       --allowed-origins
    json       --allowed-methods
    json       --allowed-headers
    list_str   --api-key
    str        --ssl-keyfile
    str        --ssl-certfile
    str        --ssl-ca-certs
    flag       --enable-ssl-refresh !--no-enable-ssl-refresh
    int        --ssl-cert-reqs
    str        --ssl-ciphers
    str        --root-path
    append     --middleware
    flag       --enable-request-id-headers !--no-enable-request-id-headers
    flag       --disable-fastapi-docs !--no-disable-fastapi-docs
    int        --h11-max-incomplete-event-size
    int        --h11-max-header-count
    flag       --enable-offline-docs !--no-enable-offline-docs
    flag       --enable-flash-late-interaction !--no-enable-flash-late-interaction  only=0.33
    str        --model
    str        --runner  choices=auto|draft|generate|pooling
    str        --convert  choices=auto|classify|embed|none
    str        --tokenizer
    str        --tokenizer-mode
    flag       --trust-remote-code !--no-trust-remote-code
    str        --dtype  choices=auto|bfloat16|float|float16|float32|half
    int        --seed
    str        --hf-config-path
    str        --allowed-local-media-path
    list_str   --allowed-media-domains
    str        --revision
    str        --code-revision
    str        --tokenizer-revision
    hint_auto  --max-model-len
    str        --quantization -q
    json       --quantization-config  only=0.33
    flag       --allow-deprecated-quantization !--no-allow-deprecated-quantization
    flag       --enforce-eager !--no-enforce-eager
    flag       --enable-return-routed-experts !--no-enable-return-routed-experts
    flag       --return-sampling-mask !--no-return-sampling-mask  only=0.33
    int        --max-logprobs
    str        --logprobs-mode  choices=processed_logits|processed_logprobs|raw_logits|raw_logprobs
    flag       --use-fp64-gumbel !--no-use-fp64-gumbel  only=0.33
    flag       --enable-trace-replay !--no-enable-trace-replay  only=0.33
    flag       --disable-sliding-window !--no-disable-sliding-window
    flag       --disable-cascade-attn !--no-disable-cascade-attn
    flag       --skip-tokenizer-init !--no-skip-tokenizer-init
    flag       --enable-prompt-embeds !--no-enable-prompt-embeds
    list_str   --served-model-name
    str        --config-format
    optarg     --hf-token
    json       --hf-overrides
    json       --model-class-overrides  only=0.33
    json       --pooler-config
    str        --generation-config
    json       --override-generation-config
    flag       --enable-sleep-mode !--no-enable-sleep-mode
    str        --sleep-mode-backend  only=0.33
    flag       --sleep-mode-offload-cudagraph !--no-sleep-mode-offload-cudagraph  only=0.33
    list_str   --sleep-preserve-parameter-names  only=0.33
    flag       --enable-cumem-allocator !--no-enable-cumem-allocator  only=0.33
    flag       --enable-nccl-comm-suspend !--no-enable-nccl-comm-suspend  only=0.33
    str        --model-impl
    str        --override-attention-dtype  only=0.19
    list_str   --logits-processors
    str        --io-processor-plugin
    int        --renderer-num-workers
    str        --load-format
    str        --download-dir
    str        --safetensors-load-strategy  only=0.19
    str        --safetensors-load-strategy  choices=eager|lazy|prefetch|torchao  only=0.33
    int        --safetensors-prefetch-num-threads  only=0.33
    hint       --safetensors-prefetch-block-size  only=0.33
    json       --model-loader-extra-config
    list_str   --ignore-patterns
    flag       --use-tqdm-on-load !--no-use-tqdm-on-load
    json       --pt-load-map-location
    str        --attention-backend
    str        --mamba-backend  only=0.33
    str        --mamba-ssu-algorithm  choices=auto|horizontal|simple|vertical  only=0.33
    flag       --enable-mamba-cache-stochastic-rounding !--no-enable-mamba-cache-stochastic-rounding  only=0.33
    int        --mamba-cache-philox-rounds  only=0.33
    str        --reasoning-parser
    str        --reasoning-parser-plugin
    str        --distributed-executor-backend
    int        --pipeline-parallel-size -pp
    str        --master-addr
    int        --master-port
    int        --nnodes -n
    int        --node-rank -r
    opt_int    --distributed-timeout-seconds
    opt_int    --cpu-distributed-timeout-seconds  only=0.33
    flag       --numa-bind !--no-numa-bind  only=0.33
    list_int   --numa-bind-nodes  only=0.33
    list_str   --numa-bind-cpus  only=0.33
    str        --device-ids  only=0.33
    int        --tensor-parallel-size -tp
    int        --decode-context-parallel-size -dcp
    str        --dcp-comm-backend  choices=a2a|ag_rs
    flag       --dcp-q-replicate !--no-dcp-q-replicate  only=0.33
    int        --dcp-kv-cache-interleave-size
    int        --cp-kv-cache-interleave-size
    int        --prefill-context-parallel-size -pcp
    int        --data-parallel-size -dp
    int        --data-parallel-rank -dpn
    int        --data-parallel-start-rank -dpr
    int        --data-parallel-size-local -dpl
    str        --data-parallel-address -dpa
    int        --data-parallel-rpc-port -dpp
    str        --data-parallel-backend -dpb
    flag       --data-parallel-hybrid-lb -dph !--no-data-parallel-hybrid-lb
    flag       --data-parallel-external-lb -dpe !--no-data-parallel-external-lb
    true       --data-parallel-multi-port-external-lb -dpm  only=0.33
    flag       --enable-hc-sp !--no-enable-hc-sp  only=0.33
    flag       --enable-expert-parallel -ep !--no-enable-expert-parallel
    flag       --enable-batch-sharded-sampling !--no-enable-batch-sharded-sampling  only=0.33
    flag       --enable-ep-weight-filter !--no-enable-ep-weight-filter
    str        --all2all-backend  choices=allgather_reducescatter|deepep_high_throughput|deepep_low_latency|flashinfer_all2allv|flashinfer_nvlink_one_sided|flashinfer_nvlink_two_sided|mori|naive|nixl_ep|pplx  only=0.19
    str        --all2all-backend  choices=allgather_reducescatter|deepep_high_throughput|deepep_low_latency|deepep_v2|flashinfer_all2allv|flashinfer_nvlink_one_sided|flashinfer_nvlink_two_sided|moonep|mori_high_throughput|mori_low_latency|naive|nixl_ep|pplx  only=0.33
    flag       --enable-dbo !--no-enable-dbo
    flag       --enable-shm-tensor-arena !--no-enable-shm-tensor-arena  only=0.33
    int        --ubatch-size
    flag       --enable-elastic-ep !--no-enable-elastic-ep
    int        --elastic-ep-max-dp-size  only=0.33
    int        --dbo-decode-token-threshold
    int        --dp-sync-interval  only=0.33
    int        --dbo-prefill-token-threshold
    flag       --disable-nccl-for-dp-synchronization !--no-disable-nccl-for-dp-synchronization
    flag       --enable-eplb !--no-enable-eplb
    json       --eplb-config
    str        --expert-placement-strategy  choices=linear|round_robin
    opt_int    --max-parallel-loading-workers
    flag       --ray-workers-use-nsight !--no-ray-workers-use-nsight
    flag       --disable-custom-all-reduce !--no-disable-custom-all-reduce
    str        --worker-cls
    str        --worker-extension-cls
    flag       --enable-fault-tolerance !--no-enable-fault-tolerance  only=0.33
    json       --fault-tolerance-config  only=0.33
    int        --block-size
    float      --gpu-memory-utilization  only=0.19
    float      --gpu-memory-utilization --device-memory-utilization  only=0.33
    opt_hint   --kv-cache-memory-bytes
    str        --kv-cache-dtype  choices=auto|bfloat16|float16|fp8|fp8_ds_mla|fp8_e4m3|fp8_e5m2|fp8_inc  only=0.19
    str        --kv-cache-dtype  choices=auto|float16|bfloat16|fp8|fp8_e4m3|fp8_e5m2|fp8_inc|fp8_ds_mla|nvfp4_ds_mla|turboquant_k8v4|turboquant_4bit_nc|turboquant_k3v4_nc|turboquant_3bit_nc|octave_k3v4|octave_k3v3|octave_k3v3_compact|ultraquant_4bit|int4_per_token_head|int8_per_token_head|fp8_per_token_head|nvfp4|nvfp4_4over6  only=0.33
    opt_int    --num-gpu-blocks-override
    flag       --enable-prefix-caching !--no-enable-prefix-caching
    str        --prefix-caching-hash-algo  choices=sha256|sha256_cbor|xxhash|xxhash_cbor
    flag       --calculate-kv-scales !--no-calculate-kv-scales  only=0.19
    opt_int    --prefix-cache-retention-interval  only=0.33
    list_str   --kv-cache-dtype-skip-layers
    flag       --kv-sharing-fast-prefill !--no-kv-sharing-fast-prefill
    str        --mamba-cache-dtype  choices=auto|float16|float32  only=0.19
    str        --mamba-ssm-cache-dtype  choices=auto|float16|float32  only=0.19
    flag       --swa-bounded-replay !--no-swa-bounded-replay  only=0.33
    str        --mamba-cache-dtype  choices=auto|bfloat16|float16|float32  only=0.33
    str        --mamba-ssm-cache-dtype  choices=auto|bfloat16|float16|float32  only=0.33
    opt_int    --mamba-block-size
    str        --mamba-cache-mode  choices=align|all|none  only=0.19
    opt_int    --prefix-match-unit  only=0.33
    str        --mamba-cache-mode  choices=align|none  only=0.33
    flag       --enable-mamba-shared-prefix-checkpoint !--no-enable-mamba-shared-prefix-checkpoint  only=0.33
    int        --replayssm-buffer-len  only=0.33
    flag       --use-replayssm !--no-use-replayssm  only=0.33
    opt_float  --kv-offloading-size
    str        --kv-offloading-backend  choices=lmcache|native
    str        --offload-backend  choices=auto|prefetch|uva
    float      --cpu-offload-gb
    list_str   --cpu-offload-params
    int        --offload-group-size
    int        --offload-num-in-group
    int        --offload-prefetch-step
    list_str   --offload-params
    flag       --language-model-only !--no-language-model-only
    json       --limit-mm-per-prompt
    flag       --enable-mm-embeds !--no-enable-mm-embeds
    json       --media-io-kwargs
    json       --mm-processor-kwargs
    float      --mm-processor-cache-gb
    str        --mm-processor-cache-type  choices=lru|shm
    str        --mm-hasher-algorithm  choices=blake3|sha256|sha512  only=0.33
    int        --mm-shm-cache-max-object-size-mb
    flag       --mm-encoder-only !--no-mm-encoder-only
    str        --mm-encoder-tp-mode  choices=data|weights
    str        --mm-encoder-attn-backend
    str        --mm-encoder-attn-dtype  choices=fp8  only=0.33
    str        --mm-encoder-fp8-scale-path  only=0.33
    str        --mm-encoder-fp8-scale-save-path  only=0.33
    float      --mm-encoder-fp8-scale-save-margin  only=0.33
    flag       --interleave-mm-strings !--no-interleave-mm-strings
    flag       --skip-mm-profiling !--no-skip-mm-profiling
    opt_float  --video-pruning-rate
    str        --video-pruning-method  choices=evs|vidcom2  only=0.33
    str        --mm-tensor-ipc  choices=direct_rpc|torch_shm
    str        --mm-processor-device  choices=auto|cpu  only=0.33
    float      --mm-ipc-gpu-memory-gb  only=0.33
    flag       --mm-device-do-normalize !--no-mm-device-do-normalize  only=0.33
    flag       --enable-lora !--no-enable-lora
    int        --max-loras
    int        --max-lora-rank  choices=1|8|16|32|64|128|256|320|512
    str        --lora-dtype  choices=auto|bfloat16|float16
    flag       --enable-tower-connector-lora !--no-enable-tower-connector-lora
    opt_int    --max-cpu-loras
    flag       --fully-sharded-loras !--no-fully-sharded-loras
    list_str   --lora-target-modules
    json       --default-mm-loras
    flag       --specialize-active-lora !--no-specialize-active-lora
    flag       --enable-mixed-moe-lora-format !--no-enable-mixed-moe-lora-format  only=0.33
    flag       --enable-moe-shared-loras !--no-enable-moe-shared-loras  only=0.33
    opt_int    --max-lora-cls-labels  only=0.33
    json       --logging-config  only=0.33
    str        --log-level  choices=CRITICAL|ERROR|WARNING|INFO|DEBUG|NOTSET  only=0.33
    str        --log-config-file  only=0.33
    str        --show-hidden-metrics-for-version
    str        --otlp-traces-endpoint
    list_str   --collect-detailed-traces  choices=all|model|worker|None|model,worker|model,all|worker,model|worker,all|all,model|all,worker  only=0.19
    list_str   --collect-detailed-traces  choices=all|model|worker  only=0.33
    str        --per-request-spec-decode-metrics  choices=detailed|none|summary  only=0.33
    flag       --kv-cache-metrics !--no-kv-cache-metrics
    float      --kv-cache-metrics-sample
    json       --custom-histogram-buckets  only=0.33
    flag       --cudagraph-metrics !--no-cudagraph-metrics
    flag       --enable-layerwise-nvtx-tracing !--no-enable-layerwise-nvtx-tracing
    flag       --enable-mfu-metrics !--no-enable-mfu-metrics
    flag       --enable-logging-iteration-details !--no-enable-logging-iteration-details
    str        --jit-monitor-mode  choices=error|warn  only=0.33
    flag       --jit-monitor-verbose !--no-jit-monitor-verbose  only=0.33
    hint       --max-num-batched-tokens
    opt_hint   --max-num-scheduled-tokens  only=0.33
    int        --max-num-seqs
    int        --max-num-partial-prefills  only=0.19
    int        --max-long-partial-prefills  only=0.19
    opt_int    --max-num-active-seqs  only=0.33
    opt_int    --max-num-queued-reqs  only=0.33
    opt_hint   --max-num-queued-tokens  only=0.33
    int        --long-prefill-token-threshold
    flag       --long-prefill-token-threshold-adaptive !--no-long-prefill-token-threshold-adaptive  only=0.33
    str        --scheduling-policy  choices=fcfs|priority
    flag       --enable-chunked-prefill !--no-enable-chunked-prefill
    flag       --disable-chunked-mm-input !--no-disable-chunked-mm-input
    str        --scheduler-cls
    flag       --scheduler-reserve-full-isl !--no-scheduler-reserve-full-isl
    float      --watermark  only=0.33
    int        --prefill-schedule-interval  only=0.33
    flag       --disable-hybrid-kv-cache-manager !--no-disable-hybrid-kv-cache-manager
    flag       --async-scheduling !--no-async-scheduling
    int        --stream-interval
    list_int   --cudagraph-capture-sizes
    int        --max-cudagraph-capture-size
    json       --ir-op-priority  only=0.33
    flag       --enable-flashinfer-autotune !--no-enable-flashinfer-autotune
    str        --moe-backend  choices=aiter|auto|cutlass|deep_gemm|flashinfer_cutedsl|flashinfer_cutlass|flashinfer_trtllm|marlin|triton  only=0.19
    flag       --monokernel !--no-monokernel  only=0.33
    str        --moe-backend  choices=aiter|aiter_mega_moe|aiter_triton_mxfp4_bf16|aiter_triton_mxfp4_mxfp4|auto|b12x|batched_triton|cutlass|deep_gemm|deep_gemm_mega_moe|emulation|flashinfer_b12x|flashinfer_cutedsl|flashinfer_cutlass|flashinfer_moe_ep_cutedsl|flashinfer_moe_ep_mega_deep_gemm|flashinfer_trtllm|flydsl|hpc|humming|marlin|rdna3|triton|triton_unfused  only=0.33
    str        --linear-backend  choices=aiter|auto|b12x|conch|cutlass|deep_gemm|emulation|exllama|fbgemm|flashinfer_b12x|flashinfer_cudnn|flashinfer_cutedsl|flashinfer_cutlass|flashinfer_trtllm|humming|machete|marlin|torch|triton|xpu|xpu_woq  only=0.33
    str        --sparse-indexer-topk-backend  choices=aiter|auto|cooperative|deep_select|flashinfer|per_row|persistent|torch  only=0.33
    json       --speculative-config -sc
    str        --spec-method  choices=bailing_hybrid_mtp|bailing_hybrid_v3_mtp|custom_class|deepseek_mtp|dflash|dots3_note_mtp|draft_model|dspark|eagle|eagle3|ernie_mtp|exaone4_5_mtp|exaone_moe_mtp|extract_hidden_states|gemma4_mtp|glm4_moe_lite_mtp|glm4_moe_mtp|glm5_next_mtp|glm_ocr_mtp|hy_v3_mtp|hy_v4_mtp|inkling_mtp|kimi_k3_mtp|longcat_flash_mtp|mimo_mtp|mimo_v2_mtp|minimax_m3_mtp|mtp|nemotron_h_mtp|ngram|ngram_gpu|pangu_ultra_moe_mtp|qwen3_5_mtp|qwen3_next_mtp|qwen4_exp_mtp|step3p5_mtp|step5_mtp|suffix  only=0.33
    str        --spec-model  only=0.33
    int        --spec-tokens  only=0.33
    json       --watermark-config  only=0.33
    json       --diffusion-config -dc  only=0.33
    json       --kv-transfer-config
    json       --kv-events-config
    json       --ec-transfer-config
    json       --ec-manager-config  only=0.33
    json       --compilation-config -cc
    json       --attention-config -ac
    json       --engram-config  only=0.33
    json       --reasoning-config
    json       --kernel-config
    json       --additional-config
    json       --structured-outputs-config
    json       --aux-output-config  only=0.33
    json       --profiler-config
    json       --watchdog-config  only=0.33
    str        --optimization-level
    str        --performance-mode  choices=balanced|interactivity|throughput
    json       --weight-transfer-config
    true       --disable-log-stats
    true       --aggregate-engine-logging
    flag       --fail-on-environ-validation !--no-fail-on-environ-validation
    int        --shutdown-timeout
    str        --gdn-prefill-backend  choices=flashinfer|triton  only=0.19
    str        --gdn-prefill-backend  choices=flashinfer|triton|cutedsl|aiter_flydsl|sycl  only=0.33
    str        --kda-prefill-backend  choices=auto|triton|flashkda|flashinfer|fused  only=0.33
    str        --kda-decode-backend  choices=auto|native|flashinfer|triton  only=0.33
    flag       --enable-log-requests !--no-enable-log-requests
    true       --grpc  only=0.19
"""


@dataclass(frozen=True)
class Option:
    dest: str
    kind: str
    flags: tuple[str, ...]
    choices: tuple[str, ...] | None

    @property
    def name(self) -> str:
        """The long option without dashes, as written in a config file: 'max-model-len'."""
        return self.flags[0][2:]


def check_version(version: str | None) -> str:
    """Any release of a mirrored line ('0.19', '0.19.5', 'v0.33.0') -> its line; None -> the default line."""
    return releases.release(version, where="--vllm-version").line


@lru_cache(maxsize=None)
def options(version: str = DEFAULT_VERSION) -> dict[str, Option]:
    """Every `vllm serve` option of that vLLM release, by dest ('max_model_len')."""
    out = {}
    for line in _TABLE.strip().splitlines():
        parts = line.split()
        kind, rest = parts[0], parts[1:]
        only = next((p.split("=", 1)[1] for p in rest if p.startswith("only=")), None)
        if only is not None and only != version:
            continue
        choices = next((tuple(p.split("=", 1)[1].split("|")) for p in rest if p.startswith("choices=")), None)
        flags = tuple(p for p in rest if not p.startswith(("choices=", "only=")))
        if kind == "flag" and releases.release(version).enable_disable_switches:
            on = tuple(f for f in flags if not f.startswith("!"))
            inverses = tuple("!" + inverse + f.removeprefix(prefix) for f in on
                             for prefix, inverse in _INVERSE_PREFIXES.items() if f.startswith(prefix))
            flags = on + inverses + flags[len(on):]
        dest = flags[0][2:].replace("-", "_")
        out[dest] = Option(dest, kind, flags, choices)
    return out


@lru_cache(maxsize=None)
def _by_flag(version: str) -> dict[str, Option]:
    return {flag.lstrip("!"): opt for opt in options(version).values() for flag in opt.flags}


# ------------------------------------------------------------------ vLLM's value parsers

def human_readable_int(value: str) -> int:
    """vLLM's human_readable_int (vllm/utils/argparse_utils.py in 0.33.0; engine/arg_utils.py before): '1k' = 1000,
    '1K' = 1024, '25.6k' = 25600, '1.5K' refused. Decimal suffixes go through float as in vLLM, so the rare value
    that float rounds down ('1.001k' -> 1000) comes out as vLLM itself reads it. The text is read by kvplan's one
    number parser (kvplan.core.units): ASCII digits, no commas, bounded length (int() would take more)."""
    from kvplan.core.units import human_readable_int as parse

    try:
        return parse(value)
    except InputError as err:
        if "binary suffix" in err.what:  # vLLM's own ArgumentTypeError for '1.5K'
            raise argparse.ArgumentTypeError(err.what) from None
        raise ValueError(value) from None  # argparse: "invalid human_readable_int value: 'x'", as from vLLM


human_readable_int.__name__ = "human_readable_int"


def human_readable_int_or_auto(value: str) -> int:
    """max-model-len: a human_readable_int, or -1 / 'auto' (fit the length to the memory)."""
    value = value.strip()
    if value == "-1" or value.lower() == "auto":
        return -1
    return human_readable_int(value)


def _exact_float(value: str) -> Fraction | float:
    """argparse type for float options: checked as vLLM checks it (float()), kept exact when finite, so that 0.9 x
    capacity picks up no binary rounding. The exact value comes from kvplan's number parser, which bounds the
    exponent: Fraction(Decimal('1e999999999')) would expand a billion-digit integer."""
    from kvplan.core.units import parse_decimal

    if not value.strip().isascii():
        raise ValueError(value)  # float() would read full-width digits; argparse: "invalid float value"
    number = float(value)
    if not math.isfinite(number):
        return number  # inf / nan: kept as vLLM has them, refused later
    try:
        return parse_decimal(value, what=None, percent=False)[0]
    except InputError:  # an exponent past 3 digits: the float (0.0 or a huge value) is what vLLM has
        return number


def _optional(inner: Callable[[str], Any]) -> Callable[[str], Any]:
    """vLLM's optional_type: '' and 'None' mean None."""

    def parse(value: str):
        return None if value in ("", "None") else inner(value)

    parse.__name__ = getattr(inner, "__name__", "value")
    return parse


def _int(value: str) -> int:
    """vLLM's int(value), read by kvplan's number parser (ASCII digits, bounded length)."""
    from kvplan.core.units import parse_int

    try:
        return parse_int(value, what=None, minimum=None)
    except InputError:
        raise ValueError(value) from None  # argparse words it as vLLM's parser does: "invalid int value: '4.0'"


_int.__name__ = "int"
_exact_float.__name__ = "float"

_TYPES: dict[str, Callable[[str], Any]] = {
    "int": _int, "float": _exact_float, "str": str, "hint": human_readable_int, "hint_auto": human_readable_int_or_auto,
    "opt_int": _optional(_int), "opt_float": _optional(_exact_float), "opt_hint": _optional(human_readable_int),
    "json": str, "list_str": str, "list_int": _int, "optarg": str, "append": str, "config": str,
}


class _ParseError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print and exit; kvplan reports it as one InputError
        raise _ParseError(message)


@lru_cache(maxsize=None)
def _parser(version: str) -> _Parser:
    parser = _Parser(prog="vllm serve", add_help=False, argument_default=argparse.SUPPRESS, exit_on_error=False)
    parser.add_argument("model_tag", nargs="?")
    for opt in options(version).values():
        kwargs: dict[str, Any] = {"dest": opt.dest}
        if opt.kind == "flag":
            on = [f for f in opt.flags if not f.startswith("!")]
            off = [f[1:] for f in opt.flags if f.startswith("!")]
            parser.add_argument(*on, dest=opt.dest, action="store_const", const=True)
            if off:
                parser.add_argument(*off, dest=opt.dest, action="store_const", const=False)
            continue
        if opt.kind == "true":
            kwargs["action"] = "store_true"
        else:
            kwargs["type"] = _TYPES[opt.kind]
            if opt.kind.startswith("list_"):
                kwargs["nargs"] = "+"
            elif opt.kind == "optarg":
                kwargs.update(nargs="?", const=True)
            elif opt.kind == "append":
                kwargs["action"] = "append"
            if opt.choices is not None:
                kwargs["choices"] = [_TYPES[opt.kind](c) for c in opt.choices]
        parser.add_argument(*opt.flags, **kwargs)
    return parser


# ------------------------------------------------------------------ the parsed result

@dataclass(frozen=True)
class ServeArgs:
    """The options a `vllm serve` launch sets explicitly (absent ones take vLLM's defaults)."""

    values: Mapping[str, Any]  # dest -> value as vLLM's parser produces it
    written: Mapping[str, str]  # dest -> the key or flag as the user wrote it (for error locations)
    notes: tuple[str, ...] = field(default=())
    version: str = DEFAULT_VERSION  # the vLLM release whose parser read it

    def get(self, dest: str, default: Any = None) -> Any:
        return self.values.get(dest, default)

    def given(self, dest: str) -> bool:
        return dest in self.values

    @property
    def model(self) -> str | None:
        return self.values.get("model")


def lookup(key: str, *, where: str, version: str = DEFAULT_VERSION) -> tuple[Option, str, str | None]:
    """The option a config key or command-line flag names, as vLLM's parser resolves it.

    Returns the option, the flag to hand to the parser ('--no-x' stays negative) and a note when the
    key was an abbreviation; refuses unknown and ambiguous keys.
    """
    flag = key if key.startswith("-") else "--" + key
    if flag.startswith("--"):
        # vLLM's parse_args turns underscores into dashes up to the first '.'
        flag = "--" + re.sub(r"^[^.]*", lambda m: m.group(0).replace("_", "-"), flag[2:], count=1)
    base = flag.split(".", 1)[0] if flag.startswith("--") else flag
    index = _by_flag(version)
    if base in index:
        opt = index[base]
        if base != flag and opt.kind != "json":
            raise InputError(f"{key!r}: only JSON options take dotted sub-keys", where=where)
        return opt, base, None
    if flag.startswith("--") and len(base) > 2:
        # argparse's allow_abbrev, which vLLM leaves on: a unique prefix selects the option
        starts = sorted(f for f in index if f.startswith(base))
        if len(starts) == 1:
            return index[starts[0]], starts[0], f"{key!r} is an abbreviation of {starts[0][2:]!r} (vLLM's parser accepts it)"
        if len(starts) > 1:
            raise InputError(f"{key!r} is ambiguous: it could be " + ", ".join(s[2:] for s in starts[:6])
                             + (", ..." if len(starts) > 6 else ""), where=where, hint="write the full option name")
    longs = sorted({o.name for o in options(version).values()})
    plain = key.lstrip("-").replace("_", "-")
    raise InputError(f"vLLM {releases.release(version).mirrors} has no serve option {key!r}", where=where,
                     hint=did_you_mean(plain, longs) or "see `vllm serve --help`")


def _argv_from_mapping(data: Any, *, where: str, version: str) -> tuple[list[str], dict[str, str], list[str]]:
    """vLLM's load_config_file: a mapping -> argv; also the key each flag came from, and notes."""
    if not isinstance(data, Mapping):
        raise InputError(f"a vLLM config file holds a mapping of option: value, got {type(data).__name__}", where=where)
    argv: list[str] = []
    written: dict[str, str] = {}
    notes: list[str] = []
    for key, value in data.items():
        if not isinstance(key, str):
            raise InputError(f"option names are text, got {key!r}", where=where)
        opt, flag, note = lookup(key, where=f"{where}: {key}", version=version)
        if note:
            notes.append(note)
        if opt.dest in written:
            raise InputError(f"{opt.name!r} is given twice (as {written[opt.dest]!r} and {key!r})", where=f"{where}: {key}")
        written[opt.dest] = key
        if "." in key:
            argv.append(_DOTTED + opt.dest)  # a sub-key of a JSON option: vLLM merges it into the JSON
            continue
        if opt.kind in ("flag", "true") and not isinstance(value, bool):
            # vLLM would pass the value on as a stray positional argument (the model name!)
            raise InputError(f"{key!r} is a switch: write true or false, got {value!r}", where=f"{where}: {key}")
        if isinstance(value, list) and not opt.kind.startswith("list_"):
            raise InputError(f"{key!r} takes one value, got a list", where=f"{where}: {key}")
        if isinstance(value, bool):
            if value:
                argv.append(flag)
            elif releases.release(version).enable_disable_switches and f"--no-{key}" in _by_flag(version):
                argv.append(f"--no-{key}")  # 0.33 passes false on as --no-KEY when that flag exists
        elif isinstance(value, list):
            if value:
                argv.append(flag)
                argv.extend(str(item) for item in value)
        elif isinstance(value, Mapping):
            argv += [flag, json.dumps(value)]
        else:
            argv += [flag, str(value)]
    return argv, written, notes


def _argv_from_command_line(tokens: list[str], *, where: str, load_config: Callable[[str], Any] | None, version: str
                            ) -> tuple[list[str], dict[str, str], list[str]]:
    """Normalise a `vllm serve ...` token list as vLLM's parse_args does; validate every option name."""
    if tokens[:1] == ["vllm"]:
        tokens = tokens[1:]
        if tokens[:1] != ["serve"]:
            raise InputError(f"only `vllm serve` command lines are understood, got `vllm {' '.join(tokens[:1])}`", where=where)
    if tokens[:1] == ["serve"]:
        tokens = tokens[1:]
    argv: list[str] = []
    written: dict[str, str] = {}
    notes: list[str] = []
    config_argv: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("-") or re.fullmatch(r"-\d+(\.\d+)?", token) or token == "-":
            argv.append(token)
            continue
        if token.startswith("-O") and token not in ("-O",):
            level = token[3:] if token[2:3] == "=" else token[2:]  # vLLM: -O3, -O=3 -> --optimization-level 3
            argv += ["--optimization-level", level]
            written["optimization_level"] = token
            continue
        if token == "-O":
            token = "--optimization-level"
        name, eq, inline = token.partition("=")
        opt, flag, note = lookup(name, where=f"{where}: {name}", version=version)
        if note:
            notes.append(note)
        written.setdefault(opt.dest, name)
        if "." in name and name.startswith("--"):
            if not eq and i < len(tokens):
                i += 1  # skip the sub-key's value
            argv.append(_DOTTED + opt.dest)
            continue
        if opt.kind == "config":
            if load_config is None:
                raise InputError("--config is not allowed here", where=f"{where}: --config")
            path = inline if eq else (tokens[i] if i < len(tokens) else None)
            if not eq:
                i += 1
            if path is None:
                raise InputError("--config needs a file", where=f"{where}: --config")
            sub_argv, sub_written, sub_notes = _argv_from_mapping(load_config(path), where=path, version=version)
            config_argv += sub_argv
            for dest, key in sub_written.items():
                written.setdefault(dest, f"{path}: {key}")
            notes += sub_notes
            continue
        argv.append(f"{flag}={inline}" if eq else flag)
    # vLLM inserts a config file's arguments before the command line's, so the command line wins
    return config_argv + argv, written, notes


_DOTTED = "\0dotted:"  # marks a JSON option set through a dotted sub-key (kvplan needs only that it is set)


def _parse(argv: list[str], written: dict[str, str], notes: list[str], *, where: str, positional: bool,
           version: str) -> ServeArgs:
    dotted = [a[len(_DOTTED):] for a in argv if a.startswith(_DOTTED)]
    argv = [a for a in argv if not a.startswith(_DOTTED)]
    try:
        namespace, extra = _parser(version).parse_known_args(argv)
    except (_ParseError, argparse.ArgumentError) as err:
        message = str(err)
        match = re.match(r"argument ([^:]+): (.*)", message)
        key = where
        if match:
            flag = match.group(1).split("/")[0]
            opt = _by_flag(version).get(flag)
            key = f"{where}: {written.get(opt.dest, opt.name) if opt else flag}"
            message = match.group(2)
            if opt is not None and opt.choices and "invalid choice" in message:
                bad = re.search(r"invalid choice: '?([^' ]*)'?", message)
                hint = did_you_mean(bad.group(1), opt.choices) if bad else None
                raise InputError(f"vLLM would refuse it: {message}", where=key, hint=hint) from None
        raise InputError(f"vLLM would refuse it: {message}", where=key) from None
    if extra:
        raise InputError(f"vLLM would refuse it: unrecognized arguments: {' '.join(extra)}", where=where)
    values = dict(vars(namespace))
    tag = values.pop("model_tag", None)
    if tag is not None and not positional:
        raise InputError(f"vLLM would take {tag!r} as the model name: a config file gives every value under its option",
                         where=where)
    if tag is not None:
        if "model" in values and values["model"] != tag:
            raise InputError(f"model given twice: {tag!r} and {values['model']!r}", where=where)
        values["model"] = tag
        written.setdefault("model", "model")
    for dest in dotted:
        values.setdefault(dest, "<set by sub-keys>")
    return ServeArgs(values=values, written=dict(written), notes=tuple(notes), version=version)


def parse_config(data: Any, *, where: str, version: str | None = None) -> ServeArgs:
    """A `vllm serve --config` file's contents (one YAML mapping) -> ServeArgs."""
    version = check_version(version)
    argv, written, notes = _argv_from_mapping(data, where=where, version=version)
    return _parse(argv, written, notes, where=where, positional=False, version=version)


def parse_command_line(text: str, *, where: str = "--vllm-args", load_config: Callable[[str], Any] | None = None,
                       version: str | None = None) -> ServeArgs:
    """'vllm serve meta-llama/Llama-3.1-8B --max-model-len 32K -tp 2' (with or without 'vllm serve')."""
    try:
        tokens = shlex.split(text)
    except ValueError as err:
        raise InputError(f"cannot split the command line: {err}", where=where, hint="check the quotes") from None
    if not tokens:
        raise InputError("empty command line", where=where, hint="e.g. \"serve meta-llama/Llama-3.1-8B --max-model-len 32K\"")
    version = check_version(version)
    argv, written, notes = _argv_from_command_line(tokens, where=where, load_config=load_config, version=version)
    return _parse(argv, written, notes, where=where, positional=True, version=version)


# ------------------------------------------------------------------ what each option does to GPU memory

# Set onto kvplan's EngineRequest (or its model / GPU count) by kvplan.deploy.
MODELLED = frozenset({
    "model", "hf_config_path", "served_model_name", "dtype", "max_model_len", "tensor_parallel_size",
    "pipeline_parallel_size", "data_parallel_size", "gpu_memory_utilization", "kv_cache_memory_bytes",
    "kv_cache_dtype", "block_size", "max_num_seqs", "max_num_batched_tokens", "enable_prefix_caching",
})

# Options that change what vLLM puts in GPU memory in ways kvplan does not model, with vLLM 0.19.0's
# default (from its parser). A launch that sets one to anything else cannot be judged (exit 3): kvplan
# refuses rather than guesses. The reason is given per option.
NOT_MODELLED: dict[str, tuple[Any, str]] = {
    "quantization": (None, "online or forced weight quantization changes the weight bytes by layer type"),
    "cpu_offload_gb": (0, "weights offloaded to CPU memory"),
    "offload_group_size": (0, "weights offloaded to CPU memory"),
    "offload_params": ([], "weights offloaded to CPU memory"),
    "cpu_offload_params": ([], "weights offloaded to CPU memory"),
    "kv_offloading_size": (None, "KV cache offloaded to CPU memory"),
    "num_gpu_blocks_override": (None, "a fixed number of KV blocks instead of the memory budget"),
    "speculative_config": (None, "a draft model's weights and KV cache"),
    "enable_lora": (None, "LoRA adapter weights and buffers"),
    "kv_cache_dtype_skip_layers": ([], "layers with a different KV dtype"),
    "decode_context_parallel_size": (1, "KV cache split across decode context-parallel ranks"),
    "prefill_context_parallel_size": (1, "KV cache split across prefill context-parallel ranks"),
    "hf_overrides": ("{}", "config.json values overridden at load time"),
    "disable_sliding_window": (False, "sliding-window layers cached at full length and max length capped"),
    "mamba_cache_dtype": ("auto", "Mamba state dtype"),
    "mamba_ssm_cache_dtype": ("auto", "Mamba state dtype"),
    "mamba_block_size": (None, "Mamba state block size"),
    "mamba_cache_mode": ("none", "Mamba prefix-cache states"),
    # 0.33: FlashInfer's GDN prefill (the Hopper default) aligns Qwen3-Next / Qwen3.5 blocks to its 64-token
    # checkpoints; kvplan takes the backend from the GPU (kvplan/engines/vllm.py), not from this option
    "gdn_prefill_backend": (None, "the GDN prefill kernel sets Qwen3-Next's attention block and state blocks"),
    "kv_transfer_config": (None, "KV transfer buffers (disaggregated prefill)"),
    "language_model_only": (False, "the vision tower is not loaded"),
    "mm_encoder_only": (False, "only the multimodal encoder is loaded"),
    "runner": ("auto", "pooling and draft runners allocate no generation KV cache"),
    "convert": ("auto", "a converted (pooling) model"),
    "override_attention_dtype": (None, "attention computed in another dtype"),
    "attention_backend": (None, "the backend sets the KV block size (e.g. FlashMLA 64)"),
    "attention_config": (None, "the backend sets the KV block size (e.g. FlashMLA 64)"),
    "enable_expert_parallel": (False, "experts spread over the data-parallel ranks"),
    # 0.33.0 only
    "quantization_config": (None, "online or forced weight quantization changes the weight bytes by layer type"),
    "spec_model": (None, "a draft model's weights and KV cache"),
    "spec_method": (None, "speculative decoding buffers"),
    "spec_tokens": (None, "speculative decoding buffers"),
    "mm_ipc_gpu_memory_gb": (0, "GPU memory for multimodal IPC"),
    "use_replayssm": (False, "Mamba replay buffers"),
    "enable_mamba_shared_prefix_checkpoint": (False, "Mamba prefix-cache states"),
    "engram_config": (None, "engram memory"),
    "max_num_scheduled_tokens": (None, "a token budget kvplan's activation model does not take"),
    "max_num_active_seqs": (None, "a sequence limit kvplan's activation model does not take"),
}

# Options that move only CUDA-graph capture memory, which kvplan's vLLM budget counts with vLLM's
# defaults: judged, with a note that the figure assumes the defaults.
CUDA_GRAPH_OPTIONS = ("enforce_eager", "compilation_config", "cudagraph_capture_sizes", "max_cudagraph_capture_size",
                      "optimization_level")


def _is_default(value: Any, default: Any) -> bool:
    if default is None and value is False:
        return True  # a switch whose default is "unset" (None) turned off explicitly: still off
    if isinstance(default, list):
        return not value
    if isinstance(default, str) and default.startswith("{"):
        return value in (None, "", "{}")
    return value == default


def unmodelled(args: ServeArgs) -> list[tuple[str, str]]:
    """(key as written, why) for each set option that changes memory in ways kvplan does not model."""
    out = []
    for dest, (default, why) in NOT_MODELLED.items():
        if not args.given(dest) or _is_default(args.get(dest), default):
            continue
        if dest == "runner" and args.get(dest) == "generate":
            continue
        if dest == "convert" and args.get(dest) == "none":
            continue
        if dest == "enable_expert_parallel" and (args.get("data_parallel_size") or 1) == 1:
            continue  # with one data-parallel rank the experts are split over the TP ranks as without EP
        out.append((args.written.get(dest, dest), why))
    return out


# ------------------------------------------------------------------ vLLM's maximum model length

# vllm/transformers_utils/model_arch_config_convertor.py: the smallest of these keys is the model's length
_MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                 "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")


def derived_max_model_len(config: Mapping, tokenizer_config: Mapping | None = None) -> tuple[int | None, float | None]:
    """(the max_model_len vLLM uses when none is given, the largest it accepts) for a config.json.

    vllm/config/model.py _get_and_verify_max_len: the smallest length key of the (text) config, capped by
    the tokenizer's model_max_length, times the RoPE scaling factor (not for su/longrope/llama3 types,
    nor Gemma-3, whose length is already scaled; yarn starts from original_max_position_embeddings).
    LongRoPE models default to original_max_position_embeddings. A length above the limit is refused
    unless it is within config.json's model_max_length. (None, None) when the config names no length.
    """
    from kvplan.model.hf_config import text_config

    cfg = text_config(config)
    lengths = [cfg[k] for k in _MAX_LEN_KEYS if isinstance(cfg.get(k), (int, float)) and not isinstance(cfg.get(k), bool)]
    if not lengths:
        return None, None
    derived: float = min(lengths)
    if tokenizer_config and isinstance(tokenizer_config.get("model_max_length"), (int, float)):
        derived = min(derived, tokenizer_config["model_max_length"])
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling")
    longrope = False
    if isinstance(rope, Mapping) and "gemma3" not in str(cfg.get("model_type", "")):
        groups = list(rope.values()) if rope and all(isinstance(v, Mapping) for v in rope.values()) else [rope]
        factor = 1.0
        for rp in groups:
            kind = rp.get("rope_type") or rp.get("type") or "default"
            longrope = longrope or kind == "longrope"
            if kind not in ("su", "longrope", "llama3"):
                factor = rp.get("factor", factor)
                if kind == "yarn":
                    derived = rp.get("original_max_position_embeddings") or cfg.get("original_max_position_embeddings") or derived
        derived *= factor if factor is not None else 1.0
    limit = derived
    if isinstance(cfg.get("model_max_length"), (int, float)):
        limit = max(limit, cfg["model_max_length"])
    default = int(cfg.get("original_max_position_embeddings", derived)) if longrope else int(derived)
    return default, limit
