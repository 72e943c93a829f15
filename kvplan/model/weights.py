"""Exact weight bytes of a checkpoint, from its metadata, without reading a single weight.

In order of preference (hf_config.py asks in this order and records which one answered):
1. `model.safetensors.index.json`: `metadata.total_size`, the bytes of every tensor of the checkpoint as the
   saving library counted them (huggingface_hub `save_torch_state_dict`, transformers `save_pretrained`).
2. the `*.safetensors` files themselves: each starts with an 8-byte little-endian header length and a JSON
   header naming every tensor's dtype, shape and byte range (https://github.com/huggingface/safetensors,
   "Format"); summing numel x dtype size over the headers gives the exact bytes. Only the header is read.
3. `quantization_config` in config.json: the bytes each format stores per quantized matrix, on the parameter
   inventory of params.py (linear and expert weights quantized, everything else in the model dtype):
   - fp8 (DeepSeek-V3, Kimi-K2, Qwen3-FP8): 1 byte per weight; with `weight_block_size` [128, 128] one
     float32 `weight_scale_inv` per block, else one float32 `weight_scale` per matrix; a static activation
     scheme adds a float32 `input_scale` per matrix.
   - mxfp4 (gpt-oss): the experts only, as `*_blocks` (16 bytes per 32 weights: 4-bit E2M1) and `*_scales`
     (one uint8 E8M0 exponent per 32 weights) along the input dimension: 17 bytes per 32 weights
     (OCP Microscaling Formats spec v1.0; gpt-oss checkpoints' down_proj_blocks [E, out, in/32, 16]).
   - awq (AutoAWQ GEMM): qweight int32 [in, out/8], qzeros int32 [in/g, out/8], scales fp16 [in/g, out].
   - gptq (AutoGPTQ/GPTQModel): qweight int32 [in x bits/32, out], qzeros int32 [in/g, out x bits/32],
     scales fp16 [in/g, out], g_idx int32 [in]; group_size -1 is one group per column.
   - compressed-tensors (llm-compressor) symmetric int/float weights, e.g. W8A8 (int8, per channel) and W4A16
     (int4 packed, per group): the packed or plain weight, `weight_scale` in the model dtype per channel,
     group, block or tensor, and an int64 `weight_shape` [2] per packed matrix; NVFP4 (nvfp4-pack-quantized):
     uint8 [out, in/2], an fp8 scale per 16 inputs, float32 global weight (and input) scales.
   Formats or options outside these give no figure (the caller says so), never a guess.
"""

from __future__ import annotations

import fnmatch
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from kvplan.core import files, jsonio
from kvplan.core.errors import InputError
from kvplan.model.params import EXPERT, LINEAR, LM_HEAD, Tensor
from kvplan.core.yamlio import load_json

# bytes per element of the safetensors dtypes (safetensors/src/tensor.rs `Dtype`); sub-byte types by bits
_SAFETENSORS_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16, "U16": 16, "F16": 16,
    "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "F64": 64, "I64": 64, "U64": 64, "F4": 4, "F6_E2M3": 6,
    "F6_E3M2": 6, "C64": 64,
}
MAX_HEADER_BYTES = 100 * 2**20  # the largest real headers (1T-parameter MoE shards) are a few MiB


@dataclass(frozen=True)
class WeightBytes:
    bytes: int
    source: str  # which metadata gave the figure, for the user
    # of `bytes`, what every tensor-parallel rank keeps whole instead of a 1/tp share (GPTQ's row-parallel scales
    # and zero points under act-order or one group per column: _row_parallel)
    tp_whole: int = 0


# ------------------------------------------------------------------ checkpoint metadata

def read_safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of one .safetensors file; only its first 8 + N bytes are read."""
    # the bounded reader: a FIFO or a device named model.safetensors is refused before anything is read
    head = files.read_bytes(path, prefix=8)
    if len(head) < 8:
        raise InputError("is too short to be a safetensors file", where=str(path))
    (length,) = struct.unpack("<Q", head)
    if length > MAX_HEADER_BYTES:
        raise InputError(f"claims a {length}-byte header (limit {MAX_HEADER_BYTES})", where=str(path),
                         hint="not a safetensors file, or a damaged one")
    text = files.read_bytes(path, prefix=8 + length)[8:]
    if len(text) < length:
        raise InputError("ends inside its header", where=str(path), hint="the file is truncated")
    try:
        header = jsonio.loads(text.decode("utf-8"), where=str(path))
    except UnicodeDecodeError:
        raise InputError("has a header that is not JSON", where=str(path), hint="not a safetensors file") from None
    except InputError as err:  # malformed, a key given twice, an integer of absurd length
        raise InputError(f"has a header that is not JSON kvplan can read: {err.what}", where=str(path),
                         hint="not a safetensors file, or a damaged one") from None
    if not isinstance(header, dict):
        raise InputError("has a header that is not a JSON object", where=str(path))
    return header


def safetensors_bytes(path: Path) -> tuple[int, int]:
    """(bytes, tensors) of one file from its header: sum of numel x dtype size."""
    return header_bytes(read_safetensors_header(path), where=str(path))


def header_bytes(header: dict[str, Any], *, where: str) -> tuple[int, int]:
    """(bytes, tensors) of one safetensors header (a local file's, or one read from the Hub with a range request)."""
    total = count = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        at = f"{where}: {name}"
        if not isinstance(info, dict) or not isinstance(info.get("shape"), list) or not isinstance(info.get("dtype"), str):
            raise InputError("tensor entry lacks a dtype or shape", where=at)
        bits = _SAFETENSORS_BITS.get(info["dtype"])
        if bits is None:
            raise InputError(f"unknown safetensors dtype {info['dtype']!r}", where=at)
        shape = info["shape"]
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise InputError(f"bad shape {shape!r}", where=at)
        numel = 1
        for d in shape:
            numel *= d
        nbytes = -(-numel * bits // 8)
        offsets = info.get("data_offsets")
        if isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets):
            if offsets[1] - offsets[0] != nbytes:
                raise InputError(f"data_offsets span {offsets[1] - offsets[0]} bytes but {info['dtype']} {shape} is {nbytes}",
                                 where=at, hint="the header is inconsistent; the file may be damaged")
        total += nbytes
        count += 1
    return total, count


def _checkpoint_files(folder: Path) -> list[Path]:
    files = sorted(folder.glob("*.safetensors"))
    # Mistral repositories ship both the transformers shards and a `consolidated.safetensors` copy: count
    # the transformers layout when it is there, never both
    hf = [f for f in files if f.name == "model.safetensors" or re.fullmatch(r"model-\d+-of-\d+\.safetensors", f.name)]
    return hf or files


# Bytes a parameter can take in a real checkpoint: from ternary and 2-bit packings (about 0.2) to fp32 (4), with room
# for embeddings kept wide and towers the parameter inventory does not count. Outside it the metadata is not the
# checkpoint's (issue 26: an index total_size of 1 byte, a header of no tensors "fit" an 8B model on a T4).
PLAUSIBLE_BYTES_PER_PARAM = (0.1, 8.5)


def check_plausible(found: WeightBytes, params: int, *, where: str) -> None:
    """Refuse weight bytes that cannot be the checkpoint of a model of `params` parameters."""
    if not params:
        return
    low, high = PLAUSIBLE_BYTES_PER_PARAM
    ratio = found.bytes / params
    if not low <= ratio <= high:
        raise InputError(f"{found.source} gives {found.bytes:,} bytes for a model of {params:,} parameters "
                         f"({ratio:.3g} bytes a parameter; a real checkpoint has {low:g} to {high:g}): not the "
                         "whole checkpoint", where=where,
                         hint="the download is incomplete or the metadata damaged; download the checkpoint again")


def _missing_shards(folder: Path, named: list[str]) -> list[str]:
    """Shards the checkpoint names that are not in the folder, when any shard is there (a folder of config.json and
    the index only, as the Hub lookup keeps, is metadata, not a partial download)."""
    present = [n for n in named if (folder / n).exists()]
    return [n for n in named if not (folder / n).exists()] if present else []


def checkpoint_weight_bytes(folder: Path) -> WeightBytes | None:
    """Exact bytes of the checkpoint in `folder` from its index or safetensors headers; None without either. A
    checkpoint whose index names shards that are not there (some are), or whose `-of-N` shards are fewer than N, is an
    interrupted download: refused."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        data = load_json(index)
        weight_map = data.get("weight_map") if isinstance(data, dict) else None
        if isinstance(weight_map, dict):
            missing = _missing_shards(folder, sorted({str(v) for v in weight_map.values()}))
            if missing:
                raise InputError(f"names {len(missing)} shard(s) the folder does not have ({', '.join(missing[:3])}"
                                 f"{', ...' if len(missing) > 3 else ''})", where=f"{index}: weight_map",
                                 hint="the download is incomplete; download the checkpoint again")
        total = (data.get("metadata") or {}).get("total_size") if isinstance(data, dict) else None
        if isinstance(total, int) and not isinstance(total, bool) and total > 0:
            return WeightBytes(total, f"{index.name} metadata.total_size")
        if isinstance(total, str) and total.isdigit() and int(total) > 0:  # some tools write it as a string
            return WeightBytes(int(total), f"{index.name} metadata.total_size")
        raise InputError("has no positive metadata.total_size", where=f"{index}: metadata.total_size",
                         hint="remove the index to fall back to the safetensors headers")
    files = _checkpoint_files(folder)
    if not files:
        return None
    counts = {m.group(2) for m in (re.fullmatch(r"model-(\d+)-of-(\d+)\.safetensors", f.name) for f in files) if m}
    expected = int(counts.pop()) if len(counts) == 1 else 0
    if len(files) < expected:
        raise InputError(f"holds {len(files)} of the checkpoint's {expected} safetensors shards", where=str(folder),
                         hint="the download is incomplete; download it again")
    total = tensors = 0
    for f in files:
        b, n = safetensors_bytes(f)
        total += b
        tensors += n
    names = files[0].name if len(files) == 1 else f"{len(files)} files"
    return WeightBytes(total, f"safetensors headers ({names}, {tensors} tensors: sum of numel x dtype size)")


# ------------------------------------------------------------------ quantization_config

class NotModelled(Exception):
    """A quantization_config kvplan cannot count exactly; the message says why (it becomes a note)."""


def _module_of(name: str) -> str:
    """'self_attn.q_proj.weight' -> 'self_attn.q_proj'; fused expert names are kept whole."""
    return name[: -len(".weight")] if name.endswith(".weight") else name


_LAYER_PREFIX = re.compile(r"^(?:model\.|backbone\.)?(?:language_model\.)?(?:model\.)?(?:layers|h|blocks)\.(\*|\d+)\.")


class _Exclusions:
    """An exclusion list (modules_to_not_convert / ignore), indexed once: which entries cover `module` (a path below
    the layer, e.g. 'self_attn.q_proj') in layer `layer`. Plain entries name modules ('lm_head', 'gate',
    'model.layers.*.self_attn', 'model.layers.3.mlp') and cover the module itself, what is below it and what ends
    with it; 're:' entries are regular expressions matched against the full module name (compressed-tensors
    `ignore`). Lists of thousands of per-layer entries are common (a whole checkpoint's gates): set lookups keep
    them linear."""

    def __init__(self, patterns: Iterable):
        self.regexes = []
        self.any_layer: set[str] = set()
        self.by_layer: dict[int, set[str]] = {}
        # ModelOpt's entries are shell globs ('model.layers.0.linear_attn*', 'model.layers.0.mlp.shared_expert*')
        self.globs_any: list[str] = []
        self.globs_by_layer: dict[int, list[str]] = {}
        for p in patterns:
            if not isinstance(p, str):
                continue
            if p.startswith("re:"):
                self.regexes.append(re.compile(p[3:]))
                continue
            m = _LAYER_PREFIX.match(p)
            rest = p if m is None else p[m.end():]
            layer = None if m is None or m.group(1) == "*" else int(m.group(1))
            if "*" in rest or "?" in rest:
                (self.globs_any if layer is None else self.globs_by_layer.setdefault(layer, [])).append(rest)
            elif layer is None:
                self.any_layer.add(rest)
            else:
                self.by_layer.setdefault(layer, set()).add(rest)

    def covers(self, module: str, layer: int) -> bool:
        parts = module.split(".")
        # the module, the modules it is below (prefixes) and the names it ends with (suffixes)
        names = {".".join(parts[:i]) for i in range(1, len(parts) + 1)} | {".".join(parts[i:]) for i in range(1, len(parts))}
        if names & self.any_layer or names & self.by_layer.get(layer, set()):
            return True
        globs = self.globs_any + self.globs_by_layer.get(layer, [])
        if any(fnmatch.fnmatchcase(n, g) for g in globs for n in names):
            return True
        # a glob over whole layers ('model.layers.0*', GLM-5.1-NVFP4) is matched against the module's full names
        fulls = [f"{root}layers.{layer}.{module}" for root in ("model.", "model.language_model.", "language_model.model.")]
        if any(fnmatch.fnmatchcase(f, g) for g in self.globs_any for f in fulls):
            return True
        full = f"model.layers.{layer}.{module}"
        return any(r.match(full) for r in self.regexes)

    def layers_listing(self, module: str, layers: int) -> int:
        """How many of the model's `layers` an entry naming that layer covers `module` in."""
        listed = set(self.by_layer) | set(self.globs_by_layer)
        return sum(1 for layer in listed if layer < layers and self.covers(module, layer))


def _excluded(tensor: Tensor, exclusions: _Exclusions, layers: int | None = None) -> bool:
    """Whether an exclusion list leaves this tensor unquantized in every layer. The inventory has one entry per
    class of tensor, not per layer: an entry that covers a quantized module in some layers only cannot be applied
    exactly, so it is refused (NotModelled) -- unless the list names it, layer by layer, in as many layers as the
    model has such a module (ModelOpt lists Qwen3.5's linear_attn* on exactly its 36 linear-attention layers)."""
    module = _module_of(tensor.name)
    hits = [exclusions.covers(module, layer) for layer in (0, 1, 2, 7)]
    if all(hits):
        return True
    if layers is not None and exclusions.layers_listing(module, layers) == tensor.count:
        return True
    if any(hits):
        raise NotModelled(f"the quantization exclusions name single layers of {module}")
    return False


def _matrices(tensors: Iterable[Tensor], exclude: Iterable,
              layers: int | None = None) -> tuple[list[Tensor], list[Tensor]]:
    """(quantized [out, in] matrices, everything else)."""
    exclusions = _Exclusions(exclude)
    quantized, rest = [], []
    for t in tensors:
        if t.kind in (LINEAR, EXPERT) and len(t.shape) == 2 and not _excluded(t, exclusions, layers):
            quantized.append(t)
        else:
            rest.append(t)
    return quantized, rest


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def quantized_weight_bytes(quant: Mapping, tensors: Iterable[Tensor], model_dtype_bits: int,
                           layers: int | None = None, experts: int | None = None) -> WeightBytes:
    """Weight bytes of a checkpoint stored as `quant` (config.json quantization_config, or ModelOpt's
    hf_quant_config.json as modelopt_quant_config makes it) describes; `layers` the decoder layers, `experts` the
    routed experts of a MoE layer.

    Raises NotModelled with the reason when the format or one of its options is not modelled."""
    method = str(quant.get("quant_method") or "").lower()
    tensors = list(tensors)
    plain = model_dtype_bits // 8
    producer = quant.get("producer") if isinstance(quant.get("producer"), Mapping) else {}
    if method == "modelopt" or (not method and quant.get("quant_algo") and producer.get("name") == "modelopt"):
        # some ModelOpt exports leave quant_method out of config.json's block and name only the producer
        return _modelopt(quant, tensors, plain, layers, experts)
    if method == "fp8":
        return _fp8(quant, tensors, plain)
    if method == "mxfp4":
        return _mxfp4(quant, tensors, plain)
    if method in ("awq", "gptq"):
        return _int_grouped(method, quant, tensors, plain)
    if method == "compressed-tensors":
        return _compressed_tensors(quant, tensors, plain)
    raise NotModelled(f"quantization_config.quant_method {method or '(none)'!r} is not modelled")


def _rest_bytes(rest: list[Tensor], plain: int) -> int:
    return sum(t.numel for t in rest) * plain


def _fp8(quant: Mapping, tensors: list[Tensor], plain: int) -> WeightBytes:
    q, rest = _matrices(tensors, quant.get("modules_to_not_convert") or quant.get("ignored_layers") or [])
    block = quant.get("weight_block_size")
    static = str(quant.get("activation_scheme") or "dynamic") == "static"
    total = _rest_bytes(rest, plain)
    experts = _deepseek_v4_experts(quant)
    # DeepSeek-V4's FP4-expert checkpoints keep their FP8 block scales as e8m0 (one byte), the others as float32
    scale_bytes = 1 if experts else 4
    for t in q:
        out, inp = t.shape
        if experts and t.kind == EXPERT:
            total += t.count * _deepseek_v4_expert_bytes(experts, out, inp, t.name)
            continue
        if block:
            bo, bi = int(block[0]), int(block[1])
            scales = _cdiv(out, bo) * _cdiv(inp, bi)
        else:
            scales = 1
        total += t.count * (out * inp + scale_bytes * scales + (4 if static else 0))
    what = f"block {block[0]}x{block[1]} float32 scales" if block else "a float32 scale per matrix"
    if experts:
        what = (f"block {block[0]}x{block[1]} e8m0 scales" if block else "an e8m0 scale per matrix") + (
            f"; routed experts in {experts} (DeepSeek-V4 expert_dtype fp4)")
    return WeightBytes(total, f"quantization_config fp8: 1-byte linear weights with {what}; embeddings, norms, "
                              f"routers and the output head in {plain * 8}-bit")


def _deepseek_v4_experts(quant: Mapping) -> str | None:
    """The routed experts' format of a DeepSeek-V4 fp8 checkpoint (hf_config.py adds `expert_dtype` to its quant
    block), as vLLM 0.34 models/deepseek_v4/quant_config.py DeepseekV4FP8Config.get_quant_method picks it:
    expert_dtype "fp4" (the default) is MXFP4 (Mxfp4MoEMethod), or NVFP4 when the block says moe_quant_algo NVFP4
    (NVIDIA's -NVFP4 files: ModelOptNvFp4FusedMoE); "fp8" (Flash-Base) is FP8 block like the other layers (None)."""
    dtype_ = quant.get("expert_dtype")
    if dtype_ is None or dtype_ == "fp8":
        return None
    if dtype_ != "fp4":
        raise NotModelled(f"DeepSeek-V4 expert_dtype {dtype_!r} is not modelled (fp4 and fp8 are)")
    algo = str(quant.get("moe_quant_algo") or "").upper()
    if algo not in ("", "NVFP4"):
        raise NotModelled(f"DeepSeek-V4 moe_quant_algo {algo!r} is not modelled (NVFP4 is)")
    return "NVFP4" if algo == "NVFP4" else "MXFP4"


def _deepseek_v4_expert_bytes(fmt: str, out: int, inp: int, name: str) -> int:
    """One routed expert matrix: MXFP4 as the files store it (DeepSeek-V4-Flash: two E2M1 values a byte and one e8m0
    scale per 32 inputs, 17 bytes / 32 weights, as vLLM's mxfp4.py loads it); NVFP4 as ModelOpt writes it and
    ModelOptNvFp4FusedMoE.create_weights loads it (uint8 [out, in / 2], fp8 [out, in / 16], float32 weight_scale_2
    and input_scale: _modelopt_matrix_bytes)."""
    if fmt == "NVFP4":
        return _modelopt_matrix_bytes("NVFP4", out, inp, 16, name)
    if inp % 32:
        raise NotModelled(f"mxfp4 needs the input dimension of {name} ({inp}) to be a multiple of 32")
    return out * (inp // 32) * (16 + 1)


def _mxfp4(quant: Mapping, tensors: list[Tensor], plain: int) -> WeightBytes:
    # gpt-oss quantizes the MoE experts only (its modules_to_not_convert lists attention, router, embeddings, head)
    total = 0
    experts = 0
    for t in tensors:
        if t.kind == EXPERT and len(t.shape) == 2:
            out, inp = t.shape
            if inp % 32:
                raise NotModelled(f"mxfp4 needs the input dimension of {t.name} ({inp}) to be a multiple of 32")
            total += t.count * out * (inp // 32) * (16 + 1)
            experts += 1
        else:
            total += t.numel * plain
    if not experts:
        raise NotModelled("quant_method mxfp4 on a model without MoE experts is not modelled")
    return WeightBytes(total, "quantization_config mxfp4: experts in 4-bit E2M1 with a uint8 E8M0 scale per 32 weights "
                              f"(17 bytes / 32 weights); the rest in {plain * 8}-bit")


def _int_grouped(method: str, quant: Mapping, tensors: list[Tensor], plain: int) -> WeightBytes:
    bits = int(quant.get("bits") or quant.get("w_bit") or 4)
    group = int(quant.get("group_size") or quant.get("q_group_size") or 128)
    if bits not in (2, 3, 4, 8):
        raise NotModelled(f"{method} with {bits}-bit weights is not modelled")
    if method == "awq" and (bits != 4 or str(quant.get("version") or "gemm").lower() not in ("gemm", "gemv_fast", "gemv")):
        raise NotModelled(f"awq {bits}-bit version {quant.get('version')!r} is not modelled")
    q, rest = _matrices(tensors, quant.get("modules_to_not_convert") or [])
    total = _rest_bytes(rest, plain)
    whole = 0
    keep_whole = method == "gptq" and (group <= 0 or bool(quant.get("desc_act")))
    for t in q:
        out, inp = t.shape
        groups = 1 if group <= 0 else _cdiv(inp, group)
        packed = inp * out * bits // 8
        qzeros = groups * out * bits // 8
        scales = groups * out * 2  # float16
        g_idx = 4 * inp if method == "gptq" else 0
        total += t.count * (packed + qzeros + scales + g_idx)
        if keep_whole and _row_parallel(t):
            whole += t.count * (qzeros + scales)
    g = "per column" if group <= 0 else f"group {group}"
    return WeightBytes(total, f"quantization_config {method}: {bits}-bit linear weights, fp16 scales and packed zeros per "
                              f"{g}{', int32 g_idx' if method == 'gptq' else ''}; the rest in {plain * 8}-bit", whole)


# the linear layers tensor parallelism splits along their input (RowParallelLinear in the engines' model files:
# attention's output projection and the MLP's down projection under their families' names)
_ROW_PARALLEL = {"o_proj", "down_proj", "dense", "c_proj", "out_proj", "dense_4h_to_h", "w2", "wo"}


def _row_parallel(t: Tensor) -> bool:
    """Whether the matrix is split along its input over tensor parallelism.

    Why it matters for GPTQ: a row-parallel layer's rank holds 1/tp of the inputs, but with act-order (desc_act,
    where g_idx maps inputs to groups out of order) or one group per column the rank cannot tell which groups its
    inputs use, so every rank loads the scales and zero points whole: vLLM 0.12 gptq.py GPTQLinearMethod
    .create_weights (scale_and_zero_input_dim stays None, the size input_size // group_size, unless the layer is
    split and group_size != -1 and not desc_act) and gptq_marlin.py GPTQMarlinLinearMethod.create_weights
    (utils/marlin_utils.py marlin_repeat_scales_on_all_ranks: "act_order or (is_channelwise and is_row_parallel)").
    qweight and g_idx are still split. One group per column makes them [1, out]: whole, and tiny."""
    # routed experts are left out: the fused-MoE GPTQ methods were not read for this
    return t.kind == LINEAR and _module_of(t.name).split(".")[-1] in _ROW_PARALLEL


def _compressed_tensors(quant: Mapping, tensors: list[Tensor], plain: int) -> WeightBytes:
    groups = quant.get("config_groups") or {}
    if not isinstance(groups, Mapping) or len(groups) != 1:
        raise NotModelled("compressed-tensors with other than one config group is not modelled")
    (scheme,) = groups.values()
    targets = scheme.get("targets") or []
    if list(targets) != ["Linear"]:
        raise NotModelled(f"compressed-tensors targets {targets!r} (only ['Linear'] is modelled)")
    w = scheme.get("weights") or {}
    bits, kind = int(w.get("num_bits") or 8), str(w.get("type") or "int")
    strategy, fmt = str(w.get("strategy") or "tensor"), str(quant.get("format") or "")
    if not w.get("symmetric", True):
        raise NotModelled("asymmetric compressed-tensors weights (zero points) are not modelled")
    q, rest = _matrices(tensors, quant.get("ignore") or [])
    total = _rest_bytes(rest, plain)
    if fmt == "nvfp4-pack-quantized":
        return _compressed_nvfp4(w, bool(scheme.get("input_activations")), q, total, plain)
    packed = fmt == "pack-quantized"
    if fmt not in ("pack-quantized", "int-quantized", "float-quantized", "naive-quantized"):
        raise NotModelled(f"compressed-tensors format {fmt!r} is not modelled")
    inputs = scheme.get("input_activations") or {}
    static_input = bool(inputs) and not inputs.get("dynamic", False)
    for t in q:
        out, inp = t.shape
        if strategy == "channel":
            scales = out
        elif strategy == "group":
            scales = out * _cdiv(inp, int(w["group_size"]))
        elif strategy == "block":
            bo, bi = (int(x) for x in w["block_structure"])
            scales = _cdiv(out, bo) * _cdiv(inp, bi)
        elif strategy == "tensor":
            scales = 1
        else:
            raise NotModelled(f"compressed-tensors weight strategy {strategy!r} is not modelled")
        weight = inp * out * bits // 8 if packed else inp * out * (8 if bits <= 8 else bits) // 8
        total += t.count * (weight + scales * plain + (16 if packed else 0) + (plain if static_input else 0))
    return WeightBytes(total, f"quantization_config compressed-tensors: {bits}-bit {kind} linear weights ({strategy} scales in "
                              f"{plain * 8}-bit, {fmt}); the rest in {plain * 8}-bit")


def _compressed_nvfp4(w: Mapping, act_quantized: bool, q: list[Tensor], rest_bytes: int, plain: int) -> WeightBytes:
    """compressed-tensors NVFP4 (llm-compressor's NVFP4 and NVFP4A16 schemes), per quantized [out, in] matrix as
    compressed-tensors 0.20 compressors/nvfp4/base.py NVFP4PackedCompressor.compress writes it and vLLM 0.12
    compressed_tensors_w4a4_nvfp4.py / _w4a16_nvfp4.py create_weights load it: weight_packed uint8 [out, in / 2] (two
    E2M1 values a byte), weight_scale float8_e4m3fn [out, in / 16], weight_global_scale float32 [1], and with the
    activations quantized too (NVFP4, not NVFP4A16) an input_global_scale float32 [1]."""
    bits, kind, strategy = int(w.get("num_bits") or 0), str(w.get("type") or ""), str(w.get("strategy") or "")
    group = int(w.get("group_size") or 0)
    if (bits, kind, strategy) != (4, "float", "tensor_group") or group <= 0:
        raise NotModelled(f"compressed-tensors nvfp4-pack-quantized with {bits}-bit {kind} {strategy} weights, group "
                          f"{group} (NVFP4 is 4-bit float tensor_group) is not modelled")
    total = rest_bytes
    for t in q:
        out, inp = t.shape
        if inp % 2:
            raise NotModelled(f"NVFP4 needs an even input width of {t.name} ({inp})")
        total += t.count * (out * inp // 2 + out * _cdiv(inp, group) + 4 + (4 if act_quantized else 0))
    what = "weights and activations" if act_quantized else "weights only"
    return WeightBytes(total, f"quantization_config compressed-tensors nvfp4-pack-quantized ({what}): 4-bit E2M1 linear "
                              f"weights, an fp8 scale per {group} inputs and float32 global scales; the rest in "
                              f"{plain * 8}-bit")


# ------------------------------------------------------------------ NVIDIA ModelOpt

def modelopt_quant_config(hf_quant: Mapping) -> dict:
    """ModelOpt's hf_quant_config.json ({"quantization": {"quant_algo", "exclude_modules", "group_size", ...}}) as a
    quantization_config mapping (quant_method "modelopt"), the form vLLM reads it into (quantization/modelopt.py
    ModelOptFp8Config / ModelOptNvFp4Config / ModelOptMixedPrecisionConfig.from_config)."""
    q = hf_quant.get("quantization") if isinstance(hf_quant.get("quantization"), Mapping) else hf_quant
    return {"quant_method": "modelopt", "quant_algo": q.get("quant_algo"),
            "exclude_modules": list(q.get("exclude_modules") or []), "group_size": q.get("group_size"),
            "kv_cache_quant_algo": q.get("kv_cache_quant_algo"), "quantized_layers": q.get("quantized_layers")}


def _modelopt_matrix_bytes(algo: str, out: int, inp: int, group: int, name: str) -> int:
    """Bytes one [out, in] matrix takes in a ModelOpt checkpoint, as vLLM 0.34 quantization/modelopt.py registers it
    for loading (resolve() picks the scheme per algo; KFp8StaticTensor / KNvfp4Static / KNvfp4Dynamic .create_weights):
    FP8: the fp8 weight, a float32 weight_scale and input_scale; NVFP4: uint8 [out, in / 2] (two E2M1 values a byte),
    a float8_e4m3fn weight_scale [out, in / group_size] (no padding: the loader takes in % 16 == 0), a float32
    weight_scale_2 and input_scale; W4A16_NVFP4: the same without the input_scale (weight-only; vLLM still accepts and
    drops one that older exports wrote, _DropInputScale: 4 bytes a matrix, left out)."""
    if algo == "FP8":
        return out * inp + 4 + 4
    if algo in ("NVFP4", "W4A16_NVFP4"):
        if inp % group or inp % 2:
            raise NotModelled(f"NVFP4 needs the input width of {name} ({inp}) to be a multiple of {group}")
        return out * inp // 2 + out * inp // group + 4 + (4 if algo == "NVFP4" else 0)
    raise NotModelled(f"ModelOpt quant_algo {algo!r} is not modelled (FP8, NVFP4 and W4A16_NVFP4 are)")


def _modelopt(quant: Mapping, tensors: list[Tensor], plain: int, layers: int | None,
              experts: int | None = None) -> WeightBytes:
    """NVIDIA ModelOpt checkpoints, per quantized [out, in] matrix as vLLM 0.34 quantization/modelopt.py creates and
    loads them (_modelopt_matrix_bytes). The excluded modules (exclude_modules, or a config.json's ignore) and
    everything that is not a linear layer stay in the model dtype. MIXED_PRECISION names the format of each layer's
    modules in quantized_layers (_mixed_precision)."""
    algo = str(quant.get("quant_algo") or "").upper()
    exclude = quant.get("exclude_modules") or quant.get("ignore") or []
    if algo == "MIXED_PRECISION":
        return _mixed_precision(quant, tensors, plain, experts, _Exclusions(exclude))
    q, rest = _matrices(tensors, exclude, layers)
    total = _rest_bytes(rest, plain)
    if algo == "FP8":
        what = "1-byte fp8 linear weights, a float32 weight and input scale per matrix"
        group = 0
    elif algo == "NVFP4":
        group = quant.get("group_size")
        if group is None:  # a config.json's modelopt block carries it in its config group
            groups = quant.get("config_groups") or {}
            group = next((g.get("weights", {}).get("group_size") for g in groups.values() if isinstance(g, Mapping)), 16)
        group = int(group or 16)
        what = f"NVFP4 linear weights (4-bit E2M1, an fp8 scale per {group} inputs, float32 per-matrix scales)"
    else:
        raise NotModelled(f"ModelOpt quant_algo {algo or '(none)'!r} is not modelled (FP8, NVFP4 and MIXED_PRECISION are)")
    for t in q:
        out, inp = t.shape
        total += t.count * _modelopt_matrix_bytes(algo, out, inp, group, t.name)
    return WeightBytes(total, f"ModelOpt {algo}: {what}; {len(rest)} other tensor classes (embeddings, norms, routers, "
                              f"excluded modules) in {plain * 8}-bit")


# kvplan's inventory fuses matrices a checkpoint stores apart (params.py names Qwen3-Next / Qwen3.5's gated-delta-net
# input projection in_proj_qkvz and in_proj_ba; Qwen3.5 checkpoints hold in_proj_qkv + in_proj_z and in_proj_b +
# in_proj_a): a MIXED_PRECISION table names the parts, which must agree
_FUSED_PARTS = {"in_proj_qkvz": ("in_proj_qkv", "in_proj_z"), "in_proj_ba": ("in_proj_b", "in_proj_a")}


def _mixed_table(table: Mapping) -> dict[str, dict[str, list]]:
    """quantized_layers ({"model.language_model.layers.3.mlp.gate_proj": {"quant_algo": ..., "group_size": ...}}) as
    module below the layer -> algo -> [(layer or None, group_size)]."""
    by_module: dict[str, dict[str, list]] = {}
    for key, recipe in table.items():
        if not isinstance(recipe, Mapping) or not isinstance(key, str):
            raise NotModelled(f"quantized_layers entry {key!r} is not a recipe")
        m = _LAYER_PREFIX.match(key)
        module, layer = (key, None) if m is None else (key[m.end():], m.group(1))
        algo = str(recipe.get("quant_algo") or "").upper()
        group = int(recipe.get("group_size") or 16)
        by_module.setdefault(module, {}).setdefault(algo, []).append((layer, group))
    return by_module


def _mixed_precision(quant: Mapping, tensors: list[Tensor], plain: int, experts: int | None,
                     excluded: _Exclusions) -> WeightBytes:
    """ModelOpt MIXED_PRECISION (nvidia/Qwen3.6-27B-NVFP4: FP8 attention, W4A16_NVFP4 MLP and output head): a table
    of quant_algo per module and layer, read as vLLM 0.34 ModelOptMixedPrecisionConfig._resolve_quant_algo does (the
    module's own entry, the entries of its parts, or an entry above it: 'layers.N.mlp.experts' for every expert
    matrix). The inventory has one entry per class of tensor, so a class must have one algo in every layer it occurs
    in, or none (then it stays in the model dtype); a table entry no tensor takes is refused, not dropped."""
    table = quant.get("quantized_layers")
    if not isinstance(table, Mapping) or not table:
        raise NotModelled("ModelOpt MIXED_PRECISION without a quantized_layers table is not modelled")
    by_module = _mixed_table(table)
    layers_of: dict[str, int] = {}  # the layers each class occurs in (an expert class: count / experts per layer)
    for t in tensors:
        per_layer = experts if t.kind == EXPERT and experts else 1
        layers_of[t.name] = layers_of.get(t.name, 0) + max(t.count // per_layer, 1)
    used: set[str] = set()
    total = 0
    formats: dict[str, int] = {}
    for t in tensors:
        module = _module_of(t.name)
        parent, _, leaf = module.rpartition(".")
        parts = [f"{parent}.{p}" if parent else p for p in _FUSED_PARTS.get(leaf, ())]
        keys = [k for k in by_module if k == module or module.startswith(k + ".")] or [k for k in parts if k in by_module]
        if not keys:
            total += t.numel * plain
            continue
        if t.kind not in (LINEAR, EXPERT, LM_HEAD) or len(t.shape) != 2:
            raise NotModelled(f"quantized_layers quantizes {keys[0]}, which kvplan keeps in the model dtype")
        if parts and len(keys) != len(parts):
            raise NotModelled(f"quantized_layers lists some parts of {module} only")
        recipes = {(algo, group) for k in keys for algo, entries in by_module[k].items() for _, group in entries}
        layer_sets = [{layer for entries in by_module[k].values() for layer, _ in entries} for k in keys]
        if len(recipes) != 1 or any(s != layer_sets[0] for s in layer_sets) or len(layer_sets[0]) != layers_of[t.name]:
            raise NotModelled(f"quantized_layers gives {module} different formats in different layers, or leaves it "
                              "unquantized in some")
        first = min((int(layer) for layer in layer_sets[0] if layer is not None and layer != "*"), default=0)
        if excluded.covers(module, first):  # vLLM leaves an excluded module unquantized whatever the table says
            raise NotModelled(f"{module} is both excluded and listed in quantized_layers")
        used.update(keys)
        ((algo, group),) = recipes
        out, inp = t.shape
        total += t.count * _modelopt_matrix_bytes(algo, out, inp, group, t.name)
        formats[algo] = formats.get(algo, 0) + t.count
    unused = sorted(set(by_module) - used)
    if unused:
        raise NotModelled(f"quantized_layers names {unused[0]}, a module kvplan does not count as a linear layer")
    what = ", ".join(f"{n} {algo}" for algo, n in sorted(formats.items()))
    return WeightBytes(total, f"ModelOpt MIXED_PRECISION: per-layer formats from quantized_layers ({what} matrices); "
                              f"the rest in {plain * 8}-bit")
