#!/usr/bin/env bash
# SGLang with an EAGLE-3 head (docs/engines/features/speculative.md), the head's config.json vendored in
# ../models/: its weights load before the pool is sized, its one layer adds int(cell x 1 / 32) bytes to every
# token of the pool, and --max-running-requests falls to 48 when none is given.
# expect: pass
python3 -m sglang.launch_server \
  --model-path meta-llama/Llama-3.1-8B-Instruct \
  --context-length 32768 \
  --speculative-algorithm EAGLE3 \
  --speculative-draft-model-path ../models/eagle3-llama3.1-8b \
  --speculative-num-steps 3 --speculative-eagle-topk 1 \
  --host 0.0.0.0 --port 30000
