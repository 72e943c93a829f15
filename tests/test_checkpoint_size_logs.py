"""NVFP4 checkpoints' weight bytes against the checkpoint sizes and loaded weights public vLLM logs print.

vLLM (0.20 on; read in 0.34 model_executor/model_loader/weight_utils.py safetensors_weights_iterator and
_get_checkpoints_size_bytes) prints `Filesystem type for checkpoints: EXT4. Checkpoint size: X GiB` before loading:
the sum of os.path.getsize over the checkpoint's *.safetensors files, to 0.01 GiB. A safetensors file is an 8-byte
header length, the header JSON (every tensor's name, dtype, shape and byte offsets) and the tensors' bytes, so the
figure is the tensors' bytes plus a header slack each test bounds from the tensors the checkpoint holds. The files
hold everything in the repository: the vision tower and the multi-token-prediction (MTP) layer too, which kvplan
keeps out of the weights it serves with (the MTP layer is loaded only for speculative decoding; kvplan sizes it as
spec.mtp, in the model dtype: the checkpoints' quantization lists `mtp*` under ignore).

`Model loading took X GiB memory` (v1/worker/gpu_model_runner.py load_model) is the memory one GPU gained while the
model loaded: the weights as the engine holds them, the MTP drafter's when speculative decoding is on (its embedding
and output head shared with the target: "Sharing target model embedding / lm_head weights with the draft model"),
and the buffers built with the modules (the rotary cos/sin cache, which kvplan counts in stage_weight_bytes).

Measured (kvplan / logged - 1), tests/data/checkpoint_size_logs/SOURCES.md: nvidia/Qwen3.6-27B-NVFP4 (ModelOpt
MIXED_PRECISION: FP8 attention, W4A16_NVFP4 MLP and head) checkpoint 20.416 GiB vs 20.42 (-0.02%), loaded 20.541 vs
20.57 GiB (-0.14%); nvidia/Qwen3.6-35B-A3B-NVFP4 (the same, NVFP4 routed experts) checkpoint 21.800 vs 21.82 GiB
(-0.09%: its ~123,000 tensors' header JSON), loaded 21.925 vs 21.93 GiB (-0.02%). The issue asks 2%; the tests
assert the header slack and 0.5% for the loaded figure, so that a lost term shows.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from kvplan.core.dtypes import dtype
from kvplan.engines.runtime.weights import stage_weight_bytes
from kvplan.model.catalog import resolve_model
from kvplan.model.params import EXPERT, LINEAR, LM_HEAD, Tensor
from kvplan.model.weights import NotModelled, quantized_weight_bytes

DATA = Path(__file__).parent / "data"
LOGS = DATA / "checkpoint_size_logs"
GIB = 2**30
# one tensor's entry in a safetensors header: "<name>":{"dtype":"F8_E4M3","shape":[17408,320],"data_offsets":[a,b]},
# about 60 characters besides the name with 11-digit offsets, names here under 80 characters: 256 bytes bounds it
HEADER_BYTES_PER_TENSOR = 256

# checkpoint -> (config.json, the log with its Checkpoint size and Model loading took lines, TP, an upper bound on
# the checkpoint's tensors written out from config.json)
CHECKPOINTS = {
    "nvidia/Qwen3.6-27B-NVFP4": (
        DATA / "public_models" / "nvidia--Qwen3.6-27B-NVFP4" / "config.json",
        DATA / "vllm_logs_features" / "raw" / "idx-arm64-v0231-qwen36-27b-nvfp4-mtp2.part3.log", 1,
        # 64 layers x (3 MLP matrices x 4 tensors + up to 6 attention matrices x 3 + 12 norms, convolutions and gates)
        # + the vision tower's 27 x 12 + 10 + the MTP layer's ~20 + embedding, head and norm
        64 * (3 * 4 + 6 * 3 + 12) + 27 * 12 + 10 + 20 + 3),
    "nvidia/Qwen3.6-35B-A3B-NVFP4": (
        DATA / "public_models" / "nvidia--Qwen3.6-35B-A3B-NVFP4" / "config.json",
        LOGS / "spark-v0221-nvidia-qwen36-35b-a3b-nvfp4-mtp2.log", 1,
        # 40 layers x (256 experts x 3 matrices x 4 tensors + 3 shared-expert matrices x 4 + up to 6 attention
        # matrices x 3 + 14 others) + the MTP layer's 256 x 3 experts and ~30 others + the vision tower and the rest
        40 * (256 * 3 * 4 + 3 * 4 + 6 * 3 + 14) + 256 * 3 + 30 + 27 * 12 + 10 + 3),
}


def _logged_gib(text: str, what: str) -> Fraction:
    (value,) = set(re.findall(rf"{what} ([0-9.]+) GiB", text))  # printed once per load, the same each time
    return Fraction(value)


@pytest.fixture(scope="module")
def checkpoints():
    return {name: (resolve_model(str(config)), json.loads(config.read_text()), log.read_text(encoding="utf-8"), tp,
                   tensors) for name, (config, log, tp, tensors) in CHECKPOINTS.items()}


def _mtp_bytes(spec, raw) -> int:
    """The MTP layer as the files store it: in bf16, the quantization ignoring `mtp*` (config.json)."""
    assert any(p.startswith("mtp") for p in raw["quantization_config"]["ignore"])
    return spec.mtp.params * 2


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_the_files_vllm_sums_hold_the_bytes_kvplan_counts(name, checkpoints):
    """Logged checkpoint size = kvplan's weights + the MTP layer + header JSON, to the log's 0.01 GiB rounding."""
    spec, raw, log, _, tensors = checkpoints[name]
    assert spec.weights_bytes is not None, spec.notes
    assert spec.vision_params  # the tower is in the figure: kvplan counts it now
    counted = spec.weights_bytes + _mtp_bytes(spec, raw)
    logged = _logged_gib(log, "Checkpoint size:") * GIB
    rounding = Fraction(5, 1000) * GIB
    header = tensors * HEADER_BYTES_PER_TENSOR + 8 * 50  # and 8 length bytes a file (a few files)
    assert counted - rounding <= logged <= counted + header + rounding, (counted / GIB, float(logged / GIB))
    assert abs(counted / logged - 1) <= 0.02


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_one_gpu_holds_what_vllm_logged_as_loaded(name, checkpoints):
    """Logged `Model loading took` = kvplan's weights on one GPU (stage_weight_bytes: the checkpoint's bytes split
    over the logged TP, the rotary cache) + the MTP drafter's layer (speculative decoding is on in both launches; the
    drafter shares the embedding and the output head). vLLM repacks the NVFP4 weights for its Marlin kernel on these
    GPUs ("Your GPU does not have native support for FP4 computation"): the same bytes in another order."""
    spec, raw, log, tp, _ = checkpoints[name]
    assert "Sharing target model lm_head weights with the draft model" in log
    (per_gpu,) = stage_weight_bytes(spec, None, dtype(spec.dtype), tp, 1)
    logged = _logged_gib(log, "Model loading took")
    assert abs((per_gpu + _mtp_bytes(spec, raw)) / (logged * GIB) - 1) <= 0.005, ((per_gpu + _mtp_bytes(spec, raw)) / GIB,
                                                                                   float(logged))


def test_the_vision_tower_is_the_one_transformers_builds():
    """Qwen3.5 / Qwen3.6's tower as kvplan counts it (params.py _qwen3_5_vision) against the parameters of
    transformers' Qwen3_5VisionModel for the same vision_config, written out from its modules (transformers 5.24
    models/qwen3_5/modeling_qwen3_5.py): Conv3d patch embedding with bias, the position table, per block two
    LayerNorms, qkv, proj, linear_fc1 and linear_fc2 with biases, and the merger's LayerNorm and two linears."""
    raw = json.loads(CHECKPOINTS["nvidia/Qwen3.6-27B-NVFP4"][0].read_text())
    v = raw["vision_config"]
    h, i, depth, merged = v["hidden_size"], v["intermediate_size"], v["depth"], v["hidden_size"] * 4
    by_hand = (h * 3 * 2 * 16 * 16 + h + v["num_position_embeddings"] * h
               + depth * (4 * h + 3 * h * h + 3 * h + h * h + h + i * h + i + h * i + h)
               + 2 * h + merged * merged + merged + v["out_hidden_size"] * merged + v["out_hidden_size"])
    assert by_hand == 460_730_096  # what transformers' model.visual.parameters() sums to on the meta device
    assert resolve_model(str(CHECKPOINTS["nvidia/Qwen3.6-27B-NVFP4"][0])).vision_params == by_hand


# ------------------------------------------------------------------ NVFP4 layout as vLLM declares it

def _vllm_nvfp4_tensors(n: int, k: int, group: int, *, act: bool) -> dict[str, tuple[tuple[int, ...], int]]:
    """The parameters vLLM 0.34 quantization/modelopt.py registers for one NVFP4 linear of output n and input k
    (KNvfp4Static.create_weights; KNvfp4Dynamic.create_weights for W4A4's activation scale), as (shape, bytes an
    element): written out from that code, not from kvplan's."""
    assert k % 16 == 0  # "Unsupported model when in features size is not multiple of 16"
    tensors = {"weight": ((n, k // 2), 1),  # torch.uint8, two fp4 values a byte along the input
               "weight_scale_2": ((1,), 4),  # float32, one a partition (an unfused matrix: one)
               "weight_scale": ((n, k // group), 1)}  # torch.float8_e4m3fn, one per group_size inputs
    if act:
        tensors["input_scale"] = ((1,), 4)  # float32
    return tensors


def _bytes(tensors) -> int:
    total = 0
    for shape, size in tensors.values():
        numel = 1
        for d in shape:
            numel *= d
        total += numel * size
    return total


@pytest.mark.parametrize("algo, act", [("NVFP4", True), ("W4A16_NVFP4", False)])
def test_kvplan_counts_each_nvfp4_matrix_as_vllm_registers_it(algo, act):
    """nvidia/Qwen3.6-35B-A3B-NVFP4's real matrices (an expert's gate_proj 512 x 2048, down_proj 2048 x 512, the
    output head 248320 x 2048, group_size 16 from its quantized_layers): kvplan's bytes per matrix, through the
    MIXED_PRECISION reader, equal the parameters vLLM registers for them."""
    raw = json.loads(CHECKPOINTS["nvidia/Qwen3.6-35B-A3B-NVFP4"][0].read_text())
    group = raw["quantization_config"]["quantized_layers"]["lm_head"]["group_size"]
    for name, (n, k), kind in (("mlp.experts.gate_proj", (512, 2048), EXPERT), ("mlp.down_proj.weight", (2048, 512), LINEAR),
                               ("lm_head.weight", (248320, 2048), LM_HEAD)):
        module = name.removesuffix(".weight")
        key = module if kind == LM_HEAD else f"model.language_model.layers.0.{module}"
        quant = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
                 "quantized_layers": {key: {"quant_algo": algo, "group_size": group}}}
        got = quantized_weight_bytes(quant, [Tensor(name, (n, k), 1, kind)], 16, 1, 1)
        assert got.bytes == _bytes(_vllm_nvfp4_tensors(n, k, group, act=act)), (name, algo)


def test_a_compressed_tensors_nvfp4_matrix_is_what_vllm_registers():
    """compressed-tensors NVFP4 (llm-compressor's NVFP4 scheme: weights and activations): vLLM 0.34
    compressed_tensors_w4a4_nvfp4.py create_weights registers weight_packed uint8 [n, k / 2], weight_scale fp8
    [n, k / group_size], weight_global_scale and input_global_scale float32 [1] a partition: the same bytes as the
    ModelOpt layout above, under other names."""
    quant = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
             "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": {"num_bits": 4, "type": "float"},
                                           "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                                       "group_size": 16, "symmetric": True}}}}
    got = quantized_weight_bytes(quant, [Tensor("mlp.gate_proj.weight", (17408, 5120), 1, LINEAR)], 16)
    assert got.bytes == _bytes(_vllm_nvfp4_tensors(17408, 5120, 16, act=True))


def test_a_mixed_table_that_splits_a_class_is_refused():
    """One class of tensor quantized in some layers only cannot be counted from one inventory entry: refused."""
    quant = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
             "quantized_layers": {"model.layers.0.mlp.down_proj": {"quant_algo": "FP8"}}}
    with pytest.raises(NotModelled, match="different formats"):
        quantized_weight_bytes(quant, [Tensor("mlp.down_proj.weight", (2048, 512), 2, LINEAR)], 16, 2)
    quant["quantized_layers"] = {"model.layers.0.vision.proj": {"quant_algo": "FP8"}}
    with pytest.raises(NotModelled, match="does not count"):
        quantized_weight_bytes(quant, [Tensor("mlp.down_proj.weight", (2048, 512), 1, LINEAR)], 16, 1)


# ------------------------------------------------------------------ DeepSeek-V4: the routed experts' own format

V4_FLASH = DATA / "public_models" / "deepseek-ai--DeepSeek-V4-Flash" / "config.json"
V4_FLASH_NVFP4 = DATA / "hf_configs_2026" / "nvidia--DeepSeek-V4-Flash-NVFP4.json"


def test_deepseek_v4_flash_on_two_gpus_holds_what_vllm_logged():
    """deepseek-ai/DeepSeek-V4-Flash on two DGX Spark nodes, TP 2 with its MTP layer drafting (tests/data/
    vllm_logs_features, idx-2xdgxspark-v0211-dsv4-flash-mtp2-tp2; vLLM 0.21.1): `Model loading took 75.86 GiB` a GPU.
    config.json's fp8 block says nothing of the experts; `expert_dtype: fp4` does: MXFP4 routed experts (vLLM 0.34
    models/deepseek_v4/quant_config.py). Counted as FP8 they made 133 GiB a GPU, more than a GB10 has. The MTP layer,
    which kvplan does not size for V4, is bounded here by hand: one decoder layer at the average layer's bytes plus its
    e_proj and h_proj (hidden x hidden fp8 each), split over the two ranks."""
    spec = resolve_model(str(V4_FLASH))
    raw = json.loads(V4_FLASH.read_text())
    log = (DATA / "vllm_logs_features" / "raw" / "idx-2xdgxspark-v0211-dsv4-flash-mtp2-tp2.part2.log").read_text(
        encoding="utf-8")
    logged = _logged_gib(log, "Model loading took") * GIB
    (per_gpu,) = stage_weight_bytes(spec, None, dtype(spec.dtype), 2, 1)
    edges = 2 * raw["vocab_size"] * raw["hidden_size"] * 2  # the bf16 embedding and output head
    mtp = (spec.weights_bytes - edges) // raw["num_hidden_layers"] + 2 * raw["hidden_size"] ** 2
    assert abs((per_gpu + mtp / 2) / logged - 1) <= 0.02, ((per_gpu + mtp / 2) / GIB, float(logged / GIB))


def test_deepseek_v4_nvfp4_experts_are_nvfp4_not_fp8():
    """nvidia/DeepSeek-V4-Flash-NVFP4 keeps the base fp8 block and adds moe_quant_algo NVFP4 (ModelOpt's routed experts;
    vLLM 0.34 DeepseekV4FP8Config.get_quant_method -> ModelOptNvFp4FusedMoE). Same architecture as the base file, so
    the two differ by the experts alone: per expert matrix NVFP4 (n x k / 2 + n x k / 16 + two float32 scales, as
    ModelOptNvFp4FusedMoE.create_weights registers it) less MXFP4 (n x k x 17 / 32), over 43 layers x 256 experts x
    w1, w3 (2048 x 4096) and w2 (4096 x 2048)."""
    base, nvfp4 = resolve_model(str(V4_FLASH)), resolve_model(str(V4_FLASH_NVFP4))
    n, k = 2048, 4096
    per_matrix = (n * k // 2 + n * k // 16 + 4 + 4) - n * k * 17 // 32
    assert nvfp4.weights_bytes - base.weights_bytes == 43 * 256 * 3 * per_matrix
    assert "NVFP4" in nvfp4.weights_source and "MXFP4" in base.weights_source
