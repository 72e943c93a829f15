"""Grace superchips (GH200, GB200, GB300): the catalog's totals against the public readings byte for byte, the
variants without a public reading refused by name, and the engines' discrete budget on the HBM once the launch says
what the host holds there (kvplan/engines/runtime/unified.py superchip_reason; docs/gpus.md)."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import pytest

from kvplan.core.errors import UnsupportedError
from kvplan.engines import sglang, vllm
from kvplan.engines.api import Hardware
from kvplan.engines.runtime.logs import vllm_format_gib
from kvplan.engines.vllm.engine import budgets_for
from kvplan.model import catalog

from engine_requests import engine_request

GIB = 2**30
MIB = 2**20


# ------------------------------------------------------------------------------------------ the catalog's totals

@pytest.mark.parametrize("name, device_name, total_bytes, printed_mib, smi_mib", [
    # deviceQuery "Total amount of global memory: 97280 MBytes (102005473280 bytes)", driver 12.2 (code-search id
    # 25155291802); nvidia-smi "97871MiB" (ids 9343709936, 26295106233, 11944879968, 55048705438)
    ("gh200-96gb", "NVIDIA GH200 480GB", 102005473280, 97280, 97871),
    # deviceQuery "96768 MBytes (101468602368 bytes)", driver 12.9, CSCS Alps (ids 60262163546, 60481988970)
    ("gh200-120gb", "NVIDIA GH200 120GB", 101468602368, 96768, None),
    # cuDeviceTotalMem_v2 "memory_bytes = 153008209920ULL", driver 13.2 (id 71545924480); nvidia-smi "146831 MiB",
    # driver 580.173.02 (id 57699609541)
    ("gh200-144gb", "NVIDIA GH200 144G HBM3e", 153008209920, None, 146831),
])
def test_superchip_totals_are_the_public_readings(name, device_name, total_bytes, printed_mib, smi_mib):
    gpu = catalog.find_gpu(device_name)  # the name the driver reports finds the entry
    assert gpu.name == name and gpu.capacity_bytes == total_bytes and gpu.nvidia_smi_total_mib == smi_mib
    assert gpu.runtime_capacity() == total_bytes and gpu.unified_memory and gpu.interconnect == "nvlink"
    if printed_mib is not None:  # deviceQuery prints the MBytes beside the bytes: the two agree
        assert total_bytes == printed_mib * MIB


def test_the_144g_total_is_what_vllm_prints_on_a_gh200():
    """vllm-project/vllm#35356 quotes a GH200's start-up refusal: "Free memory on device cuda:0 (74.9/142.5 GiB) on
    startup is less than desired GPU memory utilization (0.9, 128.25 GiB)". vLLM prints format_gib of
    torch.cuda.mem_get_info's total and of math.ceil(total x 0.9) (v1/worker/utils.py request_memory, 0.33.0)."""
    total = catalog.find_gpu("gh200-144gb").capacity_bytes
    assert vllm_format_gib(total) == "142.5"
    assert vllm_format_gib(math.ceil(total * Fraction(9, 10))) == "128.25"


@pytest.mark.parametrize("ref", ["gb200", "NVIDIA GB200", "gb300", "NVIDIA GB300"])
def test_a_superchip_without_a_public_total_is_refused_by_name(cli, ref):
    gpu = catalog.find_gpu(ref)
    assert gpu.capacity_bytes is None and "NO PUBLIC READING" in gpu.capacity_source
    with pytest.raises(UnsupportedError, match="no public reading of the memory CUDA reports"):
        gpu.runtime_capacity()
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", ref)
    assert code == 3 and not out and err.count("\n") == 1 and gpu.name in err and "--gpu-mem" in err, err
    # given the total, kvplan answers
    code, _, err = cli("estimate", "llama-3.1-8b", "--gpu-mem", "184GiB", "--engine", "static")
    assert code == 0, err


def test_the_gpu_list_says_which_totals_have_no_reading(cli):
    import json

    code, out, _ = cli("gpus", "--json")
    assert code == 0
    listed = {g["name"]: g["capacity_bytes"] for g in json.loads(out)["gpus"]}
    assert listed["gb200-186gb"] is None and listed["gb300-288gb"] is None and listed["gh200-144gb"] == 153008209920


# ------------------------------------------------------------------------------------------ the engines on GH200

def _gh200(name="gh200-144gb"):
    g = catalog.find_gpu(name)
    return Hardware(g.name, g.runtime_capacity())


def test_vllm_on_gh200_needs_what_the_host_holds_on_the_hbm():
    """GH200 is not an integrated device to CUDA, so vLLM reads its free memory with cudaMemGetInfo, which counts the
    host's pages on the HBM's NUMA node as used (the 74.9/142.5 GiB reading): not in the launch, so "cannot judge"."""
    for version in ("0.11.0", "0.19.0", None):
        with pytest.raises(UnsupportedError, match=r"cudaMemGetInfo \(CUDA reports it as discrete"):
            vllm.estimate(engine_request("llama-3.1-8b", hw=_gh200(), engine_version=version))


@pytest.mark.parametrize("version", ["0.11.0", "0.19.0", "0.33.0"])
def test_vllm_budget_on_gh200_is_the_discrete_formula_by_hand(version):
    """With what is in use given, vLLM 0.10-0.33's arithmetic on the HBM (v1/worker/utils.py request_memory and
    gpu_worker.py determine_available_memory): requested = ceil(total x utilization); the KV memory is requested less
    weights, activation peak, non-torch memory (and from 0.20 the CUDA-graph estimate); it starts only if total less
    the CUDA context less what is in use is at least requested."""
    total = 153008209920
    in_use = 2 * GIB
    req = engine_request("llama-3.1-8b", hw=_gh200(), engine_version=version, gpu_reserved_bytes=in_use,
                         gpu_util=Fraction(9, 10))
    b = budgets_for(req)[0]
    assert b.total_bytes == total and b.memory_in_use_bytes == in_use
    assert b.requested_bytes == math.ceil(total * Fraction(9, 10)) == 137707388928
    graphs = b.cuda_graph_bytes if b.cuda_graph_subtracted else 0
    assert b.cuda_graph_subtracted == (version == "0.33.0")
    assert b.available_bytes == (b.requested_bytes - b.weights_bytes - b.activation_peak_bytes - b.non_torch_bytes
                                 - graphs)
    assert b.starts == (total - b.context_bytes - in_use >= b.requested_bytes) is True
    est = vllm.estimate(req)
    assert est.starts and est.num_gpu_blocks > 0


def test_vllm_refuses_the_public_gh200_reading():
    """The public start-up of vllm-project/vllm#35356: 74.9 of 142.5 GiB free at 0.9. Given the memory the host held
    (the logged total - free, less the CUDA context kvplan models, so that free at the snapshot is 74.9 GiB), kvplan
    says vLLM does not start, as it did."""
    req = engine_request("llama-3.1-8b", hw=_gh200(), gpu_util=Fraction(9, 10), gpu_reserved_bytes=GIB)
    context = budgets_for(req)[0].context_bytes
    held = round((Fraction("142.5") - Fraction("74.9")) * GIB) - context
    b = budgets_for(dataclasses.replace(req, gpu_reserved_bytes=held))[0]
    assert vllm_format_gib(b.total_bytes - b.context_bytes - b.memory_in_use_bytes) == "74.9"
    assert not b.starts
    assert vllm.estimate(dataclasses.replace(req, gpu_reserved_bytes=held)).starts is False


def test_sglang_on_gh200_is_its_discrete_path():
    """SGLang reads free memory with cudaMemGetInfo where torch's is_integrated is False (srt/utils/common.py
    get_available_gpu_memory, 0.5.9-0.5.23; always before): "cannot judge" without what the host holds on the HBM.
    GH200's nvidia-smi shows memory.total (97871 / 146831 MiB), so the GB10 refusal of 0.3.6-0.4.9.post2 (R8: "No GPU
    memory values found") is not GH200's, and the catalog's nvidia-smi MiB is what SGLang's defaults read."""
    with pytest.raises(UnsupportedError, match=r"SGLang 0\.5\.23 reads the free memory of this GPU with cudaMemGetInfo"):
        sglang.estimate(engine_request("llama-3.1-8b", hw=_gh200()))
    for version in ("0.4.6", "0.5.23"):
        est = sglang.estimate(engine_request("llama-3.1-8b", hw=_gh200(), engine_version=version,
                                             gpu_reserved_bytes=GIB))
        assert est.max_total_num_tokens and est.max_total_num_tokens > 0
        assert est.gpu_mem_mib == 146831  # nvidia-smi's memory.total, not the runtime total in MiB (145920)
        # P, the free memory before the load, is the discrete one on the HBM: total - context - init - what is held
        assert est.free_before_load_bytes == (153008209920 - est.cuda_context_bytes - est.dist_init_bytes - GIB)


# ------------------------------------------------------------------------------------------ --gpu-reserved 0

def _built(gpu, engine_version, reserved):
    """The request as the command line builds it (requests/build.py), so that the flag's text is what is parsed."""
    from kvplan.requests.build import build_request

    return build_request("llama-3.1-8b", seq="8192", batch=1, kv_dtype="auto", dtype=None, gpu=gpu, gpu_mem=None,
                         gpus=None, tp=None, pp=1, gpu_util="0.9", engine_version=engine_version, gpu_reserved=reserved)


@pytest.mark.parametrize("reserved", ["0", "0GiB", "0B"])
def test_gpu_reserved_zero_is_nothing_in_use_on_gh200(reserved):
    """--gpu-reserved 0 says no other process holds memory on the HBM: vLLM's discrete arithmetic with nothing in use
    (v1/worker/utils.py request_memory, gpu_worker.py determine_available_memory, 0.19.0), by hand."""
    total = 153008209920
    req = _built("gh200-144gb", "0.19.0", reserved)
    assert req.gpu_reserved_bytes == 0
    b = budgets_for(req)[0]
    assert b.memory_in_use_bytes == 0 and b.requested_bytes == math.ceil(total * Fraction(9, 10))
    assert b.available_bytes == b.requested_bytes - b.weights_bytes - b.activation_peak_bytes - b.non_torch_bytes
    assert b.starts == (total - b.context_bytes >= b.requested_bytes) is True
    # one GiB more in use moves nothing but the start check: the budget is the same request less the same terms
    one = budgets_for(_built("gh200-144gb", "0.19.0", "1GiB"))[0]
    assert one.memory_in_use_bytes == GIB and one.available_bytes == b.available_bytes


def test_gpu_reserved_zero_is_nothing_in_use_on_gb10():
    """On GB10 SGLang 0.5.9+ reads the free memory from psutil (utils/common.py get_available_gpu_memory): told the
    host holds nothing, P = capacity - SGLang's own CUDA context, with no host share subtracted."""
    est = sglang.estimate(_built("gb10", "0.5.23", "0"))
    capacity = catalog.find_gpu("gb10").capacity_bytes
    assert est.in_use_bytes == 0
    assert est.free_before_load_bytes == capacity - est.cuda_context_bytes
    held = sglang.estimate(_built("gb10", "0.5.23", "1GiB"))
    assert held.free_before_load_bytes == capacity - held.cuda_context_bytes - GIB


def test_gpu_reserved_zero_on_the_command_line(cli):
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "gb10", "--engine", "sglang", "--gpu-reserved", "0",
                         "--json")
    assert code == 0, err
    import json
    assert json.loads(out)["in_use_bytes"] == 0
    for bad in ("-1GiB", "-1"):
        code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "gb10", "--engine", "sglang", "--gpu-reserved", bad)
        assert code == 2 and err.startswith("error: --gpu-reserved") and err.count("\n") == 1 and not out, err
