"""The bundled model specs (model_specs/*.yaml): each loads, each equals what hf_config derives from its source
config.json today (so none can drift), their aliases resolve, and together they cover every layout."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from kvplan.model import catalog
from kvplan.core.spec import CHUNKED, FULL, MLA, NONE, SLIDING, STATE, spec_from_mapping

REPO = Path(__file__).resolve().parent.parent
SPEC_FILES = sorted((REPO / "model_specs").glob("*.yaml"))


def _make_specs():
    spec = importlib.util.spec_from_file_location("kvplan_make_specs", REPO / "scripts" / "make_specs.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


MAKE = _make_specs()


def test_enough_bundled_specs():
    assert len(SPEC_FILES) >= 24
    assert {p.stem for p in SPEC_FILES} == set(MAKE.MODELS)


@pytest.mark.parametrize("path", SPEC_FILES, ids=[p.stem for p in SPEC_FILES])
def test_bundled_spec_equals_its_config(path):
    bundled = catalog.bundled_spec(path.stem)
    assert bundled.name == path.stem
    # the file is byte for byte what the generator writes from the config today
    assert path.read_text(encoding="utf-8") == MAKE.render(path.stem), "run: python scripts/make_specs.py"
    assert bundled == spec_from_mapping(MAKE.derive(path.stem))
    # and its provenance names the config copy in the repository and where that copy came from
    config = re.search(r"tests/data/(?:(?:hf|extra)_configs(?:_2026)?/\S+\.json|vllm_models/\S+/config\.json)",
                       bundled.provenance).group(0)
    assert (REPO / config).is_file() and config == MAKE.MODELS[path.stem][0]
    if "/vllm_models/" in config:  # typed from the Hub file, and tied to a real vLLM run of that model or its variants
        assert "huggingface.co/" in bundled.provenance and "start-up log" in bundled.provenance
    else:
        assert "github.com/" in bundled.provenance or "synthetic" in bundled.provenance


def test_aliases_are_unique_and_resolve():
    seen: dict[str, str] = {}
    for spec in catalog.bundled_specs():
        assert spec.aliases, f"{spec.name} has no Hugging Face id"
        for alias in spec.aliases:
            assert alias not in seen, f"{alias} names both {seen[alias]} and {spec.name}"
            seen[alias] = spec.name
            assert catalog.resolve_model(alias).name == spec.name
    assert catalog.resolve_model("meta-llama/Llama-3.1-8B-Instruct").name == "llama-3.1-8b"


def test_layout_coverage():
    specs = catalog.bundled_specs()

    def has(pred):
        return [s.name for s in specs if pred(s)]

    attention = lambda s: [layer for layer in s.layer_specs if layer.kind in (FULL, SLIDING)]  # noqa: E731
    assert has(lambda s: attention(s) and all(layer.kv_heads == s.attention_heads for layer in attention(s)))  # MHA
    assert has(lambda s: attention(s) and all(1 < layer.kv_heads < s.attention_heads for layer in attention(s)))  # GQA
    assert has(lambda s: attention(s) and all(layer.kv_heads == 1 for layer in attention(s)))  # MQA
    assert has(lambda s: s.count(MLA))
    assert has(lambda s: s.count(SLIDING) == s.layers)  # sliding on every layer
    assert has(lambda s: s.count(SLIDING) and s.count(FULL))  # interleaved local/global
    assert has(lambda s: s.count(STATE) and (s.count(FULL) or s.count(SLIDING)))  # hybrid
    assert has(lambda s: s.count(STATE) == s.layers)  # pure state (Mamba)
    assert has(lambda s: s.count(NONE) and s.count(FULL) and not s.count(STATE))  # no-op attention blocks
    assert has(lambda s: s.active_params and s.active_params < s.params)  # MoE
    assert has(lambda s: s.vision_params)  # multimodal
    assert has(lambda s: s.count(CHUNKED) and s.count(FULL))  # chunked local + global (Llama 4)
    assert has(lambda s: s.tie_word_embeddings) and has(lambda s: s.tie_word_embeddings is False)


def test_generator_check_mode_agrees(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["make_specs.py", "--check"])
    assert MAKE.main() == 0


def test_schema_doc_examples_match_the_bundled_specs():
    """Every complete example in docs/spec-schema.md loads, and its values are those of the bundled spec."""
    import yaml

    text = (REPO / "docs" / "spec-schema.md").read_text(encoding="utf-8")
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, flags=re.S)]
    complete = [b for b in blocks if isinstance(b, dict) and "name" in b]
    assert len(complete) >= 4
    for block in complete:
        spec_from_mapping(block)
        bundled = MAKE.derive(block["name"])
        for key, value in block.items():
            if key != "weights_source":
                assert bundled[key] == value or (key == "aliases" and set(value) <= set(bundled[key])), (block["name"], key)
    # every key the schema accepts is documented
    from kvplan.core import spec as spec_module

    for key in spec_module._TOP_KEYS | {f"layout.{k}" for k in spec_module._LAYOUT_KEYS} | \
            {f"moe.{k}" for k in spec_module._MOE_KEYS} | {f"mtp.{k}" for k in spec_module._MTP_KEYS} | \
            {f"mla.{k}" for k in spec_module._MLA_KEYS} | {f"state.{k}" for k in spec_module._STATE_KEYS}:
        assert f"`{key}`" in text, key


def test_the_alias_lookup_reads_what_the_spec_holds():
    """find_bundled matches aliases read from each file's `aliases:` line without building the spec
    (kvplan/model/bundled.py _aliases): the same aliases, in order, as the built spec's, for every bundled file."""
    from kvplan.model import bundled

    for name in bundled.bundled_spec_files():
        assert bundled.file_aliases(name) == tuple(bundled.bundled_spec(name).aliases), name


def test_the_alias_index_says_what_every_file_says():
    """model_specs/aliases.txt (scripts/make_specs.py writes it) names every bundled file, with the aliases the
    built spec holds, in order: find_bundled reads it instead of the files, so a stale index would answer for a
    file that no longer says so."""
    from kvplan.model import bundled

    index = bundled.alias_index()
    assert set(index) == set(bundled.bundled_spec_files())
    for name in index:
        assert index[name] == tuple(bundled.bundled_spec(name).aliases), name
