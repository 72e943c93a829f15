#!/usr/bin/env bash
# SGLang with attention data parallelism (docs/engines/features/parallel.md): Qwen3-30B-A3B on 4 GPUs, 4 attention-DP
# workers inside the TP group, each with its own KV pool and its attention (and the embedding) whole on its GPU; the
# experts stay sharded over TP 4.
# expect: pass
python3 -m sglang.launch_server \
  --model-path Qwen/Qwen3-30B-A3B-Instruct-2507 \
  --tp 4 --dp-size 4 --enable-dp-attention \
  --context-length 32768 \
  --max-running-requests 256 \
  --host 0.0.0.0 --port 30000
