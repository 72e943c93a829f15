"""Adding a layer kind is one class plus one line per engine (issue 24).

Each engine maps layer kinds to its page or pool rule in one table (kvplan/engines/<engine>/specs.py). These tests
hold that to account from the outside:
- every kind of kvplan/core/layers.py is, on every engine, either in the engine's table or refused by name (exit 3);
- a kind defined here, one class (full, sliding, chunked, MLA or state attention's own under a new spelling), is
  refused by name on every engine until its table has a line for it; with that one line per engine (the rule of the
  kind it copies) every engine's outcome for a model whose layers of that kind are rebuilt as the new one is the
  outcome for the model as written: the estimate field for field, or the same refusal. Nothing else of an engine
  needs to learn the new spelling, and nothing else drops it (a comparison of the old spelling left anywhere on the
  path makes the two differ).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

from kvplan import engines
from kvplan.core import layers as kinds
from kvplan.core.errors import KvplanError, UnsupportedError
from kvplan.core.io import to_json
from kvplan.core.layers import CHUNKED, FULL, LAYER_KINDS, MLA, SLIDING, STATE, FullAttention
from kvplan.engines.sglang import specs as sglang_specs
from kvplan.engines.static import specs as static_specs
from kvplan.engines.trtllm import specs as trtllm_specs
from kvplan.engines.vllm import specs as vllm_specs

from engine_requests import engine_request

# engine -> its one table of kind -> rule
TABLES = {"static": static_specs.CACHE_RULES, "vllm": vllm_specs.PAGE_RULES, "sglang": sglang_specs.POOL_RULES,
          "trtllm": trtllm_specs.POOL_RULES}
MODEL = "llama-3.1-8b"  # 32 full-attention layers


def test_every_engine_has_a_table():
    assert set(TABLES) == set(engines.ENGINE_NAMES)
    for name, table in TABLES.items():
        assert set(table) <= set(LAYER_KINDS), name  # no line for a kind that does not exist


class FullAttentionV2(FullAttention):
    """A new kind for the test: full attention's rules under a spelling no engine has seen."""

    kind: ClassVar[str] = "full_v2"


# (a kind, a bundled model with layers of it, GPUs): the new kind copies the kind's class under a new spelling
CASES = [(FULL, "llama-3.1-8b", 1), (SLIDING, "gemma-3-4b", 1), (FULL, "gemma-3-4b", 1), (CHUNKED, "llama-4-scout", 8),
         (FULL, "llama-4-scout", 8), (MLA, "glm-4.7-flash", 1), (STATE, "jamba-1.5-mini", 2),
         (STATE, "qwen3-next-80b-a3b", 4), (FULL, "qwen3-next-80b-a3b", 4)]


def _new_kind(kind: str) -> type:
    """One class: the kind's own, under the spelling `<kind>_v2`."""
    base = kinds.KINDS[kind]
    return type(f"{base.__name__}V2", (base,), {"kind": f"{kind}_v2", "__annotations__": {"kind": ClassVar[str]}})


def _with_kind(spec, kind: str, cls):
    """The spec with each layer of `kind` rebuilt as `cls` (same fields)."""
    fields = [f.name for f in dataclasses.fields(kinds.LayerSpec)]
    rebuilt = tuple(cls(**{f: getattr(layer, f) for f in fields}) if layer.kind == kind else layer
                    for layer in spec.layer_specs)
    assert rebuilt != spec.layer_specs
    return dataclasses.replace(spec, layer_specs=rebuilt)


def _request(model_spec=None, tp: int = 1, **kw):
    return engine_request(model_spec or MODEL, 8192, gpu="h100", tp=tp, **kw)


def _refusal(name: str, req) -> UnsupportedError:
    with pytest.raises(UnsupportedError) as err:
        engines.get(name).estimate(req)
    return err.value


def _outcome(name: str, req) -> str:
    """The estimate as JSON, or the one line of the error it raises."""
    try:
        return to_json(engines.get(name).estimate(req))
    except KvplanError as err:
        return f"exit {err.exit_code}: {err.one_line()}"


@pytest.mark.parametrize("name", sorted(TABLES))
@pytest.mark.parametrize("kind", LAYER_KINDS)
def test_each_kind_is_mapped_or_refused_by_name(name, kind):
    """A kind an engine's table lacks is refused by name (exit 3) before anything of the engine reads the layer."""
    table = TABLES[name]
    if kind in table:
        return
    base = _request().spec
    layer = kinds.KINDS[kind]()  # empty fields: a refusal must come before any of them is read
    spec = dataclasses.replace(base, layer_specs=(layer,) + base.layer_specs[1:])
    err = _refusal(name, _request(spec))
    assert err.exit_code == 3 and repr(kind) in str(err), str(err)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_a_new_kind_is_refused_until_its_line_is_written(name):
    new = _with_kind(_request().spec, FULL, FullAttentionV2)
    err = _refusal(name, _request(new))
    assert err.exit_code == 3 and "'full_v2'" in str(err) and "FullAttentionV2" in str(err), str(err)


@pytest.mark.parametrize("name", sorted(TABLES))
@pytest.mark.parametrize("kind, model, tp", CASES)
def test_one_line_per_engine_maps_a_new_kind(name, kind, model, tp, monkeypatch):
    """The line an engine needs for a new kind that keeps what `kind` keeps: `kind`'s rule. With it, and nothing
    else, the outcome is the one for the model as written (the estimate field for field, or the same refusal)."""
    _one_line_maps(name, kind, _request(model, tp), monkeypatch)


# SGLang before 0.5.7 splits its pool between the full and the SWA layers by their counts (R4, swa_split)
@pytest.mark.parametrize("version", ["0.4.10", "0.5.4"])
@pytest.mark.parametrize("kind", [FULL, SLIDING])
def test_one_line_maps_a_new_kind_of_a_sliding_model_on_older_sglang(kind, version, monkeypatch):
    _one_line_maps("sglang", kind, _request("gemma-3-4b", engine_version=version), monkeypatch)


def _one_line_maps(name, kind, base, monkeypatch):
    cls = _new_kind(kind)
    new = dataclasses.replace(base, spec=_with_kind(base.spec, kind, cls))
    assert _outcome(name, new).startswith("exit 3: ")  # before its line: refused by name
    assert f"'{kind}_v2'" in _outcome(name, new)
    table = TABLES[name]
    monkeypatch.setitem(table, cls.kind, table[kind])
    assert _outcome(name, new) == _outcome(name, base)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_the_mapped_new_kind_reaches_a_verdict(name, monkeypatch):
    """The same with a verdict on both sides, not two identical refusals."""
    table = TABLES[name]
    monkeypatch.setitem(table, "full_v2", table[FULL])
    base = _request()
    got = engines.get(name).estimate(_request(_with_kind(base.spec, FULL, FullAttentionV2)))
    assert to_json(got) == to_json(engines.get(name).estimate(base))
    assert got.max_batch is not None and got.max_batch > 0
