"""Issue 15, numbers: every flag and every file value goes through kvplan/core/units.py, so a value that int() or
Decimal would misread, expand for minutes, or fail to print is one error line (exit 2) at its flag or key.

The hang cases run in a subprocess under a timeout: a regression fails here instead of stalling the suite (the
timeout guards the harness; nothing asserts a speed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.core.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
M = "llama-3.1-8b"
GUARD_S = 60


def kvplan(*args, cwd=ROOT):
    p = subprocess.run([sys.executable, "-m", "kvplan", *map(str, args)], capture_output=True, text=True, timeout=GUARD_S,
                       cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"})
    assert "Traceback" not in p.stderr, p.stderr
    return p


def one_error(p, code: int, fragment: str) -> str:
    lines = [line for line in p.stderr.splitlines() if line.startswith("error:")]
    assert p.returncode == code, (p.returncode, p.stderr)
    assert len(lines) == 1 and fragment in lines[0], p.stderr
    return lines[0]


@pytest.mark.parametrize("args, fragment", [
    (("estimate", M, "--seq", "4096,8192"), "--seq — '4096,8192' holds a comma"),  # was 40,968,192 tokens
    (("estimate", M, "--gpu-mem", "8,0GiB"), "--gpu-mem — '8,0GiB' holds a comma"),  # was 80 GiB
    (("estimate", M, "--seq", "1.5K"), "decimals are not allowed with the binary suffix K"),
    (("estimate", M, "--seq", "８１９２"), "holds characters other than ASCII digits"),
    (("estimate", M, "--seq", "٨١٩٢"), "holds characters other than ASCII digits"),
    (("estimate", M, "--batch", "٣"), "holds characters other than ASCII digits"),
    (("estimate", M, "--gpu", "h100", "--gpu-util", "1e999999999"), "--gpu-util — '1e999999999' is not a number"),
    (("estimate", M, "--batch", "9" * 5000), "too long for a number"),
    (("sweep", M, "--tp", "1..8*" + "9" * 5000), "--tp — "),
    (("check", "examples/deploy/prod/chat-8b.yaml", "--require-headroom", "1e999999999"), "--require-headroom — "),
    (("probe", M, "--device", "meta", "--seq", "1K", "--find-max", "--max-bytes", "1GiB", "--max-fraction", "1e999999999"),
     "--max-fraction — "),
])
def test_numbers_are_read_strictly_and_fast(args, fragment):
    one_error(kvplan(*args), 2, fragment)


def test_sweep_refuses_an_impossible_axis_value_before_any_row():
    # printed 30 error rows and exited 0; the docs promise exit 2 before any row
    p = kvplan("sweep", M, "--tp", "1..1000000000", "--gpu", "h100", "-f", "csv")
    one_error(p, 2, "--tp — 1000000000 is implausibly large (limit 4096)")
    assert p.stdout == ""


@pytest.mark.parametrize("text, fragment", [
    ("gpu_memory_utilization: 1e999999999\n", "gpu_memory_utilization"),
    ("gpu_memory_utilization: '1e999999999'\n", "gpu_memory_utilization"),
    ("require: {headroom: 1e999999999}\n", "headroom"),
    ("max_model_len: '32,768'\n", "holds a comma"),
    ("max_model_len: 1.5K\n", "binary suffix K"),
    ("tensor_parallel_size: " + "9" * 5000 + "\n", "4,300 digits"),
    ("tensor_parallel_size: 0" + "7" * 6000 + "\n", "digits"),  # YAML 1.1 octal: read, then too long to print
    # offload sizes in GiB: a NaN reached int() and ended in a traceback (found by test_deploy's hypothesis run)
    ("kv_offloading_size: .nan\nkv_offloading_backend: native\n", "kv_offloading_size — must be a finite number"),
    ("cpu_offload_gb: .inf\n", "cpu_offload_gb — must be a finite number"),
])
def test_deployment_values_are_read_strictly_and_fast(tmp_path, text, fragment):
    d = tmp_path / "d.yaml"
    d.write_text("name: x\nengine: vllm\nmodel: llama-3.1-8b\ngpu: h100\n" + text)
    one_error(kvplan("check", d), 2, fragment)


@pytest.mark.parametrize("option", ["gpu-memory-utilization: 1e999999999", "gpu-memory-utilization: 1.0e999999999",
                                    "max-model-len: 1.5K", "max-model-len: '８１９２'", "tensor-parallel-size: '١'"])
def test_vllm_config_values_are_read_strictly_and_fast(tmp_path, option):
    d = tmp_path / "serve.yaml"
    d.write_text(f"model: meta-llama/Llama-3.1-8B-Instruct\n{option}\n")
    p = kvplan("check", d, "--gpu", "h100")
    one_error(p, 2, option.split(":")[0])


def test_a_spec_with_an_integer_too_long_to_print_is_one_error(tmp_path):
    spec = (ROOT / "model_specs" / "llama-3.1-8b.yaml").read_text()
    (tmp_path / "s.yaml").write_text(spec.replace("\nlayers: 32", "\nlayers: 0x" + "f" * 5000))
    one_error(kvplan("estimate", tmp_path / "s.yaml"), 2, "layers — an integer of more than 4,000 digits is implausibly large")


def test_explain_of_a_model_with_no_attention_layers(tmp_path):
    # every what-if's "vs model" ratio divides by the model's own cache, 0 B here: a TypeError before
    (tmp_path / "none.yaml").write_text("name: no-attention\nlayers: 4\nattention_heads: 8\nhead_dim: 64\ndtype: bf16\n"
                                        "params: 1000000\nlayout: {default: none}\n")
    p = kvplan("explain", tmp_path / "none.yaml", "--gpu", "h100")
    assert p.returncode == 0, p.stderr
    assert "0 B" in p.stdout


def test_a_million_requests_are_refused_before_they_are_drawn():
    # ran 21 s before refusing; now the count alone decides, before the distribution is sampled. The arithmetic:
    # 1,000,000 requests x 5 policies x 5 steps each = 25,000,000 > the 20,000,000-step cap (analysis/workload.py)
    from kvplan.analysis import workload as wl

    assert wl.max_requests_for(wl.POLICIES) == 20_000_000 // (5 * 5) == 800_000
    p = kvplan("simulate", M, "-w", "prompt=p50:100;output=p50:100;requests=1000000", "--gpu", "h100")
    one_error(p, 2, "--workload: requests — simulating 1,000,000 requests would take minutes")
    with pytest.raises(InputError, match="would take minutes"):
        wl.parse_inline("prompt=p50:100;output=p50:100;requests=1000000", max_requests=800_000)


def test_a_gpu_count_of_two_to_the_64_is_refused_not_laid_out(tmp_path):
    # found by scripts/fuzz.py (seed 26004): compose's device sets are one entry per GPU, and a count of 2**64 ran for
    # 88 s of CPU before the guard's timeout; a count past any cluster's is bad input
    real = ROOT / "tests" / "data" / "deployments" / "compose" / "dgx-spark-qwen38-27b-nvfp4-mtp.yml"
    text = real.read_text()
    assert "count: all\n" in text
    (tmp_path / "compose.yml").write_text(text.replace("count: all\n", "count: 18446744073709551616\n"))
    p = kvplan("check", tmp_path / "compose.yml", "--offline")
    assert p.returncode == 2 and "devices.count — must be at most 1,000,000, got 18,446,744,073,709,551,616" in p.stdout
