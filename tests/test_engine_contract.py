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
from kvplan.engines.releases import REGISTRY

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


# Every way a command is given an engine release (docs/engines/README.md "Releases kvplan has not read"): each builds
# the command line for a release text. The commands not listed take no release (test_commands_without_a_release).
# A check or calibrate input is a real file of tests/data with only its release replaced.
COMPOSE = DATA / "deployments" / "compose" / "sglang-llama31-8b-device0.yaml"  # lmsysorg/sglang:latest, Llama-3.1-8B
IMAGES = {"vllm": "vllm/vllm-openai", "sglang": "lmsysorg/sglang", "trtllm": "nvcr.io/nvidia/tensorrt-llm/release"}
LAUNCHERS = {"vllm": "vllm serve", "sglang": "python3 -m sglang.launch_server", "trtllm": "trtllm-serve"}
# the engine's own launch next to the release: the release is read before the launch's options are
LAUNCH = {"vllm": ("--vllm-args", "--max-num-seqs 4"), "sglang": ("--sglang-args", "--max-running-requests 4"),
          "trtllm": ("--engine-option", "backend=pytorch")}
# a log that names its release, with that release as printed (SGLang's logs name none: calibrate judges them by
# its newest rules and says so)
LOGS = {"vllm": (DATA / "vllm_logs" / "raw" / "codellama-codellama-7b-h--h100-80gb--tp1pp1dp1--8192.log", "0.19.0", ()),
        "trtllm": (DATA / "trtllm_logs" / "raw" / "waynehacking8-llama31-8b-fp8-h100-tp1-kv090-v0.20.log", "0.20.0",
                   ("--model", DATA / "vllm_models" / "meta-llama--Llama-3.1-8B-Instruct"))}


def _compose(engine: str, tag: str, tmp_path) -> str:
    text = COMPOSE.read_text(encoding="utf-8").replace("lmsysorg/sglang:latest", f"{IMAGES[engine]}:{tag}")
    if engine != "sglang":
        text = text.replace("python3 -m sglang.launch_server", LAUNCHERS[engine]).replace("--model-path ", "")
    path = tmp_path / f"{engine}-{tag}.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _pip_pin(version: str, tmp_path) -> str:
    # a SkyPilot task whose setup pins vLLM with pip (0.10.1+gptoss as published)
    source = DATA / "deployments" / "skypilot" / "gpt-oss-120b-1x-h100-vllm.sky.yaml"
    path = tmp_path / source.name
    path.write_text(source.read_text(encoding="utf-8").replace("vllm==0.10.1+gptoss", f"vllm=={version}"),
                    encoding="utf-8")
    return str(path)


def _kvplan_file(version: str, tmp_path) -> str:
    path = tmp_path / "deploy.yaml"
    path.write_text(f"model: llama-3.1-8b\nengine: vllm\ngpu: h100\nmax_model_len: 8192\nvllm_version: {version}\n",
                    encoding="utf-8")
    return str(path)


def _log(engine: str, version: str, tmp_path) -> list:
    source, logged, extra = LOGS[engine]
    path = tmp_path / source.name
    path.write_text(source.read_text(encoding="utf-8").replace(logged, version), encoding="utf-8")
    return [str(path), *extra]


WAYS = {  # how -> (engines, argv builder (engine, version, tmp_path), what a non-version gets, where the error is)
    "estimate --engine-version": (PAGED, lambda e, v, t: ["estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", e,
                                                         "--engine-version", v], 2, "--engine-version"),
    "estimate --engine-version --json": (PAGED, lambda e, v, t: ["estimate", "llama-3.1-8b", "--gpu", "h100", "--engine",
                                                                e, "--engine-version", v, "--json"], 2, "--engine-version"),
    "estimate --engine-version + launch": (PAGED, lambda e, v, t: ["estimate", "llama-3.1-8b", "--gpu", "h100", "--engine",
                                                                  e, "--engine-version", v, *LAUNCH[e]], 2, "--engine-version"),
    # an image tag that is no version ('latest', 'nightly') pins none: the file is judged by the default release,
    # which the report names
    "check image tag": (PAGED, lambda e, v, t: ["check", _compose(e, v, t), "--gpu", "h100"], "default", "image"),
    # `pip install vllm==banana` pins nothing pip could install: an unpinned install, judged by the default release
    "check pip pin": (("vllm",), lambda e, v, t: ["check", _pip_pin(v, t)], "default", "pip install"),
    "check --vllm-version": (("vllm",), lambda e, v, t: ["check", _compose(e, "latest", t), "--gpu", "h100",
                                                         "--vllm-version", v], 2, "--vllm-version"),
    "check vllm_version:": (("vllm",), lambda e, v, t: ["check", _kvplan_file(v, t)], 2, "vllm_version"),
    # the release a log prints is the log's, not the user's: one kvplan cannot read leaves the log cannot judge
    "calibrate log": (tuple(LOGS), lambda e, v, t: ["calibrate", *_log(e, v, t)], 3, "rules"),
}
CASES = [(how, engine) for how, (names, *_) in WAYS.items() for engine in names]
# text that is no release; pip reads `vllm==99` as release 99.0, one kvplan has not read (exit 3, as 9.9.9)
NO_VERSION = {"check pip pin": ("banana",)}


@pytest.mark.parametrize("how, engine", CASES)
def test_an_unread_release_exits_3_on_every_command(cli, tmp_path, how, engine):
    """A release kvplan has not read, before the oldest or after the newest, is cannot judge (exit 3) naming the
    release, however the command is given it; text that is no version is bad input (exit 2) where the user typed it."""
    _, argv, non_version, where = WAYS[how]
    for version in ("0.0.1", "9.9.9"):
        code, out, err = cli(*argv(engine, version, tmp_path))
        assert code == 3, (version, out, err)
        # the release named where it was given
        assert any(version in line and where in line for line in (out + err).splitlines()), (out, err)
    for text in NO_VERSION.get(how, ("banana", "99")):  # no release of any engine is a bare number
        code, out, err = cli(*argv(engine, text, tmp_path))
        if non_version == "default":
            assert code in (0, 1) and f"kvplan's default: {where}" in out, (out, err)
        else:
            assert code == non_version, (text, out, err)


def test_the_static_engine_refuses_any_release(cli):
    # the static engine has no releases (transformers' StaticCache semantics): any --engine-version is a flag it does
    # not take, bad input, whatever its value
    for version in ("9.9.9", "banana"):
        code, _, err = cli("estimate", "llama-3.1-8b", "--gpu", "h100", "--engine", "static", "--engine-version", version)
        assert code == 2 and "no release to choose" in err


@pytest.mark.parametrize("command", ["explain", "sweep", "plot", "simulate", "plan", "probe"])
def test_commands_without_a_release(cli, command):
    """These commands judge by each engine's default release and take none: --engine-version is an option they do
    not have (exit 2), never one they ignore."""
    code, _, err = cli(command, "llama-3.1-8b", "--engine-version", "9.9.9")
    assert code == 2 and "--engine-version" in err


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


@pytest.mark.parametrize("name", PAGED)
def test_every_release_registry_has_one_shape(name):
    """engines/releases.py REGISTRY: each engine's record gives the same registry names, and they agree with each
    other the same way on every engine."""
    reg = engines.get(name).releases
    assert set(REGISTRY) <= set(dir(reg)), set(REGISTRY) - set(dir(reg))
    assert reg.release(None) == reg.DEFAULT == engines.release(name, None)
    assert reg.DEFAULT.line == reg.LINES[-1]  # the default is the newest line
    # the name a report gives the default without loading the table (vLLM's package names it) is the table's own
    assert engines.release_version(name, None) == reg.DEFAULT.version
    firsts = [line.split("-")[0] for line in reg.LINES]  # each line named by its first release ("0.18-0.19")
    for first, later in zip(firsts, firsts[1:]):
        assert reg.sort_key(first) < reg.sort_key(later) and reg.at_least(later, first) and not reg.at_least(first, later)
    for first in firsts:
        rules = reg.release(first)
        assert rules.line in reg.LINES and rules.at_least(first) and reg.parse(rules.mirrors) is not None
        assert reg.closest(first) == (rules, None)  # a log of a release read: its rules, nothing assumed
    assert reg.parse("banana") is None
    with pytest.raises(ValueError):
        reg.sort_key("banana")
    for unread in ("0.0.1", "9.9.9", "banana", None):  # calibrate compares any log: rules, and a note naming it
        rules, note = reg.closest(unread)
        assert rules.line in reg.LINES and note and (unread or "does not say") in note


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
