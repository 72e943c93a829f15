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
    from rich.table import Table

    from kvplan.core.units import format_bytes

    from rich import box

    table = Table(title=f"{len(rows)} bundled model specs (KV per token in the model dtype)", title_justify="left",
                  header_style="bold", box=box.SIMPLE_HEAD)
    cells = [[r["name"], str(r["layers"]), str(r["attention_heads"]), str(r["kv_heads"]), str(r["head_dim"]), r["layout"],
              f"{r['params'] / 1e9:,.2f} bn", format_bytes(r["kv_bytes_per_token"]),
              f"{r['max_context']:,}" if r["max_context"] else "—"] for r in rows]
    for i, (col, justify) in enumerate((("name", "left"), ("layers", "right"), ("heads", "right"), ("kv", "right"), ("hd", "right"),
                                        ("layout", "left"), ("params", "right"), ("KV/token", "right"), ("max ctx", "right"))):
        # every column but the layout keeps its widest cell whole: a narrow terminal wraps the layout words
        widest = max([len(col)] + [len(c[i]) for c in cells])
        table.add_column(col, justify=justify, no_wrap=col != "layout", min_width=18 if col == "layout" else widest)
    for c in cells:
        table.add_row(*c)
    render.print_whole(render.console(), table)
