"""Maintenance strategies, one module each behind one interface:
``materialize(plan, facts) -> State``, ``apply(state, batch) -> Delta``,
``explain(state, fact) -> Derivation``.
"""

from netrules.engine.strategies import auto, counting, dred, fbf, psn, rematerialize
from netrules.engine.strategies.base import BatchStats, Delta, Derivation, State

STRATEGIES = {m.name: m for m in (psn, dred, fbf, rematerialize, auto, counting)}

__all__ = ["STRATEGIES", "BatchStats", "Delta", "Derivation", "State", "get"]


def get(name: str):
    """The strategy module called ``name``."""
    try:
        return STRATEGIES[name]
    except KeyError:
        from netrules.errors import EngineError

        raise EngineError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}") from None
