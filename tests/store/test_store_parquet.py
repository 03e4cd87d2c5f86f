"""Parquet export: typed columns, exact round trip through the args column, streaming."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from netrules.errors import StoreError
from netrules.facts import Fact, value_from_json
from netrules.store import BatchRecord, open_store


def test_export_parquet(tmp_path: Path) -> None:
    facts = [Fact("path", (f"n{i}", "d", ("n", i), i, i * 0.5)) for i in range(7)]
    mixed = [Fact("m", ("a", 1)), Fact("m", ("b", 2.5)), Fact("m", ("c", "x")),
             Fact("m", ("d", float("inf")))]
    with open_store(str(tmp_path / "s.db")) as store:
        store.write_batch(BatchRecord(0, 0.0, added={"path": facts, "m": mixed}))
        out = tmp_path / "path.parquet"
        assert store.export_parquet("path", str(out), chunk_rows=3) == 7
        meta = pq.ParquetFile(out).metadata
        assert meta.num_rows == 7 and meta.num_row_groups == 3  # streamed in chunks
        table = pq.read_table(out)
        assert table.schema.field("arg0").type == "string"
        assert table.schema.field("arg3").type == "int64"
        assert table.schema.field("arg4").type == "double"
        assert table.schema.field("arg2").type == "string"  # lists are JSON text
        rows = table.to_pylist()
        assert sorted(r["arg3"] for r in rows) == list(range(7))
        assert {r["loc"] for r in rows} == {f"n{i}" for i in range(7)}
        back = [Fact("path", tuple(value_from_json(a) for a in json.loads(r["args"])))
                for r in rows]
        assert sorted(back, key=Fact.key) == sorted(facts, key=Fact.key)

        assert store.export_parquet("m", str(tmp_path / "m.parquet")) == 4
        m = pq.read_table(tmp_path / "m.parquet")
        assert m.schema.field("arg1").type == "string"  # int/float/str mixed -> JSON text
        assert sorted(m.column("arg1").to_pylist()) == ["\"x\"", "1", "2.5", "Infinity"]

        assert store.export_parquet("empty", str(tmp_path / "e.parquet")) == 0
        assert pq.read_table(tmp_path / "e.parquet").num_rows == 0
        with pytest.raises(StoreError):
            store.export_parquet("path", str(tmp_path / "no" / "dir" / "x.parquet"))
        with pytest.raises(StoreError):
            store.export_parquet("bad name", str(tmp_path / "x.parquet"))
