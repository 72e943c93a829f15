"""`kvplan gpus`: the GPU catalog."""

from __future__ import annotations

from kvplan.cli.edge import guarded
from kvplan.cli.options import JsonOpt


def register(app) -> None:
    app.command(name="gpus")(guarded(gpus))


def gpus(json_out: JsonOpt = False):
    """The GPU catalog, with the memory the runtime reports (not the marketing figure)."""
    from kvplan.api.catalog import gpus as catalog
    from kvplan.cli import render

    listing = catalog()
    entries = listing.gpus
    if json_out:
        print(render.to_json(listing))
        return
    from kvplan.core.units import format_bytes

    # a GPU without a public reading of its total is listed, refused when used (docs/gpus.md)
    rows = [[g.name, g.marketing_memory, "no reading" if g.capacity_bytes is None else format_bytes(g.capacity_bytes),
             "—" if g.capacity_bytes is None else f"{g.capacity_bytes:,}",
             f"{g.hbm_bandwidth_bytes_per_s / 1e12:.2f}" if g.hbm_bandwidth_bytes_per_s else "—",
             f"{g.bf16_dense_flops / 1e12:.0f}" if g.bf16_dense_flops else "—"] for g in entries]
    # the name is what --gpu takes and the bytes are exact: never cut (at 80 columns rich printed 'v100-sxm2-…')
    render.print_table(render.console(), f"{len(entries)} GPUs (capacity as the runtime reports it)",
                       ["name", "marketed", "capacity", "bytes", "HBM TB/s", "bf16 TFLOP/s"], rows, text=(), names=(0,))
    # WSL2 reports a card's whole memory (catalog.WSL_SUFFIXES): say how to ask for that reading
    render.console().print("under WSL2: NAME@wsl (the capacity is nvidia-smi's total; docs/gpus.md)", highlight=False)
