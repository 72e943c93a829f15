"""`kvplan check` end to end: every example's verdict and exit code, every output format, the schema, the hook."""

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from kvplan.check import deployment, formats as report_formats, report as check_report, run
from kvplan.check.readers import kvplan_yaml
from kvplan.core.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DEPLOY = EXAMPLES / "deploy"
BAD = EXAMPLES / "bad"
GPU = ("--gpu", "h100-sxm-80gb")  # the GPU files that name none are judged on (and that overrides the ones they name)
MODELS = ("--models-dir", str(DEPLOY / "models"))  # the team's vendored configs, for model paths inside images
EXIT = {"pass": 0, "fail": 1, "invalid": 2, "cannot_judge": 3}


def doc_expectations(path: Path, key: str = "expect") -> list[list[tuple[str, str]]]:
    """Per YAML document (a whole file when it is not YAML), its `# expect: STATUS [text the reason holds]` lines
    in order, one per verdict the document gives (`skipped` for a document with nothing to judge). key
    `expect-without-gpu` reads the verdicts the file gets when no --gpu is given."""
    text = path.read_text(encoding="utf-8")
    docs = re.split(r"(?m)^---\s*$", text) if path.suffix in (".yaml", ".yml") else [text]
    pattern = re.compile(rf"(?m)^# {re.escape(key)}: (\w+)(?: (.*))?$")
    return [[(m.group(1), (m.group(2) or "").strip()) for m in pattern.finditer(doc)] for doc in docs]


def expectations(path: Path, key: str = "expect") -> list[tuple[str, str]]:
    return [e for doc in doc_expectations(path, key) for e in doc]


def is_deployment_file(path: Path) -> bool:
    return path.is_file() and (path.suffix in (".yaml", ".yml", ".sh") or path.name == "Dockerfile")


def example_files():
    """deploy/ then bad/, each in the order `kvplan check` walks a folder (sorted paths)."""
    return [p for folder in (DEPLOY, BAD) for p in sorted(folder.rglob("*"), key=lambda p: p.as_posix()) if is_deployment_file(p)]


def run_json(cli, *args):
    code, out, err = cli("check", *args, "--format", "json")
    return code, json.loads(out), err


def worst(statuses) -> int:
    return check_report.exit_code([check_report.Verdict(source="x", document=None, name="x", format=None, status=s, reason="")
                             for s in statuses])


def _assert_verdicts(path, expected, code, report, err):
    got = [(v["status"], v["reason"]) for v in report["verdicts"]]
    assert [s for s, _ in got] == [s for s, _ in expected], got
    for index, ((status, reason), (_, needle)) in enumerate(zip(got, expected)):
        assert needle in reason, (needle, reason)
        if status in ("invalid", "cannot_judge"):
            # the message names the file and the key
            assert str(path.relative_to(ROOT)) in reason or str(path) in reason
            assert f"error: {reason}" in err
        elif status == "fail":
            assert report["verdicts"][index]["suggestions"], "a failing deployment names a fix"
    judged = [s for s, _ in expected if s != "skipped"]
    assert code == (worst(judged) if judged else 0) == report["exit_code"]
    assert report["skipped"] == len(expected) - len(judged)


@pytest.mark.parametrize("path", example_files(), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_gets_its_commented_verdict_and_exit_code(cli, path):
    expected = expectations(path)
    assert expected, f"{path} has no '# expect:' comment"
    code, report, err = run_json(cli, path, *GPU, *MODELS)
    _assert_verdicts(path, expected, code, report, err)


WITHOUT_GPU = [p for p in example_files() if expectations(p, "expect-without-gpu")]


@pytest.mark.parametrize("path", WITHOUT_GPU, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_examples_without_gpu_take_it_from_the_file_or_say_it_is_missing(cli, path):
    """Without --gpu a file is judged on the GPUs it names (node labels, instance types, Ray/SkyPilot/KubeAI
    accelerator names), and the report says so; one that names none is cannot judge, naming --gpu."""
    expected = expectations(path, "expect-without-gpu")
    code, report, err = run_json(cli, path, *MODELS)
    _assert_verdicts(path, expected, code, report, err)
    for verdict in report["verdicts"]:
        if verdict["status"] in ("pass", "fail"):
            assert verdict["origins"]["gpu"] and not verdict["origins"]["gpu"].startswith("--gpu"), verdict["origins"]


def test_every_format_has_an_example(cli):
    _, report, _ = run_json(cli, DEPLOY, *GPU, *MODELS)
    assert {v["format"] for v in report["verdicts"]} == {
        "kvplan", "vllm-config", "compose", "kubernetes", "kserve", "helm-production-stack", "helm-llm-d", "ray-serve",
        "kubeai", "skypilot", "shell", "dockerfile", "trtllm-options"}
    assert {v["engine"] for v in report["verdicts"] if v["status"] == "pass"} == {"vllm", "static", "sglang", "trtllm"}


def test_the_deployment_repo_as_a_whole(cli):
    code, report, _ = run_json(cli, DEPLOY, *GPU, *MODELS)
    files = sorted((p for p in DEPLOY.rglob("*") if is_deployment_file(p)), key=lambda p: p.relative_to(DEPLOY).as_posix())
    expected = [s for p in files for s, _ in expectations(p)]
    assert [v["status"] for v in report["verdicts"]] == expected
    assert code == 1 and report["exit_code"] == 1  # fails outrank the ones it cannot judge
    judged = [s for s in expected if s != "skipped"]
    assert report["passed"] + report["failed"] + report["invalid"] + report["cannot_judge"] == report["total"] == len(judged)
    assert report["skipped"] == expected.count("skipped") >= 4
    # the folder is walked in sorted order (Dockerfile, *.sh and *.yml too), each file named below the folder as given
    sources = [v["source"] for v in report["verdicts"]]
    assert all(s.startswith(DEPLOY.as_posix() + "/") for s in sources) and sources == sorted(sources)
    assert {Path(s).name for s in sources} >= {"Dockerfile", "serve-vllm.sh", "docker-compose.yml"}


def test_bad_files_exit_2_and_the_valid_documents_beside_them_are_still_judged(cli):
    code, report, err = run_json(cli, BAD, *GPU)
    assert code == 2
    mixed = [v for v in report["verdicts"] if v["source"].endswith("mixed.yaml")]
    assert [v["status"] for v in mixed] == ["pass", "invalid", "fail"]
    assert mixed[2]["figures"]["max_concurrency"] > 0 and mixed[2]["suggestions"]
    # one error line per bad document on stderr; stdout stays parseable JSON
    assert len([line for line in err.splitlines() if line.startswith("error: ")]) == report["invalid"] == 10


def test_good_and_bad_together_exit_2(cli):
    code, report, _ = run_json(cli, DEPLOY / "prod", BAD / "unknown-key.yaml", *GPU)
    assert code == 2 and report["passed"] >= 3 and report["invalid"] == 1


# ------------------------------------------------------------------ output formats

@pytest.fixture(scope="module")
def report():
    return run.run_check([str(DEPLOY), str(BAD)], OPTIONS)


OPTIONS = deployment.CheckOptions(gpu="h100-sxm-80gb", models_dirs=(str(DEPLOY / "models"),))


@pytest.mark.parametrize("fmt", list(report_formats.Format))
def test_every_format_renders_and_is_deterministic(report, fmt):
    text = report_formats.render(report, fmt)
    again = report_formats.render(run.run_check([str(DEPLOY), str(BAD)], OPTIONS), fmt)
    assert text == again and text.endswith("\n")
    # and it says what the report holds: every deployment is named with its verdict, and the summary's counts are
    # the verdicts' (counted here from the verdicts themselves, not from the renderer)
    statuses = [v.status for v in report.verdicts]
    expected = [s for p in example_files() for s, _ in expectations(p)]
    assert statuses == expected and (statuses.count("pass"), statuses.count("fail")) == (report.passed, report.failed)
    assert statuses.count("skipped") == report.skipped
    # annotations leave out skipped documents; SARIF holds only what blocks the gate (its results are failures)
    shown = {report_formats.Format.GITHUB: lambda v: v.status != "skipped",
             report_formats.Format.SARIF: lambda v: v.status in ("fail", "invalid", "cannot_judge")}.get(fmt, lambda v: True)
    for v in report.verdicts:
        assert (v.source in text) == shown(v) or (v.source in text and not shown(v) and any(
            o.source == v.source and shown(o) for o in report.verdicts)), (fmt, v.source)
    if fmt is report_formats.Format.JSON:
        assert [d["status"] for d in json.loads(text)["verdicts"]] == statuses
    if fmt is report_formats.Format.JUNIT:
        # no wall-clock times: the same input gives the same bytes (the checkout may live anywhere, /tmp included)
        assert 'time="0"' in text


def test_every_format_has_a_renderer_and_the_cli_offers_exactly_them():
    from kvplan.cli.commands.check import OutputFormat

    assert set(report_formats.RENDERERS) == set(report_formats.Format)
    assert [f.value for f in OutputFormat] == [f.value for f in report_formats.Format]


def test_json_is_the_report_dataclass(report):
    data = json.loads(report_formats.render(report, "json"))
    assert set(data) == {f for f in check_report.CheckReport.__dataclass_fields__}
    verdict = data["verdicts"][0]
    assert set(verdict) == set(check_report.Verdict.__dataclass_fields__)
    assert data["vllm_version"] == "0.33.0"


def test_markdown_is_a_well_formed_table(report):
    md = report_formats.render(report, "markdown")
    lines = md.splitlines()
    assert lines[0] == "## kvplan check"
    table = [line for line in lines if line.startswith("|")]
    header, separator, rows = table[0], table[1], table[2:]
    columns = header.count(" | ") + 1
    assert re.fullmatch(r"\|(---:?\|)+", separator) and separator.count("|") == header.count("|")
    assert len(rows) == report.total + report.skipped  # a skipped document has its row, counted apart
    assert len([r for r in rows if r.startswith("| ⏭️ skipped")]) == report.skipped
    for row in rows:  # escaped pipes do not split cells
        assert len(re.split(r"(?<!\\)\|", row)) - 2 == columns
    assert "### Fixes" in md and "`max_model_len:" in md


def test_junit_parses_and_counts_match(report):
    root = ET.fromstring(report_formats.render(report, "junit").split("\n", 1)[1])
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == report.total + report.skipped == int(suite.get("tests")) == int(root.get("tests"))
    assert len([c for c in cases if c.find("skipped") is not None]) == report.skipped == int(suite.get("skipped"))
    assert len([c for c in cases if c.find("failure") is not None]) == report.failed == int(suite.get("failures"))
    errors = [c for c in cases if c.find("error") is not None]
    assert len(errors) == report.invalid + report.cannot_judge == int(suite.get("errors"))
    assert {e.find("error").get("type") for e in errors} == {"invalid", "cannot_judge"}
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["exit_code"] == str(report.exit_code)


def test_text_has_one_row_per_deployment_and_the_summary(report):
    text = report_formats.render(report, "text")
    for v in report.verdicts:
        assert v.label in text
    assert text.rstrip().endswith(f"(exit {report.exit_code})")


def test_output_file_gets_the_format_and_stdout_the_table(cli, tmp_path):
    out = tmp_path / "report.xml"
    code, stdout, _ = cli("check", DEPLOY / "prod", *GPU, "--format", "junit", "-o", out)
    assert code == 1
    ET.fromstring(out.read_text(encoding="utf-8").split("\n", 1)[1])
    assert stdout.startswith("kvplan check") and "<testsuites" not in stdout


def test_json_flag_is_format_json(cli):
    a = cli("check", DEPLOY / "prod" / "chat-8b.yaml", "--json")
    b = cli("check", DEPLOY / "prod" / "chat-8b.yaml", "--format", "json")
    assert a == b and a[0] == 0
    code, _, err = cli("check", DEPLOY / "prod" / "chat-8b.yaml", "--json", "--format", "junit")
    assert code == 2 and err.startswith("error: --json")


# ------------------------------------------------------------------ command-line details

def test_vllm_args_command_line(cli):
    code, report, _ = run_json(cli, "--vllm-args", "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32K -tp 1", *GPU)
    assert code == 0 and report["verdicts"][0]["format"] == "vllm-args" and report["verdicts"][0]["max_model_len"] == 32768
    line = "serve meta-llama/Llama-3.1-70B-Instruct -tp 2 --max-model-len 128K"
    code, report, _ = run_json(cli, "--vllm-args", line, *GPU, "--optimistic")
    assert code == 1 and report["verdicts"][0]["suggestions"][0].startswith("--max-model-len ")
    # judged by the low edge of the band, nothing is left for the cache at TP 2: the fixes are smaller weights,
    # then more GPUs (the order an operator tries them, engines/fixes.py)
    # (from vLLM 0.29 the low edge also covers a cold torch.compile cache and leaves a few hundred tokens: a shorter
    # length may come first, as it always does)
    code, report, _ = run_json(cli, "--vllm-args", line, *GPU)
    fixes = [f for f in report["verdicts"][0]["suggestions"] if not f.startswith("--max-model-len ")]
    assert code == 1 and fixes[:2] == ["--quantization fp8", "--tensor-parallel-size 4 (4 GPUs)"]


def test_cli_requirements_apply_to_vllm_configs(cli):
    path = DEPLOY / "vllm" / "llama-8b.serve.yaml"
    code, report, _ = run_json(cli, path, *GPU, "--require-concurrency", "4", "--require-headroom", "20%")
    checks = {c["name"]: c for c in report["verdicts"][0]["checks"]}
    assert code == 0 and checks["concurrency"]["required"] == 4 and checks["headroom"]["required"] == 20.0
    code, report, _ = run_json(cli, path, *GPU, "--require-concurrency", "64")
    assert code == 1 and "64 required" in report["verdicts"][0]["reason"]


def test_usage_errors_stop_the_run(cli):
    assert cli("check")[0] == 2
    code, _, err = cli("check", DEPLOY, "--gpu", "h1000")
    assert code == 2 and err.startswith("error: --gpu — unknown GPU")
    code, _, err = cli("check", DEPLOY, *GPU, "--require-headroom", "150%")
    assert code == 2 and "--require-headroom" in err
    code, _, err = cli("check", DEPLOY, *GPU, "--vllm-version", "vllm-latest")
    assert code == 2 and "--vllm-version" in err
    # a real release kvplan does not model (V0): cannot judge, exit 3, saying why
    code, _, err = cli("check", DEPLOY, *GPU, "--vllm-version", "0.5")
    assert code == 3 and "--vllm-version" in err and "older than 0.10" in err


def test_vllm_version_switch(cli):
    path = DEPLOY / "vllm" / "llama-8b.serve.yaml"
    _, new, _ = run_json(cli, path, *GPU)
    _, old, _ = run_json(cli, path, *GPU, "--vllm-version", "0.19.0")
    assert new["vllm_version"] == "0.33.0" and old["vllm_version"] == "0.19.0"
    assert "judged by vLLM 0.19.0 rules (line 0.18-0.19)" in old["verdicts"][0]["notes"]
    # --disable-prefix-caching exists only from 0.33 on
    assert run_json(cli, "--vllm-args", "serve llama-3.1-8b --disable-prefix-caching", *GPU)[0] == 0
    code, report, _ = run_json(cli, "--vllm-args", "serve llama-3.1-8b --disable-prefix-caching", *GPU, "--vllm-version", "0.19")
    assert code == 2 and "vLLM 0.19.0 has no serve option" in report["verdicts"][0]["reason"]


def test_every_example_judges_the_same_under_vllm_0_19(cli):
    folders = [p for p in sorted(DEPLOY.iterdir()) if p.is_dir() and p.name != "features"]
    _, new, _ = run_json(cli, *folders, *GPU, *MODELS)
    _, old, _ = run_json(cli, *folders, *GPU, *MODELS, "--vllm-version", "0.19")
    assert [v["status"] for v in new["verdicts"]] == [v["status"] for v in old["verdicts"]]
    # the launch options: vLLM 0.19's profile run with speculative decoding is not modelled (its rejection sampler's
    # warm-up), so those launches cannot be judged on 0.19's rules; the others are judged there too
    _, feat, _ = run_json(cli, DEPLOY / "features", *GPU, "--vllm-version", "0.19")
    for v in feat["verdicts"]:
        if v["name"] in ("spec-70b-draft-1b", "dsv3-mtp-dcp8", "eagle3.serve"):
            assert v["status"] == "cannot_judge" and "rejection sampler" in v["reason"], v
        elif v["name"] != "dflash":
            assert v["status"] in ("pass", "fail"), v


# ------------------------------------------------------------------ schema, hook, docs

def kvplan_documents(paths):
    for path in paths:
        try:
            docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
        except yaml.YAMLError:
            continue
        for doc, (status, needle) in zip(docs, expectations(path)):
            if isinstance(doc, dict) and run.document_format(doc, where=str(path)) == check_report.FORMAT_KVPLAN:
                yield path, doc, status, needle


@pytest.fixture(scope="module")
def schema():
    import jsonschema

    data = json.loads((ROOT / "kvplan" / "data" / "deployment.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(data)
    return jsonschema.Draft202012Validator(data)


def test_the_schema_validates_every_kvplan_example(schema):
    docs = list(kvplan_documents(sorted(DEPLOY.rglob("*.yaml"))))
    assert len(docs) >= 7
    for path, doc, _, _ in docs:
        errors = list(schema.iter_errors(doc))
        assert not errors, (path, [e.message for e in errors])


def test_the_schema_rejects_the_bad_examples_it_can_see(schema):
    seen = {}
    for path, doc, status, needle in kvplan_documents(sorted(BAD.rglob("*.yaml"))):
        seen[(path.name, doc.get("name"))] = bool(list(schema.iter_errors(doc)))
    # type, key and value-range mistakes are schema-visible; unknown names and impossible TP are not
    assert seen[("wrong-type.yaml", "wrong-type")] and seen[("unknown-key.yaml", "unknown-key")]
    assert seen[("mixed.yaml", "bad-headroom")]
    assert not seen[("unknown-model.yaml", "unknown-model")] and not seen[("impossible-tp.yaml", "impossible-tp")]


def test_the_schema_and_the_reader_know_the_same_keys(schema):
    props = schema.schema["properties"]
    assert {k for k in props if "-" not in k} == set(kvplan_yaml.KVPLAN_KEYS)
    assert {k.replace("-", "_") for k in props} == set(kvplan_yaml.KVPLAN_KEYS)
    assert set(props["require"]["properties"]) == set(kvplan_yaml.REQUIRE_KEYS)
    assert set(schema.schema["required"]) == {"model", "engine"}


def test_the_schema_ships_in_the_package():
    from importlib import resources

    assert json.loads(resources.files("kvplan.data").joinpath("deployment.schema.json").read_text(encoding="utf-8"))["title"]


def test_pre_commit_hook_runs_kvplan_check():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    hook = next(h for h in hooks if h["id"] == "kvplan-check")
    assert hook["entry"] == "kvplan check" and hook["language"] == "python" and hook["pass_filenames"] is True
    assert re.search(hook["files"], "deploy/prod/chat.yaml") and not re.search(hook["files"], ".github/workflows/ci.yml")


def test_docs_cover_every_option_and_the_github_actions_step(cli):
    import typer.main

    from kvplan.cli import entry as kvcli

    doc = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    command = typer.main.get_command(kvcli.app).commands["check"]
    flags = [o for p in command.params for o in p.opts if o.startswith("--")]
    assert "--vllm-args" in flags and "--print-schema" in flags
    for flag in flags:
        if flag != "--help":
            assert flag in doc, f"docs/check.md does not mention {flag}"
    assert "GITHUB_STEP_SUMMARY" in doc and "uses: actions/" in doc
    for key in kvplan_yaml.KVPLAN_KEYS:
        assert f"`{key}`" in doc, key


def test_the_header_names_vllms_rules_only_where_a_vllm_deployment_is_judged(cli):
    """The report's first line says which vLLM release judged deployments that pin none; a report of SGLang files
    only has no such deployment, so the line does not claim one."""
    code, out, _ = cli("check", "examples/deploy/sglang", "--gpu", "h100")
    assert code == 0 and out.splitlines()[0] == "kvplan check"
    code, out, _ = cli("check", "examples/deploy/sglang", "--gpu", "h100", "--format", "markdown")
    assert code == 0 and "judged by vLLM" not in out
    code, out, _ = cli("check", "examples/deploy/vllm/llama-8b.serve.yaml", "--gpu", "h100")
    assert out.splitlines()[0].startswith("kvplan check · vLLM deployments that pin no release judged by vLLM 0.")


def test_the_text_report_is_the_same_bytes_whatever_columns_says(cli, monkeypatch, tmp_path):
    # issue 26: COLUMNS narrowed the report on stdout in pipes and CI logs, though the same input must give the same
    # bytes; only an interactive terminal gets the table fitted to its width (tests/test_layout.py)
    target = DEPLOY / "prod"
    outputs = []
    for columns in ("30", "120", "300"):
        monkeypatch.setenv("COLUMNS", columns)
        code, out, _ = cli("check", target, *GPU)
        outputs.append(out)
    written = tmp_path / "report.txt"
    cli("check", target, *GPU, "-o", written)
    assert code == 1 and outputs[0] == outputs[1] == outputs[2] == written.read_text(encoding="utf-8")
    assert "status  deployment" in outputs[0]  # the table, not the narrow records
