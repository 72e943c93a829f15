"""Spec validation: every bad input is one InputError naming the key, and the CLI exits 2 with one line."""

import pytest

from kvplan.core.errors import InputError
from kvplan.core.spec import spec_from_mapping, spec_to_mapping

BASE = {"name": "m", "layers": 4, "attention_heads": 8, "kv_heads": 2, "head_dim": 64, "dtype": "bf16", "params": 10**9}


def with_(**changes):
    data = dict(BASE)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


@pytest.mark.parametrize("changes,key,fragment", [
    ({"layres": 4}, "layres", "did you mean 'layers'"),
    ({"layers": "32"}, "layers", "whole number"),
    ({"layers": 0}, "layers", "at least 1"),
    ({"head_dim": -64}, "head_dim", "at least 1"),
    ({"kv_heads": 3}, "kv_heads", "not a multiple"),
    ({"layers": None}, "layers", "is required"),
    ({"params": True}, "params", "whole number"),
    ({"layers": 10**9}, "layers", "implausibly large"),
    ({"dtype": "bfloat17"}, "dtype", "unknown dtype"),
    ({"layout": {"per_layer": ["full", "full"]}}, "layout.per_layer", "has 2 entries but `layers` is 4"),
    ({"layout": {"pattern": ["full"] * 5}}, "layout.pattern", "5 entries"),
    ({"layout": {"default": "slidng"}}, "layout.default", "did you mean"),
    ({"layout": {"default": "sliding"}}, "layout", "sliding_window"),
    ({"layout": {"default": "mla"}}, "layout", "mla"),
    ({"layout": {"default": "chunked"}}, "layout", "attention_chunk_size"),
    ({"attention_chunk_size": 0}, "attention_chunk_size", "at least 1"),
    ({"tie_word_embeddings": "yes"}, "tie_word_embeddings", "true or false"),
    ({"layout": {"default": "state"}}, "layout", "state"),
    ({"layout": {"kv_heads": [2, 2, 3, 2]}}, "layout.kv_heads", "not a multiple"),
    ({"mla": {"kv_lora_rank": 512}}, "mla.qk_rope_head_dim", "required"),
    ({"state": {"conv_shape": [0, 3], "recurrent_shape": [4]}}, "state.conv_shape", "positive"),
    ({"aliases": [1, 2]}, "aliases", "list of names"),
    ({"active_params": 2 * 10**9}, "active_params", "exceeds"),
])
def test_bad_specs_name_the_key(changes, key, fragment):
    with pytest.raises(InputError) as err:
        spec_from_mapping(with_(**changes), source="my.yaml")
    line = err.value.one_line()
    assert line.startswith(f"my.yaml: {key}"), line
    assert fragment in line, line


def test_not_a_mapping():
    with pytest.raises(InputError, match="mapping"):
        spec_from_mapping(["a", "b"], source="x.yaml")


def test_runs_and_patterns_resolve_per_layer():
    spec = spec_from_mapping(with_(layers=6, sliding_window=1024, layout={"pattern": ["sliding*2", "full"]}))
    assert [l.kind for l in spec.layer_specs] == ["sliding", "sliding", "full"] * 2
    assert spec.layer_specs[0].window == 1024 and spec.layer_specs[2].window is None


def test_round_trip_is_exact():
    data = with_(layers=6, sliding_window=1024, layout={"per_layer": ["sliding*5", "none"], "kv_heads": ["2*5", 0]},
                 aliases=["org/m"], v_head_dim=32, max_context=4096)
    spec = spec_from_mapping(data)
    assert spec_from_mapping(spec_to_mapping(spec)) == spec
    assert spec.layer_specs[5].kind == "none"


def test_alias_spelling_of_kinds():
    spec = spec_from_mapping(with_(layers=2, sliding_window=8, layout={"per_layer": ["sliding_attention", "full_attention"]}))
    assert [l.kind for l in spec.layer_specs] == ["sliding", "full"]


BAD_FILES = {
    "malformed.yaml": "name: x\nlayers: [1, 2\n",
    "empty.yaml": "",
    "list.yaml": "- a\n- b\n",
    "alias_bomb.yaml": 'a: &a ["x","x"]\nb: &b [*a,*a]\nc: [*b,*b]\n',
    "tabs.yaml": "name: x\n\tlayers: 3\n",
    "unknown_key.yaml": "name: x\nlayers: 2\nattention_heads: 4\nhead_dim: 8\ndtype: bf16\nparams: 10\nkv_head: 2\n",
    "two_docs.yaml": "name: a\n---\nname: b\n",
    "binary.yaml": b"\xff\xfe\x00garbage",
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_files_exit_2_with_one_line(cli, tmp_path, name):
    path = tmp_path / name
    content = BAD_FILES[name]
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, out, err = cli("estimate", path, "--seq", "1K")
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0], err
    assert "Traceback" not in err and out == ""


def test_unknown_key_suggests_the_right_one(cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("name: x\nlayers: 2\nattention_heads: 4\nhead_dim: 8\ndtype: bf16\nparams: 10\nkv_head: 2\n")
    code, _, err = cli("estimate", path)
    assert code == 2 and "kv_head" in err and "did you mean 'kv_heads'" in err


def test_chunked_layers_resolve_with_the_chunk_as_their_window():
    spec = spec_from_mapping(with_(layers=8, attention_chunk_size=8192, sliding_window=512,
                                   layout={"pattern": ["chunked*3", "full"]}))
    assert [l.kind for l in spec.layer_specs] == ["chunked"] * 3 + ["full"] + ["chunked"] * 3 + ["full"]
    assert {l.window for l in spec.layer_specs if l.kind == "chunked"} == {8192}
    assert spec.layer_specs[3].window is None
    assert spec.layout_summary() == "2 full + 6 chunked(8192)"
    # a distinct kind, never folded into sliding, and `chunked_attention` (transformers' layer_types) is accepted
    alias = spec_from_mapping(with_(layers=2, attention_chunk_size=16, layout={"per_layer": ["chunked_attention", "full"]}))
    assert alias.layer_specs[0].kind == "chunked"
    assert spec_from_mapping(spec_to_mapping(spec)) == spec


@pytest.mark.parametrize("value", [True, False, None])
def test_tie_word_embeddings_round_trips(value):
    spec = spec_from_mapping(with_(tie_word_embeddings=value))
    assert spec.tie_word_embeddings is value
    mapping = spec_to_mapping(spec)
    assert ("tie_word_embeddings" in mapping) is (value is not None)
    assert spec_from_mapping(mapping) == spec
