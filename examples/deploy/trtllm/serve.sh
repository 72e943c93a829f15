#!/bin/sh
# TensorRT-LLM's OpenAI server (PyTorch backend) for Llama 3.1 70B on one 8-GPU H100 node, with the
# LLM-API options of llm-api-options.yaml over the flags: its kv_cache_config replaces the one the
# --kv_cache_free_gpu_memory_fraction flag built (fraction 0.85 and an fp8 cache are what count).
# The release is the one the container image pins, which this script does not show: the default.
# expect: pass
# expect-without-gpu: cannot_judge --gpu
trtllm-serve meta-llama/Llama-3.1-70B-Instruct \
  --backend pytorch \
  --tp_size 8 \
  --max_batch_size 64 \
  --max_num_tokens 8192 \
  --max_seq_len 32768 \
  --kv_cache_free_gpu_memory_fraction 0.9 \
  --extra_llm_api_options "$(dirname "$0")/llm-api-options.yaml" \
  --host 0.0.0.0 --port 8000
