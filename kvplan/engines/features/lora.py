"""LoRA adapter slots: the GPU memory vLLM preallocates when --enable-lora is set. Pure.

vLLM (0.33.0 and 0.19.0 alike, lora/model_manager.py LoRAModelManager._create_lora_modules, lora/layers/*.py
create_lora_weights) wraps every supported module of the model and gives it `max_loras` zero-filled slots in
`lora_dtype` (auto: the model dtype) when the model loads, so they are part of "Model loading took":

- the modules: every linear layer (get_supported_lora_modules: LinearBase), plus the input embedding and output
  head where the model class declares `embedding_modules` (LlamaForCausalLM, Qwen3, Granite, Phi-3 do;
  MistralForCausalLM sets it empty; Qwen2 and Gemma-2 declare none); `--lora-target-modules` keeps only the
  named ones (lora/utils.py is_in_target_modules, packed parents matched by their children);
- a column-parallel module (q/k/v packed as qkv_proj, gate/up as gate_up_proj) of S slices holds
  lora_a: S x [max_loras, 1, r, in] and lora_b: [max_loras, 1, out_per_rank, r] per slice
  (column_parallel_linear.py MergedColumnParallelLinearWithLoRA, MergedQKVParallelLinearWithLoRA: out per rank
  is the query heads / tp and the KV heads per rank); Phi-3 packs qkv_proj and gate_up_proj as one slice;
- a row-parallel module (o_proj, down_proj) holds lora_a: [max_loras, 1, r, in / tp] and
  lora_b: [max_loras, 1, out, r] (row_parallel_linear.py);
- --fully-sharded-loras splits the rank of column lora_a (r / tp) and the output of row lora_b (out / tp)
  (base_linear.py BaseLinearLayerWithLoRA.create_lora_weights; the *WithShardedLoRA classes);
- the embedding: lora_a [max_loras, vocab, r] and lora_b [max_loras, 1, hidden, r], whole on every rank
  (vocab_parallel_embedding.py VocabParallelEmbeddingWithLoRA); the head: lora_a [max_loras, 1, r, hidden] and
  lora_b [max_loras, 1, vocab, r] (logits_processor.py LogitsProcessorWithLoRA), whole on every rank;
- the profile run activates max_loras dummy adapters built on the CPU (model_manager.create_dummy_lora on
  "cpu"), copied into the slots: no new GPU tensors but the punica shrink buffer, [slices, tokens, r] float32
  per module during the forward (column_parallel_linear.py _mcp_apply);
- the CPU cache keeps up to max_cpu_loras adapters (default max_loras) in host memory, each worker its own copy of
  every adapter it loaded (worker_manager.py LRUCacheWorkerLoRAManager).
MoE experts' LoRA (FusedMoEWithLoRA) and architectures outside LORA_ARCHITECTURES are not modelled (exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.core.layers import kv_heads_per_rank
from kvplan.core.spec import ModelSpec

# vLLM model classes (model_executor/models/*.py): (slices of qkv_proj, slices of gate_up_proj, embedding LoRA)
LORA_ARCHITECTURES = {
    "LlamaForCausalLM": (3, 2, True),
    "Qwen3ForCausalLM": (3, 2, True),
    "GraniteForCausalLM": (3, 2, True),
    "Phi3ForCausalLM": (1, 1, True),
    "MistralForCausalLM": (3, 2, False),
    "Qwen2ForCausalLM": (3, 2, False),
    "Gemma2ForCausalLM": (3, 2, False),
}
# --max-lora-rank choices (config/lora.py MaxLoRARanks)
MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "embed_tokens", "lm_head")
_PACKED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}
# vLLM's max_lora_rank default (config/lora.py LoRAConfig.max_lora_rank = 16), max_loras 1
DEFAULT_RANK = 16
DEFAULT_SLOTS = 1


@dataclass(frozen=True)
class LoraOptions:
    """--enable-lora and its sizes, as the launch set them (vLLM's defaults otherwise)."""

    max_loras: int = DEFAULT_SLOTS
    max_lora_rank: int = DEFAULT_RANK
    lora_dtype: str | None = None  # None / "auto": the model dtype
    fully_sharded: bool = False
    max_cpu_loras: int | None = None  # None: max_loras
    target_modules: tuple[str, ...] | None = None  # None: every supported module
    where: str = "enable_lora"


@dataclass(frozen=True)
class LoraModule:
    name: str  # qkv_proj, o_proj, gate_up_proj, down_proj, embed_tokens, lm_head
    per_layer: bool  # one per decoder layer (else once)
    elements: int  # lora_a + lora_b elements on one rank, all slots
    formula: str  # the shapes, numbers substituted


@dataclass(frozen=True)
class LoraTerms:
    max_loras: int
    max_lora_rank: int
    dtype_bits: int
    modules: tuple[LoraModule, ...]
    layers: int  # decoder layers that carry the per-layer modules (all of them)
    gpu_bytes_per_rank: int  # the slots on one GPU
    shrink_buffer_bytes: int  # the largest punica shrink buffer of one forward of max_num_batched_tokens (float32)
    cpu_cache_bytes: int  # host memory for max_cpu_loras adapters at max_lora_rank, one worker's copies
    cpu_loras: int


def _targeted(module: str, targets: tuple[str, ...] | None) -> bool:
    if targets is None:
        return True
    if module in targets:
        return True
    return any(child in targets for child in _PACKED.get(module, ()))


def validate(opts: LoraOptions) -> None:
    where = opts.where
    if opts.max_loras < 1:
        raise InputError(f"max_loras must be at least 1, got {opts.max_loras}", where=where)
    if opts.max_lora_rank not in MAX_LORA_RANKS:
        raise InputError(f"vLLM accepts max_lora_rank in {list(MAX_LORA_RANKS)}, got {opts.max_lora_rank}", where=where)
    if opts.max_cpu_loras is not None and opts.max_cpu_loras < opts.max_loras:
        raise InputError(f"max_cpu_loras ({opts.max_cpu_loras}) must be >= max_loras ({opts.max_loras}): vLLM refuses it",
                         where=where)
    if opts.target_modules is not None:
        known = set(MODULES) | set(_PACKED)
        odd = [m for m in opts.target_modules if m not in known]
        if odd:
            raise UnsupportedError(f"LoRA target module {odd[0]!r} is not modelled", where=where,
                                   hint="kvplan sizes " + ", ".join(MODULES))


def terms(spec: ModelSpec, opts: LoraOptions, *, tp: int, model_bits: int, max_num_batched_tokens: int) -> LoraTerms:
    """The LoRA slots vLLM allocates on one GPU of a TP group, and the host memory of its adapter cache."""
    validate(opts)
    where = opts.where
    arch = spec.architecture
    if spec.moe is not None:
        raise UnsupportedError("LoRA on a mixture-of-experts model (FusedMoEWithLoRA expert slots) is not modelled",
                               where=where, hint="kvplan sizes LoRA slots for dense models")
    if arch not in LORA_ARCHITECTURES:
        raise UnsupportedError(f"LoRA slots for {arch or spec.name} are not modelled", where=where,
                               hint="kvplan knows vLLM's LoRA modules of " + ", ".join(sorted(LORA_ARCHITECTURES)))
    if spec.hidden_size is None or spec.intermediate_size is None or spec.vocab_size is None:
        raise UnsupportedError("LoRA slots need the model's hidden_size, intermediate_size and vocab_size", where=where,
                               hint="add them to the spec")
    qkv_slices, gate_up_slices, embedding_lora = LORA_ARCHITECTURES[arch]
    if opts.fully_sharded and opts.max_lora_rank % tp:
        raise InputError(f"--fully-sharded-loras splits max_lora_rank {opts.max_lora_rank} over TP {tp}: it must divide",
                         where=where)
    bits = model_bits if opts.lora_dtype in (None, "auto") else {"bfloat16": 16, "float16": 16}[opts.lora_dtype]
    L, r, h, inter = opts.max_loras, opts.max_lora_rank, spec.hidden_size, spec.intermediate_size
    ra = r // tp if opts.fully_sharded else r  # column lora_a rank
    heads = [layer for layer in spec.layer_specs if layer.headed]
    if len(heads) != spec.layers:
        raise UnsupportedError("LoRA on a model with layers other than full or sliding attention is not modelled",
                               where=where)
    kv_rank = kv_heads_per_rank(heads[0].kv_heads, tp)
    q_out = spec.attention_heads * spec.head_dim // tp
    kv_out = kv_rank * spec.head_dim
    mods: list[LoraModule] = []
    if _targeted("qkv_proj", opts.target_modules):
        a = qkv_slices * L * ra * h
        b = L * (q_out + 2 * kv_out) * r
        mods.append(LoraModule("qkv_proj", True, a + b,
                               f"lora_a {qkv_slices} x [{L}, {ra}, {h}] + lora_b [{L}, {q_out} + 2 x {kv_out}, {r}]"))
    if _targeted("o_proj", opts.target_modules):
        out = h // tp if opts.fully_sharded else h
        mods.append(LoraModule("o_proj", True, L * r * (spec.attention_heads * spec.head_dim // tp) + L * out * r,
                               f"lora_a [{L}, {r}, {spec.attention_heads * spec.head_dim // tp}] + lora_b [{L}, {out}, {r}]"))
    if _targeted("gate_up_proj", opts.target_modules):
        a = gate_up_slices * L * ra * h
        b = L * 2 * (inter // tp) * r
        mods.append(LoraModule("gate_up_proj", True, a + b,
                               f"lora_a {gate_up_slices} x [{L}, {ra}, {h}] + lora_b [{L}, 2 x {inter // tp}, {r}]"))
    if _targeted("down_proj", opts.target_modules):
        out = h // tp if opts.fully_sharded else h
        mods.append(LoraModule("down_proj", True, L * r * (inter // tp) + L * out * r,
                               f"lora_a [{L}, {r}, {inter // tp}] + lora_b [{L}, {out}, {r}]"))
    if embedding_lora and _targeted("embed_tokens", opts.target_modules):
        v = spec.vocab_size
        mods.append(LoraModule("embed_tokens", False, L * v * r + L * h * r, f"lora_a [{L}, {v}, {r}] + lora_b [{L}, {h}, {r}]"))
    if embedding_lora and _targeted("lm_head", opts.target_modules):
        v = spec.vocab_size
        mods.append(LoraModule("lm_head", False, L * r * h + L * v * r, f"lora_a [{L}, {r}, {h}] + lora_b [{L}, {v}, {r}]"))
    if not mods:
        raise InputError("--lora-target-modules names none of the model's LoRA modules", where=where)
    elements = sum(m.elements * (spec.layers if m.per_layer else 1) for m in mods)
    gpu = elements * bits // 8
    # the shrink buffer: [slices, tokens, rank] float32 for the widest packed module of one forward
    slices = max([qkv_slices if _targeted("qkv_proj", opts.target_modules) else 1,
                  gate_up_slices if _targeted("gate_up_proj", opts.target_modules) else 1])
    shrink = slices * max_num_batched_tokens * ra * 4
    # host cache: whole adapters (unsharded: each worker loads every tensor of the adapter it serves) at max rank
    full = terms_unsharded_elements(spec, opts, qkv_slices, embedding_lora)
    cpu_loras = opts.max_cpu_loras or opts.max_loras
    return LoraTerms(max_loras=L, max_lora_rank=r, dtype_bits=bits, modules=tuple(mods), layers=spec.layers,
                     gpu_bytes_per_rank=gpu, shrink_buffer_bytes=shrink, cpu_cache_bytes=cpu_loras * full * bits // 8,
                     cpu_loras=cpu_loras)


def terms_unsharded_elements(spec: ModelSpec, opts: LoraOptions, qkv_slices: int, embedding_lora: bool) -> int:
    """Elements of one adapter at max_lora_rank as a checkpoint stores it (A: [r, in], B: [out, r] per module)."""
    r, h, inter = opts.max_lora_rank, spec.hidden_size, spec.intermediate_size
    kv = next(layer.kv_heads for layer in spec.layer_specs if layer.headed)
    q, kvd = spec.attention_heads * spec.head_dim, kv * spec.head_dim
    per_layer = 0
    if _targeted("qkv_proj", opts.target_modules):
        per_layer += 3 * r * h + r * (q + 2 * kvd)
    if _targeted("o_proj", opts.target_modules):
        per_layer += r * q + h * r
    if _targeted("gate_up_proj", opts.target_modules):
        per_layer += 2 * r * h + 2 * inter * r
    if _targeted("down_proj", opts.target_modules):
        per_layer += r * inter + h * r
    once = 0
    if embedding_lora and _targeted("embed_tokens", opts.target_modules):
        once += spec.vocab_size * r + h * r
    if embedding_lora and _targeted("lm_head", opts.target_modules):
        once += r * h + spec.vocab_size * r
    return per_layer * spec.layers + once
