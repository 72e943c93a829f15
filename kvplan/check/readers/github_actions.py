"""GitHub Actions workflows (.github/workflows/*.yml): a job's `run:` steps are shell scripts (bash on Linux runners,
https://docs.github.com/actions/reference/workflow-syntax-for-github-actions#jobsjob_idstepsrun), and a step that
starts vLLM, SGLang or TensorRT-LLM (or a server kvplan does not model) is a deployment. Its environment is the
workflow's, the job's and the step's `env:` in that order. A `${{ env.NAME }}` expression is the variable NAME; any
other expression (`${{ matrix.model }}`, `${{ secrets.X }}`, `${{ inputs.model }}`) is known only when the workflow
runs: set outside the file. A step that `uses:` an action with a `model` input starts a server in that action's
code: cannot judge, naming it. A composite action's action.yml (`runs.steps`) is read the same way. A workflow names no GPU (runners are labels of the site's own choosing): --gpu gives it.

YAML 1.1 reads the `on:` key as the boolean true; a workflow is recognised by `jobs:` beside `on:` (either
spelling), so it is never taken for kvplan's own format."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from kvplan.check import launch
from kvplan.check.items import Failure, Skip, Workload, runs_engine
from kvplan.check.report import FORMAT_GITHUB_ACTIONS
from kvplan.core.errors import UnsupportedError
from kvplan.check.readers import claims as formats

# the format test, apart from the reader (readers/claims.py), still answers here
claims = formats.github_actions

_MODEL_INPUTS = {"model", "model_id", "model-id", "model_name", "model-name", "model_path", "model-path"}
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}", re.S)


def _env(block: Any) -> dict[str, str | None]:
    if not isinstance(block, Mapping):
        return {}
    out: dict[str, str | None] = {}
    for name, value in block.items():
        text = None if value is None else ("true" if value is True else "false" if value is False else str(value))
        out[str(name)] = None if text is None or _EXPRESSION.search(text) else text
    return out


def _script(text: str) -> str:
    """`${{ env.NAME }}` -> ${NAME}; any other expression -> a variable that is never set (named after it)."""
    def sub(m: re.Match) -> str:
        expr = m.group(1)
        env = re.fullmatch(r"env\.([A-Za-z_][A-Za-z0-9_]*)", expr)
        if env:
            return "${" + env.group(1) + "}"
        return "${GITHUB_EXPRESSION_" + re.sub(r"\W+", "_", expr).strip("_") + "}"
    return _EXPRESSION.sub(sub, text)


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    items: list = []
    workflow_env = _env(doc.get("env"))  # a composite action's `${{ inputs.X }}` is its caller's: set outside the file
    jobs = doc["jobs"] if isinstance(doc.get("jobs"), Mapping) else {"runs": doc["runs"]}  # a composite action: one job
    for job_id, job in jobs.items():
        if not isinstance(job, Mapping):
            continue
        job_env = {**workflow_env, **_env(job.get("env"))}
        steps = [s for s in job.get("steps") or [] if isinstance(s, Mapping) and isinstance(s.get("run"), str)]
        # a `pip install engine==X` in any step of the job pins the release its launch steps run
        pins = tuple(p for p in [launch.pip_release("\n".join(s["run"] for s in steps))] if p)
        for index, step in enumerate(job.get("steps") or []):
            at = f"{where}: jobs.{job_id}.steps[{index}]"
            with_ = step.get("with") if isinstance(step, Mapping) and isinstance(step.get("with"), Mapping) else {}
            if isinstance(step, Mapping) and step.get("uses") and any(str(k).lower() in _MODEL_INPUTS for k in with_):
                # an action handed a model starts a server of its own: never passed over, never guessed at
                model = next(v for k, v in with_.items() if str(k).lower() in _MODEL_INPUTS)
                items.append(Failure(source, document, f"{job_id}/{step.get('name') or step['uses']}",
                                     FORMAT_GITHUB_ACTIONS, UnsupportedError(
                                         f"the step uses {step['uses']} with model {model}: the server that action starts "
                                         "is in its own code, which kvplan does not read", where=f"{at}.uses",
                                         hint="judge the engine command line the action runs instead")))
                continue
            if not isinstance(step, Mapping) or not isinstance(step.get("run"), str):
                continue
            script = _script(step["run"])
            name = f"{job_id}/{step.get('name') or step.get('id') or index}"
            workload = Workload(source=source, document=document, name=str(name), fmt=FORMAT_GITHUB_ACTIONS,
                                where=f"{where}: jobs.{job_id}.steps[{index}].run", base_dir=base_dir, script=script,
                                env={**job_env, **_env(step.get("env"))},
                                pins=pins)
            if runs_engine(workload):
                items.append(workload)
    if not items:
        return [Skip(source, document, Path(source).stem, FORMAT_GITHUB_ACTIONS,
                     "a GitHub Actions workflow whose steps start no LLM server")]
    return items
