"""Every fix kvplan proposes, applied and judged again by `kvplan check`, passes.

estimate's fixes come from engines/fixes.py at the request's judging edge; check reads them back from a vLLM command
line through its own reader (check/readers/vllm_serve.py) and judges them with its own requirements. The two must
agree: a fix that check then fails as marginal is the contradiction this guards against. check's own fixes go
round the same way. Hypothesis draws bundled models, datacenter GPUs and lengths; few examples keep it cheap."""

from __future__ import annotations

import json
import re
import shlex

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine_requests import engine_request
from golden import harness
from kvplan import engines
from kvplan.engines import fixes

MODELS = ("llama-3.1-8b", "qwen2.5-7b", "llama-3.1-70b", "qwen3-8b", "qwen2.5-72b", "mistral-7b-v0.1", "gemma-3-27b", "phi-4",
          "mixtral-8x7b")
GPUS = ("l4-24gb", "a10g-24gb", "l40s-48gb", "a100-sxm-40gb", "h100-sxm-80gb")
LENGTHS = (16384, 32768, 65536, 131072)
SHAPES = st.tuples(st.sampled_from(MODELS), st.sampled_from(GPUS), st.sampled_from(LENGTHS), st.sampled_from((1, 2)))

# a fix's setting as the vLLM flag check's reader takes it
_FLAG = {fixes.MAX_LEN: "--max-model-len", fixes.TP: "--tensor-parallel-size", fixes.KV_DTYPE: "--kv-cache-dtype",
         fixes.UTIL: "--gpu-memory-utilization"}


def _check(model: str, gpu: str, flags: dict[str, str]) -> dict:
    line = " ".join(f"{k} {v}" for k, v in flags.items())
    case = f"check --vllm-args {shlex.quote(f'serve {model} {line}')} --gpu {gpu} --json"
    return json.loads(harness.run(case)["stdout"])["verdicts"][0]


def _check_kvplan_file(model: str, gpu: str, seq: int, tp: int, dtype: str) -> dict:
    """A 4-bit checkpoint is another checkpoint, not a flag: the bundled spec with its weights stored as `dtype` (as an
    AWQ / GPTQ export of the model stores them), judged as kvplan's own deployment file naming it. `dtype: int4` on
    the bf16 checkpoint itself is a launch no engine makes, and check refuses it (issue 26)."""
    import tempfile
    from pathlib import Path

    import yaml

    from kvplan.core import packaged

    spec = yaml.safe_load((packaged.folder("kvplan.model_specs") / f"{model}.yaml").read_text(encoding="utf-8"))
    spec.update(name=f"{model}-{dtype}", weight_dtype=dtype)
    spec.pop("aliases", None)
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "spec.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
        path = Path(folder, "deployment.yaml")
        path.write_text(f"name: fix\nmodel: ./spec.yaml\nengine: vllm\ngpu: {gpu}\ntensor_parallel_size: {tp}\n"
                        f"max_model_len: {seq}\ndtype: {dtype}\n", encoding="utf-8")
        return json.loads(harness.run(f"check {path} --json")["stdout"])["verdicts"][0]


def _estimate_fixes(model: str, gpu: str, seq: int, tp: int) -> list[fixes.Fix]:
    engine = engines.get("vllm")
    req = engine_request(model, seq, gpu=gpu, tp=tp)
    req, result = fixes.at_judging_edge(engine, req, engine.estimate(req))
    if not (result.starts is False or result.serves_batch is False):
        return []
    return fixes.search(engine, req, result, lambda r: fixes.fits(engine, r))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SHAPES)
def test_every_estimate_fix_passes_check(shape):
    model, gpu, seq, tp = shape
    found = _estimate_fixes(model, gpu, seq, tp)
    assume(found)
    base = {"--max-model-len": str(seq), "--tensor-parallel-size": str(tp)}
    for fix in found:
        flags, where = dict(base), gpu
        if fix.setting == fixes.ROPE:
            continue  # --hf-overrides needs the model's config.json, which a bundled name has not: judged below
        if fix.setting == fixes.WEIGHTS and fix.value == fixes.WEIGHTS_INT4:
            verdict = _check_kvplan_file(model, gpu, seq, tp, "int4")
            assert verdict["status"] == "pass", (shape, fix.setting, fix.value, verdict["reason"])
            continue
        if fix.setting == fixes.GPU:
            where = fix.value
        elif fix.setting == fixes.WEIGHTS:
            flags["--quantization"] = "fp8"
        elif fix.setting == fixes.UTIL:
            flags[_FLAG[fix.setting]] = f"{float(fix.value):.2f}"
        else:
            flags[_FLAG[fix.setting]] = str(fix.value)
        verdict = _check(model, where, flags)
        assert verdict["status"] == "pass", (shape, fix.setting, fix.value, verdict["reason"])


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SHAPES)
def test_every_check_fix_passes_check(shape):
    model, gpu, seq, tp = shape
    base = {"--max-model-len": str(seq), "--tensor-parallel-size": str(tp)}
    first = _check(model, gpu, base)
    assume(first["status"] == "fail" and first["suggestions"])
    for words in first["suggestions"]:
        if not words.startswith("--"):
            continue  # another checkpoint (4-bit weights), not a flag of this launch: the estimate test judges it
        flag, value = re.sub(r" \(.*\)$", "", words).split(" ", 1)
        flags, where = dict(base), gpu
        if flag == "--gpu":
            where = value
        else:
            flags[flag] = value
        verdict = _check(model, where, flags)
        assert verdict["status"] == "pass", (shape, words, verdict["reason"])


def test_estimate_longest_is_what_check_passes():
    """The issue's case: Llama-3.1-8B at 128K on an L4. estimate's longest context, given back to check, passes; one
    token more fails (the same edge: the judging edge of the band)."""
    engine = engines.get("vllm")
    req = engine_request("llama-3.1-8b", 131072, gpu="l4-24gb")
    _, result = fixes.at_judging_edge(engine, req, engine.estimate(req))
    longest = result.estimated_max_model_len
    assert longest and longest < 131072
    assert _check("llama-3.1-8b", "l4-24gb", {"--max-model-len": str(longest)})["status"] == "pass"
    over = _check("llama-3.1-8b", "l4-24gb", {"--max-model-len": str(longest + 16)})
    assert over["status"] == "fail"


def test_rope_scaling_reaches_a_length_past_the_models_limit_and_check_passes_it():
    """Qwen3-32B (max_position_embeddings 40,960) at 128K on two H100s: after the longest length that starts, the fix
    is YaRN RoPE scaling to 131,072 tokens (the model card's long-context setting), never only the variable that
    lifts vLLM's check; check, given the --hf-overrides, passes it."""
    model = "tests/data/public_models/Qwen--Qwen3-32B"
    engine = engines.get("vllm")
    from kvplan.requests.build import build_request

    req = build_request(model, seq="128K", batch=1, kv_dtype="auto", dtype=None, gpu="h100", gpu_mem=None, gpus=None,
                        tp=2, pp=1)
    req, result = fixes.at_judging_edge(engine, req, engine.estimate(req))
    found = fixes.search(engine, req, result, lambda r: fixes.fits(engine, r))
    assert [f.setting for f in found][:2] == [fixes.MAX_LEN, fixes.ROPE]
    rope = found[1]
    assert rope.from_len == 40960 and rope.value * 40960 >= 131072 and rope.request.spec.max_context == 131072
    overrides = fixes.rope_overrides(rope)
    verdict = _check(model, "h100-sxm-80gb", {"--max-model-len": "131072", "--tensor-parallel-size": "2",
                                              "--hf-overrides": f"'{overrides}'"})
    assert verdict["status"] == "pass", verdict["reason"]
