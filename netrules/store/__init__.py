"""The store: materialized views, change log, derivations, topology and alerts.

Written by the engine, read by the dashboard and the CLI (which never talk to Spark, so nothing
under this package imports pyspark). Open one with :func:`open_store`::

    with open_store("state/netrules.db") as store:          # SQLite (WAL)
        store.read_view("bestPath", where={0: "a"})
    open_store("postgresql://user@host/db")                  # PostgreSQL, same interface
"""

from __future__ import annotations

from netrules.store.base import (
    BatchRecord,
    BatchSummary,
    BulkRows,
    Change,
    DerivationTexts,
    Store,
    TopoLink,
    TopoNode,
    args_json,
    check_relation,
)
from netrules.store.schema import SCHEMA_VERSION
from netrules.store.url import StoreURL, parse_store_url

__all__ = [
    "SCHEMA_VERSION",
    "BatchRecord",
    "BulkRows",
    "BatchSummary",
    "Change",
    "DerivationTexts",
    "Store",
    "StoreURL",
    "TopoLink",
    "TopoNode",
    "args_json",
    "check_relation",
    "open_store",
    "parse_store_url",
]


def open_store(url: str, read_only: bool = False) -> Store:
    """Open (creating if needed) the store named by ``url``.

    ``url`` is read as SQLAlchemy reads it (:mod:`netrules.store.url`): a file path,
    ``sqlite:///relative/path`` or ``sqlite:////absolute/path`` for SQLite, or
    ``postgresql://...`` for PostgreSQL. ``read_only`` (or ``?mode=ro`` on a SQLite URL)
    opens without creating or writing anything, so readers work on read-only media.
    """
    parsed = parse_store_url(str(url))
    read_only = read_only or parsed.read_only
    if parsed.backend == "sqlite":
        from netrules.store.sqlite import SQLiteStore

        return SQLiteStore(parsed.target, read_only=read_only)
    from netrules.store.postgres import PostgresStore

    return PostgresStore(parsed.target, read_only=read_only)
