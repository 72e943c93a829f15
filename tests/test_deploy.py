"""Deployment files -> engine requests -> verdicts (kvplan/check/), checked against the engines themselves."""

import dataclasses
import json
import re
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan.model import catalog
from kvplan.check import deployment, report as check_report, run
from kvplan.check.readers import kvplan_yaml
from kvplan.core.errors import InputError
from kvplan.engines import static
from kvplan.engines.api import EngineRequest, Hardware
from kvplan.engines import vllm

H100 = deployment.CheckOptions(gpu="h100-sxm-80gb")


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def check(paths, options=H100, lines=()):
    return run.run_check([str(p) for p in paths], options, lines)


def one(folder, text, options=H100, name="d.yaml", optimistic=False):
    if optimistic:
        options = dataclasses.replace(options, optimistic=True)
    report = check([write(folder, name, text)], options)
    assert report.total == 1
    return report.verdicts[0]


# ------------------------------------------------------------------ exit codes

@pytest.mark.parametrize("statuses, code", [
    ([], 0), (["pass"], 0), (["pass", "fail"], 1), (["cannot_judge"], 3), (["fail", "cannot_judge"], 1),
    (["pass", "invalid"], 2), (["invalid", "fail", "cannot_judge"], 2),
])
def test_exit_code_precedence_invalid_then_fail_then_cannot_judge(statuses, code):
    verdicts = [check_report.Verdict(source="x", document=None, name="x", format=None, status=s, reason="") for s in statuses]
    assert check_report.exit_code(verdicts) == code


# ------------------------------------------------------------------ reading kvplan's format

def test_a_minimal_kvplan_deployment_takes_the_defaults(tmp_path):
    v = one(tmp_path, "model: llama-3.1-8b\nengine: static\ngpu: h100\n")
    assert v.status == "pass" and v.format == "kvplan" and v.name == "d"
    assert (v.max_model_len, v.tensor_parallel_size, v.pipeline_parallel_size, v.kv_cache_dtype) == (131072, 1, 1, "bf16")
    assert v.gpu == "h100-sxm-80gb" and v.gpus == 1


def test_the_command_line_gpu_fills_in_and_the_file_wins(tmp_path):
    assert one(tmp_path, "model: llama-3.1-8b\nengine: static\n", deployment.CheckOptions(gpu="a100-80gb")).gpu == "a100-sxm-80gb"
    assert one(tmp_path, "model: llama-3.1-8b\nengine: static\ngpu: h200\n", deployment.CheckOptions(gpu="a100")).gpu == "h200-141gb"
    v = one(tmp_path, "model: llama-3.1-8b\nengine: static\n", deployment.CheckOptions())
    assert v.status == "cannot_judge" and "no GPU" in v.reason and "--gpu" in v.reason  # exit 3: --gpu gives it


def test_relative_model_paths_resolve_from_the_file(tmp_path, configs):
    (tmp_path / ".git").mkdir()  # one repository holds both: a deployment names only files inside its own
    folder = tmp_path / "models" / "ft"
    folder.mkdir(parents=True)
    shutil.copy(configs / "llama-3.1-8b.json", folder / "config.json")
    v = one(tmp_path / "deploy" / "prod", "model: ../../models/ft\nengine: static\ngpu: h100\nmax_model_len: 8K\n")
    assert v.status == "pass" and v.model == "ft"
    v = one(tmp_path / "deploy", "model: ./nowhere\nengine: static\ngpu: h100\n")
    assert v.status == "invalid" and "deploy/nowhere" in v.reason and ": model" in v.reason


def test_hugging_face_ids_find_bundled_specs(tmp_path):
    assert one(tmp_path, "model: meta-llama/Llama-3.1-8B-Instruct\nengine: static\ngpu: h100\n").model == "llama-3.1-8b"


@pytest.mark.parametrize("text, key, words", [
    ("model: llama-3.1-8b\ngpu: h100\n", "", "missing key 'engine'"),
    ("engine: vllm\ngpu: h100\n", "", "missing key 'model'"),
    ("model: llama-3.1-8b\nengine: VLLM\ngpu: h100\n", "engine", "did you mean 'vllm'"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\ntensor_paralel_size: 2\n", "tensor_paralel_size", "did you mean"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\ngpu_memory: 80GiB\n", "gpu_memory", "not both"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu_memory: 80G\n", "gpu_memory", "ambiguous"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\nmax_model_len: 1.7K\n", "max_model_len", "decimals are not allowed with the binary suffix K"),  # vLLM refuses 1.7K too
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\ntensor_parallel_size: 2.0\n", "tensor_parallel_size", "whole number"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\npipeline_parallel_size: 64\n", "pipeline_parallel_size", "layers"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\ntensor_parallel_size: 12\n", "tensor_parallel_size", "32 attention heads"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\nkv_cache_dtype: int8\n", "kv_cache_dtype", "vLLM has no KV-cache dtype"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\nmax_model_len: 256K\n", "max_model_len", "vLLM refuses"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\ngpu_memory_utilization: 1.5\n", "gpu_memory_utilization", "(0, 1]"),
    ("model: llama-3.1-8b\nengine: static\ngpu: h100\nvllm_version: 0.19\n", "vllm_version", "engine vllm"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\nrequire: {concurrency: 0}\n", "require.concurrency", "at least 1"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\nrequire: {headroom: 100%}\n", "require.headroom", "below 100%"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\nrequire: {concurency: 2}\n", "require.concurency", "did you mean"),
    ("model: llama-3.1-8b\nengine: vllm\ngpu: h100\nrequire: 4\n", "require", "mapping"),
    ("- model: llama-3.1-8b\n", "", "YAML mapping"),
])
def test_invalid_deployments_name_the_file_and_key(tmp_path, text, key, words):
    v = one(tmp_path, text)
    assert v.status == "invalid", v
    where = v.reason.split(" — ")[0]
    assert where == (f"{tmp_path}/d.yaml: {key}" if key else f"{tmp_path}/d.yaml"), v.reason
    assert words in v.reason


def test_an_engine_kvplan_does_not_model_cannot_judge(tmp_path, monkeypatch):
    from kvplan import engines
    from kvplan.core.errors import UnsupportedError

    real = engines.get

    def without_sglang(name):
        if name == "sglang":
            raise UnsupportedError("engine 'sglang' is not modelled in this version", where="--engine")
        return real(name)

    monkeypatch.setattr(engines, "get", without_sglang)
    v = one(tmp_path, "model: llama-3.1-8b\nengine: sglang\ngpu: h100\n")
    assert v.status == "cannot_judge" and v.reason.startswith(f"{tmp_path}/d.yaml: engine")


@pytest.mark.parametrize("text, fraction", [("10%", Fraction(1, 10)), ("0.1", Fraction(1, 10)), ("0%", 0), ("12.5 %", Fraction(1, 8))])
def test_headroom_spellings(text, fraction):
    assert deployment.parse_headroom(text, where="x") == fraction


@pytest.mark.parametrize("text", ["10", "1", "-5%", "100%", "lots", True])
def test_headroom_refusals(text):
    with pytest.raises(InputError):
        deployment.parse_headroom(text, where="x")


def test_several_documents_are_several_deployments_and_one_bad_one_hides_none(tmp_path):
    path = write(tmp_path, "many.yaml", "name: a\nmodel: llama-3.1-8b\nengine: static\ngpu: h100\nmax_model_len: 8K\n---\n"
                                        "name: b\nmodel: llama-3.1-8b\nengine: static\ngpu: h100\ntensor_parallel_size: 3\n---\n"
                                        "name: c\nmodel: llama-3.1-8b\nengine: static\ngpu: h100\nmax_model_len: 8K\n")
    report = check([path])
    assert [(v.name, v.document, v.status) for v in report.verdicts] == [("a", 1, "pass"), ("b", 2, "invalid"), ("c", 3, "pass")]
    assert report.verdicts[1].reason.startswith(f"{path}#2: tensor_parallel_size")


def test_folders_sorted_hidden_skipped_missing_and_empty_reported(tmp_path):
    good = "model: llama-3.1-8b\nengine: static\ngpu: h100\nmax_model_len: 8K\n"
    write(tmp_path, "b/z.yml", good)
    write(tmp_path, "a.yaml", good)
    write(tmp_path, ".github/workflows/ci.yml", "on: push\n")
    write(tmp_path, "notes.txt", "not yaml")
    (tmp_path / "empty").mkdir()
    report = check([tmp_path, tmp_path / "missing.yaml", tmp_path / "empty"])
    sources = [v.source for v in report.verdicts]
    assert sources[:2] == [f"{tmp_path}/a.yaml", f"{tmp_path}/b/z.yml"]
    assert [v.status for v in report.verdicts] == ["pass", "pass", "invalid", "invalid"]
    assert "no such file" in report.verdicts[2].reason and "holds no deployment files" in report.verdicts[3].reason


def test_nothing_to_check_is_a_usage_error():
    with pytest.raises(InputError):
        run.run_check([], H100)


# ------------------------------------------------------------------ figures agree with the engines

def static_request(seq, batch, gpu="h100-sxm-80gb", tp=1, name="llama-3.1-70b"):
    spec = catalog.resolve_model(name)
    from kvplan.core.dtypes import dtype

    g = catalog.find_gpu(gpu)
    return static.estimate(EngineRequest(spec=spec, seq=seq, batch=batch, kv_dtype="bf16", tp=tp,
                                         hardware=Hardware(g.name, g.capacity_bytes)))


def test_static_figures_are_the_static_engines(tmp_path):
    v = one(tmp_path, "model: llama-3.1-70b\nengine: static\ngpu: h100\ntensor_parallel_size: 4\nmax_model_len: 32K\n"
                      "require: {concurrency: 8, headroom: 10%}\n")
    single, eight = static_request(32768, 1, tp=4), static_request(32768, 8, tp=4)
    assert v.figures.max_batch == single.max_batch and v.figures.usable_bytes == single.per_gpu.usable_bytes
    assert v.figures.headroom_bytes == eight.per_gpu.free_bytes
    assert v.figures.headroom_percent == float(round(Fraction(eight.per_gpu.free_bytes, eight.per_gpu.usable_bytes) * 100, 2))
    checks = {c.name: c for c in v.checks}
    assert checks["concurrency"].actual == single.max_batch and checks["concurrency"].passed == (single.max_batch >= 8)


def test_vllm_figures_are_the_vllm_engines(tmp_path, configs):
    v = one(tmp_path, "model: llama-3.1-8b\nengine: vllm\ngpu: h100\nmax_model_len: 32K\nrequire: {concurrency: 4, headroom: 5%}\n")
    req = kvplan_yaml.read({"model": "llama-3.1-8b", "engine": "vllm", "gpu": "h100", "max_model_len": "32K"},
                                   source="x", document=None, where="x", base_dir=tmp_path,
                                   defaults=deployment.defaults(H100)).request
    # check judges a modelled budget by the low edge of its band: its figures are the estimate's there
    result = vllm.estimate(dataclasses.replace(req, budget_edge="low"))
    assert v.figures.max_concurrency == result.max_concurrency and v.figures.num_gpu_blocks == result.num_gpu_blocks
    nominal = vllm.estimate(req)
    assert v.figures.available_kv_bytes == nominal.available_kv_bytes_low < nominal.available_kv_bytes
    assert any("judged by the low edge" in n for n in v.notes)
    # the pool is preallocated: headroom is the part 4 requests leave unused, over what vLLM may use
    unused = (result.num_gpu_blocks - 4 * result.blocks_per_request) * result.bytes_per_block + result.per_gpu.free_bytes
    assert v.figures.headroom_bytes == unused
    assert v.status == "pass"


def test_a_vllm_start_failure_reads_like_vllms_error(tmp_path):
    # pinned to 0.27.1, whose V1 model runner's sampler warm-up leaves 1.4 GiB (0.33's V2 runner leaves about 3.3)
    text = ("model: llama-3.1-70b\nengine: vllm\ngpu: h100\ntensor_parallel_size: 2\nmax_model_len: 128K\n"
            "vllm_version: 0.27.1\n")
    v = one(tmp_path, text, optimistic=True)
    assert v.status == "fail"
    assert re.fullmatch(r"one request of 128K tokens needs [\d.]+ GiB of KV cache per GPU, [\d.]+ GiB available; "
                        r"longest that fits: [\d,]+ tokens", v.reason), v.reason
    # the modelled 1.4 GiB is inside the band; its low edge leaves nothing for the cache
    v = one(tmp_path, text)
    assert v.status == "fail" and v.reason.startswith("no memory is left for the KV cache")


def test_a_marginal_pass_is_a_fail_that_says_so(tmp_path):
    """A concurrency requirement between what the low edge of the band holds and what the modelled budget holds:
    check fails it and says marginal; --optimistic passes it. (Llama-3.1-8B on one H100: a max_model_len whose
    logged concurrency crosses a whole number inside the band.)"""
    for tokens in (2048, 3072, 4096, 5120, 6144, 7168):
        base = f"model: llama-3.1-8b\nengine: vllm\ngpu: h100\nmax_model_len: {tokens}\n"
        nominal, low = one(tmp_path, base, optimistic=True), one(tmp_path, base)
        need = int(nominal.figures.max_concurrency)
        if low.figures.max_concurrency < need <= nominal.figures.max_batch:
            break
    else:
        raise AssertionError("no length puts a whole concurrency inside the band")
    text = base + f"require: {{concurrency: {need}}}\n"
    optimistic = one(tmp_path, text, optimistic=True)
    pessimistic = one(tmp_path, text)
    assert optimistic.status == "pass" and pessimistic.status == "fail"
    assert pessimistic.reason.startswith("marginal: passes with the modelled budget but not at the low edge")


def test_max_num_seqs_caps_concurrency(tmp_path):
    v = one(tmp_path, "model: llama-3.1-8b\nengine: vllm\ngpu: h100\nmax_model_len: 4K\nmax_num_seqs: 16\n"
                      "require: {concurrency: 32}\n")
    assert v.status == "fail" and "max_num_seqs 16" in v.reason


def test_vllm_concurrency_counts_the_null_block(tmp_path):
    """vLLM logs concurrency as num_gpu_blocks / blocks per request, but block 0 is its null block
    (v1/core/block_pool.py): a pool of exactly 4 x 512 blocks (4 GiB of Llama-3.1-8B at 8192 tokens) logs 4.00x and
    holds 3 requests of max_model_len at once, as `estimate --batch 4` says. Found: check passed concurrency 4."""
    v = one(tmp_path, "model: llama-3.1-8b\nengine: vllm\ngpu: h100\nmax_model_len: 8192\nkv_cache_memory_bytes: 4GiB\n"
                      "require: {concurrency: 4}\n")
    assert v.figures.max_concurrency == 4.0 and v.figures.max_batch == 3
    assert v.status == "fail" and "null block" in v.reason
    ok = one(tmp_path, "model: llama-3.1-8b\nengine: vllm\ngpu: h100\nmax_model_len: 8192\nkv_cache_memory_bytes: 4GiB\n"
                       "require: {concurrency: 3}\n")
    assert ok.status == "pass"


# ------------------------------------------------------------------ every fix is a fix

def apply(text: str, suggestion: str) -> str | None:
    """The deployment with one suggested change applied (kvplan format)."""
    key, _, value = suggestion.partition(": ")
    value = value.split(" (")[0]
    lines = [line for line in text.splitlines() if not line.startswith(key + ":")]
    return "\n".join(lines + [f"{key}: {value}"]) + "\n"


@pytest.mark.parametrize("text", [
    "model: llama-3.1-70b\nengine: static\ngpu: h100\ntensor_parallel_size: 4\nmax_model_len: 32K\nrequire: {concurrency: 32}\n",
    "model: llama-3.1-8b\nengine: vllm\ngpu: l40s\nmax_model_len: 128K\nrequire: {concurrency: 4, headroom: 10%}\n",
    "model: qwen2.5-72b\nengine: vllm\ngpu: h100\ntensor_parallel_size: 2\nmax_model_len: 32K\n",
])
def test_each_suggested_fix_alone_makes_it_pass(tmp_path, text):
    v = one(tmp_path, text)
    assert v.status == "fail" and v.suggestions
    for i, suggestion in enumerate(v.suggestions):
        fixed = one(tmp_path, apply(text, suggestion), name=f"fix{i}.yaml")
        assert fixed.status == "pass", (suggestion, fixed.reason)


# ------------------------------------------------------------------ vLLM configs

def test_vllm_configs_take_vllms_names_and_defaults(tmp_path):
    v = one(tmp_path, "model: meta-llama/Llama-3.1-8B-Instruct\nmax-model-len: 16K\ntensor_parallel_size: 1\nport: 8000\n",
            name="serve.yaml")
    assert v.format == "vllm-config" and v.engine == "vllm" and v.max_model_len == 16384 and v.status == "pass"
    v = one(tmp_path, "model: meta-llama/Llama-3.1-8B-Instruct\n", name="serve.yaml")
    assert v.max_model_len == 131072  # vLLM's default: the model's length


def test_vllm_dtype_and_kv_dtype(tmp_path):
    base = "model: meta-llama/Llama-3.1-8B-Instruct\nmax-model-len: 16K\n"
    assert one(tmp_path, base + "kv-cache-dtype: fp8\n", name="s.yaml").kv_cache_dtype == "fp8_e4m3"
    assert one(tmp_path, base + "dtype: float16\n", name="s.yaml").kv_cache_dtype == "fp16"
    assert one(tmp_path, base + "dtype: float32\n", name="s.yaml").kv_cache_dtype == "fp32"
    # fp8_inc is Intel Gaudi's format (vLLM's HPU path): no NVIDIA GPU runs it, so the launch is invalid there
    v = one(tmp_path, base + "kv-cache-dtype: fp8_inc\n", name="s.yaml")
    assert v.status == "invalid" and ": kv-cache-dtype" in v.reason and "no NVIDIA GPU runs it" in v.reason


@pytest.mark.parametrize("extra, status, key", [
    # fp8 on a 16-bit checkpoint and --cpu-offload-gb are modelled (tests/test_features_vllm.py); these are not
    ("quantization: awq\n", "cannot_judge", "quantization"),
    ("offload-group-size: 4\n", "cannot_judge", "offload-group-size"),
    ("max-model-len: 1M\n", "invalid", "max-model-len"),
    ("tensor-parallel-size: 3\n", "invalid", "tensor-parallel-size"),
    ("gpu-memory-utilization: 0\n", "invalid", "gpu-memory-utilization"),
    ("block-size: 0\n", "invalid", "block-size"),
])
def test_vllm_config_refusals(tmp_path, extra, status, key):
    v = one(tmp_path, "model: meta-llama/Llama-3.1-8B-Instruct\n" + extra, name="s.yaml")
    assert v.status == status and v.reason.startswith(f"{tmp_path}/s.yaml: {key} —"), v.reason


def test_a_vllm_config_needs_a_gpu_and_one_document(tmp_path):
    v = one(tmp_path, "model: meta-llama/Llama-3.1-8B-Instruct\n", deployment.CheckOptions(), name="s.yaml")
    assert v.status == "cannot_judge" and "--gpu" in v.reason  # a vLLM config names no GPU: exit 3 until --gpu gives one
    report = check([write(tmp_path, "two.yaml", "model: llama-3.1-8b\n---\nmodel: llama-3.1-8b\n")])
    assert [v.status for v in report.verdicts] == ["invalid", "invalid"] and "one YAML document" in report.verdicts[0].reason


def test_the_checkpoints_own_quantization_is_accepted(tmp_path, configs):
    folder = tmp_path / "q"
    folder.mkdir()
    cfg = json.loads((configs / "llama-3.1-8b.json").read_text())
    cfg["quantization_config"] = {"quant_method": "fp8"}
    (folder / "config.json").write_text(json.dumps(cfg))
    v = one(tmp_path, "model: ./q\nquantization: fp8\nmax-model-len: 8K\n", name="s.yaml")
    assert v.status != "cannot_judge", v.reason


def test_gpus_sets_the_tensor_parallel_size(tmp_path):
    text = "model: meta-llama/Llama-3.1-70B-Instruct\nmax-model-len: 8K\n"
    assert one(tmp_path, text, deployment.CheckOptions(gpu="h100", gpus=4), name="s.yaml").tensor_parallel_size == 4
    v = one(tmp_path, text + "tensor-parallel-size: 2\n", deployment.CheckOptions(gpu="h100", gpus=4), name="s.yaml")
    # the file's own size wins; --gpus is said not to be used
    assert v.tensor_parallel_size == 2 and any("--gpus 4 is not used" in n for n in v.notes)
    assert v.origins.gpus.endswith("(--gpus 4 not used)")


def test_data_parallel_replicas_each_hold_a_pool(tmp_path):
    v = one(tmp_path, "model: meta-llama/Llama-3.1-8B-Instruct\nmax-model-len: 8K\ndata-parallel-size: 4\n", name="s.yaml")
    one_replica = one(tmp_path, "model: meta-llama/Llama-3.1-8B-Instruct\nmax-model-len: 8K\n", name="t.yaml")
    assert v.status == "pass" and v.gpus == 4 and any("4 replicas" in n for n in v.notes)
    # the pool of one replica is the pool of the same launch without DP (a dense model: nothing is sharded over DP)
    assert v.figures.num_gpu_blocks == one_replica.figures.num_gpu_blocks


def test_vllm_command_lines(tmp_path):
    report = check([], lines=("serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8K", "serve nope/nope"))
    # a Hugging Face id found nowhere (offline: no bundled spec, no cache) cannot be judged; it is not a bad file
    assert [v.status for v in report.verdicts] == ["pass", "cannot_judge"] and report.verdicts[1].source == "--vllm-args#2"
    assert "Hugging Face cache" in report.verdicts[1].reason


# ------------------------------------------------------------------ determinism

def test_same_input_same_report(tmp_path):
    examples = Path(__file__).resolve().parent.parent / "examples"
    a = check([examples / "deploy", examples / "bad"])
    b = check([examples / "deploy", examples / "bad"])
    assert a == b
    assert json.dumps(dataclasses.asdict(a)) == json.dumps(dataclasses.asdict(b))


# ------------------------------------------------------------------ robustness

_VALUES = st.sampled_from([None, True, False, 0, -1, 1, 4, 10**20, 1.5, 0.9, float("nan"), float("inf"), "", "x", "32K",
                           "1T", "auto", "fp8", "10%", [], [1], {}, {"a": 1}, "llama-3.1-8b", "h100", "vllm", "static"])


def test_a_gpu_memory_under_one_byte_is_bad_input_not_a_crash(tmp_path):
    """Found by the fuzz test below: `gpu_memory: 0.9` (bytes, no unit) rounded to a 0-byte GPU, and vLLM's
    utilization limit divided by it (ZeroDivisionError)."""
    report = check([write(tmp_path, "tiny.yaml", "model: llama-3.1-8b\nengine: vllm\ngpu_memory: 0.9\n")])
    v = report.verdicts[0]
    assert (report.total, v.status) == (1, check_report.INVALID) and "gpu_memory — must be a size, got 0.9" in v.reason


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kvplan_format=st.booleans(), data=st.data())
def test_any_mapping_gets_a_verdict_never_a_crash(tmp_path, kvplan_format, data):
    import yaml

    keys = list(kvplan_yaml.KVPLAN_KEYS) if kvplan_format else ["model", "max-model-len", "tensor-parallel-size",
                                                           "gpu-memory-utilization", "kv-cache-dtype", "block-size",
                                                           "max-num-seqs", "dtype", "data-parallel-size", "enforce-eager"]
    doc = data.draw(st.dictionaries(st.sampled_from(keys), _VALUES, min_size=1, max_size=6))
    if kvplan_format:
        doc.setdefault("engine", "vllm")
    doc.setdefault("model", "llama-3.1-8b")
    path = write(tmp_path, "fuzz.yaml", yaml.safe_dump(doc))
    report = check([path])
    assert report.total == 1 and report.verdicts[0].status in check_report.STATUSES


@pytest.mark.parametrize("engine, slots_field, unit_field", [("sglang", "max_total_num_tokens", "page_size"),
                                                           ("trtllm", "kv_cache_tokens", "tokens_per_block")])
def test_pool_engines_headroom_is_the_unused_part_of_their_pool(tmp_path, engine, slots_field, unit_field):
    from kvplan import engines

    doc = {"model": "llama-3.1-8b", "engine": engine, "gpu": "h100", "max_model_len": "32K"}
    v = one(tmp_path, "".join(f"{k}: {val}\n" for k, val in doc.items()) + "require: {concurrency: 4, headroom: 10%}\n")
    req = kvplan_yaml.read(doc, source="x", document=None, where="x", base_dir=tmp_path,
                                   defaults=deployment.defaults(H100)).request
    r = engines.get(engine).estimate(req)
    slots, unit, pool = getattr(r, slots_field), getattr(r, unit_field), r.per_gpu.cache_bytes
    per_request = -(-32768 // unit) * unit * (pool // slots)
    assert v.figures.headroom_bytes == pool - 4 * per_request + r.per_gpu.free_bytes
    assert v.status == "pass" and 0 < v.figures.headroom_percent < 100


def test_vllm_prefix_caching_reaches_the_engine(tmp_path, configs):
    """A hybrid on vLLM 0.33 holds 3 GDN state blocks a request with prefix caching (its default) and 1 without
    (kvplan/engines/vllm/engine.py _mamba_cache_mode): the flag changes the figures; on 0.19 turning it on cannot be judged."""
    # the config is copied beside the files: a deployment names only files inside the checked repository
    model = tmp_path / "qwen3-next" / "config.json"
    model.parent.mkdir()
    shutil.copy(configs / "qwen3-next-80b-a3b-thinking.json", model)
    base = f"model: {model.parent}\nmax-model-len: 32K\ntensor-parallel-size: 4\n"
    on = one(tmp_path, base, name="on.yaml")
    off = one(tmp_path, base + "enable-prefix-caching: false\n", name="off.yaml")
    assert on.figures.num_gpu_blocks != off.figures.num_gpu_blocks
    assert off.figures.max_concurrency > on.figures.max_concurrency
    old = one(tmp_path, base + "enable-prefix-caching: true\n", deployment.CheckOptions(gpu="h100-sxm-80gb", vllm_version="0.19"),
              name="old.yaml")
    assert old.status == "cannot_judge" and "prefix caching" in old.reason and ": enable-prefix-caching" in old.reason


def test_check_names_the_pin_of_the_pool_it_judged(tmp_path):
    """Pinning kv_cache_memory_bytes to the value check prints makes vLLM's pool exactly the blocks check judged
    (vLLM 0.10.2+; the low edge of the band by default), and the same deployment pinned passes on the same figures."""
    text = "model: llama-3.1-8b\nengine: vllm\ngpu: h100\nmax_model_len: 32K\n"
    v = one(tmp_path, text)
    note = next(n for n in v.notes if n.startswith("pin it:"))
    pin = int(re.search(r"kv_cache_memory_bytes (\d+)", note).group(1))
    assert f"exactly the {v.figures.num_gpu_blocks:,} blocks" in note and "fit beside it" in note
    pinned = one(tmp_path, text + f"kv_cache_memory_bytes: {pin}\n")
    assert pinned.figures.num_gpu_blocks == v.figures.num_gpu_blocks and pinned.status == v.status == "pass"


def test_check_offers_the_fp8_fix_estimate_finds(tmp_path):
    """Llama-3.1-8B at 128K on one H100 holds 3 requests at once in bf16; 6 are required. An fp8 KV cache is one of
    the single changes that pass (half the bytes a token: 131,072 -> 65,536), as estimate --batch 6 finds too; check
    must offer it (it once dropped it)."""
    v = one(tmp_path, "model: llama-3.1-8b\nengine: vllm\ngpu: h100\nmax_model_len: 128K\nrequire: {concurrency: 6}\n")
    assert v.status == "fail" and "kv_cache_dtype: fp8" in v.suggestions
    fixed = one(tmp_path, "model: llama-3.1-8b\nengine: vllm\ngpu: h100\nmax_model_len: 128K\nkv_cache_dtype: fp8\n"
                          "require: {concurrency: 6}\n", name="fp8.yaml")
    assert fixed.status == "pass"
