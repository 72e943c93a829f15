"""A plan as people launch it: the engine's command line with the pool pinned, and deployment files (kvplan's own
YAML, a `vllm serve --config` file, docker-compose, Kubernetes) that `kvplan check` judges. Pure: text out.

The pool is pinned at the size the plan was sized with (plan.pinned_kv_bytes: the budget band's low edge when the
engine's budget has a measured band), so the engine cannot start with less than the plan assumes:
vLLM --kv-cache-memory-bytes (per GPU), SGLang --max-total-tokens, TensorRT-LLM kv_cache_config.max_tokens.
The running cap is the plan's batch limit (the most sequences whose TPOT estimate meets the target):
vLLM --max-num-seqs, SGLang --max-running-requests, TensorRT-LLM --max_batch_size.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from kvplan import engines
from kvplan.core.errors import InputError, UnsupportedError

FORMATS = ("kvplan", "vllm-config", "compose", "k8s")
# the releases whose rules kvplan's engines mirror (engines/*/releases.py); images are pinned to them
VLLM_IMAGE = "vllm/vllm-openai:v0.33.0"
VLLM_ROCM_IMAGE = "rocm/vllm-dev:main"  # AMD's vLLM build for Instinct GPUs (ROCm/vllm docs/dev-docker/README.md)


@dataclass(frozen=True)
class Launch:
    engine: str
    command: str  # one shell command line (for a multi-node replica: the head node's)
    extra_options: str | None  # TensorRT-LLM's --extra_llm_api_options file, YAML text
    pinned: str  # the pool pin in words


def model_reference(spec, given: str) -> str:
    """What a serving engine and `kvplan check` both resolve: the Hugging Face id a bundled spec carries, else the
    path or name the user gave."""
    for alias in spec.aliases:
        if "/" in alias:
            return alias
    return given


def _multi_node(plan) -> bool:
    return plan.nodes_per_replica > 1


def launch(plan, ref: str) -> Launch:
    """The command that starts one replica of `plan` (TP x PP GPUs), as the plan's engine writes it (its record's
    launch_command: engines/<engine>/present.py)."""
    command = engines.get(plan.engine).launch_command
    if command is None:
        raise InputError(f"no launch command for engine {plan.engine!r}", where="--engine")
    text, extra_options, pinned = command(plan, ref)
    return Launch(plan.engine, text, extra_options, pinned)


def _header(plan, model: str, check: str) -> list[str]:
    lines = [
        f"# kvplan plan {model}: #{plan.rank}, {plan.replicas} replica(s) of {plan.gpus_per_replica} x {plan.gpu} "
        f"({plan.engine}, TP {plan.tp} x PP {plan.pp}, KV {plan.kv_dtype}); {plan.gpus} GPUs on {plan.nodes} node(s)",
        f"# each replica holds {plan.held_per_replica:,} requests of the load's mean length at once; the running cap is "
        f"{plan.batch_limit:,}" + (" (the most within the latency targets)" if plan.batch_limit < plan.held_per_replica else ""),
    ]
    if plan.ttft is not None and plan.tpot is not None:
        lines.append(f"# estimated TTFT {plan.ttft.estimate_ms:,.0f} ms (band {plan.ttft.low_ms:,.0f}-{plan.ttft.high_ms:,.0f}), "
                     f"TPOT {plan.tpot.estimate_ms:,.1f} ms (band {plan.tpot.low_ms:,.1f}-{plan.tpot.high_ms:,.1f}) at the load")
    lines.append(f"# check it: {check}")
    return lines


def _check_vllm(plan, load, file_name: str) -> str:
    return f"kvplan check {file_name} --gpu {plan.gpu} --require-concurrency {_require_concurrency(plan, load)}"


def _require_concurrency(plan, load) -> int:
    """What `kvplan check` can hold the file to: requests of max_model_len at once on one replica (for a fixed-shape
    load exactly the plan's share; for a length mix, at most what the pool holds of the longest request)."""
    if load.kind == "concurrency":
        share = -(-load.concurrency // plan.replicas)
    else:
        share = max(1, round(plan.concurrency_per_replica))
    return max(1, min(share, plan.pool_requests, plan.batch_limit))


def kvplan_yaml(plan, load, *, model: str, ref: str, weight_dtype_given: str | None, file_name: str) -> str:
    lines = _header(plan, model, f"kvplan check {file_name}")
    lines += [
        f"name: {plan.engine}-{plan.gpu}-tp{plan.tp}-pp{plan.pp}",
        f"model: {ref}",
        f"engine: {plan.engine}",
        f"gpu: {plan.gpu}",
        f"tensor_parallel_size: {plan.tp}",
        f"pipeline_parallel_size: {plan.pp}",
        f"max_model_len: {plan.max_model_len}",
        f"kv_cache_dtype: {plan.kv_dtype_flag}",
    ]
    if weight_dtype_given:
        lines.append(f"dtype: {weight_dtype_given}")
    lines += [
        f"kv_cache_memory_bytes: {plan.pinned_kv_bytes}",
        f"max_num_seqs: {plan.batch_limit}",
        "require:",
        f"  concurrency: {_require_concurrency(plan, load)}",
    ]
    return "\n".join(lines) + "\n"


def _vllm_args(plan, ref: str) -> list[str]:
    return shlex.split(launch(plan, ref).command)[2:]  # after `vllm serve`; the model first


def vllm_config(plan, load, *, model: str, ref: str, weight_dtype_given: str | None, file_name: str) -> str:
    """A `vllm serve --config` file (the model inside: `vllm serve --config FILE`)."""
    _vllm_only(plan, "vllm-config")
    _native_weights(plan, weight_dtype_given)
    lines = _header(plan, model, _check_vllm(plan, load, file_name))
    lines += [f"model: {ref}", f"tensor-parallel-size: {plan.tp}"]
    if plan.pp > 1:
        lines.append(f"pipeline-parallel-size: {plan.pp}")
    lines.append(f"max-model-len: {plan.max_model_len}")
    if plan.kv_dtype_flag != "auto":
        lines.append(f"kv-cache-dtype: {plan.kv_dtype_flag}")
    lines += [f"kv-cache-memory-bytes: {plan.pinned_kv_bytes}", f"max-num-seqs: {plan.batch_limit}"]
    if plan.expert_parallel:
        lines.append("enable-expert-parallel: true")
    if _multi_node(plan):
        lines.append("distributed-executor-backend: ray")
    return "\n".join(lines) + "\n"


def _vllm_only(plan, fmt: str) -> None:
    if not engines.get(plan.engine).deployment_files:
        raise InputError(f"--emit {fmt} writes a vLLM deployment; this plan runs {plan.engine}", where="--emit",
                         hint="add --engine vllm, or --emit kvplan (any engine)")


def _native_weights(plan, weight_dtype_given: str | None) -> None:
    if weight_dtype_given:
        # vLLM would need --quantization for other weights than the checkpoint's, which `kvplan check` cannot judge
        raise UnsupportedError(f"a vLLM file for {weight_dtype_given} weights needs --quantization, which kvplan does not model",
                               where="--emit", hint="drop --dtype to plan the checkpoint's own weights, or --emit kvplan")


def _image(plan) -> str:
    return VLLM_ROCM_IMAGE if plan.gpu.startswith("mi") else VLLM_IMAGE


def _gpu_resource(plan) -> str:
    return "amd.com/gpu" if plan.gpu.startswith("mi") else "nvidia.com/gpu"


def compose(plan, load, *, model: str, ref: str, weight_dtype_given: str | None, file_name: str) -> str:
    """docker-compose: one service per replica of a single-node layout (GPUs split between them by device ids)."""
    _vllm_only(plan, "compose")
    _native_weights(plan, weight_dtype_given)
    if _multi_node(plan):
        raise UnsupportedError("a replica across nodes does not fit one docker-compose file", where="--emit",
                               hint="--emit k8s (a LeaderWorkerSet) or --emit vllm-config")
    per_node = max(1, plan.gpus_per_node // plan.gpus_per_replica)
    lines = _header(plan, model, _check_vllm(plan, load, file_name))
    lines += ["services:"]
    for i in range(min(plan.replicas, per_node)):
        first = i * plan.gpus_per_replica
        ids = ", ".join(f'"{d}"' for d in range(first, first + plan.gpus_per_replica))
        lines += [
            f"  {plan.engine}-{i}:",
            f"    image: {_image(plan)}",
            "    ipc: host",
            f"    ports: [\"{8000 + i}:8000\"]",
            "    command: " + json.dumps(["--model", *_vllm_args(plan, ref)]),
        ]
        if _gpu_resource(plan) == "nvidia.com/gpu":
            lines += ["    deploy:", "      resources:", "        reservations:", "          devices:",
                      f"            - {{driver: nvidia, device_ids: [{ids}], capabilities: [gpu]}}"]
        else:
            lines += ["    devices: [/dev/kfd, /dev/dri]", "    group_add: [video]"]
    if plan.replicas > per_node:
        lines.append(f"# {plan.replicas - per_node} more replica(s) run on other nodes: {plan.nodes} node(s) in all")
    return "\n".join(lines) + "\n"


def _gpu_label(gpu) -> str | None:
    """The node label NVIDIA's GPU feature discovery sets (nvidia.com/gpu.product): the device name with dashes."""
    for alias in gpu.aliases:
        if alias.startswith("NVIDIA ") or alias.startswith("Tesla "):
            return alias.replace(" ", "-")
    return None


def k8s(plan, load, *, model: str, ref: str, weight_dtype_given: str | None, file_name: str, gpu_facts) -> str:
    """Kubernetes: a Deployment of `replicas` pods for single-node layouts; a LeaderWorkerSet (one leader and the other
    nodes' workers per replica, vLLM over Ray) when a replica spans nodes."""
    _vllm_only(plan, "k8s")
    _native_weights(plan, weight_dtype_given)
    resource = _gpu_resource(plan)
    label = _gpu_label(gpu_facts) if gpu_facts is not None else None
    name = f"{plan.engine}-{plan.gpu}".replace(".", "-")
    args = ["--model", *_vllm_args(plan, ref)]
    per_pod = plan.gpus_per_replica if not _multi_node(plan) else plan.gpus_per_node
    lines = _header(plan, model, _check_vllm(plan, load, file_name))

    def container(indent: str, command: list[str] | None, with_args: bool) -> list[str]:
        out = [f"{indent}- name: {plan.engine}", f"{indent}  image: {_image(plan)}"]
        if command:
            out.append(f"{indent}  command: {json.dumps(command)}")
        if with_args:
            out.append(f"{indent}  args: {json.dumps(args)}")
        out += [f"{indent}  resources:", f"{indent}    limits:", f"{indent}      {resource}: {per_pod}"]
        return out

    selector = ["      nodeSelector:", f"        nvidia.com/gpu.product: {label}"] if label else []
    if not _multi_node(plan):
        lines += ["apiVersion: apps/v1", "kind: Deployment", "metadata:", f"  name: {name}", "spec:",
                  f"  replicas: {plan.replicas}", "  selector:", "    matchLabels:", f"      app: {name}", "  template:",
                  "    metadata:", "      labels:", f"        app: {name}", "    spec:"]
        lines += selector
        lines += ["      containers:", *container("        ", None, True)]
        return "\n".join(lines) + "\n"
    serve = "ray start --head --port=6379 && vllm serve " + shlex.join(args[1:])
    lines += ["apiVersion: leaderworkerset.x-k8s.io/v1", "kind: LeaderWorkerSet", "metadata:", f"  name: {name}", "spec:",
              f"  replicas: {plan.replicas}", "  leaderWorkerTemplate:", f"    size: {plan.nodes_per_replica}",
              "    leaderTemplate:", "      spec:"]
    lines += ["  " + s for s in selector]
    lines += ["        containers:", *container("          ", ["bash", "-c", serve], False),
              "    workerTemplate:", "      spec:"]
    lines += ["  " + s for s in selector]
    lines += ["        containers:",
              *container("          ", ["bash", "-c", "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"], False)]
    return "\n".join(lines) + "\n"


def render(fmt: str, plan, load, *, model: str, ref: str, weight_dtype_given: str | None, file_name: str, gpu_facts=None) -> str:
    if fmt == "kvplan":
        return kvplan_yaml(plan, load, model=model, ref=ref, weight_dtype_given=weight_dtype_given, file_name=file_name)
    if fmt == "vllm-config":
        return vllm_config(plan, load, model=model, ref=ref, weight_dtype_given=weight_dtype_given, file_name=file_name)
    if fmt == "compose":
        return compose(plan, load, model=model, ref=ref, weight_dtype_given=weight_dtype_given, file_name=file_name)
    if fmt == "k8s":
        return k8s(plan, load, model=model, ref=ref, weight_dtype_given=weight_dtype_given, file_name=file_name, gpu_facts=gpu_facts)
    raise InputError(f"unknown format {fmt!r}", where="--emit", hint="one of " + ", ".join(FORMATS))
