"""NVIDIA NIM containers (images under nvcr.io/nim/): the engine a NIM runs and the flags its NIM_* settings give it.

What NVIDIA documents (NIM for LLMs, docs.nvidia.com/nim/large-language-models):
- a NIM picks one *profile* at start from its manifest, by the GPUs it finds, unless NIM_MODEL_PROFILE names one;
  the profile decides the backend engine, the precision and the parallel layout. Readable profile names say them:
  `vllm-<precision>-tp<N>-pp<M>[-lora]` (2.x, deployment/model-profiles-and-selection), `tensorrt_llm-...-tp8-pp2`
  (1.x, configuration: "decipherable through their readable name"); a profile given by its hash id says nothing
  the file shows;
- NIM's settings are resolved by priority (2.x, reference/advanced-configuration): arguments after `nim-serve`, then
  NIM_PASSTHROUGH_ARGS (parsed as vLLM command-line arguments), then the NIM_* variables "that map to vLLM
  arguments", then runtime_config.json in the model workspace, the profile's tags (tp, pp), and NIM's own defaults —
  the last three are inside the image, not in the file;
- the model of a multi-LLM / model-free NIM is NIM_MODEL_NAME (1.x) or NIM_MODEL_PATH (2.x: `hf://org/name`); an
  LLM-specific NIM serves the checkpoint built into its image;
- NIM_MAX_MODEL_LEN is the context length, NIM_TENSOR_PARALLEL_SIZE / NIM_PIPELINE_PARALLEL_SIZE the layout,
  NIM_KV_CACHE_PERCENT the share of GPU memory vLLM may use (a fraction, as the 2.x troubleshooting/memory guide
  lowers it against OOM; NIM's vLLM engine arguments take it as gpu_memory_utilization), NIM_ENABLE_KV_CACHE_REUSE
  prefix caching (kv-cache-reuse: "also known as prefix caching").

So a NIM is judged only where the file shows everything that sizes its memory: a readable vLLM profile (the engine),
the model as a Hugging Face id, the context length and the memory share; what NIM would otherwise take from inside
the image is cannot judge, naming the setting that would give it. The vLLM release inside a NIM image is not in the
file either: it is judged by the rules kvplan uses for a launch that pins none, and the verdict says so. TensorRT-LLM
and SGLang profiles are cannot judge (NIM builds their settings its own way). A NIM_* variable kvplan does not know
is cannot judge, naming it. Pure of typer and rich."""

from __future__ import annotations

import re
import shlex
from typing import Mapping

from kvplan.check import launch, marks
from kvplan.core.errors import UnsupportedError
from kvplan.core.regex import Pattern

TITLE = "NVIDIA NIM"

# NIM_* variable -> the vLLM option it gives (NIM for LLMs configuration / environment-variables reference)
VLLM_FLAGS = {
    "NIM_MAX_MODEL_LEN": "--max-model-len",
    "NIM_TENSOR_PARALLEL_SIZE": "--tensor-parallel-size",
    "NIM_PIPELINE_PARALLEL_SIZE": "--pipeline-parallel-size",
    "NIM_KV_CACHE_PERCENT": "--gpu-memory-utilization",
}
_SWITCHES = {"NIM_ENABLE_KV_CACHE_REUSE": "--enable-prefix-caching"}
# settings that change no GPU memory: logging, ports, caches, names, credentials, chat and tool parsing
NO_MEMORY = {
    "NIM_SERVED_MODEL_NAME", "NIM_SERVER_PORT", "NIM_HTTP_API_PORT", "NIM_LOG_LEVEL", "NIM_JSONL_LOGGING",
    "NIM_DISABLE_LOG_REQUESTS", "NIM_CACHE_PATH", "NIM_TRUST_REMOTE_CODE", "NIM_CHAT_TEMPLATE",
    "NIM_ENABLE_AUTO_TOOL_CHOICE", "NIM_TOOL_CALL_PARSER", "NIM_TOOL_PARSER_PLUGIN", "NIM_GUIDED_DECODING_BACKEND",
    "NIM_TOKENIZER_MODE", "NIM_MANIFEST_ALLOW_UNSAFE", "NIM_TRITON_LOG_VERBOSE", "NIM_UVICORN_WORKERS",
    "NIM_SSL_MODE", "NIM_SSL_KEY_PATH", "NIM_SSL_CERTS_PATH", "NIM_SSL_CA_CERTS_PATH", "NIM_CUSTOM_MODEL_NAME",
    "NIM_REPOSITORY_OVERRIDE", "NIM_IGNORE_MODEL_DOWNLOAD_FAIL",
}
_MODEL = ("NIM_MODEL_PATH", "NIM_MODEL_NAME")
_READ = set(VLLM_FLAGS) | set(_SWITCHES) | NO_MEMORY | set(_MODEL) | {"NIM_MODEL_PROFILE", "NIM_PASSTHROUGH_ARGS"}
_HF_ID = Pattern(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
_PROFILE_ENGINE = Pattern(r"(vllm|sglang|tensorrt_llm|trtllm)(?:[-_]|$)")
_VLLM_PROFILE = Pattern(r"vllm(?:[-_]|$)")


def is_nim(image: str | None) -> bool:
    return launch.other_server_image(image) == TITLE


def engine_call(call: launch.EngineCall, env: Mapping[str, str | None], *, where: str) -> launch.EngineCall:
    """The vLLM launch a NIM container makes from the file's settings, or UnsupportedError naming what is unknown."""
    image = call.image
    shown = f"{TITLE} (image {image})"
    settings = {k: v for k, v in env.items() if k.startswith("NIM_")}
    unknown = sorted(k for k in settings if k not in _READ)
    if unknown:
        raise UnsupportedError(f"starts {shown} with {unknown[0]}, a NIM setting kvplan does not read", where=where,
                               hint="nothing is assumed: check the NIM's memory with its own list-model-profiles")
    for key, value in settings.items():
        if value is None and key not in NO_MEMORY:
            raise UnsupportedError(f"starts {shown}; {key} is set outside the file", where=where,
                                   hint="give its value in the file to judge the launch")
    profile = settings.get("NIM_MODEL_PROFILE")
    parsed = _PROFILE_ENGINE.match(profile or "")
    if parsed is None:
        why = (f"its profile {profile} is a hash id, which does not say" if profile else
               "no readable NIM_MODEL_PROFILE says") + " which engine (TensorRT-LLM, vLLM or SGLang) and layout it runs"
        raise UnsupportedError(f"starts {shown}: NIM picks its engine from the profile it selects at start, and {why}",
                               where=where, hint="set NIM_MODEL_PROFILE to a readable vllm-<precision>-tp<N>-pp<M> "
                               "profile (list-model-profiles prints them) to judge it as that vLLM launch")
    if not _VLLM_PROFILE.match(parsed.group(0)):
        raise UnsupportedError(f"starts {shown} with profile {profile}: its {parsed.group(1)} engine's settings "
                               "are NIM's own, which kvplan does not map", where=where,
                               hint="judge a vllm-* profile, or the engine's own launch")
    model = next((settings[k] for k in _MODEL if settings.get(k)), None)
    model = model.removeprefix("hf://") if model else None
    if not model or not _HF_ID.fullmatch(model):
        raise UnsupportedError(f"starts {shown}: its model is " + (f"{model}, not a Hugging Face id" if model else
                               "the checkpoint built into the image, which kvplan does not map to one"), where=where,
                               hint="name it in NIM_MODEL_PATH=hf://ORG/NAME (a model-free NIM) to judge it")
    args = [model]
    for key in ("NIM_MAX_MODEL_LEN", "NIM_KV_CACHE_PERCENT"):
        if not settings.get(key):
            raise UnsupportedError(f"starts {shown}: {key} is not set, so NIM takes it from the model's runtime config "
                                   "or its own defaults inside the image", where=where,
                                   hint=f"set {key} in the file to judge the launch")
    tp, pp = re.search(r"-tp(\d+)", profile or ""), re.search(r"-pp(\d+)", profile or "")
    layout: dict[str, str | None] = {"NIM_TENSOR_PARALLEL_SIZE": tp.group(1) if tp else None,
                                          "NIM_PIPELINE_PARALLEL_SIZE": pp.group(1) if pp else None}
    for key, flag in VLLM_FLAGS.items():
        value = settings.get(key) or layout.get(key)
        if value:
            args += [flag, str(value)]
    for key, flag in _SWITCHES.items():
        if (settings.get(key) or "").strip().lower() in ("1", "true", "yes", "on"):
            args.append(flag)
    passthrough = settings.get("NIM_PASSTHROUGH_ARGS")
    if passthrough:
        args += shlex.split(passthrough)  # after the NIM_* flags: they win over them, as in NIM's priority order
    after = list(call.args)
    if after[:1] == ["nim-serve"]:
        args += after[1:]  # arguments after nim-serve win over everything
    elif after:
        raise UnsupportedError(f"starts {shown} running `{marks.display(' '.join(after))[:80]}`, not nim-serve",
                               where=where, hint="judge the command it runs instead")
    return launch.EngineCall(launch.VLLM, f"{TITLE} profile {profile}", tuple(args), True, call.env, image, call.gpus)
