"""One region's round in columns: the columnar engine over the region's facts and the
messages that reached it, to a local fixpoint; facts located elsewhere leave as messages.

A stratum's first round is one batch of everything the region holds. After that the region
was at its local fixpoint, so what it held is put back as standing facts with no derivation
(``_restore``: no join runs over them) and the messages are the batch: what the batch adds is
exactly what the messages derive, semi-naive from them as the per-fact evaluator does, and
nothing sent in an earlier round is sent again. Rows the round does not change go back out as
the Arrow rows they came in; only derived facts are encoded, a column at a time.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from netrules.engine.columnar.psn import ColumnarProgram
from netrules.engine.columnar.sets import distinct
from netrules.engine.columnar.values import Values
from netrules.engine.spark.columns import ids_of, table_of
from netrules.engine.spark.partition import PartitionMap
from netrules.engine.spark.region_plan import RegionPlan
from netrules.plan import Plan, Stratum

__all__ = ["ArrowRoundFn", "Locator", "columnar_round_fn"]

ArrowRoundFn = Callable[[pa.Table], pa.Table]
_NONE = np.empty(0, np.int64)


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

    def here(self, values: Values, ids: np.ndarray, me: int) -> np.ndarray:
        """The distinct values among ``ids`` (-1: none) that region ``me`` holds."""
        uniq = distinct(ids[ids >= 0])
        of = self.pmap.of
        mine = np.fromiter((of(v) == me for v in values.decode_column(uniq)), dtype=bool,
                           count=len(uniq))
        return uniq[mine]


class _Rows:
    """Some of a region's rows decoded into the program's ids, grouped by relation."""

    def __init__(self, prog: ColumnarProgram, table: pa.Table, rows: np.ndarray,
                 codes: np.ndarray, names: list[str], width: int) -> None:
        mask = np.zeros(table.num_rows, dtype=bool)
        mask[rows] = True
        sub = table.filter(pa.array(mask))
        self.rows = rows
        self.ids = np.stack([ids_of(prog.values, sub, i) for i in range(width)], axis=1)
        c = codes[rows]
        order = np.argsort(c, kind="stable")
        cuts = np.flatnonzero(np.r_[True, c[order][1:] != c[order][:-1], True]) if len(c) \
            else np.zeros(1, np.int64)
        self.groups: dict[str, np.ndarray] = {}  # relation -> positions into ``rows``
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            if a < b:
                self.groups[names[int(c[order[a]])]] = order[a:b]
        self.arity = prog.plan.arity

    def cols(self, name: str) -> np.ndarray:
        which = self.groups[name]
        arity = self.arity.get(name)
        if arity is None:  # a message of a relation the stratum neither reads nor derives
            arity = int((self.ids[which] >= 0).sum(axis=1).max())
        return self.ids[which, :arity]


def _restore(prog: ColumnarProgram, rows: _Rows) -> None:
    """Put back facts the region held, alive and with no derivation: they were a local
    fixpoint, so nothing needs deriving from them alone (nor may: that is a whole join)."""
    for name in rows.groups:
        cols = rows.cols(name)
        rel = prog.relation(name, cols.shape[1])
        got = np.zeros(rel.n + len(cols), dtype=bool)
        got[rel.rows_for(cols)] = True
        rel.set_alive(np.flatnonzero(got[:rel.n] & ~rel.alive[:rel.n]))


def _kept(prog: ColumnarProgram, batch: _Rows, added: dict[str, np.ndarray]
          ) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """The batch's rows whose fact the batch made (a repeat, or a message for a fact already
    here, is dropped), and per relation the program rows they hold."""
    keep, held = [], {}
    for name in batch.groups:
        rel = prog.rels[name]
        prow = rel.find(batch.cols(name))
        new = np.zeros(rel.n + 1, dtype=bool)
        new[added.get(name, _NONE)] = True
        fresh = np.flatnonzero(new[prow])
        _, first = np.unique(prow[fresh], return_index=True)
        sel = fresh[first]
        keep.append(batch.rows[batch.groups[name][sel]])
        held[name] = prow[sel]
    return keep, held


def columnar_round_fn(rp: RegionPlan, stratum: Stratum, locate: Locator, first: bool,
                      width: int) -> ArrowRoundFn:
    needs_body = all(r.atoms() for r in stratum.rules)
    reads = pa.array(sorted(rp.reads), pa.string())
    emitted = [*rp.inputs, *sorted(rp.aggregated)]

    def run(table: pa.Table) -> pa.Table:
        if not table.num_rows:
            return table
        new = table.column("new").to_numpy(zero_copy_only=False)
        rel_col = table.column("rel").combine_chunks()
        if not new.any():
            if not first:
                return table  # no message came: still at the local fixpoint it reached
            if needs_body and not pc.any(pc.is_in(rel_col, reads)).as_py():
                return table  # no fact any rule reads is here: nothing to derive
        me = int(table.column("part")[0].as_py())
        d = pc.dictionary_encode(rel_col)
        names = d.dictionary.to_pylist()
        codes = d.indices.to_numpy()
        wanted = np.array([n in rp.reads for n in names], dtype=bool)
        wanted[distinct(codes[new])] = True
        used = wanted[codes]
        prog = ColumnarProgram(rp.plan)
        go = used if first else new
        if not first:
            _restore(prog, _Rows(prog, table, np.flatnonzero(used & ~new), codes, names,
                                 width))
        batch = _Rows(prog, table, np.flatnonzero(go), codes, names, width)
        loads: dict[str, np.ndarray] = {}
        for name in batch.groups:
            loads[rp.inputs.get(name, name)] = batch.cols(name)
        changes = prog.apply(loads, {})
        added = {n: a for n, (a, _) in changes.items()}
        keep, held = _kept(prog, batch, added)
        kept = ~go
        for rows in keep:
            kept[rows] = True
        pieces = [table.filter(pa.array(kept)).set_column(
            2, "new", pa.array(np.zeros(int(kept.sum()), dtype=bool)))]
        for name in emitted:
            rel = prog.rels[name]
            fresh = added.get(name, _NONE)
            if name in held and len(fresh):
                fresh = fresh[~np.isin(fresh, held[name])]
            if not len(fresh):
                continue
            ids = rel.cols[fresh].astype(np.int64)
            dest = locate.parts(prog.values, name, ids)
            for is_new, sel in ((False, dest == me), (True, dest != me)):
                if sel.any():
                    pieces.append(table_of(prog.values, dest[sel], name, is_new, ids[sel],
                                           width))
        return pa.concat_tables(pieces)

    return run
