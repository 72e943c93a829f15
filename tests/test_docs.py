"""The docs say what kvplan does, and kvplan does what the docs say.

In the spirit of sqlite-utils' test_docs.py: every command and every option has help text and is named
somewhere in README.md or docs/; every flag a doc shows on a `kvplan <command>` line exists on that
command; relative links resolve; the spec schema doc lists exactly the keys spec.py accepts. Adding an
option without documenting it, or dropping one the docs still show, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main

from kvplan.core import spec
from kvplan.cli.entry import register_commands, app

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "examples").rglob("*.md"))]
# what a user reads: the docs, plus the comments of the example deployments and specs
READABLE = [*DOCS, *sorted((ROOT / "examples").rglob("*.yaml"))]
DOC_TEXT = "\n".join(p.read_text(encoding="utf-8") for p in DOCS)

register_commands()  # the commands of kvplan/cli/commands/*.py register themselves on demand
GROUP = typer.main.get_command(app)  # typer's own click group (newer typer vendors click)
COMMANDS = {name: GROUP.commands[name] for name in sorted(GROUP.commands)}
assert len(COMMANDS) >= 11, sorted(COMMANDS)
FLAG = re.compile(r"(?<![\w-])(-{1,2}[a-zA-Z][a-zA-Z0-9-]*)")


def _options(cmd) -> list:
    return [p for p in cmd.params if p.param_type_name == "option" and p.name != "help"]


def _flags(cmd) -> set[str]:
    out = {"--help"}
    for opt in _options(cmd):
        out.update(opt.opts)
        out.update(opt.secondary_opts)
    return out


@pytest.mark.parametrize("name", list(COMMANDS))
def test_command_has_help(name):
    cmd = COMMANDS[name]
    assert (cmd.help or "").strip(), f"kvplan {name} has no help text"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_option_has_help(name):
    missing = [opt.opts[0] for opt in _options(COMMANDS[name]) if not (opt.help or "").strip()]
    assert not missing, f"kvplan {name}: options without help text: {missing}"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_command_is_documented(name):
    assert f"kvplan {name}" in DOC_TEXT, f"`kvplan {name}` appears in no doc"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_option_is_documented(name):
    # a long flag named anywhere in README.md or docs/ counts: each command's page names its own
    missing = [opt.opts[-1] for opt in _options(COMMANDS[name])
               if not any(re.search(re.escape(f) + r"(?![\w-])", DOC_TEXT) for f in opt.opts if f.startswith("--"))]
    assert not missing, f"kvplan {name}: options named in no doc: {missing}"


def test_root_options_are_documented():
    missing = [opt.opts[0] for opt in _options(GROUP) if opt.opts[0] not in DOC_TEXT]
    assert not missing, f"kvplan options named in no doc: {missing}"


def _doc_command_lines():
    for path in READABLE:
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            # the command and its arguments up to the end of the code span, a table cell or a comment
            for m in re.finditer(r"kvplan (\w+)([^`|#\n]*)", line):
                if m.group(1) in COMMANDS:
                    yield f"{path.relative_to(ROOT)}:{lineno}", m.group(1), m.group(2)


def test_every_flag_shown_in_docs_exists():
    wrong = []
    for where, name, args in _doc_command_lines():
        known = _flags(COMMANDS[name])
        args = re.sub(r"\"[^\"]*\"|'[^']*'", "", args)  # a quoted value (a vLLM command line) is not kvplan's
        wrong += [f"{where}: kvplan {name} {flag}" for flag in FLAG.findall(args) if flag not in known]
    assert not wrong, "flags the docs show that the command does not have:\n" + "\n".join(wrong)


def test_doc_links_resolve():
    broken = []
    for path in DOCS:
        for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8")):
            target = target.split("#")[0]
            if not target or re.match(r"[a-z]+:", target):
                continue
            if not (path.parent / target).exists():
                broken.append(f"{path.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_spec_schema_doc_lists_exactly_the_accepted_keys():
    text = (ROOT / "docs" / "spec-schema.md").read_text(encoding="utf-8")
    accepted = (set(spec._TOP_KEYS) | {f"layout.{k}" for k in spec._LAYOUT_KEYS}
                | {f"mla.{k}" for k in spec._MLA_KEYS | spec._MLA_OPTIONAL_KEYS} | {f"state.{k}" for k in spec._STATE_KEYS}
                | {f"moe.{k}" for k in spec._MOE_KEYS} | {f"mtp.{k}" for k in spec._MTP_KEYS})
    # first cells of the schema tables: `key` or `key`, `key2`
    documented = set()
    for row in re.findall(r"^\|([^|]*)\|", text, re.M):
        documented.update(re.findall(r"`([a-z_.]+)`", row))
    kinds = set(spec.LAYER_KINDS)
    assert accepted - documented == set(), "spec keys missing from docs/spec-schema.md"
    assert documented - accepted - kinds == set(), "docs/spec-schema.md lists keys spec.py refuses"


def test_show_prints_block_yaml_for_a_plain_config(tmp_path):
    # a dense model from config.json has no list or nested mapping: it must still be one key per line
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["show", str(ROOT / "tests" / "data" / "hf_configs" / "llama-2-7b.json")])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "name: llama-2-7b" in lines and "layers: 32" in lines, result.stdout
    assert not any(line.startswith("{") for line in lines), result.stdout
    spec_file = tmp_path / "llama.yaml"
    spec_file.write_text(result.stdout, encoding="utf-8")
    again = CliRunner().invoke(app, ["show", str(spec_file)])
    assert again.exit_code == 0 and again.stdout.splitlines()[1:] == lines[1:]


@pytest.mark.parametrize("engine", ["static", "vllm", "sglang", "trtllm"])
def test_every_estimate_json_key_is_documented(engine):
    # docs/json.md lists the stable keys; a key the command prints but no doc names is an undocumented contract
    import json

    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["estimate", "llama-3.1-8b", "--seq", "8K", "--gpu", "h100", "--engine", engine, "--json"])
    assert result.exit_code == 0, result.output
    keys = set(json.loads(result.stdout))
    text = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    missing = sorted(k for k in keys if f"`{k}`" not in text)
    assert not missing, f"estimate --engine {engine} --json keys missing from docs/json.md: {missing}"


# ------------------------------------------------------------------ the Python examples run

DOCTEST_DOCS = sorted(p for p in DOCS if ">>> " in p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", DOCTEST_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_examples_print_what_the_doc_shows(path, monkeypatch):
    """Every `>>>` example in the docs (docs/api.md) runs from the repository root and prints what the doc shows."""
    import doctest

    monkeypatch.chdir(ROOT)
    failed, attempted = doctest.testfile(str(path), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False,
                                         report=True)
    assert attempted > 0 and failed == 0, f"{path.name}: {failed} of {attempted} examples differ (see the output above)"


def test_the_api_doc_has_examples():
    assert ROOT / "docs" / "api.md" in DOCTEST_DOCS


def _format_examples() -> list[tuple[str, str, int]]:
    """(format, example file, exit code) of each row of docs/check.md "Every format, with an example"."""
    text = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    section = text.split("## Every format, with an example", 1)[1].split("\n## ", 1)[0]
    return [(m.group(1), m.group(2), int(m.group(3)))
            for m in re.finditer(r"^\| `([\w-]+)` \| `([^`]+)` \| (\d) \|", section, re.M)]


def test_every_check_format_has_an_example_the_docs_name():
    from kvplan.check import report

    formats = {v for k, v in vars(report).items() if k.startswith("FORMAT_")} - {"vllm-args"}
    rows = _format_examples()
    assert {f for f, _, _ in rows} == formats and len(rows) == len(formats)
    for _, path, _ in rows:
        assert (ROOT / path).is_file() and (path.startswith("tests/data/") or path.startswith("examples/")), path


@pytest.mark.parametrize("fmt, path, code", _format_examples(), ids=[r[0] for r in _format_examples()])
def test_each_format_example_reads_as_the_docs_say(cli, fmt, path, code):
    import json

    got, out, _ = cli("check", ROOT / path, "--offline", "--format", "json")
    verdicts = json.loads(out)["verdicts"]
    assert got == code and fmt in {v["format"] for v in verdicts}, (path, [(v["format"], v["reason"]) for v in verdicts])
