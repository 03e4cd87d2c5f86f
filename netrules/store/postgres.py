"""PostgreSQL backend: the same store for deployments with several readers on other hosts.

Uses psycopg 3 in autocommit mode with explicit transactions, so a read never leaves an idle
transaction open between dashboard refreshes. The shared SQL is written with ``?``
placeholders; this module rewrites them to psycopg's ``%s`` (the shared SQL contains no ``%``
and no jsonb ``?`` operator, which is what makes that rewrite safe).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from netrules.errors import StoreError
from netrules.facts import Value, value_to_json
from netrules.store.base import Store

__all__ = ["PostgresStore", "redact_url"]

_counter = itertools.count()


def redact_url(url: str) -> str:
    """The URL with any password replaced, for error messages and logs."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


class PostgresStore(Store):
    """A store in a PostgreSQL database named by a ``postgresql://`` URL."""

    dialect = "postgres"

    def __init__(self, url: str, read_only: bool = False) -> None:
        super().__init__(redact_url(url), read_only)
        try:
            import psycopg
        except ImportError as err:
            raise StoreError(
                f"{self.display}: PostgreSQL needs psycopg 3: pip install 'psycopg[binary]'"
            ) from err
        self._psycopg = psycopg
        self._db_errors = (psycopg.Error,)
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as err:
            raise StoreError(f"{self.display}: cannot connect: {err}") from err
        try:
            if read_only:
                self._conn.execute("SET default_transaction_read_only = on")
            self._init_schema()
        except BaseException:
            self._conn.close()
            raise

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("?", "%s")

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(self._sql(sql), tuple(params))

    def _executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = [tuple(r) for r in rows]
        if rows:
            with self._conn.cursor() as cur:
                cur.executemany(self._sql(sql), rows)

    def _insert_changes(self, rows: Iterable[Sequence[Any]]) -> None:
        # COPY: one stream per chunk instead of a statement per change-log row
        with self._conn.cursor() as cur, cur.copy(
                "COPY changes (batch_id, seq, time, relation, args, loc_pos, op) FROM STDIN"
        ) as copy:
            for row in rows:
                copy.write_row(row)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._conn.transaction():
            yield

    def _schema_lock(self) -> None:
        # Two processes opening a fresh database at once would race in CREATE TABLE IF NOT
        # EXISTS (a unique violation in pg_type); one transaction-scoped lock serializes them.
        self._conn.execute("SELECT pg_advisory_xact_lock(7347016)")

    def _stream(self, sql: str, params: Sequence[Any], chunk: int) -> Iterator[list[tuple]]:
        # A named (server-side) cursor: a client-side one would pull the whole result first.
        with self._conn.transaction(), self._conn.cursor(
                name=f"netrules_stream_{next(_counter)}") as cur:
            cur.execute(self._sql(sql), tuple(params))
            while rows := cur.fetchmany(chunk):
                yield rows

    def _arg_match(self, position: int, value: Value) -> tuple[str, list[Any]]:
        # args is TEXT holding Python's JSON, which writes NDlog infinity as `Infinity`;
        # jsonb rejects that, so rows containing it skip the test (re-checked in Python).
        return ("CASE WHEN strpos(args, 'Infinity') = 0 AND strpos(args, 'NaN') = 0 "
                "THEN (args::jsonb -> (?)::int) = (?)::jsonb ELSE TRUE END",
                [int(position), json.dumps(value_to_json(value))])

    def _arg_text(self, position: int) -> tuple[str, list[Any]]:
        return "(args::jsonb ->> (?)::int)", [int(position)]

    def _close(self) -> None:
        self._conn.close()
