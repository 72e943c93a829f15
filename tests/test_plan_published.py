"""Acceptance of `kvplan plan` against published deployments (docs/plan.md, "Against published deployments"): with
latency factors fitted without the publication, the plan's estimate for each measured configuration lies in its band
and the configuration the publication measured best is at or near the top of the plan's order."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import plan_published as pub  # noqa: E402


@pytest.fixture(scope="module")
def comparisons():
    return pub.comparisons()


def test_documented_table_and_summary_are_what_the_search_gives(comparisons):
    docs = (ROOT / "docs" / "plan.md").read_text()
    assert pub.docs_table(comparisons) in docs, "docs/plan.md's published-deployment table is stale"
    assert pub.summary_line(pub.summarize(comparisons)) in docs


def test_at_least_ten_published_deployments_are_in_band_and_ranked_near_the_top(comparisons):
    by_key = {(c.source, c.what): c for c in comparisons}
    good = [key for key in pub.DOCUMENTED if by_key[key].best.in_band and by_key[key].best_rank <= 2]
    assert len(good) >= 10, good
    assert len({by_key[k].source for k in good}) == 3  # from every publication


def test_over_every_comparison(comparisons):
    s = pub.summarize(comparisons)
    assert s.comparisons >= 100
    assert s.best_top_two / s.comparisons >= 0.9
    assert s.in_band / s.configs >= 0.85


def test_estimates_are_out_of_sample(comparisons):
    # every comparison is predicted by factors fitted without its own publication
    for source in {c.source for c in comparisons}:
        fitted = pub._fit_without(source)
        assert fitted.rows["all"] == sum(m.source != source for m in pub._measurements())
