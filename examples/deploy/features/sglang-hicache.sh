#!/usr/bin/env bash
# SGLang with a host-memory tier of the KV cache (docs/engines/features/offload.md): HiCache keeps 100 GB (decimal)
# of pinned host memory per rank, 762,940 tokens of Llama-3.1-8B's 128 KiB each, beside the GPU pool.
# expect: pass
python3 -m sglang.launch_server \
  --model-path meta-llama/Llama-3.1-8B-Instruct \
  --context-length 32768 \
  --enable-hierarchical-cache --hicache-size 100 \
  --host 0.0.0.0 --port 30000
