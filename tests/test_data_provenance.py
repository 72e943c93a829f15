"""Every file of the 2025-2026 data folders is listed in its folder's SOURCES.md, every row names a file that is
there, and each file still has the sha256 its row records (the files are verbatim copies: an edit shows here).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
FOLDERS = ["hf_configs_2026", "deployments_2026", "checkpoint_headers", "vllm_auto_fit_logs", "rocm_logs",
           "checkpoint_size_logs", "sglang_fusion_logs"]
SHA_COLUMN = "sha256(file)[:16]"


def _rows(sources: Path) -> list[dict[str, str]]:
    """The rows of every markdown table in SOURCES.md, keyed by that table's header cells."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in sources.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set(line.replace("|", "").strip()) <= {"-", ":", " "}:
            rows.append(dict(zip(header, cells)))
    # a table without a `file` column describes something else (a folder's source repository and branch)
    return [row for row in rows if "file" in row]


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != "SOURCES.md"}


@pytest.mark.parametrize("name", [f for f in FOLDERS if (DATA / f).is_dir()])
def test_every_file_is_listed_and_every_row_is_a_file(name: str) -> None:
    folder = DATA / name
    rows = _rows(folder / "SOURCES.md")
    listed = [row["file"] for row in rows if not row["file"].startswith("../")]
    assert len(listed) == len(set(listed)), "a file is listed twice"
    assert set(listed) == _files(folder)
    for row in rows:
        if row["file"].startswith("../"):
            assert (folder / row["file"].split(" ")[0]).is_file(), row["file"]


@pytest.mark.parametrize("name", [f for f in FOLDERS if (DATA / f).is_dir()])
def test_every_file_has_the_sha256_its_row_records(name: str) -> None:
    folder = DATA / name
    checked = 0
    for row in _rows(folder / "SOURCES.md"):
        if SHA_COLUMN in row and not row["file"].startswith("../"):
            digest = hashlib.sha256((folder / row["file"]).read_bytes()).hexdigest()
            assert digest[:16] == row[SHA_COLUMN], row["file"]
            checked += 1
    assert checked == len(_files(folder))
