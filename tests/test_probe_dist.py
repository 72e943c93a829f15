"""End to end in subprocesses: a 2-rank gloo run under torchrun, the GPU verification script's CPU
dry run, and the promise that `kvplan --help` and `kvplan estimate` never import torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.probe.dist import from_env

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "data" / "hf_configs"


def _env():
    env = dict(os.environ)
    # the scripts run this interpreter, not whichever python is first on PATH (a venv need not be activated)
    env["PYTHON"] = sys.executable
    env.pop("RANK", None)
    env.pop("WORLD_SIZE", None)
    env["OMP_NUM_THREADS"] = "1"
    return env


def test_help_and_estimate_never_import_torch():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from kvplan.cli import entry as cli\n"
        "cli.register_commands()\n"
        "runner = CliRunner()\n"
        f"r = runner.invoke(cli.app, ['estimate', {str(CONFIGS / 'llama-3.1-8b.json')!r}, '--seq', '8K', '--json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "for args in (['--help'], ['probe', '--help'], ['estimate', '--help']):\n"
        "    assert runner.invoke(cli.app, args).exit_code == 0\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=_env(), cwd=ROOT, timeout=120)
    # and the real entry point, seen by the interpreter's own import log
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "kvplan", "--help"], capture_output=True, text=True,
                         env=_env(), cwd=ROOT, timeout=120)
    assert run.returncode == 0 and "probe" in run.stdout
    assert not [line for line in run.stderr.splitlines() if line.rstrip().endswith(("| torch", "| torch.cuda"))]


def test_dist_env_parsing():
    assert from_env({}) is None
    assert from_env({"RANK": "0", "WORLD_SIZE": "1"}) is None
    env = from_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"})
    assert (env.rank, env.world_size, env.local_rank) == (3, 4, 1)
    assert from_env({"RANK": "x", "WORLD_SIZE": "2"}) is None


def _torchrun() -> list[str] | None:
    """torchrun as this interpreter's module (python -m torch.distributed.run), so that it is found whether or
    not the venv is activated; None without torch."""
    import importlib.util

    return [sys.executable, "-m", "torch.distributed.run"] if importlib.util.find_spec("torch") else None


torchrun = _torchrun()


def _two_ranks(args: list[str], timeout: int = 180) -> subprocess.CompletedProcess:
    """`kvplan ARGS` as two gloo ranks started the way torchrun starts them (RANK, LOCAL_RANK, WORLD_SIZE,
    MASTER_ADDR/PORT in the environment), without the launcher: torchrun's own start imports torch once more before
    the ranks do, 3 of a run's 8 seconds here. One test keeps the real torchrun (the TP case). The two ranks' outputs
    are joined, rank 0's first; the exit status is the worse one."""
    import socket

    with socket.socket() as probe:  # a free port on loopback for the rendezvous
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    procs = []
    for rank in (0, 1):
        env = _env() | {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
                        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        procs.append(subprocess.Popen([sys.executable, "-m", "kvplan", *args], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT))
    outs = [p.communicate(timeout=timeout) for p in procs]
    code = max(p.returncode for p in procs)
    return subprocess.CompletedProcess(args, code, "".join(o for o, _ in outs), "".join(e for _, e in outs))


@pytest.mark.skipif(torchrun is None, reason="torch is not installed")
@pytest.mark.parametrize("model,extra", [("llama-3.1-8b.json", ["--tp", "2"]), ("gemma-2-9b.json", ["--pp", "2"])])
def test_two_rank_gloo_shards_add_up(model, extra):
    pytest.importorskip("torch")
    from kvplan.model import catalog
    from kvplan.core.cache import CacheModel
    from kvplan.core.dtypes import dtype

    args = ["probe", str(CONFIGS / model), "--seq", "96", "--batch", "2", "--device", "cpu", "--no-touch", "--json", *extra]
    if "--tp" in extra:  # under torchrun itself, as users start it
        run = subprocess.run([*torchrun, "--nproc-per-node", "2", "-m", "kvplan", *args], capture_output=True, text=True,
                             env=_env(), cwd=ROOT, timeout=180)
    else:
        run = _two_ranks(args)
    assert run.returncode == 0, run.stderr[-2000:]
    data = json.loads(run.stdout)  # rank 0 alone prints
    spec = catalog.resolve_model(str(CONFIGS / model))
    tp = 2 if "--tp" in extra else 1
    pp = 2 if "--pp" in extra else 1
    whole = CacheModel(spec, dtype(spec.dtype), tp=tp, pp=pp).footprint(96, 2).cache_bytes
    assert data["world_size"] == 2 and [r["rank"] for r in data["ranks"]] == [0, 1]
    assert data["match"] and all(r["match"] for r in data["ranks"])
    assert sum(r["measured_bytes"] for r in data["ranks"]) == data["measured_bytes"] == data["whole_model_estimated_bytes"] == whole
    if tp == 2:
        assert [(r["stage"], r["tp_rank"]) for r in data["ranks"]] == [(0, 0), (0, 1)]
        assert data["ranks"][0]["measured_bytes"] == data["ranks"][1]["measured_bytes"] == whole // 2
    else:
        assert [(r["stage"], r["layers"]) for r in data["ranks"]] == [(0, "0-20"), (1, "21-41")]


def test_torchrun_world_must_equal_tp_x_pp():
    torch = pytest.importorskip("torch")
    from kvplan.model import catalog
    from kvplan.core.dtypes import dtype
    from kvplan.engines import EngineRequest
    from kvplan.core.errors import InputError
    from kvplan.probe.dist import DistEnv
    from kvplan.probe.runner import ProbeOptions, run_probe

    spec = catalog.resolve_model(str(CONFIGS / "llama-3.1-8b.json"))
    req = EngineRequest(spec=spec, seq=16, batch=1, kv_dtype="bf16", weight_fmt=None)
    with pytest.raises(InputError, match="torchrun started 2 processes but --tp 1 x --pp 1 = 1"):
        run_probe(req, ProbeOptions(device="cpu"), torch=torch, dist_env=DistEnv(rank=0, world_size=2, local_rank=0))


def test_gpu_verify_script_cpu_dry_run(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "report.json"
    run = subprocess.run(["bash", str(ROOT / "scripts" / "gpu-verify.sh"), "--device", "cpu", "--out", str(out)],
                         capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["device"] == "cpu" and report["small_shapes"] and report["failed"] == 0
    names = {c["name"] for c in report["cases"]}
    assert {"gqa-bf16-static", "mla-bf16-static-pp4", "sliding-fp8-paged", "hybrid-jamba-static", "find-max-static",
            "bench-gqa-bf16", "oom-refused"} <= names
    for case in report["cases"]:
        assert case["ok"], case
        if case["expect"] == "match":
            r = case["result"]
            assert r["match"] and r["measured_bytes"] == r["estimated_bytes"]
    assert {c["result"]["kv_dtype"] for c in report["cases"] if "result" in c} >= {"bf16", "fp8_e4m3", "int4"}
    assert {c["result"]["layout"] for c in report["cases"] if "result" in c} == {"static", "paged"}


@pytest.mark.skipif(torchrun is None, reason="torch is not installed")
def test_a_rank_error_is_gathered_and_reported_once():
    pytest.importorskip("torch")
    run = _two_ranks(["probe", str(CONFIGS / "llama-3.1-8b.json"), "--seq", "16", "--tp", "2", "--device", "cpu",
                      "--find-max"])  # no --max-bytes: refused on every rank
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert run.returncode != 0 and run.stdout == ""
    assert errors == ["error: kvplan probe — every rank: --find-max — --find-max on cpu needs --max-bytes (the OS does not "
                      "refuse host memory, it kills processes; e.g. --max-bytes 1GiB)"]
