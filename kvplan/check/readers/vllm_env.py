"""The closed world of a vLLM launch's environment: every VLLM_* variable a deployment sets is read by kvplan, known
to act only on the host, ignored by the release, or makes the answer "cannot judge" naming it.

vLLM reads its variables through vllm/envs.py; a VLLM_* name that file does not define is warned about and ignored
(platforms/interface.py validate_environ, 0.10.2-0.33.0). kvplan/data/vllm_env_names.json holds each modelled
release's defined names (scripts/vllm_env_names.py, from the PyPI wheels)."""

from __future__ import annotations

import functools
import json
from typing import Mapping

from kvplan.core import packaged
from kvplan.core.errors import UnsupportedError

PREFIX = "VLLM_"

# read by kvplan (kvplan/check/readers/vllm_serve.py, kvplan/engines/vllm/releases.py)
READ = frozenset({"VLLM_USE_V1", "VLLM_ATTENTION_BACKEND", "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_USE_FLASHINFER_SAMPLER",
                  "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "VLLM_ROCM_USE_AITER"})

# variables that act only outside the GPU's memory budget, each group with why (read in envs.py and the files that
# use them, 0.33.0). A name not here that the release defines makes the answer "cannot judge".
_HOST_SIDE: dict[str, tuple[str, ...]] = {
    "logging and log output": (
        "VLLM_CONFIGURE_LOGGING", "VLLM_LOGGING_CONFIG_PATH", "VLLM_LOGGING_LEVEL", "VLLM_LOGGING_PREFIX",
        "VLLM_LOGGING_STREAM", "VLLM_LOGGING_COLOR", "VLLM_LOG_STATS_INTERVAL", "VLLM_LOG_BATCHSIZE_INTERVAL",
        "VLLM_DISABLE_LOG_LOGO", "VLLM_DEBUG_LOG_API_SERVER_RESPONSE", "VLLM_REQUEST_BODY_LOG_LEVEL",
        "VLLM_RINGBUFFER_WARNING_INTERVAL", "VLLM_PROCESS_NAME_PREFIX"),
    "network addresses and ports": (
        "VLLM_HOST_IP", "VLLM_PORT", "VLLM_LOOPBACK_IP", "VLLM_RPC_BASE_PATH", "VLLM_DP_MASTER_IP", "VLLM_DP_MASTER_PORT",
        "VLLM_NIXL_SIDE_CHANNEL_HOST", "VLLM_NIXL_SIDE_CHANNEL_PORT", "VLLM_P2P_SIDE_CHANNEL_HOST",
        "VLLM_P2P_SIDE_CHANNEL_PORT", "VLLM_EC_SIDE_CHANNEL_HOST", "VLLM_EC_SIDE_CHANNEL_PORT",
        "VLLM_MOONCAKE_BOOTSTRAP_PORT"),
    "the HTTP server: API key, request limits and endpoints": (
        "VLLM_API_KEY", "VLLM_HTTP_TIMEOUT_KEEP_ALIVE", "VLLM_HTTP_MAX_REQUEST_BODY_SIZE", "VLLM_SERVER_DEV_MODE",
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "VLLM_ENABLE_COHERE_API", "VLLM_SKIP_MODEL_NAME_VALIDATION",
        "VLLM_DISABLE_REQUEST_ID_RANDOMIZATION", "VLLM_ENFORCE_STRICT_TOOL_CALLING", "VLLM_TOOL_JSON_ERROR_AUTOMATIC_RETRY"),
    "timeouts": (
        "VLLM_ENGINE_READY_TIMEOUT_S", "VLLM_ENGINE_ITERATION_TIMEOUT_S", "VLLM_RPC_TIMEOUT",
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "VLLM_WORKER_SHUTDOWN_TIMEOUT_SECONDS", "VLLM_IMAGE_FETCH_TIMEOUT",
        "VLLM_VIDEO_FETCH_TIMEOUT", "VLLM_AUDIO_FETCH_TIMEOUT", "VLLM_CHAT_TEMPLATE_RENDER_TIMEOUT",
        "VLLM_REGEX_COMPILATION_TIMEOUT_S", "VLLM_TOOL_PARSE_REGEX_TIMEOUT_SECONDS", "VLLM_P2P_HANDSHAKE_TIMEOUT_S",
        "VLLM_P2P_IDLE_TIMEOUT_S", "VLLM_MOONCAKE_CONNECTOR_TIMEOUT", "VLLM_MOONCAKE_ABORT_REQUEST_TIMEOUT",
        "VLLM_NIXL_ABORT_REQUEST_TIMEOUT", "VLLM_KEEP_ALIVE_ON_ENGINE_DEATH"),
    "download sources and cache folders on disk": (
        "VLLM_CONFIG_ROOT", "VLLM_CACHE_ROOT", "VLLM_ASSETS_CACHE", "VLLM_ASSETS_CACHE_MODEL_CLEAN", "VLLM_USE_MODELSCOPE",
        "VLLM_LORA_RESOLVER_CACHE_DIR", "VLLM_FLASHINFER_AUTOTUNE_CACHE_DIR", "VLLM_DEBUG_DUMP_PATH",
        "VLLM_MEDIA_FETCH_MAX_RETRIES", "VLLM_MEDIA_URL_ALLOW_REDIRECTS"),
    "usage statistics and tracing": (
        "VLLM_USAGE_STATS_SERVER", "VLLM_NO_USAGE_STATS", "VLLM_DO_NOT_TRACK", "VLLM_USAGE_SOURCE", "VLLM_TRACE_FUNCTION"),
    "how worker processes start (fork or spawn)": ("VLLM_WORKER_MULTIPROC_METHOD",),
    "vLLM's own build (setup.py), not read when serving": (
        "VLLM_MAIN_CUDA_VERSION", "VLLM_USE_PRECOMPILED", "VLLM_USE_PRECOMPILED_RUST", "VLLM_SKIP_PRECOMPILED_VERSION_SUFFIX",
        "VLLM_DOCKER_BUILD_CONTEXT", "VLLM_BUILD_COMMIT", "VLLM_BUILD_PIPELINE", "VLLM_BUILD_URL", "VLLM_IMAGE_TAG",
        "VLLM_TEST_USE_PRECOMPILED_NIGHTLY_WHEEL", "VLLM_SKIP_VERSION_SUFFIX", "VLLM_NCCL_INCLUDE_PATH"),
}
HOST_SIDE: dict[str, str] = {name: why for why, names in _HOST_SIDE.items() for name in names}

# PyTorch's caching allocator: expandable segments, a split size limit or a garbage-collection threshold change how
# much memory torch holds beyond what vLLM profiles (torch/csrc/c10/cuda/CUDACachingAllocator.cpp); not modelled
ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF"


@functools.lru_cache(maxsize=1)
def defined_names() -> dict[str, frozenset[str]]:
    """Each modelled release's envs.py names, by the release whose wheel was read."""
    table = json.loads(packaged.data_file("vllm_env_names.json").read_text(encoding="utf-8"))
    return {version: frozenset(names) for version, names in table["releases"].items()}


def ignored(env: Mapping[str, str | None], *, release: str, exact: bool) -> frozenset[str]:
    """The VLLM_* names in the environment that the release neither defines nor reads. `release`: the modelled
    release whose rules apply (its wheel's names); `exact`: the file pins that very release (else a name any modelled
    release reads counts as read, as the launch may run a release between them)."""
    names = [name for name in env if name.startswith(PREFIX)]
    if not names:
        return frozenset()
    tables = defined_names()
    own = tables[release]
    anywhere = frozenset().union(*tables.values())
    return frozenset(name for name in names if name not in own and (exact or name not in anywhere))


def judge(env: Mapping[str, str | None], *, release: str, exact: bool, where: str) -> list[str]:
    """Notes for the engine's environment, or UnsupportedError naming the first variable kvplan cannot judge."""
    if ALLOC_CONF in env:
        raise UnsupportedError(f"{ALLOC_CONF} changes how PyTorch's allocator caches GPU memory; not modelled",
                               where=f"{where}: environment {ALLOC_CONF}",
                               hint="kvplan refuses rather than guesses; `kvplan probe` measures such a launch on the GPU")
    skipped = ignored(env, release=release, exact=exact)
    notes = []
    for name in env:
        if name in skipped:
            notes.append(f"{name}: vLLM {release} neither defines (vllm/envs.py) nor reads it, so it warns and ignores it")
        elif name.startswith(PREFIX) and name not in READ and name not in HOST_SIDE:
            raise UnsupportedError(f"{name} changes how vLLM {release} runs; not modelled",
                                   where=f"{where}: environment {name}",
                                   hint="kvplan refuses rather than guesses; drop it, or `kvplan probe` measures the "
                                        "launch on the GPU")
    return notes
