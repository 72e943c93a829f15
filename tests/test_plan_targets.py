"""`--ttft`/`--tpot` as kvplan plan reads them (kvplan/analysis/targets.py): percentiles, units, the default."""

from __future__ import annotations

import pytest

from kvplan.analysis import targets
from kvplan.core.errors import InputError


def test_percentiles_units_and_a_bare_number():
    assert targets.parse("p95:2s", "--ttft") == (targets.Target(95, 2000.0),)
    assert targets.parse("p99:1s, p50:300ms", "--ttft") == (targets.Target(50, 300.0), targets.Target(99, 1000.0))
    assert targets.parse("60", "--tpot") == (targets.Target(99, 60.0),)  # P99 milliseconds, as before percentiles
    assert targets.parse(60, "--tpot") == (targets.Target(99, 60.0),)
    assert targets.parse("none", "--tpot") == ()


def test_no_tpot_is_the_default_interactivity_target():
    t = targets.targets(None, None)
    assert t.tpot == (targets.Target(99, 100.0),) and t.tpot_is_default and t.ttft == ()
    assert targets.targets(None, "none").tpot == () and not targets.targets(None, "p50:80").tpot_is_default


@pytest.mark.parametrize("text, words", [("p97:2s", "P97"), ("p95:2h", "cannot read"), ("p95:0", "positive"),
                                         ("p50:1,p50:2", "twice"), ("fast", "cannot read")])
def test_what_cannot_be_read_is_refused_at_the_option(text, words):
    with pytest.raises(InputError) as err:
        targets.parse(text, "--ttft")
    assert err.value.where == "--ttft" and words in err.value.one_line()
