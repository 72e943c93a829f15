"""kvplan's vLLM pool against vLLM's own KV-cache planning code (tests/peers/vllm_peer.py), for the launch layouts
of tests/data/vllm_peer/cases.json: draft-model layers, an EAGLE-3 head, DeepSeek-V3's MTP layer with decode
context parallelism 8, the FlashMLA block of 64, sliding-window groups, one data-parallel rank, a block override.

The figures were produced by vLLM 0.33.0 (figures.json says which version; scripts/record_vllm_peer.py regenerates
them where vLLM imports). Each case gives both sides the same available KV memory, so the comparison is the layout:
bytes per block, blocks, the logged token capacity and concurrency, the groups. With KVPLAN_VLLM_PEER_PYTHON set to
an interpreter where vLLM imports, the peer is also run live and must reproduce the recorded figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.requests.build import build_request
from kvplan.engines.vllm import engine as vllm

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT / "tests" / "data" / "vllm_peer"
CASES = json.loads((PEER / "cases.json").read_text(encoding="utf-8"))
FIGURES = json.loads((PEER / "figures.json").read_text(encoding="utf-8"))
BY_NAME = {r["name"]: r for r in FIGURES["results"]}


def kvplan_pool(case: dict):
    k = case["kvplan"]
    req = build_request(k["model"], seq=str(case["max_model_len"]), batch=1, kv_dtype=k.get("kv_dtype", "auto"), dtype=None,
                        gpu=k.get("gpu", "h100-sxm-80gb"), gpu_mem=None, gpus=None, tp=case["tp"], pp=1,
                        kv_cache_memory=str(case["available"]), vllm_args=k.get("vllm_args"),
                        block_size=case["block_size"] if case["block_size"] != 16 and "kv_dtype" not in k else None)
    return vllm.estimate(req)


def test_the_figures_name_their_vllm_version():
    assert FIGURES["vllm_version"] == "0.33.0" and "kv_cache_planning" in FIGURES["produced_by"]
    assert [r["name"] for r in FIGURES["results"]] == [c["name"] for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_kvplan_pool_equals_vllms(case):
    peer = BY_NAME[case["name"]]
    r = kvplan_pool(case)
    assert r.bytes_per_block == peer["bytes_per_block"]
    assert r.num_gpu_blocks == peer["num_blocks"]
    assert r.kv_cache_tokens == peer["kv_cache_tokens"]
    assert r.max_concurrency == pytest.approx(peer["concurrency"], rel=1e-12)
    assert r.block_size == max(g["block_size"] for g in peer["groups"])
    # the same number of groups, each with the same number of layers
    assert sorted(g.layers for g in r.kv_cache_groups) == sorted(g["layers"] for g in peer["groups"])


@pytest.mark.skipif(not os.environ.get("KVPLAN_VLLM_PEER_PYTHON"), reason="set KVPLAN_VLLM_PEER_PYTHON to a Python with vLLM")
def test_the_peer_reproduces_the_recorded_figures():
    done = subprocess.run([os.environ["KVPLAN_VLLM_PEER_PYTHON"], str(ROOT / "tests" / "peers" / "vllm_peer.py"),
                           str(PEER / "cases.json"), str(ROOT)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    live = json.loads(done.stdout)
    assert live["results"] == FIGURES["results"]
