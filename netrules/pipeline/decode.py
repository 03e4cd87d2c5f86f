"""Python values of id columns for the facts the pipeline must hand out as ``Fact`` objects
(removed facts of alert relations, derivation rows): a list is built from its tail's tuple,
a length at a time (``texts.list_levels``), so each suffix the routes share is decoded once
instead of element by element per fact."""

from __future__ import annotations

import numpy as np

from netrules.engine.columnar.values import CELLS, Values
from netrules.pipeline.texts import list_levels, unique_inverse

__all__ = ["decode_column", "decode_rows"]


def decode_column(values: Values, ids: np.ndarray) -> list:
    """The value of each id (lists as tuples), as ``Values.decode_column`` gives them."""
    ids = np.asarray(ids, dtype=np.int64)
    cells = ids >= CELLS
    if not cells.any():
        return values.decode_column(ids).tolist()
    out = np.empty(len(ids), dtype=object)
    plain = np.flatnonzero(~cells)
    if len(plain):
        out[plain] = values.decode_column(ids[plain])
    uniq, inv = unique_inverse(ids[cells])
    got = np.empty(len(uniq), dtype=object)
    heads = values.head.astype(np.int64)
    prev: list[tuple] = []
    for now, parent in list_levels(values, uniq):
        h = decode_column(values, heads[now])
        cur = ([(x,) for x in h] if not prev
               else [(x, *prev[p]) for x, p in zip(h, parent.tolist(), strict=True)])
        at = np.searchsorted(uniq, now + CELLS)
        hit = (at < len(uniq)) & (uniq[np.minimum(at, len(uniq) - 1)] == now + CELLS)
        for k, j in zip(np.flatnonzero(hit).tolist(), at[hit].tolist(), strict=True):
            got[j] = cur[k]
        prev = cur
    out[np.flatnonzero(cells)] = got[inv]
    return out.tolist()


def decode_rows(values: Values, cols: np.ndarray) -> list[tuple]:
    """Rows of ids -> tuples of values."""
    if len(cols) == 0 or cols.shape[1] == 0:
        return [()] * len(cols)
    return list(zip(*(decode_column(values, cols[:, j]) for j in range(cols.shape[1])),
                    strict=True))
