"""GPTQ checkpoints' weight bytes against their safetensors files (tests/data/checkpoint_headers/gptq).

Each folder holds a public GPTQ checkpoint's config.json and the Git LFS pointer of its single model.safetensors,
both verbatim (SOURCES.md says from where). The pointer gives the file's exact size; a safetensors file is an 8-byte
length, a JSON header and the tensors' bytes, nothing else (https://github.com/huggingface/safetensors, "Format").
The tensors are written out by hand below from config.json, as AutoGPTQ stores them; the header JSON the
safetensors library writes for exactly those tensors is rebuilt too. What is left of the file size (the header's
`__metadata__` entry and its padding to 8 bytes) has to be a few hundred bytes at most, so the inventory is the file's
whole content and its byte sum is the headers' total.

Measured (kvplan / headers - 1): -0.02% to -0.05% on all eleven, the zero biases AutoGPTQ wrote and the rotary
inv_freq buffers transformers 4.30 saved (no engine loads either) being what kvplan does not count. At TP 2/4/8 one
GPU is within 0.1% of the hand split below, which keeps act-order's row-parallel scales and zeros whole on every rank.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kvplan.core.dtypes import dtype
from kvplan.engines.runtime.weights import stage_weight_bytes
from kvplan.model.catalog import resolve_model

GPTQ = Path(__file__).parent / "data" / "checkpoint_headers" / "gptq"
CHECKPOINTS = sorted(p.name for p in GPTQ.iterdir() if p.is_dir())
SIZE = {"F16": 2, "F32": 4, "I32": 4}
# safetensors sorts tensors by dtype, the later Dtype variants first (safetensors/src/tensor.rs `prepare`), then by name
DTYPE_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64"]
COLUMN = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.gate_proj", "mlp.up_proj")
ROW = ("self_attn.o_proj", "mlp.down_proj")


def _config(name: str) -> dict:
    return json.loads((GPTQ / name / "config.json").read_text())


def _file_size(name: str) -> int:
    pointer = (GPTQ / name / "model.safetensors.lfs-pointer").read_text()
    assert pointer.startswith("version https://git-lfs.github.com/spec/v1\n")
    return int(re.search(r"^size (\d+)$", pointer, re.M).group(1))


def _inventory(cfg: dict) -> dict[str, tuple[str, list[int]]]:
    """Every tensor of the file: name -> (safetensors dtype, shape).

    AutoGPTQ's QuantLinear (auto_gptq/nn_modules/qlinear, 0.3-0.4, which TheBloke's 2023 uploads came from) stores a
    linear layer of `inp` inputs and `out` outputs as qweight int32 [inp / 32 x bits, out], qzeros int32
    [groups, out / 32 x bits], scales fp16 [groups, out] (groups = inp / group_size, 1 for group_size -1), g_idx int32
    [inp], and a fp16 bias [out] that those versions always created (zeros for Llama, which has none). Embeddings,
    head and norms stay fp16. transformers 4.30 saved each layer's rotary inv_freq (fp32 [head_dim / 2]); 4.31 made it
    non-persistent (the configs' transformers_version)."""
    q = cfg["quantization_config"]
    bits, group = q["bits"], q["group_size"]
    hidden, inter, vocab = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    heads = cfg["num_attention_heads"]
    head_dim = hidden // heads
    kv = cfg.get("num_key_value_heads", heads) * head_dim
    shapes = {"self_attn.q_proj": (hidden, hidden), "self_attn.k_proj": (hidden, kv), "self_attn.v_proj": (hidden, kv),
              "self_attn.o_proj": (hidden, hidden), "mlp.gate_proj": (hidden, inter), "mlp.up_proj": (hidden, inter),
              "mlp.down_proj": (inter, hidden)}  # (inputs, outputs)
    t = {"model.embed_tokens.weight": ("F16", [vocab, hidden]), "lm_head.weight": ("F16", [vocab, hidden]),
         "model.norm.weight": ("F16", [hidden])}
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        t[p + "input_layernorm.weight"] = ("F16", [hidden])
        t[p + "post_attention_layernorm.weight"] = ("F16", [hidden])
        if cfg["transformers_version"].startswith("4.30"):
            t[p + "self_attn.rotary_emb.inv_freq"] = ("F32", [head_dim // 2])
        for module, (inp, out) in shapes.items():
            groups = 1 if group == -1 else inp // group
            t[p + module + ".qweight"] = ("I32", [inp // 32 * bits, out])
            t[p + module + ".qzeros"] = ("I32", [groups, out // 32 * bits])
            t[p + module + ".scales"] = ("F16", [groups, out])
            t[p + module + ".g_idx"] = ("I32", [inp])
            t[p + module + ".bias"] = ("F16", [out])
    return t


def _nbytes(dt: str, shape: list[int]) -> int:
    n = SIZE[dt]
    for d in shape:
        n *= d
    return n


def _header_json_bytes(tensors: dict[str, tuple[str, list[int]]]) -> int:
    """Length of the header JSON safetensors writes for these tensors, without its __metadata__ entry: compact JSON,
    tensors in its storage order, each {"dtype", "shape", "data_offsets"}."""
    order = sorted(tensors, key=lambda n: (-DTYPE_ORDER.index(tensors[n][0]), n))
    header, offset = {}, 0
    for name in order:
        dt, shape = tensors[name]
        size = _nbytes(dt, shape)
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    return len(json.dumps(header, separators=(",", ":")))


def _headers_total(name: str) -> int:
    return sum(_nbytes(dt, shape) for dt, shape in _inventory(_config(name)).values())


def test_eleven_checkpoints_in_two_models_and_both_act_orders():
    configs = [_config(n)["quantization_config"] for n in CHECKPOINTS]
    assert len(CHECKPOINTS) == 11
    assert {c["bits"] for c in configs} == {3, 4, 8} and {c["group_size"] for c in configs} == {-1, 32, 64, 128}
    assert {c["desc_act"] for c in configs} == {True, False}


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_the_hand_inventory_is_the_whole_file(name):
    """file size = 8 + header + tensors; with the inventory's tensors and their header JSON taken out, what is left is
    the __metadata__ entry ({"format": "pt", ...}) and the padding to 8 bytes. A missing or misshapen tensor would
    leave megabytes (a Llama-30B layer's zero biases are 138 kB, one rotary buffer 256 B + its 94-byte entry)."""
    tensors = _inventory(_config(name))
    left = _file_size(name) - 8 - _headers_total(name) - _header_json_bytes(tensors)
    assert 0 <= left <= 400, left


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_checkpoint_bytes_from_config_match_the_headers(name):
    spec = resolve_model(str(GPTQ / name / "config.json"))
    headers = _headers_total(name)
    assert spec.weights_bytes is not None, spec.notes
    # what kvplan leaves out: the zero biases and rotary buffers, which vLLM's llama.py load_weights skips
    cfg = _config(name)
    unloaded = sum(_nbytes(dt, s) for n, (dt, s) in _inventory(cfg).items() if n.endswith((".bias", ".inv_freq")))
    assert spec.weights_bytes == headers - unloaded
    assert abs(spec.weights_bytes - headers) <= headers * 0.005, (spec.weights_bytes, headers)


def _rank_bytes(cfg: dict, tp: int) -> int:
    """One GPU's share of the loaded tensors as vLLM 0.12 splits them: the embedding and head by vocabulary
    (VocabParallelEmbedding / ParallelLMHead), q/k/v/gate/up by output (ColumnParallelLinear), o/down by input
    (RowParallelLinear), norms whole. A row-parallel layer's qweight and g_idx are split, but its scales and qzeros
    are loaded whole on every rank under act-order or group_size -1 (gptq.py / gptq_marlin.py create_weights)."""
    q = cfg["quantization_config"]
    whole_scales = q["desc_act"] or q["group_size"] == -1
    total = 0
    for name, (dt, shape) in _inventory(cfg).items():
        size = _nbytes(dt, shape)
        if name.endswith((".bias", ".inv_freq")):
            continue  # not loaded
        if name.endswith("norm.weight"):
            total += size
        elif any(f".{m}." in name for m in ROW) and name.endswith((".scales", ".qzeros")) and whole_scales:
            total += size
        else:
            assert size % tp == 0, name
            total += size // tp
    return total


@pytest.mark.parametrize("name", CHECKPOINTS)
@pytest.mark.parametrize("tp", [2, 4, 8])
def test_one_gpu_holds_its_share_as_the_engines_split_it(name, tp):
    spec = resolve_model(str(GPTQ / name / "config.json"))
    by_hand = _rank_bytes(_config(name), tp)
    (per_gpu,) = stage_weight_bytes(spec, None, dtype(spec.dtype), tp, 1)
    assert abs(per_gpu - by_hand) <= by_hand * 0.02, (per_gpu, by_hand)


def test_act_order_keeps_a_quarter_more_on_each_of_eight_gpus():
    """The whole scales are no rounding error: Wizard-Vicuna-30B 4-bit group 32 act-order holds 0.77 GB of row-parallel
    scales and zeros, so one of 8 GPUs holds 27% more than an even 1/8 of the loaded checkpoint; the same model without
    act-order (3-bit group 128) splits evenly."""
    cfg = _config("wizard_vicuna_30b__gptq-4bit-32g-actorder_True")
    even = sum(_nbytes(dt, s) for n, (dt, s) in _inventory(cfg).items() if not n.endswith((".bias", ".inv_freq"))) / 8
    assert _rank_bytes(cfg, 8) / even > 1.25
    plain = _config("wizard_vicuna_30b__gptq-3bit-128g-actorder_False")
    even = sum(_nbytes(dt, s) for n, (dt, s) in _inventory(plain).items() if not n.endswith((".bias", ".inv_freq"))) / 8
    assert _rank_bytes(plain, 8) / even < 1.001
