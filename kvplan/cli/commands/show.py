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
    from kvplan.core.text import visible

    spec = catalog.resolve_model(model)
    mapping = spec_to_mapping(spec)
    if json_out:
        print(render.to_json(mapping))
    else:
        # a comment line: a newline in a folder or file name would end it and start a YAML key (visible escapes it)
        sys.stdout.write(f"# kvplan spec for {visible(spec.name)}, resolved from {visible(spec.source or 'bundled')}\n")
        sys.stdout.write(yamlio.dump_yaml(mapping))
