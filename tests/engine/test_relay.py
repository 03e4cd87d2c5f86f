"""The relay between a gang's tasks: every task gets the others' frames of the same round,
strangers are refused, a task that drops out breaks the gang, a rerun forms a new one."""

from __future__ import annotations

import threading
import time

import pytest

from netrules.engine.spark.relay import Broken, Link, Relay, Ticket


def _gang(relay: Relay, ticket: Ticket, rounds: int, attempt0: int = 100,
          fail: int | None = None) -> dict[int, object]:
    got: dict[int, object] = {}

    def task(i: int) -> None:
        link = Link(ticket, i, attempt0 + i)
        try:
            seen = []
            for r in range(rounds):
                if fail == i and r == 1:
                    link.close(ValueError("bad fact"))
                    got[i] = "left"
                    return
                seen.append(link.swap(f"{i}:{r}".encode() * (1 + 5000 * i)))
            link.close()
            got[i] = seen
        except Broken as err:
            got[i] = str(err)

    threads = [threading.Thread(target=task, args=(i,)) for i in range(ticket.tasks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return got


def test_each_task_gets_the_others_frames_in_task_order() -> None:
    relay = Relay()
    ticket = relay.ticket(3)
    got = _gang(relay, ticket, rounds=4)
    for i in range(3):
        assert got[i] == [[f"{j}:{r}".encode() * (1 + 5000 * j) for j in range(3) if j != i]
                          for r in range(4)]
    relay.forget(ticket)
    relay.close()


def test_a_stranger_is_refused() -> None:
    relay = Relay()
    real = relay.ticket(2)
    forged = Ticket(real.host, real.port, b"\0" * 16, real.gang, 2)
    link = Link(forged, 0, 1)
    with pytest.raises((Broken, OSError)):
        link.swap(b"hello")
    relay.close()


def test_a_task_that_drops_out_breaks_the_gang() -> None:
    relay = Relay()
    got = _gang(relay, relay.ticket(3), rounds=3, fail=2)
    why = "another task of the gang failed: builtins.ValueError: bad fact"
    assert got == {0: why, 1: why, 2: "left"}
    relay.close()


def test_a_rerun_of_the_stage_forms_a_new_gang() -> None:
    """Task 0 of a first attempt waits; its stage is rerun (task ids further on): the rerun's
    tasks form their own gang, and the waiting task's gang is over."""
    relay = Relay()
    ticket = relay.ticket(2)
    stale: dict[str, object] = {}

    def first() -> None:
        link = Link(ticket, 0, 7)
        try:
            stale["got"] = link.swap(b"old")
        except Broken:
            stale["got"] = "broken"

    t = threading.Thread(target=first)
    t.start()
    while not relay._gangs.get(ticket.gang):  # the first attempt's task has joined
        time.sleep(0.01)
    got = _gang(relay, ticket, rounds=2, attempt0=20)
    t.join(30)
    assert stale["got"] == "broken"
    assert got[0] == [[b"1:0" * 5001], [b"1:1" * 5001]]
    # a task of the first attempt that comes late joins nothing and breaks nothing
    late = Link(ticket, 1, 8)
    with pytest.raises(Broken):
        late.swap(b"late")
    relay.close()
