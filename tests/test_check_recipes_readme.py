"""vllm-project/recipes YAML and READMEs named on the command line, verbatim from tests/data/deployments_2026
(SOURCES.md). A recipe is a catalog of launches, not one: cannot judge, never misread as a vLLM --config (it was
'invalid: no serve option meta'); a strategy file starts nothing. A README's shell code blocks are launches."""

import json
from pathlib import Path

from kvplan.check.readers import readme

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "deployments_2026"


def check(cli, *paths, extra=()):
    code, out, _ = cli("check", *paths, "--offline", "--format", "json", *extra)
    return code, json.loads(out)["verdicts"]


def test_a_recipe_is_read_as_a_recipe(cli):
    code, (v,) = check(cli, CORPUS / "recipes" / "openai" / "gpt-oss-120b.yaml")
    assert code == 3 and v["format"] == "vllm-recipe" and v["status"] == "cannot_judge"
    assert "recipe for openai/gpt-oss-120b (variants: default, amd_fp8)" in v["reason"]
    code, (v,) = check(cli, CORPUS / "recipes" / "single_node_tp.yaml")
    assert code == 0 and v["status"] == "skipped" and "deployment strategy (single_node)" in v["reason"]


def test_every_recipe_of_the_corpus_is_recognised(cli):
    recipes = sorted((CORPUS / "recipes").glob("*/*.yaml"))
    code, got = check(cli, *recipes)
    assert len(got) == len(recipes) == 10
    assert all(v["format"] == "vllm-recipe" and "vllm-project/recipes recipe for" in v["reason"] for v in got)


def test_a_readme_s_shell_blocks_are_launches(cli):
    code, got = check(cli, CORPUS / "readme" / "minimax-m2-vllm_deploy_guide.md")
    assert code == 3 and [v["format"] for v in got] == ["readme"] * 3
    assert all("model 'MiniMaxAI/MiniMax-M2' is not bundled" in v["reason"] for v in got)
    text = "Intro\n\n```bash\n$ pip install vllm==0.19.0\n$ vllm serve meta-llama/Llama-3.1-8B-Instruct \\\n" \
           "    --max-model-len 8192\nINFO started\n```\n\n```python\nimport vllm\n```\n"
    assert readme.blocks(text)[0][:2] == (4, "bash")
    assert readme._unprompt(readme.blocks(text)[0][2]) == ("pip install vllm==0.19.0\nvllm serve "
                                                           "meta-llama/Llama-3.1-8B-Instruct \\\n    --max-model-len 8192")


def test_a_readme_launch_is_judged_with_the_gpu(cli, tmp_path):
    path = tmp_path / "README.md"
    path.write_text("# Serve\n\n```console\n$ vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192\n```\n")
    code, (v,) = check(cli, path, extra=("--gpu", "h100"))
    assert code == 0 and v["status"] == "pass" and v["max_model_len"] == 8192 and v["name"] == "README:4"
    path.write_text("# Nothing\n\n```bash\npip install kvplan\n```\n")
    code, (v,) = check(cli, path)
    assert code == 0 and v["status"] == "skipped"
