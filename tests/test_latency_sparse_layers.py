"""The latency floor's cache bytes for the layers whose query does not read every byte they keep: DeepSeek-V4's
compressed layers read the window once (K = V is one tensor in transformers 5.24 modeling_deepseek_v4.py) and every
compressed entry (HCA), or the indexer's compressed key of every entry (CSA); MiniMax-M3's indexed layers read the
indexer's key of every token. The selected top-k entries are not in the spec, so they are left out (a floor stays a
floor). Checked against hand arithmetic from the models' config.json, step by step (a loop, not the closed form)."""

import json

import pytest

PROMPT, OUTPUT = 1000, 500
CONTEXT = PROMPT + OUTPUT - 1  # the last decode step's cached tokens


def _latency(cli, model: str) -> dict:
    code, out, err = cli("explain", model, "--seq", "2000", "--gpu", "h200", "--prompt", str(PROMPT),
                         "--output", str(OUTPUT), "--json")
    assert code == 0, err
    return json.loads(out)["latency"]


def _v4_read(c: int) -> int:
    """DeepSeek-V4-Flash (sgl-project/DeepSeek-V4-Flash-FP8 config.json), bf16 cache: head_dim 512, sliding_window
    128 (window - 1 = 127 tokens kept), index_head_dim 128; 2 window-only layers, 20 HCA (1 entry per 128 tokens),
    21 CSA (1 per 4)."""
    window = min(c, 127) * 512
    hca = window + (c // 128) * 512
    csa = window + (c // 4) * 128
    return 2 * (2 * window + 20 * hca + 21 * csa)


def _m3_read(c: int) -> int:
    """MiniMax-M3 (bf16): 3 full-attention layers read every token's K and V (4 KV heads x 128 x 2); 57 indexed layers
    read the indexer's key (index_head_dim 128) of every token."""
    return 2 * (3 * c * 4 * 128 * 2 + 57 * c * 128)


@pytest.mark.parametrize("model, read", [("deepseek-v4-flash-fp8", _v4_read), ("minimax-m3", _m3_read)])
def test_a_decode_step_reads_what_the_layers_query_reads(cli, model, read):
    lat = _latency(cli, model)
    assert lat["context"] == CONTEXT and lat["tp"] == 1
    assert lat["decode"]["bytes"] == lat["active_weights_bytes"] + read(CONTEXT)


@pytest.mark.parametrize("model, read", [("deepseek-v4-flash-fp8", _v4_read), ("minimax-m3", _m3_read)])
def test_a_generation_sums_every_decode_step(cli, model, read):
    lat = _latency(cli, model)
    # prefill (weights + the prompt's cache written), then OUTPUT - 1 decode steps at contexts PROMPT .. CONTEXT - 1
    steps = sum(read(c) for c in range(PROMPT, CONTEXT))
    assert lat["generate_cached"]["bytes"] == lat["prefill"]["bytes"] + (OUTPUT - 1) * lat["active_weights_bytes"] + steps


def test_a_model_whose_query_reads_its_whole_cache_is_unchanged(cli):
    # Llama 3.1 8B: 32 layers x 8 KV heads x 128 x (K and V) x 2 B = 131,072 B a token, all read every step
    lat = _latency(cli, "llama-3.1-8b")
    assert lat["decode"]["bytes"] == lat["active_weights_bytes"] + CONTEXT * 131_072
