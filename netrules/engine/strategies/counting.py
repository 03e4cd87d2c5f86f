"""Recursive Counting (paper 003, Algorithms 2 and 3): derivation counts per semi-naive iteration.

One count per fact is wrong under recursion: with ``R(x,y) -> R(y,x)`` a fact keeps itself
alive around the cycle (Example 5). Counting keeps instead the *trace*: for every stratum and
every semi-naive iteration i, the multiset N_i of heads derived in iteration i, one occurrence
per rule instance. Maintenance replays the old and the new semi-naive runs side by side and
moves the counters only by the rule instances that fire in one run but not the other (Lemma 11,
eqs. (68)/(69)), never enumerating either run's instances in full; a fact is in the new
materialisation iff one of its counters is positive (Theorem 10), so no rederivation exists.

Representation (the note's §13.5 idea): per fact, ``{iteration: count}``, plus the fact's first
iteration, so the old run's I_o at iteration i is a *filter* of the stored facts (first <= i)
and Δ_o is the bucket of facts first seen in iteration i. The new run is never rebuilt: I_n is
``(I_o \\ I_on) ∪ I_no`` with the two small difference sets kept incrementally (line 30), and
Δ_n is Δ_o corrected by the few facts whose counters moved. The runs stop early once they agree
and nothing they read differs (line 31).

Strata with aggregates, and iterated strata (recursion through an aggregate), have no exact
count semantics here: ``dred.dred_stratum`` maintains them and they keep no trace; strata above
read their facts as lower facts like any other. Negation is native (Lemma 11's N conditions).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from netrules.engine.firing import FactKey, body_facts, fire, negation_variants
from netrules.engine.ledger import BaseLedger
from netrules.engine.reference import Binding, Database, solve_body
from netrules.engine.strategies import dred
from netrules.engine.strategies.base import (
    BatchStats,
    Delta,
    Derivation,
    State,
    explain_by_search,
)
from netrules.engine.views import Minus, Union
from netrules.facts import Fact, Value
from netrules.lang import ast
from netrules.lang.builtins import evaluate
from netrules.plan import Plan, Stratum

__all__ = ["name", "materialize", "apply", "explain", "trace_of", "Trace"]

name = "counting"

_EMPTY = Database()
DEBUG = False
"""Assert non-repetition (the note's invariant 8) while counting; the tests turn it on."""


@dataclass
class Trace:
    """One stratum's N^s_i: per fact its counters by iteration, and its first iteration (the
    iteration it entered I); ``by_first`` inverts ``first`` so Δ_o is a lookup, not a scan."""

    counts: dict[FactKey, dict[int, int]] = field(default_factory=dict)
    first: dict[FactKey, int] = field(default_factory=dict)
    by_first: dict[int, set[FactKey]] = field(default_factory=dict)
    records: int = 0

    def bump(self, key: FactKey, i: int, by: int) -> None:
        per = self.counts.setdefault(key, {})
        n = per.get(i, 0) + by
        if n < 0:  # Theorem 12(b): only instances of the old run are undone
            raise AssertionError(f"counter of {key} in iteration {i} would go negative")
        if n == 0:
            del per[i]
            self.records -= 1
            if not per:
                del self.counts[key]
        else:
            self.records += i not in per
            per[i] = n

    def count(self, key: FactKey, i: int) -> int:
        per = self.counts.get(key)
        return per.get(i, 0) if per else 0

    def refile(self, keys: Iterable[FactKey]) -> None:
        """Recompute the first iteration of facts whose counters moved."""
        for key in keys:
            old = self.first.get(key)
            per = self.counts.get(key)
            new = min(per) if per else None
            if old == new:
                continue
            if old is not None:
                bucket = self.by_first[old]
                bucket.discard(key)
                if not bucket:
                    del self.by_first[old]
                del self.first[key]
            if new is not None:
                self.first[key] = new
                self.by_first.setdefault(new, set()).add(key)

    def levels(self) -> list[dict[FactKey, int]]:
        """N_1, N_2, ... as multisets (for tests and inspection)."""
        top = max((max(per) for per in self.counts.values()), default=0)
        out: list[dict[FactKey, int]] = [{} for _ in range(top)]
        for key, per in self.counts.items():
            for i, n in per.items():
                out[i - 1][key] = n
        return out


class _UpTo:
    """The old run's I_o after iteration ``limit``: stored facts of the stratum whose first
    iteration is at most ``limit``; every other relation reads the old facts unchanged."""

    def __init__(self, db: Database, first: dict[FactKey, int], rels: frozenset[str]) -> None:
        self.db, self.first, self.rels, self.limit = db, first, rels, 0

    def lookup(self, relation: str, bound: Mapping[int, Value]) -> Iterable[tuple]:
        rows = self.db.lookup(relation, bound)
        if relation not in self.rels:
            return rows
        first, limit = self.first, self.limit
        return [row for row in rows if first[(relation, row)] <= limit]

    def has(self, relation: str) -> bool:
        return self.db.has(relation) and (relation not in self.rels or self.limit > 0)

    def __contains__(self, item: FactKey) -> bool:
        if item not in self.db:
            return False
        return item[0] not in self.rels or self.first[item] <= self.limit


class _FactSet:
    """A set of facts (a Δ) as a readable view, indexed only if someone looks rows up."""

    def __init__(self, keys: set[FactKey]) -> None:
        self.keys = keys
        self._rels: set[str] | None = None
        self._db: Database | None = None

    def __contains__(self, item: FactKey) -> bool:
        return item in self.keys

    def __len__(self) -> int:
        return len(self.keys)

    def has(self, relation: str) -> bool:
        if self._rels is None:
            self._rels = {k[0] for k in self.keys}
        return relation in self._rels

    def lookup(self, relation: str, bound: Mapping[int, Value]) -> Iterable[tuple]:
        if self._db is None:
            self._db = Database()
            for rel, row in self.keys:
                self._db.add(rel, row)
        return self._db.lookup(relation, bound)


def _neg_hit(rule: ast.Rule, lit: ast.Negation, b: Binding, db: object) -> bool:
    """Whether negated literal ``lit`` of ``rule`` is *violated* by ``db`` under ``b``, i.e.
    its atom matches some row there (anonymous arguments range over every row)."""
    a = lit.atom
    assert isinstance(a, ast.Atom)
    if not any(isinstance(t, ast.Var) and (t.name == "_" or t.name not in b) for t in a.args):
        return (a.relation, tuple(evaluate(t, b) for t in a.args)) in db  # type: ignore[operator]
    probe = _probes.get(id(a))
    if probe is None:
        probe = _probes[id(a)] = (a, ast.Rule(ast.Atom("_probe", ()), (a,)))
    start = {k: v for k, v in b.items() if isinstance(k, str)}
    return any(True for _ in solve_body(probe[1], db, order=[a], binding=start))


_probes: dict[int, tuple[ast.Atom, ast.Rule]] = {}  # the atom is kept so its id stays unique


def _negations(rule: ast.Rule) -> list[ast.Negation]:
    return [lit for lit in rule.body if isinstance(lit, ast.Negation)]


Cond = tuple[object, object]  # (P: positive atoms, N: negated atoms)
Found = tuple[tuple, tuple[FactKey, ...], Binding]  # (head row, positive body facts, binding)


def _instances(rule: ast.Rule, plus: object, minus: object, cond: Cond) -> Iterator[Found]:
    """``inst_r[plus, minus : P, N]`` with every instance exactly once (eqs. (156)/(157)):
    for positive position k, positions before k read ``plus \\ P``, k reads P, later ones
    ``plus``; for negated literal k, it is matched positively in N, every positive atom reads
    ``plus \\ P`` and negated literals before k must miss N too. Requires P ⊆ plus and
    N ∩ minus = ∅ (a literal with anonymous arguments must still miss all of minus)."""
    P, N = cond
    atoms = rule.atoms()
    plus_not_p = Minus(plus, P)  # type: ignore[arg-type]
    for k, a in enumerate(atoms):
        if not P.has(a.relation):  # type: ignore[attr-defined]
            continue
        reads = {j: (plus_not_p if j < k else P if j == k else plus) for j in range(len(atoms))}
        for row, b in fire(rule, reads, minus, first=k):
            yield row, body_facts(rule, b), b
    negs = _negations(rule)
    for idx, (variant, pos) in enumerate(negation_variants(rule)):
        if not N.has(variant.atoms()[pos].relation):  # type: ignore[attr-defined]
            continue
        n = len(variant.atoms())
        reads = {j: (N if j == pos else plus_not_p) for j in range(n)}
        seen: set[tuple[FactKey, ...]] = set()  # `not r(X,_)`: one instance, many r rows
        for row, b in fire(variant, reads, minus, first=pos):
            vbody = body_facts(variant, b)
            body = vbody[:pos] + vbody[pos + 1:]
            if body in seen or any(_neg_hit(rule, lit, b, N) for lit in negs[:idx]):
                continue
            if _neg_hit(rule, negs[idx], b, minus):  # `not r(X,_)` with other r rows
                continue
            seen.add(body)
            yield row, body, b


def _meets(rule: ast.Rule, found: Found, cond: Cond) -> bool:
    """Whether an instance has a positive body fact in P or a negated literal hit by N."""
    P, N = cond
    _, body, b = found
    return any(x in P for x in body) or any(  # type: ignore[operator]
        _neg_hit(rule, lit, b, N) for lit in _negations(rule))


def _size(rule: ast.Rule, cond: Cond) -> int:
    """Rows a condition offers this rule (to pick the side to enumerate from)."""
    P, N = cond
    if isinstance(P, _FactSet):
        return len(P) if any(P.has(a.relation) for a in rule.atoms()) else 0
    n = sum(len(P.rel.get(a.relation, ())) for a in rule.atoms())  # type: ignore[attr-defined]
    return n + sum(len(N.rel.get(lit.atom.relation, ()))  # type: ignore[attr-defined]
                   for lit in _negations(rule))


def _instances2(rule: ast.Rule, plus: object, minus: object, c1: Cond, c2: Cond
                ) -> Iterator[Found]:
    """``inst_r[plus, minus : c1 ⁝ c2]``: enumerate the smaller condition without repetition,
    filter by the other (§3.3, implementation requirements)."""
    s1, s2 = _size(rule, c1), _size(rule, c2)
    if not s1 or not s2:
        return
    enum, other = (c1, c2) if s1 <= s2 else (c2, c1)
    for found in _instances(rule, plus, minus, enum):
        if _meets(rule, found, other):
            yield found


class _Run:
    """Counter moves of one stratum's maintenance: applies them and counts instances."""

    def __init__(self, state: State, tr: Trace) -> None:
        self.tr = tr
        self.counter: dict[str, int] = state.extra["instances"]
        self.debug = DEBUG
        self.seen: set[tuple[int, int, tuple[FactKey, ...]]] = set()
        self.touched: set[FactKey] = set()      # counters moved in the current iteration
        self.all_touched: set[FactKey] = set()  # ... in any iteration (to refile firsts)

    def move(self, rule: ast.Rule, found: Iterable[Found], i: int, by: int) -> None:
        rel = rule.head.relation
        for row, body, _ in found:
            key = (rel, row)
            if self.debug:  # invariant 8: no instance undone (or applied) twice
                ident = (by, id(rule), body)
                assert ident not in self.seen, f"instance {rule} {body} repeated"
                self.seen.add(ident)
            self.tr.bump(key, i, by)
            self.touched.add(key)
            self.all_touched.add(key)
            self.counter["undone" if by < 0 else "applied"] += 1


def _counting_stratum(state: State, stratum: Stratum, I: Database, D: Database, A: Database,
                      stats: BatchStats) -> None:
    """Algorithm 3, lines 21-38, for one stratum; adds its net change to D and A."""
    traces: dict[int, Trace] = state.extra["trace"]
    tr = traces.setdefault(stratum.index, Trace())
    S = stratum.relations
    rules = list(stratum.rules)
    if state.rng is not None:
        state.rng.shuffle(rules)
    recursive = [r for r in rules if any(a.relation in S for a in r.atoms())]
    nonrec = [r for r in rules if r not in recursive]

    def reads(rs: list[ast.Rule]) -> set[str]:
        return {a.relation for r in rs for a in r.atoms()} | {
            lit.atom.relation for r in rs for lit in _negations(r)}

    # I_on = I_o \ I_n and I_no = I_n \ I_o: the lower strata's net change (what this stratum
    # reads of it), then this stratum's own differences, maintained by line 30.
    ion, ino = Database(), Database()
    for rel in reads(rules) - S:
        for row in D.rel.get(rel, ()):
            if (rel, row) not in A:
                ion.add(rel, row)
        for row in A.rel.get(rel, ()):
            if (rel, row) not in D:
                ino.add(rel, row)
    lower_quiet = not any(ion.rel.get(r) or ino.rel.get(r) for r in reads(recursive) - S)
    io = _UpTo(I, tr.first, S)
    i_n = Union(Minus(io, ion), ino)
    run = _Run(state, tr)

    # lines 22-24: iteration 1, non-recursive rules, Lemma 11 eq. (68) both ways
    for rule in nonrec:
        run.move(rule, _instances(rule, io, io, (ion, ino)), 1, -1)
        run.move(rule, _instances(rule, i_n, i_n, (ino, ion)), 1, +1)
    touched = run.touched
    run.seen.clear()
    i = 1
    rounds = 0
    while True:
        rounds += 1
        # line 27: Δ_o from the old trace; Δ_n = Δ_o corrected by the counters that moved
        d_o = tr.by_first.get(i, set())
        ion_s = {(r, row) for r in S for row in ion.rel.get(r, ())}
        ino_s = {(r, row) for r in S for row in ino.rel.get(r, ())}
        drop = {f for f in (touched | ino_s) & d_o if f in ino_s or not tr.count(f, i)}
        gain = set()
        for f in (touched | ion_s) - d_o:
            if tr.count(f, i) and (f in ion_s or (f not in ino_s and f not in io)):
                gain.add(f)
        if not d_o and not gain:  # line 28
            break
        d_n = (d_o - drop) | gain
        moved_earlier = drop & ino_s  # (Δ_o ∩ I_n) \ Δ_n
        moved_later = gain & ion_s    # (Δ_n ∩ I_o) \ Δ_o
        # lines 29-30
        io.limit = i
        for f in drop - ino_s:
            ion.add(*f)
        for f in moved_later:
            ion.discard(*f)
        for f in moved_earlier:
            ino.discard(*f)
        for f in gain - moved_later:
            ino.add(*f)
        if not drop and not gain and lower_quiet and not any(
                ion.rel.get(r) or ino.rel.get(r) for r in S):  # line 31: runs converged
            break
        i += 1
        if not recursive:
            touched = set()
            continue
        # lines 36-37, Lemma 11 eq. (69): instances that fire in iteration i of one run only
        delta_o, delta_n = _FactSet(d_o), _FactSet(d_n)
        both_not_dn = Minus(Minus(io, ion), delta_n)  # (I_o ∩ I_n) \ Δ_n
        both_not_do = Minus(Minus(io, ion), delta_o)  # (I_n ∩ I_o) \ Δ_o
        either = Union(io, ino)                       # I_o ∪ I_n
        run.touched = set()
        for rule in recursive:
            run.move(rule, _instances2(rule, io, io, (delta_o, _EMPTY), (ion, ino)), i, -1)
            if moved_earlier:
                run.move(rule, _instances(rule, both_not_dn, either,
                                          (_FactSet(moved_earlier), _EMPTY)), i, -1)
            run.move(rule, _instances2(rule, i_n, i_n, (delta_n, _EMPTY), (ino, ion)), i, +1)
            if moved_later:
                run.move(rule, _instances(rule, both_not_do, either,
                                          (_FactSet(moved_later), _EMPTY)), i, +1)
        touched = run.touched
        run.seen.clear()

    stats.rounds += rounds
    for rel in S:
        for row in ion.rel.get(rel, ()):
            D.add(rel, row)
        for row in ino.rel.get(rel, ()):
            A.add(rel, row)
    tr.refile(run.all_touched)


def _stratum_fn(stratum: Stratum):
    """Counting where counts are exact; aggregates and iterated strata go to DRed."""
    return dred.dred_stratum if stratum.aggregates or stratum.iterated else _counting_stratum


def materialize(plan: Plan, facts: Iterable[Fact] = (), *,
                rng: random.Random | None = None) -> State:
    """Algorithm 2 as maintenance from the empty trace (every rule has a positive atom, so
    mat(Π, ∅) = ∅; by non-repetition this considers each instance once, as Algorithm 2)."""
    state = State(plan, Database(), BaseLedger(), name, rng)
    state.extra["trace"] = {}
    apply(state, [("+", f) for f in [*plan.program.facts, *facts]])
    return state


def apply(state: State, batch: list[tuple[str, Fact]]) -> Delta:
    """One batch; ``state.extra["instances"]`` then holds the rule instances it undid and
    applied (the paper's cost metric), ``records`` the trace's (fact, iteration) counters."""
    state.extra["instances"] = {"undone": 0, "applied": 0}
    delta = dred.apply(state, batch, _stratum_fn)
    state.extra["records"] = sum(t.records for t in state.extra["trace"].values())
    return delta


def trace_of(state: State, stratum: int) -> list[dict[FactKey, int]]:
    """Stratum ``stratum``'s trace N_1, N_2, ... (empty for strata DRed maintains)."""
    tr: Trace | None = state.extra["trace"].get(stratum)
    return tr.levels() if tr else []


def explain(state: State, fact: Fact) -> Derivation | None:
    return explain_by_search(state, fact)
