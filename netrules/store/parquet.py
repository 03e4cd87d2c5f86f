"""Export one view to Parquet for offline analysis (pandas, DuckDB, Spark).

Rows are streamed from the store in chunks and written one row group per chunk, so exporting
a 14-million-fact view needs memory for one chunk, not the view. Column types are fixed before
writing (Parquet needs one schema per file), so a cheap first pass over the view decides each
argument column's type: all-string -> string, all-int -> int64, numbers -> float64, anything
mixed or a list -> string holding the value's JSON. Every row also carries ``loc`` and the
canonical ``args`` JSON, which round-trips exactly whatever the column types.
"""

from __future__ import annotations

import json
import math
import os
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from netrules.errors import StoreError
from netrules.facts import Fact, Value, value_to_json
from netrules.store.base import args_json, check_relation, loc_text

if TYPE_CHECKING:
    from netrules.store.base import Store

__all__ = ["export_parquet"]


def _kind(v: Value) -> str:
    if isinstance(v, bool):
        return "int"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    return "json"


def _merge(a: str | None, b: str) -> str:
    if a is None or a == b:
        return b
    if {a, b} == {"int", "float"}:
        return "float"
    return "json"


_ARROW = {"int": pa.int64(), "float": pa.float64(), "str": pa.string(), "json": pa.string()}


def _cell(v: Value | None, kind: str) -> Any:
    if v is None:
        return None
    if kind == "json":
        return json.dumps(value_to_json(v), separators=(",", ":"))
    if kind == "float":
        return float(v)  # type: ignore[arg-type]
    return v


def export_parquet(store: Store, relation: str, path: str | os.PathLike[str],
                   chunk_rows: int = 50_000) -> int:
    """Write view ``relation`` to ``path``; returns the row count (0 rows: an empty file
    with just ``loc`` and ``args`` columns)."""
    check_relation(relation)
    kinds: list[str | None] = []
    for facts in store.iter_view(relation, chunk_rows=chunk_rows):
        for f in facts:
            if len(f.args) > len(kinds):
                kinds.extend([None] * (len(f.args) - len(kinds)))
            for i, v in enumerate(f.args):
                if isinstance(v, float) and not math.isfinite(v):
                    kinds[i] = _merge(kinds[i], "json")
                else:
                    kinds[i] = _merge(kinds[i], _kind(v))
    final = [k or "json" for k in kinds]
    schema = pa.schema(
        [pa.field("loc", pa.string()), pa.field("args", pa.string())]
        + [pa.field(f"arg{i}", _ARROW[k]) for i, k in enumerate(final)],
        metadata={"netrules.relation": relation},
    )
    n = 0
    try:
        with pq.ParquetWriter(os.fspath(path), schema) as writer:
            for facts in store.iter_view(relation, chunk_rows=chunk_rows):
                cols: dict[str, list[Any]] = {
                    "loc": [loc_text(f) for f in facts],
                    "args": [args_json(f.args) for f in facts],
                }
                for i, k in enumerate(final):
                    cols[f"arg{i}"] = [_cell(_arg(f, i), k) for f in facts]
                writer.write_table(pa.Table.from_pydict(cols, schema=schema))
                n += len(facts)
    except (OSError, pa.ArrowException) as err:
        raise StoreError(f"{path}: cannot export {relation} to Parquet: {err}") from err
    return n


def _arg(f: Fact, i: int) -> Value | None:
    return f.args[i] if i < len(f.args) else None
