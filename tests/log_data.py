"""The real start-up logs in tests/data, as the indexes list them (every part of a log joined in order).

Shared by the log-reading and calibrate tests; the indexes (index.jsonl of each folder) give each log's provenance,
its paste form and the key lines copied out of it, which the tests read with their own, deliberately simple regexes.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

DATA = Path(__file__).parent / "data"
ROOT = DATA.parent.parent


def index(folder: str) -> list[dict]:
    path = DATA / folder / "index.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def raw_files(folder: str, record: dict) -> list[Path]:
    """A record's raw files, as the index names them (relative to the folder or to the repository)."""
    names = record.get("raw_files") or [record["raw_file"]]
    out = []
    for name in names:
        p = ROOT / name if name.startswith("tests/") else DATA / folder / name
        out.append(p)
    return out


def text(folder: str, record: dict) -> str:
    """The log as one text: its parts joined in the order the index gives them (part 1, .part2, ...)."""
    parts = [p for p in raw_files(folder, record) if not re.search(r"\.(env|nvsmi|moeconfig)\.log$", p.name)]
    return "".join(p.read_text(encoding="utf-8", errors="replace") for p in parts)


def numbers(lines: list[str], pattern: str) -> list[Decimal]:
    """Every number `pattern` (one group) finds in the index's copied lines."""
    out = []
    for line in lines:
        for m in re.finditer(pattern, line):
            out.append(Decimal(m.group(1).replace(",", "")))
    return out
