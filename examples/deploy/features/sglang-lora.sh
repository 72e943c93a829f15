#!/usr/bin/env bash
# SGLang serving LoRA adapters (docs/engines/features/lora.md): 4 adapter slots of rank 64 on every linear module of
# Llama-3.1-8B, zero-filled in bf16 when the server starts (1.25 GiB) and taken from the KV pool's budget. The rank
# and the modules are given, so the pool does not depend on the adapters' own configs.
# expect: pass
python3 -m sglang.launch_server \
  --model-path meta-llama/Llama-3.1-8B-Instruct \
  --context-length 32768 \
  --enable-lora --max-loras-per-batch 4 --max-lora-rank 64 \
  --lora-target-modules q_proj k_proj v_proj o_proj gate_proj up_proj down_proj \
  --lora-paths support=/adapters/support-v3 sql=/adapters/sql-v1 \
  --host 0.0.0.0 --port 30000
