"""The store's JSON text of interned values, rendered as Arrow strings a level at a time.

A best-routes load writes millions of facts whose path lists share their tails. Each distinct
list is rendered once, from its tail's text, one vectorised join per list length (the lists of
length k are all built in one ``binary_join_element_wise`` from those of length k - 1), so no
Python string is made per list, per fact or per suffix. Plain values (node names, floats,
large numbers) are few: their text comes from ``Values.json_column``. Strings are
``large_string`` so a column may exceed 2 GiB of text.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from netrules.engine.columnar.values import CELLS, SMALL, Values

__all__ = ["STR", "indexed_texts", "list_levels", "loc_texts", "unique_inverse", "value_texts"]

STR = pa.large_string()
_COMMA, _EMPTY = pa.scalar(",", STR), pa.scalar("", STR)
_OPEN, _CLOSE = pa.scalar("[", STR), pa.scalar("]", STR)


#: Each dictionary's plain values' texts, by atom index (id - SMALL), as one Arrow array:
#: a link event renders its facts' texts three times (view deletions, derivations, the
#: store's rows), and a list's elements once per length, each a Python call per node name
#: (on americas best routes, 125,000 a link event). Dictionaries are append-only, so the
#: array only grows; a renewed program brings a new dictionary, and its old array goes.
_ATOM_TEXTS: weakref.WeakKeyDictionary[Values, pa.LargeStringArray] = \
    weakref.WeakKeyDictionary()


def _atom_texts(values: Values, ids: np.ndarray) -> pa.LargeStringArray:
    """Texts of plain values (``SMALL <= id < CELLS``), from the dictionary's cached array."""
    k = ids - SMALL
    have = _ATOM_TEXTS.get(values)
    if have is None or len(have) <= int(k.max()):
        start = 0 if have is None else len(have)
        new = pa.array(values.plain_json(start), type=STR)
        have = _ATOM_TEXTS[values] = new if have is None else pa.concat_arrays([have, new])
    return have.take(pa.array(k))


def unique_inverse(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(x, return_inverse=True)`` by one stable sort (NumPy's own takes a hash
    path that is several times slower on millions of ids)."""
    order = np.argsort(x, kind="stable")
    s = x[order]
    flag = np.ones(len(s), dtype=bool)
    flag[1:] = s[1:] != s[:-1]
    inv = np.empty(len(x), dtype=np.int64)
    inv[order] = np.cumsum(flag) - 1
    return s[flag], inv


def _unique(x: np.ndarray) -> np.ndarray:
    s = np.sort(x)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if len(s) else s


def value_texts(values: Values, ids: np.ndarray) -> pa.LargeStringArray:
    """The canonical JSON text of each id (``json.dumps`` of its value with ``,``/``:``
    separators), in ``ids``' order. Cheapest on distinct ids (``unique_inverse``'s)."""
    text, where = indexed_texts(values, ids)
    return text if where is None else text.take(pa.array(where))


def indexed_texts(values: Values, ids: np.ndarray
                  ) -> tuple[pa.LargeStringArray, np.ndarray | None]:
    """(texts, where): id ``k``'s text is ``texts[where[k]]`` (``where`` None: ``texts[k]``).
    Saves reordering a load's hundreds of MB of path texts into ``ids``' order."""
    ids = np.asarray(ids, dtype=np.int64)
    small, cells = ids < SMALL, ids >= CELLS
    atoms = ~small & ~cells
    parts: list[pa.Array] = []
    where = np.empty(len(ids), dtype=np.int64)
    offset = 0
    for mask, kind in ((small, 0), (atoms, 1), (cells, 2)):
        k = np.flatnonzero(mask)
        if not len(k):
            continue
        if kind == 0:
            part, local = pa.array(ids[k]).cast(STR), np.arange(len(k))
        elif kind == 1:
            part, local = _atom_texts(values, ids[k]), np.arange(len(k))
        else:
            uniq, inv = unique_inverse(ids[k])
            part, order = _list_texts(values, uniq)
            back = np.empty(len(uniq), dtype=np.int64)
            back[order] = np.arange(len(uniq))
            local = back[inv]
        where[k] = offset + local
        offset += len(part)
        parts.append(part)
    if not parts:
        return pa.array([], type=STR), None
    if len(parts) == 1 and (where == np.arange(len(ids))).all():
        return parts[0], None
    return (parts[0] if len(parts) == 1 else pa.concat_arrays(parts)), where


def list_levels(values: Values, ids: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The lists ``ids`` (cell ids) and every suffix they share, a length at a time from the
    shortest: per length, its cells (cell indices, ``id - CELLS``) and, from length 2 on,
    each one's tail's index among the cells of the length before (non-decreasing, so a take
    by it reads the shorter lists in order)."""
    tail, nil = values.tail, values.nil
    need = np.zeros(values.ncells, dtype=bool)  # the lists and all their suffixes
    front = _unique(ids - CELLS)
    while len(front):
        need[front] = True
        t = tail[front].astype(np.int64)
        t = t[t != nil] - CELLS
        front = _unique(t[~need[t]])
    cell = np.flatnonzero(need)
    t = tail[cell].astype(np.int64)
    by_tail = np.argsort(t, kind="stable")
    sorted_tails = t[by_tail]
    now = cell[t == nil]  # the lists of length 1
    parent = np.zeros(0, dtype=np.int64)
    while len(now):
        yield now, parent
        # the next length: every cell whose tail is one of these, grouped by that tail
        lo = np.searchsorted(sorted_tails, now + CELLS, "left")
        cnt = np.searchsorted(sorted_tails, now + CELLS, "right") - lo
        total = int(cnt.sum())
        start = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(total)
        parent = np.repeat(np.arange(len(now)), cnt)
        now = cell[by_tail[start]]


def _list_texts(values: Values, ids: np.ndarray) -> tuple[pa.LargeStringArray, np.ndarray]:
    """Texts of non-empty lists (``ids`` sorted, distinct), and which of ``ids`` each text
    is: every suffix the lists share rendered once, each length in one Arrow join onto the
    length before."""
    wanted = np.zeros(values.ncells, dtype=bool)
    wanted[ids - CELLS] = True
    heads = values.head.astype(np.int64)
    pieces, which = [], []
    body: pa.Array | None = None
    for now, parent in list_levels(values, ids):
        h = _head_texts(values, heads[now])
        body = h if body is None else pc.binary_join_element_wise(
            h, body.take(pa.array(parent)), _COMMA)
        w = wanted[now]
        if w.any():
            pieces.append(pc.binary_join_element_wise(
                _OPEN, body.filter(pa.array(w)), _CLOSE, _EMPTY))
            which.append(now[w])
    del body
    got = np.concatenate(which) + CELLS
    return _concat_freeing(pieces), np.searchsorted(ids, got)  # ids are sorted, distinct


def _concat_freeing(pieces: list[pa.Array]) -> pa.LargeStringArray:
    """``pa.concat_arrays`` of large strings without holding the pieces and the whole at
    once: each piece is copied into one buffer, whose pages are only touched as it fills,
    and dropped (a best-routes load's path texts are hundreds of MB)."""
    if len(pieces) == 1:
        return pieces.pop()
    sizes = [(len(p), p.buffers()[1], p.buffers()[2], p.offset) for p in pieces]
    n = sum(k for k, *_ in sizes)
    offsets = np.empty(n + 1, dtype=np.int64)
    total = 0
    for k, obuf, _, off in sizes:
        o = np.frombuffer(obuf, dtype=np.int64)[off:off + k + 1]
        total += int(o[-1] - o[0])
    data = np.empty(total, dtype=np.uint8)
    del sizes
    pool = pa.default_memory_pool()
    row = pos = 0
    offsets[0] = 0
    while pieces:
        p = pieces.pop(0)
        k, off = len(p), p.offset
        o = np.frombuffer(p.buffers()[1], dtype=np.int64)[off:off + k + 1]
        d = np.frombuffer(p.buffers()[2], dtype=np.uint8)[o[0]:o[-1]]
        data[pos:pos + len(d)] = d
        offsets[row + 1:row + k + 1] = o[1:] - o[0] + pos
        row, pos = row + k, pos + len(d)
        del p, o, d
        pool.release_unused()  # mimalloc keeps freed pages otherwise: RSS would hold both
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def _head_texts(values: Values, heads: np.ndarray) -> pa.LargeStringArray:
    """Texts of list elements: node names repeat across millions of cells, so each distinct
    element is rendered once and taken."""
    uniq, inv = unique_inverse(heads)
    text, where = indexed_texts(values, uniq)
    return text.take(pa.array(inv if where is None else where[inv]))


def loc_texts(values: Values, ids: np.ndarray) -> pa.LargeStringArray:
    """The store's ``loc`` text of each id: a string as is, any other value as its JSON."""
    ids = np.asarray(ids, dtype=np.int64)
    text = value_texts(values, ids)
    atoms = np.flatnonzero((ids >= SMALL) & (ids < CELLS))
    if not len(atoms):
        return text
    objs = values.decode_column(ids[atoms])
    strs = [k for k, v in zip(atoms.tolist(), objs.tolist(), strict=True)
            if isinstance(v, str)]
    if not strs:
        return text
    py = text.to_pylist()
    for k, v in zip(atoms.tolist(), objs.tolist(), strict=True):
        if isinstance(v, str):
            py[k] = v
    return pa.array(py, type=STR)
