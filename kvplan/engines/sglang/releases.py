"""SGLang's release lines, 0.3.0 ... 0.5.23: one rules object per release, every rule that changed between
releases stated once, with the first release that has it and the SGLang file it was read from.

Read from every SGLang wheel PyPI has (110 releases, `pip download --no-deps sglang==X`, python sources only;
the tables with the exact code are in docs/research/sglang-releases.md, rules R1-R9). Paths are relative to
`sglang/srt/`. A change that landed in a post release (0.4.7.post1, 0.4.9.post3, 0.5.3.post3 ...) is dated by it.
There is no SGLang 0.5.0 on PyPI (0.4.10.post2 is followed by 0.5.1).

`release(version)` parses any version string a user or a log gives ("0.4.3.post4", "v0.4.2.post2-rocm630",
"0.5") and returns the rules of that release; `LINES` names the release lines between which rules changed (the
lines kvplan documents in docs/engines/sglang.md). The registry gives the names every engine's does
(engines/releases.py REGISTRY).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kvplan.engines import releases as policy
from kvplan.core.errors import InputError
from kvplan.engines.changes import Change, History

Version = tuple[int, int, int, int]  # major, minor, patch, post

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.post(\d+))?([a-z0-9.+-]*)", re.IGNORECASE)


def parse(version: str) -> Version | None:
    """'0.4.3.post4', 'v0.4.2.post2-rocm630', '0.5.12', '0.5' -> (major, minor, patch, post); None otherwise."""
    m = _VERSION.fullmatch(str(version).strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), int(m.group(4) or 0)


HISTORY = History(parse)  # the registry's order of releases (engines/changes.py)
sort_key, at_least, _at = HISTORY.key, HISTORY.at_least, HISTORY.at


# ---------------------------------------------------------------------------------------------- the rules
# R1. The default mem_fraction_static (only when --mem-fraction-static is not given).
#   tp_table: by TP size alone, (>=16, >=8, >=4, >=2, 1);
#   tp_table_13g: 0.4.6, GPUs over 81920 MiB get (gpu_mem - 13 GiB) / gpu_mem instead;
#   v047: 0.4.7's mix (TP table up to 81920 MiB, 0.88 above, 0.79 over 180,000 MiB, a 48 GiB rule between);
#   reserve_by_gpu: 0.4.7.post1-0.5.2, a reserve in MiB by GPU size and tp x pp;
#   reserve_by_graphs: 0.5.3+, a reserve from the chunked-prefill size and the CUDA-graph batch sizes.
MFS_RULE = (
    Change("0.3.0", "tp_table", "server_args.py ServerArgs.__post_init__"),
    Change("0.4.6", "tp_table_13g", "server_args.py ServerArgs.__post_init__"),
    Change("0.4.7", "v047", "server_args.py ServerArgs.__post_init__"),
    Change("0.4.7.post1", "reserve_by_gpu", "server_args.py ServerArgs.__post_init__"),
    Change("0.5.3", "reserve_by_graphs", "server_args.py ServerArgs._handle_gpu_memory_settings "
                                          "(0.5.19+: arg_groups/memory_hook.py handle_gpu_memory_settings)"),
)
TP_TABLE = (  # mem_fraction_static for tp >= 16, >= 8, >= 4, >= 2, 1
    Change("0.3.0", ("0.79", "0.83", "0.85", "0.87", "0.88"), "server_args.py ServerArgs.__post_init__"),
    Change("0.3.6", ("0.79", "0.82", "0.85", "0.87", "0.88"), "server_args.py ServerArgs.__post_init__"),
    Change("0.4.0", ("0.79", "0.81", "0.85", "0.87", "0.88"), "server_args.py ServerArgs.__post_init__"),
)
# R2. Default chunked_prefill_size and decode CUDA-graph max batch size by nvidia-smi MiB. Rows are
# (below MiB, chunk, bs for tp < 4, bs for tp >= 4); the last row (None) is every larger GPU.
DEFAULT_BINS = (
    Change("0.3.0", ((None, 8192, 160, 160),), "server_args.py ServerArgs (field defaults)"),
    Change("0.3.6", ((25000, 2048, 4, 4), (None, 8192, 160, 160)), "server_args.py ServerArgs.__post_init__"),
    Change("0.4.0", ((25000, 2048, 8, 8), (None, 8192, 160, 160)), "server_args.py ServerArgs.__post_init__"),
    Change("0.4.3", ((25000, 2048, 8, 80), (None, 8192, 160, 160)), "server_args.py ServerArgs.__post_init__"),
    Change("0.4.7", ((25000, 2048, 8, 80), (180000, 8192, 160, 160), (None, 16384, 160, 160)),
           "server_args.py ServerArgs.__post_init__"),
    Change("0.4.7.post1", ((35840, 2048, 8, 80), (163840, 8192, 160, 160), (None, 16384, 160, 160)),
           "server_args.py ServerArgs.__post_init__"),
    Change("0.5.3", ((20480, 2048, 8, 8), (35840, 2048, 16, 80), (61440, 4096, 32, 160), (92160, 8192, 256, 512),
                     (163840, 8192, 256, 512), (None, 16384, 512, 512)),
           "server_args.py ServerArgs._handle_gpu_memory_settings"),
    Change("0.5.4.post1", ((20480, 2048, 8, 8), (35840, 2048, 24, 80), (61440, 4096, 32, 160),
                           (92160, 8192, 256, 512), (163840, 8192, 256, 512), (None, 16384, 512, 512)),
           "server_args.py ServerArgs._handle_gpu_memory_settings"),
    Change("0.5.20", ((20480, 2048, 8, 8), (35840, 4096, 48, 160), (61440, 4096, 32, 160), (92160, 8192, 256, 512),
                      (163840, 8192, 256, 512), (None, 16384, 512, 512)),
           "arg_groups/memory_hook.py handle_gpu_memory_settings"),
)
# Prefill ("piecewise") CUDA graphs: opt-in from 0.5.3.post2, on by default from 0.5.10; the reserve counts them
PREFILL_GRAPHS_DEFAULT = (
    Change("0.3.0", False, "-"),
    Change("0.5.10", True, "server_args.py ServerArgs._handle_piecewise_cuda_graph (--disable-piecewise-cuda-graph)"),
)
# Multimodal models: mem_fraction_static multiplied. ("all", f): also a user-given value (model_runner.py);
# ("default", f): only SGLang's own default; "vlm": adjust_mem_fraction_for_vlm, 0.95 x clamp(1 - 0.1 x
# (vit_layers x vit_hidden^2 / (24 x 1024^2) - 1), 0.8, 1.05), default only.
MULTIMODAL_FACTOR = (
    Change("0.3.0", ("all", Fraction(95, 100)), "model_executor/model_runner.py ModelRunner.__init__"),
    Change("0.4.4.post4", ("all", Fraction(9, 10)), "model_executor/model_runner.py ModelRunner.__init__"),
    Change("0.4.9", ("default", Fraction(9, 10)), "server_args.py ServerArgs.__post_init__"),
    Change("0.4.9.post3", ("vlm", None), "server_args.py adjust_mem_fraction_for_vlm "
                                         "(0.5.19+: arg_groups/memory_hook.py)"),
)
# R3/R7. --page-size exists from 0.4.4; before, the pool is token-granular with one dummy row per buffer
PAGE_ROUNDING = (
    Change("0.3.0", False, "model_executor/model_runner.py init_memory_pool (buffers of size + 1 rows)"),
    Change("0.4.4", True, "model_executor/model_runner.py init_memory_pool (tokens // page_size x page_size)"),
)
# R7. Default attention backends that force a page size: MHA on Blackwell (sm100) -> trtllm_mha, 64 tokens;
# DeepSeek-V3 on Blackwell -> trtllm_mla, 64
BLACKWELL_MHA_PAGE = (
    Change("0.3.0", 1, "-"),
    Change("0.5.7", 64, "server_args.py _get_default_attn_backend (0.5.19+: arg_groups/model_override_base.py)"),
)
BLACKWELL_DEEPSEEK_PAGE = (
    Change("0.3.0", 1, "-"),
    Change("0.5.1", 64, "server_args.py ServerArgs.__post_init__ (trtllm_mla on sm100)"),
)
# R4. Which models get a separate sliding-window pool: "none"; "sliding_classes" (any model class that defines
# get_attention_sliding_window_size(): Gemma-2/3/3n, gpt-oss, OLMo-2); "mimo" (0.5.7: the auto-detection removed,
# the allowlist not yet added); "allowlist" (configs/model_config.py is_hybrid_swa_model)
SWA_RULE = (
    Change("0.3.0", "none", "-"),
    Change("0.4.9.post3", "sliding_classes", "model_executor/model_runner.py ModelRunner.__init__, set_num_token_hybrid"),
    Change("0.5.7", "mimo", "configs/model_config.py is_hybrid_model"),
    Change("0.5.8", "allowlist", "configs/model_config.py is_hybrid_swa_model"),
)
SWA_CLASSES = (
    Change("0.4.9.post3", frozenset({"Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration",
                                     "Gemma3nForCausalLM", "Gemma3nForConditionalGeneration"}),
           "models/gemma2.py, gemma3_causal.py, gemma3_mm.py, gemma3n_*.py get_attention_sliding_window_size"),
    Change("0.5.1", frozenset({"Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration",
                               "Gemma3nForCausalLM", "Gemma3nForConditionalGeneration", "GptOssForCausalLM"}),
           "models/gpt_oss.py get_attention_sliding_window_size"),
    Change("0.5.6", frozenset({"Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration",
                               "Gemma3nForCausalLM", "Gemma3nForConditionalGeneration", "GptOssForCausalLM",
                               "Olmo2ForCausalLM"}), "models/olmo2.py get_attention_sliding_window_size"),
)
SWA_ALLOWLIST = (
    Change("0.5.7", frozenset({"MiMoV2FlashForCausalLM"}), "configs/model_config.py is_hybrid_model"),
    Change("0.5.8", frozenset({"Llama4ForConditionalGeneration", "GptOssForCausalLM", "MiMoV2FlashForCausalLM"}),
           "configs/model_config.py is_hybrid_swa_model"),
    Change("0.5.16", frozenset({"Llama4ForConditionalGeneration", "GptOssForCausalLM", "MiMoV2FlashForCausalLM",
                                "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "MellumForCausalLM"}),
           "configs/model_config.py is_hybrid_swa_model"),
    Change("0.5.23", frozenset({"GptOssForCausalLM", "Llama4ForConditionalGeneration", "Gemma4ForCausalLM",
                                "Gemma4ForConditionalGeneration", "MiMoV2FlashForCausalLM", "MellumForCausalLM"}),
           "configs/model_config.py is_hybrid_swa_model (docs/engines/sglang.md S12)"),
)
# the split of the old generic rule (0.4.9.post3-0.5.6): full = int(N x layers / (r x swa_layers + full_layers)),
# no page rounding; later: cell = full + r x swa per token, both pools floored to pages
SWA_SPLIT = (
    Change("0.4.9.post3", "layer_ratio", "model_executor/model_runner.py set_num_token_hybrid"),
    Change("0.5.7", "cell_ratio", "model_executor/model_runner_kv_cache_mixin.py set_num_tokens_hybrid_swa "
                                  "(0.5.11+: pool_configurator.py HybridSWAPoolConfigurator)"),
)
# R5. Mamba / linear-attention hybrids: None (not served), "fixed" (0.5.2: Qwen3-Next only, a state pool of
# --max-running-requests or 512 requests), or the --mamba-full-memory-ratio default of the ratio split
MAMBA_RULE = (
    Change("0.3.0", None, "-"),
    Change("0.5.2", "fixed", "model_executor/model_runner.py profile_max_num_token"),
    Change("0.5.3.post2", Fraction(1, 5), "model_executor/model_runner.py handle_max_mamba_cache"),
    Change("0.5.3.post3", Fraction(9, 10), "handle_max_mamba_cache (0.5.16+: KVCacheConfigurator._handle_max_mamba_cache)"),
)
# R9. --kv-cache-dtype choices. kvplan models the ones mapped to a dtype; the rest exit 3 (None)
KV_DTYPES = (
    Change("0.3.0", {"auto": "", "fp8_e5m2": "fp8_e5m2"}, "server_args.py ServerArgs.add_cli_args"),
    Change("0.4.1.post6", {"auto": "", "fp8_e5m2": "fp8_e5m2", "fp8_e4m3": "fp8_e4m3"},
           "server_args.py ServerArgs.add_cli_args"),
    Change("0.5.4", {"auto": "", "fp8_e5m2": "fp8_e5m2", "fp8_e4m3": "fp8_e4m3", "bf16": "bf16", "bfloat16": "bf16"},
           "server_args.py ServerArgs.add_cli_args"),
    Change("0.5.4.post3", {"auto": "", "fp8_e5m2": "fp8_e5m2", "fp8_e4m3": "fp8_e4m3", "bf16": "bf16",
                           "bfloat16": "bf16", "fp4_e2m1": None}, "server_args.py ServerArgs.add_cli_args"),
    Change("0.5.23", {"auto": "", "fp8_e5m2": "fp8_e5m2", "fp8_e4m3": "fp8_e4m3", "mxfp8": None, "bf16": "bf16",
                      "bfloat16": "bf16", "nvfp4": None, "fp4_mx_block16": None},
           "arg_groups/fields/model.py (generated flags)"),
)
# R3. What SGLang says when no token fits (and refuses to start)
NO_ROOM_MESSAGE = (
    Change("0.3.0", "Not enough memory. Please try to increase --mem-fraction-static.",
           "model_executor/model_runner.py init_memory_pool (RuntimeError)"),
    Change("0.5.14", "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static",
           "mem_cache/kv_cache_configurator.py _profile_available_bytes (ValueError)"),
)
# R8. On an integrated GPU (GB10 / DGX Spark) nvidia-smi reports no memory.total: 0.3.6-0.4.9.post2 raise
# ValueError("No GPU memory values found.") at start; 0.4.9.post3+ fall back to torch's total; 0.5.9+ read the free
# memory from psutil (the shared system memory) instead of cudaMemGetInfo
UNIFIED_MEMORY = (
    Change("0.3.0", "ignored", "0.3.0-0.3.5 never read the GPU size"),
    Change("0.3.6", "fails", "utils.py get_nvgpu_memory_capacity"),
    Change("0.4.9.post3", "torch_total", "utils.py get_nvgpu_memory_capacity"),
    Change("0.5.9", "psutil", "utils/common.py get_available_gpu_memory (props.is_integrated)"),
)
# R11. --cpu-offload-gb: which releases' weight offload kvplan read. OffloaderV1.maybe_offload_to_cpu moves whole
# parameters of the decoder layers make_layers builds (0.5.22+: make_pp_layers) until cpu_offload_gb x 1024**3 bytes,
# per rank process. Its loop is the same in every wheel from 0.5.1 to 0.5.23 (0.5.1-0.5.3.post1: offloader.py;
# 0.5.3.post2+: utils/offloader.py; 0.5.23 only adds a skip for parameters that back cached tensors, which the dense
# Llama / Qwen2 / Qwen3 layers kvplan walks have none of), and so is the order in which models/llama.py, qwen2.py
# and qwen3.py register those layers' parameters. 0.3.x-0.4.x keep another offloader (utils.py
# maybe_offload_to_cpu with module-level counters) that kvplan did not read: refused by release.
WEIGHT_OFFLOAD = (
    Change("0.3.0", False, "utils.py maybe_offload_to_cpu (not read)"),
    Change("0.5.1", True, "offloader.py OffloaderV1.maybe_offload_to_cpu (0.5.3.post2+: utils/offloader.py)"),
)
# R10's variable; the launch options SGLang's estimate reads beside its flags (engines/api.py Engine.option_keys),
# named here so that the engine record (parts.py) lists them without building the memory model
ALLOW_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
OPTION_KEYS = ("attention_backend", ALLOW_ENV.lower())
# R10. --context-length past the model's derived length (configs/model_config.py ModelConfig.__init__, from 0.5.7
# _derive_context_length): how SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is read. "no_check": any length is taken;
# "set": any non-empty value allows it (os.environ.get); "true_1": "true" / "1" (any case) allow it, unset refuses
# (get_bool_env_var, default "false"); "true_1_default_on": unset allows it, a value other than true / 1 refuses
# (default "True"); "env_bool": EnvBool(False): true/1/yes/y allow, false/0/no/n refuse, anything else is a
# ValueError at start; "not_read": 0.3.6.post1-post2, between a "set" and a "true_1" release.
LONGER_CONTEXT = (
    Change("0.3.0", "no_check", "configs/model_config.py ModelConfig.__init__ (context_len = context_length)"),
    Change("0.3.5", "set", "configs/model_config.py ModelConfig.__init__ (os.environ.get)"),
    Change("0.3.6.post1", "not_read", "-"),
    Change("0.3.6.post3", "true_1", "configs/model_config.py ModelConfig.__init__ (get_bool_env_var)"),
    Change("0.4.4", "true_1_default_on", "configs/model_config.py ModelConfig.__init__ (default=\"True\")"),
    Change("0.5.1", "true_1", "configs/model_config.py ModelConfig.__init__ (get_bool_env_var)"),
    Change("0.5.3", "env_bool", "environ.py SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN = EnvBool(False)"),
)
# the release whose source docs/engines/sglang.md walks through (S1-S13)
NEWEST = "0.5.23"
OLDEST = "0.3.0"
# release lines: the ranges between which the memory rules above changed
LINES = ("0.3.0-0.3.5", "0.3.6", "0.4.0-0.4.5", "0.4.6", "0.4.7", "0.4.7.post1-0.5.2", "0.5.3-0.5.9",
         "0.5.10-0.5.19", "0.5.20-0.5.23")


@dataclass(frozen=True)
class Release:
    """The rules of one SGLang release."""

    version: str  # as kvplan names it: "0.4.3.post4"
    line: str  # one of LINES
    mfs_rule: str
    tp_table: tuple[Fraction, ...]
    default_bins: tuple[tuple[int | None, int, int, int], ...]
    prefill_graphs_default: bool
    multimodal_factor: tuple[str, Fraction | None]
    page_rounding: bool
    blackwell_mha_page: int
    blackwell_deepseek_page: int
    swa_rule: str
    swa_classes: frozenset[str]
    swa_allowlist: frozenset[str]
    swa_split: str | None
    mamba_rule: Any  # None, "fixed" or the default --mamba-full-memory-ratio
    kv_dtypes: dict[str, str | None]
    no_room_message: str
    unified_memory: str
    longer_context: str  # R10
    weight_offload: bool  # R11: --cpu-offload-gb read for this release

    @property
    def key(self) -> Version:
        return sort_key(self.version)

    @property
    def mirrors(self) -> str:
        """The release whose source these rules were read from: this one (every wheel was read)."""
        return self.version

    def at_least(self, version: str) -> bool:
        return self.key >= sort_key(version)


def _name(key: Version) -> str:
    return f"{key[0]}.{key[1]}.{key[2]}" + (f".post{key[3]}" if key[3] else "")


def _line(key: Version) -> str:
    for line in reversed(LINES):
        first = line.split("-")[0]
        if key >= sort_key(first):
            return line
    return LINES[0]


def rules_at(key: Version) -> Release:
    return Release(
        version=_name(key), line=_line(key), mfs_rule=_at(MFS_RULE, key),
        tp_table=tuple(Fraction(x) for x in _at(TP_TABLE, key)), default_bins=_at(DEFAULT_BINS, key),
        prefill_graphs_default=_at(PREFILL_GRAPHS_DEFAULT, key), multimodal_factor=_at(MULTIMODAL_FACTOR, key),
        page_rounding=_at(PAGE_ROUNDING, key), blackwell_mha_page=_at(BLACKWELL_MHA_PAGE, key),
        blackwell_deepseek_page=_at(BLACKWELL_DEEPSEEK_PAGE, key), swa_rule=_at(SWA_RULE, key),
        swa_classes=_at(SWA_CLASSES, key) or frozenset(), swa_allowlist=_at(SWA_ALLOWLIST, key) or frozenset(),
        swa_split=_at(SWA_SPLIT, key), mamba_rule=_at(MAMBA_RULE, key), kv_dtypes=_at(KV_DTYPES, key),
        no_room_message=_at(NO_ROOM_MESSAGE, key), unified_memory=_at(UNIFIED_MEMORY, key),
        longer_context=_at(LONGER_CONTEXT, key), weight_offload=_at(WEIGHT_OFFLOAD, key))


# the newest release of each minor line, for a version given as "0.4" or "0.5"
_NEWEST_OF = {(0, 3): "0.3.6.post3", (0, 4): "0.4.10.post2", (0, 5): NEWEST}
DEFAULT = rules_at(sort_key(NEWEST))


def release(version: str | None, *, where: str = "--engine-version") -> Release:
    """The rules of an SGLang release as a user or a log names it; None -> the newest mirrored (0.5.23)."""
    if version is None:
        return DEFAULT
    text = str(version).strip()
    key = parse(text)
    hint = f"kvplan mirrors SGLang {OLDEST} ... {NEWEST} (lines {', '.join(LINES)})"
    if key is None:
        raise policy.not_a_version("SGLang", text, where=where, hint=hint)
    if key < sort_key(OLDEST) or key > sort_key(NEWEST)[:3] + (99,):
        newer = key > sort_key(OLDEST)
        raise policy.outside("SGLang", text, newer=newer, edge=NEWEST if newer else OLDEST, where=where, hint=hint)
    if re.fullmatch(r"v?\d+\.\d+", text):  # a minor line ("0.4"): its newest release
        key = sort_key(_NEWEST_OF[key[:2]])
    if key[:3] == (0, 5, 0):
        raise InputError("there is no SGLang 0.5.0 release (PyPI goes from 0.4.10.post2 to 0.5.1)", where=where,
                         hint=hint)
    return rules_at(key)


def closest(version: str | None) -> tuple[Release, str | None]:
    """The rules for a logged version, never refusing (calibrate compares any log): the newest release when the
    log does not say, the nearest mirrored end when it is outside 0.3.0 ... 0.5.23; with a note when not exact."""
    if not version:
        return DEFAULT, f"the log does not say its SGLang version; {NEWEST} rules applied"
    key = parse(str(version).strip())
    if key is None:
        return DEFAULT, f"SGLang version {version!r} not understood; {NEWEST} rules applied"
    if key < sort_key(OLDEST):
        return rules_at(sort_key(OLDEST)), f"SGLang {version} is older than {OLDEST}; {OLDEST} rules applied"
    if key > sort_key(NEWEST)[:3] + (99,):
        return DEFAULT, f"SGLang {version} is newer than {NEWEST}; {NEWEST} rules applied"
    return rules_at(key), None
