"""The set algebra maintenance reads through: ``Patched`` (one layer) must be the very set the
nested ``Minus``/``Union`` it replaces would give, for lookups on any bound positions and for
membership, and must stay live as its layers change."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from netrules.engine.reference import Database
from netrules.engine.views import Minus, Patched, Union

ROWS = st.sets(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=12)


def db(rows: set[tuple[int, int]], rel: str = "r") -> Database:
    out = Database()
    for row in rows:
        out.add(rel, row)
    return out


def nested(base, hide, show, drop):
    view = base
    for h in hide:
        view = Minus(view, h)
    for s in show:
        view = Union(view, s)
    for d in drop:
        view = Minus(view, d)
    return view


BOUNDS = [{}, *({0: a} for a in range(4)), *({1: b} for b in range(4)), {0: 1, 1: 2}]


def answers(view) -> tuple:
    members = [(("r", (a, b)) in view) for a in range(4) for b in range(4)]
    lookups = [sorted(view.lookup("r", bound)) for bound in BOUNDS]
    return members, lookups


def probes(view) -> list[list]:
    """What compiled joins read: the same rows as ``lookup``, in the same order."""
    return [list(view.probe("r", tuple(sorted(b)), tuple(b[p] for p in sorted(b))))
            for b in BOUNDS]


@settings(max_examples=300, deadline=None)
@given(base=ROWS, hides=st.lists(ROWS, max_size=2), shows=st.lists(ROWS, max_size=2),
       drops=st.lists(ROWS, max_size=1), later=ROWS)
def test_patched_equals_the_nested_views(base, hides, shows, drops, later):
    layers = [db(base), [db(h) for h in hides], [db(s) for s in shows], [db(d) for d in drops]]
    flat, deep = Patched(*layers), nested(*layers)
    assert answers(flat) == answers(deep)
    for view in (flat, deep):
        assert probes(view) == [list(view.lookup("r", b)) for b in BOUNDS]
    # live: a change to a layer after the view was built is seen by both alike
    for row in later:
        (layers[2][0] if layers[2] else layers[0]).add("r", row)
        if layers[1]:
            layers[1][0].discard("r", row)
    assert answers(flat) == answers(deep)
    for view in (flat, deep):
        assert probes(view) == [list(view.lookup("r", b)) for b in BOUNDS]


def test_a_shown_fact_stands_even_where_a_layer_hides_it():
    base, gone, back = db({(1, 2), (2, 3)}), db({(1, 2)}), db({(1, 2)})
    view = Patched(base, hide=(gone,), show=(back,))
    assert ("r", (1, 2)) in view
    assert sorted(view.lookup("r", {0: 1})) == [(1, 2)]  # once, not twice
    assert ("r", (1, 2)) not in Patched(base, hide=(gone,), show=(back,), drop=(back,))
