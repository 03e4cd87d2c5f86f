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
first round, which is evaluated as before. A rederivation's first step, the join from each
suspect's own row, is one compiled pass for the same rules (``rederive``).

Where they stop: a round meeting over ``MAX_WORK`` pairs goes back to the vectorised rounds,
and neither path serves a relation past ``MAX_ROWS`` stored rows (measured on americas: the
kernel's probe of a map of millions of slots misses the cache for every new head, while the
vectorised rounds carry a wide frontier at a few ns an element).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from netrules.engine.columnar import kernels
from netrules.engine.columnar.sets import distinct
from netrules.engine.columnar.supports import gid
from netrules.lang import ast

if TYPE_CHECKING:
    from netrules.engine.columnar.psn import ColumnarProgram, _Changes, _Rule

__all__ = ["LinearClosure", "Prefill", "CODES_SPAN", "DENSE", "DENSE_MAX", "EVERY_SHARE",
           "MAX_ROWS", "MAX_WORK", "PREFILL_SLOTS"]

#: Heads are told apart by a dense table (value codes) from the start when it has at most
#: this many slots; up to ``DENSE_MAX`` slots, once the heads met fill an eighth of it.
DENSE = 1 << 18
DENSE_MAX = 1 << 24
#: A round meeting more (frontier fact, B row) pairs than this is left to the vectorised
#: rounds, which carry a wide frontier faster (measured on a backbone's load).
MAX_WORK = 20_000
#: The compiled paths serve relations of at most this many stored rows: past it (a
#: backbone's millions of pairs) every head's probe of the relation's map misses the cache,
#: and the vectorised rounds measured faster (americas k=100 and partitions, up and down).
MAX_ROWS = 1 << 18
#: B rows are found by offsets per key value when their keys span at most this many values
#: a row (``kernels.below_index``), else by binary search: the kernels' binary search of B
#: per frontier fact was a sixth of a backbone's closure.
BY_KEY_SPAN = 16
#: A run from at least one seed in this many of the relation's rows finds a new head's row by
#: value codes (``kernels.row_table``: one pass over the rows) instead of R's hash map.
ROWS_SHARE = 8
#: ... where the values heads can take span at most this many ids a row.
ROWS_SPAN = 16
#: A rederivation of at least one suspect in this many of the relation's rows takes a table
#: of every row (``LinearClosure.every_pays``; americas, ten links down: 233,000 suspects of
#: 1.3 M rows).
EVERY_SHARE = 16
#: Heads' values are coded by a table of their span when it is at most this many ids a value
#: met (``kernels.head_codes``: 64 bytes an entry at most, transient), else by a sort.
CODES_SPAN = 16
#: Rows a table of every row can enter (``kernels.ALIVE``).
EVERY_MAX_ROWS = 1 << 29
#: A rederivation takes the prefilled table (``Prefill``) when it has at most this many
#: slots a suspect: on a backbone, from a thousand or so suspects (americas: 1.3 M slots).
PREFILL_SLOTS = 1024


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
    # solved from the head (a rederivation), None when the head binds no B column or an R
    # argument is bound by neither: B's columns matched against head columns, and per R
    # position (0, B column) or (1, head column)
    from_head: tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]] | None


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
                   tuple(rv[v] for v in shared), tuple(b_vals), tuple(head),
                   _from_head(rule.head, atoms[r_at], bv))


def _from_head(head: ast.Atom, r_atom: ast.Atom, bv: dict[str, int]
               ) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]] | None:
    """How a linear rule is solved for given heads (``_Linear.from_head``)."""
    hpos: dict[str, int] = {}
    for p, t in enumerate(head.args):
        hpos.setdefault(t.name, p)  # type: ignore[union-attr]
    key = tuple((bv[v], p) for v, p in hpos.items() if v in bv)
    r_src = []
    for t in r_atom.args:
        if t.name in hpos:  # type: ignore[union-attr]
            r_src.append((1, hpos[t.name]))  # type: ignore[union-attr]
        elif t.name in bv:  # type: ignore[union-attr]
            r_src.append((0, bv[t.name]))  # type: ignore[union-attr]
        else:
            return None
    return (key, tuple(r_src)) if key else None


@dataclass
class Prefill:
    """A rederivation's dense table of heads (``LinearClosure.prefilled``).

    Why: on a backbone a rederivation is tens of rounds over hundreds of thousands of
    suspects, too many for the sorted suspects and R's map (millions of slots) to be probed
    per candidate head, so those rounds ran vectorised (americas, ten links down: 72 rounds, a
    third of the batch). Values are coded by the suspects' own values (any other value takes
    the last code, ``nv - 1``, whose entries all say "not new"), and ``table`` holds per pair
    of codes ``kernels.PREFILLED - row`` for a dead suspect, -2 for anything else: a candidate
    head is told apart by one look-up in a table of a few megabytes."""

    lo: int
    code_of: np.ndarray  # value - lo -> code
    nv: int
    table: np.ndarray  # int32, nv ** arity slots; the kernel writes it: used by one run
    room: int  # how many rows the table allows (dead suspects): the most facts a run makes
    every: bool = False  # every row's values coded, standing rows entered (``ALIVE - row``)

    def stand(self, cols: np.ndarray) -> None:
        """Suspects revived before the run (the rederivation's first step), by their
        columns: no longer new to it."""
        at = self.code(cols[:, 0].astype(np.int64))
        for p in range(1, cols.shape[1]):
            at = at * self.nv + self.code(cols[:, p].astype(np.int64))
        self.table[at] = -2

    def code(self, v: np.ndarray) -> np.ndarray:
        span = len(self.code_of)
        inside = (v >= self.lo) & (v < self.lo + span)
        return np.where(inside, self.code_of[np.clip(v - self.lo, 0, span - 1)], self.nv - 1)


class LinearClosure:
    """The compiled closure of one stratum; ``run`` replaces the rounds after the first."""

    def __init__(self, name: str, rules: list[_Linear], compiled: dict[int, _Rule]) -> None:
        self.name, self.rules, self.compiled = name, rules, compiled
        self.dense, self.dense_max = DENSE, DENSE_MAX
        self.fill = 8  # the dense table takes over once heads met pass 1/fill of its slots
        self.max_work, self.max_rows = MAX_WORK, MAX_ROWS
        self.prefill = True  # rederivations by a prefilled dense table (``Prefill``)
        self.every_share = EVERY_SHARE  # ... of every row, past this share (``every_pays``)
        self.rows_share = ROWS_SHARE  # new heads' rows by value codes (``kernels.row_table``)
        self.codes_span = CODES_SPAN  # values coded by a table (``kernels.head_codes``)
        # (rows, their columns' array, lo, codes, nv) of the last coding of every row
        self._every_codes: tuple | None = None
        #: rules whose rederivation step ``rederive`` solves (all linear ones, or none)
        self.rederives = frozenset(lin.rule_id for lin in rules) if all(
            lin.from_head is not None for lin in rules) else frozenset()
        self._shapes()

    def _shapes(self) -> None:
        """The rules' shapes as the kernel reads them, made once: a dozen small arrays a run
        were a tenth of a small graph's up batch."""
        rules = self.rules
        nr = len(rules)
        self._rjoin = np.full((nr, 2), -1, dtype=np.int64)
        self._hsrc = np.zeros((nr, 2), dtype=np.int64)
        self._hidx = np.zeros((nr, 2), dtype=np.int64)
        for i, lin in enumerate(rules):
            self._rjoin[i, : len(lin.r_key)] = lin.r_key
            for p, (src, at) in enumerate(lin.head):
                self._hsrc[i, p], self._hidx[i, p] = src, at
        self._used = sorted({slot for lin in rules for src, slot in lin.head if src == 0})
        self._unused = [p for p in range(2) if p not in self._used]
        self._used_slots = np.array(self._used, dtype=np.int64)
        self._b_keys = [np.array(lin.b_key, dtype=np.int64) for lin in rules]
        self._b_vals = [np.array(lin.b_vals, dtype=np.int64) for lin in rules]
        # solved from the head (``rederive``): B's columns matched against head positions
        # ``_hkey``, and per R position a B column (``_rsrc`` 0, its value in slot
        # ``_ridx``) or a head position (``_rsrc`` 1, position ``_ridx``)
        self._h_keys, self._h_vals = [], []
        self._hkey = np.full((nr, 2), -1, dtype=np.int64)
        self._rsrc = np.zeros((nr, 2), dtype=np.int64)
        self._ridx = np.zeros((nr, 2), dtype=np.int64)
        for i, lin in enumerate(rules if self.rederives else ()):
            key, r_src = lin.from_head  # type: ignore[misc]
            self._h_keys.append(np.array([c for c, _ in key], dtype=np.int64))
            self._hkey[i, : len(key)] = [p for _, p in key]
            self._h_vals.append(np.array([at if src == 0 else -1 for src, at in r_src],
                                         dtype=np.int64))
            for p, (src, at) in enumerate(r_src):
                self._rsrc[i, p], self._ridx[i, p] = src, p if src == 0 else at
        self._b_at = np.array([lin.b_at for lin in rules])
        self._r_at = np.array([lin.r_at for lin in rules])
        self._rid = np.array([lin.rule_id for lin in rules], dtype=np.int32)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_every_codes"] = None  # a cache holding a weak reference: made again
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "_h_keys" not in state:  # (a closure pickled before it kept them)
            self._shapes()

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
        compiled = {}
        for r in rules:
            if not any(a.relation == name for a in r.atoms):
                continue
            lin = _linear(r.id, r.rule, name)
            if lin is None or len(r.rule.head.args) != arity[name]:
                return None
            out.append(lin)
            compiled[r.id] = r
        return cls(name, out, compiled) if out else None

    def fits(self, prog: ColumnarProgram) -> bool:
        """Whether the compiled paths serve the relation as large as it is (``MAX_ROWS``)."""
        return prog.rels[self.name].n <= self.max_rows

    def _below(self, prog: ColumnarProgram, key_cols: list[np.ndarray],
               val_cols: list[np.ndarray]) -> tuple[np.ndarray, ...]:
        """Each rule's alive B rows sorted by join key (B columns ``key_cols[i]``),
        concatenated, with the values the kernel takes from B (columns ``val_cols[i]`` in
        two slots, -1: none), and their offsets by key: a compiled pass a rule
        (``kernels.below_index``). The closure joins by the recursive atom's variables
        (``run``), a rederivation by the head's (``rederive``)."""
        offs, keys, rows, vals, cidx, coff, clo = [0], [], [], [], [], [0], []
        for lin, kc, vc in zip(self.rules, key_cols, val_cols, strict=True):
            rel = prog.rels[lin.below]
            k, r, v, c, lo = kernels.below_index(rel.cols, rel.alive, np.int64(rel.n), kc, vc,
                                                 np.int64(BY_KEY_SPAN))
            keys.append(k)
            rows.append(r)
            vals.append(v)
            offs.append(offs[-1] + len(r))
            cidx.append(c)
            coff.append(coff[-1] + len(c))
            clo.append(lo)
        one = len(self.rules) == 1  # (the usual stratum: nothing to concatenate)
        return (np.array(offs, dtype=np.int64), *(
            (a[0] if one else np.concatenate(a)) for a in (keys, cidx)),
            np.array(coff, dtype=np.int64), np.array(clo, dtype=np.int64),
            *((a[0] if one else np.concatenate(a)) for a in (rows, vals)))

    def run(self, prog: ColumnarProgram, seeds: np.ndarray, ch: _Changes,
            allowed: np.ndarray | None, pre: Prefill | None = None) -> tuple[int, np.ndarray]:
        """Derive everything the stratum's relation gains from ``seeds`` (rows just made
        alive), as the rounds of ``_seminaive`` would; ``allowed``: the sorted rows a head
        may be (a rederivation's suspects), None for any. Returns the rounds run and the
        frontier left to the vectorised rounds (rows alive, not expanded yet; ``MAX_WORK``).
        With ``pre`` (made for ``allowed``, used once) every round runs here, whatever its
        width and the relation's size: no map or sorted array is probed then."""
        rel = prog.rels[self.name]
        m = rel.map
        boff, bkey, cidx, coff, clo, brow, bval = self._below(prog, self._b_keys,
                                                              self._b_vals)
        rjoin, hsrc, hidx = self._rjoin, self._hsrc, self._hidx
        restrict = allowed is not None
        allow = allowed if allowed is not None else np.empty(0, np.int64)
        seeds = seeds.astype(np.int64)
        # the values heads can take: B's head values and the seeds' (a carried column only
        # ever holds a seed's value); coded densely when their pairs fit a small table
        scols = rel.cols[seeds].astype(np.int64)
        used, unused = self._used, self._unused
        rowtab = np.empty(0, np.int32)
        if pre is not None:  # a rederivation: every round in the kernel (``Prefill``)
            bcode, scode, nv, table = pre.code(bval), pre.code(scols), pre.nv, pre.table
            bcode[:, unused] = 0
            start, max_work = True, np.int64(1 << 62)
        else:
            table = np.empty(0, np.int32)
            # by a table over their span (``kernels.head_codes``) when it is narrow (a
            # relation's ids), else by a sort
            universe, bcode, scode = kernels.head_codes(
                bval, self._used_slots, scols, np.int64(self.codes_span * (len(bval) + scols.size)))
            if not len(universe) and (len(bval) or len(scols)):
                universe = distinct(np.concatenate([bval[:, used].ravel(), scols.ravel()]))
                bcode = np.searchsorted(universe, bval)
                bcode[:, unused] = 0
                scode = np.searchsorted(universe, scols)
            nv = len(universe)
            if nv ** rel.arity > self.dense_max:
                nv = 0
                bcode, scode = bval, scols
            start, max_work = nv ** rel.arity <= self.dense, np.int64(self.max_work)
            if start and nv and len(seeds) * self.rows_share >= rel.n:
                # many seeds for the relation's size: its rows by value codes, one pass
                rowtab = kernels.row_table(rel.cols, np.int64(rel.n), universe,
                                           np.int64(ROWS_SPAN * max(rel.n, 1024)))
        # the map's arrays are read, never written: a probe of R's rows by packed key
        frow, fcol, frank, fcount, sup, rounds, left = kernels.linear_closure(
            seeds, rel.cols, rel.rank, rel.alive, m.table, m.vals,
            np.int64(m.mask), m.shift, boff, bkey, cidx, coff, clo, brow, bval, rjoin, hsrc,
            hidx,
            allow.astype(np.int64), restrict, np.int64(prog.k), bcode, scode, np.int64(nv),
            start, np.int64(nv ** rel.arity // self.fill), max_work, table,
            np.int64(pre.room if pre is not None else 0), rowtab)
        ns = len(seeds)
        sf, sr, sb, sd = sup[:, 0], sup[:, 1], sup[:, 2], sup[:, 3]
        if len(frow) == ns:
            return rounds, seeds if left >= 0 else seeds[:0]
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
        rid: np.ndarray | int
        if len(self.rules) == 1:  # (the usual stratum: no gather by rule)
            (lin,) = self.rules
            body[:, lin.b_at] = gid(prog.codes[lin.below], sb)
            body[:, lin.r_at] = gid(code, frow[sd])
            rid = lin.rule_id
        else:
            at = np.arange(len(sf))
            b_code = np.array([prog.codes[lin.below] for lin in self.rules],
                              dtype=np.int64)[sr]
            body[at, self._b_at[sr]] = gid(b_code, sb)  # type: ignore[arg-type]
            body[at, self._r_at[sr]] = gid(code, frow[sd])
            rid = self._rid[sr]
        prog._made.append((gid(code, frow[sf]), rid, body))
        return rounds, frow[left:] if left >= 0 else frow[:0]

    def prefilled(self, prog: ColumnarProgram, allowed: np.ndarray, every: bool = False
                  ) -> Prefill | None:
        """The dense table of a run restricted to ``allowed`` rows (a rederivation's
        suspects; ``Prefill``), or None where it would pass ``dense_max`` slots. With
        ``every`` it codes every row's values and enters the standing rows too, so the
        rederivation's first step finds R's facts in it (``rederive``)."""
        rel = prog.rels[self.name]
        if not self.prefill or not len(allowed) or (every and rel.n >= EVERY_MAX_ROWS):
            return None
        # a table of more than PREFILL_SLOTS slots a suspect costs more to fill than it
        # saves (americas: 1.3 M slots, 1-2 ms, against a single link's few hundred
        # suspects). Past that the rounds cost more: a backbone's single-link down takes 40
        # to 70 of them, vectorised where no table serves (the relation is past MAX_ROWS);
        # 64 slots a suspect kept the table from downs of 1,300-20,000 suspects, and 1,024
        # took americas' from a median 18.1 to 10.2 ms (30 downs side by side)
        slots = self.dense_max if every else min(self.dense_max,
                                                 PREFILL_SLOTS * len(allowed))
        rows = allowed.astype(np.int64)
        if not every:
            lo, code_of, nv, table, room = kernels.prefill_table(
                rel.cols, rows, rel.alive, np.int64(slots), np.int64(0))
        else:
            # the coding of every row's values, kept while the relation has the same rows:
            # two of the table's four passes over them (americas: 1.3 M rows, 6 of 10 ms
            # a rederivation of many suspects)
            hit = getattr(self, "_every_codes", None)  # (a closure pickled before it had one)
            if hit is not None and hit[0] == rel.n and hit[1]() is rel.cols:
                lo, code_of, nv = hit[2:]
            else:
                lo, code_of, nv = kernels.value_codes(rel.cols, rows, np.int64(rel.n),
                                                      np.int64(slots))
                self._every_codes = (rel.n, weakref.ref(rel.cols), lo, code_of, nv)
            if nv:
                table, room = kernels.prefill_rows(rel.cols, rows, rel.alive, lo, code_of,
                                                   nv, np.int64(rel.n))
        if not nv:
            return None
        return Prefill(int(lo), code_of, int(nv), table, int(room), every)

    def every_pays(self, prog: ColumnarProgram, suspects: int) -> bool:
        """Whether a rederivation of ``suspects`` facts takes a table of every row
        (``prefilled(every=True)``): it costs a pass over the relation's rows, and saves a
        probe of R's map per (suspect, B row) pair (``EVERY_SHARE``)."""
        return (self.prefill and bool(self.rederives)
                and suspects * self.every_share >= prog.rels[self.name].n)

    def rederive(self, prog: ColumnarProgram, heads: np.ndarray, pre: Prefill | None = None
                 ) -> list[tuple[_Rule, np.ndarray, np.ndarray, np.ndarray]]:
        """The derivations of ``heads`` (hidden suspects) by the linear rules over what
        stands, as ``_derived`` gives them (rule, head rows, body gids, rank): the first
        rederivation step of those rules in one compiled pass (``kernels.linear_rederive``)
        instead of a join from the head per rule; with ``pre`` made for every row, R's
        standing facts are found in its table (``kernels.dense_rederive``)."""
        rel = prog.rels[self.name]
        m = rel.map
        below = (*self._below(prog, self._h_keys, self._h_vals), self._hkey, self._rsrc,
                 self._ridx)
        if pre is not None and pre.every:
            heads = distinct(heads)  # (hidden suspects: distinct rows, sorted here)
            found = kernels.dense_rederive(heads.astype(np.int64), rel.cols, rel.rank,
                                           np.int64(pre.lo), pre.code_of, np.int64(pre.nv),
                                           pre.table, *below[:6], pre.code(below[6]),
                                           *below[7:])
        else:
            found = kernels.linear_rederive(heads.astype(np.int64), rel.cols, rel.rank,
                                            rel.alive, m.table, m.vals, np.int64(m.mask),
                                            m.shift, *below)
        code = prog.codes[self.name]
        out = []
        for i, lin in enumerate(self.rules):
            mine = found[found[:, 1] == i] if len(self.rules) > 1 else found
            if not len(mine):
                continue
            body = np.full((len(mine), prog.supports.width), -1, dtype=np.int64)
            body[:, lin.b_at] = gid(prog.codes[lin.below], mine[:, 2])
            body[:, lin.r_at] = gid(code, mine[:, 3])
            out.append((self.compiled[lin.rule_id], heads[mine[:, 0]].astype(np.int64), body,
                        mine[:, 4].astype(np.int32)))
        return out
