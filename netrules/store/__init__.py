"""The store: materialized views, change log, derivations, topology and alerts.

Written by the engine, read by the dashboard and the CLI (which never talk to Spark, so nothing
under this package imports pyspark). Open one with :func:`open_store`::

    with open_store("state/netrules.db") as store:          # SQLite (WAL)
        store.read_view("bestPath", where={0: "a"})
    open_store("postgresql://user@host/db")                  # PostgreSQL, same interface
"""

from __future__ import annotations

import re

from netrules.errors import StoreError
from netrules.store.base import (
    BatchRecord,
    BatchSummary,
    Change,
    Store,
    TopoLink,
    TopoNode,
    args_json,
    check_relation,
)
from netrules.store.schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "BatchRecord",
    "BatchSummary",
    "Change",
    "Store",
    "TopoLink",
    "TopoNode",
    "args_json",
    "check_relation",
    "open_store",
]

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def open_store(url: str, read_only: bool = False) -> Store:
    """Open (creating if needed) the store named by ``url``.

    ``url`` is a file path or ``sqlite:///path`` for SQLite (``sqlite:////abs/path`` for an
    absolute path), or ``postgresql://...`` / ``postgres://...`` for PostgreSQL. ``read_only``
    opens without creating anything, for readers such as the dashboard.
    """
    url = str(url)
    m = _SCHEME.match(url)
    if m is None:
        from netrules.store.sqlite import SQLiteStore

        return SQLiteStore(url, read_only=read_only)
    scheme = m.group(1).lower()
    if scheme == "sqlite":
        if not url.startswith("sqlite:///"):
            raise StoreError(f"{url}: SQLite URLs are sqlite:///relative or sqlite:////absolute")
        from netrules.store.sqlite import SQLiteStore

        return SQLiteStore(url[len("sqlite:///"):], read_only=read_only)
    if scheme in ("postgresql", "postgres"):
        from netrules.store.postgres import PostgresStore

        return PostgresStore(url, read_only=read_only)
    raise StoreError(f"{url}: unknown store URL scheme {scheme!r} "
                     "(use a path, sqlite:///path or postgresql://...)")
