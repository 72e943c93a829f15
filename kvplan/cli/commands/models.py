"""`kvplan models`: the bundled model specs."""

from __future__ import annotations

from kvplan.cli.edge import guarded
from kvplan.cli.options import JsonOpt


def register(app) -> None:
    app.command(name="models")(guarded(models))


def models(json_out: JsonOpt = False):
    """The bundled model specs: layers, KV heads, head dim, layout, parameters."""
    from kvplan.api.catalog import models as bundled
    from kvplan.cli import render

    listing = bundled()
    if json_out:
        print(render.to_json(listing))
        return
    from kvplan.core.units import format_bytes

    rows = listing.models
    cells = [[r.name, str(r.layers), str(r.attention_heads), str(r.kv_heads), str(r.head_dim), r.layout,
              f"{r.params / 1e9:,.2f} bn", format_bytes(r.kv_bytes_per_token),
              f"{r.max_context:,}" if r.max_context else "—"] for r in rows]
    # every figure and the name (which users type) keep their width; the layout words wrap; below the table's
    # narrowest form each model is a record (render.print_table)
    render.print_table(render.console(), f"{len(rows)} bundled model specs (KV per token in the model dtype)",
                       ["name", "layers", "heads", "kv", "hd", "layout", "params", "KV/token", "max ctx"], cells,
                       text=(5,), names=(0,), keys=(0,), simple=True)
