"""Quantized checkpoints' weight bytes against their safetensors headers (tests/data/checkpoint_headers).

Each report there lists every tensor of a public AWQ, FP8, MXFP4 or int4 checkpoint with its shape and dtype as the
safetensors headers give them; the sum of count x elements x dtype size is the checkpoint's exact bytes (what
`model.safetensors.index.json` stores as metadata.total_size). kvplan sizes the same checkpoints from config.json
alone (kvplan/model/weights.py quantized_weight_bytes); the engines then split that over tensor parallelism
(kvplan/engines/runtime/weights.py stage_weight_bytes). Both are checked here against the headers, by hand.

Measured (kvplan / headers - 1): Llama-2-7B-AWQ and Qwen3-32B-AWQ 0, gpt-oss-20b (MXFP4) 0, Kimi-K2-Instruct
-0.00001%, DeepSeek-V3.1 -0.00001% (its MTP layer excluded, as the engines skip it), MiniMax-M2.7 -0.04% (its
router kept in float32 where kvplan counts 16 bits), Qwen3-8B-FP8 and Qwen3-30B-A3B-FP8 +0.01% (their block scales
in bf16 where kvplan counts float32). The issue asks 2%; 0.5% is asserted so that a lost term shows.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from kvplan.core.dtypes import dtype
from kvplan.engines.runtime.weights import stage_weight_bytes
from kvplan.model.catalog import resolve_model

DATA = Path(__file__).parent / "data"
HEADERS = DATA / "checkpoint_headers"
GIB = 2**30

# bytes per element of the torch dtypes the reports print
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float8_e4m3fn": 1, "int32": 4, "uint8": 1}
ROW = re.compile(r"^\| `(?P<name>[^`]+)`(?: \((?P<times>[^)]*)\))? \| `\[(?P<shape>[0-9, ]*)\]` \| `torch\.(?P<dtype>\w+)` \|")

# report -> the model's config.json in the corpus (SOURCES.md says where each came from); None: the report's own
# config block (transformers' print of the checkpoint's config.json)
CHECKPOINTS = {
    "llama_2_7b_awq.md": None,
    "qwen3_32b_awq.md": None,
    "qwen3_8b_fp8.md": None,
    "qwen3_30b_a3b_thinking_2507_fp8.md": DATA / "hf_configs_2026" / "Qwen--Qwen3-30B-A3B-FP8.json",
    "deepseek_v3.1.md": DATA / "hf_configs_2026" / "deepseek-ai--DeepSeek-V3.1.json",
    "kimi_k2_instruct.md": DATA / "hf_configs_2026" / "moonshotai--Kimi-K2-Instruct.json",
    "minimax_m2.7.md": DATA / "hf_configs_2026" / "MiniMaxAI--MiniMax-M2.7.json",
    "gpt_oss_20b.md": DATA / "hf_configs" / "gpt-oss-20b.json",
}


def _rows(text: str) -> list[tuple[str, int, int, int]]:
    """(name, tensors the row stands for, elements of one, bytes per element) of each table row."""
    rows = []
    for line in text.splitlines():
        m = ROW.match(line)
        if m is None:
            continue
        count = 1
        for n in re.findall(r"×(\d+)", m["times"] or ""):
            count *= int(n)
        numel = 1
        for d in m["shape"].split(",") if m["shape"].strip() else []:
            numel *= int(d)
        rows.append((m["name"], count, numel, DTYPE_BYTES[m["dtype"]]))
    return rows


def _stated(text: str, key: str) -> str:
    return re.search(rf"\*\*{key}\*\*: ([0-9.,]+)", text).group(1)


def _layer_share(name: str, layers: int) -> Fraction:
    """The share of a merged row that lies in the first `layers` decoder layers: layers past num_hidden_layers are
    multi-token-prediction layers, which vLLM, SGLang and TensorRT-LLM skip when loading for plain serving (vLLM
    models/deepseek_v2.py load_weights: get_spec_layer_idx_from_weight_name)."""
    m = re.search(r"layers\.(\d+)(?:-(\d+))?\.", name)
    if m is None:
        return Fraction(1)
    first, last = int(m[1]), int(m[2] or m[1])
    return Fraction(len([i for i in range(first, last + 1) if i < layers]), last - first + 1)


def _loaded_bytes(text: str, layers: int, *, only: str = "") -> int:
    total = Fraction(0)
    for name, count, numel, size in _rows(text):
        if only in name:
            total += count * numel * size * _layer_share(name, layers)
    assert total.denominator == 1
    return int(total)


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    """report -> (kvplan's spec, the config as a dict), each resolved once for the module."""
    cache: dict = {}

    def get(report: str):
        if report not in cache:
            cache[report] = _spec(report, tmp_path_factory.mktemp("config"))
        return cache[report]

    return get


def _spec(report: str, folder: Path):
    """kvplan's spec of the checkpoint and its config as a dict."""
    config = CHECKPOINTS[report]
    if config is None:  # the report's config block: "Qwen3Config { ... }", written to a config.json of its own
        text = (HEADERS / report).read_text(encoding="utf-8")
        config = folder / "config.json"
        config.write_text(re.search(r"```\n\w+Config (\{.*?\n\})\n", text, re.S).group(1))
    return resolve_model(str(config)), json.loads(config.read_text())


@pytest.mark.parametrize("report", sorted(p.name for p in HEADERS.glob("*.md") if p.name != "SOURCES.md"))
def test_each_report_adds_up_to_its_own_totals(report):
    """The table, summed by this file, gives the report's own counts: the copy is whole and the reading right."""
    text = (HEADERS / report).read_text(encoding="utf-8")
    rows = _rows(text)
    assert sum(c for _, c, _, _ in rows) == int(_stated(text, "权重张量数").replace(",", ""))
    assert sum(c * n for _, c, n, _ in rows) == int(_stated(text, "参数总量").replace(",", ""))
    assert f"{sum(c * n * s for _, c, n, s in rows) / GIB:.2f}" == _stated(text, "张量累计大小")


@pytest.mark.parametrize("report", CHECKPOINTS)
def test_checkpoint_bytes_from_config_match_the_headers(report, specs):
    spec, raw = specs(report)
    layers = (raw.get("text_config") or raw)["num_hidden_layers"]
    headers = _loaded_bytes((HEADERS / report).read_text(encoding="utf-8"), layers)
    assert spec.weights_bytes is not None, spec.notes
    assert abs(spec.weights_bytes - headers) <= headers * 0.005, (spec.weights_bytes, headers)


@pytest.mark.parametrize("report", CHECKPOINTS)
@pytest.mark.parametrize("tp", [2, 4, 8])
def test_one_gpu_holds_its_share_as_the_engines_split_it(report, tp, specs):
    """Tensor parallelism splits every matrix, the embedding and the head over the ranks, except multi-head latent
    attention's a-projections (q_a_proj, kv_a_proj_with_mqa), which each rank keeps whole (vLLM deepseek_v2.py
    fused_qkv_a_proj disable_tp / ReplicatedLinear; SGLang deepseek_v2.py ReplicatedLinear). By hand from the
    headers: (loaded - whole) / tp + whole; kvplan adds the rotary cache, norms are tiny: within 2%."""
    spec, raw = specs(report)
    text = (HEADERS / report).read_text(encoding="utf-8")
    layers = (raw.get("text_config") or raw)["num_hidden_layers"]
    loaded = _loaded_bytes(text, layers)
    whole = _loaded_bytes(text, layers, only="q_a_proj.") + _loaded_bytes(text, layers, only="kv_a_proj_with_mqa.")
    by_hand = (loaded - whole) / tp + whole
    (per_gpu,) = stage_weight_bytes(spec, None, dtype(spec.dtype), tp, 1)
    assert abs(per_gpu - by_hand) <= by_hand * 0.02, (per_gpu, by_hand)


def test_the_mla_checkpoints_keep_a_projections_whole(specs):
    """The replicated part is not empty where the model has MLA (the test above would pass a plain even split)."""
    spec, _ = specs("deepseek_v3.1.md")
    text = (HEADERS / "deepseek_v3.1.md").read_text(encoding="utf-8")
    whole = _loaded_bytes(text, 61, only="q_a_proj.") + _loaded_bytes(text, 61, only="kv_a_proj_with_mqa.")
    assert whole == 61 * (1536 * 7168 + 12 * 56 * 4 + 576 * 7168 + 5 * 56 * 4)  # fp8 weights, float32 block scales
    (per_gpu,) = stage_weight_bytes(spec, None, dtype(spec.dtype), 8, 1)
    even = _loaded_bytes(text, 61) / 8
    assert per_gpu - even > whole * 7 / 8 * 0.9  # each rank holds 7/8 of `whole` more than an even split


def test_a_checkpoint_with_a_vision_tower_kvplan_does_not_model_gets_no_figure():
    """Kimi-K2.5: int4 experts and a MoonViT tower (0.9 GiB of 554 GiB in its headers). kvplan sizes no weights it
    cannot count, and says so, rather than the text model's alone."""
    spec = resolve_model(str(DATA / "hf_configs_2026" / "moonshotai--Kimi-K2.5.json"))
    text = (HEADERS / "kimi_k2.5.md").read_text(encoding="utf-8")
    tower = sum(c * n * s for name, c, n, s in _rows(text) if name.startswith(("vision_tower.", "mm_projector.")))
    assert 0.8 * GIB < tower < 1.0 * GIB
    assert spec.weights_bytes is None and "vision tower" in spec.notes
