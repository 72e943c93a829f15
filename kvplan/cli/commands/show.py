"""`kvplan show MODEL`: the resolved spec as YAML that estimate accepts back."""

from __future__ import annotations

import sys

from kvplan.cli.edge import guarded
from kvplan.cli.options import ModelsDirOpt, OfflineOpt, with_model_lookup, JsonOpt, ModelArg


def register(app) -> None:
    app.command(name="show")(guarded(with_model_lookup(show)))


def show(model: ModelArg, json_out: JsonOpt = False, models_dir: ModelsDirOpt = None, offline: OfflineOpt = False):
    """The resolved spec as YAML that `kvplan estimate` accepts back (turn a config.json into a spec)."""
    from kvplan.model import catalog
    from kvplan.cli import render
    from kvplan.core import yamlio
    from kvplan.core.spec import spec_to_mapping

    spec = catalog.resolve_model(model)
    mapping = spec_to_mapping(spec)
    if json_out:
        print(render.to_json(mapping))
    else:
        sys.stdout.write(f"# kvplan spec for {spec.name}, resolved from {spec.source or 'bundled'}\n")
        sys.stdout.write(yamlio.dump_yaml(mapping))
