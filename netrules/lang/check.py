"""Well-formedness of a parsed program: safety, arities, location specifiers, builtins, aggregates.

Every problem is collected as a located Diagnostic and reported together, sorted by position,
so a user fixes a program in one pass. ``X = e`` is resolved here into an assignment (X still
unbound) or an equality test, which is what OverLog programs in the wild mean by it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from netrules.errors import Diagnostic, ProgramError, SourceLoc
from netrules.lang import ast
from netrules.lang.builtins import BUILTINS
from netrules.lang.events import PERIODIC, PERIODIC_ARITIES, Reading, periodic_atoms, reading

__all__ = ["check_program", "schedule_body"]


def _calls(term: object):
    if isinstance(term, ast.Call):
        yield term
        for a in term.args:
            yield from _calls(a)
    elif isinstance(term, ast.ListExpr):
        for a in term.items:
            yield from _calls(a)
    elif isinstance(term, ast.BinOp):
        yield from _calls(term.left)
        yield from _calls(term.right)
    elif isinstance(term, ast.Neg):
        yield from _calls(term.operand)
    elif isinstance(term, ast.Atom):
        for a in term.args:
            yield from _calls(a)
    elif isinstance(term, ast.Negation):
        yield from _calls(term.atom)
    elif isinstance(term, ast.Assignment):
        yield from _calls(term.expr)
    elif isinstance(term, ast.Comparison):
        yield from _calls(term.left)
        yield from _calls(term.right)
    elif isinstance(term, ast.Rule):
        yield from _calls(term.head)
        for b in term.body:
            yield from _calls(b)


def schedule_body(body: tuple[ast.Literal, ...]) -> tuple[list[ast.Literal], set[str]]:
    """Order a body for left-to-right evaluation: atoms in written order, each condition as soon
    as its variables are bound. Returns the order and the variables left unbound at the end
    (empty for a safe rule); literals that never become ready are appended last."""
    bound: set[str] = set()
    order: list[ast.Literal] = []
    pending = list(body)
    unsafe: set[str] = set()

    def ready(lit: ast.Literal) -> bool:
        if isinstance(lit, ast.Assignment):
            return ast.variables_of(lit.expr) <= bound
        if isinstance(lit, ast.Comparison | ast.Negation):
            return ast.variables_of(lit) <= bound
        return True

    while pending:
        progressed = False
        for lit in list(pending):
            if isinstance(lit, ast.Atom):
                if any(not isinstance(p, ast.Atom) and ready(p) for p in pending):
                    continue
                if pending[0] is not lit and any(isinstance(p, ast.Atom)
                                                  for p in pending[: pending.index(lit)]):
                    continue
            elif not ready(lit):
                continue
            order.append(lit)
            pending.remove(lit)
            bound |= (ast.variables_of(lit) if isinstance(lit, ast.Atom)
                      else {lit.var.name} if isinstance(lit, ast.Assignment) else set())
            progressed = True
            break
        if not progressed:
            for lit in pending:
                unsafe |= ast.variables_of(lit) - bound
            order.extend(pending)
            break
    return order, unsafe


def _resolve_equalities(rule: ast.Rule) -> ast.Rule:
    """Turn ``X = e`` into ``X := e`` where X is not yet bound, else into ``==``."""
    if not any(isinstance(b, ast.Comparison) and b.op == "=" for b in rule.body):
        return rule
    bound = set().union(*(ast.variables_of(a) for a in rule.atoms())) if rule.atoms() else set()
    for b in rule.body:
        if isinstance(b, ast.Assignment):
            bound.add(b.var.name)
    new_body = []
    for b in rule.body:
        if isinstance(b, ast.Comparison) and b.op == "=":
            if isinstance(b.left, ast.Var) and b.left.name not in bound and b.left.name != "_":
                b = ast.Assignment(b.left, b.right, b.loc)
                bound.add(b.var.name)
            elif isinstance(b.right, ast.Var) and b.right.name not in bound:
                b = ast.Assignment(b.right, b.left, b.loc)
                bound.add(b.var.name)
            else:
                b = replace(b, op="==")
        new_body.append(b)
    return replace(rule, body=tuple(new_body))


def _local_head(rule: ast.Rule) -> ast.Rule:
    """``@Local`` in a head the body does not bind means the node the rule runs at (P2): the
    location of the body's first atom."""
    head, first = rule.head, next(iter(rule.atoms()), None)
    term = head.location_term
    if (not isinstance(term, ast.Var) or term.name != "Local" or first is None
            or "Local" in set().union(*(ast.variables_of(b) for b in rule.body))):
        return rule
    at = first.location_term
    if not isinstance(at, ast.Var):
        return rule
    args = list(head.args)
    args[head.locspec] = ast.Var(at.name, term.loc)  # type: ignore[index]
    return replace(rule, head=replace(head, args=tuple(args)))


def _unsupported(program: ast.Program, rules: tuple[ast.Rule, ...],
                 err: Callable[[str, str, SourceLoc | None], None]) -> None:
    """Constructs of the P2/RapidNet dialect that parse but that the engine cannot run yet:
    each refused by name at its position, never as a syntax error. Event rules
    (``netrules.lang.events``) may use what only makes sense when a rule fires once: ``delete``,
    ``periodic``, ``f_now``/``f_rand``, and soft state on the tables they write; in P2's
    reading also ``@Broadcast``, ``a_COUNT`` over the event, and events fed from outside."""
    rd = reading(program, rules)
    events, fired = rd.events, rd.fired
    reactive = [r for r in rules if rd.is_event_rule(r)]
    written = {r.head.relation for r in reactive}
    derived = {r.head.relation for r in rules if not rd.is_event_rule(r)}
    for m in program.materialized:
        if m.lifetime != float("inf") and m.name in derived:
            err("UNSUPPORTED", f"materialize({m.name}, {int(m.lifetime)}, ...): a finite "
                "lifetime (soft state) on a derived relation is not supported yet (base "
                "relations and tables written by event rules may have one); use infinity",
                m.loc)
        if m.name in written and m.name in derived:
            def names(rs: list[ast.Rule], rel: str = m.name) -> str:
                return ", ".join(r.label or str(r.head) for r in rs if r.head.relation == rel)
            err("UNSUPPORTED", f"{m.name} is both written by event rules ("
                f"{names(reactive)}) and derived by view rules ("
                f"{names([r for r in rules if r not in reactive])}), which is not supported",
                m.loc)
        if m.size != float("inf"):
            err("UNSUPPORTED", f"materialize({m.name}, ..., {int(m.size)}, ...): a finite "
                "table size (eviction) is not supported yet; use infinity", m.loc)
    for r in rules:
        at = r.head.location_term
        if isinstance(at, ast.Var) and at.name == "Broadcast" and not any(
                "Broadcast" in ast.variables_of(b) for b in r.body) and not (
                rd.p2 and r.head.relation in events):
            err("UNSUPPORTED", "@Broadcast (every node with a link from this one) is only "
                "supported for an event, in a program using periodic or delete",
                at.loc or r.head.loc)
        if r.delete and not any(a.relation in events for a in r.atoms()):
            err("UNSUPPORTED", f"delete rules without an event in the body (delete "
                f"{r.head.relation}(...) :- ...) are not supported: a deletion fires on an "
                "event or periodic", r.loc)
        for b in r.body:
            if isinstance(b, ast.Negation) and b.atom.relation in fired:
                err("UNSUPPORTED", f"a negated event ({b.atom.relation}) is not supported",
                    b.loc)
        for a in periodic_atoms(r):
            _check_periodic(a, err)
        if rd.is_event_rule(r):
            _check_event_rule(r, rd, err)
            continue
        for c in _calls(r):
            if c.name in BUILTINS and BUILTINS[c.name].volatile:
                err("UNSUPPORTED", f"{c.name}() in a rule is not supported yet: its value "
                    "depends on when the rule runs, which incremental maintenance cannot undo "
                    "(event rules may use it)", c.loc)
    mats = {m.name for m in program.materialized}
    if not mats:
        return  # netrules' own style: every relation is state
    for r in rules:
        agg = r.head.aggregate()
        evs = [a for a in r.atoms() if a.relation not in mats]
        if agg is not None and agg[1].func == "COUNT" and evs and not rd.p2:
            err("UNSUPPORTED", f"a_COUNT over event relation {evs[0].relation} (a count of "
                "the matches at that moment, 0 when none match) is only supported in a "
                "program using periodic or delete", agg[1].loc)
    derived |= written | {f.relation for f in program.facts} | rd.external(rules)
    first: dict[str, SourceLoc | None] = {}
    for r in rules:
        for a in r.atoms():
            first.setdefault(a.relation, a.loc)
    for rel, loc in sorted(first.items(), key=lambda kv: str(kv[1])):
        if rel not in mats and rel not in derived and rel != PERIODIC:
            err("UNSUPPORTED", f"{rel} is an event relation (never materialized) fed from "
                "outside: external events are supported only in a program using periodic "
                f"or delete; declare materialize({rel}, infinity, infinity, keys(...)) to "
                "keep it as state", loc)


def _check_event_rule(r: ast.Rule, rd: Reading,
                      err: Callable[[str, str, SourceLoc | None], None]) -> None:
    """What an event rule may not do yet: span nodes, aggregate other than by ``a_COUNT``
    over its one event (whose arguments must fix the group, so a count of 0 has a row)."""
    where = {str(a.location_term) for a in r.atoms()}
    if len(where) > 1:
        err("UNSUPPORTED", "an event rule whose body spans nodes ("
            + ", ".join(sorted("@" + w for w in where)) + ") is not supported yet", r.loc)
    agg = r.head.aggregate()
    if agg is None:
        return
    if agg[1].func != "COUNT":
        err("UNSUPPORTED", f"a_{agg[1].func} in an event rule is not supported yet",
            agg[1].loc)
        return
    evs = [a for a in r.atoms() if a.relation in rd.fired]
    group = set().union(*(ast.variables_of(t) for i, t in enumerate(r.head.args)
                          if i != agg[0]))
    if rd.p2 and (len(evs) != 1 or not group <= ast.variables_of(evs[0])):
        err("UNSUPPORTED", "a_COUNT in an event rule needs one event in the body that binds "
            "every other head argument (the group a count of 0 is reported for)", agg[1].loc)


def _check_periodic(a: ast.Atom, err: Callable[[str, str, SourceLoc | None], None]) -> None:
    """``periodic(@N, E, Period[, Repeats[, Delay[, Spacing]]])``: numbers after ``E``."""
    if a.arity not in PERIODIC_ARITIES or a.locspec != 0:
        err("UNSUPPORTED", f"periodic takes (@N, E, Period[, Repeats[, Delay[, Spacing]]]), "
            f"not {a.arity} argument(s)", a.loc)
        return
    for t in a.args[2:]:
        if not isinstance(t, ast.Const) or isinstance(t.value, bool) or not isinstance(
                t.value, int | float) or t.value < 0:
            err("UNSUPPORTED", f"periodic's period, repeats, delay and spacing must be "
                f"numbers >= 0, not {t}", getattr(t, "loc", None) or a.loc)
    if isinstance(a.args[2], ast.Const) and a.args[2].value == 0:
        err("UNSUPPORTED", "periodic's period must be greater than 0", a.loc)


def check_program(program: ast.Program) -> ast.Program:
    """Return the program with equalities resolved, or raise ProgramError with every problem."""
    src = program.source
    diags: list[Diagnostic] = []

    def err(code: str, msg: str, loc: SourceLoc | None,
            notes: tuple[tuple[SourceLoc | None, str], ...] = ()) -> None:
        diags.append(Diagnostic(code, msg, loc, notes, source=src))

    rules = tuple(_local_head(_resolve_equalities(r)) for r in program.rules)
    _unsupported(program, rules, err)
    arity: dict[str, tuple[int, SourceLoc | None]] = {}
    locspec: dict[str, tuple[int | None, SourceLoc | None]] = {}

    def see(rel: str, n: int, spec: int | None, loc: SourceLoc | None) -> None:
        if rel == PERIODIC:  # every form from 3 to 6 arguments, checked on its own
            return
        if rel in arity and arity[rel][0] != n:
            err("ARITY", f"{rel} is used with {n} arguments here but {arity[rel][0]} elsewhere",
                loc, ((arity[rel][1], f"{rel} used with {arity[rel][0]} arguments"),))
        arity.setdefault(rel, (n, loc))
        if rel in locspec and locspec[rel][0] != spec:
            def where(s: int | None) -> str:
                return "no '@'" if s is None else f"'@' on argument {s + 1}"
            err("LOCSPEC", f"{rel} has {where(spec)} here but {where(locspec[rel][0])} elsewhere",
                loc, ((locspec[rel][1], f"{rel} located by {where(locspec[rel][0])}"),))
        locspec.setdefault(rel, (spec, loc))

    for r in rules:
        see(r.head.relation, r.head.arity, r.head.locspec, r.head.loc)
        for b in r.body:
            a = b.atom if isinstance(b, ast.Negation) else b
            if isinstance(a, ast.Atom):
                see(a.relation, a.arity, a.locspec, a.loc)
    locs = program.fact_locs or (None,) * len(program.facts)
    for f, floc in zip(program.facts, locs, strict=True):
        see(f.relation, len(f.args), f.loc, floc)
    for m in program.materialized:
        if m.name in arity:
            bad = [k for k in m.keys if not 1 <= k <= arity[m.name][0]]
            if bad:
                err("KEYS", f"materialize({m.name}): key position {bad[0]} is outside "
                    f"1..{arity[m.name][0]}", m.loc)

    for r in rules:
        for c in _calls(r):
            b = BUILTINS.get(c.name)
            if b is None:
                err("UNKNOWN_FUNCTION", f"unknown function {c.name}; known: "
                    + ", ".join(sorted(BUILTINS)), c.loc)
            elif len(c.args) not in b.arities:
                want = " or ".join(map(str, b.arities))
                err("FUNCTION_ARITY", f"{c.name} takes {want} argument(s), not {len(c.args)}",
                    c.loc)
        for b in r.body:
            atoms = [b] if isinstance(b, ast.Atom) else [b.atom] if isinstance(b, ast.Negation) \
                else []
            for a in atoms:
                agg = a.aggregate()
                if agg:
                    err("AGGREGATE", "aggregates belong in a rule head, not its body", agg[1].loc)
        head_aggs = [a for a in r.head.args if isinstance(a, ast.Aggregate)]
        if len(head_aggs) > 1:
            err("AGGREGATE", "a head can hold only one aggregate", head_aggs[1].loc)
        for a in r.head.args:
            if isinstance(a, ast.Var) and a.name == "_":
                err("UNSAFE", "'_' cannot appear in a rule head", a.loc)
        if not r.atoms():
            err("UNSAFE", f"rule for {r.head.relation} has no positive body atom to bind its "
                "variables", r.loc)
            continue
        _, unsafe = schedule_body(r.body)
        for lit in r.body:
            if isinstance(lit, ast.Assignment):
                prior = set().union(*(ast.variables_of(a) for a in r.atoms()))
                if lit.var.name in prior:
                    err("REBOUND", f"{lit.var.name} is already bound by a body atom; "
                        f"compare with '==' instead of assigning", lit.loc)
        bound_vars = set().union(*(ast.variables_of(a) for a in r.atoms()))
        bound_vars |= {b.var.name for b in r.body if isinstance(b, ast.Assignment)}
        for lit in r.body:
            missing = (ast.variables_of(lit) - bound_vars) if not isinstance(lit, ast.Atom) \
                else set()
            if isinstance(lit, ast.Assignment):
                missing = ast.variables_of(lit.expr) - bound_vars
            for v in sorted(missing | (unsafe & ast.variables_of(lit))):
                kind = "negated atom" if isinstance(lit, ast.Negation) else "condition"
                err("UNSAFE", f"variable {v} in this {kind} is not bound by any positive body "
                    f"atom or assignment", lit.loc)
        refused = {"Broadcast"} if str(r.head.location_term) == "Broadcast" else set()
        for v in sorted(ast.variables_of(r.head) - bound_vars - refused):
            err("UNSAFE", f"head variable {v} of {r.head.relation} is not bound by the body",
                r.head.loc)
    if diags:
        diags.sort(key=Diagnostic.sort_key)
        raise ProgramError(f"{len(diags)} error(s) in {program.file}", diagnostics=diags,
                           code=diags[0].code)
    return replace(program, rules=rules)
