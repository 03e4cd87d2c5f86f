"""Rule localization: rewrite every rule so its body is evaluated at one node.

A rule whose body atoms sit at two locations (``link(@S,Z), reachable(@Z,D)``) is evaluated at
one of them, E, and the atoms at the other location L are joined there and *shipped* to E as
an auxiliary relation located at E. Shipping a copy of the link (Loo et al.'s ``linkD``) rather
than joining with the reverse link is what keeps the rewrite right on directed links: paper
000's printed rewrite needs ``link(@Z,S)`` and loses ``reachable(a,c)`` on the path a->b->c.

E is the location holding derived atoms (so the large, changing relations stay put and the
small base links move), ties broken by the later atom. Each other location's atoms must mention
E (the link-restricted condition); otherwise the rule is rejected, pointing at the ``@``.
"""

from __future__ import annotations

from dataclasses import replace

from netrules.errors import Diagnostic, PlanError
from netrules.lang import ast

__all__ = ["localize"]


def _loc_key(atom: ast.Atom) -> str | None:
    t = atom.location_term
    if isinstance(t, ast.Var):
        return "V:" + t.name
    if isinstance(t, ast.Const):
        return "C:" + repr(t.value)
    return None


def _term_of(key: str) -> ast.Term:
    return ast.Var(key[2:]) if key.startswith("V:") else ast.Const(eval_const(key[2:]))


def eval_const(text: str):
    import ast as pyast

    return pyast.literal_eval(text)


def localize(rules: tuple[ast.Rule, ...], derived: set[str], source: str = ""
             ) -> tuple[tuple[ast.Rule, ...], dict[str, ast.Rule]]:
    """Return the localized rules and the auxiliary relations it introduced (name -> rule)."""
    out: list[ast.Rule] = []
    aux: dict[str, ast.Rule] = {}
    diags: list[Diagnostic] = []
    for idx, rule in enumerate(rules):
        groups: dict[str, list[int]] = {}
        for i, lit in enumerate(rule.body):
            if isinstance(lit, ast.Atom) and _loc_key(lit) is not None:
                groups.setdefault(_loc_key(lit), []).append(i)
        if len(groups) <= 1:
            out.append(rule)
            continue

        def weight(key: str, groups: dict[str, list[int]] = groups,
                   rule: ast.Rule = rule) -> tuple[int, int]:
            idxs = groups[key]
            n_derived = sum(1 for i in idxs if rule.body[i].relation in derived)
            return (n_derived, max(idxs))

        e_key = max(groups, key=weight)
        e_term = _term_of(e_key)
        e_vars = ast.variables_of(e_term)
        new_body: list[ast.Literal] = []
        moved: set[int] = set()
        for key, idxs in groups.items():
            if key == e_key:
                continue
            atoms = [rule.body[i] for i in idxs]
            side_vars = set().union(*(ast.variables_of(a) for a in atoms))
            if not e_vars <= side_vars:
                first = atoms[0]
                diags.append(Diagnostic(
                    "NOT_LOCALIZABLE",
                    f"rule for {rule.head.relation} is not link-restricted: the atoms at "
                    f"{first.location_term} do not mention {e_term}, where the rest of the "
                    f"body is evaluated, so they cannot be shipped there",
                    first.loc, ((rule.loc, "in this rule"),), source=source))
                break
            # negations located at this side whose variables the side binds travel with it
            side_lits: list[ast.Literal] = list(atoms)
            for i, lit in enumerate(rule.body):
                if isinstance(lit, ast.Negation) and _loc_key(lit.atom) == key \
                        and ast.variables_of(lit) <= side_vars:
                    side_lits.append(lit)
                    moved.add(i)
            rest_vars = ast.variables_of(rule.head)
            agg = rule.head.aggregate()
            if agg and agg[1].func in ("COUNT", "SUM"):
                # they count distinct bindings of the whole body: a side variable projected
                # away at the ship would merge bindings (two links' costs counted as one)
                rest_vars |= side_vars
            for i, lit in enumerate(rule.body):
                if i not in idxs and i not in moved:
                    rest_vars |= ast.variables_of(lit)
            keep = sorted((side_vars & rest_vars) - e_vars)
            head_args = (e_term, *(ast.Var(v) for v in keep))
            single = len(side_lits) == 1 and all(isinstance(a, ast.Var) for a in atoms[0].args)
            name = (f"{atoms[0].relation}D" if single
                    else f"{rule.head.relation}_{rule.label or idx}_at_{key[2:]}")
            aux_rule = ast.Rule(ast.Atom(name, head_args, 0), tuple(side_lits),
                                f"{rule.label or 'r' + str(idx)}_ship", rule.loc)
            existing = aux.get(name)
            if existing is not None and _canon(existing) != _canon(aux_rule):
                name = f"{name}_{idx}"
                aux_rule = replace(aux_rule, head=replace(aux_rule.head, relation=name))
            if name not in aux:
                aux[name] = aux_rule
                out.append(aux_rule)
            new_body.append(ast.Atom(name, head_args, 0, atoms[0].loc))
            moved |= set(idxs)
        else:
            body = new_body + [lit for i, lit in enumerate(rule.body) if i not in moved]
            out.append(replace(rule, body=tuple(body)))
    if diags:
        raise PlanError(diags[0].message, diagnostics=diags, code="NOT_LOCALIZABLE")
    return tuple(out), aux


def _canon(rule: ast.Rule) -> str:
    """Rule text up to a renaming of variables, so identical ship rules are shared."""
    names: dict[str, str] = {}
    text = str(replace(rule, label=None))
    import re

    def sub(m: re.Match[str]) -> str:
        return names.setdefault(m.group(0), f"V{len(names)}")

    return re.sub(r"\b[A-Z_][A-Za-z0-9_]*\b", sub, text)
