"""SGLang: the token pool its model runner sizes."""

from kvplan.engines.sglang.engine import SglangEstimate, _pp_counts, default_mem_fraction, estimate, render_tables  # noqa: F401

__all__ = ["estimate", "SglangEstimate", "default_mem_fraction"]
