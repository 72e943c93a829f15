"""Issue 15, injection into reports: names and paths from users' files are shown, never obeyed.

Control characters in a deployment name made JUnit XML that parsers reject; ANSI escapes and newlines went raw into
text tables; `show` wrote YAML that read back as another model when a folder name held a newline and `#`; `sweep
-f csv` passed `=HYPERLINK(...)` through to spreadsheets; a name like `[/x]` was rich markup (MarkupError)."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from kvplan.core.text import csv_cell, visible

ROOT = Path(__file__).resolve().parents[1]
SPEC = (ROOT / "model_specs" / "llama-3.1-8b.yaml").read_text()
CONFIG = (ROOT / "tests" / "data" / "hf_configs" / "llama-3.1-8b.json").read_text()
HOSTILE = "evil\x1b[31m\x00\n# kv_heads: 0\u202e"
RAW = ("\x1b", "\x00", "\u202e")


def no_raw_controls(text: str) -> None:
    assert not any(c in text for c in RAW), repr(text)


def test_visible_escapes_what_would_act():
    assert visible("a\x1b[31mb\nc\u202ed\x7f") == "a\\x1b[31mb\\nc\\u202ed\\x7f"
    assert visible("llama-3.1-8b · 8K ü") == "llama-3.1-8b · 8K ü"


@pytest.mark.parametrize("text, cell", [("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"), ("+1", "'+1"),
                                        ("@SUM(A1)", "'@SUM(A1)"), ("-2+3", "'-2+3"), ("llama", "llama")])
def test_csv_cells_cannot_be_formulas(text, cell):
    assert csv_cell(text) == cell


def test_a_spec_name_with_control_characters_is_refused(cli, tmp_path):
    (tmp_path / "s.yaml").write_text(SPEC.replace("name: llama-3.1-8b", 'name: "evil\\e[2Jname"'))
    code, out, err = cli("estimate", tmp_path / "s.yaml")
    assert code == 2 and "s.yaml: name — holds the control character \\x1b" in err
    no_raw_controls(err)


def test_a_deployment_name_with_control_characters_is_refused_and_the_junit_parses(cli, tmp_path):
    (tmp_path / "d.yaml").write_text('name: "a\\x00b\\x1b[31m"\nengine: vllm\nmodel: llama-3.1-8b\ngpu: h100\n'
                                     "max_model_len: 8192\n")
    code, out, err = cli("check", tmp_path / "d.yaml", "--format", "junit")
    assert code == 2
    root = ET.fromstring(out)  # raised "not well-formed (invalid token)" before
    assert root.find(".//error") is not None and "control character" in root.find(".//error").get("message")
    no_raw_controls(out + err)


def test_names_and_paths_from_elsewhere_are_escaped_in_every_check_format(cli, tmp_path):
    # vLLM accepts any served name, and file names are the user's: escaped in the report, not refused
    folder = tmp_path / "dep\x1b[2Jloy"
    folder.mkdir()
    (folder / "serve\n#.yaml").write_text(f"model: meta-llama/Llama-3.1-8B-Instruct\nmax-model-len: 8192\n"
                                          f"served-model-name: {json.dumps(HOSTILE)}\n")
    for fmt in ("text", "markdown", "junit", "json"):
        code, out, err = cli("check", folder, "--gpu", "h100", "--format", fmt)
        assert code == 0, err
        no_raw_controls(out + err)
        assert "\n# kv_heads" not in out
        if fmt == "junit":
            ET.fromstring(out)
        if fmt == "json":
            assert json.loads(out)["verdicts"][0]["name"] == visible(HOSTILE)


def test_show_of_a_folder_named_with_a_newline_reads_back_as_the_same_model(cli, tmp_path):
    folder = tmp_path / "m\nkv_heads: 1 #"
    folder.mkdir()
    (folder / "config.json").write_text(CONFIG)
    code, out, err = cli("show", folder)
    assert code == 0, err
    back = yaml.safe_load(out)
    assert back["kv_heads"] == 8 and back["name"] == "m\\nkv_heads: 1 #"
    (tmp_path / "back.yaml").write_text(out)
    a = json.loads(cli("estimate", folder, "--json")[1])
    b = json.loads(cli("estimate", tmp_path / "back.yaml", "--json")[1])
    assert a["kv_bytes_per_token"] == b["kv_bytes_per_token"] == 131072


def test_text_tables_carry_no_escape_sequences(cli, tmp_path):
    folder = tmp_path / "m\x1b[31mred"
    folder.mkdir()
    (folder / "config.json").write_text(CONFIG)
    for args in (("estimate", folder, "--gpu", "h100"), ("explain", folder, "--gpu", "h100"),
                 ("sweep", folder, "--seq", "4K,8K"), ("sweep", folder, "-f", "markdown")):
        code, out, err = cli(*args)
        assert code == 0, err
        no_raw_controls(out + err)
        assert "m\\x1b[31mred" in out


def test_a_name_that_looks_like_rich_markup_is_text(cli, tmp_path):
    (tmp_path / "s.yaml").write_text(SPEC.replace("name: llama-3.1-8b", 'name: "[/x] [bold]b :smile:"'))
    code, out, err = cli("estimate", tmp_path / "s.yaml", "--gpu", "h100")
    assert code == 0, err
    assert "[/x] [bold]b :smile:" in out


def test_sweep_csv_neutralises_a_formula_in_a_model_name(cli, tmp_path):
    (tmp_path / "s.yaml").write_text(SPEC.replace("name: llama-3.1-8b", 'name: "=HYPERLINK(\\"http://evil\\")"'))
    code, out, err = cli("sweep", tmp_path / "s.yaml", "--seq", "4K,8K", "-f", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["model"] for r in rows] == ["'=HYPERLINK(\"http://evil\")"] * 2
    assert rows[0]["seq"] == "4096"  # numbers are left as they are
