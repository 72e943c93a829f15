"""Exact weight bytes (kvplan/model/weights.py): safetensors index and headers (tiny fake files built here, never a
real download), and the bytes each quantization_config format stores, checked against real checkpoints'
tensor listings and against hand arithmetic on small configs."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from kvplan.model import hf_config, params, weights
from kvplan.model.catalog import resolve_model
from kvplan.core.errors import InputError

DATA = Path(__file__).parent / "data"
GiB = 2**30


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]], *, lie: int = 0, metadata=None) -> int:
    """A valid .safetensors file (zeros for data); returns its tensor bytes. `lie` shifts one data offset."""
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "U8": 1, "I8": 1, "F8_E4M3": 1, "I32": 4, "I64": 8}
    header, offset = {}, 0
    for name, (dt, shape) in tensors.items():
        n = sizes[dt]
        for d in shape:
            n *= d
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [offset, offset + n + lie]}
        offset += n
    if metadata is not None:
        header["__metadata__"] = metadata
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + bytes(offset))
    return offset


def test_header_sum(tmp_path):
    path = tmp_path / "model.safetensors"
    n = write_safetensors(path, {"a": ("BF16", [4, 8]), "b": ("F32", [3]), "c": ("U8", [2, 2, 16]), "d": ("F8_E4M3", [5, 7]),
                                 "e": ("I64", [2]), "scalar": ("F32", [])}, metadata={"format": "pt"})
    assert n == 4 * 8 * 2 + 3 * 4 + 64 + 35 + 16 + 4
    assert weights.safetensors_bytes(path) == (n, 6)
    got = weights.checkpoint_weight_bytes(tmp_path)
    assert got.bytes == n and "safetensors headers (model.safetensors, 6 tensors" in got.source


def test_only_the_header_is_read(tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"
    n = write_safetensors(path, {"w": ("BF16", [1024, 1024])})
    path.write_bytes(path.read_bytes()[: -n])  # drop the data: the header alone must be enough
    assert weights.safetensors_bytes(path) == (n, 1)


def test_shards_count_once_beside_consolidated(tmp_path):
    a = write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {"x": ("BF16", [10, 10])})
    b = write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"y": ("BF16", [10, 3])})
    write_safetensors(tmp_path / "consolidated.safetensors", {"x": ("BF16", [10, 10]), "y": ("BF16", [10, 3])})
    got = weights.checkpoint_weight_bytes(tmp_path)
    assert got.bytes == a + b and "2 files" in got.source


def test_index_total_size_wins(tmp_path):
    write_safetensors(tmp_path / "model-00001-of-00001.safetensors", {"x": ("BF16", [10, 10])})
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 123456789}, "weight_map": {}}))
    got = weights.checkpoint_weight_bytes(tmp_path)
    assert (got.bytes, got.source) == (123456789, "model.safetensors.index.json metadata.total_size")


def test_no_checkpoint_is_none(tmp_path):
    assert weights.checkpoint_weight_bytes(tmp_path) is None


@pytest.mark.parametrize("damage,fragment", [
    ("offsets", "data_offsets span"),
    ("length", "header (limit"),
    ("short", "too short"),
    ("truncated", "ends inside its header"),
    ("json", "not JSON"),
    ("dtype", "unknown safetensors dtype"),
])
def test_damaged_files_are_input_errors(tmp_path, damage, fragment):
    path = tmp_path / "model.safetensors"
    if damage == "offsets":
        write_safetensors(path, {"w": ("BF16", [4, 4])}, lie=2)
    elif damage == "length":
        path.write_bytes(struct.pack("<Q", 2**40) + b"{}")
    elif damage == "short":
        path.write_bytes(b"\x01\x02")
    elif damage == "truncated":
        path.write_bytes(struct.pack("<Q", 100) + b'{"w": ')
    elif damage == "json":
        path.write_bytes(struct.pack("<Q", 4) + b"nope")
    else:
        blob = json.dumps({"w": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 2]}}).encode()
        path.write_bytes(struct.pack("<Q", len(blob)) + blob + bytes(2))
    with pytest.raises(InputError) as err:
        weights.checkpoint_weight_bytes(tmp_path)
    assert fragment in err.value.what and str(path) in err.value.where


def test_bad_index_names_the_key(cli, tmp_path):
    (tmp_path / "config.json").write_text((DATA / "hf_configs" / "llama-3.1-8b.json").read_text())
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}}))
    code, out, err = cli("estimate", tmp_path, "--json")
    assert code == 2 and "metadata.total_size" in err


def test_model_folder_through_the_cli(cli, tmp_path):
    """A model folder: config.json and its safetensors; estimate reports their exact bytes and says so."""
    (tmp_path / "config.json").write_text((DATA / "hf_configs" / "qwen3-8b.json").read_text())
    # the header of a whole checkpoint's worth of tensors (16.4 GB for Qwen3-8B's 8.19 billion parameters; a toy
    # header of 2 MB is refused as an incomplete checkpoint); the data after the header is left out: only the
    # header is read
    import hub_standin

    (tmp_path / "model.safetensors").write_bytes(hub_standin.safetensors_file(
        {"w": ("BF16", [4_000_000, 2048]), "s": ("F32", [10])}, {"BF16": 2, "F32": 4}))
    code, out, err = cli("estimate", tmp_path, "--seq", "4096", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["weights_bytes"] == 4_000_000 * 2048 * 2 + 10 * 4
    assert "safetensors headers" in got["weights_source"]
    code, out, _ = cli("estimate", tmp_path, "--seq", "4096", "--dtype", "bf16", "--json")  # --dtype overrides
    assert json.loads(out)["weights_bytes"] == 2 * json.loads(out)["params"]


# ------------------------------------------------------------------ quantization_config

def _inventory(raw: dict):
    mapping = hf_config.spec_mapping_from_config(raw, name="m", where="config.json")
    return params.count_params(raw, hf_config.text_config(raw), mapping).tensors


TINY = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 384, "vocab_size": 1000, "torch_dtype": "bfloat16"}
# per layer: q 256x256, k 128x256, v 128x256, o 256x256, gate/up 384x256, down 256x384 ([out, in])
LINEARS = [(256, 256), (128, 256), (128, 256), (256, 256), (384, 256), (384, 256), (256, 384)]
REST = 2 * 1000 * 256 + 256 + 2 * 2 * 256  # embeddings + head, final norm, two norms per layer


def test_fp8_block_scales_by_hand():
    q = {"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic"}
    got = weights.quantized_weight_bytes(q, _inventory(TINY), 16)
    blocks = sum(-(-o // 128) * -(-i // 128) for o, i in LINEARS)  # 4 + 2 + 2 + 4 + 6 + 6 + 6
    assert blocks == 30
    assert got.bytes == 2 * (sum(o * i for o, i in LINEARS) + 4 * blocks) + 2 * REST


def test_fp8_per_tensor_static_by_hand():
    q = {"quant_method": "fp8", "activation_scheme": "static"}
    got = weights.quantized_weight_bytes(q, _inventory(TINY), 16)
    assert got.bytes == 2 * (sum(o * i for o, i in LINEARS) + len(LINEARS) * (4 + 4)) + 2 * REST


def test_awq_and_gptq_by_hand():
    awq = weights.quantized_weight_bytes({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm"},
                                         _inventory(TINY), 16)
    # qweight in x out / 2, qzeros (in/128) x out / 2, fp16 scales (in/128) x out x 2
    per = [i * o // 2 + (i // 128) * o // 2 + (i // 128) * o * 2 for o, i in LINEARS]
    assert awq.bytes == 2 * sum(per) + 2 * REST
    gptq = weights.quantized_weight_bytes({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False},
                                          _inventory(TINY), 16)
    assert gptq.bytes == awq.bytes + 2 * sum(4 * i for _, i in LINEARS)  # plus an int32 g_idx per input row
    per_column = weights.quantized_weight_bytes({"quant_method": "gptq", "bits": 4, "group_size": -1}, _inventory(TINY), 16)
    assert per_column.bytes == 2 * sum(i * o // 2 + o // 2 + o * 2 + 4 * i for o, i in LINEARS) + 2 * REST


def test_compressed_tensors_by_hand():
    w8a8 = {"quant_method": "compressed-tensors", "format": "int-quantized", "ignore": ["lm_head"],
            "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": {"dynamic": True, "num_bits": 8},
                                          "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True}}}}
    got = weights.quantized_weight_bytes(w8a8, _inventory(TINY), 16)
    assert got.bytes == 2 * sum(o * i + 2 * o for o, i in LINEARS) + 2 * REST  # int8 weights, a bf16 scale per row
    w4a16 = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
             "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                                            "group_size": 128, "symmetric": True}}}}
    got = weights.quantized_weight_bytes(w4a16, _inventory(TINY), 16)
    # packed int32 [out, in/8], bf16 scales [out, in/128], int64 weight_shape [2]
    assert got.bytes == 2 * sum(o * i // 2 + 2 * o * (i // 128) + 16 for o, i in LINEARS) + 2 * REST


def test_compressed_tensors_nvfp4_by_hand():
    """llm-compressor's NVFP4 scheme (format nvfp4-pack-quantized; the config block as RedHatAI's NVFP4 checkpoints
    write it): per matrix weight_packed uint8 [out, in/2], weight_scale fp8 [out, in/16], weight_global_scale and
    input_global_scale float32 [1] (compressed-tensors 0.20 NVFP4PackedCompressor.compress; vLLM 0.12
    compressed_tensors_w4a4_nvfp4.py create_weights registers the same four). NVFP4A16 has no input scale."""
    group = {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                                 "group_size": 16, "symmetric": True, "dynamic": False}}
    acts = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "dynamic": "local"}
    w4a4 = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": ["lm_head"],
            "config_groups": {"group_0": dict(group, input_activations=acts)}}
    got = weights.quantized_weight_bytes(w4a4, _inventory(TINY), 16)
    assert got.bytes == 2 * sum(o * i // 2 + o * i // 16 + 4 + 4 for o, i in LINEARS) + 2 * REST
    w4a16 = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": ["lm_head"],
             "config_groups": {"group_0": group}}
    assert weights.quantized_weight_bytes(w4a16, _inventory(TINY), 16).bytes == got.bytes - 2 * 4 * len(LINEARS)
    # about 4.5 bits a linear weight: a quarter of bf16's bytes and a little more
    linear = 2 * sum(o * i for o, i in LINEARS)
    assert 0.28 < (got.bytes - 2 * REST) / (2 * linear) < 0.29
    int_group = {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 16}}
    with pytest.raises(weights.NotModelled, match="nvfp4-pack-quantized"):
        weights.quantized_weight_bytes(dict(w4a16, config_groups={"group_0": int_group}), _inventory(TINY), 16)


def test_exclusions():
    q = {"quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": ["model.layers.*.self_attn"]}
    got = weights.quantized_weight_bytes(q, _inventory(TINY), 16)
    attention = sum(o * i for o, i in LINEARS[:4])
    mlp = LINEARS[4:]
    assert got.bytes == 2 * (2 * attention + sum(o * i + 4 * -(-o // 128) * -(-i // 128) for o, i in mlp)) + 2 * REST
    one_layer = {"quant_method": "fp8", "modules_to_not_convert": ["model.layers.0.mlp.down_proj"]}
    with pytest.raises(weights.NotModelled, match="single layers"):
        weights.quantized_weight_bytes(one_layer, _inventory(TINY), 16)


def test_unknown_method_is_a_note_not_a_guess(tmp_path):
    raw = dict(TINY, quantization_config={"quant_method": "bitsandbytes", "load_in_4bit": True})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    spec = resolve_model(str(path))
    assert spec.weights_bytes is None and "bitsandbytes" in spec.notes and "--dtype" in spec.notes


def test_kimi_k2_fp8_matches_its_checkpoint():
    """gogongxt/python scripts/models/kimi_k2_instruct.md lists Kimi-K2-Instruct's 139,644 tensors: their
    element count is 1,026,470,731,056 and their bytes 958.49 GiB. Besides kvplan's inventory the checkpoint
    stores 60 x 384 float32 e_score_correction_bias (a buffer in transformers) and 61 x 56 bf16 rotary inv_freq."""
    raw = json.loads((DATA / "extra_configs" / "kimi-k2-instruct.json").read_text())
    tensors = _inventory(raw)
    quantized, _ = weights._matrices(tensors, [])
    scales = sum(t.count * -(-t.shape[0] // 128) * -(-t.shape[1] // 128) for t in quantized)
    assert sum(t.numel for t in tensors) + scales + 60 * 384 + 61 * 56 == 1_026_470_731_056
    got = weights.quantized_weight_bytes(raw["quantization_config"], tensors, 16)
    assert round((got.bytes + 60 * 384 * 4 + 61 * 56 * 2) / GiB, 2) == 958.49
    spec = resolve_model(str(DATA / "extra_configs" / "kimi-k2-instruct.json"))
    assert spec.weights_bytes == got.bytes and spec.weight_dtype == "fp8_e4m3"


def test_gpt_oss_mxfp4_matches_its_checkpoint():
    """gogongxt/python scripts/models/gpt_oss_20b.md lists gpt-oss-20b's tensors: experts as uint8 *_blocks
    [32, out, in/32, 16] and *_scales [32, out, in/32], everything else bf16; 11,956,805,184 stored elements,
    12.82 GiB."""
    spec = resolve_model(str(DATA / "hf_configs" / "gpt-oss-20b.json"))
    tensors = _inventory(json.loads((DATA / "hf_configs" / "gpt-oss-20b.json").read_text()))
    expert_weights = sum(t.numel for t in tensors if t.kind == params.EXPERT)
    assert expert_weights == 24 * 32 * (5760 * 2880 + 2880 * 2880)
    stored = spec.params - expert_weights + 24 * 32 * (5760 + 2880) * 90 * (16 + 1)
    assert stored == 11_956_805_184
    bf16 = spec.params - expert_weights
    assert spec.weights_bytes == 2 * bf16 + 24 * 32 * (5760 + 2880) * 90 * 17 == 13_761_264_768
    assert round(spec.weights_bytes / GiB, 2) == 12.82


def test_deepseek_v3_weights_from_quantization_config(cli):
    code, out, err = cli("estimate", DATA / "hf_configs" / "deepseek-v3.json", "--seq", "8192", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["weights_bytes"] == resolve_model(str(DATA / "hf_configs" / "deepseek-v3.json")).weights_bytes
    assert got["weights_source"].startswith("quantization_config fp8")
    assert 626 * GiB < got["weights_bytes"] < 627 * GiB  # 671B fp8 + block scales + bf16 embeddings/head/norms


# ------------------------------------------------------------------ NVIDIA ModelOpt (hf_quant_config.json)

CORPUS_2026 = DATA / "hf_configs_2026"


def _checkpoint(tmp_path, name: str, with_quant: bool = True) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text((CORPUS_2026 / f"{name}.json").read_text())
    if with_quant:
        (folder / "hf_quant_config.json").write_text((CORPUS_2026 / f"{name}.hf_quant_config.json").read_text())
    return folder


def test_modelopt_fp8_checkpoint_is_sized_from_its_hf_quant_config(tmp_path):
    # nvidia/Llama-3.1-70B-Instruct-FP8: config.json has no quantization_config; hf_quant_config.json says FP8 with
    # lm_head excluded. By hand: the 80 layers' seven linears in fp8 plus a float32 weight and input scale each;
    # embeddings, output head (excluded) and norms in bf16
    h, inter, layers, vocab, kv = 8192, 28672, 80, 128256, 1024
    linear = layers * (2 * h * h + 2 * h * kv + 3 * h * inter)
    rest = 2 * vocab * h + (2 * layers + 1) * h
    spec = resolve_model(str(_checkpoint(tmp_path, "nvidia--Llama-3.1-70B-Instruct-FP8")))
    assert spec.params == linear + rest
    assert spec.weights_bytes == linear + 8 * 7 * layers + 2 * rest  # 72.66 GB, not 141 GB in bf16
    assert spec.quant_method == "modelopt" and spec.weight_dtype == "fp8_e4m3"
    plain = resolve_model(str(_checkpoint(tmp_path / "x", "nvidia--Llama-3.1-70B-Instruct-FP8", with_quant=False)
                              if (tmp_path / "x").mkdir() is None else None))
    assert plain.weights_bytes is None  # without the file: params x bf16, as before


def test_modelopt_nvfp4_keeps_the_modules_it_lists_layer_by_layer_in_bf16():
    # nvidia/MiniMax-M2.5-NVFP4: NVFP4 (two E2M1 values a byte, an fp8 scale per 16 inputs, two float32 scales per
    # matrix), its quantization_config ignoring model.layers.N.self_attn* one layer at a time for all 62 layers:
    # attention stays bf16. Against the same file ignoring lm_head only, the difference is the attention matrices
    # in bf16 less the same in NVFP4, by hand from the config's widths
    from kvplan.model.hf_config import spec_mapping_from_config

    raw = json.loads((CORPUS_2026 / "nvidia--MiniMax-M2.5-NVFP4.json").read_text())
    listed = spec_mapping_from_config(raw, name="m", where="m")
    ignore = raw["quantization_config"]["ignore"]
    assert sum(1 for e in ignore if e.endswith(".self_attn*")) == raw["num_hidden_layers"] == 62
    raw["quantization_config"]["ignore"] = ["lm_head"]
    plain = spec_mapping_from_config(raw, name="m", where="m")
    h, q, kv = 3072, 48 * 128, 8 * 128
    matrices = [(q, h), (kv, h), (kv, h), (h, q)]  # q, k, v, o of one layer
    bf16 = sum(2 * o * i for o, i in matrices)
    nvfp4 = sum(o * i // 2 + o * i // 16 + 8 for o, i in matrices)
    assert listed["weights_bytes"] - plain["weights_bytes"] == 62 * (bf16 - nvfp4)
    assert listed["quant_method"] == "modelopt"
