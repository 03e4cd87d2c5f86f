"""SQLite backend: the default store, one file shared by the engine and its readers.

WAL mode is what makes "one writer, many readers across processes" work: readers see the last
committed batch and are never blocked by the engine's write transaction, and the writer is not
blocked by readers. ``busy_timeout`` covers the short moments WAL still serializes (checkpoints,
two processes opening a fresh file at once). Write transactions use ``BEGIN IMMEDIATE`` so a
writer takes the write lock up front instead of failing halfway through a batch when it tries
to upgrade a read lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from netrules.errors import StoreError
from netrules.facts import Value
from netrules.store.base import _ON_VIEW_CONFLICT, Store, args_json

__all__ = ["SQLiteStore", "BUSY_TIMEOUT_MS"]


def _starting(head: str) -> list[tuple[str, list[Any]]]:
    """The rows whose ``args`` text is ``head`` (an array's opening and its first elements'
    JSON) then ``,`` or ``]``, as two disjoint ranges of the primary key: ``,`` is 0x2C and
    ``-`` the byte after it, and SQLite compares text by its bytes."""
    return [("args >= ? AND args < ?", [head + ",", head + "-"]), ("args = ?", [head + "]"])]

BUSY_TIMEOUT_MS = 10_000

#: Page size of a store file this class creates (an existing file keeps its own). A load
#: writes millions of ~200-byte rows into six B-trees: 2.5 M route-like rows took 1.6x the
#: CPU and 3x the wall time with 4 KiB pages (more pages to split, a WAL frame and a write
#: per page, a checkpoint writing 1.9x the database); docs/engine.md, "The store write".
PAGE_SIZE = 65_536


def _connect(target: str, uri: bool = False) -> sqlite3.Connection:
    return sqlite3.connect(target, uri=uri, timeout=BUSY_TIMEOUT_MS / 1000,
                           isolation_level=None, check_same_thread=False)


def _connect_read_only(path: str) -> sqlite3.Connection:
    """A connection that writes nothing, even on read-only media.

    ``mode=ro`` still needs the WAL's ``-shm`` index, which SQLite creates beside the file; on
    a read-only directory or file system it cannot, and every read fails with "unable to open
    database file". A store whose writer closed cleanly has no WAL left, so there it is opened
    ``immutable``: nothing else can change a file on read-only media.
    """
    if path == ":memory:":
        raise StoreError(f"{path}: an in-memory store cannot be opened read-only")
    if not os.path.exists(path):
        raise StoreError(f"{path}: no such store file")
    uri = "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23")
    conn = _connect(uri + "?mode=ro", uri=True)
    try:
        conn.execute("PRAGMA schema_version").fetchone()  # the first read opens the WAL index
        return conn
    except sqlite3.OperationalError as err:
        conn.close()
        wal = f"{path}-wal"
        if os.path.exists(wal) and os.path.getsize(wal) > 0:
            raise StoreError(f"{path}: cannot read the store's write-ahead log {wal} ({err}); "
                             "a store on read-only media must be closed by its writer "
                             "first") from err
    return _connect(uri + "?mode=ro&immutable=1", uri=True)


class SQLiteStore(Store):
    """A store in one SQLite file (or ``:memory:``, for tests that need no other process)."""

    dialect = "sqlite"
    _db_errors = (sqlite3.Error,)

    def __init__(self, path: str, read_only: bool = False) -> None:
        super().__init__(f"sqlite:{path}", read_only)
        self.path = path
        self._in_tx = False
        try:
            if read_only:
                self._conn = _connect_read_only(path)
            else:
                parent = os.path.dirname(os.path.abspath(path))
                if path != ":memory:" and not os.path.isdir(parent):
                    raise StoreError(f"{path}: directory {parent} does not exist")
                self._conn = _connect(path)
        except sqlite3.Error as err:
            raise StoreError(f"{path}: cannot open store: {err}") from err
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if not read_only and path != ":memory:":
                # a no-op on an existing file: only a new one takes it, before its first write
                self._conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(f"{path}: cannot switch to WAL mode (got {mode})")
                # WAL + NORMAL stays consistent on a crash and loses at most the last
                # transactions on power loss; the event log can replay those.
                self._conn.execute("PRAGMA synchronous = NORMAL")
            self._init_schema()
        except sqlite3.DatabaseError as err:
            self._conn.close()
            raise StoreError(
                f"{path}: cannot read store (corrupt, or not a netrules SQLite file): {err}"
            ) from err
        except StoreError:
            self._conn.close()
            raise

    def journal_mode(self) -> str:
        """The file's journal mode ('wal' for a store this class created)."""
        with self._op("reading the journal mode"):
            return str(self._conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(sql, tuple(params))

    def _executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._conn.executemany(sql, rows)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        if self._in_tx:  # nested: the outer transaction commits
            yield
            return
        self._conn.execute("BEGIN IMMEDIATE")
        self._in_tx = True
        try:
            yield
        except BaseException:
            self._in_tx = False
            self._conn.execute("ROLLBACK")
            raise
        self._in_tx = False
        try:
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _write_rows(self, op: str, rel: str, pos: int | None, args: Sequence[str],
                    locs: Sequence[str | None] | None, bid: int, t: float, seq: int) -> None:
        """The chunk bound once, into a staging table, then logged and applied to the view
        by two statements that read it. Binding seven parameters a row and stepping an
        INSERT per row was most of a load's write: 1.3 M rows took 9.2 s of CPU in
        ``changes`` and ``views`` so, 6.2 s staged, 4.3 s staged into ``WITHOUT ROWID``
        tables, about 1 s less again staged from one JSON array a chunk (docs/engine.md,
        "The store write")."""
        c = self._conn
        c.execute("CREATE TEMP TABLE IF NOT EXISTS bulk_stage (args TEXT NOT NULL, loc TEXT)")
        c.execute("DELETE FROM temp.bulk_stage")
        # the chunk as one JSON array, one parameter: binding a parameter a row cost twice
        # what encoding and parsing the array does (2.1 against 1.0 s for 1.3 M rows).
        # SQLite's JSON strings end at a NUL, so a chunk holding one is bound row by row.
        rows = list(args) if locs is None else [[a, loc] for a, loc in
                                                zip(args, locs, strict=True)]
        text = json.dumps(rows, ensure_ascii=False)
        if "\\u0000" in text:
            c.executemany("INSERT INTO temp.bulk_stage (args, loc) VALUES (?, ?)",
                          zip(args, locs if locs is not None else [None] * len(args), strict=True))
        elif locs is None:
            c.execute("INSERT INTO temp.bulk_stage (args) SELECT value FROM json_each(?) "
                      "ORDER BY key", (text,))
        else:
            c.execute("INSERT INTO temp.bulk_stage (args, loc) SELECT json_extract(value, "
                      "'$[0]'), json_extract(value, '$[1]') FROM json_each(?) ORDER BY key",
                      (text,))
        first = "(SELECT MIN(rowid) FROM temp.bulk_stage)"  # rows are numbered in order
        c.execute("INSERT INTO changes (batch_id, seq, time, relation, args, loc_pos, op) "
                  f"SELECT ?, ? + rowid - {first}, ?, ?, args, ?, ? FROM temp.bulk_stage "
                  "ORDER BY rowid", (bid, seq, t, rel, pos, op))
        if op == "-":  # a fact that leaves its view takes its derivations along
            c.execute("DELETE FROM views WHERE relation = ? AND args IN "
                      "(SELECT args FROM temp.bulk_stage)", (rel,))
            c.execute("DELETE FROM derivations WHERE relation = ? AND args IN "
                      "(SELECT args FROM temp.bulk_stage)", (rel,))
            return
        loc_sql, loc_params = ("loc", []) if locs is not None else self._loc_of_args(rel, pos)
        c.execute("INSERT INTO views (relation, args, loc, loc_pos, batch_id) "
                  f"SELECT ?, args, {loc_sql}, ?, ? FROM temp.bulk_stage WHERE true "
                  "ORDER BY rowid" + _ON_VIEW_CONFLICT, (rel, *loc_params, pos, bid))

    def _stream(self, sql: str, params: Sequence[Any], chunk: int) -> Iterator[list[tuple]]:
        cur = self._conn.execute(sql, tuple(params))
        try:
            while rows := cur.fetchmany(chunk):
                yield rows
        finally:
            cur.close()

    def _arg_match(self, position: int, value: Value) -> tuple[str, list[Any]]:
        # json_extract raises on a whole query if one row's args is not strict JSON (NDlog's
        # infinity is stored as `Infinity`), so such rows skip the test and are checked in
        # Python instead. CASE evaluates lazily in SQLite, the guard holds.
        return ("CASE WHEN json_valid(args) THEN json_extract(args, ?) = ? ELSE 1 END",
                [f"$[{int(position)}]", value])

    def _leading_args(self, where: Mapping[int, Value]) -> list[tuple[str, list[Any]]]:
        """Where the first arguments are bound to strings, a view's rows are a range of the
        primary key: their ``args`` text starts with those arguments' JSON, then ``,`` or
        ``]``. Why: the dashboard's and ``netrules query``'s questions ("can a reach b?",
        ``reachable(@"a",X)``) bind them, and each scanned the whole view through
        ``json_extract`` (1.1-1.3 s on americas' 1.3 M pairs). Strings only: a number's
        text has more than one form (1, 1.0) that the SQL test takes as equal."""
        lead: list[Value] = []
        while isinstance(where.get(len(lead)), str):
            lead.append(where[len(lead)])
        return _starting(args_json(tuple(lead))[:-1]) if lead else []

    def _at_match(self, at: str) -> list[tuple[str, str, list[Any]]]:
        """The location index holds only rows whose location is not their first argument
        (``schema``); the others are a range of the primary key: their ``args`` text is
        ``[``, the first argument's JSON, then ``,`` or ``]``. A location's text is a node
        name as is or another value's JSON (``loc_text``), so the first argument's JSON is
        the text quoted, or the text itself where that is JSON of a value not a string. Each
        SELECT keeps ``loc = ?``, so rows are exactly the ones the location names. The index
        is named: to read rows in ``args`` order, the planner chose to scan the relation's
        whole key range instead (a million rows to find none, on a backbone)."""
        out: list[tuple[str, str, list[Any]]] = [
            ("views INDEXED BY views_loc", "loc_pos IS NOT 0", [])]
        firsts = [args_json((at,))[1:-1]]
        try:
            other = json.loads(at)
        except ValueError:
            other = None
        if other is not None and not isinstance(other, str) and at != firsts[0]:
            firsts.append(at)
        out += [("views", f"loc_pos = 0 AND {sql}", p)
                for first in firsts for sql, p in _starting("[" + first)]
        return out

    def _arg_text(self, position: int) -> tuple[str, list[Any]]:
        return "json_extract(args, ?)", [f"$[{int(position)}]"]

    def _close(self) -> None:
        self._conn.close()
