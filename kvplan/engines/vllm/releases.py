"""vLLM's release lines: one rules object per line, every rule that changed between releases stated once, with
the release it changed in and the vLLM file it was read from. Every consumer (the engine, the budget, the
`vllm serve` option table, check, calibrate) asks this registry; a version string is parsed here only.

A line is named by its first two numbers ("0.19") and mirrors one release whose source was read (`mirrors`);
any release of the line ("0.19.1", "v0.19.5rc1") gets its rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from kvplan.core.errors import InputError, did_you_mean


@dataclass(frozen=True)
class Release:
    """The rules of one vLLM release line (v1 engine)."""

    line: str  # "0.19"
    mirrors: str  # the release whose source was read: "0.19.0"
    # config/cache.py CacheConfig.gpu_memory_utilization: Field(default=0.9); 0.92 from the 0.3x line
    default_gpu_util: Fraction
    # v1/worker/gpu_worker.py determine_available_memory: 0.19 logs the profiled CUDA-graph estimate, later lines
    # subtract it from the KV budget
    cuda_graph_subtracted: bool
    # v1/core/kv_cache_utils.py: 0.19 logs "GPU KV cache size" as num_gpu_blocks // groups x block_size; later
    # lines as int(concurrency x max_model_len)
    tokens_logged_from_concurrency: bool
    # v1/core/kv_cache_utils.py check_enough_kv_cache_memory: later lines keep the null block back before the fit test
    null_block_reserved_before_fit: bool
    # config/vllm.py max_in_flight_tokens: 0.19 counts one batch of max_num_batched_tokens in flight; later lines
    # schedule asynchronously on the V2 model runner, pp + 1 batches at once
    async_scheduling: bool
    # engine/arg_utils.py get_batch_defaults: the 0.3x line adds 16384 / 1024 on GPUs of >= 160 GiB
    large_gpu_batch_defaults: bool
    # config/model.py ModelConfig.is_prefix_caching_supported: hybrid (attention + Mamba) models default to prefix
    # caching from the 0.3x line (mamba_cache_mode "align"); 0.19 serves them without it and refuses it
    hybrid_prefix_caching: bool
    # hybrid attention + Mamba block size: MLA attention aligns to 64 tokens in 0.19
    # (model_executor/models/config.py HybridAttentionMambaModelConfig), 128 later
    # (platforms/interface.py _align_hybrid_block_size), which also aligns to at least the requested block size
    # and to the GDN prefill checkpoints
    hybrid_mla_alignment: int
    hybrid_align_to_block_size: bool
    # v1/core/kv_cache_utils.py unify_kv_cache_spec_page_size: 0.19 raises NotImplementedError for pages that do
    # not divide the largest one; later lines pad the smaller page (not MLA's)
    pads_uneven_pages: bool
    # vllm/utils/argparse_utils.py: 0.3x registers EnableDisableAction for switches (--disable-x for --enable-x)
    enable_disable_switches: bool
    # the spelling of vLLM's not-fit error: 0.19 writes "the models's max seq len"
    not_fit_possessive: str


RELEASES = (
    Release(line="0.19", mirrors="0.19.0", default_gpu_util=Fraction(9, 10), cuda_graph_subtracted=False,
            tokens_logged_from_concurrency=False, null_block_reserved_before_fit=False, async_scheduling=False,
            large_gpu_batch_defaults=False, hybrid_prefix_caching=False, hybrid_mla_alignment=64,
            hybrid_align_to_block_size=False, pads_uneven_pages=False, enable_disable_switches=False,
            not_fit_possessive="models's"),
    Release(line="0.33", mirrors="0.33.0", default_gpu_util=Fraction(23, 25), cuda_graph_subtracted=True,
            tokens_logged_from_concurrency=True, null_block_reserved_before_fit=True, async_scheduling=True,
            large_gpu_batch_defaults=True, hybrid_prefix_caching=True, hybrid_mla_alignment=128,
            hybrid_align_to_block_size=True, pads_uneven_pages=True, enable_disable_switches=True,
            not_fit_possessive="model's"),
)
DEFAULT = RELEASES[-1]
_BY_LINE = {r.line: r for r in RELEASES}
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+)(?:\.\d+)?)?([a-z0-9.+-]*)", re.IGNORECASE)


def parse(version: str) -> tuple[int, int, int] | None:
    """'0.19', '0.19.5', 'v0.11.0rc2', '0.10.1.1' -> (major, minor, patch); None when it is not a version."""
    m = _VERSION.fullmatch(str(version).strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def release(version: str | None, *, where: str = "--engine-version") -> Release:
    """The rules for a vLLM release as a user names it; None -> DEFAULT. InputError for a line not mirrored."""
    if version is None:
        return DEFAULT
    parsed = parse(version)
    line = f"{parsed[0]}.{parsed[1]}" if parsed else None
    if line in _BY_LINE:
        return _BY_LINE[line]
    lines = [r.line for r in RELEASES]
    close = did_you_mean(str(version).strip().lstrip("v"), lines)
    raise InputError(f"vLLM version {version!r} is not modelled", where=where,
                     hint=(f"{close} " if close else "") + f"kvplan mirrors vLLM {', '.join(r.line for r in RELEASES)}")


def closest(version: str | None) -> tuple[Release, str | None]:
    """The mirrored line nearest below a logged version (the oldest line for older releases), and a note when the
    log's release is not itself mirrored (calibrate compares any log)."""
    if not version:
        return RELEASES[0], f"the log does not say its vLLM version; {RELEASES[0].line} rules applied"
    parsed = parse(version)
    if parsed is None:
        return RELEASES[0], f"vLLM version {version!r} not understood; {RELEASES[0].line} rules applied"
    line = f"{parsed[0]}.{parsed[1]}"
    if line in _BY_LINE:
        return _BY_LINE[line], None
    below = [r for r in RELEASES if _key(r.line) <= parsed[:2]]
    chosen = below[-1] if below else RELEASES[0]
    return chosen, (f"kvplan mirrors vLLM {' and '.join(r.line for r in RELEASES)}; this {version} log is compared "
                    f"with the {chosen.line} rules")


def _key(line: str) -> tuple[int, int]:
    major, minor = line.split(".")
    return int(major), int(minor)
