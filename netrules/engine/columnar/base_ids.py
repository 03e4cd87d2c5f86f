"""Base facts' id rows and relation rows by ledger fact number (``ColumnLedger``): what
turns a batch's appeared and vanished fact numbers into the rows per relation that
``ColumnarProgram.apply_rows`` takes, with one gather and no Python per fact.

A fact's ids never change (values are interned for the engine's life) and its number never
changes (the numbering is append-only), so each base fact is encoded once, the first time a
batch carries it: a link that flaps is an index into this table, not a lookup. Nor does its
row in its relation (a base relation is never compacted), so that is kept too, the first time
the fact reaches the engine: a batch's base rows are a gather, not a hash of its columns and
a probe of the relation's map (on a batch after other work, each NumPy call on the way cost
5-10 µs: TataNld's 100 links down spent about 0.2 ms finding 200 rows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from netrules.engine.columnar import kernels
from netrules.engine.columnar.sets import distinct
from netrules.engine.columnar.values import Values
from netrules.engine.ledger_columns import FactNumbers
from netrules.errors import EngineError

if TYPE_CHECKING:
    from netrules.engine.columnar.psn import ColumnarProgram

__all__ = ["BaseIds"]


class BaseIds:
    """Id rows of a ``FactNumbers``' facts, padded to the widest (-1 past a fact's arity),
    and each fact's row in its relation once it has reached the engine."""

    def __init__(self, numbers: FactNumbers) -> None:
        self.numbers = numbers
        self.n = 0  # facts encoded so far (the numbering's first n)
        self.ids = np.full((0, 1), -1, np.int64)
        self.arity = np.zeros(0, np.int16)
        self.row = np.full(0, -1, np.int64)  # the fact's row in its relation, -1: not yet
        self._rels: dict[int, object] = {}  # relation code -> the Relation ``row`` is of

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "row" not in state:  # (pickled before rows were kept)
            self.row = np.full(len(self.ids), -1, np.int64)
            self._rels = {}

    def _catch_up(self, values: Values) -> None:
        """Encode the facts numbered since the last batch, a relation at a time."""
        facts = self.numbers.facts
        new = facts[self.n:]
        if not new:
            return
        total = len(facts)
        width = max(self.ids.shape[1], max(len(f.args) for f in new))
        if total > len(self.ids) or width > self.ids.shape[1]:
            cap = max(total, 2 * len(self.ids), 64)
            grown = np.full((cap, width), -1, np.int64)
            grown[: self.n, : self.ids.shape[1]] = self.ids[: self.n]
            self.ids = grown
            self.arity = np.resize(self.arity, cap)
            row = np.full(cap, -1, np.int64)
            row[: self.n] = self.row[: self.n]
            self.row = row
        by: dict[tuple[str, int], list[int]] = {}
        for i, f in enumerate(new, self.n):
            by.setdefault((f.relation, len(f.args)), []).append(i)
        for (_rel, arity), at in by.items():
            rows = values.encode_rows([facts[i].args for i in at], arity)
            self.ids[at, :arity] = rows
            self.arity[at] = arity
        self.n = total

    def present(self, prog: ColumnarProgram) -> np.ndarray:
        """Numbers of the base facts ``prog`` holds: those whose kept row is alive."""
        n, out = self.n, []
        for c, rel in self._rels.items():
            if rel is not prog.rels.get(self.numbers.relations[c]):
                continue
            mine = np.flatnonzero((self.numbers.frel[:n] == c) & (self.row[:n] >= 0))
            out.append(mine[rel.alive[self.row[mine]]])  # type: ignore[attr-defined]
        return np.concatenate(out) if out else np.empty(0, np.int64)

    def rows(self, prog: ColumnarProgram, fns: np.ndarray, *, add: bool
             ) -> dict[str, np.ndarray]:
        """The distinct rows of facts ``fns`` (distinct) per relation, for
        ``ColumnarProgram.apply_rows``; ``add``: rows are stored for facts the relation has
        never held (facts appearing), else those facts are left out (they cannot vanish)."""
        if not len(fns):
            return {}
        if self.n < len(self.numbers):
            self._catch_up(prog.values)
        rows, c, simple = kernels.base_rows(fns, self.numbers.frel, self.row)
        if simple:
            name = self.numbers.relations[c]
            if self._rels.get(c) is prog.rels.get(name):
                return {name: rows}
        codes = self.numbers.frel[fns]
        lo, hi = int(codes.min()), int(codes.max())
        out = {}
        for c in (lo,) if lo == hi else distinct(codes).tolist():
            sel = fns if lo == hi else fns[codes == c]
            name = self.numbers.relations[c]
            a = int(self.arity[sel[0]])
            rel = prog.relation(name, a)
            if self._rels.get(c) is not rel:  # a relation new to this table: rows again
                self.row[: self.n][self.numbers.frel[: self.n] == c] = -1
                self._rels[c] = rel
            rows = self.row[sel]
            miss = rows < 0
            if miss.any():
                if (self.arity[sel] != a).any():
                    raise EngineError(f"facts of {name} with different numbers of "
                                      "arguments in one batch")
                cols = self.ids[sel[miss], :a]
                found = rel.rows_for(cols) if add else rel.find(cols)
                rows[miss] = found
                self.row[sel[miss]] = found
                rows = rows[rows >= 0]
            out[name] = rows
        return out
