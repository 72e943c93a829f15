#!/usr/bin/env bash
# SGLang's server for Qwen3 30B-A3B (a mixture of experts, 30.5 B parameters, 3.3 B active) on two
# GPUs with tensor parallel 2, from a docker run of SGLang's own image (the tag pins the release;
# kvplan models SGLang's memory rules and reads its launch_server options from SGLang 0.5.23).
# --gpus '"device=0,1"' gives the container two GPUs of the host, of a kind the script does not say.
# expect: pass
# expect-without-gpu: cannot_judge --gpu
PORT=30000
docker run --rm --gpus '"device=0,1"' --shm-size 32g --ipc=host \
  -p ${PORT}:${PORT} \
  -v "$HOME/.cache/huggingface:/root/.cache/huggingface" \
  -e HF_TOKEN \
  lmsysorg/sglang:v0.5.23 \
  python3 -m sglang.launch_server \
    --model-path Qwen/Qwen3-30B-A3B-Instruct-2507 \
    --tp 2 \
    --context-length 65536 \
    --mem-fraction-static 0.85 \
    --max-running-requests 64 \
    --host 0.0.0.0 --port ${PORT}
