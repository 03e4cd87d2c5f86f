"""Delta rules in paper 000's scheme, so that each derivation is made exactly once per batch.

For a rule with positive body atoms b1..bn there is one delta rule per position i: b1..b(i-1)
read the *new* view (after the batch), bi reads the batch's delta, b(i+1)..bn read the *old*
view. The split is by position, not by relation: a self-join ``link, link`` has two delta rules
and an inserted ``link(a,a)`` fires both, yet the derivation ``hop(a,a)`` is made once, because
only one of them reads ``link(a,a)`` from the delta while the other position reads it old.
"""

from __future__ import annotations

from dataclasses import dataclass

from netrules.lang import ast

__all__ = ["DeltaRule", "delta_rules"]


@dataclass(frozen=True)
class DeltaRule:
    """Rule ``rule`` fired from its ``position``-th positive atom; ``views[j]`` says which
    version (``new``, ``delta`` or ``old``) the j-th positive atom reads."""

    rule: ast.Rule
    position: int
    views: tuple[str, ...]

    def __str__(self) -> str:
        mark = {"new": "ν", "delta": "Δ", "old": ""}
        atoms = self.rule.atoms()
        it = iter(range(len(atoms)))
        parts = []
        for lit in self.rule.body:
            if isinstance(lit, ast.Atom):
                j = next(it)
                parts.append(f"{mark[self.views[j]]}{lit}")
            else:
                parts.append(str(lit))
        return f"Δ{self.rule.head} :- {', '.join(parts)}."


def delta_rules(rule: ast.Rule) -> list[DeltaRule]:
    """One delta rule per positive body atom of ``rule``."""
    n = len(rule.atoms())
    return [
        DeltaRule(rule, i, tuple("new" if j < i else "delta" if j == i else "old"
                                 for j in range(n)))
        for i in range(n)
    ]
