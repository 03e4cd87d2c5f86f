"""One region's round in columns: the columnar engine over the region's facts and the
messages that reached it, to a local fixpoint; facts located elsewhere leave as messages.

A round's first batch loads what the region held (it was at its local fixpoint, so this
derives nothing new; it costs one pass of the joins) and its second the messages, so what the
second batch adds is exactly what the messages derive: semi-naive from the messages, as the
per-fact evaluator does, and nothing sent in an earlier round is sent again. A stratum's
first round is one batch of everything. Rows the round does not change go back out as the
Arrow rows they came in; only derived facts are encoded, a column at a time.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from netrules.engine.columnar.psn import ColumnarProgram
from netrules.engine.columnar.values import Values
from netrules.engine.spark.columns import ids_of, table_of
from netrules.engine.spark.partition import PartitionMap
from netrules.engine.spark.region_plan import RegionPlan
from netrules.plan import Plan, Stratum

__all__ = ["ArrowRoundFn", "Locator", "columnar_round_fn"]

ArrowRoundFn = Callable[[pa.Table], pa.Table]


class Locator:
    """A fact's region, a column at a time: each distinct location value looked up once."""

    def __init__(self, plan: Plan, pmap: PartitionMap) -> None:
        self.locspec, self.pmap = plan.locspec, pmap

    def parts(self, values: Values, rel: str, ids: np.ndarray) -> np.ndarray:
        spec = self.locspec.get(rel, 0)
        if spec is None or not len(ids):
            return np.zeros(len(ids), dtype=np.int32)
        uniq, inv = np.unique(ids[:, spec], return_inverse=True)
        of = self.pmap.of
        parts = np.fromiter((of(v) for v in values.decode_column(uniq)), dtype=np.int32,
                            count=len(uniq))
        return parts[inv]


class _Loaded:
    """The region's decoded rows by relation, and which input rows to keep: a message for a
    fact already here, or a repeat, is dropped (the held rows come first, so they win)."""

    def __init__(self, rp: RegionPlan, prog: ColumnarProgram, table: pa.Table,
                 rows: np.ndarray, rels: np.ndarray, width: int) -> None:
        sub = table.take(pa.array(rows))
        ids = np.stack([ids_of(prog.values, sub, i) for i in range(width)], axis=1)
        self.by_rel: dict[str, np.ndarray] = {}  # name -> positions into ``rows``
        for name in np.unique(rels[rows]).tolist():
            self.by_rel[name] = np.flatnonzero(rels[rows] == name)
        self.ids, self.rows, self.rp, self.prog = ids, rows, rp, prog

    def cols(self, name: str, which: np.ndarray) -> np.ndarray:
        arity = self.rp.plan.arity.get(name)
        if arity is None:  # a relation the stratum neither reads nor derives: a message's
            arity = int((self.ids[which] >= 0).sum(axis=1).max()) if len(which) else 0
        return self.ids[which, :arity]

    def batch(self, new: np.ndarray) -> dict[str, np.ndarray]:
        """The rows with ``new`` as ``new_mask`` says, by the relation they load into."""
        out = {}
        for name, which in self.by_rel.items():
            sel = which[new[self.rows[which]]]
            if len(sel):
                out[self.rp.inputs.get(name, name)] = self.cols(name, sel)
        return out

    def kept(self, new: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(table rows to keep, per relation the program rows its input facts hold)."""
        keep, held = [], {}
        for name, which in self.by_rel.items():
            target = self.rp.inputs.get(name, name)
            order = which[np.argsort(new[self.rows[which]], kind="stable")]  # held first
            prow = self.prog.rels[target].find(self.cols(name, order))
            _, first = np.unique(prow, return_index=True)
            keep.append(self.rows[order[first]])
            if name in self.rp.inputs:
                held[name] = self.prog.rels[name].find(self.cols(name, order[first]))
        return (np.sort(np.concatenate(keep)) if keep else np.empty(0, np.int64)), held


def _derived(rp: RegionPlan, prog: ColumnarProgram, held: dict[str, np.ndarray],
             added: dict[str, tuple[np.ndarray, np.ndarray]] | None
             ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per derived relation: (rows held nowhere yet: all of them, new here; rows the
    messages derived: ``added``, or every row in a first round)."""
    out = {}
    for name in [*rp.inputs, *sorted(rp.aggregated)]:
        rel = prog.rels[name]
        alive = rel.alive_rows()
        fresh = alive
        if name in held and len(held[name]):
            mask = np.zeros(rel.n, dtype=bool)
            h = held[name]
            mask[h[h >= 0]] = True
            fresh = alive[~mask[alive]]
        sent = alive if added is None else added.get(name, (np.empty(0, np.int64),))[0]
        out[name] = (fresh, sent)
    return out


def columnar_round_fn(rp: RegionPlan, stratum: Stratum, locate: Locator, first: bool,
                      width: int) -> ArrowRoundFn:
    needs_body = all(r.atoms() for r in stratum.rules)
    reads = pa.array(sorted(rp.reads), pa.string())

    def run(table: pa.Table) -> pa.Table:
        if not table.num_rows:
            return table
        new = table.column("new").to_numpy()
        rel_col = table.column("rel")
        if not new.any():
            if not first:
                return table  # no message came: still at the local fixpoint it reached
            if needs_body and not pc.any(pc.is_in(rel_col, reads)).as_py():
                return table  # no fact any rule reads is here: nothing to derive
        me = int(table.column("part")[0].as_py())
        rels = rel_col.to_numpy(zero_copy_only=False)
        used = np.isin(rels, list(rp.reads | set(rels[new])))
        prog = ColumnarProgram(rp.plan)
        loaded = _Loaded(rp, prog, table, np.flatnonzero(used), rels, width)
        added = None
        if first:
            prog.apply(loaded.batch(np.ones(len(new), dtype=bool)), {})
        else:
            prog.apply(loaded.batch(~new), {})
            added = prog.apply(loaded.batch(new), {})
        keep, held = loaded.kept(new)
        keep = np.sort(np.concatenate([keep, np.flatnonzero(~used)]))
        pieces = [table.take(pa.array(keep)).set_column(
            2, "new", pa.array(np.zeros(len(keep), dtype=bool)))]
        for name, (fresh, sent) in _derived(rp, prog, held, added).items():
            rel = prog.rels[name]
            for rows, is_new in ((fresh, False), (sent, True)):
                if not len(rows):
                    continue
                ids = rel.cols[rows].astype(np.int64)
                dest = locate.parts(prog.values, name, ids)
                sel = (dest == me) if not is_new else (dest != me)
                if sel.any():
                    pieces.append(table_of(prog.values, dest[sel], name, is_new, ids[sel],
                                           width))
        return pa.concat_tables(pieces)

    return run
