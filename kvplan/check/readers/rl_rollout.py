"""The rollout engine of an RL trainer's launch (OpenRLHF's `--vllm_*` options, verl's `actor_rollout_ref.rollout.*`
overrides), as the vLLM launch the trainer builds in its own processes, and what else holds its GPUs when it starts.

Read from each framework's own source (pip download --no-deps; file and release cited where each fact is used):

OpenRLHF 0.9.8 - 0.10.1.post2 (the `--max_len` CLI; 0.9.7 and older took --prompt_max_len/--generate_max_len,
0.10.2 and newer take dotted --vllm.* options): openrlhf/trainer/ray/vllm_engine.py create_vllm_engines builds each
engine as `vllm.AsyncEngineArgs(model=--pretrain, tensor_parallel_size=--vllm_tensor_parallel_size,
max_model_len=--max_len, gpu_memory_utilization=--vllm_gpu_memory_utilization, dtype="bfloat16",
enable_prefix_caching=--enable_prefix_caching, enforce_eager=--enforce_eager, enable_sleep_mode=--vllm_enable_sleep,
trust_remote_code=True, ...)` and starts it with `AsyncLLMEngine.from_engine_args` (vLLM's ENGINE_CONTEXT: neither
`vllm serve`'s nor the LLM class's scheduler defaults). setup.py pins vllm==0.18.0 (0.9.8) to 0.19.0 (0.10.1.post2):
one line of kvplan's vLLM rules. What shares the GPU at start (openrlhf/cli/train_ppo_ray.py train): the engines are
created before the actor, reference, critic and reward models; without --colocate_all_models (or with --async_train)
they have a placement group of whole GPUs of their own: nothing else is on them. With --colocate_all_models the
engines share GPUs with the DeepSpeed models' processes: without --vllm_enable_sleep those load while the engines
start (nothing waits); with it train() waits for every engine to sleep (batch_vllm_engine_call(..., "sleep")) before
the models exist, but each rollout wakes the engines beside them (ppo_utils/samples_generator.py), where the
reference and reward models stay unless --ref_reward_offload, the actor and critic unless --deepspeed_enable_sleep,
and every process keeps its CUDA context: what they hold is not settled by the file (--gpu-reserved gives it).

verl: every release builds the rollout inside the training worker's process on the GPUs its FSDP/Megatron actor,
reference and critic train on (verl/workers/fsdp_workers.py init_model: the actor is built, and offloaded only with
param_offload, before _build_rollout), so what they hold when vLLM starts depends on the model's size and the
sharding, not on the rollout's settings: cannot judge without --gpu-reserved. How the settings reach vLLM also
differs by verl release, and a launch script pins none: 0.6.1 `mode: sync` builds vllm.LLM(...) (the offline class;
vllm_rollout_spmd.py, max_model_len = rollout.max_model_len or prompt_length + response_length), 0.6.1 `mode: async`
passes them to `vllm serve`'s parser (vllm_async_server.py, max_model_len = prompt_length + response_length always),
0.7.0 only the server, with max_model_len = the model's max_position_embeddings (vllm_async_server.py
vLLMHttpServerBase). verl's own gpu_memory_utilization is vLLM's (a share of the whole GPU, vLLM >= 0.7; verl's
docs/examples/config.rst: "For vLLM v0.5.4 and v0.6.3: the proportion of the remaining GPU memory ... after other
models have initialized"), and verl 0.6.1 requires vllm 0.8.5 - 0.11.0, 0.7.0 0.8.5 - 0.12.0 (setup.py extras)."""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.check import marks
from kvplan.core.errors import InputError, UnsupportedError

OPENRLHF = "OpenRLHF"
VERL = "verl"


@dataclass(frozen=True)
class Rollout:
    """The rollout engine a trainer starts, as vLLM reads it."""

    framework: str
    words: tuple[str, ...]  # EngineArgs as `vllm serve` options, --model first
    entry: str  # the entry point whose scheduler defaults apply (vLLM releases.ENTRY_*: offline, engine, serve)
    version: str | None  # the vLLM release the framework pins, None: the file does not settle it
    version_origin: str | None
    spelled: dict[str, str]  # vLLM option (dest) -> how the file spells it, for fixes
    cotenant: str | None  # why what else holds the engine's GPUs when it starts is not settled; None: nothing else
    open_reading: str | None  # a setting the framework's release decides and the file does not pin
    notes: tuple[str, ...]


# ------------------------------------------------------------------------------------------------ OpenRLHF

# every option of openrlhf/cli/train_ppo_ray.py's parser in 0.9.8 (git d0e088b6) and 0.10.1.post2 (git ed62d0e2^):
# switches (store_true) and options that take a value. The rollout's are read below; the others set training,
# data and logging, which run in the trainer's own Ray actors, not in the engine.
_OPENRLHF_SWITCHES = frozenset("""
actor_init_on_gpu adam_offload apply_chat_template async_train colocate_actor_ref colocate_all_models
colocate_critic_reward deepcompile deepspeed_enable_sleep disable_ds_ckpt disable_fast_tokenizer dynamic_filtering
enable_ema enable_prefix_caching enable_vllm_is_correction enforce_eager freeze_visual_encoder full_determinism
gradient_checkpointing gradient_checkpointing_use_reentrant load_checkpoint load_in_4bit no_advantage_std_norm
normalize_reward overlap_comm packing_samples partial_rollout perf ref_reward_offload save_hf_ckpt save_value_network
use_ds_universal_ckpt use_dynamic_batch use_kl_loss use_liger_kernel use_ms vllm_enable_sleep vllm_sync_with_ray
""".split())
_OPENRLHF_VALUES = frozenset("""
actor_learning_rate actor_num_gpus_per_node actor_num_nodes adam_betas advantage_estimator agent_func_path
async_queue_size attn_implementation aux_loss_coef best_metric_key ckpt_path critic_learning_rate
critic_num_gpus_per_node critic_num_nodes critic_pretrain dataloader_num_workers ds_tensor_parallel_size dual_clip
dynamic_filtering_reward_range ema_beta entropy_loss_coef eps_clip eps_clip_low_high eval_dataset
eval_n_samples_per_prompt eval_split eval_steps eval_temperature freezing_actor_steps gamma grad_accum_dtype image_key
init_kl_coef input_key input_template kl_estimator kl_horizon kl_target l2 label_key lambd local_rank logging_steps
lora_alpha lora_dropout lora_rank lr_scheduler lr_warmup_ratio max_ckpt_mem max_ckpt_num max_epochs
max_images_per_prompt max_len max_new_tokens max_norm max_samples micro_rollout_batch_size micro_train_batch_size
n_samples_per_prompt num_episodes overlong_buffer_len overlong_penalty_factor param_dtype policy_loss_type pretrain
prompt_data prompt_data_probs prompt_split ptx_coef ref_num_gpus_per_node ref_num_nodes remote_rm_url
reward_clip_range reward_num_gpus_per_node reward_num_nodes reward_pretrain ring_attn_size ring_head_stride
rollout_batch_size rollout_max_tokens_per_gpu save_path save_steps seed stop_properly_penalty_coef target_modules
temperature top_p train_batch_size train_max_tokens_per_gpu use_tensorboard use_wandb value_clip value_head_prefix
vllm_generate_batch_size vllm_gpu_memory_utilization vllm_is_correction_type vllm_is_truncated_threshold
vllm_num_engines vllm_sync_backend vllm_tensor_parallel_size wandb_group wandb_org wandb_project wandb_run_name
zero_stage zpg
""".split())
# options taking several values (nargs): 2, or '*' (--target_modules)
_OPENRLHF_NARGS = {"vllm_is_truncated_threshold": 2, "eps_clip_low_high": 2, "adam_betas": 2, "reward_clip_range": 2,
                   "dynamic_filtering_reward_range": 2, "target_modules": -1}
# options of the other OpenRLHF CLIs, named in the refusal: the releases a script was written for, and why they are
# not read: across them the release (not in a script) decides the vLLM release and the entry point (git history of
# OpenRLHF/OpenRLHF setup.py and openrlhf/trainer/ray/vllm_engine.py)
_OLDER = ("0.9.7 or older, whose release decides the vLLM release (vllm 0.9.0.1 in 0.8.5 ... 0.17.1 in 0.9.7) and the "
          "entry point (vllm.LLM(...) up to 0.9.1, AsyncLLMEngine.from_engine_args from 0.9.1.post1)")
_DOTTED = ("0.10.2 or newer (dotted options), whose release decides the vLLM release (vllm 0.19.1 in 0.10.2 - 0.10.3, "
           "0.22.1 in 0.10.4 - 0.11.0)")
_OPENRLHF_OLDER = {"prompt_max_len": _OLDER, "generate_max_len": _OLDER, "bf16": _OLDER}
# the parser's defaults of the options the engine reads (train_ppo_ray.py, 0.9.8 - 0.10.1.post2 alike)
_OPENRLHF_DEFAULTS = {"vllm_tensor_parallel_size": "1", "vllm_gpu_memory_utilization": "0.95", "max_len": "2048",
                      "seed": "42", "max_images_per_prompt": "0", "actor_num_nodes": "1", "actor_num_gpus_per_node": "8"}
_OPENRLHF_VLLM = "0.19.0"  # setup.py extras "vllm": vllm==0.18.0 (0.9.8) ... 0.19.0 (0.10.0 - 0.10.1.post2): one line
_OPENRLHF_SPELLED = {"model": "--pretrain", "tensor_parallel_size": "--vllm_tensor_parallel_size",
                     "max_model_len": "--max_len", "gpu_memory_utilization": "--vllm_gpu_memory_utilization",
                     "enforce_eager": "--enforce_eager", "enable_prefix_caching": "--enable_prefix_caching",
                     "enable_sleep_mode": "--vllm_enable_sleep"}


def _unresolved(name: str, value: str, where: str) -> None:
    if marks.MARK in value:
        shown = ", ".join("$" + n.lstrip("$") for n in marks.unresolved_names(value))
        raise UnsupportedError(f"{name} is {shown}, set outside the file", where=f"{where}: {name}",
                               hint="give its value in the file (or a ${VAR:-default}) to judge the rollout")


def _openrlhf_options(args: tuple[str, ...], where: str) -> tuple[dict[str, str], set[str]]:
    """(option -> value, switches given) as train_ppo_ray.py's argparse reads the words; an option its parser does not
    have is cannot judge, naming it (argparse would stop the script; or it is another release's)."""
    values: dict[str, str] = {}
    switches: set[str] = set()
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if marks.MARK in word and not word.startswith("--"):
            _unresolved("an argument", word, where)
        if not word.startswith("--"):
            raise UnsupportedError(f"argument {marks.display(word)!r} is not an option of OpenRLHF's train_ppo_ray",
                                   where=where, hint="judge the rollout with --vllm-args")
        name, eq, inline = word[2:].partition("=")
        _unresolved("an option's name", name, where)
        if name in _OPENRLHF_SWITCHES and not eq:
            switches.add(name)
            continue
        if name not in _OPENRLHF_VALUES:
            older = _OPENRLHF_OLDER.get(name) or (_DOTTED if "." in name else None)
            raise UnsupportedError(
                f"--{name} is not an option of OpenRLHF 0.9.8 - 0.10.1's train_ppo_ray, whose rollout kvplan reads"
                + (f" (it is an option of OpenRLHF {older})" if older else ""), where=f"{where}: --{name}",
                hint="judge the rollout with --vllm-args (and --engine-option entry_point=engine)")
        if eq:
            values[name] = inline
            continue
        count = _OPENRLHF_NARGS.get(name, 1)
        taken: list[str] = []
        while i < len(args) and (count < 0 or len(taken) < count) and not args[i].startswith("--"):
            taken.append(args[i])
            i += 1
        if not taken:
            raise InputError(f"--{name} needs a value", where=f"{where}: --{name}", hint=f"--{name} VALUE")
        values[name] = " ".join(taken)
    return values, switches


def openrlhf(args: tuple[str, ...], *, where: str) -> Rollout:
    """The vLLM engines of `python -m openrlhf.cli.train_ppo_ray` (OpenRLHF 0.9.8 - 0.10.1.post2)."""
    values, switches = _openrlhf_options(args, where)
    for name in ("pretrain", "vllm_num_engines", "vllm_tensor_parallel_size", "vllm_gpu_memory_utilization", "max_len",
                 "max_images_per_prompt"):
        if name in values:
            _unresolved("--" + name, values[name], where)
    engines = values.get("vllm_num_engines")
    if engines is None or _int(engines, "--vllm_num_engines", where) == 0:
        raise UnsupportedError("OpenRLHF without --vllm_num_engines generates with its DeepSpeed actor, not an inference "
                               "engine: kvplan models vLLM, SGLang and TensorRT-LLM", where=where,
                               hint="nothing to judge for KV-cache capacity")
    if "pretrain" not in values:
        raise InputError("train_ppo_ray names no --pretrain: its engines have no model", where=where,
                         hint="--pretrain ORG/NAME")
    if _int(values.get("max_images_per_prompt", "0"), "--max_images_per_prompt", where) > 0:
        raise UnsupportedError("--max_images_per_prompt sets the engine's limit_mm_per_prompt (a vision model's "
                               "encoder cache), which kvplan does not model", where=f"{where}: --max_images_per_prompt",
                               hint="judge a text-only rollout")
    get = lambda name: values.get(name, _OPENRLHF_DEFAULTS.get(name))  # noqa: E731
    tp = _int(get("vllm_tensor_parallel_size"), "--vllm_tensor_parallel_size", where)
    colocated = "colocate_all_models" in switches and "async_train" not in switches
    # train(): --vllm_enable_sleep is turned off without --colocate_all_models (and refused with --async_train)
    sleep = "vllm_enable_sleep" in switches and "colocate_all_models" in switches
    words = ["--model", values["pretrain"], "--tensor-parallel-size", str(tp), "--max-model-len", get("max_len"),
             "--gpu-memory-utilization", get("vllm_gpu_memory_utilization"), "--dtype", "bfloat16",
             "--trust-remote-code", "--seed", get("seed")]
    # enable_prefix_caching and enforce_eager are passed as the switches' values, False included
    words.append("--enable-prefix-caching" if "enable_prefix_caching" in switches else "--no-enable-prefix-caching")
    if "enforce_eager" in switches:
        words.append("--enforce-eager")
    if sleep:
        words.append("--enable-sleep-mode")
    if "enable_vllm_is_correction" in switches:  # create_vllm_engines: logprobs_mode and max_logprobs=1
        words += ["--logprobs-mode", "processed_logprobs", "--max-logprobs", "1"]
    cotenant = None
    if colocated and not sleep:
        cotenant = ("with --colocate_all_models and no --vllm_enable_sleep the actor, reference, critic and reward models "
                    "load on the engines' GPUs while the engines start (train_ppo_ray.py does not wait for them)")
    elif colocated:
        # the engines start alone (train() waits for them to sleep before the DeepSpeed models exist), but every
        # rollout wakes them (samples_generator.py wake_up) beside the DeepSpeed models' processes: the reference and
        # reward models stay resident unless --ref_reward_offload, the actor and critic unless --deepspeed_enable_sleep
        # (ppo_trainer.py offload_states), and each process keeps its CUDA context on the GPU
        cotenant = ("with --colocate_all_models each rollout wakes the engines on GPUs the DeepSpeed actor, reference, "
                    "critic and reward processes share (resident: their CUDA contexts, and the models --ref_reward_offload"
                    " and --deepspeed_enable_sleep do not offload), so what they hold when vLLM takes its share back is "
                    "not in the file")
    where_gpu = ("the engines share GPUs with the DeepSpeed models" if colocated else
                 "the engines get whole GPUs of their own (a Ray placement group of their own)")
    notes = (f"OpenRLHF ({engines} engine(s) of TP {tp}): each engine is vllm.AsyncEngineArgs(...) started with "
             "AsyncLLMEngine.from_engine_args (openrlhf/trainer/ray/vllm_engine.py), so vLLM's ENGINE_CONTEXT "
             "scheduler defaults apply; " + where_gpu,)
    return Rollout(OPENRLHF, tuple(words), "engine", _OPENRLHF_VLLM,
                   "OpenRLHF 0.9.8 - 0.10.1 requires vllm 0.18.0 - 0.19.0 (setup.py)", dict(_OPENRLHF_SPELLED),
                   cotenant, None, notes)


def _int(text: str | None, name: str, where: str) -> int:
    try:
        return int(str(text))
    except ValueError:
        raise InputError(f"{name} {text!r} is not a whole number", where=f"{where}: {name}") from None


# ------------------------------------------------------------------------------------------------ verl

_ROLLOUT = "actor_rollout_ref.rollout."
_VERL_VLLM_NAME = "vllm"  # rollout.name of verl's vLLM rollout (a verl setting's value, not kvplan's engine key)
# the rollout settings that reach the engine (verl 0.6.1 / 0.7.0 rollout/rollout.yaml and the vLLM rollout files
# named in the module docstring) -> the EngineArgs field each sets
_VERL_ENGINE = {"tensor_model_parallel_size": "tensor_parallel_size", "gpu_memory_utilization": "gpu_memory_utilization",
                "max_num_batched_tokens": "max_num_batched_tokens", "max_num_seqs": "max_num_seqs", "dtype": "dtype",
                "enforce_eager": "enforce_eager", "enable_chunked_prefill": "enable_chunked_prefill",
                "enable_prefix_caching": "enable_prefix_caching", "max_model_len": "max_model_len"}
# the defaults verl 0.6.1 and 0.7.0 give them (rollout/rollout.yaml: the same in both)
_VERL_DEFAULTS = {"tensor_model_parallel_size": "2", "gpu_memory_utilization": "0.5", "max_num_batched_tokens": "8192",
                  "max_num_seqs": "1024", "dtype": "bfloat16", "enforce_eager": "False",
                  "enable_chunked_prefill": "True", "enable_prefix_caching": "True"}
# settings of the rollout that do not change the engine's memory at start: sampling, the trainer's log-prob passes,
# logging and tracing, the agent loop, sleep between steps (free_cache_engine: vLLM sleeps after it starts),
# how weights reach it (load_format, update_weights_bucket_megabytes, layered_summon)
_VERL_OTHER = frozenset("""
n temperature top_k top_p do_sample ignore_eos calculate_log_probs log_prob_micro_batch_size
log_prob_micro_batch_size_per_gpu log_prob_use_dynamic_bsz log_prob_max_token_len_per_gpu disable_log_stats
free_cache_engine load_format layered_summon update_weights_bucket_megabytes over_sample_rate multi_stage_wake_up
skip_rollout skip_dump_dir skip_tokenizer_init prompt_length response_length val_kwargs multi_turn agent trace profiler
prometheus logprobs_mode scheduling_policy checkpoint_engine enable_rollout_routing_replay name mode
""".split())
# settings kvplan refuses by name: they change the engine in ways it does not model here
_VERL_REFUSED = {"engine_kwargs": "extra EngineArgs verl passes through as they are",
                 "cudagraph_capture_sizes": "CUDA-graph sizes verl sets (compilation_config / cuda_graph_sizes)",
                 "quantization": "verl's on-the-fly FP8 rollout quantization", "quantization_config_file": "a "
                 "quantization config", "expert_parallel_size": "expert and data parallel rollout replicas",
                 "data_parallel_size": "data parallel rollout replicas",
                 "pipeline_model_parallel_size": "pipeline-parallel rollout", "limit_images": "a vision model's inputs"}


def _hydra(args: tuple[str, ...], where: str) -> dict[str, str]:
    """key -> value of Hydra overrides (key=value, +key=value, ++key=value); a config other than verl's default
    (--config-name / --config-path) or a deletion (~key) is cannot judge, naming it."""
    out: dict[str, str] = {}
    for word in args:
        if marks.MARK in word.partition("=")[0]:
            shown = ", ".join("$" + n.lstrip("$") for n in marks.unresolved_names(word))
            raise UnsupportedError(f"its arguments include {shown}, set outside the file (the caller's overrides may "
                                   "change any rollout setting)", where=where,
                                   hint="give the overrides in the file, or judge the rollout with --vllm-args")
        if word.startswith("-"):
            raise UnsupportedError(f"{marks.display(word)[:60]}: the trainer starts from a config file kvplan does not "
                                   "read here (verl's ppo_trainer.yaml defaults are the ones it knows)", where=where,
                                   hint="judge the rollout with --vllm-args")
        key, eq, value = word.lstrip("+").partition("=")
        if not eq or key.startswith("~"):
            raise UnsupportedError(f"override {marks.display(word)[:60]!r} is not key=value", where=where,
                                   hint="judge the rollout with --vllm-args")
        out[key] = value.strip("'\"")
    return out


def _verl_bool(value: str, key: str, where: str) -> bool:
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise InputError(f"{key}={value!r} is not true or false", where=f"{where}: {key}")


def verl(args: tuple[str, ...], *, where: str) -> Rollout:
    """The vLLM rollout of `python -m verl.trainer.main_ppo key=value ...` (verl's Hydra overrides)."""
    values = _hydra(args, where)
    rollout = {k[len(_ROLLOUT):]: v for k, v in values.items() if k.startswith(_ROLLOUT)}
    unknown = sorted({k.split(".")[0] for k in rollout} - set(_VERL_ENGINE) - _VERL_OTHER - set(_VERL_REFUSED))
    if unknown:
        raise UnsupportedError(f"rollout setting(s) {', '.join(_ROLLOUT + k for k in unknown)} are not settings of "
                               "verl 0.6 - 0.7's rollout kvplan reads", where=f"{where}: {_ROLLOUT}{unknown[0]}",
                               hint="judge the rollout with --vllm-args")
    for key, value in list(rollout.items()):
        _unresolved(_ROLLOUT + key, value, where)
        head = key.split(".")[0]
        if key.startswith("engine_kwargs.") and not key.startswith("engine_kwargs.vllm."):
            del rollout[key]  # another engine's (engine_kwargs.sglang): the vLLM rollout reads engine_kwargs.vllm only
            continue
        if key.startswith("engine_kwargs.vllm.") and (value in ("null", "None") or (
                key.split(".")[-1].startswith("disable_") and value in ("False", "false"))):
            continue  # verl drops None values; EngineArgs' disable_* fields are False by default
        if head in _VERL_REFUSED and value not in ("null", "None", "1", "{}", ""):
            raise UnsupportedError(f"{_ROLLOUT}{key} is set ({_VERL_REFUSED[head]}); kvplan does not model it",
                                   where=f"{where}: {_ROLLOUT}{key}", hint="judge the rollout with --vllm-args")
    for key in ("name", "mode", *_VERL_ENGINE, "prompt_length", "response_length"):
        if "${" in rollout.get(key, ""):
            raise UnsupportedError(f"{_ROLLOUT}{key} is {rollout[key]}, an interpolation kvplan does not resolve",
                                   where=f"{where}: {_ROLLOUT}{key}", hint="write the value, or judge with --vllm-args")
    name = rollout.get("name")
    if name in (None, "???"):
        raise InputError(f"{_ROLLOUT}name is not set (verl's default is ???: it must be given)", where=where,
                         hint=f"{_ROLLOUT}name=vllm")
    if name != _VERL_VLLM_NAME:
        raise UnsupportedError(f"{_ROLLOUT}name={name}: kvplan reads verl's vLLM rollout only (SGLang's runs as "
                               "sglang.srt Engine with verl's own arguments)", where=f"{where}: {_ROLLOUT}name",
                               hint="judge the rollout with --sglang-args on kvplan estimate")
    model = values.get("actor_rollout_ref.model.path")
    if model is None:
        raise InputError("actor_rollout_ref.model.path is not set", where=where,
                         hint="actor_rollout_ref.model.path=ORG/NAME")
    _unresolved("actor_rollout_ref.model.path", model, where)
    # a LoRA actor makes the rollout a LoRA engine (enable_lora, max_loras=1, max_lora_rank: verl 0.6.1
    # vllm_rollout_spmd.py lora_kwargs, vllm_async_server.py), whose adapter buffers kvplan does not model
    for key in ("actor_rollout_ref.model.lora_rank", "actor_rollout_ref.model.lora_adapter_path"):
        if values.get(key, "null") not in ("null", "None", "0", ""):
            raise UnsupportedError(f"{key}={values[key]} makes verl's rollout a LoRA engine (enable_lora, max_loras 1), "
                                   "whose adapter memory kvplan does not model", where=f"{where}: {key}",
                                   hint="judge the rollout without LoRA, or with --vllm-args")
    get = lambda key: rollout.get(key, _VERL_DEFAULTS.get(key))  # noqa: E731
    words = ["--model", model]
    for key in ("tensor_model_parallel_size", "gpu_memory_utilization", "max_num_batched_tokens", "max_num_seqs",
                "dtype"):
        words += ["--" + _VERL_ENGINE[key].replace("_", "-"), str(get(key))]
    for key in ("enforce_eager", "enable_chunked_prefill", "enable_prefix_caching"):
        on = _verl_bool(str(get(key)), _ROLLOUT + key, where)
        words.append(("--" if on else "--no-") + _VERL_ENGINE[key].replace("_", "-"))
    prompt = values.get("data.max_prompt_length", "512")  # rollout.yaml: ${oc.select:data.max_prompt_length,512}
    response = values.get("data.max_response_length", "512")
    prompt = rollout.get("prompt_length", prompt)
    response = rollout.get("response_length", response)
    for key, value in (("data.max_prompt_length", prompt), ("data.max_response_length", response)):
        _unresolved(key, value, where)
    total = _int(prompt, "data.max_prompt_length", where) + _int(response, "data.max_response_length", where)
    mode = rollout.get("mode")
    given_len = rollout.get("max_model_len")
    sync_len = given_len if given_len not in (None, "null", "None") else str(total)
    if mode == "sync":  # verl 0.6 and older: vllm.LLM(...) with max_model_len or prompt + response
        words += ["--max-model-len", sync_len]
        entry, open_reading = "offline", None
    else:
        entry = "serve"
        open_reading = (f"{_ROLLOUT}mode is {mode or 'not set'}, and the verl release, which the file does not pin, "
                        f"decides the rollout's max_model_len: {total} (prompt + response; verl 0.6.1's server) or "
                        "the model's max_position_embeddings (verl 0.7.0's)")
    cotenant = ("verl builds the rollout in the training worker's process, on the GPUs its FSDP/Megatron actor, "
                "reference and critic hold (offloaded or not: actor_rollout_ref.actor.fsdp_config.param_offload, "
                "...ref.fsdp_config.param_offload); what they hold when vLLM starts depends on the model and the "
                "sharding, not on the rollout's settings")
    note = (f"verl rollout (vLLM, {'mode sync: vllm.LLM(...), the offline class' if entry == 'offline' else 'the server'}"
            "): verl passes max_num_batched_tokens and max_num_seqs itself (8192 and 1024 by default), so no entry "
            "point's scheduler defaults apply")
    spelled = {dest: _ROLLOUT + key for key, dest in _VERL_ENGINE.items()}
    spelled["model"] = "actor_rollout_ref.model.path"
    return Rollout(VERL, tuple(words), entry, None, None, spelled, cotenant, open_reading, (note,))


def read(framework: str, args: tuple[str, ...], *, where: str) -> Rollout:
    """The rollout of a trainer named by launch.RL_TRAINER_MODULES' title."""
    if framework == OPENRLHF:
        return openrlhf(args, where=where)
    return verl(args, where=where)
