"""`kvplan check` of RL trainers' rollouts (kvplan/check/readers/rl_rollout.py): OpenRLHF's train_ppo_ray options and
verl's main_ppo overrides read as the vLLM launch each framework builds, checked against the frameworks' own source
(OpenRLHF 0.10.1.post2 openrlhf/trainer/ray/vllm_engine.py create_vllm_engines and cli/train_ppo_ray.py; verl 0.6.1
workers/rollout/vllm_rollout/vllm_rollout_spmd.py, trainer/config/rollout/rollout.yaml) and hand arithmetic. The
public files are tests/data/deployments_2026/rl (SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvplan import engines
from kvplan.check import deployment, run
from kvplan.check.items import calls_of
from kvplan.check.readers import rl_rollout, scripts
from kvplan.core.errors import UnsupportedError

ROOT = Path(__file__).resolve().parent.parent
RL = ROOT / "tests" / "data" / "deployments_2026" / "rl"


def _trainer_args(name: str) -> tuple[str, ...]:
    path = RL / name
    workload = scripts.read_shell(path.read_text(encoding="utf-8"), source=str(path), where=name, base_dir=RL)[0]
    (call,) = calls_of(workload)
    return call.args


def _check(tmp_path: Path, text: str, **options):
    path = tmp_path / "train.sh"
    path.write_text(text, encoding="utf-8")
    (verdict,) = run.run_check([str(path)], deployment.CheckOptions(offline=True, **options)).verdicts
    return verdict


def test_openrlhf_hybrid_engine_is_the_engine_create_vllm_engines_builds():
    """OpenRLHF's train_ppo_ray_hybrid_engine.sh: create_vllm_engines passes model=--pretrain, tensor_parallel_size=2,
    max_model_len=--max_len 2048, gpu_memory_utilization=0.5, dtype="bfloat16", trust_remote_code=True, seed=42 + i
    (the parser's default), enable_prefix_caching=False (the switch is not given), enforce_eager=True,
    enable_sleep_mode=True, and for --enable_vllm_is_correction logprobs_mode="processed_logprobs", max_logprobs=1;
    AsyncLLMEngine.from_engine_args is vLLM's ENGINE_CONTEXT. With --colocate_all_models the engines start alone
    (--vllm_enable_sleep: train() waits for them) but each rollout wakes them beside the DeepSpeed processes, whose
    memory is not in the file: the co-tenant is open."""
    rollout = rl_rollout.openrlhf(_trainer_args("openrlhf--train_ppo_ray_hybrid_engine.sh"), where="x")
    words = list(rollout.words)
    pairs = {words[i]: words[i + 1] for i in range(len(words) - 1) if words[i].startswith("--")
             and not words[i + 1].startswith("--")}
    assert pairs["--model"] == "OpenRLHF/Llama-3-8b-sft-mixture"
    assert (pairs["--tensor-parallel-size"], pairs["--max-model-len"], pairs["--gpu-memory-utilization"]) == ("2", "2048", "0.5")
    assert (pairs["--dtype"], pairs["--seed"], pairs["--logprobs-mode"], pairs["--max-logprobs"]) == (
        "bfloat16", "42", "processed_logprobs", "1")
    assert {"--trust-remote-code", "--no-enable-prefix-caching", "--enforce-eager", "--enable-sleep-mode"} <= set(words)
    assert rollout.entry == "engine" and rollout.version == "0.19.0"
    assert rollout.cotenant is not None and "wakes the engines" in rollout.cotenant


def test_openrlhf_engines_on_their_own_gpus_take_the_default_share():
    """train_ppo_with_reward_fn.sh (`ray job submit ... -- python3 -m openrlhf.cli.train_ppo_ray`, read since this
    reader; it was skipped as starting no server): --colocate_actor_ref only, so the engines have their own placement
    group; no --vllm_gpu_memory_utilization: the parser's 0.95; --vllm_enable_sleep absent."""
    rollout = rl_rollout.openrlhf(_trainer_args("openrlhf--train_ppo_with_reward_fn.sh"), where="x")
    words = list(rollout.words)
    assert words[words.index("--gpu-memory-utilization") + 1] == "0.95"
    assert "--enable-sleep-mode" not in words and rollout.cotenant is None


def test_openrlhf_colocated_is_cannot_judge_until_the_trainer_memory_is_given(tmp_path):
    """--colocate_all_models without --vllm_enable_sleep: the DeepSpeed models load while the engines start; with it,
    every rollout wakes the engines beside them: the memory they hold is not in the file (cannot judge);
    --gpu-reserved gives it. Llama-3.1-8B (bundled) on an H100,
    util 0.5: vLLM needs 0.5 x 80 GiB free at start, so 30 GiB in use passes and 45 GiB (35 GiB free) does not start."""
    text = ("python3 -m openrlhf.cli.train_ppo_ray --pretrain meta-llama/Llama-3.1-8B-Instruct --vllm_num_engines 8 "
            "--vllm_tensor_parallel_size 1 --colocate_all_models --vllm_gpu_memory_utilization 0.5 --max_len 8192\n")
    refused = _check(tmp_path, text, gpu="h100")
    assert refused.status == "cannot_judge" and "no --vllm_enable_sleep" in refused.reason
    slept = _check(tmp_path, text.replace("--colocate_all_models", "--colocate_all_models --vllm_enable_sleep"), gpu="h100")
    assert slept.status == "cannot_judge" and "each rollout wakes the engines" in slept.reason
    assert _check(tmp_path, text, gpu="h100", gpu_reserved="30GiB").status == "pass"
    assert _check(tmp_path, text, gpu="h100", gpu_reserved="45GiB").status == "fail"


def test_openrlhf_rollout_is_judged_at_the_engine_entry_point(tmp_path):
    """A launch whose engines have GPUs of their own: Llama-3.1-8B (32 layers x 8 KV heads x 128 x 2 x 2 B = 131,072 B
    a token, 1 GiB a request at --max_len 8192) at vLLM 0.19 (OpenRLHF's pin) with ENGINE_CONTEXT's scheduler
    defaults (no get_batch_defaults row: SchedulerConfig's 2048 tokens, 128 sequences), where `vllm serve` of the same
    launch on an H100 takes 8192 tokens and 1024 sequences."""
    text = ("python3 -m openrlhf.cli.train_ppo_ray --pretrain meta-llama/Llama-3.1-8B-Instruct --vllm_num_engines 1 "
            "--vllm_tensor_parallel_size 1 --max_len 8192 --vllm_gpu_memory_utilization 0.5\n")
    verdict = _check(tmp_path, text, gpu="h100")
    assert verdict.status == "pass" and verdict.max_model_len == 8192
    path = tmp_path / "train.sh"
    defaults = deployment.defaults(deployment.CheckOptions(offline=True, gpu="h100"))
    from kvplan.check import workload as workloads
    work = scripts.read_shell(text, source=str(path), where="train.sh", base_dir=tmp_path)[0]
    (dep,) = workloads.deployments(work, defaults)
    assert ("entry_point", "engine") in dep.request.engine_options
    assert engines.get("vllm").releases.release(dep.request.engine_version).line == "0.18-0.19"
    vllm = engines.get("vllm")
    est = vllm.estimate(dep.request)
    assert (est.max_num_batched_tokens, est.max_num_seqs) == (2048, 128)
    import dataclasses
    served = vllm.estimate(dataclasses.replace(dep.request, engine_options=None))
    assert (served.max_num_batched_tokens, served.max_num_seqs) == (8192, 1024)
    assert round(verdict.figures.max_concurrency, 2) == round(verdict.figures.cache_bytes / (8192 * 131_072), 2)


def test_openrlhf_other_releases_options_are_named():
    """The older CLI (--prompt_max_len / --generate_max_len, OpenRLHF 0.9.7 and before) and options bash keeps in an
    array are cannot judge, naming them; an option no release has too."""
    with pytest.raises(UnsupportedError, match="--prompt_max_len is not an option of OpenRLHF 0.9.8"):
        rl_rollout.openrlhf(_trainer_args("openrlhf--train_ppo_llama_ray.sh"), where="x")
    with pytest.raises(UnsupportedError, match="--vllm_max_num_seqs is not an option"):
        rl_rollout.openrlhf(("--pretrain", "a/b", "--vllm_num_engines", "1", "--vllm_max_num_seqs", "8"), where="x")


def test_verl_overrides_are_the_engine_arguments_verl_passes():
    """run_qwen3-1.7b.sh (its `$@` left out: that alone is cannot judge in the check): TP 1, gpu_memory_utilization
    0.6, and rollout.yaml's defaults verl passes itself: max_num_batched_tokens 8192, max_num_seqs 1024, bfloat16,
    enforce_eager False, chunked prefill and prefix caching on. Without rollout.mode=sync the verl release decides
    max_model_len (512 + 1024 = 1536 or max_position_embeddings); with it (verl 0.6's vllm.LLM(...)) it is 1536, at the
    offline entry point."""
    args = tuple(a for a in _trainer_args("verl--run_qwen3-1.7b.sh") if "$@" not in a)
    rollout = rl_rollout.verl(args, where="x")
    words = list(rollout.words)
    assert words[:2] == ["--model", "Qwen/Qwen3-1.7B"]
    for flag, value in (("--tensor-parallel-size", "1"), ("--gpu-memory-utilization", "0.6"),
                        ("--max-num-batched-tokens", "8192"), ("--max-num-seqs", "1024"), ("--dtype", "bfloat16")):
        assert words[words.index(flag) + 1] == value
    assert {"--no-enforce-eager", "--enable-chunked-prefill", "--enable-prefix-caching"} <= set(words)
    assert "--max-model-len" not in words and "1536" in (rollout.open_reading or "")
    assert rollout.cotenant is not None and rollout.version is None
    sync = rl_rollout.verl(args + ("actor_rollout_ref.rollout.mode=sync",), where="x")
    assert sync.entry == "offline" and sync.open_reading is None
    assert sync.words[sync.words.index("--max-model-len") + 1] == "1536"


def test_verl_public_scripts_and_unknown_settings_are_cannot_judge(tmp_path):
    """`$@` hands the caller's overrides to main_ppo: cannot judge (as in a vllm serve line). A rollout key verl's
    rollout has not, an SGLang rollout, a refused setting: cannot judge naming them. With the trainer memory, the
    vLLM release and mode=sync given, Qwen3-8B (bundled) is judged: util 0.6 x 80 GiB = 48 GiB requested, so 20 GiB in
    use starts and 40 GiB (40 GiB free) does not."""
    with pytest.raises(UnsupportedError, match=r"\$@"):
        rl_rollout.verl(_trainer_args("verl--run_qwen3-8b.sh"), where="x")
    base = ("actor_rollout_ref.model.path=Qwen/Qwen3-8B", "actor_rollout_ref.rollout.name=vllm")
    with pytest.raises(UnsupportedError, match="rollout.swap_space"):
        rl_rollout.verl(base + ("actor_rollout_ref.rollout.swap_space=4",), where="x")
    with pytest.raises(UnsupportedError, match="name=sglang"):
        rl_rollout.verl(("actor_rollout_ref.model.path=Qwen/Qwen3-8B", "actor_rollout_ref.rollout.name=sglang"), where="x")
    with pytest.raises(UnsupportedError, match="lora_rank=32 makes verl's rollout a LoRA engine"):
        rl_rollout.verl(base + ("actor_rollout_ref.model.lora_rank=32",), where="x")
    with pytest.raises(UnsupportedError, match="engine_kwargs.vllm.swap_space is set"):
        rl_rollout.verl(base + ("+actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=4",), where="x")
    text = ("python3 -m verl.trainer.main_ppo " + " ".join(base) + " actor_rollout_ref.rollout.mode=sync "
            "actor_rollout_ref.rollout.tensor_model_parallel_size=1 actor_rollout_ref.rollout.gpu_memory_utilization=0.6"
            " data.max_prompt_length=512 data.max_response_length=1024\n")
    refused = _check(tmp_path, text, gpu="h100")
    assert refused.status == "cannot_judge" and "training worker's process" in refused.reason
    judged = _check(tmp_path, text, gpu="h100", gpu_reserved="20GiB", vllm_version="0.11.0")
    assert judged.status == "pass" and judged.max_model_len == 1536
    assert _check(tmp_path, text, gpu="h100", gpu_reserved="40GiB", vllm_version="0.11.0").status == "fail"


def test_verl_trainer_config_is_read_as_main_ppo_overrides(tmp_path):
    """volcengine/verl examples/split_placement/config/ppo_trainer_split.yaml: rollout TP 2, gpu_memory_utilization
    0.5, enforce_eager True, 8192 batched tokens, 1024 sequences (all written in the file), prompt_length
    ${data.max_prompt_length} = 512 and response_length ${data.max_response_length} = 512: with mode=sync the rollout
    is vllm.LLM(max_model_len=1024) (verl 0.6.1 vllm_rollout_spmd.py); without a mode the verl release decides."""
    import yaml

    from kvplan.check.readers import verl_config

    path = RL / "verl--ppo_trainer_split.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    (work,) = verl_config.read(doc, source=str(path), document=None, where="f", base_dir=RL)
    assert work.blocker is None and work.words[:3] == ("python3", "-m", "verl.trainer.main_ppo")
    rollout = rl_rollout.verl(work.words[3:] + ("actor_rollout_ref.rollout.mode=sync",), where="f")
    words = list(rollout.words)
    for flag, value in (("--tensor-parallel-size", "2"), ("--gpu-memory-utilization", "0.5"),
                        ("--max-num-batched-tokens", "8192"), ("--max-num-seqs", "1024"), ("--max-model-len", "1024")):
        assert words[words.index(flag) + 1] == value
    assert "--enforce-eager" in words and rollout.entry == "offline"
    assert "1024 (prompt + response" in (rl_rollout.verl(work.words[3:], where="f").open_reading or "")


def test_verl_config_composing_other_defaults_or_leaving_the_model_out_is_named(tmp_path):
    """A `defaults:` entry other than ppo_trainer / _self_ (ppo_megatron_trainer) composes settings kvplan has not; a
    vLLM rollout whose model the file leaves to the command line (verl's ???) does not start from the file alone; the
    multi-turn example runs SGLang (named)."""
    mega = tmp_path / "mega.yaml"
    mega.write_text("defaults:\n  - ppo_megatron_trainer\n  - _self_\nactor_rollout_ref:\n  model:\n    path: Qwen/Qwen3-8B\n"
                    "  rollout:\n    name: vllm\n", encoding="utf-8")
    nomodel = tmp_path / "nomodel.yaml"
    nomodel.write_text("actor_rollout_ref:\n  rollout:\n    name: vllm\n    gpu_memory_utilization: 0.7\n", encoding="utf-8")
    report = run.run_check([str(mega), str(nomodel), str(RL / "verl--gsm8k_multiturn_grpo.yaml")],
                           deployment.CheckOptions(offline=True, gpu="h100"))
    reasons = {Path(v.source).name: (v.status, v.format, v.reason) for v in report.verdicts}
    assert reasons["mega.yaml"][:2] == ("cannot_judge", "verl-config") and "ppo_megatron_trainer" in reasons["mega.yaml"][2]
    assert "actor_rollout_ref.model.path is not in the file" in reasons["nomodel.yaml"][2]
    assert "rollout.name=sglang" in reasons["verl--gsm8k_multiturn_grpo.yaml"][2]
