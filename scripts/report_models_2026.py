"""Print what kvplan makes of every config.json in tests/data/hf_configs_2026, against transformers' truth.

For each file: read or refused (with the key the refusal names); for the files read and built by transformers 5.24 on
`meta` (tests/data/transformers_truth_2026.json; DeepSeek-V4's DynamicCache in
transformers_truth_deepseek_v4.json), whether the KV bytes at 8K in bf16 are exact and how far the
parameters are (the text model's when kvplan leaves a tower's weights unknown). Ends with the counts.

    python scripts/report_models_2026.py
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kvplan.core.cache import CacheModel  # noqa: E402
from kvplan.core.dtypes import dtype  # noqa: E402
from kvplan.core.errors import KvplanError  # noqa: E402
from kvplan.model.catalog import resolve_model  # noqa: E402

CORPUS = REPO / "tests" / "data" / "hf_configs_2026"
TRUTH = REPO / "tests" / "data" / "transformers_truth_2026.json"
# DeepSeek-V4: transformers keeps it in a DynamicCache only (scripts/make_deepseek_v4_truth.py)
V4_TRUTH = REPO / "tests" / "data" / "transformers_truth_deepseek_v4.json"


def main() -> int:
    truth = json.loads(TRUTH.read_text())["configs"]
    v4_truth = json.loads(V4_TRUTH.read_text())["configs"]
    counts: Counter = Counter()
    reasons: Counter = Counter()
    for path in sorted(p for p in CORPUS.glob("*.json") if not p.name.endswith(".hf_quant_config.json")):
        try:
            spec = resolve_model(str(path))
        except KvplanError as err:
            counts["refused"] += 1
            key = (err.where or "").rsplit(": ", 1)[-1] or "?"
            reasons[key] += 1
            print(f"{path.stem[:52]:52} refused  {key}")
            continue
        counts["read"] += 1
        t = truth.get(path.name) or {}
        if path.name in v4_truth:
            v4 = v4_truth[path.name]
            cache = CacheModel(spec, dtype("bf16"))
            sizes = v4["cache_bytes_at_tokens"]
            exact = all(cache.footprint(int(n), 1).kv_bytes == b for n, b in sizes.items())
            counts["KV exact" if exact else "KV differs"] += 1
            off = spec.params / v4["params_total"] - 1
            counts["params within 1%" if abs(off) <= 0.01 else "params off by more than 1%"] += 1
            kv_text = "exact" if exact else "differs"
            print(f"{path.stem[:52]:52} read     KV {kv_text} (DynamicCache, {len(sizes)} lengths), params {off * 100:+.2f}%")
            continue
        if not t.get("built"):
            counts["read, no transformers build"] += 1
            print(f"{path.stem[:52]:52} read     (transformers cannot build it natively)")
            continue
        kv = CacheModel(spec, dtype("bf16")).footprint(8192, 1).kv_bytes
        exact = kv == t["kv_bytes"]
        counts["KV exact" if exact else "KV differs"] += 1
        whole = t["params_total"] - ((t.get("params_vision") or 0) + (t.get("params_projector") or 0)
                                     if spec.weights_unknown else 0)
        off = spec.params / whole - 1
        counts["params within 1%" if abs(off) <= 0.01 else "params off by more than 1%"] += 1
        counts["weights unknown (tower)"] += bool(spec.weights_unknown)
        kv_text = "exact" if exact else f"{kv:,} B against {t['kv_bytes']:,} B"
        tower = " (text model; tower unknown)" if spec.weights_unknown else ""
        print(f"{path.stem[:52]:52} read     KV {kv_text}, params {off * 100:+.2f}%{tower}")
    print()
    for key in ("read", "KV exact", "KV differs", "params within 1%", "params off by more than 1%",
                "weights unknown (tower)", "read, no transformers build", "refused"):
        print(f"{key}: {counts[key]}")
    print("refused, by the key named:", dict(reasons.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
