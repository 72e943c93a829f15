"""The CI formats of `kvplan check`: GitHub workflow annotations, SARIF 2.1.0, and the line each verdict points at in
JUnit and markdown. SARIF's structure is checked by hand against the OASIS 2.1.0 standard's required properties
(sarifLog: version, runs; run: tool.driver.name; result: message.text; region.startLine >= 1), the schema not being
available offline."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kvplan.check import formats, lines

ROOT = Path(__file__).resolve().parent.parent
PROD = "examples/deploy/prod"
BAD = "examples/bad/unknown-key.yaml"


@pytest.fixture(scope="module")
def outputs():
    from typer.testing import CliRunner

    from kvplan.cli import entry

    entry.register_commands()
    runner = CliRunner()
    out = {}
    for fmt in ("github", "sarif", "junit", "markdown", "json"):
        result = runner.invoke(entry.app, ["check", PROD, BAD, "--gpu", "h100-sxm-80gb", "--format", fmt])
        out[fmt] = (result.exit_code, result.stdout)
    return out


def _line_of(path: str, text: str) -> int:
    return next(n for n, line in enumerate((ROOT / path).read_text().splitlines(), start=1)
                if text in line and not line.lstrip().startswith("#"))


def test_github_annotations_point_at_the_line_that_fails(outputs):
    code, out = outputs["github"]
    assert code == 2  # the invalid file outranks the failing deployment
    errors = [line for line in out.splitlines() if line.startswith("::error ")]
    assert len(errors) == 2 and len([line for line in out.splitlines() if line.startswith("::notice ")]) == 3
    # the unknown key's own line, and the failing canary's max_model_len line (its second document)
    assert errors[1].startswith(f"::error file={BAD},line={_line_of(BAD, 'max_modle_len')},title=kvplan check%3A INVALID")
    canary = errors[0]
    line = int(canary.split(",line=")[1].split(",")[0])
    text = (ROOT / PROD / "code-72b.yaml").read_text().splitlines()
    assert "max_model_len" in text[line - 1] and line > text.index("---")
    # workflow-command escaping: the message is one line, % and newlines escaped
    assert all("\n" not in e for e in errors) and "%0Afix (any one): " in canary
    assert out.splitlines()[-1].endswith("(exit 2)")


def test_github_escapes_what_would_end_a_property_or_a_message():
    assert formats._workflow_property("a:b,c%d\ne") == "a%3Ab%2Cc%25d%0Ae"
    assert formats._workflow_data("50% x\r\ny") == "50%25 x%0D%0Ay"


def test_sarif_has_one_result_per_failed_check_at_its_region(outputs):
    code, out = outputs["sarif"]
    log = json.loads(out)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert run["tool"]["driver"]["name"] == "kvplan" and len(set(rules)) == len(rules)
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["starts", "invalid"]
    for r in results:
        assert r["level"] == "error" and r["message"]["text"] and rules[r["ruleIndex"]] == r["ruleId"]
        (loc,) = r["locations"]
        assert loc["physicalLocation"]["region"]["startLine"] >= 1
    assert results[1]["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": BAD}, "region": {"startLine": _line_of(BAD, "max_modle_len")}}


def test_sarif_gives_each_failed_check_its_own_result(tmp_path, cli):
    path = tmp_path / "k.yaml"  # starts, but neither the concurrency nor the headroom asked for holds
    path.write_text("engine: vllm\nmodel: llama-3.1-8b\ngpu: l4\nmax_model_len: 8192\nrequire:\n  concurrency: 64\n"
                    "  headroom: 50%\n")
    code, out, _ = cli("check", path, "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    assert code == 1 and [r["ruleId"] for r in results] == ["concurrency", "headroom"]
    assert {r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results} == {4}


def test_junit_and_markdown_carry_the_line(outputs):
    _, junit = outputs["junit"]
    cases = ET.fromstring(junit).findall("testsuite/testcase")
    bad = next(c for c in cases if c.get("file") == BAD)
    assert bad.get("line") == str(_line_of(BAD, "max_modle_len"))
    _, md = outputs["markdown"]
    assert f"`{BAD}:{_line_of(BAD, 'max_modle_len')}`" in md
    _, js = outputs["json"]
    assert all(isinstance(v["line"], int) for v in json.loads(js)["verdicts"])


def test_document_spans_and_the_line_a_refusal_names():
    text = "# comment\na: 1\n---\nkind: Service\n---  # two\ncontainers:\n  - args: [--swap-space, '4']\n"
    assert lines.document_spans(text) == [(1, 2), (4, 4), (6, 7)]
    reason = "f.yaml#3: spec.containers[x]: --swap-space — vLLM 0.33.0 has no serve option '--swap-space'"
    assert lines.find_line(text, 3, "cannot_judge", reason) == 7
