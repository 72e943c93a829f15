#!/usr/bin/env bash
# The decode server of an SGLang prefill/decode pair (docs/engines/features/disagg.md): Llama-3.1-8B at TP 2 on
# one node, receiving each prompt's KV over Mooncake. SGLang's default mem_fraction_static on a decode server sizes
# its activation slack on the running requests instead of the chunked-prefill size and captures no prefill graphs.
# expect: pass
python3 -m sglang.launch_server \
  --model-path meta-llama/Llama-3.1-8B-Instruct \
  --tp 2 \
  --context-length 32768 \
  --disaggregation-mode decode \
  --disaggregation-transfer-backend mooncake \
  --host 0.0.0.0 --port 30001
