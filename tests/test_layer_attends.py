"""A layer kind says itself whether it runs attention over the query heads that tensor parallelism splits
(LayerSpec.attends), so the check "TP must divide the attention heads" (vLLM config/model.py
verify_with_parallel_config; every engine splits heads this way) covers kinds added after it was written. It listed
full, sliding, chunked and mla by hand, and missed the DSA (mla_indexed), MiniMax-M3 (full_indexed) and
DeepSeek-V4 (compressed) layers."""

from __future__ import annotations

from kvplan.core import layers


def _kinds():
    # the registry, not LayerSpec.__subclasses__(): other tests make throwaway kinds (tests/test_kind_tables.py)
    # that live on as subclasses for the rest of the process
    return layers.KINDS.values()


def test_every_attention_kind_attends_and_no_state_or_empty_layer_does():
    by_kind = {cls.kind: cls.attends for cls in _kinds()}
    assert {k for k, attends in by_kind.items() if not attends} == {layers.STATE, layers.NONE}, by_kind
    assert by_kind[layers.INDEXED_MLA] and by_kind[layers.INDEXED_FULL] and by_kind[layers.COMPRESSED]


def test_a_tp_that_does_not_divide_a_dsa_models_heads_is_invalid(cli, tmp_path):
    # GLM-5 (bundled; 64 attention heads, every layer MLA with DSA's indexer): TP 3 is refused by vLLM at start.
    # Before, check said "cannot judge" (the mla_indexed kind is not mapped) instead of naming the wrong TP
    path = tmp_path / "dep.yaml"
    path.write_text("name: glm5\nmodel: glm-5\nengine: vllm\ngpu: h200\ntensor_parallel_size: 3\nmax_model_len: 8192\n")
    code, out, err = cli("check", path, "--offline")
    assert code == 2, out + err
    assert "tensor parallel size 3 does not divide the model's 64 attention heads" in out
