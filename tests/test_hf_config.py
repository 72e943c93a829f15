"""config.json -> spec (kvplan/model/hf_config.py): every config.json convention (docs/configs.md) on the real files, and
the refusals: what kvplan does not model exits 3 naming the field, contradictory files exit 2 naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.core.cache import CacheModel
from kvplan.model.catalog import resolve_model
from kvplan.core.dtypes import dtype
from kvplan.core.spec import CHUNKED, FULL, MLA, NONE, SLIDING, STATE
from kvplan.core.errors import InputError
from kvplan.model.hf_config import spec_mapping_from_config

DATA = Path(__file__).parent / "data"
CONFIGS = DATA / "hf_configs"
EXTRA = DATA / "extra_configs"
SHARED = sorted(CONFIGS.glob("*.json"))
TRUTH = json.loads((DATA / "transformers_truth.json").read_text())["configs"]


def spec_of(name: str, folder: Path = CONFIGS):
    return resolve_model(str(folder / name))


def kv_at_8k(spec, kv: str = "bf16") -> int:
    return CacheModel(spec, dtype(kv)).footprint(8192, 1).kv_bytes


@pytest.mark.parametrize("path", SHARED, ids=[p.name for p in SHARED])
def test_every_shared_config_loads_with_the_right_kv_cache(path):
    spec = resolve_model(str(path))
    entry = TRUTH[path.name]
    if entry["built"]:  # transformers' StaticCache at 8192 tokens in bf16, to the byte
        assert kv_at_8k(spec) == entry["kv_bytes"]


@pytest.mark.parametrize("name,kinds", [
    ("llama-3.1-8b.json", {FULL: 32}),
    ("mistral-7b-v0.1.json", {SLIDING: 32}),  # no layer_types: Mistral v0.1 slides on every layer
    ("phi-3-mini-4k-instruct.json", {SLIDING: 32}),  # sliding_window 2047 on every layer
    ("phi-3.5-mini-instruct.json", {FULL: 32}),  # a 262144 window over a 131072 context never slides
    ("gemma-2-9b.json", {SLIDING: 21, FULL: 21}),  # implicit alternation, even layers slide
    ("gemma-3-27b.json", {SLIDING: 52, FULL: 10}),  # nested text_config, layer_types
    ("gpt-oss-20b.json", {SLIDING: 12, FULL: 12}),
    ("qwen2.5-7b.json", {FULL: 28}),  # sliding_window set but use_sliding_window false
    ("deepseek-v3.json", {MLA: 61}),
    ("jamba-1.5-mini.json", {STATE: 28, FULL: 4}),  # attn_layer_period 8, offset 4
    ("nemotron-h-56b-base-8k.json", {STATE: 54, FULL: 10, NONE: 54}),  # hybrid_override_pattern
    ("qwen3-next-80b-a3b-thinking.json", {STATE: 36, FULL: 12}),  # full_attention_interval 4
    ("falcon-mamba-7b.json", {STATE: 64}),
    ("llama-3.3-nemotron-super-49b-v1.json", {FULL: 49, NONE: 31}),  # block_configs no_op attention
])
def test_layouts(name, kinds):
    spec = spec_of(name)
    assert {k: spec.count(k) for k in kinds} == kinds and sum(kinds.values()) == spec.layers


def test_head_dim_and_kv_heads_conventions():
    assert spec_of("gemma-2-9b.json").head_dim == 256  # explicit head_dim, not 3584 / 16
    assert spec_of("qwen3-235b-a22b.json").head_dim == 128  # not 4096 / 64
    assert spec_of("nemotron-h-56b-base-8k.json").head_dim == 128  # attention_head_dim
    gpt2 = spec_of("gpt2.json")  # n_layer / n_head / n_embd
    assert (gpt2.layers, gpt2.attention_heads, gpt2.kv_heads, gpt2.head_dim) == (12, 12, 12, 64)
    super49 = spec_of("llama-3.3-nemotron-super-49b-v1.json")  # num_key_value_heads null, per block 64 / 8
    assert {layer.kv_heads for layer in super49.layer_specs if layer.kind == FULL} == {8}
    # Falcon-7B: multi_query true (old decoder architecture) is one KV head although the file says 71
    falcon = spec_of("falcon-7b-instruct.json", EXTRA)
    assert json.loads((EXTRA / "falcon-7b-instruct.json").read_text())["num_kv_heads"] == 71
    assert falcon.kv_heads == 1 and kv_at_8k(falcon) == 32 * 1 * 64 * 2 * 2 * 8192


def test_dtype_conventions():
    gemma2 = spec_of("gemma-2-9b.json")  # float32 in the file, served in bf16
    assert gemma2.dtype == "bf16" and "float32" in gemma2.notes
    assert kv_at_8k(gemma2, "fp32") == TRUTH["gemma-2-9b.json"]["at_transformers_default_dtype"]["kv_bytes"]
    for name in ("gpt2.json", "gpt-oss-20b.json"):  # no dtype at all
        spec = spec_of(name)
        assert spec.dtype == "bf16" and "no dtype" in spec.notes
    assert spec_of("gemma-3-27b.json").dtype == "bf16"  # top-level `dtype` (newer files)


def test_state_shapes_follow_vllm():
    # Falcon-Mamba: intermediate_size 8192 channels, conv_kernel 4 -> 3 kept columns, state_size 16
    fm = spec_of("falcon-mamba-7b.json")
    assert (fm.state.conv_shape, fm.state.recurrent_shape) == ((8192, 3), (8192, 16))
    assert CacheModel(fm, dtype("bf16")).footprint(8192, 1).state_bytes == 64 * (8192 * 3 + 8192 * 16) * 2
    # Qwen3-Next gated delta net: conv over q, k (16 x 128 each) and v (32 x 128); a 128 x 128 state per value head
    qn = spec_of("qwen3-next-80b-a3b-thinking.json")
    assert (qn.state.conv_shape, qn.state.recurrent_shape) == ((2 * 16 * 128 + 32 * 128, 3), (32, 128, 128))
    # Nemotron-H Mamba2: 256 heads x 64 + 2 x 8 groups x 256 state = 20480 conv channels; float32 recurrent state
    nh = spec_of("nemotron-h-56b-base-8k.json")
    assert (nh.state.conv_shape, nh.state.recurrent_shape) == ((20480, 3), (256, 64, 256))
    assert (nh.state.conv_dtype, nh.state.recurrent_dtype) == ("bf16", "fp32")
    assert spec_of("nemotron-3-nano-30b-a3b.json").state.recurrent_dtype == "fp32"  # mamba_ssm_cache_dtype
    assert spec_of("jamba-1.5-mini.json").state.recurrent_dtype == "bf16"  # vLLM's `auto`: the model dtype


def test_qwen2_use_sliding_window_true():
    spec = spec_of("qwen2.5-7b-sliding.json", EXTRA)  # max_window_layers 21: layers 21..27 slide over 4096
    assert [layer.kind for layer in spec.layer_specs] == [FULL] * 21 + [SLIDING] * 7
    assert kv_at_8k(spec) == (21 * 8192 + 7 * 4096) * 4 * 128 * 2 * 2


def test_extra_families():
    kimi = spec_of("kimi-k2-instruct.json", EXTRA)
    assert kimi.count(MLA) == 61 and kv_at_8k(kimi) == 61 * (512 + 64) * 2 * 8192
    assert kimi.weight_dtype == "fp8_e4m3" and kimi.weights_source.startswith("quantization_config fp8")
    qwen = spec_of("qwen3-30b-a3b-instruct-2507.json", EXTRA)
    assert qwen.params == 30_532_122_624  # the checkpoint's own tensor count (SOURCES.md)
    mistral = spec_of("mistral-small-3.1-24b-instruct-2503.json", EXTRA)
    assert mistral.vision_params and kv_at_8k(mistral) == 40 * 8 * 128 * 2 * 2 * 8192


# ------------------------------------------------------------------ refusals and contradictions, through the CLI

def _write(tmp_path: Path, raw: dict, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(raw))
    return path


def _base(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text())


def _mutations():
    gemma3 = _base("gemma-3-27b.json")
    gemma3["text_config"]["layer_types"] = gemma3["text_config"]["layer_types"][:-1]
    heads = _base("llama-3.1-8b.json") | {"num_key_value_heads": 7}
    pattern = _base("nemotron-h-56b-base-8k.json")
    pattern["hybrid_override_pattern"] = pattern["hybrid_override_pattern"][:-1]
    unknown_char = _base("nemotron-h-56b-base-8k.json")
    unknown_char["hybrid_override_pattern"] = "X" + unknown_char["hybrid_override_pattern"][1:]
    blocks = _base("llama-3.3-nemotron-super-49b-v1.json")
    blocks["block_configs"] = blocks["block_configs"][:-1]
    group = _base("llama-3.3-nemotron-super-49b-v1.json")
    group["block_configs"][0]["attention"]["n_heads_in_group"] = 7
    jamba = _base("jamba-1.5-mini.json") | {"attn_layer_offset": 9}
    sliding = _base("gpt-oss-20b.json") | {"sliding_window": None}
    bad_dtype = _base("llama-3.1-8b.json") | {"torch_dtype": "float12"}
    rwkv = {"model_type": "rwkv", "num_hidden_layers": 24, "hidden_size": 2048}
    layer_type = _base("gpt-oss-20b.json")
    layer_type["layer_types"] = ["chunked_attention"] * 24
    unknown_type = _base("gpt-oss-20b.json")
    unknown_type["layer_types"] = ["compressed_sparse_attention"] * 24
    chunk_elsewhere = _base("llama-3.1-8b.json") | {"attention_chunk_size": 4096}
    no_rope = json.loads((EXTRA / "llama-4-scout-17b-16e-instruct.json").read_text())
    no_rope["text_config"]["no_rope_layers"] = [1, 0, 1]
    vision = _base("gemma-3-27b.json")
    vision["vision_config"]["model_type"] = "clip_vision_model"
    no_layers = {"model_type": "llama", "hidden_size": 64}
    return [
        ("layer_types length", gemma3, 2, "layer_types"),
        ("heads not divisible", heads, 2, "num_key_value_heads"),
        ("hybrid pattern length", pattern, 2, "hybrid_override_pattern"),
        ("block_configs count", blocks, 2, "block_configs"),
        ("n_heads_in_group", group, 2, "block_configs[0].attention.n_heads_in_group"),
        ("jamba offset", jamba, 2, "attn_layer_offset"),
        ("sliding without window", sliding, 2, "sliding_window"),
        ("unknown dtype", bad_dtype, 2, "torch_dtype"),
        ("unknown hybrid char", unknown_char, 3, "hybrid_override_pattern"),
        ("rwkv", rwkv, 3, "model_type"),
        ("chunked layers without a chunk size", layer_type, 2, "attention_chunk_size"),
        ("unknown layer type", unknown_type, 3, "layer_types"),
        ("attention_chunk_size outside Llama 4", chunk_elsewhere, 3, "attention_chunk_size"),
        ("no_rope_layers too short", no_rope, 2, "no_rope_layers"),
        ("no layer count", no_layers, 3, "num_hidden_layers"),
    ]


@pytest.mark.parametrize("what,raw,code,field", _mutations(), ids=[m[0] for m in _mutations()])
def test_bad_configs_exit_with_a_message_naming_the_field(cli, tmp_path, what, raw, code, field):
    path = _write(tmp_path, raw)
    exit_code, out, err = cli("estimate", path, "--seq", "8192", "--json")
    assert exit_code == code, err
    assert json.loads(out)["exit_code"] == code  # --json: the error as one JSON object (docs/json.md)
    line = err.strip()
    assert line.startswith("error: ") and "\n" not in line
    assert f"{path}: {field}" in line


# issue 15: values of the wrong type or out of range were passed as good (intermediate_size -1: exit 0 and 2.4 bn
# parameters for an 8B), mislabelled ("cannot find the number of layers", exit 3, for a layer count that is there)
# or a traceback (weight_block_size [0, 0]: ZeroDivisionError; 10**30 layers: OverflowError)
_BAD_VALUES = [
    ("intermediate_size", -1), ("head_dim", 0), ("num_hidden_layers", 0), ("num_hidden_layers", -3),
    ("num_hidden_layers", "32"), ("num_hidden_layers", 10**30), ("max_position_embeddings", -5),
    ("max_position_embeddings", 0), ("max_position_embeddings", float("inf")), ("max_position_embeddings", 1e30),
    ("num_attention_heads", "x"), ("num_key_value_heads", 0), ("vocab_size", True), ("hidden_size", 2.5),
    ("rope_scaling", {"rope_type": "llama3", "factor": float("nan")}),
]


@pytest.mark.parametrize("key, value", _BAD_VALUES, ids=[f"{k}={v!r}"[:40] for k, v in _BAD_VALUES])
def test_every_config_value_is_validated_naming_key_and_value(cli, tmp_path, key, value):
    raw = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    raw[key] = value
    path = _write(tmp_path, raw)
    exit_code, out, err = cli("estimate", path)
    line = err.strip()
    assert exit_code == 2 and out == "" and "\n" not in line and "Traceback" not in err, err
    assert line.startswith(f"error: {path}: {key}") and " — " in line


def test_an_fp8_block_size_of_zero_is_named():
    raw = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    raw["quantization_config"]["weight_block_size"] = [0, 0]
    with pytest.raises(InputError) as err:
        spec_mapping_from_config(raw, name="x", where="config.json")
    assert err.value.one_line() == ("config.json: quantization_config.weight_block_size — must be two positive whole "
                                    "numbers, got [0, 0] (e.g. [128, 128])")


@pytest.mark.parametrize("name", ["llama-4-scout-17b-16e-instruct.json", "llama-4-maverick-17b-128e-instruct.json"])
def test_llama4_chunked_layers_follow_transformers(name):
    """Llama4TextConfig.__post_init__: without no_rope_layers every 4th layer (3, 7, ..., 47) is a NoPE layer with
    full attention and the other 36 attend within chunks of attention_chunk_size (8192)."""
    spec = spec_of(name, EXTRA)
    kinds = [layer.kind for layer in spec.layer_specs]
    assert [i for i, k in enumerate(kinds) if k == FULL] == list(range(3, 48, 4))
    assert kinds.count(CHUNKED) == 36 and spec.attention_chunk_size == 8192
    assert {layer.window for layer in spec.layer_specs if layer.kind == CHUNKED} == {8192}
    assert spec.layout.pattern == (CHUNKED, CHUNKED, CHUNKED, FULL)
    per_layer_token = 8 * 128 * 2 * 2  # 8 KV heads x 128 x (K, V) x bf16
    cache = CacheModel(spec, dtype("bf16"))
    assert cache.footprint(8192).kv_bytes == 48 * per_layer_token * 8192
    assert cache.footprint(131072).kv_bytes == (36 * 8192 + 12 * 131072) * per_layer_token
    assert spec.tie_word_embeddings is False


def test_llama4_explicit_no_rope_layers_and_interval(tmp_path):
    raw = json.loads((EXTRA / "llama-4-scout-17b-16e-instruct.json").read_text())
    raw["text_config"]["no_rope_layers"] = [1] * 40 + [0] * 8  # 1 = uses RoPE = chunked
    spec = resolve_model(str(_write(tmp_path, raw)))
    assert [layer.kind for layer in spec.layer_specs] == [CHUNKED] * 40 + [FULL] * 8
    raw["text_config"]["no_rope_layers"] = []  # empty counts as absent (transformers: `if self.no_rope_layers`)
    raw["text_config"]["no_rope_layer_interval"] = 2
    spec = resolve_model(str(_write(tmp_path, raw)))
    assert [layer.kind for layer in spec.layer_specs] == [CHUNKED, FULL] * 24
    raw["text_config"]["layer_types"] = ["full_attention"] * 47 + ["chunked_attention"]  # explicit types win
    spec = resolve_model(str(_write(tmp_path, raw)))
    assert spec.count(CHUNKED) == 1 and spec.layer_specs[-1].window == 8192


def test_tie_word_embeddings_is_carried_into_the_spec():
    assert spec_of("gemma-2-9b.json").tie_word_embeddings is True  # Gemma2Config's default: the file leaves it out
    assert spec_of("llama-3.1-8b.json").tie_word_embeddings is False
    granite = resolve_model(str(DATA / "vllm_models" / "ibm-granite--granite-3.1-2b-instruct"))
    assert granite.tie_word_embeddings is True
    unknown = {"model_type": "somenewlm", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
               "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 128}
    from kvplan.model.hf_config import spec_mapping_from_config

    assert "tie_word_embeddings" not in spec_mapping_from_config(unknown, name="x", where="x")


def test_folder_with_config_json(cli, tmp_path):
    (tmp_path / "config.json").write_text((CONFIGS / "qwen3-8b.json").read_text())
    code, out, err = cli("estimate", tmp_path, "--seq", "8192", "--kv-dtype", "bf16", "--json")
    assert code == 0, err
    assert json.loads(out)["kv_bytes"] == TRUTH["qwen3-8b.json"]["kv_bytes"]


def test_an_untested_model_type_is_read_with_a_note_and_a_missing_mlp_width_is_refused(tmp_path):
    import subprocess
    import sys

    cfg = {"model_type": "foo_bar", "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512,
           "vocab_size": 1000, "torch_dtype": "bfloat16"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    out = subprocess.run([sys.executable, "-m", "kvplan", "estimate", str(path), "--seq", "1K", "--json"],
                         capture_output=True, text=True)
    assert out.returncode == 3 and "intermediate_size" in out.stderr  # no 4 x hidden guess for an unknown family
    path.write_text(json.dumps(dict(cfg, intermediate_size=2048)))
    out = subprocess.run([sys.executable, "-m", "kvplan", "estimate", str(path), "--seq", "1K", "--json"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and json.loads(out.stdout)["kv_bytes_per_token"] == 4 * 8 * 128 * 2
    assert "model_type 'foo_bar' is not one kvplan is tested on" in out.stderr
