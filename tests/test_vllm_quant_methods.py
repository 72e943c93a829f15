"""--quantization naming a quantized checkpoint's kernel (kvplan/engines/vllm/quant_methods.py), against the rules
read from vLLM's wheels: awq_marlin.py / gptq_marlin.py override_quantization_method and is_*_marlin_compatible
(0.10.2-0.23), utils/marlin_utils.py query_marlin_supported_quant_types (SM 8.0 until 0.13, 7.5 from 0.14),
auto_awq.py (0.24+) and auto_gptq.py (0.22+), config/model.py _verify_quantization."""

import json
from pathlib import Path

import pytest

from kvplan.core.errors import InputError, UnsupportedError
from kvplan.engines.vllm import quant_methods

DATA = Path(__file__).parent / "data"
AWQ = DATA / "extra_configs" / "qwen2.5-14b-instruct-awq.json"
GIB = 2**30


def check(checkpoint, requested, quant, version, capability="8.6"):
    return quant_methods.check(checkpoint, requested, quant, version=version, capability=capability, where="q")


def test_marlin_rules_by_release_and_gpu():
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}
    gptq = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False}
    for ckpt, cfg, name in (("awq", awq, "awq_marlin"), ("gptq", gptq, "gptq_marlin")):
        assert "Marlin" in check(ckpt, name, cfg, "0.13.0", "8.0")
        with pytest.raises(InputError, match="SM 8.0"):
            check(ckpt, name, cfg, "0.13.0", "7.5")  # T4 on 0.13: no Marlin, "does not match"
        assert check(ckpt, "marlin", cfg, "0.14.1", "7.5")  # 0.14 lowered the floor to SM 7.5
        with pytest.raises(InputError, match="SM 7.5"):
            check(ckpt, name, cfg, "0.19.1", "7.0")
    # not Marlin-compatible checkpoints: refused before the Auto* configs, taken after
    with pytest.raises(InputError, match="group size 256"):
        check("awq", "awq_marlin", dict(awq, group_size=256), "0.23.0")
    assert "AutoAWQ" in check("awq", "awq_marlin", dict(awq, group_size=256), "0.24.0", "7.0")
    with pytest.raises(InputError, match="sym False"):
        check("gptq", "gptq_marlin", dict(gptq, sym=False), "0.21.0")
    assert "AutoGPTQ" in check("gptq", "gptq_marlin", dict(gptq, sym=False), "0.22.1", "7.0")
    # the checkpoint's own method needs nothing; a config that was not read is cannot judge, not a guess
    assert check("awq", "awq", awq, "0.13.0", "7.0") is None
    with pytest.raises(UnsupportedError, match="not read"):
        check("awq", "awq_marlin", None, "0.19.1")
    assert not quant_methods.accepts("awq", "gptq_marlin") and quant_methods.accepts("fp8", "fp8")


def test_awq_marlin_launch_holds_the_checkpoints_bytes(cli):
    """Qwen2.5-14B-Instruct-AWQ on vLLM 0.13.0 (RTX A5000): the public log prints 'Model loading took 9.3795 GiB'
    (tests/data/vllm_logs_public duotalk-a5000-v0130-qwen25-14b-awq, launched with --quantization awq). Marlin
    repacks in place, so awq_marlin holds the same bytes; kvplan's weights are within 2% of the log."""
    log = (DATA / "vllm_logs_public" / "raw" / "duotalk-a5000-v0130-qwen25-14b-awq.log").read_text(errors="replace")
    assert "Model loading took 9.3795 GiB" in log
    figures = {}
    for method in ("awq", "awq_marlin", "marlin"):
        code, out, err = cli("estimate", AWQ, "--engine", "vllm", "--gpu", "rtx-a5000", "--seq", "8192",
                             "--engine-version", "0.13.0", "--vllm-args", f"--quantization {method}", "--json")
        assert code in (0, 1), err
        figures[method] = json.loads(out)["weights_per_gpu_bytes"]
    assert len(set(figures.values())) == 1
    assert abs(figures["awq"] / GIB - 9.3795) / 9.3795 < 0.02
    code, _, err = cli("estimate", AWQ, "--engine", "vllm", "--gpu", "t4", "--seq", "8192", "--engine-version",
                       "0.13.0", "--vllm-args", "--quantization awq_marlin")
    assert code == 2 and "SM 7.5" in err


def test_check_reads_a_marlin_launch(cli, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(AWQ.read_text())
    script = tmp_path / "serve.sh"
    script.write_text(f"#!/bin/bash\nvllm serve {model} --quantization awq_marlin --max-model-len 8192\n")
    code, out, err = cli("check", script, "--gpu", "l4", "--json")
    assert code == 0 and json.loads(out)["verdicts"][0]["status"] == "pass", out + err
