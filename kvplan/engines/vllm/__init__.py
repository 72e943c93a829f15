"""vLLM (v1 engine): layout, budget, serve arguments, log reader and calibration."""

from kvplan.engines.vllm.engine import VllmEstimate, estimate, render_tables  # noqa: F401

__all__ = ["estimate", "VllmEstimate"]
