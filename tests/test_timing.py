"""shoulders._timing.alternate: the variants take turns, warm-up rounds are run and dropped."""
from __future__ import annotations

import pytest

from shoulders._timing import alternate


def test_variants_take_turns_and_the_warm_up_is_dropped():
    calls: list[str] = []
    times = alternate({"A": lambda: calls.append("A"), "B": lambda: calls.append("B")}, repeats=3, warmup=2,
                      sync=lambda: calls.append("|"))
    assert [c for c in calls if c != "|"] == ["A", "B"] * 5
    assert calls[:3] == ["|", "A", "|"]  # the sync before and after every call
    assert {k: len(v) for k, v in times.items()} == {"A": 3, "B": 3} and all(t >= 0 for v in times.values() for t in v)


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="repeats"):
        alternate({"A": lambda: None}, repeats=0)
