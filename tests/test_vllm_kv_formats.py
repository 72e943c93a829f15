"""vLLM's --kv-cache-dtype values beyond the plain dtypes (kvplan/engines/vllm/kv_formats.py).

The page sizes below are vLLM's own formulas, copied by hand from the wheels (`pip download --no-deps vllm==X`):
v1/kv_cache_interface.py AttentionSpec in 0.20.2 and 0.25.1 (real_page_size_bytes; page_size_bytes adds
"2 * block_size * num_kv_heads * get_dtype_size(torch.float32)" for per-token-head scales), and
utils/torch_utils.py nvfp4_kv_cache_full_dim (head_size // 2 + head_size // 16); the storage dtype of each is one
byte (utils/torch_utils.py STR_DTYPE_TO_TORCH_DTYPE: int8 / uint8).
"""

import json

import pytest

from kvplan.core.errors import UnsupportedError
from kvplan.engines import get
from kvplan.engines.vllm import kv_formats, serve_args
from kvplan.engines.vllm.engine import KV_DTYPES
from kvplan.requests.build import build_request

FP32 = 4


def page_per_token_head(block, heads, head_size, int4=False):
    head_dim = head_size // 2 if int4 else head_size  # 0.25.1 real_page_size_bytes: INT4_PER_TOKEN_HEAD halves it
    return 2 * block * heads * head_dim * 1 + 2 * block * heads * FP32


def page_nvfp4(block, heads, head_size):
    full = head_size // 2 + head_size // 16  # nvfp4_kv_cache_full_dim
    return block * heads * (full + full) * 1


def vllm(model, kv, *, gpu="h100", version=None, tp=None):
    req = build_request(model, seq="8K", batch=1, kv_dtype=kv, dtype=None, gpu=gpu, gpu_mem=None, gpus=None, tp=tp,
                        pp=1, engine_version=version)
    return get("vllm").estimate(req)


@pytest.mark.parametrize("model,layers,heads,head_size,tp", [("llama-3.1-8b", 32, 8, 128, 1),
                                                             ("llama-3.1-8b", 32, 8, 128, 2),
                                                             ("qwen2.5-7b", 28, 4, 128, 1),
                                                             ("llama-3.2-1b", 16, 8, 64, 1)])
def test_page_bytes_are_the_engines(model, layers, heads, head_size, tp):
    per_rank = heads // tp
    for kv, page in (("fp8_per_token_head", page_per_token_head(16, per_rank, head_size)),
                     ("int8_per_token_head", page_per_token_head(16, per_rank, head_size)),
                     ("int4_per_token_head", page_per_token_head(16, per_rank, head_size, int4=True))):
        r = vllm(model, kv, tp=tp)
        assert r.bytes_per_block == layers * page, kv
        assert r.kv_bytes_per_token == layers * page // 16 * tp  # whole model, every rank
    r = vllm(model, "nvfp4", gpu="b200", tp=tp)
    assert r.bytes_per_block == layers * page_nvfp4(16, per_rank, head_size)
    # the same on the releases that first modelled them
    assert vllm(model, "fp8_per_token_head", version="0.20.2", tp=tp).bytes_per_block == \
        layers * page_per_token_head(16, per_rank, head_size)
    assert vllm(model, "nvfp4_4over6", gpu="b200", version="0.28.0", tp=tp).bytes_per_block == \
        layers * page_nvfp4(16, per_rank, head_size)


def test_every_value_of_0_33_is_read_or_refused_by_name():
    choices = set(serve_args.options("0.33.0")["kv_cache_dtype"].choices)
    assert len(choices) == 22
    assert choices <= set(KV_DTYPES) | kv_formats.KNOWN


@pytest.mark.parametrize("kv,version,gpu,code,words", [
    ("fp8_per_token_head", "0.19.1", "h100", 2, "vLLM 0.19.1 has no --kv-cache-dtype fp8_per_token_head"),
    ("int4_per_token_head", "0.24.0", "h100", 2, "vLLM 0.24.0 has no --kv-cache-dtype int4_per_token_head"),
    ("nvfp4_4over6", "0.27.1", "b200", 2, "vLLM 0.27.1 has no --kv-cache-dtype nvfp4_4over6"),
    ("nvfp4", "0.21.0", "b200", 3, "no attention backend of 0.21.0 lists it"),
    ("nvfp4", "0.31.0", "h100", 2, "this GPU is SM 9.0"),
    ("nvfp4_4over6", "0.33.0", "h100", 2, "only on SM10x"),
    ("fp8_inc", "0.33.0", "h100", 2, "no NVIDIA GPU runs it"),
    ("octave_k3v4", "0.33.0", "h100", 2, "no NVIDIA GPU runs it"),
    ("turboquant_4bit_nc", "0.33.0", "h100", 3, "turboquant_4bit_nc's boundary layers (kept in bf16)"),
    ("turboquant_k8v4", "0.19.1", "h100", 2, "vLLM 0.19.1 has no --kv-cache-dtype turboquant_k8v4"),
    ("fp8_ds_mla", "0.33.0", "h100", 3, "sparse MLA is not modelled"),
])
def test_refused_where_the_release_or_gpu_does_not_take_it(cli, kv, version, gpu, code, words):
    got, out, err = cli("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", gpu, "--seq", "8K",
                        "--engine-version", version, "--kv-dtype", kv)
    assert got == code and words in err, err


# TurboQuant's slot (model_executor/layers/quantization/turboquant/config.py, the same 0.20-0.33), copied by hand:
# key = head_size bytes for fp8 keys, else ceil(head_size x bits / 8) + 2 (an fp16 norm); value = ceil(head_size x bits
# / 8) + 4 (fp16 scale and zero); the slot rounded up to even. The page is block x KV heads x slot (0.24
# TQFullAttentionSpec.real_page_size_bytes; 0.28+ the backend's get_kv_cache_shape)
TURBOQUANT = {"turboquant_k8v4": (8, 4), "turboquant_4bit_nc": (4, 4), "turboquant_k3v4_nc": (3, 4),
              "turboquant_3bit_nc": (3, 3)}


def slot_turboquant(head_size, key_bits, value_bits):
    key = head_size if key_bits == 8 else -(-head_size * key_bits // 8) + 2
    size = key + -(-head_size * value_bits // 8) + 4
    return size + size % 2


@pytest.mark.parametrize("kv", TURBOQUANT)
@pytest.mark.parametrize("head_size", [64, 128, 256])
def test_turboquant_row_is_the_slot(kv, head_size):
    from kvplan.core.dtypes import dtype

    heads = 4
    assert dtype(kv, what="KV dtype").row_bytes(heads * 2 * head_size, heads) == heads * slot_turboquant(head_size, *TURBOQUANT[kv])


@pytest.mark.parametrize("kv", TURBOQUANT)
def test_turboquant_dense_model_keeps_its_boundary_layers_in_bf16(kv):
    # Llama-3.1-8B on 0.24 (the heterogeneous pages share one block before 0.25 padded them): layers 0, 1, 30, 31 in
    # bf16 (2 x 16 x 8 x 128 x 2 bytes a page), the other 28 in TurboQuant slots
    r = vllm("llama-3.1-8b", kv, version="0.24.0")
    assert r.bytes_per_block == 28 * 16 * 8 * slot_turboquant(128, *TURBOQUANT[kv]) + 4 * 2 * 16 * 8 * 128 * 2
    assert any("layers 0, 1, 30, 31 in the model dtype" in n for n in r.notes)


def test_turboquant_boundary_layers_by_release():
    # engine/arg_utils.py: TurboQuantConfig.get_boundary_skip_layers, hybrid models exempt from 0.21 (config.py)
    skip = kv_formats.boundary_skip_layers
    assert skip("turboquant_4bit_nc", version="0.20.2", layers=64, hybrid=True) == ("0", "1", "62", "63")
    assert skip("turboquant_4bit_nc", version="0.21.0", layers=64, hybrid=True) == ()
    assert skip("turboquant_3bit_nc", version="0.33.0", layers=3, hybrid=False) == ("0", "2")  # n = layers // 2
    assert skip("fp8", version="0.33.0", layers=32, hybrid=False) == ()


def test_turboquant_refuses_what_was_not_read(cli):
    code, _, err = cli("estimate", "gemma-2-9b", "--engine", "vllm", "--gpu", "h100", "--seq", "8K",
                       "--engine-version", "0.24.0", "--kv-dtype", "turboquant_4bit_nc")
    assert code == 3 and "sliding-window" in err, err
    req = build_request("llama-3.1-8b", seq="8K", batch=1, kv_dtype="turboquant_k3v4_nc", dtype=None, gpu="h100",
                        gpu_mem=None, gpus=None, tp=None, pp=1, engine_version="0.24.0", head_dim=72)
    with pytest.raises(UnsupportedError, match="multiples of 16"):
        get("vllm").estimate(req)


def test_nvfp4_on_hopper_from_0_32_except_head_size_64(cli):
    assert vllm("llama-3.1-8b", "nvfp4", version="0.32.0").fits  # FA2's NVFP4 path on SM9x
    code, _, err = cli("estimate", "llama-3.2-1b", "--engine", "vllm", "--gpu", "h100", "--seq", "8K",
                       "--kv-dtype", "nvfp4")
    assert code == 2 and "head_size 64" in err
    assert vllm("llama-3.2-1b", "nvfp4", gpu="b200").fits  # TRT-LLM attention on SM10x takes it


def test_other_engines_and_mla_refuse_the_packed_formats(cli):
    code, _, err = cli("estimate", "llama-3.1-8b", "--engine", "static", "--gpu", "h100", "--seq", "8K", "--kv-dtype",
                       "fp8_per_token_head")
    assert code == 2 and "--engine vllm" in err
    code, _, err = cli("estimate", "deepseek-v3", "--engine", "vllm", "--gpu", "h200", "--tp", "8", "--seq", "8K",
                       "--kv-dtype", "fp8_per_token_head")
    assert code == 3 and "MLA" in err


def test_vllm_args_and_check_take_them_as_vllm_spells_them(cli, tmp_path):
    code, out, err = cli("estimate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "h100", "--seq", "8K", "--json",
                         "--vllm-args", "--kv-cache-dtype int8_per_token_head")
    assert code == 0, err
    assert json.loads(out)["kv_bytes_per_token"] == 32 * page_per_token_head(16, 8, 128) // 16
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\nvllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768 "
                      "--kv-cache-dtype fp8_per_token_head\n")
    code, out, err = cli("check", script, "--gpu", "h100", "--json")
    verdict = json.loads(out)["verdicts"][0]
    assert code == 0 and verdict["kv_cache_dtype"] == "fp8_per_token_head", out + err
    blocks = verdict["figures"]["num_gpu_blocks"]
    assert verdict["figures"]["available_kv_bytes"] // (32 * page_per_token_head(16, 8, 128)) == blocks
