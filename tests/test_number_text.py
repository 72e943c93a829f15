"""Issue 26: a number in a message or note is shown as the user wrote it. The engines' float options are kept exact
(kvplan/engines/runtime/options.py exact_float: 0.9 x capacity picks up no binary rounding), and such a value reached
messages as 'Fraction(3, 2)' (units.shown's repr) or '-3/2' (its str): `--hicache-ratio -1.5` was "must be
positive, got -3/2". Every float option of vLLM 0.33's table (kvplan/data/vllm_options/0.33.0.json, dumped from
vLLM's own parser) and SGLang's and TensorRT-LLM's memory fractions, given 1.5 or -1.5 through `kvplan check`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kvplan.core.units import shown

TABLE = Path(__file__).parent.parent / "kvplan" / "data" / "vllm_options" / "0.33.0.json"
FLOATS = [o["flags"][0] for o in json.loads(TABLE.read_text())["options"] if "float" in o["kind"]]
# a Python repr of an exact number, or the fraction form of 1.5
NOT_AS_WRITTEN = re.compile(r"Fraction\(|Decimal\(|(?<![\w./])-?3/2(?![\w/])")


def test_the_table_has_float_options():
    assert "--gpu-memory-utilization" in FLOATS and "--cpu-offload-gb" in FLOATS and len(FLOATS) >= 8


@pytest.mark.parametrize("value", ["1.5", "-1.5"])
def test_no_float_option_is_shown_other_than_as_written(cli, tmp_path, value):
    launches = [f"vllm serve meta-llama/Llama-3.1-8B-Instruct {flag} {value}" for flag in FLOATS]
    launches += [f"python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct {flags}"
                 for flags in (f"--mem-fraction-static {value}", f"--enable-hierarchical-cache --hicache-ratio {value}")]
    launches.append(f"trtllm-serve meta-llama/Llama-3.1-8B-Instruct --kv_cache_free_gpu_memory_fraction {value}")
    for i, line in enumerate(launches):
        (tmp_path / f"{i:02d}.sh").write_text(f"#!/bin/sh\n{line}\n")
    code, out, err = cli("check", tmp_path, "--gpu", "h100", "--offline", "--format", "json")
    assert code in (0, 1, 2, 3)
    found = sorted({m.group(0) for m in NOT_AS_WRITTEN.finditer(out + err)})
    assert not found, (found, [ln for ln in err.splitlines() if NOT_AS_WRITTEN.search(ln)][:3])
    assert value in err or value in out  # and the value itself is said where a message names it


def test_shown_gives_an_exact_number_its_decimal():
    from decimal import Decimal
    from fractions import Fraction

    assert (shown(Fraction(3, 2)), shown(Decimal("1.5")), shown([1, "x"])) == ("1.5", "1.5", "[1, 'x']")
