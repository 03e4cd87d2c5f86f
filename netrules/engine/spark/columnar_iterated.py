"""Recursion through an aggregate on Spark, a region at a time, in columns: the protocol of
``spark/iterated.py`` with the columnar engine doing each region's iteration.

Each round a region recomputes its part of the stratum from nothing (the columnar engine's
load is the oracle's Jacobi sequence) over its lower facts and the contributions other regions
sent it, keeping only heads located here (``region_plan.iterated_plan``). It then sends each
other region its whole contribution when that differs from what it sent last, and the
receiver replaces that sender's contribution wholesale. Bookkeeping rows are those of
``spark/iterated.py`` (``#c:<src>:<rel>``, the ``#c:<src>:`` marker, ``#s:<dest>:<rel>``), so
``finish`` is shared; a contribution is compared with what was sent as rows of ids.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from netrules.engine.columnar.psn import ColumnarProgram
from netrules.engine.columnar.sets import distinct
from netrules.engine.spark.columnar_round import ArrowRoundFn, Locator, _kept, _Rows
from netrules.engine.spark.columns import table_of
from netrules.engine.spark.region_plan import HERE, IteratedPlan
from netrules.plan import Stratum

__all__ = ["iterated_columns_fn"]

_CONTRIB, _SENT = "#c:", "#s:"


def _untag(name: str) -> tuple[int, str]:
    other, _, rel = name[3:].partition(":")
    return int(other), rel


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Do two sets of distinct id rows hold the same rows?"""
    if len(a) != len(b):
        return False
    return not len(a) or len(np.unique(np.vstack([a, b]), axis=0)) == len(a)


class _Region:
    """A region's rows by role: lower facts, contributions in effect (an incoming replacement
    supersedes what its sender gave before), and what was sent to each other region."""

    def __init__(self, table: pa.Table, stratum: Stratum) -> None:
        self.new = table.column("new").to_numpy(zero_copy_only=False)
        d = pc.dictionary_encode(table.column("rel").combine_chunks())
        self.names: list[str] = d.dictionary.to_pylist()
        self.codes = d.indices.to_numpy()
        kind = np.array([(2 if n.startswith(_SENT) else 1 if n.startswith(_CONTRIB)
                          else 3 if n in stratum.relations else 0) for n in self.names],
                        dtype=np.int8)
        row_kind = kind[self.codes] if len(self.names) else np.zeros(0, np.int8)
        replaced = {_untag(self.names[c])[0]
                    for c in distinct(self.codes[self.new & (row_kind == 1)]).tolist()}
        src = np.array([_untag(n)[0] if k == 1 else -1 for n, k in zip(self.names, kind,
                                                                         strict=True)])
        fresh = np.isin(src[self.codes], list(replaced)) if replaced else \
            np.zeros(len(self.codes), dtype=bool)
        marker = np.array([k == 1 and n.endswith(":") for n, k in zip(self.names, kind,
                                                                      strict=True)])
        contrib = (row_kind == 1) & ~marker[self.codes] & (fresh == self.new)
        self.lower = np.flatnonzero(row_kind == 0)
        self.contrib = np.flatnonzero(contrib)
        self.sent = np.flatnonzero(row_kind == 2)


def iterated_columns_fn(ip: IteratedPlan, stratum: Stratum, locate: Locator, first: bool,
                        width: int) -> ArrowRoundFn:
    heads = sorted(ip.inputs)

    def run(table: pa.Table) -> pa.Table:
        if not table.num_rows:
            return table
        if not first and not pc.any(table.column("new")).as_py():
            return table  # same lower facts and contributions: the same result as last round
        me = int(table.column("part")[0].as_py())
        reg = _Region(table, stratum)
        prog = ColumnarProgram(ip.plan)
        lower = _Rows(prog, table, reg.lower, reg.codes, reg.names, width)
        loads = {name: lower.cols(name) for name in lower.groups}
        contrib = _Rows(prog, table, reg.contrib, reg.codes, reg.names, width)
        got: dict[str, list[np.ndarray]] = {}
        for name in contrib.groups:
            rel = _untag(name)[1]
            got.setdefault(ip.inputs[rel], []).append(
                contrib.ids[contrib.groups[name], :ip.plan.arity[rel]])
        loads.update({n: np.concatenate(parts) for n, parts in got.items()})
        here = locate.here(prog.values, lower.ids, me)
        if len(here):
            loads[HERE] = here[:, None]
        changes = prog.apply(loads, {})
        keep, _ = _kept(prog, lower, {n: a for n, (a, _) in changes.items()})
        kept = np.zeros(table.num_rows, dtype=bool)
        for rows in keep:
            kept[rows] = True
        kept[reg.contrib] = True
        out: list[pa.Table] = []
        for name in stratum.relations:
            rel = prog.rels[name]
            ids = rel.cols[rel.alive_rows()].astype(np.int64)
            if len(ids):
                out.append(table_of(prog.values, np.full(len(ids), me), name, False, ids,
                                    width))
        sent = _Rows(prog, table, reg.sent, reg.codes, reg.names, width)
        before: dict[int, dict[str, np.ndarray]] = {}
        for name in sent.groups:
            dest, rel = _untag(name)
            before.setdefault(dest, {})[rel] = sent.cols(name)[:, :ip.plan.arity[rel]]
        now: dict[int, dict[str, np.ndarray]] = {}
        for out_name, rel_name in ip.outs.items():
            r = prog.rels[out_name]
            ids = r.cols[r.alive_rows()].astype(np.int64)
            dest = locate.parts(prog.values, rel_name, ids)
            for d in distinct(dest[dest != me]).tolist():
                now.setdefault(d, {})[rel_name] = ids[dest == d]
        empty = np.zeros((0, 0), np.int64)
        for d in sorted(set(now) | set(before)):
            if all(_same(now.get(d, {}).get(n, empty), before.get(d, {}).get(n, empty))
                   for n in heads):
                for name in sent.groups:
                    if _untag(name)[0] == d:
                        kept[sent.rows[sent.groups[name]]] = True
                continue
            out.append(table_of(prog.values, np.array([d]), f"{_CONTRIB}{me}:", True,
                                np.zeros((1, 0), np.int64), width))
            for n, ids in now.get(d, {}).items():
                out.append(table_of(prog.values, np.full(len(ids), d), f"{_CONTRIB}{me}:{n}",
                                    True, ids, width))
                out.append(table_of(prog.values, np.full(len(ids), me), f"{_SENT}{d}:{n}",
                                    False, ids, width))
        base = table.filter(pa.array(kept))
        base = base.set_column(2, "new", pa.array(np.zeros(base.num_rows, dtype=bool)))
        return pa.concat_tables([base, *out])

    return run
