"""The TensorRT-LLM launch options beyond the core request (LLM-API fields, as `--engine-option KEY=VALUE` or from a
deployment's YAML), turned into what engine.py computes with. Pure: no yaml, typer or rich.

Each rule was read in TensorRT-LLM's PyTorch backend (the 1.x default); the revisions are named where they differ:

- enable_attention_dp (tensorrt_llm/_torch/pyexecutor/resource_manager.py, KVCacheManager.__init__ and
  get_cache_size_per_token: `tp_size = 1 if mapping.enable_attention_dp`): every rank keeps all KV heads of its own
  requests, in its own pool; MLA's one latent per layer is not split either way. The warm-up submits its dummy
  requests once per rank (_util.py KvCacheCreator._create_dummy_context_requests: `requests * tp_size`);
- speculative_config (resource_manager.py get_pp_layers; speculative/utils.py get_num_spec_layers): the KV cache
  manager's layer count grows by the MTP modules (decoding_type MTP: num_nextn_predict_layers) or the one-model
  EAGLE-3 head's layers (num_eagle_layers, default 1), appended on the last pipeline rank, each with the target's
  KV heads and head size (num_kv_heads is one int for every layer). The estimator's bytes per token
  (get_cache_size_per_token: `mapping.pp_layers(get_num_attention_layers())`) does not count them, so they enter
  the pool's bytes per token (T2), not the estimator's (T3). Extra KV tokens per sequence
  (get_num_extra_kv_tokens): one-model EAGLE-3 max_draft_len - 1, MTP 0;
- cache_transceiver_config (cpp/tensorrt_llm/batch_manager/cacheTransBuffer.cpp,
  CacheTransBufferManager::computeTransferBufferSize and the constructor; common/envUtils.cpp): one send and one
  receive buffer (TRTLLM_KVCACHE_SEND_MAX_CONCURRENCY_NUM defaults to 1; a second receive buffer only with
  TRTLLM_REQUEST_KV_CACHE_CONCURRENT), each of 512 MiB (TRTLLM_KVCACHE_TRANSFER_BUFFER_SIZE's default,
  parseMemorySize: MB = 2^20) or, with max_tokens_in_buffer, the sum over the rank's layers of
  (min(window rounded up to blocks, max_tokens_in_buffer) + tokens_per_block) x that layer's bytes per token.
  The transceiver is built after the KV cache manager (_util.py create_py_executor_instance ->
  create_kv_cache_transceiver), so its buffers come out of what free_gpu_memory_fraction leaves;
- kv_cache_config.max_attention_window: clamped to max_seq_len (KVCacheManager.__init__); windows at or above
  max_seq_len change nothing;
- lora_config (_util.py create_py_executor_instance; cpp/tensorrt_llm/batch_manager/peftCacheManager.cpp
  getPageManagerConfig, getMaxNumSlots; runtime/loraModule.cpp createLoraModules, loraModule.h localInDim /
  localOutDim): a PEFT cache built after the KV cache manager, of num_device_module_layer = max_lora_rank x layers x
  (target + missing q/k/v modules) x max_loras module-layers, each ceil(largest module / page width) slots of one
  page width (the smallest module's per-rank in + out), in pages of max(optimal adapter size x slots per layer x
  layers, ...) slots, in the model dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.layers import FULL, LayerSpec, make_layer
from kvplan.core.spec import ModelSpec
from kvplan.engines import lazy

if TYPE_CHECKING:  # annotations only: the speculative module is read when a launch has a drafter
    from kvplan.engines.features.speculative import EagleHead
    from kvplan.engines.trtllm import feature_terms as terms
    from kvplan.engines.trtllm.feature_terms import LoraTerms as LoraTerms
    from kvplan.engines.trtllm.feature_terms import SpeculativeTerms as SpeculativeTerms
    from kvplan.engines.trtllm.feature_terms import TransceiverTerms as TransceiverTerms
    from kvplan.engines.trtllm.feature_terms import TrtllmFeatures as TrtllmFeatures
else:
    # the terms records (feature_terms.py) load when a launch sets an option that has them: a plain estimate never
    # builds their classes (benchmarks/cold_start.py); `features.TrtllmFeatures` and the others still answer (PEP 562)
    terms = lazy.module("kvplan.engines.trtllm.feature_terms")
    __getattr__ = lazy.module_getattr(__name__, {name: "kvplan.engines.trtllm.feature_terms" for name in (
        "SpeculativeTerms", "TransceiverTerms", "LoraTerms", "TrtllmFeatures")})

MIB = 2**20
TRANSFER_BUFFER_DEFAULT = 512 * MIB  # getEnvMemSizeForKVCacheTransferBuffer: parseMemorySize("512MB")
SEND_BUFFERS = 1  # getEnvKVCacheSendMaxConcurrenceNum: TRTLLM_KVCACHE_SEND_MAX_CONCURRENCY_NUM, default 1
RECV_BUFFERS = 1  # getEnvRequestKVCacheConcurrent() off: one receive buffer
# CacheTransceiverConfig.backend: the C++ transceiver's backends, all sized by CacheTransBufferManager
TRANSCEIVER_BACKENDS = frozenset({"DEFAULT", "UCX", "NIXL", "MPI", "MOONCAKE"})
# speculative_config.decoding_type values kvplan sizes, and those it does not (with why)
MODELLED_DECODING = frozenset({"MTP", "EAGLE3"})
NOT_MODELLED_DECODING = {
    "DRAFT_TARGET": "a separate draft model with its own KV cache manager sized from the same max_tokens",
    "EAGLE": "the EAGLE-1/2 tree heads",
    "MEDUSA": "Medusa heads",
    "LOOKAHEAD": "lookahead decoding's n-gram pools",
    "NGRAM": "the n-gram pool (host memory; its GPU use was not read)",
    "USER_PROVIDED": "a user-supplied drafter",
    "AUTO": "the automatic choice of a drafter",
    "SAVE_HIDDEN_STATES": "the hidden-state capture buffers",
}

# the --engine-option keys this module reads (the LLM-API field names, nested ones with their parent)
OPTION_KEYS = ("enable_attention_dp", "speculative_config.decoding_type", "speculative_config.num_nextn_predict_layers",
               "speculative_config.max_draft_len", "speculative_config.num_eagle_layers",
               "speculative_config.eagle3_one_model", "speculative_config.speculative_model_dir",
               "cache_transceiver_config.backend", "cache_transceiver_config.max_tokens_in_buffer",
               "cache_transceiver_config.transceiver_runtime", "max_attention_window", "lora_config.max_lora_rank",
               "lora_config.max_loras", "lora_config.max_cpu_loras", "lora_config.lora_target_modules")
# lora_target_modules kvplan sizes (loraModule.cpp createLoraModules: dense attention and MLP modules); MoE and
# cross-attention modules are refused
LORA_MODULES = ("attn_qkv", "attn_q", "attn_k", "attn_v", "attn_dense", "mlp_h_to_4h", "mlp_4h_to_h", "mlp_gate",
                "mlp_gate_up")
OPTIMAL_ADAPTER_SIZE = 8  # PeftCacheManagerConfig: optimalAdapterSize, capped at max_lora_rank
MAX_ADAPTER_SIZE = 64  # PeftCacheManagerConfig: maxAdapterSize, capped at max_lora_rank
HOST_CACHE_DEFAULT = 2**30  # PeftCacheManagerConfig::kDefaultHostCacheSize, without max_cpu_loras


@dataclass(frozen=True)
class Launch:
    """The options as read, before a GPU is known."""

    attention_dp: bool = False
    decoding_type: str | None = None
    spec_layers: int = 0
    max_draft_len: int = 0
    extra_kv_tokens: int = 0
    eagle_head: EagleHead | None = None  # one-model EAGLE-3
    transceiver_backend: str | None = None
    max_tokens_in_buffer: int | None = None
    windows: tuple[int, ...] = ()  # max_attention_window as given
    lora_rank: int | None = None  # lora_config.max_lora_rank (None: no lora_config)
    lora_max: int | None = None
    lora_cpu: int | None = None
    lora_modules: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return self != Launch()

    def options(self) -> tuple[str, ...]:
        """The LLM-API options in play, as the options YAML spells them."""
        named = (("enable_attention_dp", self.attention_dp), ("speculative_config", self.decoding_type),
                 ("cache_transceiver_config", self.transceiver_backend),
                 ("kv_cache_config.max_attention_window", self.windows), ("lora_config", self.lora_rank is not None))
        return tuple(name for name, on in named if on)


def _flag(value: str, key: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off", "none", "null"):
        return False
    raise InputError(f"{key}={value!r} is not true or false", where="--engine-option")


def _count(value: str, key: str, *, low: int = 1) -> int:
    try:
        n = int(str(value).replace("_", ""))
    except ValueError:
        raise InputError(f"{key}={value!r} is not a whole number", where=f"--engine-option {key}") from None
    if n < low or n > 2**31:
        raise InputError(f"{key}={n} is out of range (at least {low})", where=f"--engine-option {key}")
    return n


def read(options: dict[str, str], spec: ModelSpec, *, seq: int, base_dir: Path | None = None) -> Launch:
    """The launch options of --engine-option (or a deployment's LLM-API mapping flattened to them), checked."""
    adp = _flag(options["enable_attention_dp"], "enable_attention_dp") if "enable_attention_dp" in options else False
    decoding, spec_layers, draft_len, extra, head = _speculative(options, spec, base_dir=base_dir)
    backend, tokens_in_buffer = _transceiver(options)
    windows = _attention_windows(options, seq)
    lora = _lora(options, spec, adp)
    return Launch(attention_dp=adp, decoding_type=decoding, spec_layers=spec_layers, max_draft_len=draft_len,
                  extra_kv_tokens=extra, eagle_head=head, transceiver_backend=backend,
                  max_tokens_in_buffer=tokens_in_buffer, windows=windows, **lora)


def _speculative(options: dict[str, str], spec: ModelSpec, *, base_dir: Path | None):
    """(decoding type, KV layers it adds, max_draft_len, extra KV tokens, the EAGLE-3 head or None) of
    speculative_config."""
    decoding = options.get("speculative_config.decoding_type")
    spec_layers = draft_len = extra = 0
    head = None
    if decoding is None and any(k.startswith("speculative_config.") for k in options):
        raise InputError("speculative_config without decoding_type", where="--engine-option",
                         hint="speculative_config.decoding_type=MTP (or Eagle3)")
    if decoding is not None:
        name = decoding.strip().upper().replace("-", "_")
        if name in NOT_MODELLED_DECODING:
            raise UnsupportedError(f"speculative decoding_type {decoding} is not modelled ({NOT_MODELLED_DECODING[name]})",
                                   where="speculative_config.decoding_type", hint="MTP and one-model Eagle3 are")
        if name not in MODELLED_DECODING:
            raise InputError(f"TensorRT-LLM has no decoding_type {decoding!r}", where="speculative_config.decoding_type",
                             hint="MTP, Eagle3, Eagle, Draft_Target, NGram, Medusa, Lookahead, ...")
        decoding = name
        if name == "MTP":
            if spec.mtp is None:
                raise UnsupportedError(f"{spec.name} has no multi-token-prediction modules (num_nextn_predict_layers) "
                                       "kvplan knows of", where="speculative_config.decoding_type",
                                       hint="MTP needs a checkpoint with MTP layers (DeepSeek-V3/R1, GLM-4.5, ...)")
            given = options.get("speculative_config.num_nextn_predict_layers")
            n = _count(given, "speculative_config.num_nextn_predict_layers") if given is not None else 1
            draft = options.get("speculative_config.max_draft_len")
            if draft is not None and _count(draft, "speculative_config.max_draft_len") != n:
                # MTPDecodingConfig sets max_draft_len from num_nextn_predict_layers; a max_draft_len of its own
                # is read differently by other releases (MTP-Eagle runs one module several times)
                raise UnsupportedError(f"MTP with max_draft_len {draft} beside num_nextn_predict_layers {n}: how the "
                                       "release maps the two is not settled in the source kvplan read",
                                       where="speculative_config.max_draft_len",
                                       hint="give num_nextn_predict_layers alone")
            spec_layers, draft_len = n, n  # get_num_spec_layers: num_nextn_predict_layers (is_mtp_one_model)
        else:
            one = _flag(options.get("speculative_config.eagle3_one_model", "true"), "speculative_config.eagle3_one_model")
            if not one:
                raise UnsupportedError("two-model EAGLE-3 (eagle3_one_model false) is not modelled: its draft model gets "
                                       "a KV cache manager of its own, sized from the same max_tokens",
                                       where="speculative_config.eagle3_one_model", hint="eagle3_one_model: true is")
            draft = options.get("speculative_config.max_draft_len")
            if draft is None:
                raise InputError("Eagle3 needs max_draft_len", where="speculative_config.max_draft_len")
            draft_len = _count(draft, "speculative_config.max_draft_len")
            layers = options.get("speculative_config.num_eagle_layers")
            spec_layers = _count(layers, "speculative_config.num_eagle_layers") if layers is not None else 1
            extra = draft_len - 1  # get_num_extra_kv_tokens: is_eagle3_one_model
            # the head's weights need its config; its KV layers are num_eagle_layers (default 1), not the head's own
            head = _eagle_head(options.get("speculative_config.speculative_model_dir"), base_dir=base_dir)
    return decoding, spec_layers, draft_len, extra, head


def _transceiver(options: dict[str, str]) -> tuple[str | None, int | None]:
    """(backend, max_tokens_in_buffer) of cache_transceiver_config."""
    backend = options.get("cache_transceiver_config.backend")
    runtime = options.get("cache_transceiver_config.transceiver_runtime")
    in_buffer = options.get("cache_transceiver_config.max_tokens_in_buffer")
    # no backend: no transceiver (create_kv_cache_transceiver returns None; preAllocBufferSize returns 0)
    if backend is not None:
        backend = backend.strip().upper()
        if backend not in TRANSCEIVER_BACKENDS:
            raise InputError(f"TensorRT-LLM has no cache transceiver backend {backend!r}",
                             where="cache_transceiver_config.backend", hint=", ".join(sorted(TRANSCEIVER_BACKENDS)))
        if runtime is not None and runtime.strip().upper() not in ("CPP", "AUTO"):
            raise UnsupportedError(f"the {runtime} cache transceiver runtime's buffers are not modelled (kvplan sizes the "
                                   "C++ transceiver's, cacheTransBuffer.cpp)", where="cache_transceiver_config.transceiver_runtime",
                                   hint="leave transceiver_runtime out or set it to CPP")
    tokens_in_buffer = _count(in_buffer, "cache_transceiver_config.max_tokens_in_buffer") if in_buffer is not None else None
    return backend, tokens_in_buffer


def _attention_windows(options: dict[str, str], seq: int) -> tuple[int, ...]:
    """kv_cache_config.max_attention_window, at or above max_seq_len (shorter user-set windows are not modelled)."""
    windows: tuple[int, ...] = ()
    raw = options.get("max_attention_window")
    if raw is not None:
        windows = tuple(_count(w, "max_attention_window") for w in str(raw).replace("[", "").replace("]", "").split(",")
                        if w.strip())
        if not windows:
            raise InputError("max_attention_window is an empty list", where="kv_cache_config.max_attention_window")
        short = [w for w in windows if w < seq]
        if short:
            # per-layer windows shorter than max_seq_len make the pool one pool per window (VSWA), laid over the
            # layers as a repeating pattern: kvplan models the windows a checkpoint declares, not user-set ones
            raise UnsupportedError(f"max_attention_window {short[0]:,} below max_seq_len {seq:,} is not modelled (a "
                                   "user-set window pattern over the layers)", where="kv_cache_config.max_attention_window",
                                   hint="windows at or above max_seq_len are clamped to it and change nothing")
    return windows


def _lora(options: dict[str, str], spec: ModelSpec, adp: bool) -> dict:
    """lora_config's fields, checked; {} without one."""
    keys = [k for k in options if k.startswith("lora_config.")]
    if not keys:
        return {}
    where = "lora_config"
    raw = options.get("lora_config.lora_target_modules")
    if not raw:
        # one lora_dir: load_torch_lora reads the target modules from the adapter's own config, not here
        raise UnsupportedError("lora_config without lora_target_modules: the modules come from the adapter's own "
                               "config (load_torch_lora), which kvplan does not read", where=where,
                               hint="give lora_config.lora_target_modules (TensorRT-LLM module names)")
    modules = tuple(m.strip() for m in raw.replace("[", "").replace("]", "").replace("'", "").split(",") if m.strip())
    for m in modules:
        if m not in LORA_MODULES:
            raise UnsupportedError(f"the LoRA module {m!r} is not modelled", where=f"{where}.lora_target_modules",
                                   hint="kvplan sizes " + ", ".join(LORA_MODULES))
    if spec.moe is not None and any(m.startswith("mlp") for m in modules):
        raise UnsupportedError("LoRA on an MoE model's MLP modules is not modelled", where=f"{where}.lora_target_modules")
    if adp:
        raise UnsupportedError("LoRA with attention DP is not modelled (the bindings model config's head split differs "
                               "between revisions)", where=where)
    if "lora_config.max_loras" not in options:
        # without max_loras the device cache is device_cache_percent of the free memory, whose default differs
        # between revisions (PeftCacheManagerConfig::kDefaultDeviceCachePercent 0.02 / 0.05)
        raise UnsupportedError("lora_config without max_loras: the device PEFT cache is a share of the free memory "
                               "whose default differs between releases", where=f"{where}.max_loras",
                               hint="give lora_config.max_loras")
    rank = _count(options.get("lora_config.max_lora_rank", "64"), "lora_config.max_lora_rank")  # LoraConfig default
    cpu = options.get("lora_config.max_cpu_loras")
    return {"lora_rank": rank, "lora_max": _count(options["lora_config.max_loras"], "lora_config.max_loras"),
            "lora_cpu": _count(cpu, "lora_config.max_cpu_loras") if cpu is not None else None, "lora_modules": modules}


def lora_terms(spec: ModelSpec, launch: Launch, *, tp: int, pp: int, dtype_bytes: int) -> LoraTerms | None:
    """The PEFT cache of one GPU (PeftCacheManager::getPageManagerConfig, with num_device_module_layer set)."""
    if launch.lora_rank is None:
        return None
    first = next((layer for layer in spec.layer_specs if layer.headed), None)
    if first is None or not spec.hidden_size or not spec.intermediate_size:
        raise UnsupportedError("LoRA on a model without standard attention layers is not modelled", where="lora_config")
    # get_bindings_model_config hands createLoraModules per-rank sizes (// tp), which it multiplies back by tp
    hidden = spec.hidden_size // tp * tp
    heads = spec.attention_heads // tp * tp
    kv = first.kv_heads // tp * tp
    head = first.head_dim
    mlp = spec.intermediate_size // tp * tp
    q, kvo = heads * head, kv * head
    # (in, out, in split over TP, out split over TP): loraModule.cpp createLoraModules
    dims = {"attn_qkv": (hidden, q + 2 * kvo, False, True), "attn_q": (hidden, q, False, True),
            "attn_k": (hidden, kvo, False, True), "attn_v": (hidden, kvo, False, True),
            "attn_dense": (hidden, hidden, True, False), "mlp_h_to_4h": (hidden, mlp, False, True),
            "mlp_gate": (hidden, mlp, False, True), "mlp_4h_to_h": (mlp, hidden, True, False),
            "mlp_gate_up": (hidden, 2 * mlp, False, True)}
    sizes = []
    for m in launch.lora_modules:
        i, o, split_in, split_out = dims[m]
        sizes.append((m, (i // tp if split_in else i) + (o // tp if split_out else o)))  # localInDim + localOutDim
    qkv = ("attn_q", "attn_k", "attn_v")
    missing = [m for m in qkv if m not in launch.lora_modules] if any(m in launch.lora_modules for m in qkv) else []
    layers = spec.layers
    local_layers = -(-layers // pp)  # getNbAttentionLayers(pp, rank): the first ranks' share
    rank = launch.lora_rank
    optimal, largest = min(OPTIMAL_ADAPTER_SIZE, rank), min(MAX_ADAPTER_SIZE, rank)
    width = min(n for _, n in sizes)
    widest = max(n for _, n in sizes)
    slots_per_layer = sum(optimal * -(-n // width) for _, n in sizes)
    min_slots = -(-(largest * widest) // width)
    per_page = max(slots_per_layer * local_layers, min_slots)
    module_layers = rank * layers * (len(launch.lora_modules) + len(missing)) * launch.lora_max
    device_slots = module_layers * -(-widest // width)
    need = -(-(largest * sum(n for _, n in sizes) * local_layers) // width)
    if device_slots < need:
        raise InputError(f"TensorRT-LLM refuses it: not enough space allocated to the device LoRA cache to hold 1 max "
                         f"sized LoRA ({device_slots:,} < {need:,} slots)", where="lora_config.max_loras")
    pages = -(-device_slots // per_page)
    device = pages * per_page * width * dtype_bytes
    if launch.lora_cpu is not None:  # numHostModuleLayer, as num_device_module_layer with max_cpu_loras
        host_slots = rank * layers * (len(launch.lora_modules) + len(missing)) * launch.lora_cpu * -(-widest // width)
    else:  # kDefaultHostCacheSize / page width bytes
        host_slots = HOST_CACHE_DEFAULT // (width * dtype_bytes)
    host = -(-host_slots // per_page) * per_page * width * dtype_bytes
    formula = (f"{module_layers:,} module-layers (rank {rank} x {layers} layers x {len(launch.lora_modules) + len(missing)} "
               f"modules x {launch.lora_max} LoRAs) x ceil({widest:,} / {width:,}) slots = {device_slots:,} slots, in "
               f"{pages:,} pages of {per_page:,} slots x {width:,} elements x {dtype_bytes} B")
    return terms.LoraTerms(max_lora_rank=rank, max_loras=launch.lora_max, max_cpu_loras=launch.lora_cpu, modules=tuple(sizes),
                     page_width=width, slots_per_page=per_page, device_pages=pages, device_bytes=device, host_bytes=host,
                     formula=formula)


def _eagle_head(ref: str | None, *, base_dir: Path | None):
    if not ref:
        raise UnsupportedError("an Eagle3 head without speculative_model_dir cannot be sized", where="speculative_config",
                               hint="give speculative_config.speculative_model_dir=PATH (the head's folder or config.json)")
    # a launch with an EAGLE-3 head only: config.json reading (hf_config and what it imports) and the speculative
    # module cost about 12 ms at start-up (python -X importtime), which a launch without a drafter never pays
    import dataclasses

    from kvplan.engines.features import speculative
    from kvplan.model import hf_config

    raw = hf_config.load_draft_config(ref, base_dir=base_dir, where="speculative_config.speculative_model_dir",
                                      what="the Eagle3 head", hint="give the head's folder or config.json")
    head = speculative.eagle_head(raw, method="eagle3", where="speculative_model_dir")
    return dataclasses.replace(head, name=str(ref))


def spec_kv_layers(spec: ModelSpec, launch: Launch) -> tuple[LayerSpec, ...]:
    """The layers the KV cache manager gains: copies of the target's attention layer (its KV heads and head size;
    MLA: its latent), one per MTP module or EAGLE-3 layer."""
    if not launch.spec_layers:
        return ()
    first = next((layer for layer in spec.layer_specs if layer.headed or layer.latent), None)
    if first is None:
        raise UnsupportedError("speculative decoding on a model without attention layers", where="speculative_config")
    layer = first if first.latent else make_layer(FULL, kv_heads=first.kv_heads, head_dim=first.head_dim,
                                                       v_head_dim=first.v_head_dim)
    return (layer,) * launch.spec_layers


def drafter_weights(spec: ModelSpec, launch: Launch, *, tp: int, bits: Fraction, act_bits: int) -> tuple[int, str]:
    """The drafter's weights on one GPU: the checkpoint's MTP modules (their experts split like the target's, the
    rest over TP, or whole with attention DP), or the EAGLE-3 head."""
    if launch.decoding_type == "MTP":
        mtp = spec.mtp
        per_module = Fraction(mtp.params, mtp.layers)
        used = per_module * launch.spec_layers
        experts = Fraction(spec.moe.expert_params, spec.moe.layers) * launch.spec_layers if spec.moe and spec.moe.layers else 0
        dense = used - experts
        shared = dense if launch.attention_dp else dense / tp
        b = math.ceil((shared + experts / tp) * bits / 8)
        how = (f"{launch.spec_layers} MTP module(s) of the checkpoint ({int(used):,} parameters at {float(bits):.4g} bits; "
               + ("routed experts / TP, the rest whole on every rank (attention DP)" if launch.attention_dp else f"/ TP {tp}")
               + "); embedding and head shared with the target")
        return b, how
    if launch.decoding_type == "EAGLE3":
        from kvplan.engines.features import speculative  # an EAGLE-3 head only (see _eagle_head)

        w = speculative.eagle_weights(launch.eagle_head)
        split = 1 if launch.attention_dp else tp
        b = w.bytes_per_gpu(split, Fraction(act_bits))
        return b, (f"EAGLE-3 head {launch.eagle_head.name}: {w.sharded_params:,} TP-sharded + {w.replicated_params:,} "
                   f"replicated parameters at {act_bits} bits"
                   + (" (whole on every rank: attention DP)" if launch.attention_dp else f", the first / TP {tp}"))
    return 0, "no drafter"


def transceiver_terms(launch: Launch, per_layer_bytes: list[tuple[int | None, int]], *, seq: int,
                      tokens_per_block: int, ranks: int = 1) -> TransceiverTerms | None:
    """CacheTransBufferManager's buffers on one GPU. `per_layer_bytes`: (window or None, bytes per token) for each
    layer of the rank's KV cache manager."""
    if launch.transceiver_backend is None:
        return None
    n = launch.max_tokens_in_buffer
    if n is None:
        size = TRANSFER_BUFFER_DEFAULT
        formula = "TRTLLM_KVCACHE_TRANSFER_BUFFER_SIZE's default 512 MiB"
    else:
        size = 0
        for window, per in per_layer_bytes:
            w = window or seq
            aligned = -(-w // tokens_per_block) * tokens_per_block
            size += (min(aligned, n) + tokens_per_block) * per
        token_bytes = sum(per for _, per in per_layer_bytes)
        formula = (f"(min(window, max_tokens_in_buffer {n:,}) + one block of {tokens_per_block}) x {token_bytes:,} B per "
                   f"token over the rank's {len(per_layer_bytes)} layers")
    buffers = SEND_BUFFERS + RECV_BUFFERS
    per_rank = sum(per for _, per in per_layer_bytes)
    return terms.TransceiverTerms(backend=launch.transceiver_backend, max_tokens_in_buffer=n, buffer_bytes=size, buffers=buffers,
                            total_bytes=size * buffers,
                            formula=f"{buffers} buffers (one send, one receive) x {formula}",
                            bytes_per_token_per_rank=per_rank, bytes_per_token=per_rank * ranks)
