"""The composite GitHub Action (action.yml at the repository root): its check step's script, run with bash as the
runner runs it (inputs as environment variables), gates on kvplan's exit code and writes the format asked for."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the action's steps run in bash")


def step(step_id: str) -> dict:
    return next(s for s in ACTION["runs"]["steps"] if s.get("id") == step_id)


def run_check_step(tmp_path, **inputs):
    """The `check` step as the runner runs it: its script in bash, `python` the one kvplan is installed for."""
    env_map = step("check")["env"]
    values = {name: str(inputs.get(expr.split("inputs.")[1].strip(" }"), ACTION["inputs"][expr.split("inputs.")[1].strip(" }")]["default"]))
              for name, expr in env_map.items()}
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "python").symlink_to(sys.executable)  # the setup-python step's `python`
    github_output = tmp_path / "github_output"
    env = {**os.environ, **values, "GITHUB_OUTPUT": str(github_output), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
           "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(["bash", "-c", step("check")["run"]], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    return done, github_output.read_text()


def test_the_action_is_composite_and_passes_inputs_as_variables():
    assert ACTION["runs"]["using"] == "composite"
    check = step("check")
    assert "${{" not in check["run"]  # nothing of the inputs is pasted into the script
    assert set(ACTION["inputs"]) >= {"paths", "format", "output", "args"}
    assert ACTION["outputs"]["exit-code"]["value"] == "${{ steps.check.outputs.exit-code }}"


def test_the_step_fails_with_kvplans_exit_code_and_annotates_the_failing_line(tmp_path):
    done, output = run_check_step(tmp_path, paths="examples/deploy/prod\nexamples/deploy/staging", format="github",
                                  args="--gpu h100-sxm-80gb")
    assert done.returncode == 1, done.stderr  # code-72b-canary and the staging files fail
    assert output == "exit-code=1\n"
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error ")]
    canary = next(line for line in errors if "code-72b-canary" in line)
    # its document's max_model_len line (examples/deploy/prod/code-72b.yaml, second document)
    lines = (ROOT / "examples/deploy/prod/code-72b.yaml").read_text().splitlines()
    line = int(canary.split("line=")[1].split(",")[0])
    assert canary.startswith("::error file=examples/deploy/prod/code-72b.yaml,line=") and "max_model_len" in lines[line - 1]
    assert done.stdout.rstrip().endswith("(exit 1)")


def test_the_step_writes_sarif_to_the_output_file(tmp_path):
    report = tmp_path / "kvplan.sarif"
    done, output = run_check_step(tmp_path, paths="examples/deploy/prod", format="sarif", output=str(report),
                                  args="--gpu h100-sxm-80gb")
    assert done.returncode == 1 and output == "exit-code=1\n"
    sarif = json.loads(report.read_text())
    assert sarif["version"] == "2.1.0"
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "starts" and result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        "examples/deploy/prod/code-72b.yaml"


def test_a_path_with_shell_characters_stays_a_path(tmp_path):
    done, output = run_check_step(tmp_path, paths="examples/deploy/prod/$(touch pwned)", format="json")
    assert done.returncode == 2 and output == "exit-code=2\n"
    assert not (ROOT / "pwned").exists() and "no such file or folder" in done.stderr
