"""The contract every engine keeps behind engines.get(name) (issue 24), asserted once for all of them:

- fits <=> starts and serves: `fits` says the engine starts with max_model_len = seq and holds `batch` of them, and
  `max_batch` is the boundary (fits at max_batch, not at max_batch + 1);
- monotone in seq: a longer sequence never fits where a shorter one does not, and max_batch never grows with seq;
- the band holds the modelled value: low edge <= modelled pool <= high edge;
- an --engine-option the engine does not read exits 2 (bad input);
- a release the engine has not read exits 3 (cannot judge) on every command (engines/releases.py), and text that is
  no version exits 2.
"""

from __future__ import annotations

import dataclasses

import pytest

from kvplan import engines
from kvplan.core.errors import KvplanError, UnsupportedError

from conftest import DATA
from engine_requests import engine_request

PAGED = tuple(name for name in engines.ENGINE_NAMES if name != "static")
SEQS = (2048, 8192, 32768, 131072)
BATCHES = (1, 4, 64)


def _estimate(name: str, seq: int, batch: int, gpu: str = "h100"):
    return engines.get(name).estimate(engine_request("llama-3.1-8b", seq, gpu=gpu, batch=batch))


@pytest.mark.parametrize("name", engines.ENGINE_NAMES)
def test_fits_is_starts_and_serves(name):
    for seq in SEQS:
        for batch in BATCHES:
            r = _estimate(name, seq, batch)
            assert r.fits is not None and r.max_batch is not None
            assert r.fits == (r.max_batch >= batch), (seq, batch)
            view = r.pool_view()
            if view is None:  # static: one contiguous cache per sequence next to the weights
                assert r.fits == (r.per_gpu.free_bytes >= 0), (seq, batch)
                continue
            assert r.fits == (r.starts and r.serves_batch), (seq, batch)
            if view.problem is not None and not getattr(view.problem, "action", None):
                assert not r.fits, (seq, batch, view.problem)  # an engine that does not start serves nothing


@pytest.mark.parametrize("name", engines.ENGINE_NAMES)
def test_max_batch_is_the_boundary_of_fits(name):
    for seq in SEQS:
        most = _estimate(name, seq, 1).max_batch
        if most:
            assert _estimate(name, seq, most).fits, seq
        assert not _estimate(name, seq, most + 1).fits, seq


@pytest.mark.parametrize("name", engines.ENGINE_NAMES)
def test_monotone_in_seq(name):
    for batch in BATCHES:
        results = [_estimate(name, seq, batch) for seq in SEQS]
        for shorter, longer in zip(results, results[1:]):
            assert shorter.fits or not longer.fits, (batch, shorter.seq, longer.seq)
            assert longer.max_batch <= shorter.max_batch, (batch, shorter.seq, longer.seq)
        assert results[-1].max_seq == results[0].max_seq  # the longest context for `batch` does not depend on seq


@pytest.mark.parametrize("name", engines.ENGINE_NAMES)
def test_the_band_holds_the_modelled_value(name):
    for gpu in ("h100", "l4", "a100-40gb"):
        r = _estimate(name, 8192, 1, gpu=gpu)
        if name == "static":
            # the static engine's budget is stated (capacity x gpu_util, or --reserve), not modelled: no band
            assert not hasattr(r, "available_kv_bytes_low")
            continue
        assert r.available_kv_bytes_low <= r.available_kv_bytes <= r.available_kv_bytes_high, gpu
        assert r.available_kv_bytes_low < r.available_kv_bytes_high, gpu  # a modelled budget has a band


@pytest.mark.parametrize("name", engines.ENGINE_NAMES)
def test_an_unread_engine_option_exits_2(cli, name):
    code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", name,
                         "--engine-option", "no_such_key=1")
    assert code == 2 and out == ""
    assert err.startswith("error: --engine-option") and "no_such_key" in err


@pytest.mark.parametrize("name", engines.ENGINE_NAMES)
def test_an_unread_release_exits_3_and_no_version_exits_2(cli, name):
    if name == "static":
        # the static engine has no releases (transformers' StaticCache semantics): any --engine-version is a flag it
        # does not take, bad input, whatever its value
        for version in ("9.9.9", "banana"):
            code, _, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", "static", "--engine-version", version)
            assert code == 2 and "no release to choose" in err
        return
    for version in ("0.0.1", "9.9.9"):  # before the oldest release read, after the newest
        code, out, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", name, "--engine-version", version)
        assert code == 3 and out == "", (version, err)
        assert err.startswith("error: --engine-version") and version in err
        code, _, _ = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", name, "--engine-version", version,
                         "--json")
        assert code == 3
    code, _, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", name, "--engine-version", "banana")
    assert code == 2 and "banana" in err


@pytest.mark.parametrize("name", PAGED)
def test_an_unread_release_is_refused_by_the_registry_as_unsupported(name):
    """engines/releases.py: every registry, reached through engines.release, raises UnsupportedError (exit 3) for a
    release it has not read and bad input (exit 2) for text that is no version."""
    for version in ("0.0.1", "9.9.9"):
        with pytest.raises(UnsupportedError):
            engines.release(name, version)
    with pytest.raises(KvplanError) as caught:
        engines.release(name, "banana")
    assert caught.value.exit_code == 2
    assert engines.release(name, None) == engines.release(name.upper(), None)  # the default, named as --engine is


def test_the_static_engine_has_no_release_to_read():
    """Engine.has_releases is what `estimate --engine-version` asks; the registry agrees with it."""
    assert [name for name in engines.ENGINE_NAMES if not engines.get(name).has_releases] == ["static"]
    with pytest.raises(KvplanError) as caught:
        engines.release("static", None)
    assert caught.value.exit_code == 2


@pytest.mark.parametrize("name", engines.ENGINE_NAMES)
def test_every_kv_dtype_name_an_engine_lists_is_one_it_reads(name):
    """Engine.kv_dtype_names is what check's readers pass on to the engine: each one must resolve, not be refused."""
    engine = engines.get(name)
    for spelling in engine.kv_dtype_names:
        req = dataclasses.replace(engine_request("llama-3.1-8b", 4096, gpu="h100"), kv_dtype=spelling)
        assert engine.kv_dtype(req) is not None, spelling


@pytest.mark.parametrize("image, engine", [("lmsysorg/sglang:v9.9.9", "SGLang"), ("vllm/vllm-openai:v9.9.9", "vLLM")])
def test_check_cannot_judge_an_unread_release(cli, tmp_path, image, engine):
    """`kvplan check` of a real compose file with its image pinned to a release kvplan has not read: cannot judge."""
    source = DATA / "deployments" / "compose" / "sglang-llama31-8b-device0.yaml"
    text = source.read_text(encoding="utf-8").replace("lmsysorg/sglang:latest", image)
    if engine == "vLLM":
        text = text.replace("python3 -m sglang.launch_server", "vllm serve").replace("--model-path ", "")
    path = tmp_path / "compose.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, _ = cli("check", str(path), "--gpu", "h100")
    assert code == 3, out
    assert f"{engine} 9.9.9" in out and "not modelled" in out


def test_check_reads_a_tensorrt_llm_release_through_the_same_policy():
    from kvplan.check.readers import trtllm_serve

    with pytest.raises(UnsupportedError, match="TensorRT-LLM 9.9.9"):
        trtllm_serve.release("9.9.9", "image nvcr.io/nvidia/tensorrt-llm/release:9.9.9")
    assert trtllm_serve.release("1.0.0", "a pin")[0] == "1.0.0"


def test_results_are_frozen_dataclasses():
    for name in engines.ENGINE_NAMES:
        r = _estimate(name, 8192, 1)
        assert dataclasses.is_dataclass(r)
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.fits = not r.fits


@pytest.mark.parametrize("name", engines.ENGINE_NAMES)
def test_an_engines_launch_command_goes_only_to_that_engine(cli, name):
    """--vllm-args and --sglang-args reach only the engine whose record names the flag (Engine.launch_args_flag);
    another engine refuses them as bad input rather than ignoring them."""
    for flag, args in (("--vllm-args", "--gpu-memory-utilization 0.8"), ("--sglang-args", "--dp-size 1")):
        code, _, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", name, flag, args, "--json")
        if engines.get(name).launch_args_flag == flag:
            assert code in (0, 1), err
        else:
            assert code == 2 and err.startswith(f"error: {flag}"), err
