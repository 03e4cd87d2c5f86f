"""``ClockedEngine`` on its own: what an update means to a program with event rules, and the
clock's edge cases (late events, epoch-scale event times, retracted events)."""

from __future__ import annotations

import time
from pathlib import Path

from netrules.facts import Fact
from netrules.lang.parse import parse_program
from netrules.pipeline.clocked import ClockedEngine
from netrules.plan import plan_program
from tests.engine.test_p2_reading import GOSSIP

LS = Path(__file__).resolve().parents[2] / "examples" / "rapidnet" / "sim-ls-triggered.olg"


def engine(text: str, name: str) -> ClockedEngine:
    return ClockedEngine(plan_program(parse_program(text, name)))


def link(a: str, b: str, op: str = "+", t: float = 0.0, seq: int = 0) -> tuple:
    return (op, Fact("link", (a, b, 1)), t, seq, "src")


def test_epoch_times_do_not_walk_beacons_from_zero() -> None:
    """A capture's event times are seconds since 1970: beacons start with the first live
    link, so the first batch is not 3e8 empty instants."""
    e = engine(LS.read_text(encoding="utf-8"), str(LS))
    t0, start = 1.7e9, time.perf_counter()
    e.apply([link("a", "b", t=t0), link("b", "a", t=t0, seq=1)])
    d = e.advance(t0 + 20)
    assert time.perf_counter() - start < 5
    assert e.now == t0 + 20
    # announced at t0, t0 + 5, ..., so still there 20 s on (tLink lasts 11 s)
    assert {f.args[:2] for f in e.reactive.views()["tLink"]} == {("a", "b"), ("b", "a")}
    assert d.stats.strategy.startswith("reactive")


def test_late_events_apply_at_the_clock_and_are_counted() -> None:
    e = engine(LS.read_text(encoding="utf-8"), str(LS))
    e.apply([link("a", "b", t=10.0)])
    e.apply([link("b", "a", t=5.0, seq=1)])
    assert e.now == 10.0 and e.checkpoint()["late"] == 1
    assert {f.args[:2] for f in e.reactive.views()["tLink"]} == {("a", "b"), ("b", "a")}


def test_a_retracted_event_is_counted_not_applied() -> None:
    """GOSSIP takes up/down as events fed from outside (no discovery: no link)."""
    e = engine(GOSSIP, "gossip.olg")
    assert e.discovery is None and set(e.accepts) == {"up", "down"}
    e.apply([("+", Fact("up", ("a", "b", 1)), 1.0, 0, "s")])
    e.apply([("-", Fact("up", ("a", "b", 1)), 2.0, 1, "s")])
    assert e.checkpoint()["retracted"] == 1
    assert {f.args for f in e.reactive.views()["peer"]} == {("a", "b", 1)}
