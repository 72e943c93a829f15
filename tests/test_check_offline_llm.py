"""`kvplan check` of Python programs that build vLLM's offline engine, vllm.LLM(...) (kvplan/check/readers/
offline_llm.py), on the public files of tests/data/deployments_2026/offline (SOURCES.md): read as the launch at the
offline entry point, whose scheduler defaults are vLLM's LLM_CLASS ones (engine/arg_utils.py get_batch_defaults)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from kvplan import engines
from kvplan.check import deployment, run
from kvplan.check.readers import offline_llm
from kvplan.core.errors import UnsupportedError
from kvplan.engines.vllm.engine import budgets_for

ROOT = Path(__file__).resolve().parent.parent
OFFLINE = ROOT / "tests" / "data" / "deployments_2026" / "offline"


def _deployment(name: str, **options):
    path = OFFLINE / name
    defaults = deployment.defaults(deployment.CheckOptions(offline=True, **options))
    items = offline_llm.read(path.read_text(encoding="utf-8"), path, source=name, where=name, defaults=defaults)
    assert items is not None and len(items) == 1
    return items[0]


def test_offline_program_is_judged_with_the_llm_class_defaults():
    """yanbinwa/bilbil_llm model_cache.py: LLM(model="Qwen/Qwen2.5-7B-Instruct"), nothing else. On an H100 with vLLM
    0.33 the LLM class defaults to 16384 batched tokens (get_batch_defaults: LLM_CLASS, >= 70 GiB, not an A100) where
    `vllm serve` of the same model defaults to 8192. Qwen2.5-7B (hidden 3584, vocabulary 152064, MLP 18944): 0.33's V2
    model runner warms its sampler on 1024 requests without top-k / top-p: 1024 x 152064 x 2 B of bf16 logits plus
    gumbel_sample's int64-and-float scratch, 12 B per request per 1024-logit block (149 blocks) = 313,257,984 B. The
    forward phase, T x (2 x 3584 + 3 x 18944) x 2 B, is then the peak at both: 2,097,152,000 B at 16384 and
    1,048,576,000 B at 8192, so the offline class's peak is about 1,048,576,000 B higher."""
    dep = _deployment("bilbil-llm--model_cache.py", gpu="h100")
    assert ("entry_point", "offline") in dep.request.engine_options
    vllm = engines.get("vllm")
    offline = vllm.estimate(dep.request)
    served_request = dataclasses.replace(dep.request, engine_options=None)
    served = vllm.estimate(served_request)
    assert offline.max_num_batched_tokens == 16384 and served.max_num_batched_tokens == 8192
    assert offline.max_num_seqs == served.max_num_seqs == 1024
    b_off, b_srv = budgets_for(dep.request)[0], budgets_for(served_request)[0]
    assert b_off.sampler_bytes == b_srv.sampler_bytes == 1024 * 152064 * 2 + 1024 * 149 * 12 == 313_257_984
    higher = b_off.activation_peak_bytes - b_srv.activation_peak_bytes
    assert abs(higher - (16384 - 8192) * (2 * 3584 + 3 * 18944) * 2) <= 1e-4 * higher  # the MLP width is estimated
    # the whole check: a pass on the H100, with the offline note
    report = run.run_check([str(OFFLINE / "bilbil-llm--model_cache.py")],
                           deployment.CheckOptions(gpu="h100", offline=True))
    (verdict,) = report.verdicts
    assert verdict.status == "pass" and verdict.format == "vllm-offline"
    assert any("offline class" in n for n in verdict.notes)


def test_module_constants_are_read_and_the_model_is_named():
    """emirhanerbil/azure_llm_category llm_test.py names its model through `model_name = "Qwen/Qwen2-7B-Instruct"`,
    and vLLM's reproducibility.py its seed through `SEED = 42`: both are read; what is left is the model, which kvplan
    does not hold offline (cannot judge, naming it)."""
    for name, model in (("azure-llm-category--llm_test.py", "Qwen/Qwen2-7B-Instruct"),
                        ("vllm--reproducibility.py", "facebook/opt-125m")):
        failure = _deployment(name, gpu="h100")
        assert isinstance(failure.error, UnsupportedError) and model in failure.error.what, (name, failure.error)


def test_what_the_program_computes_is_cannot_judge():
    """The reader's rule, on the smallest expressions that show it: a value the program computes (a name bound at run
    time, **kwargs) and a keyword that is no `vllm serve` option are refused, never guessed."""
    def call(src: str) -> ast.Call:
        node = ast.parse(src).body[0].value  # type: ignore[attr-defined]
        assert isinstance(node, ast.Call)
        return node

    with pytest.raises(UnsupportedError, match="computed by the program"):
        offline_llm._argv(call("LLM(model=args.model)"), {}, where="x.py:1", version=None)
    with pytest.raises(UnsupportedError, match="built by the program"):
        offline_llm._argv(call("LLM(model='m', **kw)"), {}, where="x.py:1", version=None)
    with pytest.raises(UnsupportedError, match="not a `vllm serve` option"):
        offline_llm._argv(call("LLM(model='m', use_dynamic_attn=True)"), {}, where="x.py:1", version=None)
    words = offline_llm._argv(call("LLM('m', enable_prefix_caching=False, max_model_len=4096)"), {}, where="x.py:1",
                              version=None)
    assert words == ["--model", "m", "--no-enable-prefix-caching", "--max-model-len", "4096"]


def test_engine_args_programs_are_read_at_the_engine_entry_point():
    """run-house/runhouse examples/fastapi-embeddings-rag/app/modules/llm.py builds AsyncEngineArgs(model=self.model_id,
    ...) for AsyncLLMEngine.from_engine_args: an engine built directly (UsageContext.ENGINE_CONTEXT). Its model is an
    attribute set at run time, so it is cannot judge naming the class and the value; the classes' entry points are
    vLLM's own names (engines/vllm/releases.py ENTRY_*)."""
    from kvplan.engines.vllm import releases
    assert set(offline_llm._CLASSES.values()) == {releases.ENTRY_OFFLINE, releases.ENTRY_ENGINE}
    failure = _deployment("runhouse--llm.py", gpu="h100")
    assert isinstance(failure.error, UnsupportedError)
    assert "AsyncEngineArgs(model=...) is computed by the program (self.model_id)" in failure.error.what
    tree = ast.parse((OFFLINE / "runhouse--llm.py").read_text(encoding="utf-8"))
    calls = offline_llm._calls(tree, *offline_llm._llm_names(tree))
    assert [(c.lineno, cls) for c, cls in calls] == [(25, "AsyncEngineArgs")]


def test_rl_trainer_script_is_cannot_judge_not_skipped():
    """volcengine/verl examples/grpo_trainer/run_qwen3-1.7b.sh starts `python3 -m verl.trainer.main_ppo`, whose vLLM
    rollout (actor_rollout_ref.rollout.name=vllm, gpu_memory_utilization 0.6) shares the GPUs with the FSDP actor and
    reference: a launch, so never "starts no server" (which a CI gate would pass). Its overrides end with `$@`, the
    caller's, which may change any rollout setting: cannot judge naming it (readers/rl_rollout.py reads the rest;
    tests/test_check_rl_rollout.py)."""
    path = ROOT / "tests" / "data" / "deployments_2026" / "rl" / "verl--run_qwen3-1.7b.sh"
    report = run.run_check([str(path)], deployment.CheckOptions(offline=True, gpu="h100"))
    (verdict,) = report.verdicts
    assert verdict.status == "cannot_judge" and report.exit_code == 3
    assert "its arguments include $@, set outside the file" in verdict.reason
