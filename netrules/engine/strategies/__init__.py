"""Maintenance strategies, one module each behind one interface:
``materialize(plan, facts) -> State``, ``apply(state, batch) -> Delta``,
``explain(state, fact) -> Derivation``.
"""

from netrules.engine.strategies import auto, columnar, counting, dred, fbf, psn, rematerialize
from netrules.engine.strategies.base import BatchStats, Delta, Derivation, State

STRATEGIES = {m.name: m for m in (psn, dred, fbf, rematerialize, auto, counting, columnar)}

__all__ = ["STRATEGIES", "BatchStats", "Delta", "Derivation", "State", "get", "parse_spec",
           "PER_VIEW"]

# what one view may be switched to inside a psn-based strategy: routines with no state of
# their own, so they can run some strata of a program while psn keeps supports for the rest
PER_VIEW = ("psn", "dred", "fbf")


def get(name: str):
    """The strategy module called ``name``."""
    try:
        return STRATEGIES[name]
    except KeyError:
        from netrules.errors import EngineError

        raise EngineError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}") from None


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"auto,bestPath=dred"`` -> ("auto", {"bestPath": "dred"}): a strategy for the program
    and per-view overrides (psn and auto only; each override names psn, dred or fbf)."""
    from netrules.errors import EngineError

    name, *rest = [p.strip() for p in spec.split(",")]
    get(name)
    overrides: dict[str, str] = {}
    for item in rest:
        rel, eq, strat = (x.strip() for x in item.partition("="))
        if not eq or not rel or strat not in PER_VIEW:
            raise EngineError(f"strategy {spec!r}: per-view override {item!r} must read "
                              f"VIEW=STRATEGY with STRATEGY one of {', '.join(PER_VIEW)}")
        overrides[rel] = strat
    if overrides and name not in ("psn", "auto"):
        raise EngineError(f"strategy {spec!r}: per-view overrides need psn or auto as the "
                          f"program's strategy, not {name}")
    return name, overrides
