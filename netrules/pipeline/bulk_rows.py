"""One relation's changed rows as the store writes them, rendered chunk by chunk on demand.

The rows are id columns. Their canonical order (column by column, by each value's JSON text:
the same change log whatever order a restarted engine interned values in) needs only integer
ranks; the text of each column's distinct values is rendered once (``texts.value_texts``),
and a row's ``args`` text is joined from its columns' texts in Arrow, a chunk at a time, while
the store writes that chunk. So the millions of row texts of a load never exist at once as
Python strings, and a relation's dictionaries live only while it is written.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from netrules.engine.columnar.sets import distinct
from netrules.engine.columnar.values import SMALL, Values
from netrules.pipeline.texts import STR, indexed_texts, loc_texts, unique_inverse

__all__ = ["IdRows", "CHUNK_ROWS", "RANK_ALL", "args_texts", "json_array"]

#: Rows rendered and handed to the store at a time: big enough that Arrow and executemany
#: amortise their per-call cost, small enough that a chunk's Python strings stay a few MB.
CHUNK_ROWS = 20_000

_COMMA, _EMPTY = pa.scalar(",", STR), pa.scalar("", STR)
_OPEN, _CLOSE = pa.scalar("[", STR), pa.scalar("]", STR)


#: A column with more distinct values than this is ranked only where the columns before it
#: tie: sorting two million path texts that share long prefixes cost seconds, and a route
#: is almost always told apart by its source and destination.
RANK_ALL = 100_000


def _texts(values: Values, col: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """(texts of the column's distinct values, each row's index into them)."""
    uniq, inv = unique_inverse(col)
    text, where = indexed_texts(values, uniq)
    return text, (inv if where is None else where[inv])


def _rank(text: pa.Array, at: np.ndarray) -> np.ndarray:
    """Each row's rank by its text (``text[at]``)."""
    rank = np.empty(len(text), dtype=np.int64)
    rank[pc.array_sort_indices(text).to_numpy()] = np.arange(len(text))
    return rank[at]


def _rank_ties(text: pa.Array, at: np.ndarray, keys: list[np.ndarray]) -> np.ndarray:
    """A rank by text that orders rows only among those equal on ``keys`` (equal texts
    equal ranks): all the order ``lexsort`` needs of this column."""
    n = len(at)
    if not keys:
        return _rank(text, at)
    order = np.lexsort(keys[::-1])
    step = np.zeros(n, dtype=bool)
    for k in keys:
        ks = k[order]
        step[1:] |= ks[1:] != ks[:-1]
    group = np.cumsum(step)  # per row in lexsort order
    size = np.bincount(group)
    tied = order[size[group] > 1]  # grouped, groups ascending
    g = group[size[group] > 1]
    out = np.zeros(n, dtype=np.int64)
    base = 0
    i = 0
    while i < len(tied):  # whole groups, ~CHUNK_ROWS * 5 rows at a time: bounded texts
        j = min(len(tied), i + 5 * CHUNK_ROWS)
        if j < len(tied):
            j = int(np.searchsorted(g, g[j - 1], "right"))
        gs, a = g[i:j], at[tied[i:j]]
        table = pa.table({"g": gs, "t": text.take(pa.array(a))})
        srt = pc.sort_indices(table, sort_keys=[("g", "ascending"), ("t", "ascending")])
        srt = srt.to_numpy()
        new = np.ones(len(srt), dtype=bool)
        new[1:] = (gs[srt][1:] != gs[srt][:-1]) | (a[srt][1:] != a[srt][:-1])
        out[tied[i:j][srt]] = base + np.cumsum(new)
        base += int(new.sum())
        i = j
    return out


def _column(values: Values, col: np.ndarray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """(texts of the column's distinct values, each row's index into them, each row's rank
    by text)."""
    text, at = _texts(values, col)
    return text, at, _rank(text, at)


def args_texts(values: Values, ids: np.ndarray) -> pa.Array:
    """Each row's args text (``store.args_json`` of its values), in the rows' order: each
    distinct value's JSON rendered once and the rows joined in Arrow."""
    n, arity = ids.shape
    if not n or not arity:
        return pa.array(["[]"] * n, type=STR)
    parts = []
    for j in range(arity):
        text, at = _texts(values, ids[:, j])
        parts.append(text.take(pa.array(at)))
    return json_array(parts)


def json_array(parts: list[pa.Array]) -> pa.Array:
    """Per row, ``[`` + its texts in ``parts`` joined by ``,`` + ``]`` (no nulls: Arrow's
    join that skips them dropped rows, pyarrow 26)."""
    body = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, _COMMA)
    return pc.binary_join_element_wise(_OPEN, body, _CLOSE, _EMPTY)


class IdRows:
    """Rows of id columns (``ids``: n x arity) of one relation, in the store's canonical order;
    ``loc`` is the ``@`` position whose text ``chunks`` also yields (None: no locations);
    a column with more than ``rank_all`` distinct values is ranked only where it must be."""

    def __init__(self, values: Values, ids: np.ndarray, loc: int | None = None, *,
                 rank_all: int = RANK_ALL) -> None:
        self.values, self.ids, self.rank_all = values, ids, rank_all
        self.loc = loc if loc is not None and 0 <= loc < ids.shape[1] else None

    def __len__(self) -> int:
        return len(self.ids)

    def first(self, limit: int) -> np.ndarray:
        """Indices of the first ``limit`` rows in canonical order. Column by column, only the
        rows that can still make the cut are ranked further, so the first rows of a million
        routes never render a path their (source, destination) already ruled out."""
        n, arity = len(self.ids), self.ids.shape[1]
        rows = np.arange(n)
        keys: list[np.ndarray] = []
        for j in range(arity):
            if len(rows) <= 1:
                break
            _, _, rank = _column(self.values, self.ids[rows, j])
            keys.append(rank)
            order = np.lexsort(keys[::-1])
            rows, keys = rows[order], [k[order] for k in keys]
            if len(rows) > limit:  # keep the rows tied with the last one inside the cut
                last = tuple(k[limit - 1] for k in keys)
                tied = np.ones(len(rows), dtype=bool)
                for k, v in zip(keys, last, strict=True):
                    tied &= k == v
                cut = max(limit, int(np.flatnonzero(tied)[-1]) + 1) if tied.any() else limit
                rows, keys = rows[:cut], [k[:cut] for k in keys]
        return rows[:limit]

    def chunks(self, size: int = CHUNK_ROWS
               ) -> Iterator[tuple[list[str], list[str | None] | None]]:
        """(args texts, location texts) of consecutive rows in canonical order, ``size`` at
        a time; location texts None: each is the string at the ``@`` position of its args
        (``RowSource``)."""
        n, arity = len(self.ids), self.ids.shape[1]
        if not n:
            return
        cols, keys = [], []
        for j in range(arity):
            text, at = _texts(self.values, self.ids[:, j])
            cols.append((text, at))
            keys.append(_rank(text, at) if len(text) <= self.rank_all
                        else _rank_ties(text, at, keys))
        order = np.lexsort(keys[::-1]) if n > 1 and keys else np.arange(n)
        del keys
        cols = [(text, inv[order]) for text, inv in cols]
        loc = None
        if self.loc is not None and not self._locs_in_args():
            uniq, inv = unique_inverse(self.ids[order, self.loc])
            loc = (loc_texts(self.values, uniq), inv)
        for i in range(0, n, size):
            j = min(n, i + size)
            if arity == 0:
                args = ["[]"] * (j - i)
            else:
                parts = [text.take(pa.array(inv[i:j])) for text, inv in cols]
                body = parts[0] if arity == 1 else pc.binary_join_element_wise(*parts, _COMMA)
                args = pc.binary_join_element_wise(_OPEN, body, _CLOSE, _EMPTY).to_pylist()
            if loc is not None:
                yield args, loc[0].take(pa.array(loc[1][i:j])).to_pylist()
            else:
                yield args, None if self.loc is not None else [None] * (j - i)

    def _locs_in_args(self) -> bool:
        """Is every row's location the string at its ``@`` position, and every args text
        strict JSON (no ``Infinity``/``NaN``)? Then the store may read locations out of the
        args it already has instead of binding a text per row. A non-finite number is an
        interned atom wherever it sits (a list holds atoms), so the few thousand atoms tell.
        A location holding a NUL is bound too: SQLite's JSON functions end a string there."""
        uniq = distinct(self.ids[:, self.loc])
        locs = self.values.decode_column(uniq).tolist()
        if not all(isinstance(v, str) and "\x00" not in v for v in locs):
            return False
        atoms = SMALL + np.arange(len(self.values) - self.values.ncells, dtype=np.int64)
        return not any(isinstance(v, float) and not math.isfinite(v)
                       for v in self.values.decode_column(atoms).tolist())
