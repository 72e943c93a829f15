"""The CLI contract: JSON keys, exit codes, one-line errors, exact capacity figures."""

import json
import subprocess
import sys

import pytest

from kvplan.model import catalog

CONTRACT_KEYS = {"model", "engine", "seq", "batch", "kv_dtype", "dtype", "kv_bytes_per_token", "kv_bytes", "state_bytes",
                 "cache_bytes", "params", "weights_bytes", "per_gpu", "fits", "max_batch", "max_seq"}


def estimate_json(cli, *args):
    code, out, err = cli("estimate", *args, "--json")
    return code, (json.loads(out) if out.strip() else None), err


def test_json_carries_the_contract(cli, configs):
    code, d, _ = estimate_json(cli, configs / "llama-3.1-8b.json", "--seq", "8K", "--batch", "4", "--gpu-mem", "80GiB")
    assert code == 0 and CONTRACT_KEYS <= set(d)
    assert d["kv_bytes_per_token"] == 131072 and d["kv_bytes"] == 4 * 8192 * 131072
    assert d["cache_bytes"] == d["kv_bytes"] + d["state_bytes"]
    assert set(d["per_gpu"]) >= {"capacity_bytes", "usable_bytes", "weights_bytes", "cache_bytes", "reserved_bytes", "free_bytes"}
    assert d["fits"] is True


def test_without_a_gpu_the_capacity_keys_are_null(cli, configs):
    code, d, _ = estimate_json(cli, configs / "llama-3.1-8b.json", "--seq", "1K")
    assert code == 0 and d["per_gpu"] is None and d["fits"] is None and d["max_batch"] is None and d["max_seq"] is None


def test_capacity_figures_are_exact(cli, configs):
    # 80 GiB x 0.9 usable; weights 8,030,261,248 x 2 B; 1 GiB per 8K sequence (128 KiB/token)
    code, d, _ = estimate_json(cli, configs / "llama-3.1-8b.json", "--engine", "static", "--seq", "8K", "--batch", "1", "--gpu-mem", "80GiB")
    capacity = 80 * 2**30
    usable = capacity * 9 // 10
    weights = 8030261248 * 2
    per_seq = 8192 * 131072
    assert d["per_gpu"]["usable_bytes"] == usable and d["per_gpu"]["weights_bytes"] == weights
    assert d["max_batch"] == (usable - weights) // per_seq
    assert d["max_seq"] == min((usable - weights) // 131072, 131072)  # capped at the model's 128K context
    # and the boundary really is the boundary: one sequence more does not fit
    code, d2, _ = estimate_json(cli, configs / "llama-3.1-8b.json", "--engine", "static", "--seq", "8K", "--batch", str(d["max_batch"] + 1), "--gpu-mem", "80GiB")
    assert code == 1 and d2["fits"] is False
    code, d3, _ = estimate_json(cli, configs / "llama-3.1-8b.json", "--engine", "static", "--seq", "8K", "--batch", str(d["max_batch"]), "--gpu-mem", "80GiB")
    assert code == 0 and d3["fits"] is True


def test_longest_context_is_the_boundary(cli, configs):
    code, d, _ = estimate_json(cli, configs / "llama-3.1-70b.json", "--engine", "static", "--seq", "32K", "--batch", "8", "--gpu", "h100", "--tp", "4")
    assert d["max_seq_limited_by"] == "memory"
    ok = estimate_json(cli, configs / "llama-3.1-70b.json", "--engine", "static", "--seq", str(d["max_seq"]), "--batch", "8", "--gpu", "h100", "--tp", "4")
    over = estimate_json(cli, configs / "llama-3.1-70b.json", "--engine", "static", "--seq", str(d["max_seq"] + 1), "--batch", "8", "--gpu", "h100", "--tp", "4")
    assert ok[0] == 0 and over[0] == 1


def test_does_not_fit_exits_1(cli, configs):
    code, out, _ = cli("estimate", configs / "llama-3.1-70b.json", "--engine", "static", "--seq", "128K", "--batch", "8", "--gpu-mem", "24GiB")
    assert code == 1 and "does NOT fit" in out


def test_tp_replicates_kv_heads_beyond_their_count(cli, configs):
    _, d8, _ = estimate_json(cli, configs / "llama-3.1-8b.json", "--seq", "1K", "--tp", "8")
    _, d16, _ = estimate_json(cli, configs / "llama-3.1-8b.json", "--seq", "1K", "--tp", "16")
    assert d8["kv_bytes"] == 32 * 8 * 256 * 2 * 1024  # 8 ranks x 1 head: no copies
    assert d16["kv_bytes"] == 2 * d8["kv_bytes"]  # 16 ranks x 1 head: every head held twice


@pytest.mark.parametrize("args,fragment", [
    (["estimate", "no-such-model"], "unknown model"),
    (["estimate", "llama-3.1-8b.json", "--seq", "-5"], "--seq"),
    (["estimate", "llama-3.1-8b.json", "--seq", "0"], "--seq"),
    (["estimate", "llama-3.1-8b.json", "--seq", "99999999999999999"], "--seq"),
    (["estimate", "llama-3.1-8b.json", "--kv-dtype", "fp7"], "unknown KV dtype"),
    (["estimate", "llama-3.1-8b.json", "--gpu", "not-a-gpu"], "unknown GPU"),
    (["estimate", "llama-3.1-8b.json", "--gpu", "h10"], "--gpu"),
    (["estimate", "llama-3.1-8b.json", "--tp", "3"], "--tp"),
    (["estimate", "llama-3.1-8b.json", "--tp", "0"], "--tp"),
    (["estimate", "llama-3.1-8b.json", "--pp", "64"], "--pp"),
    (["estimate", "llama-3.1-8b.json", "--batch", "0"], "--batch"),
    (["estimate", "llama-3.1-8b.json", "--gpu-mem", "80G"], "ambiguous"),
    (["estimate", "llama-3.1-8b.json", "--gpu", "h100", "--gpu-mem", "80GiB"], "not both"),
    (["estimate", "llama-3.1-8b.json", "--gpu", "h100", "--gpu-util", "1.5"], "--gpu-util"),
    (["estimate", "llama-3.1-8b.json", "--gpus", "4", "--tp", "2"], "--gpus"),
    (["estimate", "llama-3.1-8b.json", "--engine", "vlm"], "did you mean 'vllm'"),
    (["estimate", "llama-3.1-8b.json", "--kv-heads", "3"], "--kv-heads"),
    (["estimate", "llama-3.1-8b.json", "--dtype", "int3"], "weight dtype"),
    (["estimate", "./missing/spec.yaml"], "no such file"),
])
def test_bad_input_is_exit_2_with_one_line(cli, configs, args, fragment):
    args = [str(configs / a) if a.endswith(".json") else a for a in args]
    code, out, err = cli(*args)
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("error: ") and fragment in err, err
    assert out == ""


def test_gpu_names_match_leniently():
    assert catalog.find_gpu("H100-SXM5-80GB").name == catalog.find_gpu("h100").name == "h100-sxm-80gb"
    assert catalog.find_gpu("h100-sxm-80gb").capacity_bytes == 85029158912  # 79.19 GiB, as torch reports it


def test_a_gpu_under_wsl2_has_nvidia_smis_total(cli):
    """NAME@wsl: inside WSL2, CUDA reports nvidia-smi's memory.total. The RTX 5090 under WSL2 of TensorRT-LLM #4275
    logs "total: 31.84 GiB"; 32607 MiB (nvidia-smi) is 31.843 GiB, native Linux's 33660534784 B only 31.35."""
    wsl = catalog.find_gpu("RTX-5090@WSL2")
    assert wsl.name == "rtx-5090-32gb@wsl" and wsl.capacity_bytes == 32607 * 2**20
    assert round(wsl.capacity_bytes / 2**30, 2) == 31.84 != round(catalog.find_gpu("rtx-5090").capacity_bytes / 2**30, 2)
    assert catalog.find_gpu(wsl.name) == wsl  # the name it reports finds it again (request.Hardware.facts)
    assert catalog.find_gpu("rtx-3090@wsl").capacity_bytes == 24576 * 2**20
    # the RTX 3090 under WSL2 (tests/data/vllm_logs_public, vLLM 0.19.1 at 0.85): weights 7.12 + pool 13.06 GiB
    # exceed 0.85 x the native 23.58 GiB (20.04), not 0.85 x 24 GiB (20.40)
    assert (7.12 + 13.06) * 2**30 > 0.85 * catalog.find_gpu("rtx-3090").capacity_bytes
    assert (7.12 + 13.06) * 2**30 < 0.85 * catalog.find_gpu("rtx-3090@wsl").capacity_bytes
    # no nvidia-smi reading, an AMD part, unified memory: refused with one line, not guessed
    for ref, said in (("h100-pcie-80gb@wsl", "no nvidia-smi total"), ("mi300x@wsl", "not one"), ("gb10@wsl", "not one"),
                      ("h100@wsl@wsl2", "given twice")):
        code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", ref)
        assert code == 2 and not out and said in err and err.count("\n") == 1 and err.startswith("error: --gpu"), err


def test_gpu_lookup_by_name_reads_one_entry_as_the_whole_catalog_does():
    # find_gpu of an exact name or alias parses only that entry of gpus.yaml (start-up time); the independent value is
    # the whole catalog's parse: the first GPU in file order carrying the name, field for field
    assert catalog._entries() is not None  # the file is written one name and one aliases line per entry
    for gpu in catalog.gpus():
        for ref in (gpu.name, *gpu.aliases):
            first = next(g for g in catalog.gpus()
                         if catalog._norm(ref) in {catalog._norm(n) for n in (g.name, *g.aliases)})
            assert catalog._named(catalog._norm(ref)) == first
            catalog.gpus.cache_clear()  # and read before the whole catalog is
            assert catalog._named(catalog._norm(ref)) == first
    assert catalog._named(catalog._norm("h10")) is None  # a prefix is the whole catalog's search


def test_gpu_catalog_is_complete_and_sourced():
    entries = catalog.gpus()
    assert len(entries) >= 15 and len({g.name for g in entries}) == len(entries)
    for g in entries:
        # no public exact reading: refused by name, and the source says so (GB200, GB300; tests/test_superchips.py)
        assert (g.capacity_bytes is None) == g.capacity_source.startswith("NO PUBLIC READING")
        assert (g.capacity_bytes is None or g.capacity_bytes > 2**30) and g.capacity_source and g.source
        assert g.hbm_bandwidth_bytes_per_s
        assert g.architecture in {"volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "cdna4"}
        assert g.interconnect in catalog.INTERCONNECTS and g.interconnect_source and g.compute_capability
        assert isinstance(g.unified_memory, bool)
        # nvidia-smi shows a little more than the runtime (driver reservations), never less
        assert g.nvidia_smi_total_mib is None or g.capacity_bytes is None or g.nvidia_smi_total_mib * 2**20 >= g.capacity_bytes


def test_kv_heads_what_if(cli, configs):
    # Qwen2.5-72B: the article's 64 KV heads vs the real 8 (the published arithmetic: an article assumed 64 KV heads)
    _, real, _ = estimate_json(cli, configs / "qwen2.5-72b-instruct.json", "--seq", "4K")
    _, what_if, _ = estimate_json(cli, configs / "qwen2.5-72b-instruct.json", "--seq", "4K", "--kv-heads", "64")
    assert real["kv_bytes_per_token"] == 320 * 1024 and what_if["kv_bytes_per_token"] == 2560 * 1024


def test_human_output_states_units(cli, configs):
    args = ("estimate", configs / "llama-2-7b.json", "--engine", "static", "--seq", "4K", "--kv-dtype", "fp16", "--gpu",
            "a100-80gb")
    code, out, _ = cli(*args)
    assert code == 0
    assert "512.00 KiB" in out and "2.00 GiB" in out and "fits" in out and " B)" not in out
    code, out, _ = cli(*args, "--detail")  # the exact bytes beside each figure
    assert code == 0 and "512.00 KiB (524,288 B)" in out and "2.00 GiB (2,147,483,648 B)" in out


def test_estimate_and_help_do_not_import_torch(configs):
    code = (
        "import sys; from kvplan.cli import entry as cli; cli.register_commands();"
        "from typer.testing import CliRunner; r = CliRunner().invoke(cli.app, ['estimate', sys.argv[1], '--json']);"
        "assert r.exit_code == 0, r.output; r = CliRunner().invoke(cli.app, ['--help']); assert r.exit_code == 0;"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(configs / "llama-3.1-8b.json")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_models_and_show(cli):
    code, out, _ = cli("models", "--json")
    rows = json.loads(out)["models"]
    assert code == 0 and len(rows) >= 20
    code, out, _ = cli("show", rows[0]["name"])
    assert code == 0 and f"name: {rows[0]['name']}" in out


@pytest.mark.parametrize("args,fragment", [
    (["estimate"], "Missing argument"),
    (["estimate", "gpt2", "--batch", "x"], "--batch"),
    (["estimate", "gpt2", "--bach", "2"], "--batch"),
    (["estimat"], "Did you mean 'estimate'"),
])
def test_usage_errors_are_one_line_too(args, fragment):
    out = subprocess.run([sys.executable, "-m", "kvplan", *args], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: ") and fragment in out.stderr, out.stderr


def test_engine_version_switches_vllm_logging_rules(cli):
    # 0.19 logs "GPU KV cache size" as blocks x block_size; 0.33 as int(concurrency x max_model_len)
    code19, d19, _ = estimate_json(cli, "llama-3.1-8b", "--seq", "8K", "--gpu", "h100", "--engine", "vllm", "--engine-version", "0.19")
    code33, d33, _ = estimate_json(cli, "llama-3.1-8b", "--seq", "8K", "--gpu", "h100", "--engine", "vllm")
    assert code19 == code33 == 0
    assert d19["kv_cache_tokens"] == d19["num_gpu_blocks"] * d19["block_size"]
    assert d33["kv_cache_tokens"] == int(d33["num_gpu_blocks"] / (8192 // d33["block_size"]) * 8192)
    code, _, err = cli("estimate", "llama-3.1-8b", "--engine-version", "0.19")
    assert code == 2 and "--engine-version" in err


def test_version():
    from kvplan import __version__

    out = subprocess.run([sys.executable, "-m", "kvplan", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"kvplan {__version__}"


def test_gpu_catalog_facts_the_vllm_rules_read():
    """The names other engineers map cloud labels to, and the facts vLLM's rules branch on."""
    names = {g.name for g in catalog.gpus()}
    for wanted in ("rtx-3090-24gb", "rtx-4080-16gb", "rtx-5090-32gb", "a40-48gb", "rtx-a6000-48gb", "l40-48gb", "h20-96gb",
                   "rtx-pro-6000-96gb", "gh200-96gb", "gb200-186gb", "b300-288gb", "mi355x-288gb", "gb10-128gb"):
        assert wanted in names
    # unified memory: the host's own use comes out of the GPU's capacity
    assert {g.name for g in catalog.gpus() if g.unified_memory} == {"gh200-96gb", "gh200-120gb", "gh200-144gb",
                                                                     "gb200-186gb", "gb300-288gb", "gb10-128gb"}
    assert catalog.find_gpu("dgx-spark").interconnect == "unified"
    # vLLM custom all-reduce: PCIe-only beyond two GPUs (L40S x8) vs an NVLink mesh (HGX H100)
    assert catalog.find_gpu("l40s").interconnect == "pcie" and catalog.find_gpu("h100").interconnect == "nvlink"
    assert catalog.find_gpu("mi300x").rocm and not catalog.find_gpu("h100").rocm
    # readings vLLM printed itself: 23.58 GiB (RTX 3090 V0 logs), 95.01 (RTX PRO 6000), 267.69 (B300)
    for name, printed in (("rtx-3090-24gb", 23.58), ("rtx-pro-6000-96gb", 95.01), ("b300-288gb", 267.69)):
        assert round(catalog.find_gpu(name).capacity_bytes / 2**30, 2) == printed
    assert catalog.find_gpu("gh200").capacity_bytes == 97280 * 2**20  # deviceQuery: 97280 MBytes (102005473280 bytes)
