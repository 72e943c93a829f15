"""The TensorRT-engine backend's band over the trtllm-build settings a launch leaves open (issue 28), against hand
arithmetic from TensorRT-LLM's sources and the two public engine-backend logs.

kvplan/engines/trtllm/build_settings.py: max_num_tokens (default 8192, covered 32/64 ... 16384) sizes the execution
context, max_batch_size (default 2048, covered 1 ... 2048) the runtime and decoder buffers; the pool is judged at the
release's defaults, the band spans the corners, and the verdict stays at the band's low edge.
"""

from __future__ import annotations

import importlib
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.engines import trtllm
from kvplan.engines.trtllm import budget as tb
from kvplan.engines.trtllm.build_settings import build_range
from kvplan.requests.build import build_request

ROOT = Path(__file__).resolve().parent.parent
GIB = 2**30
F32_09 = 0.8999999761581421  # 0.9 as the C++ float TensorRT-LLM multiplies by


def _req(*options, seq="8K", batch=1, gpu="h100", version="0.19"):
    return build_request("llama-3.1-8b", seq=seq, batch=batch, kv_dtype="auto", dtype=None, gpu=gpu, gpu_mem=None,
                         gpus=None, tp=1, pp=1, engine_version=version,
                         engine_options=["backend=tensorrt", *options])


def _est(*options, **kw):
    return trtllm.estimate(_req(*options, **kw), search_max_seq=False)


def test_execution_context_by_hand_at_two_build_settings():
    """memory.md: with packed inputs the activations are "max number of input tokens * some constant factor".
    kvplan's factor for Llama-3.1-8B (bf16, TP 1): 2 x hidden + the widest MLP row, ceil(MLP parameters per layer /
    hidden), 2 bytes each. MLP parameters per layer from the config: 3 x 4096 x 14336 = 176,160,768, plus the layer's
    two norms (8,192) and its share of the final norm (4,096 / 32 = 128): 176,169,088; / 4096 -> 43,011 (rounded up).
    Factor: (8,192 + 43,011) x 2 = 102,406 B a token."""
    per_token = (2 * 4096 + -(-176_169_088 // 4096)) * 2
    assert per_token == 102_406
    for tokens in (8192, 1024):
        est = _est(f"max_num_tokens={tokens}", "max_batch_size=2048")
        assert est.activation_peak_bytes == tokens * per_token  # 838,909,952 B and 104,863,744 B
    # the same difference moves the pool by the fraction of it (calculateFreeMemBytes: uint64(free x 0.9f))
    a, b = _est("max_num_tokens=8192", "max_batch_size=2048"), _est("max_num_tokens=1024", "max_batch_size=2048")
    assert abs((b.available_kv_bytes - a.available_kv_bytes) - (8192 - 1024) * per_token * F32_09) <= 1


def test_runtime_buffers_by_hand_at_two_batch_sizes():
    """The runtime's logits and the decoder, [max_batch_size, vocabulary] each: bytes per element the mean of the two
    engine logs (0.16.0: 1.63 + 3.30 GiB printed; 0.19.0: 4.963 GiB implied), each at 2048 x 128,256."""
    per_log = [Fraction(int(Fraction(g) * GIB), 2048 * 128_256) for g in ("4.93", "4.963")]
    coef = Fraction(sum(per_log) / 2).limit_denominator(1000)
    for batch in (2048, 8):
        est = _est(f"max_batch_size={batch}", "max_num_tokens=8192")
        assert est.engine_buffers_bytes == int(coef * batch * 128_256)
    assert 20.1 < float(coef) < 20.3  # ~4.95 GiB at the default 2048, 19.8 MiB at 8


def test_the_range_each_setting_covers():
    """check_max_num_tokens (tensorrt_llm/_common.py): raised to tokens_per_block with context FMHA, a warning past
    16384, capped at max_batch_size x max_seq_len; BuildConfig: max_batch_size 2048, max_num_tokens 8192."""
    r = build_range(max_batch_size=None, max_num_tokens=None, max_seq_len=8192, tokens_per_block=32)
    assert (r.max_batch_size, r.max_num_tokens, r.most, r.least) == (2048, 8192, (2048, 16384), (1, 32))
    assert r.open == ("max_batch_size", "max_num_tokens")
    # a short engine: max_num_tokens never passes max_batch_size x max_seq_len
    short = build_range(max_batch_size=4, max_num_tokens=None, max_seq_len=1024, tokens_per_block=64)
    assert (short.max_num_tokens, short.most, short.least, short.open) == (4096, (4, 4096), (4, 64), ("max_num_tokens",))
    given = build_range(max_batch_size=256, max_num_tokens=4096, max_seq_len=8192, tokens_per_block=64)
    assert given.most == given.least == (256, 4096) and not given.is_open


def test_open_settings_widen_the_band_to_both_corners():
    """Not given: the low edge is the engine built with max_batch_size 2048 and max_num_tokens 16384 less its measured
    error, the high edge the engine built with 1 and 32 plus its own; the pool stays the defaults' (2048, 8192)."""
    with tb.leaving_out(()):
        open_ = _est()
        nominal = _est("max_batch_size=2048", "max_num_tokens=8192")
        most = _est("max_batch_size=2048", "max_num_tokens=16384")
        least = _est("max_batch_size=1", "max_num_tokens=32")
    assert open_.available_kv_bytes == nominal.available_kv_bytes
    assert open_.band_open == ("max_batch_size", "max_num_tokens") and nominal.band_open == ()
    assert open_.available_kv_bytes_low == most.available_kv_bytes_low < nominal.available_kv_bytes_low
    assert open_.available_kv_bytes_high == least.available_kv_bytes_high > nominal.available_kv_bytes_high
    # 16384 - 8192 more tokens of execution context at 102,406 B each, times 0.9f: 0.72 GiB lower before the error
    assert abs((nominal.available_kv_bytes - most.available_kv_bytes) - 8192 * 102_406 * F32_09) <= 1
    # the high corner frees 2047 x 128,256 buffer elements and 8160 tokens of activations
    assert least.available_kv_bytes - nominal.available_kv_bytes > 4 * GIB
    # a given execution context settles max_num_tokens: only max_batch_size is left open
    ctx = _est("activation_bytes=1GiB")
    assert ctx.band_open == ("max_batch_size",)


def test_a_launch_that_fits_only_with_smaller_builds_is_not_a_yes(cli):
    """Llama-3.1-8B on an H100, 0.19 engine, 8K requests: the default engine's pool holds 52 of them at once
    (13,347 blocks of 32 // 256 blocks each), the low edge 49 (12,610 blocks). Asking for 52 is a "yes" only with
    the modelled pool: estimate and check judge at the low edge (marginal, exit 1); --optimistic by the modelled
    value."""
    with tb.leaving_out(()):
        nominal = _est(batch=52)
    assert nominal.max_concurrency == 52 and nominal.serves_batch
    code, out, _ = cli("estimate", "llama-3.1-8b", "--seq", "8K", "--batch", "52", "--gpu", "h100", "--engine", "trtllm",
                       "--engine-version", "0.19", "--engine-option", "backend=tensorrt", "--json")
    import json

    d = json.loads(out)
    assert code == 1 and d["marginal"] is True and d["max_batch"] < 52
    assert d["available_kv_bytes"] == d["available_kv_bytes_low"]
    code, _, _ = cli("estimate", "llama-3.1-8b", "--seq", "8K", "--batch", "52", "--gpu", "h100", "--engine", "trtllm",
                     "--engine-version", "0.19", "--engine-option", "backend=tensorrt", "--optimistic", "--json")
    assert code == 0


def test_the_0_13_case_the_band_now_covers():
    """A 2048 -> 8 max_batch_size difference moved a 0.13 pool by about 27% (the brief): an engine built with 8 is
    inside the band of a launch that does not say, and a launch that says 8 is judged with 8."""
    with tb.leaving_out(()):
        open_ = _est(gpu="a100-40gb", version="0.13.0")
        eight = _est("max_batch_size=8", gpu="a100-40gb", version="0.13.0")
    assert open_.available_kv_bytes_low <= eight.available_kv_bytes <= open_.available_kv_bytes_high
    assert eight.available_kv_bytes > 1.2 * open_.available_kv_bytes


def test_build_settings_read_only_at_their_defaults():
    assert _est("max_beam_width=1", "gather_context_logits=false", "paged_kv_cache=true").available_kv_bytes == \
        _est().available_kv_bytes
    for option in ("max_beam_width=4", "gather_context_logits=true", "gather_generation_logits=1", "max_draft_len=3",
                   "max_prompt_embedding_table_size=100", "weight_streaming=true", "paged_kv_cache=false",
                   "context_fmha=false", "remove_input_padding=0"):
        with pytest.raises(UnsupportedError, match="does not model") as info:
            _est(option)
        assert info.value.exit_code == 3 and option.split("=")[0] in info.value.where
    with pytest.raises(InputError, match="not true or false"):
        _est("gather_context_logits=maybe")


def test_the_public_engine_logs_stay_inside_the_band_with_their_build_left_open():
    """0.16.0 (H100 x8) and 0.19.0 (RTX 5090) engines, scored leave-one-source-out with max_batch_size,
    max_num_tokens and max_input_len dropped from their runs (benchmarks/sglang_trtllm_error.py score_build_open)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    bench = importlib.import_module("sglang_trtllm_error")
    rows = bench.score_build_open()
    assert {r.log for r in rows} == {"shaamil101-llama31-70b-fp8-8xh100-tp8-engine-v0.16",
                                     "trtllm-4275-llama31-8b-fp8-rtx5090-engine-v0.19"}
    for r in rows:
        assert r.covered, (r.log, r.band)
    unset = {s.log: s for s in bench.score_e2e(options_unset=True)[0] if s.backend == "tensorrt"}
    for r in rows:  # the open band holds the one with the build settings given
        assert r.band[0] <= unset[r.log].band[0] and r.band[1] >= unset[r.log].band[1]


def test_check_judges_an_engine_deployment_at_the_low_edge(cli, tmp_path):
    """A kvplan deployment file of the engine backend (1.x rules) needing 52 requests of 8K on an H100: the default
    engine's pool holds 52, the band's low edge 49, so check fails it as marginal; --optimistic passes it."""
    import json

    (tmp_path / "a.yaml").write_text("name: trt\nengine: trtllm\nmodel: llama-3.1-8b\ngpu: h100\nmax_model_len: 8K\n"
                                     "require:\n  concurrency: 52\nengine_options:\n  backend: tensorrt\n")
    code, out, _ = cli("check", tmp_path / "a.yaml", "--json")
    verdict = json.loads(out)["verdicts"][0]
    assert code == 1 and verdict["status"] == "fail" and verdict["reason"].startswith("marginal")
    code, _, _ = cli("check", tmp_path / "a.yaml", "--optimistic")
    assert code == 0


def test_the_execution_context_ratio_recomputed():
    """budget.ENGINE_CONTEXTS: the 0.16.0 engine printed 1013.01 MiB of execution context where kvplan's forward model
    of its build (Llama-3.1-70B, TP 8, max_num_tokens 8192) gives 444,612,608 B: (2 x 8192 + 10,752) x 8192 x 2 B, the
    MLP row 3 x 28,672 x 8192 / (8192 x 8) = 10,752 (plus norms, rounded up: 10,753). The low edge of a launch that
    gives no activation_bytes takes its execution context at that ratio, 2.39x; a fold without the log takes 1."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    bench = importlib.import_module("sglang_trtllm_error")
    row = tb.ENGINE_CONTEXTS[0]
    est = trtllm.estimate(bench.build(bench.as_a_user_would(bench.RUNS[row.log])), search_max_seq=False)
    assert est.activation_peak_bytes == row.modelled_bytes == (2 * 8192 + 10_753) * 8192 * 2
    assert row.ratio == Fraction(101_301, 100) * 2**20 / 444_612_608 and 2.38 < float(row.ratio) < 2.40
    assert tb.context_ratio_high(frozenset({row.source})) == 1
    with tb.leaving_out(()):
        plain = _est("max_batch_size=2048", "max_num_tokens=8192")
        ctx = _est("max_batch_size=2048", "max_num_tokens=8192", "activation_bytes=838909952B")
    # the same execution context given: the low edge is the measured error alone; modelled: 1.39 x 838,909,952 B lower
    assert ctx.available_kv_bytes == plain.available_kv_bytes
    drop = (ctx.available_kv_bytes_low - plain.available_kv_bytes_low)
    assert abs(drop - int(838_909_952 * row.ratio) * F32_09 + 838_909_952 * F32_09) < 2


def test_a_trtllm_serve_engine_launch_says_what_check_cannot_read(cli, tmp_path):
    """`trtllm-serve ENGINE_DIR --backend tensorrt` whose engine directory the repository does not hold: MODEL is an
    engine directory whose config.json is the engine's, so check says the backend and the missing config.json are why
    it cannot judge (exit 3), rather than look the model up as a Hugging Face one."""
    (tmp_path / "run.sh").write_text("trtllm-serve ./engines/llama --backend tensorrt --max_seq_len 8192\n")
    code, out, _ = cli("check", tmp_path / "run.sh", "--gpu", "h100")
    assert code == 3 and "--backend" in out and "config.json" in out and "not an engine directory in the repository" in out


ENGINE_CONFIG = ROOT / "tests" / "data" / "trtllm_engine_configs" / "achatbot-spark-tts-0.5b-llm-bf16-v0.17.0.post1"


def test_an_engine_config_json_read_as_its_build():
    """A published 0.17.0.post1 engine config.json (tests/data/trtllm_engine_configs/SOURCES.md): the model as built
    (Qwen2, 24 layers, 14 heads, 2 KV heads of 64, vocabulary 166,000), bf16, TP 1, and its build settings."""
    import json

    from kvplan.engines.trtllm.build_settings import EngineConfigError, read_engine_config

    doc = json.loads((ENGINE_CONFIG / "config.json").read_text())
    built = read_engine_config(doc)
    assert (built.version, built.tp, built.pp, built.weight_dtype, built.kv_dtype) == ("0.17.0.post1", 1, 1, None, "auto")
    assert (built.max_seq_len, built.tokens_per_block) == (32768, 64)
    assert built.options == (("backend", "tensorrt"), ("max_batch_size", "16"), ("max_num_tokens", "32768"),
                             ("max_input_len", "1024"))
    assert {k: built.hf_config[k] for k in ("model_type", "num_hidden_layers", "num_key_value_heads", "head_dim",
                                            "vocab_size")} == {"model_type": "qwen2", "num_hidden_layers": 24,
                                                               "num_key_value_heads": 2, "head_dim": 64,
                                                               "vocab_size": 166000}
    for change, key in ((("build_config", "max_beam_width", 4), "build_config.max_beam_width"),
                        (("plugin_config", "paged_kv_cache", False), "build_config.plugin_config.paged_kv_cache"),
                        (("plugin_config", "lora_plugin", "bfloat16"), "build_config.plugin_config.lora_plugin"),
                        (("quantization", "quant_algo", "W4A16_AWQ"), "pretrained_config.quantization.quant_algo")):
        bad = json.loads(json.dumps(doc))
        where = {"build_config": bad["build_config"], "plugin_config": bad["build_config"]["plugin_config"],
                 "quantization": bad["pretrained_config"]["quantization"]}[change[0]]
        where[change[1]] = change[2]
        with pytest.raises(EngineConfigError) as info:
            read_engine_config(bad)
        assert info.value.key == key and info.value.unmodelled


def test_check_reads_an_engine_directory_in_the_repository(cli, tmp_path):
    """`trtllm-serve ./engine --backend tensorrt` beside that engine's config.json: judged with the model as built
    (24 layers x 2 KV heads x 64 x 2 (K, V) x 2 B = 12,288 B a token), its release (0.17.0.post1), max_seq_len 32768,
    64-token blocks and its build settings: max_batch_size 16 caps the requests at once, and no build setting is
    left open. An engine directory outside the repository cannot be judged, and check says why."""
    import json
    import shutil

    shutil.copytree(ENGINE_CONFIG, tmp_path / "engine")
    (tmp_path / "run.sh").write_text("trtllm-serve ./engine --backend tensorrt\n")
    code, out, err = cli("check", tmp_path / "run.sh", "--gpu", "l4", "--json")
    verdict = json.loads(out)["verdicts"][0]
    figures = verdict["figures"]
    assert code == 0 and verdict["status"] == "pass", (out, err)
    assert verdict["max_model_len"] == 32768 and "0.17.0.post1" in verdict["origins"]["engine_release"]
    assert figures["kv_cache_tokens"] == figures["num_gpu_blocks"] * 64
    assert figures["cache_bytes"] == figures["kv_cache_tokens"] * 24 * 2 * 64 * 2 * 2
    assert figures["max_batch"] == 16  # the engine's max_batch_size, though the pool holds 43 of 32768 tokens
    assert figures["kv_cache_tokens"] // 32768 > 16
    assert not any("not given" in n for n in verdict["notes"])
    assert any("judged by the low edge" in n for n in verdict["notes"])
    (tmp_path / "far.sh").write_text("trtllm-serve /engines/llama --backend tensorrt\n")
    code, out, _ = cli("check", tmp_path / "far.sh", "--gpu", "l4")
    assert code == 3 and "not an engine directory in the repository" in out
