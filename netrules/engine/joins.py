"""Rule bodies compiled into join plans: the hot loop of every strategy, without interpretation.

``reference.solve_body`` interprets a body for each binding: it asks which argument positions
are bound, sorts them, copies a dict per matched row and walks each term's kind. None of that
changes from one binding to the next once the evaluation order and the variables bound on
entry are fixed, so a ``Join`` works it out once per (rule, first atom, pre-bound variables):
variables become slots of one list, each atom a probe on fixed positions with a key built from
fixed slots, and each step calls the next directly. It returns what the strategies keep (head
row, body rows), not bindings. ``solve_body`` stays the oracle: a hypothesis test holds every
``Join`` to it, result for result and in the same order.

Probes go to ``probe(relation, positions, key)`` where the database has one (``Database``,
``views.Patched``), else to ``lookup``; a probe may return a live index bucket, which is safe
because a run collects its results before the caller can change anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

from netrules.engine.reference import _CONST, _EXPR, _VAR, _spec, _where, body_order, probe_rows
from netrules.errors import EvalError
from netrules.facts import Value
from netrules.lang import ast
from netrules.lang.builtins import BuiltinError, compare, compile_term, evaluate

__all__ = ["Join", "join_for", "fire_rows", "rows_for", "bindings_of", "probe_patterns"]


Found = tuple[tuple, tuple]  # (head row, body rows in positive-atom order)
_Step = Callable[[list, list, list, list], None]


def _probe_fn(db: Any) -> Callable[[str, tuple[int, ...], tuple], Any]:
    probe = getattr(db, "probe", None)
    if probe is not None:
        return probe
    return lambda rel, pos, key: probe_rows(db, rel, pos, key)


def _no_key(vals: list) -> tuple:
    return ()


def _key_fn(parts: list[tuple[int, Value]]) -> Callable[[list], tuple]:
    """Builds a probe key from the slots (-1: a constant) in ``parts``."""
    slots = [s for s, _ in parts]
    if all(s >= 0 for s in slots):
        if len(slots) == 1:
            s0 = slots[0]
            return lambda vals: (vals[s0],)
        get = itemgetter(*slots)
        return lambda vals: get(vals)
    fixed = tuple(parts)
    return lambda vals: tuple(vals[s] if s >= 0 else c for s, c in fixed)


class Join:
    """One rule body compiled for one order and one set of variables bound on entry."""

    def __init__(self, rule: ast.Rule, order: list[ast.Literal], prebound: tuple[str, ...],
                 bindings: bool = False):
        self.rule = rule
        self.prebound = prebound
        atoms = rule.atoms()
        atom_no = {id(a): i for i, a in enumerate(atoms)}
        self.n_atoms = len(atoms)
        slot: dict[str, int] = {}
        for name in prebound:
            slot.setdefault(name, len(slot))
        bound = set(prebound)
        for lit in order:  # every variable gets its slot up front
            names = ast.variables_of(lit.atom if isinstance(lit, ast.Negation) else lit)
            for name in sorted(names):
                if name != "_":
                    slot.setdefault(name, len(slot))
        for name in sorted(ast.variables_of(rule.head)):
            slot.setdefault(name, len(slot))
        self.slot = slot
        self.n_slots = len(slot)
        self.probes: list[tuple[str, tuple[int, ...]]] = []  # (relation, bound positions)
        step: _Step = self._binding_step() if bindings else self._emit_step()
        plans = []
        for lit in order:
            plans.append((lit, frozenset(bound)))
            if isinstance(lit, ast.Atom):
                bound |= ast.variables_of(lit) - {"_"}
            elif isinstance(lit, ast.Assignment):
                bound.add(lit.var.name)
        for lit, before in reversed(plans):
            if isinstance(lit, ast.Atom):
                step = self._atom_step(lit, atom_no[id(lit)], before, step)
            elif isinstance(lit, ast.Negation):
                step = self._negation_step(lit, before, step)
            elif isinstance(lit, ast.Assignment):
                step = self._assignment_step(lit, before, step)
            elif isinstance(lit, ast.Comparison):
                step = self._comparison_step(lit, before, step)
            else:
                raise EvalError(f"{_where(rule)}cannot join `{lit}` in `{rule}`")
        self._first = step

    # -- running -------------------------------------------------------------------------

    def run(self, read: Mapping[int, Any] | Any, neg: Any = None,
            start: tuple[Value, ...] = ()) -> list:
        """(head row, body rows) for every body solution, in ``solve_body``'s order (a
        variable binding each, for a join compiled with ``bindings``). ``read``:
        one database, or one per positive atom; negations read ``neg`` (default: ``read``);
        ``start``: values of the pre-bound variables, in ``prebound`` order."""
        if isinstance(read, Mapping):
            dbs = [read[i] for i in range(self.n_atoms)]
        else:
            dbs = [read] * self.n_atoms
        if neg is None and not isinstance(read, Mapping):
            neg = read
        vals: list = [None] * self.n_slots
        for i, v in enumerate(start):
            vals[i] = v
        out: list = []
        ctx = [dbs, [_probe_fn(db) for db in dbs], neg]
        self._first(vals, [None] * self.n_atoms, ctx, out)
        return out

    def _binding(self, vals: list, names: frozenset[str] | set[str]) -> dict[str, Value]:
        slot = self.slot
        return {n: vals[slot[n]] for n in names if n in slot}

    def _term(self, term: object, available: frozenset[str] | set[str]
              ) -> Callable[[list], Value]:
        """``term``'s value from the slots; where a variable is not bound yet, the
        interpreter's own error (``evaluate`` over what is bound)."""
        names = ast.variables_of(term)
        if names <= available:
            return compile_term(term, self.slot)
        have = names & set(available)
        return lambda vals: evaluate(term, self._binding(vals, have))

    def _fail(self, err: BuiltinError, lit: object) -> EvalError:
        return EvalError(f"{_where(self.rule)}{err} (in `{lit}` of `{self.rule}`)")

    # -- steps ---------------------------------------------------------------------------

    def _emit_step(self) -> _Step:
        spec = _spec(self.rule.head)
        slot = self.slot
        if all(kind == _VAR for kind, _ in spec):
            slots = [slot[x] for _, x in spec]  # type: ignore[index]
            if not slots:

                def head(vals: list) -> tuple:
                    return ()
            elif len(slots) == 1:
                s0 = slots[0]

                def head(vals: list) -> tuple:
                    return (vals[s0],)
            else:
                head = itemgetter(*slots)  # type: ignore[assignment]
        else:
            every = set(slot)
            parts = [self._term(ast.Var(x) if kind == _VAR else ast.Const(x)  # type: ignore
                                if kind == _CONST else x, every) for kind, x in spec]

            def head(vals: list) -> tuple:
                try:
                    return tuple([f(vals) for f in parts])
                except BuiltinError as err:
                    raise EvalError(f"{_where(self.rule)}{err} (in the head of "
                                    f"`{self.rule}`)") from None

        def emit(vals: list, rows: list, ctx: list, out: list) -> None:
            out.append((head(vals), tuple(rows)))
        return emit

    def _binding_step(self) -> _Step:
        """Emit the variable binding as a dict, for aggregates (``AggIndex``) and callers that
        group instances by their variables."""
        items = tuple(self.slot.items())

        def emit(vals: list, rows: list, ctx: list, out: list) -> None:
            out.append({n: vals[s] for n, s in items})
        return emit

    def _atom_step(self, atom: ast.Atom, k: int, bound: frozenset[str], nxt: _Step) -> _Step:
        spec = _spec(atom)
        slot = self.slot
        rel = atom.relation
        key_parts: list[tuple[int, Value]] = []
        pos: list[int] = []
        binds: list[tuple[int, int]] = []  # (argument position, slot) bound by this atom
        checks: list[tuple[int, int]] = []  # (argument position, slot) repeated in this atom
        exprs: list[tuple[int, object]] = []
        fresh: set[str] = set()
        for p, (kind, x) in enumerate(spec):
            if kind == _VAR:
                if x in bound:
                    pos.append(p)
                    key_parts.append((slot[x], None))  # type: ignore[index]
                elif x in fresh:
                    checks.append((p, slot[x]))  # type: ignore[index]
                else:
                    fresh.add(x)  # type: ignore[arg-type]
                    binds.append((p, slot[x]))  # type: ignore[index]
            elif kind == _CONST:
                pos.append(p)
                key_parts.append((-1, x))  # type: ignore[arg-type]
            elif kind == _EXPR:  # sees what earlier arguments bound, as in ``_match``
                exprs.append((p, self._term(x, bound | fresh)))
        positions = tuple(pos)
        key = _key_fn(key_parts) if key_parts else _no_key
        whole = len(positions) == len(spec) and not exprs
        if positions and not whole:
            self.probes.append((rel, positions))
        binds_t, checks_t = tuple(binds), tuple(checks)
        join = self

        def matches(vals: list, row: tuple) -> bool:
            for p, s in checks_t:
                if row[p] != vals[s]:
                    return False
            if exprs:
                for p, term in exprs:
                    try:
                        if term(vals) != row[p]:
                            return False
                    except BuiltinError as err:
                        raise EvalError(f"{_where(join.rule)}{err} in {join.rule}") from None
            return True

        if whole:
            def step(vals: list, rows: list, ctx: list, out: list) -> None:
                row = key(vals)
                if (rel, row) in ctx[0][k]:
                    rows[k] = row
                    nxt(vals, rows, ctx, out)
            return step

        simple = not checks_t and not exprs
        if len(binds_t) == 1 and simple:
            (p0, s0), = binds_t

            def step(vals: list, rows: list, ctx: list, out: list) -> None:
                found = ctx[1][k](rel, positions, key(vals))
                for row in found:
                    vals[s0] = row[p0]
                    rows[k] = row
                    nxt(vals, rows, ctx, out)
            return step

        def step(vals: list, rows: list, ctx: list, out: list) -> None:
            found = ctx[1][k](rel, positions, key(vals))
            for row in found:
                for p, s in binds_t:
                    vals[s] = row[p]
                if simple or matches(vals, row):
                    rows[k] = row
                    nxt(vals, rows, ctx, out)
        return step

    def _negation_step(self, lit: ast.Negation, bound: frozenset[str], nxt: _Step) -> _Step:
        a = lit.atom
        if not isinstance(a, ast.Atom):
            raise EvalError(f"{_where(self.rule)}cannot join `{lit}` in `{self.rule}`")
        wild = any(isinstance(t, ast.Var) and (t.name == "_" or t.name not in bound)
                   for t in a.args)
        probe_rule = ast.Rule(ast.Atom("_probe", ()), (a,))
        inner = Join(probe_rule, [a], tuple(sorted(bound))) if wild else None
        names = sorted(bound)
        args = [] if wild else [self._term(t, bound) for t in a.args]
        join = self

        def step(vals: list, rows: list, ctx: list, out: list) -> None:
            neg = ctx[2]
            try:
                if inner is not None:
                    hit = bool(inner.run(neg, neg, tuple(vals[join.slot[n]] for n in names)))
                else:
                    hit = (a.relation, tuple([f(vals) for f in args])) in neg
            except BuiltinError as err:
                raise join._fail(err, lit) from None
            if not hit:
                nxt(vals, rows, ctx, out)
        return step

    def _assignment_step(self, lit: ast.Assignment, bound: frozenset[str], nxt: _Step
                         ) -> _Step:
        s = self.slot[lit.var.name]
        check = lit.var.name in bound
        expr = self._term(lit.expr, bound)
        join = self

        def step(vals: list, rows: list, ctx: list, out: list) -> None:
            try:
                v = expr(vals)
            except BuiltinError as err:
                raise join._fail(err, lit) from None
            if check:
                if vals[s] == v:
                    nxt(vals, rows, ctx, out)
            else:
                vals[s] = v
                nxt(vals, rows, ctx, out)
        return step

    def _comparison_step(self, lit: ast.Comparison, bound: frozenset[str], nxt: _Step
                         ) -> _Step:
        left, right, op = self._term(lit.left, bound), self._term(lit.right, bound), lit.op
        join = self

        def step(vals: list, rows: list, ctx: list, out: list) -> None:
            try:
                ok = compare(op, left(vals), right(vals))
            except BuiltinError as err:
                raise join._fail(err, lit) from None
            if ok:
                nxt(vals, rows, ctx, out)
        return step


def join_for(rule: ast.Rule, first: int | None = None, prebound: tuple[str, ...] = (),
             bindings: bool = False) -> Join:
    """The compiled body of ``rule`` starting from positive atom ``first`` (``body_order``),
    with ``prebound`` variables given on entry, emitting (head, rows) or, with ``bindings``,
    variable bindings; cached on the rule."""
    cache = rule.__dict__.get("_nr_joins")
    if cache is None:
        cache = {}
        object.__setattr__(rule, "_nr_joins", cache)
    j = cache.get((first, prebound, bindings))
    if j is None:
        j = cache[(first, prebound, bindings)] = Join(rule, body_order(rule, first), prebound,
                                                      bindings)
    return j


def bindings_of(rule: ast.Rule, reads: Mapping[int, Any] | Any, neg: Any = None,
                first: int | None = None, start: Mapping[str, Value] | None = None
                ) -> list[dict[str, Value]]:
    """``solve_body``'s bindings (variables only, no matched rows), compiled; ``start``
    pre-binds variables."""
    names = tuple(sorted(start)) if start else ()
    values = tuple(start[n] for n in names) if start else ()
    return join_for(rule, first, names, bindings=True).run(reads, neg, values)


def fire_rows(rule: ast.Rule, reads: Mapping[int, Any] | Any, neg: Any = None,
              first: int | None = None) -> list[Found]:
    """(head row, body rows) of every instance; ``first``: the atom the join starts from."""
    return join_for(rule, first).run(reads, neg)


def probe_patterns(rules: list[ast.Rule]) -> set[tuple[str, tuple[int, ...]]]:
    """(relation, bound positions) of every index lookup that maintaining ``rules`` makes:
    a join from each positive atom (a change there) and, for a rule without an aggregate,
    the backward join from a head row (is this fact still derivable? an aggregate row is
    answered by its group index). A database can build those indexes up front."""
    out: set[tuple[str, tuple[int, ...]]] = set()
    for rule in rules:
        joins = [join_for(rule, i) for i in range(len(rule.atoms()))]
        if not rule.head.aggregate():
            joins.append(join_for(rule, None, _head_start(rule)[0]))
        for j in joins:
            out.update(j.probes)
    return out


def _head_start(rule: ast.Rule) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...],
                                        tuple[tuple[int, int], ...],
                                        tuple[tuple[int, Value], ...]]:
    """For solving ``rule`` for a given head row: the head's variables (each once), the
    positions to read them from, the positions of repeats that must agree with them, and
    (position, constant) pairs the row must match."""
    cached = rule.__dict__.get("_nr_head_start")
    if cached is None:
        names: list[str] = []
        take: list[tuple[int, int]] = []
        repeats: list[tuple[int, int]] = []
        consts: list[tuple[int, Value]] = []
        for p, t in enumerate(rule.head.args):
            if isinstance(t, ast.Var) and t.name != "_":
                if t.name in names:
                    repeats.append((p, names.index(t.name)))
                else:
                    names.append(t.name)
                    take.append((p, len(names) - 1))
            elif isinstance(t, ast.Const):
                consts.append((p, t.value))
        cached = (tuple(names), tuple(take), tuple(repeats), tuple(consts))
        object.__setattr__(rule, "_nr_head_start", cached)
    return cached


def rows_for(rule: ast.Rule, row: tuple, read: Any, neg: Any = None) -> list[tuple]:
    """Body rows of every instance of ``rule`` (positives in ``read``) deriving exactly head
    ``row``: ``firing.instances_for`` compiled."""
    names, take, repeats, consts = _head_start(rule)
    for p, c in consts:
        if row[p] != c:
            return []
    start: list = [None] * len(names)
    for p, i in take:
        start[i] = row[p]
    for p, i in repeats:
        if start[i] != row[p]:
            return []
    found = join_for(rule, None, names).run(read, neg, tuple(start))
    return [rows for head, rows in found if head == row]
