"""When ``periodic(@N, E, Period[, Repeats[, Delay[, Spacing]]])`` fires, on an event-time clock.

Node ``i`` (in the order the caller gives) fires at ``Delay + i * Spacing + k * Period`` for
``k = 0, 1, ...``, ``Repeats`` times (0: forever). Without a written delay the first firing is
one period in, as P2's timers do. The times depend only on the arguments and the clock, so a
replay fires the same events at the same times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from netrules.lang import ast
from netrules.lang.events import periodic_atoms

__all__ = ["Timer", "timers_of"]


@dataclass(frozen=True)
class Timer:
    spec: tuple[float, ...]  # the numbers as written: Period[, Repeats[, Delay[, Spacing]]]

    @property
    def period(self) -> float:
        return self.spec[0]

    @property
    def repeats(self) -> int:
        return int(self.spec[1]) if len(self.spec) > 1 else 0

    @property
    def delay(self) -> float:
        return self.spec[2] if len(self.spec) > 2 else self.period

    @property
    def spacing(self) -> float:
        return self.spec[3] if len(self.spec) > 3 else 0.0

    def next_after(self, index: int, now: float, *, inclusive: bool = False
                   ) -> tuple[float, int] | None:
        """The first firing of node ``index`` after ``now`` (at or after, ``inclusive``):
        its time and its number ``k``; None when the repeats are used up."""
        base = self.delay + index * self.spacing
        if now < base or (inclusive and now == base):
            k = 0
        else:
            k = math.floor((now - base) / self.period) + 1
            if inclusive and base + (k - 1) * self.period == now:
                k -= 1
        if self.repeats and k >= self.repeats:
            return None
        return base + k * self.period, k


def timers_of(rules: tuple[ast.Rule, ...]) -> list[Timer]:
    """One timer per distinct ``periodic`` spec in ``rules`` (rules sharing one fire together)."""
    seen: dict[tuple, Timer] = {}
    for r in rules:
        for a in periodic_atoms(r):
            spec = tuple(float(t.value) for t in a.args[2:])  # type: ignore[union-attr]
            seen.setdefault(spec, Timer(spec))
    return list(seen.values())
