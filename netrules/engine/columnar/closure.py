"""Linear recursion closed in one compiled call: the rounds of semi-naive evaluation after the
first, for a stratum of one relation whose recursive rules are ``R(h) :- B(b), R(r)``.

Why: on a graph of a hundred nodes a load, an up batch or a rederivation is tens of rounds
(the hop diameter), each a dozen NumPy calls per rule of a few microseconds however few rows
it carries, so the calls, not the rows, were the batch (TataNld: 31 rounds, about 0.3 ms
each, for 20,000 tuples). ``kernels.linear_closure`` runs every such round in one pass: a
breadth-first search over R's facts, each frontier fact probing B's rows by its join key, with
the ranks and K supports ``ColumnarProgram._admit`` would give.

The shape is checked once per stratum (``LinearClosure.of``): one derived relation of arity 1
or 2 (its rows' keys are then the packed ids the relation's hash map holds); every rule
reading it has exactly two body literals, both positive atoms, one of the stratum's relation
and one from below, plain distinct variables only, sharing one or two of them; every head
argument a variable of the body. Other rules of the stratum (no recursive atom) are left to the
first round, which is evaluated as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from netrules.engine.columnar import kernels
from netrules.engine.columnar.keys import pack
from netrules.engine.columnar.supports import gid
from netrules.lang import ast

if TYPE_CHECKING:
    from netrules.engine.columnar.psn import ColumnarProgram, _Changes, _Rule

__all__ = ["LinearClosure", "DENSE"]

#: Heads are told apart by a dense table (value codes) when it has at most this many slots.
DENSE = 1 << 18


@dataclass(frozen=True)
class _Linear:
    """One linear rule's plan: where the join key and each head argument come from."""

    rule_id: int
    below: str  # B
    b_at: int  # body positions of B and R
    r_at: int
    b_key: tuple[int, ...]  # B's columns of the shared variables
    r_key: tuple[int, ...]  # R's columns of the same variables
    b_vals: tuple[int, ...]  # B columns the head takes (slots of ``bval``)
    head: tuple[tuple[int, int], ...]  # per head position: (0, slot) or (1, R column)


def _plain(atom: ast.Atom) -> dict[str, int] | None:
    """Variable -> position of an atom of distinct plain variables (``_`` free), or None."""
    out: dict[str, int] = {}
    for p, t in enumerate(atom.args):
        if not isinstance(t, ast.Var):
            return None
        if t.name == "_":
            continue
        if t.name in out:
            return None
        out[t.name] = p
    return out


def _linear(rid: int, rule: ast.Rule, name: str) -> _Linear | None:
    if rule.delete or len(rule.body) != 2 or not all(isinstance(b, ast.Atom)
                                                     for b in rule.body):
        return None
    atoms: list[ast.Atom] = list(rule.body)  # type: ignore[arg-type]
    mine = [i for i, a in enumerate(atoms) if a.relation == name]
    if len(mine) != 1:
        return None
    r_at = mine[0]
    b_at = 1 - r_at
    rv, bv = _plain(atoms[r_at]), _plain(atoms[b_at])
    if rv is None or bv is None:
        return None
    shared = sorted(set(rv) & set(bv))
    if not 1 <= len(shared) <= 2:
        return None
    b_vals: list[int] = []
    head: list[tuple[int, int]] = []
    for t in rule.head.args:
        if not isinstance(t, ast.Var) or t.name == "_":
            return None
        if t.name in rv:
            head.append((1, rv[t.name]))
        elif t.name in bv:
            head.append((0, len(b_vals)))
            b_vals.append(bv[t.name])
        else:
            return None
    return _Linear(rid, atoms[b_at].relation, b_at, r_at, tuple(bv[v] for v in shared),
                   tuple(rv[v] for v in shared), tuple(b_vals), tuple(head))


class LinearClosure:
    """The compiled closure of one stratum; ``run`` replaces the rounds after the first."""

    def __init__(self, name: str, rules: list[_Linear]) -> None:
        self.name, self.rules = name, rules
        self.dense = DENSE

    @classmethod
    def of(cls, srels: frozenset[str], rules: list[_Rule], arity: dict[str, int]
           ) -> LinearClosure | None:
        """The closure of a stratum whose shape allows it (module docstring), else None."""
        if len(srels) != 1:
            return None
        (name,) = srels
        if not 1 <= arity.get(name, 0) <= 2:
            return None
        out = []
        for r in rules:
            if not any(a.relation == name for a in r.atoms):
                continue
            lin = _linear(r.id, r.rule, name)
            if lin is None or len(r.rule.head.args) != arity[name]:
                return None
            out.append(lin)
        return cls(name, out) if out else None

    def _below(self, prog: ColumnarProgram) -> tuple[np.ndarray, ...]:
        """Each rule's alive B rows sorted by join key, concatenated (``bval`` padded to
        two slots)."""
        offs, keys, rows, vals = [0], [], [], []
        for lin in self.rules:
            rel = prog.rels[lin.below]
            r = rel.alive_rows()
            c = rel.cols
            k = c[r, lin.b_key[0]].astype(np.int64)
            if len(lin.b_key) == 2:
                k = pack(k, c[r, lin.b_key[1]])
            order = np.argsort(k, kind="stable")
            r, k = r[order], k[order]
            v = np.zeros((len(r), 2), dtype=np.int64)
            for slot, p in enumerate(lin.b_vals):
                v[:, slot] = c[r, p]
            keys.append(k)
            rows.append(r)
            vals.append(v)
            offs.append(offs[-1] + len(r))
        return (np.array(offs, dtype=np.int64), np.concatenate(keys),
                np.concatenate(rows).astype(np.int64), np.concatenate(vals))

    def run(self, prog: ColumnarProgram, seeds: np.ndarray, ch: _Changes,
            allowed: np.ndarray | None) -> int:
        """Derive everything the stratum's relation gains from ``seeds`` (rows just made
        alive), as the rounds of ``_seminaive`` would; ``allowed``: the sorted rows a head
        may be (a rederivation's suspects), None for any. Returns the rounds run."""
        rel = prog.rels[self.name]
        m = rel.map
        boff, bkey, brow, bval = self._below(prog)
        nr = len(self.rules)
        rjoin = np.full((nr, 2), -1, dtype=np.int64)
        hsrc = np.zeros((nr, 2), dtype=np.int64)
        hidx = np.zeros((nr, 2), dtype=np.int64)
        for i, lin in enumerate(self.rules):
            rjoin[i, : len(lin.r_key)] = lin.r_key
            for p, (src, at) in enumerate(lin.head):
                hsrc[i, p], hidx[i, p] = src, at
        restrict = allowed is not None
        allow = allowed if allowed is not None else np.empty(0, np.int64)
        seeds = seeds.astype(np.int64)
        # the values heads can take: B's head values and the seeds' (a carried column only
        # ever holds a seed's value); coded densely when their pairs fit a small table
        scols = rel.cols[seeds].astype(np.int64)
        used = sorted({slot for lin in self.rules for src, slot in lin.head if src == 0})
        universe = np.unique(np.concatenate([bval[:, used].ravel(), scols.ravel()]))
        nv = len(universe)
        if nv ** rel.arity > self.dense:
            nv = 0
            bcode, scode = bval, scols
        else:
            bcode = np.searchsorted(universe, bval)
            bcode[:, [p for p in range(2) if p not in used]] = 0
            scode = np.searchsorted(universe, scols)
        # the map's arrays are read, never written: a probe of R's rows by packed key
        frow, fcol, frank, fcount, sup, rounds = kernels.linear_closure(
            seeds, rel.cols, rel.rank, rel.alive, m._keys, m._vals,
            np.int64(m._mask), m._shift, boff, bkey, brow, bval, rjoin, hsrc, hidx,
            allow.astype(np.int64), restrict, np.int64(prog.k), bcode, scode, np.int64(nv))
        ns = len(seeds)
        sf, sr, sb, sd = sup[:, 0], sup[:, 1], sup[:, 2], sup[:, 3]
        if len(frow) == ns:
            return rounds
        new = frow[ns:]
        fresh = np.flatnonzero(new < 0)
        if len(fresh):
            new[fresh] = rel.rows_for(fcol[fresh])
            frow[ns:] = new
        first = kernels.revive(new, frank.astype(np.int32), fcount.astype(np.int8), rel.rank,
                               rel.nsup, rel.alive, rel.touched, rel.tbefore)
        if len(first):
            ch.rows.setdefault(self.name, []).append(first)
        rel.count += len(new)
        code = prog.codes[self.name]
        body = np.full((len(sf), prog.supports.width), -1, dtype=np.int64)
        at = np.arange(len(sf))
        b_at = np.array([lin.b_at for lin in self.rules])[sr]
        r_at = np.array([lin.r_at for lin in self.rules])[sr]
        b_code = np.array([prog.codes[lin.below] for lin in self.rules], dtype=np.int64)[sr]
        body[at, b_at] = gid(b_code, sb)  # type: ignore[arg-type]
        body[at, r_at] = gid(code, frow[sd])
        rid = np.array([lin.rule_id for lin in self.rules], dtype=np.int32)[sr]
        prog._made.append((gid(code, frow[sf]), rid, body))
        return rounds
