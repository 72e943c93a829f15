"""YAML as the engines read it (kvplan/core/yamlio.py): anchors, aliases and merge keys, several documents, and
the two refusals: alias bombs and repeated keys."""

import re
from pathlib import Path

import pytest
import yaml

from kvplan.core import yamlio
from kvplan.core.errors import InputError

CORPUS = Path(__file__).parent / "data" / "deployments"


def load(text: str):
    return yamlio.load_yaml_text(text, where="f.yaml")


def test_anchors_aliases_and_merge_keys_as_pyyaml_reads_them():
    text = "base: &b {image: vllm/vllm-openai:v0.19.0, env: {A: '1'}}\nsvc:\n  <<: *b\n  env: {B: '2'}\nother: *b\n"
    assert load(text) == [yaml.safe_load(text)]  # vLLM, SGLang and TensorRT-LLM read their YAML with safe_load
    assert load(text)[0]["svc"] == {"image": "vllm/vllm-openai:v0.19.0", "env": {"B": "2"}}


def test_real_compose_files_with_anchors_load():
    # x-common-environment: &common-env with `<<: *common-env` merges (OPEA), x-logging: &default-logging
    for name in ("compose/opea-deepresearch-gaudi-anchors.yaml", "compose/vllm-serve-multi-gemma4-ornith-specdec.yml"):
        path = CORPUS / name
        assert yamlio.load_yaml_documents(path) == [yaml.safe_load(path.read_text(encoding="utf-8"))]
    doc = yamlio.load_yaml_documents(CORPUS / "compose/opea-deepresearch-gaudi-anchors.yaml")[0]
    assert doc["services"]["vllm-service"]["environment"]["no_proxy"] == "${no_proxy}"  # merged; ${VAR} left as text


def test_multi_document_manifests():
    docs = yamlio.load_yaml_documents(CORPUS / "k8s/gke-adk-llama31-8b-l4-configmap.yaml")
    assert [d["kind"] for d in docs] == ["Deployment", "Service", "ConfigMap"]


def test_an_alias_bomb_is_refused_before_it_expands():
    levels = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'] + [
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 10) + "]" for i in range(7)]
    with pytest.raises(InputError) as err:
        load("\n".join(levels) + "\n")
    # 10**8 leaves from 80-odd nodes; refused with the counts, nothing built
    assert "expand" in err.value.what and "limit" in err.value.what and err.value.where == "f.yaml"


def test_a_few_aliases_are_fine():
    docs = load('a: &a ["x","x"]\nb: &b [*a,*a]\nc: [*b,*b]\n')
    assert docs[0]["c"] == [[["x", "x"]] * 2] * 2


def test_a_recursive_alias_is_refused():
    with pytest.raises(InputError, match="contains it"):
        load("a: &a [1, *a]\n")


@pytest.mark.parametrize("text, key, lines", [
    ("model: a\nport: 1\nmodel: b\n", "'model'", "1 and 3"),
    ("services:\n  vllm:\n    image: x\n    image: y\n", "'image'", "3 and 4"),
])
def test_repeated_keys_are_refused_naming_the_key(text, key, lines):
    assert yaml.safe_load(text)  # PyYAML (vLLM's loader) would keep the last one silently
    with pytest.raises(InputError) as err:
        load(text)
    assert key in err.value.what and lines in err.value.what


def test_a_merge_may_be_overridden_and_distinct_types_are_distinct_keys():
    assert load("a: &a {x: 1}\nb:\n  <<: *a\n  x: 2\n")[0]["b"] == {"x": 2}
    assert load("1: a\n'1': b\n")[0] == {1: "a", "1": "b"}


def test_malformed_yaml_names_line_and_column():
    with pytest.raises(InputError) as err:
        load("a: [1, 2\nb: 3\n")
    assert err.value.what.startswith("malformed YAML at line")


@pytest.mark.skipif(not getattr(yaml, "__with_libyaml__", False), reason="needs PyYAML's C parser")
@pytest.mark.parametrize("text", [
    "[" * 5000,  # libyaml 0.2.5 stops at 1000 levels; an older libyaml reads to the end and finds no node
    "a: [" + "{x: [1]}, " * 3000 + "\nb: [1, 2\n",  # a bracket left open at the end  # 30 KB, one level deep: the pure-Python parser is linear, 2 s here
])
def test_a_large_or_deep_malformed_text_keeps_the_c_parsers_wording(monkeypatch, text):
    # PyYAML's pure-Python parser would reword these more plainly, at seconds of CPU for a fuzzer's or a careless
    # user's input; the C parser's error already names the line and column
    def pure_parser_called(*args, **kwargs):
        raise AssertionError("the pure-Python parser was run on a large or deeply nested text")

    monkeypatch.setattr(yaml, "compose_all", pure_parser_called)
    with pytest.raises(InputError) as err:
        yamlio.load_yaml_text(text, where="big.yaml")
    assert re.search(r"malformed YAML at line \d+, column \d+: ", err.value.what)


def test_a_small_malformed_file_gets_the_plainer_wording():
    # the pure-Python parser names the character libyaml leaves out
    with pytest.raises(InputError) as err:
        yamlio.load_yaml_text("\tx: 1\n", where="tab.yaml")
    assert "found character '\\t' that cannot start any token" in err.value.what
