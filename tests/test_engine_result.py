"""The result every paged engine returns: the `estimate --json` contract keys (docs/json.md) declared once (kvplan/engines/result.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kvplan.core import dtypes
from kvplan.model.catalog import resolve_model
from kvplan import engines
from kvplan.engines import EngineRequest
from kvplan.engines.pool import EngineEstimate
from kvplan.engines.api import Hardware
from kvplan.engines.static import Estimate

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
GIB = 2**30
# docs/json.md, `kvplan estimate --json`: the stable keys
CONTRACT = ("model", "engine", "seq", "batch", "kv_dtype", "dtype", "kv_bytes_per_token", "kv_bytes", "state_bytes",
            "cache_bytes", "params", "weights_bytes", "per_gpu", "fits", "max_batch", "max_seq")


def _req(**kw) -> EngineRequest:
    spec = resolve_model(str(CONFIGS / "llama-3.1-8b.json"))
    args = dict(spec=spec, seq=8192, batch=2, kv_dtype="auto", weight_fmt=None,
                hardware=Hardware(None, 80 * GIB))
    args.update(kw)
    return EngineRequest(**args)


def test_contract_keys_are_declared_once_for_the_paged_engines_and_in_plan():
    names = [f.name for f in dataclasses.fields(EngineEstimate)]
    assert set(CONTRACT) <= set(names)
    assert set(CONTRACT) <= {f.name for f in dataclasses.fields(Estimate)}


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_every_paged_engine_result_extends_the_base(engine):
    result = engines.get(engine).estimate(_req())
    assert isinstance(result, EngineEstimate) and result.engine == engine
    data = dataclasses.asdict(result)
    assert set(CONTRACT) <= set(data)
    base = [f.name for f in dataclasses.fields(EngineEstimate)]
    assert [f.name for f in dataclasses.fields(result)][:len(base)] == base  # the base's keys first, in its order
    # request-derived terms
    assert (result.seq, result.batch, result.kv_dtype, result.tp, result.pp, result.gpus) == (8192, 2, "bf16", 1, 1, 1)
    assert result.kv_bytes_per_token == 32 * 2 * 8 * 128 * 2  # Llama-3.1-8B: 32 layers, K+V, 8 heads x 128, bf16
    # fits = starts and serves_batch
    assert result.fits == bool(result.starts and result.serves_batch)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_fits_is_null_without_a_gpu(engine):
    result = engines.get(engine).estimate(_req(hardware=None))
    assert result.fits is None and result.starts is None and result.budget_source == "none"
