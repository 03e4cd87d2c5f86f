"""The from-scratch reference evaluator: the oracle every engine and strategy is tested against.

Deliberately simple rather than fast: set semantics, strata in order, and inside each stratum a
semi-naive loop in which every rule is re-run once per recursive body position with that atom
restricted to the last round's new facts (re-deriving a known fact is harmless under sets).

Aggregates group as the plan decided (``Rule.grouping``: the head's declared key, else its
other arguments) over the *distinct* satisfying bindings of the body's variables:
``a_COUNT<*>`` counts them, ``a_SUM<C>`` adds C once per binding,
``a_MIN``/``a_MAX`` take the extreme. Negation reads the completed lower strata.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from netrules.errors import EvalError
from netrules.facts import Fact, Value, sort_key
from netrules.lang import ast
from netrules.lang.builtins import BuiltinError, compare, evaluate
from netrules.lang.check import schedule_body
from netrules.plan import Plan, plan_program

__all__ = ["Database", "probe_rows", "evaluate_program", "solve_body", "head_fact",
           "aggregate_rule", "best_pair", "assemble_row", "iterate_stratum", "evaluate_stratum",
           "derivation_counts"]

Binding = dict[str, Value]


class Database:
    """Facts per relation with lazily built hash indexes on bound argument positions.

    An index bucket is a dict used as an ordered set: removing one fact is O(1) (as a list,
    deleting a bridge's 49,000 facts from americas' 1,138-row buckets took 9 s of list
    scans) and lookups still return rows in insertion order, so runs repeat exactly.
    """

    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        self.rel: dict[str, set[tuple[Value, ...]]] = defaultdict(set)
        self._idx: dict[tuple[str, tuple[int, ...]], dict[tuple, dict[tuple, None]]] = {}
        self._idx_of: dict[str, list[tuple[tuple[int, ...], dict]]] = {}  # per relation
        for f in facts:
            self.add(f.relation, f.args)

    def add(self, relation: str, args: tuple[Value, ...]) -> bool:
        rows = self.rel[relation]
        if args in rows:
            return False
        rows.add(args)
        for pos, index in self._idx_of.get(relation, ()):
            index.setdefault(tuple([args[p] for p in pos]), {})[args] = None
        return True

    def discard(self, relation: str, args: tuple[Value, ...]) -> bool:
        rows = self.rel.get(relation)
        if not rows or args not in rows:
            return False
        rows.discard(args)
        for pos, index in self._idx_of.get(relation, ()):
            key = tuple([args[p] for p in pos])
            bucket = index.get(key)
            if bucket is not None:
                bucket.pop(args, None)
                if not bucket:
                    del index[key]
        return True

    def __contains__(self, item: tuple[str, tuple[Value, ...]]) -> bool:
        return item[1] in self.rel.get(item[0], ())

    def has(self, relation: str) -> bool:
        return bool(self.rel.get(relation))

    def lookup(self, relation: str, bound: Mapping[int, Value]) -> Iterable[tuple]:
        rows = self.rel.get(relation)
        if not rows:
            return ()
        if not bound:
            return list(rows)  # a snapshot: callers may add while they iterate
        pos = tuple(sorted(bound))
        if len(pos) == len(next(iter(rows))) and pos[-1] == len(pos) - 1:
            # every argument bound: a membership test, not a whole-relation index
            row = tuple(bound[p] for p in pos)
            return [row] if row in rows else []
        key = (relation, pos)
        index = self._idx.get(key)
        if index is None:
            index = self._index(relation, pos)
        return list(index.get(tuple(bound[p] for p in pos), ()))

    def probe(self, relation: str, pos: tuple[int, ...], key: tuple) -> Iterable[tuple]:
        """Rows whose arguments at ``pos`` (sorted) equal ``key``: the live index bucket, not
        a copy, for compiled joins (``joins.Join``), which change nothing while they read."""
        rows = self.rel.get(relation)
        if not rows:
            return ()
        if not pos:
            return rows
        index = self._idx.get((relation, pos))
        if index is None:
            index = self._index(relation, pos)
        return index.get(key, ())

    def warm(self, patterns: Iterable[tuple[str, tuple[int, ...]]]) -> None:
        """Build now the indexes ``patterns`` name (relation, sorted positions) that are not
        built yet, so the first lookup after a load does not pay for a whole relation."""
        for relation, pos in patterns:
            if self.rel.get(relation) and (relation, pos) not in self._idx:
                self._index(relation, pos)

    def _index(self, relation: str, pos: tuple[int, ...]) -> dict[tuple, dict[tuple, None]]:
        """Build the index of ``relation`` on ``pos``; ``add``/``discard`` keep it current."""
        index: dict[tuple, dict[tuple, None]] = {}
        for row in self.rel[relation]:
            index.setdefault(tuple([row[p] for p in pos]), {})[row] = None
        self._idx[(relation, pos)] = index
        self._idx_of.setdefault(relation, []).append((pos, index))
        return index

    def facts(self, relation: str, locspec: int | None = 0) -> list[Fact]:
        return sorted((Fact(relation, a, locspec) for a in self.rel.get(relation, ())),
                      key=Fact.key)


def probe_rows(db: Any, relation: str, pos: tuple[int, ...], key: tuple) -> Iterable[tuple]:
    """``db.probe`` where the database or view has one, else its ``lookup``."""
    probe = getattr(db, "probe", None)
    if probe is not None:
        return probe(relation, pos, key)
    return db.lookup(relation, dict(zip(pos, key, strict=True)))


def _where(rule: ast.Rule) -> str:
    return f"{rule.loc}: " if rule.loc else ""


_VAR, _CONST, _EXPR, _ANON = 0, 1, 2, 3


def _spec(atom: ast.Atom) -> tuple[tuple[int, object], ...]:
    """Per argument: (kind, name or value or term); computed once per atom and kept on it
    (hashing a frozen AST node on every call would cost more than the match itself)."""
    cached = atom.__dict__.get("_nr_spec")
    if cached is not None:
        return cached
    out = []
    for t in atom.args:
        if isinstance(t, ast.Var):
            out.append((_ANON, None) if t.name == "_" else (_VAR, t.name))
        elif isinstance(t, ast.Const):
            out.append((_CONST, t.value))
        else:
            out.append((_EXPR, t))
    spec = tuple(out)
    object.__setattr__(atom, "_nr_spec", spec)
    return spec


def _match(atom: ast.Atom, row: tuple, binding: Binding, rule: ast.Rule) -> Binding | None:
    out = binding
    for (kind, x), value in zip(_spec(atom), row, strict=True):
        if kind == _VAR:
            have = out.get(x, _UNSET)  # type: ignore[arg-type]
            if have is _UNSET:
                if out is binding:
                    out = dict(binding)
                out[x] = value  # type: ignore[index]
            elif have != value:
                return None
        elif kind == _CONST:
            if x != value:
                return None
        elif kind == _EXPR:
            try:
                if evaluate(x, out) != value:
                    return None
            except BuiltinError as err:
                raise EvalError(f"{_where(rule)}{err} in {rule}") from None
    return out


_UNSET = object()


def _bound_positions(atom: ast.Atom, binding: Binding) -> dict[int, Value]:
    out = {}
    for i, (kind, x) in enumerate(_spec(atom)):
        if kind == _VAR:
            if x in binding:
                out[i] = binding[x]  # type: ignore[index]
        elif kind == _CONST:
            out[i] = x
    return out


def body_order(rule: ast.Rule, first: int | None = None) -> list[ast.Literal]:
    """The order ``solve_body`` evaluates the body in: atoms as written, each condition as
    soon as its variables are bound; with ``first``, that positive atom goes first. A delta
    rule starts from its delta atom, so a small change never scans a whole relation that
    happens to be written before it. Cached on the rule object."""
    cache = rule.__dict__.get("_nr_orders")
    if cache is None:
        cache = {}
        object.__setattr__(rule, "_nr_orders", cache)
    order = cache.get(first)
    if order is None:
        body = rule.body
        if first is not None:
            lead = rule.atoms()[first]
            body = (lead, *(x for x in rule.body if x is not lead))
        order = cache[first] = schedule_body(body)[0]
    return order


def solve_body(rule: ast.Rule, read: Mapping[int, Any] | Any,
               neg: Any = None, order: list[ast.Literal] | None = None,
               binding: Binding | None = None, first: int | None = None
               ) -> Iterator[Binding]:
    """Every binding satisfying ``rule``'s body. ``read`` gives the database each positive atom
    (by position among positive atoms, as written) reads from, or one database for all;
    negations read ``neg`` (default: the same database); ``first``: the atom to start from."""
    if order is None:
        order = body_order(rule, first)
    atom_no = {id(a): i for i, a in enumerate(rule.atoms())}

    def db_for(atom: ast.Atom) -> Database:
        return read[atom_no[id(atom)]] if isinstance(read, Mapping) else read

    neg_db = neg if neg is not None else (None if isinstance(read, Mapping) else read)

    def go(k: int, b: Binding) -> Iterator[Binding]:
        if k == len(order):
            yield b
            return
        lit = order[k]
        try:
            if isinstance(lit, ast.Atom):
                slot = ("#row", atom_no[id(lit)])
                for row in db_for(lit).lookup(lit.relation, _bound_positions(lit, b)):
                    nb = _match(lit, row, b, rule)
                    if nb is not None:
                        nb = dict(nb) if nb is b else nb
                        nb[slot] = row  # type: ignore[index]  # the row this atom matched
                        yield from go(k + 1, nb)
            elif isinstance(lit, ast.Assignment):
                v = evaluate(lit.expr, b)
                if lit.var.name in b:  # pre-bound (solving for a given head): a check
                    if b[lit.var.name] == v:
                        yield from go(k + 1, b)
                else:
                    nb = dict(b)
                    nb[lit.var.name] = v
                    yield from go(k + 1, nb)
            elif isinstance(lit, ast.Comparison):
                if compare(lit.op, evaluate(lit.left, b), evaluate(lit.right, b)):
                    yield from go(k + 1, b)
            elif isinstance(lit, ast.Negation):
                assert neg_db is not None
                a = lit.atom
                wild = any(isinstance(t, ast.Var) and (t.name == "_" or t.name not in b)
                           for t in a.args)
                if wild:
                    hit = any(_match(a, row, b, rule) is not None
                              for row in neg_db.lookup(a.relation, _bound_positions(a, b)))
                else:
                    hit = (a.relation, tuple(evaluate(t, b) for t in a.args)) in neg_db
                if not hit:
                    yield from go(k + 1, b)
        except BuiltinError as err:
            raise EvalError(f"{_where(rule)}{err} (in `{lit}` of `{rule}`)") from None

    yield from go(0, dict(binding or {}))


def head_fact(rule: ast.Rule, b: Binding) -> tuple[Value, ...]:
    """The head tuple a (non-aggregate) rule derives under binding ``b``."""
    try:
        return tuple(b[x] if kind == _VAR else x if kind == _CONST  # type: ignore[index]
                     else evaluate(x, b) for kind, x in _spec(rule.head))
    except BuiltinError as err:
        raise EvalError(f"{_where(rule)}{err} (in the head of `{rule}`)") from None


def aggregate_rule(rule: ast.Rule, bindings: Iterable[Binding]) -> set[tuple[Value, ...]]:
    """Group distinct body bindings as the plan decided (``Rule.grouping``) and aggregate;
    a payload comes from the binding achieving the extreme (``best_pair``)."""
    g = rule.grouping
    assert g is not None
    agg = rule.head.args[g.pos]
    assert isinstance(agg, ast.Aggregate)
    seen: set[tuple] = set()
    groups: dict[tuple, list[Value]] = defaultdict(list)
    for b in bindings:
        key = frozenset(kv for kv in b.items() if isinstance(kv[0], str))
        if key in seen:
            continue
        seen.add(key)
        try:
            vals = {i: evaluate(t, b) for i, t in enumerate(rule.head.args) if i != g.pos}
        except BuiltinError as err:
            raise EvalError(f"{_where(rule)}{err} (in the head of `{rule}`)") from None
        value = b[agg.var.name] if agg.var else 1
        group = tuple(vals[i] for i in g.group)
        groups[group].append((value, tuple(vals[i] for i in g.payload)) if g.payload
                             else value)
    out: set[tuple[Value, ...]] = set()
    for group, items in groups.items():
        payload: tuple = ()
        if agg.func == "COUNT":
            v: Value = len(items)
        elif agg.func == "SUM":
            v = sum(items)  # type: ignore[arg-type]
        elif g.payload:
            v, payload = best_pair(agg.func, items)  # type: ignore[misc]
        elif agg.func == "MIN":
            v = min(items, key=sort_key)
        else:
            v = max(items, key=sort_key)
        out.add(assemble_row(g, group, v, payload))
    return out


def best_pair(func: str, pairs: Iterable) -> tuple[Value, tuple]:
    """The (value, payload) an arg-min (``func`` MIN) or arg-max (MAX) keeps: the extreme
    value, and among the pairs reaching it the smallest payload by ``sort_key`` (for both
    functions), so the row never depends on evaluation order."""
    best = None
    for p in pairs:
        if best is None:
            best = p
            continue
        kv, kb = sort_key(p[0]), sort_key(best[0])
        if kv == kb:
            if sort_key(p[1]) < sort_key(best[1]):
                best = p
        elif (kv < kb) == (func == "MIN"):
            best = p
    assert best is not None
    return best


def assemble_row(g: ast.AggGroup, group: tuple, value: Value, payload: tuple = ()
                 ) -> tuple[Value, ...]:
    """The head row of one group: group values, the aggregate, the payload in place."""
    row: list[Value] = [None] * (len(g.group) + len(g.payload) + 1)  # type: ignore[list-item]
    for i, x in zip(g.group, group, strict=True):
        row[i] = x
    for i, x in zip(g.payload, payload, strict=True):
        row[i] = x
    row[g.pos] = value
    return tuple(row)


class Overlay:
    """Reads ``top`` for the hidden relations and ``lower`` for every other one."""

    def __init__(self, lower: Any, top: Database, hidden: frozenset[str]) -> None:
        self.lower, self.top, self.hidden = lower, top, hidden

    def lookup(self, relation: str, bound: Mapping[int, Value]) -> Iterable[tuple]:
        src = self.top if relation in self.hidden else self.lower
        return src.lookup(relation, bound)

    def probe(self, relation: str, pos: tuple[int, ...], key: tuple) -> Iterable[tuple]:
        return probe_rows(self.top if relation in self.hidden else self.lower, relation, pos,
                          key)

    def __contains__(self, item: tuple[str, tuple]) -> bool:
        return item in (self.top if item[0] in self.hidden else self.lower)

    def has(self, relation: str) -> bool:
        src = self.top if relation in self.hidden else self.lower
        return src.has(relation) if hasattr(src, "has") else True


def iterate_stratum(stratum: Any, lower: Any, *, max_iterations: int = 10_000
                    ) -> tuple[Database, int]:
    """An iterated stratum's meaning: apply all its rules at once to the previous result,
    starting from nothing, until the result repeats (Jacobi iteration). With positive link
    costs, path-vector routing over neighbours' best routes settles on the unique solution,
    where every best route extends a neighbour's best route. Returns (facts, iterations)."""
    cur = Database()
    for it in range(1, max_iterations + 1):
        view = Overlay(lower, cur, stratum.relations)
        new = Database()
        for rule in stratum.rules:
            if rule.head.aggregate():
                rows = aggregate_rule(rule, solve_body(rule, view))
            else:
                rows = {head_fact(rule, b) for b in solve_body(rule, view)}
            for row in rows:
                new.add(rule.head.relation, row)
        if all(new.rel.get(r, set()) == cur.rel.get(r, set()) for r in stratum.relations):
            return cur, it
        cur = new
    raise EvalError(f"relations {', '.join(sorted(stratum.relations))} recurse through an "
                    f"aggregate and did not settle after {max_iterations} iterations (does a "
                    "cycle of zero or negative costs keep improving?)")


def evaluate_stratum(stratum: Any, db: Database, *, max_facts: int = 5_000_000) -> None:
    """Add one stratum's facts to ``db`` (which holds every lower stratum, complete)."""
    if stratum.iterated:
        facts_of, _ = iterate_stratum(stratum, db)
        for rel, rows in facts_of.rel.items():
            for row in rows:
                db.add(rel, row)
        return
    for rule in (r for r in stratum.rules if r.head.aggregate()):
        for row in aggregate_rule(rule, solve_body(rule, db)):
            db.add(rule.head.relation, row)
    plain = [r for r in stratum.rules if not r.head.aggregate()]
    delta = Database()
    for rule in plain:
        rows = [head_fact(rule, b) for b in solve_body(rule, db)]
        for row in rows:
            if db.add(rule.head.relation, row):
                delta.add(rule.head.relation, row)
    total = sum(len(v) for v in db.rel.values())
    while stratum.recursive and any(delta.rel.values()):
        total += sum(len(v) for v in delta.rel.values())
        if total > max_facts:
            raise EvalError(f"more than {max_facts} facts derived: does a recursive rule "
                            "build ever longer lists without an f_member check?")
        new = Database()
        for rule in plain:
            atoms = rule.atoms()
            for i, a in enumerate(atoms):
                if a.relation not in stratum.relations or not delta.rel.get(a.relation):
                    continue
                read = {j: (delta if j == i else db) for j in range(len(atoms))}
                for b in solve_body(rule, read, neg=db):
                    row = head_fact(rule, b)
                    if (rule.head.relation, row) not in db:
                        new.add(rule.head.relation, row)
        for rel, rows in new.rel.items():
            for row in rows:
                db.add(rel, row)
        delta = new


def evaluate_program(program: ast.Program | Plan, facts: Iterable[Fact] = (),
                     *, max_facts: int = 5_000_000) -> dict[str, list[Fact]]:
    """The least model of the program over ``facts`` (plus its own), relation -> sorted facts.

    ``max_facts`` guards against programs whose function symbols never stop (a path rule
    without an ``f_member`` check on a cyclic graph): exceeding it raises EvalError.
    """
    plan = program if isinstance(program, Plan) else plan_program(program, localized=False)
    if plan.reactive:
        raise EvalError(f"{plan.program.file}: event rules fire on events and have no least "
                        "model; run them with netrules.engine.reactive.Reactive")
    db = Database(plan.program.facts)
    for f in facts:
        db.add(f.relation, f.args)
    for stratum in plan.strata:
        evaluate_stratum(stratum, db, max_facts=max_facts)
    return {rel: db.facts(rel, plan.locspec.get(rel, 0)) for rel in sorted(db.rel) if db.rel[rel]}


def derivation_counts(program: ast.Program, facts: Iterable[Fact] | Mapping[Fact, int] = ()
                      ) -> dict[Fact, int]:
    """Multiset semantics for a non-recursive positive program: every fact's multiplicity is
    its number of derivation trees (paper 000 §2.1), base facts counting as given.

    The incremental engines keep sets; this exists to check the papers' multiset examples
    (``hop(a,c) x2``) and the delta rules' "each derivation once" property.
    """
    from collections import Counter

    plan = plan_program(program, localized=False)
    for s in plan.strata:
        if s.recursive or s.aggregates or s.negation:
            raise EvalError("derivation counts are defined here for non-recursive positive "
                            f"programs only; stratum {s.index} ({', '.join(s.relations)}) "
                            "is not one")
    counts: Counter[tuple[str, tuple]] = Counter()
    items = facts.items() if isinstance(facts, Mapping) else ((f, 1) for f in facts)
    for f, n in items:
        counts[(f.relation, f.args)] += n
    for f in plan.program.facts:
        counts[(f.relation, f.args)] += 1
    db = Database(Fact(r, a) for (r, a), n in counts.items() if n > 0)
    for stratum in plan.strata:
        produced: Counter[tuple[str, tuple]] = Counter()
        for rule in stratum.rules:
            for b in solve_body(rule, db):
                mult = 1
                for atom in rule.atoms():
                    row = tuple(evaluate(t, b) if not (isinstance(t, ast.Var) and t.name == "_")
                                else None for t in atom.args)
                    mult *= counts[(atom.relation, row)]
                produced[(rule.head.relation, head_fact(rule, b))] += mult
        for key, n in produced.items():
            counts[key] += n
            db.add(*key)
    return {Fact(r, a, plan.locspec.get(r, 0)): n for (r, a), n in counts.items() if n > 0}
