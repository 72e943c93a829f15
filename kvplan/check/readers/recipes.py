"""vllm-project/recipes YAML. A model recipe (`meta:` + `model: {model_id}` + `variants:`) is a catalog: the site
assembles one `vllm serve` command from a variant (a checkpoint and precision), a strategy (single-node TP, multi-node
TP/PP, expert parallel: the strategies' own files), the hardware chosen and opt-in features. The file alone is no
launch, so a recipe is cannot judge, naming the model and the variants it holds; the assembled command is judged
with --vllm-args. A strategy file (`deploy_type:`) starts nothing: skipped."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from kvplan.check.items import Failure, Skip
from kvplan.check.report import FORMAT_RECIPES
from kvplan.core.errors import UnsupportedError
from kvplan.check.readers import claims as formats

# the format test, apart from the reader (readers/claims.py), still answers here
claims = formats.recipes


def read(doc: Mapping, *, source: str, document: int | None, where: str, base_dir: Path) -> list:
    name = str(doc.get("name") or Path(source).stem)
    if "deploy_type" in doc:
        return [Skip(source, document, name, FORMAT_RECIPES, f"a vllm-project/recipes deployment strategy "
                     f"({doc.get('deploy_type')}): how a recipe's command is laid out on GPUs, no model and no launch")]
    model = doc["model"]["model_id"]
    variants = doc.get("variants") if isinstance(doc.get("variants"), Mapping) else {}
    shown = ", ".join(str(v) for v in list(variants)[:6]) + (", ..." if len(variants) > 6 else "")
    return [Failure(source, document, str(model), FORMAT_RECIPES, UnsupportedError(
        f"a vllm-project/recipes recipe for {model}" + (f" (variants: {shown})" if shown else "")
        + ": its vllm serve command is assembled from a variant, a strategy and the hardware, not written in the file",
        where=f"{where}: model.model_id",
        hint="judge the command the recipe gives for your GPUs: kvplan check --vllm-args \"serve ...\""))]
