#!/usr/bin/env bash
# Start vLLM on a bare GPU host (systemd runs this with its EnvironmentFile). The defaults below are
# what is judged; a variable the environment sets would change them, and kvplan reads the
# ${VAR:-default} forms as the shell does. A script names no GPU: --gpu gives it.
# expect: pass
# expect-without-gpu: cannot_judge --gpu
set -euo pipefail

MODEL="${MODEL:-Qwen/Qwen3-8B}"
TP="${TP:-1}"
MAX_LEN="${MAX_LEN:-32768}"
EXTRA_ARGS=""
if [ "$TP" -gt 1 ]; then
  EXTRA_ARGS="--disable-custom-all-reduce"
fi

export VLLM_LOGGING_LEVEL=INFO
exec vllm serve "$MODEL" \
  --tensor-parallel-size "$TP" \
  --max-model-len "$MAX_LEN" \
  --gpu-memory-utilization 0.90 \
  --max-num-seqs 48 \
  --host 0.0.0.0 --port 8000 $EXTRA_ARGS \
  2>&1 | tee -a /var/log/vllm.log
