#!/usr/bin/env bash
# GPU verification run for kvplan's cache estimates (docs/probe.md).
#
# Runs the probe matrix of kvplan/probe/suite.py in one process on one GPU: GQA (llama-3.1-8b, 70b TP
# shard), MLA (deepseek-v3 pipeline/TP slices), sliding window (gemma-2-9b), hybrids (jamba, qwen3-next,
# nemotron-h); bf16, fp8 and int4; static and paged layouts; find-max static and paged; a decode
# attention benchmark; an out-of-memory case that must be refused cleanly. Each case allocates the
# cache with torch and compares the caching allocator's requested bytes with kvplan's estimate, byte
# for byte. Takes about a minute on an H100/H200 (under 3 minutes on any 80 GB card).
#
#   scripts/gpu-verify.sh                         # cuda, report in gpu-verify-<host>-<time>.json
#   scripts/gpu-verify.sh --out report.json       # choose the report file
#   scripts/gpu-verify.sh --device cpu --out x    # the CPU dry run (small shapes) the test suite runs
#   scripts/gpu-verify.sh --only gqa-bf16-static  # one case (repeatable)
#
# Exit status: 0 every case passed, 1 some case failed, 2 no usable device or torch.
set -euo pipefail
cd "$(dirname "$0")/.."

# the interpreter: $PYTHON when given (the tests pass their own), else the repository's venv when there is one,
# else python3 -- never whichever `python` happens to be first on PATH with no kvplan in it
if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON="$(command -v python3 || command -v python)"; fi
fi
device="cuda"
out=""
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --device) device="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [[ -z "$out" ]]; then
  out="gpu-verify-$(hostname -s 2>/dev/null || echo host)-$(date +%Y%m%d-%H%M%S).json"
fi

if [[ "$device" == cuda* ]] && command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader >&2 || true
fi
# the suite itself bounds every case; the timeout only guards against a hung driver
exec timeout 600 "$PYTHON" -m kvplan.probe.suite --device "$device" --out "$out" ${args[@]+"${args[@]}"}
