"""SQLite-only behaviour: WAL readers in other processes, URL forms, bad files."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netrules.errors import StoreError
from netrules.facts import Fact
from netrules.store import BatchRecord, open_store
from netrules.store.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]

# A reader process: opens the store once (read-only), then answers one line per request with
# the link view it sees, so the test can check that a long-lived reader sees new batches.
READER = textwrap.dedent("""
    import json, sys
    from netrules.store import open_store
    store = open_store(sys.argv[1], read_only=True)
    print("ready", flush=True)
    for line in sys.stdin:
        print(json.dumps({"last": store.last_batch_id(),
                          "link": store.snapshot().get("link", [])}), flush=True)
""")


def _link(a: str, b: str) -> Fact:
    return Fact("link", (a, b, 1))


def _ask(proc: subprocess.Popen) -> dict:
    proc.stdin.write("?\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def test_wal_reader_in_another_process_sees_commits(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    writer = open_store(f"sqlite:///{db}")
    assert isinstance(writer, SQLiteStore) and writer.journal_mode() == "wal"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", READER, db], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert _ask(proc) == {"last": None, "link": []}
        writer.write_batch(BatchRecord(0, 0.0, added={"link": [_link("a", "b")]}))
        assert _ask(proc) == {"last": 0, "link": [["a", "b", 1]]}

        # An open write transaction does not block the reader: it sees the last commit.
        raw = sqlite3.connect(db, isolation_level=None, timeout=1)
        raw.execute("BEGIN IMMEDIATE")
        raw.execute("DELETE FROM views")
        # (a blocked reader would wait out its busy timeout while the write stays open, then
        # fail: the answer itself shows it was not blocked, no clock needed)
        assert _ask(proc) == {"last": 0, "link": [["a", "b", 1]]}
        raw.execute("ROLLBACK")
        raw.close()

        writer.write_batch(BatchRecord(1, 1.0, added={"link": [_link("b", "c")]}))
        assert _ask(proc) == {"last": 1, "link": [["a", "b", 1], ["b", "c", 1]]}
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        writer.close()
    assert proc.returncode == 0


def test_corrupt_file_is_a_store_error_naming_the_path(tmp_path: Path) -> None:
    bad = tmp_path / "garbage.db"
    bad.write_bytes(b"this is not a database, just some bytes " * 200)
    with pytest.raises(StoreError, match="garbage.db") as info:
        open_store(str(bad))
    assert info.value.code == "STORE"
    # a valid SQLite file that is not a netrules store, opened read-only
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(StoreError, match="other.db"):
        open_store(str(other), read_only=True)


def test_url_forms(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="unknown store URL scheme 'mysql'"):
        open_store("mysql://root@localhost/db")
    with pytest.raises(StoreError, match="does not exist"):
        open_store(str(tmp_path / "missing-dir" / "s.db"))
    with pytest.raises(StoreError, match="no such store file"):
        open_store(str(tmp_path / "absent.db"), read_only=True)
    with pytest.raises(StoreError):
        open_store("sqlite://relative.db")
    with open_store(f"sqlite:///{tmp_path}/u.db") as s:
        s.write_batch(BatchRecord(0, 0.0, added={"link": [_link("a", "b")]}))
    with open_store(str(tmp_path / "u.db")) as s:
        assert s.relations() == {"link": 1}
    with open_store("sqlite:///:memory:") as s:
        assert s.relations() == {}


def test_schema_mismatch_refused(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    open_store(str(db)).close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="schema version 99"):
        open_store(str(db))


def test_store_does_not_import_spark(tmp_path: Path) -> None:
    code = ("import sys; import netrules.store, netrules.store.parquet, netrules.alerts; "
            f"netrules.store.open_store({str(tmp_path / 'x.db')!r}).close(); "
            "print(any(m.startswith('pyspark') for m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True)
    assert out.stdout.strip() == "False"


class _Chunked:
    """Rendered rows (``RowSource``) handed over ``size`` at a time; ``locs`` None: the store
    reads each location out of the args."""

    def __init__(self, args: list[str], size: int, locs: list[str | None] | None = None):
        self.args, self.size, self.locs = args, size, locs

    def __len__(self) -> int:
        return len(self.args)

    def chunks(self):
        for i in range(0, len(self.args), self.size):
            locs = None if self.locs is None else self.locs[i:i + self.size]
            yield self.args[i:i + self.size], locs


def _rowid_layout(path: Path) -> None:
    """A store file as netrules made them before ``views`` and ``changes`` were clustered
    (rowid tables, ``UNIQUE (batch_id, seq)``)."""
    from netrules.store.schema import SCHEMA_VERSION, ddl

    conn = sqlite3.connect(path)
    for stmt in ddl("sqlite"):
        conn.execute(stmt.replace(" WITHOUT ROWID", "").replace(
            "PRIMARY KEY (batch_id, seq)", "UNIQUE (batch_id, seq)").replace(
            " WHERE loc_pos IS NOT 0", ""))
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                 (str(SCHEMA_VERSION),))
    conn.commit()
    conn.close()


def _tables(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
    finally:
        conn.close()


def test_a_store_of_the_rowid_layout_takes_bulk_batches_as_a_new_one(tmp_path: Path) -> None:
    """New files cluster ``views`` and ``changes`` on their keys; a file made before keeps
    its rowid tables, and the staged bulk write (adds, then removes, in chunks) leaves both
    with the same views and change log."""
    from netrules.store.base import BulkRows, TextRows, args_json

    old, new = tmp_path / "old.db", tmp_path / "new.db"
    _rowid_layout(old)
    facts = [_link(f"n{i}", f"n{j}") for i in range(12) for j in range(12) if i != j]
    args = sorted(args_json(f.args) for f in facts)

    stores = [SQLiteStore(str(old)), SQLiteStore(str(new))]
    for s in stores:
        assert s.write_batch(BatchRecord(0, 1.0, bulk=BulkRows(
            loc_pos={"link": 0}, added={"link": _Chunked(args, 25)})))
        assert s.write_batch(BatchRecord(1, 2.0, bulk=BulkRows(
            loc_pos={"link": 0}, removed={"link": _Chunked(args[::3], 25)},
            added={"link": TextRows(['["x","y"]'], ["x"])})))
    (a, b) = stores
    assert a.read_view("link") == b.read_view("link")
    assert len(a.read_view("link")) == len(facts) - len(args[::3]) + 1
    assert a.read_view("link", at="n3") == b.read_view("link", at="n3") != []
    assert a.changes() == b.changes()
    assert [c[:2] for c in b.changes()][-3:] == [(1, len(args[::3]) - 2),
                                                 (1, len(args[::3]) - 1), (1, len(args[::3]))]
    for s in stores:
        s.close()
    assert "WITHOUT ROWID" not in _tables(old)["views"]
    assert "WITHOUT ROWID" in _tables(new)["views"] and "WITHOUT ROWID" in _tables(new)["changes"]


@pytest.mark.parametrize("locs_given", [True, False])
def test_bulk_chunks_staged_as_json_keep_every_text(tmp_path: Path, locs_given: bool) -> None:
    """A bulk chunk reaches SQLite as one JSON array (one parameter, not one a row): quotes,
    backslashes, non-ASCII, a character outside the BMP and a location that is not a string
    come back as the per-fact write stores them, and so does a NUL, which SQLite's JSON
    would cut (its chunk is bound row by row)."""
    from netrules.store.base import BulkRows, args_json, loc_text

    names = ['q"u', "b\\s", "ünï", "emoji 😀", "tab\tx", "nul\x00x", "plain"]
    facts = sorted([Fact("r", (a, b), 0) for a in names for b in names if a != b]
                   + [Fact("r", (7, "seven"), 0)], key=Fact.key)
    if not locs_given:  # locations read out of the args: strings without a NUL only
        names = [n for n in names if "\x00" not in n]
        facts = [f for f in facts if isinstance(f.args[0], str) and f.args[0] in names]
    per_fact, bulky = SQLiteStore(str(tmp_path / "a.db")), SQLiteStore(str(tmp_path / "b.db"))
    assert per_fact.write_batch(BatchRecord(0, 1.0, added={"r": facts}))

    rows = _Chunked([args_json(f.args) for f in facts], 5,
                    [loc_text(f) for f in facts] if locs_given else None)
    assert bulky.write_batch(BatchRecord(0, 1.0, bulk=BulkRows(loc_pos={"r": 0},
                                                               added={"r": rows})))
    assert bulky.read_view("r") == per_fact.read_view("r") == facts
    for n in names:
        assert bulky.read_view("r", at=n) == per_fact.read_view("r", at=n) != []
    assert bulky.changes() == per_fact.changes()
    per_fact.close()
    bulky.close()


# values whose texts are prefixes of one another, look like JSON, or need escaping
_TRICKY = st.sampled_from(["n1", "n1,", "n", "n10", "1", "-1", "Infinity", "a\"b", "x]",
                           "ä", "", "[1]", "[\"n1\"]", "n1\\", 1, 10, -1, 2.5,
                           float("inf"), ("n1",), ("n1", 2), ()])
_LOCATED = st.lists(st.tuples(st.sampled_from([("a", 1, 0), ("a", 2, 0), ("a", 3, 0),
                                               ("b", 2, 1), ("c", 2, None)]),
                              st.lists(_TRICKY, min_size=3, max_size=3)),
                    min_size=1, max_size=40)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_LOCATED)
def test_facts_at_a_node_are_those_whose_location_text_it_is(tmp_path: Path,
                                                              rows: list) -> None:
    """``read_view(at=...)`` against a filter in Python on ``loc_text``: a new store finds
    rows located at their first argument by a range of the primary key and the others by
    the location index that holds only them; a store made before (one index of every row)
    reads the same. Node names that are prefixes of others, that look like JSON (``1``,
    ``[1]``), numbers, lists and escapes. And ``read_view(where=...)`` binding the leading
    arguments (a key range where they are strings) against the same filter."""
    from netrules.store.base import loc_text

    facts = {Fact(rel, tuple(vals[:arity]), loc) for (rel, arity, loc), vals in rows}
    by_rel: dict[str, list[Fact]] = {}
    for f in facts:
        by_rel.setdefault(f.relation, []).append(f)
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    old.unlink(missing_ok=True)
    new.unlink(missing_ok=True)
    _rowid_layout(old)
    stores = [SQLiteStore(str(old)), SQLiteStore(str(new))]
    for s in stores:
        s.write_batch(BatchRecord(0, 1.0, added=by_rel))
    texts = {loc_text(f) for f in facts} - {None} | {"n1", "1", "[1]", "x"}
    try:
        for rel, fs in by_rel.items():
            for t in texts:
                want = sorted((f for f in fs if loc_text(f) == t), key=Fact.key)
                for s in stores:
                    assert s.read_view(rel, at=t) == want, (rel, t)
                    first = {0: fs[0].args[0]} if fs[0].args and isinstance(
                        fs[0].args[0], str) else {}
                    assert s.read_view(rel, first, at=t) == [
                        f for f in want if all(f.args[p] == v for p, v in first.items())]
            # the leading arguments bound (a range of the primary key where they are
            # strings), without a location
            for f in fs[:6]:
                for n in range(1, len(f.args) + 1):
                    where = dict(enumerate(f.args[:n]))
                    want = sorted((g for g in fs if all(
                        p < len(g.args) and g.args[p] == v for p, v in where.items())),
                        key=Fact.key)
                    for s in stores:
                        assert s.read_view(rel, where) == want, (rel, where)
    finally:
        for s in stores:
            s.close()
