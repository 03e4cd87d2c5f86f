"""The reference evaluator's answer, checked against the independent oracle before any test
uses it: a bug in the matching, heads, negation or aggregation the strategies share with
``engine/reference.py`` then fails as "the reference disagrees with the oracle" instead of
passing on both sides of a differential test."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from netrules.engine import reference
from netrules.facts import Fact
from netrules.testing.oracle import assert_agrees

__all__ = ["evaluate_program"]


def evaluate_program(program: Any, facts: Iterable[Fact] = (), **kw: Any
                     ) -> dict[str, list[Fact]]:
    """``reference.evaluate_program``, failing where the oracle gives another meaning."""
    facts = list(facts)
    ref = reference.evaluate_program(program, facts, **kw)
    assert_agrees(ref, program, facts, who="the reference evaluator (engine/reference.py)")
    return ref
