"""`kvplan models`: the bundled model specs."""

from __future__ import annotations

from kvplan.cli.edge import guarded
from kvplan.cli.options import JsonOpt


def register(app) -> None:
    app.command(name="models")(guarded(models))


def models(json_out: JsonOpt = False):
    """The bundled model specs: layers, KV heads, head dim, layout, parameters."""
    from kvplan.model import catalog
    from kvplan.cli import render
    from kvplan.core.cache import CacheModel
    from kvplan.core.dtypes import dtype as lookup

    rows = []
    for spec in catalog.bundled_specs():
        per_token = CacheModel(spec, lookup(spec.dtype)).kv_bytes_per_token
        rows.append({"name": spec.name, "aliases": list(spec.aliases), "architecture": spec.architecture,
                     "layers": spec.layers, "attention_heads": spec.attention_heads, "kv_heads": spec.kv_heads,
                     "head_dim": spec.head_dim, "layout": spec.layout_summary(), "dtype": spec.dtype, "params": spec.params,
                     "max_context": spec.max_context, "kv_bytes_per_token": per_token})
    if json_out:
        print(render.to_json({"models": rows}))
        return
    from kvplan.core.units import format_bytes

    cells = [[r["name"], str(r["layers"]), str(r["attention_heads"]), str(r["kv_heads"]), str(r["head_dim"]), r["layout"],
              f"{r['params'] / 1e9:,.2f} bn", format_bytes(r["kv_bytes_per_token"]),
              f"{r['max_context']:,}" if r["max_context"] else "—"] for r in rows]
    # every figure and the name (which users type) keep their width; the layout words wrap; below the table's
    # narrowest form each model is a record (render.print_table)
    render.print_table(render.console(), f"{len(rows)} bundled model specs (KV per token in the model dtype)",
                       ["name", "layers", "heads", "kv", "hd", "layout", "params", "KV/token", "max ctx"], cells,
                       text=(5,), names=(0,), keys=(0,), simple=True)
