"""The least list of each group, compared from the front in one compiled pass
(``Values.least_in_groups``, the tie-break of arg-min routes), against ``sort_key``."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules.engine.columnar.values import Values
from netrules.facts import sort_key

elements = st.one_of(st.integers(0, 9), st.text("abc", min_size=1, max_size=2))
routes = st.lists(elements, max_size=6).map(tuple)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), routes), min_size=1, max_size=30))
def test_least_list_per_group_is_sort_keys_least(rows: list) -> None:
    v = Values()
    # rank the atoms of a first half, then intern the rest: new atoms must be ranked again
    first = np.array([v.encode(p) for _, p in rows[: len(rows) // 2]] or [v.encode(())],
                     dtype=np.int64)
    v.least_in_groups(first, np.zeros(len(first), dtype=np.int64))
    ids = np.array([v.encode(p) for _, p in rows], dtype=np.int64)
    groups = np.array([g for g, _ in rows], dtype=np.int64)
    best = v.least_in_groups(ids, groups)
    assert best is not None
    for g in range(int(groups.max()) + 1):
        mine = [p for h, p in rows if h == g]
        if not mine:
            assert best[g] == -1
            continue
        assert groups[best[g]] == g
        assert sort_key(rows[best[g]][1]) == min(sort_key(p) for p in mine)


def test_lists_of_lists_and_number_atoms_are_left_to_order_rank() -> None:
    v = Values()
    nested = np.array([v.encode(((1, 2), "a")), v.encode(((1, 3), "a"))], dtype=np.int64)
    assert v.least_in_groups(nested, np.zeros(2, dtype=np.int64)) is None
    floats = np.array([v.encode((1.5, "a")), v.encode((0.5, "a"))], dtype=np.int64)
    assert v.least_in_groups(floats, np.zeros(2, dtype=np.int64)) is None
