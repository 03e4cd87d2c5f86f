"""Base facts' id rows by ledger fact number (``ColumnLedger``): what turns a batch's
appeared and vanished fact numbers into the id rows per relation that
``ColumnarProgram.apply`` takes, with one indexing a relation and no Python per fact.

A fact's ids never change (values are interned for the engine's life) and its number never
changes (the numbering is append-only), so each base fact is encoded once, the first time a
batch carries it: a link that flaps is an index into this table, not a lookup.
"""

from __future__ import annotations

import numpy as np

from netrules.engine.columnar.sets import distinct
from netrules.engine.columnar.values import Values
from netrules.engine.ledger_columns import FactNumbers
from netrules.errors import EngineError

__all__ = ["BaseIds"]


class BaseIds:
    """Id rows of a ``FactNumbers``' facts, padded to the widest (-1 past a fact's arity)."""

    def __init__(self, numbers: FactNumbers) -> None:
        self.numbers = numbers
        self.n = 0  # facts encoded so far (the numbering's first n)
        self.ids = np.full((0, 1), -1, np.int64)
        self.arity = np.zeros(0, np.int16)

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
        by: dict[tuple[str, int], list[int]] = {}
        for i, f in enumerate(new, self.n):
            by.setdefault((f.relation, len(f.args)), []).append(i)
        for (_rel, arity), at in by.items():
            rows = values.encode_rows([facts[i].args for i in at], arity)
            self.ids[at, :arity] = rows
            self.arity[at] = arity
        self.n = total

    def rows(self, values: Values, fns: np.ndarray) -> dict[str, np.ndarray]:
        """The id rows of facts ``fns`` per relation."""
        if not len(fns):
            return {}
        if self.n < len(self.numbers):
            self._catch_up(values)
        codes = self.numbers.frel[fns]
        lo, hi = int(codes.min()), int(codes.max())
        out = {}
        for c in (lo,) if lo == hi else distinct(codes).tolist():
            sel = fns if lo == hi else fns[codes == c]
            ar = self.arity[sel]
            a = int(ar[0])
            if (ar != a).any():
                raise EngineError(f"facts of {self.numbers.relations[c]} with different "
                                  "numbers of arguments in one batch")
            out[self.numbers.relations[c]] = self.ids[sel, :a]
        return out
