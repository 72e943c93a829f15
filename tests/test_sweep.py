"""kvplan sweep: axis parsing, rows equal to the engine's own estimate, every output format parses, speed."""

import csv
import dataclasses
import io
import json

import pytest
from hypothesis import given, settings, strategies as st

from kvplan.model import catalog
from kvplan.analysis import sweep as sw
from kvplan.core import units
from kvplan.core.cache import CacheModel
from kvplan.requests.build import build_request
from kvplan.core.dtypes import dtype
from kvplan import engines
from kvplan.engines import static
from kvplan.core.errors import InputError
from kvplan.engines.static import _longest_context

from conftest import CONFIGS


def tokens(t):
    return units.parse_tokens(t)


# ------------------------------------------------------------------ axes

@pytest.mark.parametrize("text, step, expected", [
    ("4K", None, (4096,)),
    ("4K,8K,32K", None, (4096, 8192, 32768)),
    ("4K..128K*2", None, (4096, 8192, 16384, 32768, 65536, 131072)),
    ("4K..128K", "*2", (4096, 8192, 16384, 32768, 65536, 131072)),
    ("1K..10K*4", None, (1024, 4096)),  # stops before passing the end
    ("1..64+8", None, (1, 9, 17, 25, 33, 41, 49, 57)),
    ("1..4", "+1", (1, 2, 3, 4)),
    ("1,2..8*2,100,8", None, (1, 2, 4, 8, 100)),  # duplicates keep their first place
])
def test_axis_forms(text, step, expected):
    parse = tokens if "K" in text else int
    assert sw.parse_axis(text, parse, where="--seq", default_step=step) == expected


@pytest.mark.parametrize("text, message", [
    ("8K..4K*2", "runs backwards"),
    ("4K..8K*1", "never advances"),
    ("1..8+0", "never advances"),
    ("4K..8K", "needs a step"),
    ("4K,,8K", "empty entry"),
    ("4K..8K^2", "is not a token count"),
    ("4K..8K*2*2", "not of the form"),
    ("", "is empty"),
    ("1..100000000+1", "more than"),
])
def test_axis_errors_name_the_flag(text, message):
    with pytest.raises(InputError) as err:
        sw.parse_axis(text, tokens, where="--seq")
    assert message in err.value.what and err.value.where == "--seq"


def test_grid_counts_and_limits():
    grid = sw.Grid(seq=(1, 2, 3), batch=(1, 2), kv_dtype=("bf16", "fp8"), tp=(1, 2, 4))
    assert len(grid) == 36
    assert len(list(sw.combos(grid))) == 6
    with pytest.raises(InputError, match="more than"):
        sw.Grid(seq=tuple(range(1, 100_001)), batch=tuple(range(1, 1001)))


# ------------------------------------------------------------------ rows equal the engine's estimate

MODELS = ["llama-3.1-8b.json", "gemma-2-9b.json", "gemma-3-27b.json", "jamba-1.5-mini.json", "deepseek-v3.json",
          "llama-3.3-nemotron-super-49b-v1.json", "qwen3-next-80b-a3b-thinking.json", "mistral-7b-v0.1.json"]


@pytest.fixture(autouse=True)
def _each_model_read_once():
    # as `kvplan sweep` does (cli/options.py with_model_lookup): a config.json is parsed once per test, not per row
    from kvplan.model import resolve

    with resolve.remembering():
        yield


def _factory(model, gpu_mem=None, kv_cache_memory=None):
    def make(combo, seq, batch):
        return build_request(str(model), seq=str(seq), batch=batch, kv_dtype=combo.kv_dtype, dtype=None, gpu=combo.gpu,
                             gpu_mem=gpu_mem, gpus=None, tp=combo.tp, pp=combo.pp, kv_cache_memory=kv_cache_memory)
    return make


@pytest.mark.parametrize("name", MODELS)
def test_fast_rows_equal_static_estimate(name):
    model = CONFIGS / name
    grid = sw.Grid(seq=(1000, 4096, 8192, 40000), batch=(1, 3, 64), kv_dtype=("auto", "fp8"), gpu=(None, "h100-sxm-80gb", "a10g-24gb"),
                   tp=(1, 2, 8), pp=(1, 3))
    make = _factory(model)
    rows = list(sw.rows(grid, make, engines.get, model=name))
    assert len(rows) == len(grid)
    checked = 0
    for row in rows:
        combo = sw.Combo(row.engine, row.gpu, row.tp, row.pp, row.kv_dtype if row.error else _spelling(row.kv_dtype))
        if row.error:
            with pytest.raises(InputError):
                static.estimate(make(combo, row.seq, row.batch))
            continue
        expected = sw.row_from_result(static.estimate(make(combo, row.seq, row.batch)), combo)
        assert row == expected
        checked += 1
    assert checked > len(rows) // 2


def _spelling(resolved):
    return "fp8" if resolved == "fp8_e4m3" else "auto"


def test_kv_cache_memory_rows_equal_estimate():
    model = CONFIGS / "llama-3.1-8b.json"
    grid = sw.Grid(seq=(2048, 8192), batch=(1, 7), gpu=("h100-sxm-80gb",))
    make = _factory(model, kv_cache_memory="10GiB")
    for row in sw.rows(grid, make, engines.get, model="m"):
        combo = sw.Combo("static", row.gpu, 1, 1, "auto")
        assert row == sw.row_from_result(static.estimate(make(combo, row.seq, row.batch)), combo)
        assert row.gpu_cache_bytes + row.gpu_free_bytes == 10 * 2**30


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(["gemma-3-27b.json", "gemma-2-9b.json", "jamba-1.5-mini.json", "llama-3.1-8b.json"]),
       pp=st.sampled_from([1, 2, 3]), batch=st.integers(1, 500), room=st.integers(-10, 200 * 2**30),
       cap=st.sampled_from([131072, 8192, 4000, 2**40]))
def test_closed_form_longest_context_equals_binary_search(name, pp, batch, room, cap):
    spec = catalog.resolve_model(str(CONFIGS / name))
    cache = CacheModel(spec, dtype("bf16"), 1, pp)
    expected, _ = _longest_context(cache, batch, room, cap)
    assert sw.longest_context(cache, batch, room, cap) == expected


def test_unmodelled_engine_is_a_per_row_refusal():
    grid = sw.Grid(seq=(4096,), batch=(1, 2), engine=("static", "trtllm"))
    seen = []

    def fake_module(name):
        if name == "trtllm":
            from kvplan.core.errors import UnsupportedError
            raise UnsupportedError("engine 'trtllm' is not modelled in this version", where="--engine")
        return engines.get(name)

    rows = list(sw.rows(grid, _factory(CONFIGS / "llama-3.1-8b.json"), fake_module, model="m", on_refusal=seen.append))
    assert [r.error is None for r in rows] == [True, True, False, False]
    assert "not modelled" in rows[-1].error and len(seen) == 1


# ------------------------------------------------------------------ the command

def test_every_format_parses(cli):
    args = [CONFIGS / "llama-3.1-8b.json", "--seq", "4K..16K", "--batch", "1,8", "--gpu", "h100,l40s", "--kv-dtype", "bf16,fp8"]
    outputs = {}
    for fmt in ("text", "csv", "jsonl", "markdown"):
        code, out, err = cli("sweep", *args, "--format", fmt)
        assert code == 0, err
        outputs[fmt] = out
    rows = list(csv.DictReader(io.StringIO(outputs["csv"])))
    assert len(rows) == 3 * 2 * 2 * 2 and list(rows[0]) == list(sw.COLUMNS)
    first = rows[0]
    assert first["seq"] == "4096" and first["kv_bytes_per_token"] == "131072" and first["fits"] == "true"
    assert int(first["cache_bytes"]) == 4096 * 131072
    objects = [json.loads(line) for line in outputs["jsonl"].splitlines()]
    assert len(objects) == 24 and set(objects[0]) == set(sw.COLUMNS)
    assert [o["cache_bytes"] for o in objects] == [int(r["cache_bytes"]) for r in rows]
    table_lines = [line for line in outputs["markdown"].splitlines() if line.startswith("|")]
    assert len(table_lines) == 2 + 24 and "---:" in table_lines[1]
    assert "h100-sxm-80gb" in outputs["text"] and "128.00 KiB" in outputs["text"] and outputs["text"].count("\n") >= 26


def test_format_enum_is_exhaustive(cli):
    from kvplan.cli.commands.sweep import Format

    for fmt in Format:
        code, out, _ = cli("sweep", CONFIGS / "qwen3-8b.json", "--seq", "1K", "--format", fmt.value)
        assert code == 0 and out.strip()


def test_csv_figures_match_estimate_json(cli):
    code, out, _ = cli("sweep", CONFIGS / "gemma-2-9b.json", "--seq", "2K,32K", "--batch", "3", "--gpu", "a100-80gb", "--tp", "2",
                       "--format", "jsonl")
    assert code == 0
    for line in out.splitlines():
        row = json.loads(line)
        code, est_out, _ = cli("estimate", CONFIGS / "gemma-2-9b.json", "--seq", row["seq"], "--batch", 3, "--gpu", "a100-80gb",
                               "--tp", 2, "--json")
        est = json.loads(est_out)
        assert (row["cache_bytes"], row["max_batch"], row["max_seq"], row["fits"]) == (est["cache_bytes"], est["max_batch"],
                                                                                        est["max_seq"], est["fits"])
        assert row["gpu_free_bytes"] == est["per_gpu"]["free_bytes"]


def test_bad_values_exit_2_before_any_row(cli):
    model = CONFIGS / "llama-3.1-8b.json"
    for args, where in ((["--seq", "8K..4K*2"], "--seq"), (["--gpu", "h100,nosuchgpu"], "--gpu"), (["--kv-dtype", "bf16,fp7"], "KV dtype"),
                        (["--engine", "vllmm"], "--engine"), (["--batch", "0"], "--batch"), (["--tp", "two"], "--tp")):
        code, out, err = cli("sweep", model, *args)
        assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1, (args, err)
        assert where in err


def test_tp_that_does_not_divide_is_a_row_not_the_end(cli):
    code, out, err = cli("sweep", CONFIGS / "llama-3.1-8b.json", "--seq", "4K", "--tp", "2..4+1", "--gpu", "h100", "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["tp"] for r in rows] == ["2", "3", "4"]
    # the error cell starts with "-": neutralised for spreadsheets (kvplan.core.text.csv_cell), the message kept
    assert rows[1]["error"].startswith("'--tp") and rows[0]["error"] == rows[2]["error"] == ""


def test_every_row_refused_exits_with_the_reason(cli):
    code, out, err = cli("sweep", CONFIGS / "llama-3.1-8b.json", "--seq", "4K", "--tp", "3", "-f", "csv")
    assert code == 2 and "does not divide" in err and len(out.splitlines()) == 2


def test_ten_thousand_rows_stream_as_csv():
    """Every combination gives one CSV line after the header (the rate is benchmarks/sweep_rate.py's to measure,
    against a plain loop in the same run: no clock in the tests)."""
    model = str(CONFIGS / "llama-3.1-8b.json")
    grid = sw.Grid(seq=sw.parse_axis("1K..128K*2", tokens, where="--seq"), batch=tuple(range(1, 161)),
                   kv_dtype=("bf16", "fp8"), gpu=("h100-sxm-80gb", "a100-sxm-80gb", "l40s-48gb", "h200-141gb"))
    assert len(grid) == 10240
    lines = list(sw.iter_csv(sw.rows(grid, _factory(model), engines.get, model="m")))
    assert len(lines) == 10241 and len({line for line in lines[1:]}) == 10240


def test_other_engines_are_asked_row_by_row():
    """A paged engine goes through its own estimate for every row (here: static under another name, with the record
    saying it is paged: the sweep asks the record, not the name)."""
    calls = []

    def estimate(req, *, search_max_seq=True):
        calls.append((req.seq, req.batch))
        return static.estimate(req)

    other = dataclasses.replace(static.ENGINE, name="other", estimate=estimate, paged=True)
    grid = sw.Grid(seq=(2048, 8192), batch=(1, 5), gpu=("h100-sxm-80gb",), engine=("other",))
    make = _factory(CONFIGS / "gemma-2-9b.json")
    rows = list(sw.rows(grid, make, lambda name: other if name == "other" else engines.get(name), model="m"))
    fast = list(sw.rows(dataclasses.replace(grid, engine=("static",)), make, engines.get, model="m"))
    assert [dataclasses.replace(r, engine="static") for r in rows] == fast
    assert (8192, 5) in calls and len(calls) >= 4
