"""TensorRT-LLM's release lines, 0.5 ... 1.x, for both backends: one rules object per release, every rule that
changed stated once, with the first release that has it and where it was read.

No TensorRT-LLM wheel could be unpacked (PyPI holds stubs pointing at NVIDIA's index), so the rules come from the
open C++ and Python sources at the revisions the public code index keeps, the Triton tensorrtllm_backend tags
v0.5.0 ... v1.0.0 and the real start-up logs of tests/data/trtllm_logs (docs/research/trtllm-releases.md, E1-E8,
P1). A source revision that cannot be pinned to a tag is dated by the first release whose log shows the rule.

Two backends: `tensorrt` (trtllm-build engines: the C++ executor, Triton's tensorrtllm_backend, `trtllm-serve` on
an engine directory; the default before 1.0) and `pytorch` (the LLM API's PyTorch backend, `trtllm-serve`'s
default from 1.0). `release(version)` parses "0.16.0", "1.1.0rc3", "v0.8", "1.x"; `backend(rel, name)` resolves
a backend name for it. The registry gives the names every engine's does (engines/releases.py REGISTRY).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from kvplan.engines import releases as policy
from kvplan.core.errors import InputError, UnsupportedError
from kvplan.engines.changes import Change, History

Version = tuple[int, int, int]
TENSORRT, PYTORCH = "tensorrt", "pytorch"
BACKENDS = {"tensorrt": TENSORRT, "trt": TENSORRT, "engine": TENSORRT, "pytorch": PYTORCH, "torch": PYTORCH}


# the registry's order of releases (engines/changes.py); parse is read when first called
HISTORY = History(lambda version: parse(version))
sort_key, at_least, _at = HISTORY.key, HISTORY.at_least, HISTORY.at


# E2. KvCacheConfig's free_gpu_memory_fraction when not set (both backends read the same default)
FREE_FRACTION = (
    Change("0.5", Fraction(85, 100), "cpp/include/tensorrt_llm/batch_manager/kvCacheConfig.h kDefaultGpuMemFraction = "
                                     "0.85f; Triton backend v0.5-v0.7 'will use default value of 0.85'"),
    Change("0.8", Fraction(9, 10), "executor.h KvCacheConfig kDefaultGpuMemFraction = 0.9f; Triton backend v0.8.0+"),
)
# E7. tokens_per_block of a trtllm-build engine (a build setting): 64 in the 0.5 examples and the PluginConfig of
# ~0.10-0.12; the logs show 64 in 0.13.0.dev (631 blocks) and 0.16.0, 32 in 0.19.0 (0.17-0.18 not read: 64 kept)
ENGINE_TOKENS_PER_BLOCK = (
    Change("0.5", 64, "examples/*/build.py --tokens_per_block; tensorrt_llm/plugin/plugin.py PluginConfig"),
    Change("0.19", 32, "tensorrt_llm/plugin/plugin.py PluginConfig._tokens_per_block = 32 (log of 0.19.0: 32)"),
)
# the PyTorch backend: KvCacheConfig.tokens_per_block = 32 (llmapi/llm_args.py)
PYTORCH_TOKENS_PER_BLOCK = 32
# which backend `trtllm-serve` / the LLM API runs when not told (commands/serve.py --backend default)
DEFAULT_BACKEND = (
    Change("0.5", TENSORRT, "the C++ runtime / Triton tensorrtllm_backend"),
    Change("1.0", PYTORCH, "tensorrt_llm/commands/serve.py --backend default 'pytorch'"),
)
# kvplan's PyTorch-backend rules were checked on 0.20.0 and 1.1.0 logs; earlier PyTorch workflows are not modelled
PYTORCH_FROM = "0.20"
# E3. kv_cache_config.max_tokens given without a fraction: revisions A/B (~0.10-0.17) take it as the pool size,
# revision C (2025: VSWA) takes min(max_tokens, fraction x free) (the fraction defaults to 0.9 there)
MAX_TOKENS_RULE = (
    Change("0.5", "replaces", "batch_manager/kvCacheManager.cpp KVCacheManager::calculateMaxNumBlocks (revision A/B)"),
    Change("0.18", "min", "batch_manager/kvCacheManager.cpp BaseKVCacheManager::calculateMaxNumBlocks (revision C)"),
)
# E3. Variable sliding windows on the engine backend: none before revision C (one pool, every layer at the full
# length; the window only bounds a sequence's blocks), then per-window pools weighted by bytes x window x layers
ENGINE_VSWA = (
    Change("0.5", False, "batch_manager/kvCacheManager.cpp (revision A/B: a single window)"),
    Change("0.18", True, "batch_manager/kvCacheManager.cpp BlockManager::calculateWindowSizeToShare (revision C)"),
)
# E5. A pool shorter than max_seq_len on the engine backend: revision C lowers the attention window and
# max_seq_len and starts (clampWindowSizesToFitAtLeastOneSequence); before it, not read (None: not known)
ENGINE_SHORT_POOL = (
    Change("0.5", None, "-"),
    Change("0.18", "reduce", "batch_manager/trtGptModelInflightBatching.cpp clampWindowSizesToFitAtLeastOneSequence"),
)
# T6. The PyTorch backend's block count: its logs of 0.20.0 (1,002,276 -> 1,002,304 tokens), 1.1.0 (1,871,117 ->
# 1,871,136) and 1.1.0rc3 (86,711 -> 86,720) round max_tokens up to whole blocks (the C++ KVCacheManager's
# ceilDiv); the Python calculate_max_num_blocks of the main-branch revision read (commit 001541b, 2025-26) floors:
# kvplan dates that from 1.2 (not verified against a 1.2 log)
PYTORCH_BLOCKS = (
    Change("0.20", "ceil", "batch_manager/kvCacheManager.cpp (logs of 0.20.0, 1.1.0rc3, 1.1.0)"),
    Change("1.2", "floor", "_torch/pyexecutor/resource_manager.py KVCacheManager.calculate_max_num_blocks (001541b)"),
)
# The TensorRT-engine backend's sizing as far as it was read. Before 0.12 no release's sizing was read: the
# in-flight batching runtime (GptManager, TrtGptModelInflightBatching) shipped only as the closed
# libtensorrt_llm_batch_manager_static.a (NVIDIA/TensorRT-LLM#74, #1135, #2569: "not open-sourced yet" as late
# as 2024-12), and the public logs of 0.5 and 0.8 print a sizing of their own ("Using N tokens in paged KV
# cache", "Allocate N bytes for k/v cache") that no open source explains. From 0.12 the logs print the lines of
# the open kvCacheManager.cpp calculateMaxNumBlocks (revisions A/B: "Memory usage when calculating max tokens in
# paged kv cache: total: ..., available: ...", the 0.12.0.dev documentation run, 0.13.0.dev and 0.16.0), each
# after the engine, execution context, runtime buffers and decoder it is sized against; from 0.18 (revision C)
# the whole runtime is open. A release before ENGINE_FROM is refused on the engine backend (exit 3), not guessed.
ENGINE_READ = (
    Change("0.5", None, "closed libtensorrt_llm_batch_manager_static.a; logs: 'Using N tokens in paged KV cache' "
                        "(0.5, NVIDIA/TensorRT-LLM#224), 'Allocate N bytes for k/v cache' (0.8, #1400)"),
    Change("0.12", "A/B", "cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp KVCacheManager::calculateMaxNumBlocks "
                          "(open); the allocations before it as the 0.12.0.dev and 0.16.0 logs print them"),
    Change("0.18", "C", "batch_manager/trtGptModelInflightBatching.cpp and kvCacheManager.cpp (2025, open)"),
)
ENGINE_FROM = "0.12"
OLDEST = "0.5"
NEWEST_LINE = "1.x"
LINES = ("0.5-0.7", "0.8-0.11", "0.12-0.17", "0.18", "0.19-0.21", "1.x")


@dataclass(frozen=True)
class Release:
    version: str  # as kvplan names it: "0.16.0", "1.x" for the default
    line: str
    free_fraction: Fraction
    engine_tokens_per_block: int
    default_backend: str
    max_tokens_rule: str
    engine_vswa: bool
    engine_short_pool: str | None
    pytorch_blocks: str  # "ceil" or "floor"
    engine_read: str | None  # the engine backend's revision read (ENGINE_READ); None: refused

    @property
    def key(self) -> Version:
        return sort_key(self.version) if self.version != NEWEST_LINE else (1, 99, 0)

    @property
    def mirrors(self) -> str:
        """The release whose rules these are, as kvplan names it (the release itself; 1.x for the default)."""
        return self.version

    def at_least(self, version: str) -> bool:
        return self.key >= sort_key(version)


# a release has a major and a minor part, as vLLM's and SGLang's do: '99' alone is no version (exit 2)
_VERSION = re.compile(r"v?(\d+)\.(\d+|x)(?:\.(\d+))?([a-z0-9.+-]*)", re.IGNORECASE)


def parse(version: str) -> Version | None:
    """'0.16.0', '1.1.0rc3', 'v0.8', '0.13.0.dev2024082000', '1.x' -> (major, minor, patch); None otherwise."""
    m = _VERSION.fullmatch(str(version).strip())
    if not m:
        return None
    minor = m.group(2)
    return int(m.group(1)), 99 if minor.lower() == "x" else int(minor), int(m.group(3) or 0)


def _line(key: Version) -> str:
    if key >= (1, 0, 0):
        return "1.x"
    if key >= (0, 19, 0):
        return "0.19-0.21"
    if key >= (0, 18, 0):
        return "0.18"
    if key >= (0, 12, 0):
        return "0.12-0.17"
    if key >= (0, 8, 0):
        return "0.8-0.11"
    return "0.5-0.7"


def rules_at(key: Version, name: str) -> Release:
    return Release(version=name, line=_line(key), free_fraction=_at(FREE_FRACTION, key),
                   engine_tokens_per_block=_at(ENGINE_TOKENS_PER_BLOCK, key), default_backend=_at(DEFAULT_BACKEND, key),
                   max_tokens_rule=_at(MAX_TOKENS_RULE, key), engine_vswa=_at(ENGINE_VSWA, key),
                   engine_short_pool=_at(ENGINE_SHORT_POOL, key), pytorch_blocks=_at(PYTORCH_BLOCKS, key) or "ceil",
                   engine_read=_at(ENGINE_READ, key))


DEFAULT = rules_at((1, 99, 0), NEWEST_LINE)


def release(version: str | None, *, where: str = "--engine-version") -> Release:
    """The rules of a TensorRT-LLM release as a user or a log names it; None -> the 1.x line."""
    if version is None:
        return DEFAULT
    key = parse(version)
    hint = f"kvplan mirrors TensorRT-LLM {OLDEST} ... 1.x (lines {', '.join(LINES)})"
    if key is None:
        raise policy.not_a_version("TensorRT-LLM", str(version).strip(), where=where, hint=hint)
    if key < sort_key(OLDEST) or key[0] > 1:
        newer = key[0] > 1
        raise policy.outside("TensorRT-LLM", str(version).strip(), newer=newer, edge=NEWEST_LINE if newer else OLDEST,
                             where=where, hint=hint)
    name = f"{key[0]}.{key[1]}.{key[2]}" if key[0] == 0 else (NEWEST_LINE if key[1] == 99 else f"{key[0]}.{key[1]}.{key[2]}")
    return rules_at(key, name)


def backend(rel: Release, name: str | None, *, where: str = "--engine-option") -> str:
    """The backend a deployment runs: backend=tensorrt|pytorch, else the release's default; a backend whose sizing
    in that release was not read is refused (exit 3) naming both."""
    if name is None:
        chosen, where = rel.default_backend, "--engine-version"
    else:
        found = BACKENDS.get(str(name).strip().lower())
        if found is None:
            raise InputError(f"TensorRT-LLM has no backend {name!r}", where=where,
                             hint="backend=tensorrt or backend=pytorch")
        chosen = found
    if chosen == TENSORRT and rel.engine_read is None:
        raise UnsupportedError(f"TensorRT-LLM {rel.version}'s TensorRT-engine backend is not modelled: its in-flight "
                               "batching runtime shipped as a closed library and the sizing its logs print was not "
                               f"read (kvplan reads the engine backend from {ENGINE_FROM})", where=where,
                               hint=f"give --engine-version {ENGINE_FROM} or later if that is what runs; "
                                    "`kvplan probe` measures it on the GPU")
    if chosen == PYTORCH and not rel.at_least(PYTORCH_FROM):
        raise UnsupportedError(f"TensorRT-LLM {rel.version}'s PyTorch workflow is not modelled (kvplan's PyTorch-backend "
                               f"rules were checked on {PYTORCH_FROM} and later logs)", where=where,
                               hint=f"give backend=tensorrt, or --engine-version {PYTORCH_FROM} or later")
    return chosen


def closest(version: str | None) -> tuple[Release, str | None]:
    """The rules for a logged version, never refusing: 1.x when the log does not say or is newer."""
    if not version:
        return DEFAULT, "the log does not say its TensorRT-LLM version; 1.x rules applied"
    key = parse(version)
    if key is None:
        return DEFAULT, f"TensorRT-LLM version {version!r} not understood; 1.x rules applied"
    if key < sort_key(OLDEST):
        return release(OLDEST), f"TensorRT-LLM {version} is older than {OLDEST}; {OLDEST} rules applied"
    if key[0] > 1:
        return DEFAULT, f"TensorRT-LLM {version} is newer than 1.x; 1.x rules applied"
    return release(version), None
