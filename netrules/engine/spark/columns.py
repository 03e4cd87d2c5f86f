"""Facts as Arrow columns between Spark regions: each argument position is four typed columns.

A region's dictionary (``columnar.values.Values``) is its own, so ids cannot cross regions;
values do, as columns Arrow holds natively: position ``i`` of a fact is ``s{i}`` (a string:
node names), ``n{i}`` (an int64: costs), ``l{i}`` (a list of strings: a path vector) or, for
anything else (floats, lists of numbers or of lists, ints beyond int64), ``j{i}``, its JSON
text. Exactly one of the four is set and the others are null, a bit each in Arrow; positions
past a relation's arity are all null. Strings are interned once per distinct value (Arrow's
dictionary encoding), lists consed from their last element one position at a time, and ids
leave as dictionary-coded columns, so a region reads and writes facts with no Python step per
fact. Only ``j`` values are handled one by one; no shipped program makes one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from netrules.engine.columnar import kernels
from netrules.engine.columnar.values import CELLS, SMALL, Values
from netrules.facts import value_from_json, value_to_json

__all__ = ["KINDS", "schema", "arrow_schema", "ids_of", "table_of", "empty", "distinct",
           "tuples_of", "table_of_tuples"]

#: The typed columns of one argument position, by prefix.
KINDS = (("s", pa.string(), "string"), ("n", pa.int64(), "bigint"),
         ("l", pa.list_(pa.string()), "array<string>"), ("j", pa.string(), "string"))

_INT64 = 1 << 63


def schema(width: int) -> str:
    """The facts frame's Spark DDL for arguments up to ``width``."""
    cols = [f"{k}{i} {ddl}" for i in range(width) for k, _, ddl in KINDS]
    return ", ".join(["part int", "rel string", "new boolean", *cols])


def arrow_schema(width: int) -> pa.Schema:
    fields = [pa.field("part", pa.int32()), pa.field("rel", pa.string()),
              pa.field("new", pa.bool_())]
    fields += [pa.field(f"{k}{i}", t) for i in range(width) for k, t, _ in KINDS]
    return pa.schema(fields)


def empty(width: int) -> pa.Table:
    return arrow_schema(width).empty_table()


# -- Arrow -> ids ------------------------------------------------------------------------------
def _valid(arr: pa.Array) -> np.ndarray:
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _strings(values: Values, arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(row mask, ids of those rows) for a string column: each distinct string interned once."""
    valid = _valid(arr)
    d = pc.dictionary_encode(arr)
    ids = values.encode_many(d.dictionary.to_pylist())
    idx = d.indices.fill_null(0).to_numpy()
    return valid, ids[idx[valid]] if len(ids) else np.empty(0, np.int64)


def _ints(values: Values, arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    valid = _valid(arr)
    v = arr.fill_null(0).to_numpy()[valid].astype(np.int64)
    small = (v >= 0) & (v < SMALL)
    if not small.all():  # negative or large: interned, once per distinct value
        uniq, inv = np.unique(v[~small], return_inverse=True)
        v = v.copy()
        v[~small] = values.encode_many(uniq.tolist())[inv]
    return valid, v


def _lists(values: Values, arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Lists of strings as cons cells, built from the last element forwards: one vectorised
    ``cons`` per list position, whatever the number of lists."""
    valid = _valid(arr)
    lengths = pc.list_value_length(arr).fill_null(0).to_numpy().astype(np.int64)
    starts = np.cumsum(lengths) - lengths
    flat = arr.flatten()
    if len(flat):
        _, elems = _strings(values, flat)
    else:
        elems = np.empty(0, np.int64)
    rows = np.flatnonzero(valid)
    n, s = lengths[rows], starts[rows]
    cur = np.full(len(rows), values.nil, dtype=np.int64)
    for k in range(1, int(n.max()) + 1 if len(n) else 1):
        m = n >= k
        cur[m] = values.cons(elems[s[m] + n[m] - k], cur[m])
    return valid, cur


def _json(values: Values, arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    valid = _valid(arr)
    texts = arr.filter(pa.array(valid)).to_pylist()
    return valid, values.encode_many(value_from_json(json.loads(t)) for t in texts)


_READERS = {"s": _strings, "n": _ints, "l": _lists, "j": _json}


def ids_of(values: Values, table: pa.Table, i: int) -> np.ndarray:
    """Position ``i`` of every row as ids of ``values`` (-1 where the row has no position i)."""
    out = np.full(table.num_rows, -1, dtype=np.int64)
    for k, _, _ in KINDS:
        col = table.column(f"{k}{i}")
        if col.null_count == len(col):
            continue
        valid, ids = _READERS[k](values, col.combine_chunks())
        out[valid] = ids
    return out


# -- ids -> Arrow ------------------------------------------------------------------------------
def _coded(codes: np.ndarray, mask: np.ndarray, words: Sequence[str]) -> pa.Array:
    """A string column from codes into ``words`` (null where ``mask``): each distinct string
    crosses into Arrow once."""
    d = pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32), mask=mask),
                                       pa.array(list(words), pa.string()))
    return d.dictionary_decode()


class _Position:
    """One argument position's four columns, filled kind by kind."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.kind = np.full(n, -1, dtype=np.int8)  # index into KINDS
        self.ints = np.zeros(n, dtype=np.int64)
        self.scode = np.zeros(n, dtype=np.int64)
        self.words: list[str] = []
        self.lists: pa.Array | None = None
        self.lcode = np.zeros(n, dtype=np.int64)
        self.json: np.ndarray = np.full(n, None, dtype=object)

    def arrays(self) -> list[pa.Array]:
        k = self.kind
        out = [_coded(self.scode, k != 0, self.words) if (k == 0).any() else None,
               pa.array(self.ints, mask=k != 1) if (k == 1).any() else None,
               self.lists.take(pa.array(self.lcode, mask=k != 2))
               if self.lists is not None and (k == 2).any() else None,
               pa.array(self.json, pa.string()) if (k == 3).any() else None]
        return [a if a is not None else pa.nulls(self.n, t)
                for a, (_, t, _) in zip(out, KINDS, strict=True)]


def _atoms(values: Values, pos: _Position, col: np.ndarray, rows: np.ndarray) -> None:
    uniq, inv = np.unique(col[rows], return_inverse=True)
    objs = values.decode_column(uniq)
    is_str = np.fromiter((type(o) is str for o in objs), dtype=bool, count=len(objs))
    is_int = np.fromiter((type(o) is int and -_INT64 <= o < _INT64 for o in objs),
                         dtype=bool, count=len(objs))
    s = is_str[inv]
    pos.kind[rows[s]] = 0
    pos.words = [o if t else "" for o, t in zip(objs, is_str, strict=True)]
    pos.scode[rows[s]] = inv[s]
    i = is_int[inv]
    if i.any():
        nums = np.array([o if t else 0 for o, t in zip(objs, is_int, strict=True)],
                        dtype=np.int64)
        pos.kind[rows[i]] = 1
        pos.ints[rows[i]] = nums[inv[i]]
    other = rows[~s & ~i]
    if len(other):
        pos.kind[other] = 3
        pos.json[other] = values.json_column(col[other])


def _string_lists(values: Values, pos: _Position, col: np.ndarray, rows: np.ndarray) -> None:
    """Lists whose elements are all strings go to the ``l`` column (each distinct list walked
    once, by the compiled ``list_elements``); any other list to ``j``."""
    uniq, inv = np.unique(col[rows], return_inverse=True)
    mat = kernels.list_elements(values.head, values.tail, np.int64(values.nil),
                                np.int64(CELLS), uniq.astype(np.int64))
    present = mat >= 0
    elems = mat[present]
    eu, einv = np.unique(elems, return_inverse=True)
    objs = values.decode_column(eu) if len(eu) else np.empty(0, dtype=object)
    e_str = np.fromiter((type(o) is str for o in objs), dtype=bool, count=len(objs))
    ok_cell = np.ones(mat.shape, dtype=bool)
    ok_cell[present] = e_str[einv]
    ok = ok_cell.all(axis=1)
    offsets = np.zeros(len(uniq) + 1, dtype=np.int32)
    np.cumsum(present.sum(axis=1), out=offsets[1:])
    words = [o if t else "" for o, t in zip(objs, e_str, strict=True)]
    flat = _coded(einv, np.zeros(len(einv), dtype=bool), words)
    pos.lists = pa.ListArray.from_arrays(pa.array(offsets), flat)
    good = ok[inv]
    pos.kind[rows[good]] = 2
    pos.lcode[rows[good]] = inv[good]
    bad = rows[~good]
    if len(bad):
        pos.kind[bad] = 3
        pos.json[bad] = values.json_column(col[bad])


def _position(values: Values, col: np.ndarray) -> list[pa.Array]:
    pos = _Position(len(col))
    small = (col >= 0) & (col < SMALL)
    pos.kind[small] = 1
    pos.ints[small] = col[small]
    lists = (col >= CELLS) | (col == values.nil)
    atoms = np.flatnonzero(~small & ~lists & (col >= 0))
    if len(atoms):
        _atoms(values, pos, col, atoms)
    rows = np.flatnonzero(lists)
    if len(rows):
        _string_lists(values, pos, col, rows)
    return pos.arrays()


def table_of(values: Values, part: np.ndarray, rel: str | Sequence[str], new: bool,
             ids: np.ndarray, width: int) -> pa.Table:
    """Rows of ids (one relation's arity, or -1 past each row's) as a facts table."""
    n = len(ids)
    cols: list[pa.Array] = [pa.array(part.astype(np.int32)),
                            pa.array([rel] * n if isinstance(rel, str) else list(rel),
                                     pa.string()),
                            pa.array(np.full(n, new, dtype=bool))]
    k = ids.shape[1] if ids.ndim == 2 else 0
    for i in range(width):
        if i < k:
            cols += _position(values, ids[:, i].astype(np.int64))
        else:
            cols += [pa.nulls(n, t) for _, t, _ in KINDS]
    return pa.Table.from_arrays(cols, schema=arrow_schema(width))


# -- the edges: Python tuples ----------------------------------------------------------------
def tuples_of(table: pa.Table, width: int) -> list[tuple]:
    """Each row's arguments as a tuple of values (the driver's and the per-fact fallback's
    form): Arrow builds the Python values, a column at a time."""
    n = table.num_rows
    per_pos = []
    for i in range(width):
        got: list = [None] * n
        for k, _, _ in KINDS:
            col = table.column(f"{k}{i}")
            if col.null_count == len(col):
                continue
            for r, v in enumerate(col.to_pylist()):
                if v is not None:
                    got[r] = (tuple(v) if k == "l" else
                              value_from_json(json.loads(v)) if k == "j" else v)
        per_pos.append(got)
    out = []
    for row in zip(*per_pos, strict=True) if per_pos else [()] * n:
        k = len(row)
        while k and row[k - 1] is None:
            k -= 1
        out.append(tuple(row[:k]))
    return out


def _kind(v: object) -> int:
    """Which of ``KINDS`` holds a value given as Python (bools and integral floats are ints,
    as ``Values`` has them)."""
    t = type(v)
    if t is str:
        return 0
    if t is bool or (t is int and -_INT64 <= v < _INT64) or \
            (t is float and v.is_integer() and -_INT64 <= v < _INT64):  # type: ignore[attr-defined]
        return 1
    if t is tuple and all(type(x) is str for x in v):  # type: ignore[attr-defined]
        return 2
    return 3


def table_of_tuples(parts: Sequence[int], rels: Sequence[str], args: Sequence[tuple],
                    news: Sequence[bool], width: int) -> pa.Table:
    """Facts given as Python values, as a facts table."""
    n = len(args)
    cols: list[pa.Array] = [pa.array(np.asarray(parts, dtype=np.int32)),
                            pa.array(list(rels), pa.string()),
                            pa.array(np.asarray(news, dtype=bool))]
    for i in range(width):
        slots: list[list] = [[None] * n for _ in KINDS]
        for r, a in enumerate(args):
            if i < len(a):
                v = a[i]
                k = _kind(v)
                slots[k][r] = (v if k == 0 else int(v) if k == 1 else list(v) if k == 2
                               else json.dumps(value_to_json(v), separators=(",", ":")))
        cols += [pa.array(vals, t) for vals, (_, t, _) in zip(slots, KINDS, strict=True)]
    return pa.Table.from_arrays(cols, schema=arrow_schema(width))


def distinct(table: pa.Table, width: int) -> pa.Table:
    """The table with each (part, rel, arguments) row once, the first of its repeats kept."""
    if not table.num_rows:
        return table
    values = Values()
    rel = pc.dictionary_encode(table.column("rel").combine_chunks()).indices.to_numpy()
    keys = np.column_stack([table.column("part").to_numpy(), rel,
                            *(ids_of(values, table, i) for i in range(width))])
    _, first = np.unique(keys, axis=0, return_index=True)
    return table.take(pa.array(np.sort(first)))
