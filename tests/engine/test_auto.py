"""The auto strategy's cost estimate and both of its paths, checked against the reference."""

from __future__ import annotations

import random

from netrules import programs
from netrules.engine.strategies import auto, psn
from netrules.plan import plan_program
from tests.meaning import evaluate_program
from topologies import link_facts, load_topology

PLAN = plan_program(programs.load("reachability"))
FACTS = link_facts(load_topology("grid:6x6"))


def _links(share: float, seed: int = 1) -> list:
    pairs: dict[tuple, list] = {}
    for f in FACTS:
        pairs.setdefault(tuple(sorted(map(str, f.args[:2]))), []).append(f)
    keys = random.Random(seed).sample(sorted(pairs), len(pairs))
    return [f for key in keys[:max(1, round(share * len(keys)))] for f in pairs[key]]


def test_suspect_estimate_is_psn_kill_phase_exactly() -> None:
    for share in (0.01, 0.1, 0.3):
        gone = _links(share)
        state = psn.materialize(PLAN, FACTS)
        estimate = auto.suspects(state, [(f.relation, f.args) for f in gone])
        stats = psn.apply(state, [("-", f) for f in gone]).stats
        assert estimate == stats.rederived + stats.overdeleted


def test_auto_keeps_a_program_the_columnar_engine_maintains_in_columns() -> None:
    state = auto.materialize(PLAN, FACTS)
    one = _links(0.0)
    d = auto.apply(state, [("-", f) for f in one])
    assert d.stats.strategy == "auto:columnar"
    assert state.views() == evaluate_program(PLAN, set(FACTS) - set(one))


def test_small_batch_runs_psn_large_one_rebuilds_and_both_are_exact() -> None:
    # a per-view override keeps the program per fact, where the crossover applies
    state = auto.materialize(PLAN, FACTS, overrides={"reachable": "psn"})
    one = _links(0.0)
    d = auto.apply(state, [("-", f) for f in one])
    assert d.stats.strategy.startswith("auto:psn")
    assert state.views() == evaluate_program(PLAN, set(FACTS) - set(one))
    many = [f for f in _links(0.5, seed=2) if f not in one]
    d = auto.apply(state, [("-", f) for f in many])
    assert d.stats.strategy.startswith("auto:rebuild")
    assert state.views() == evaluate_program(PLAN, set(FACTS) - set(one) - set(many))
    d = auto.apply(state, [("+", f) for f in [*one, *many]])  # recovery: half the base back
    assert d.stats.strategy.startswith("auto:rebuild")
    assert state.views() == evaluate_program(PLAN, FACTS)
    d = auto.apply(state, [("-", f) for f in one])  # PSN again on the rebuilt supports
    assert d.stats.strategy.startswith("auto:psn")
    assert state.views() == evaluate_program(PLAN, set(FACTS) - set(one))
