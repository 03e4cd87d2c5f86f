"""Store URLs, read as SQLAlchemy reads them, so a URL copied from another tool means the same.

``sqlite:///rel/path`` is relative to the working directory, ``sqlite:////abs/path`` absolute
(three slashes, then the path), ``sqlite://`` and ``sqlite:///:memory:`` in memory; a URL
without a scheme is a plain SQLite path. ``?mode=ro`` on a SQLite URL opens it read-only.
``postgresql://`` (and ``postgres://``) URLs go to psycopg unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl

from netrules.errors import StoreError

__all__ = ["StoreURL", "parse_store_url"]

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_SQLITE_OPTIONS = {"mode": ("ro", "rw", "rwc")}


@dataclass(frozen=True)
class StoreURL:
    """Which backend, and what it opens: a file path (SQLite) or the URL itself (PostgreSQL)."""

    backend: str  # "sqlite" or "postgres"
    target: str
    read_only: bool = False


def parse_store_url(url: str) -> StoreURL:
    """Parse ``url``; StoreError naming the URL and what is wrong with it."""
    m = _SCHEME.match(url)
    if m is None:
        if not url:
            raise StoreError("empty store URL (use a path, sqlite:///path or postgresql://...)")
        return StoreURL("sqlite", url)
    scheme = m.group(1).lower()
    if scheme in ("postgresql", "postgres"):
        return StoreURL("postgres", url)
    if scheme != "sqlite":
        raise StoreError(f"{url}: unknown store URL scheme {scheme!r} "
                         "(use a path, sqlite:///path or postgresql://...)")
    rest = url[m.end():]
    rest, _, query = rest.partition("?")
    if rest == "":
        path = ":memory:"
    elif rest.startswith("/"):
        path = rest[1:]  # the host part is empty; what follows the third slash is the path
    else:
        raise StoreError(f"{url}: a SQLite URL has no host; write sqlite:///relative/path or "
                         "sqlite:////absolute/path")
    if path == "":
        raise StoreError(f"{url}: no file after sqlite:///")
    read_only = False
    for key, value in parse_qsl(query, keep_blank_values=True):
        allowed = _SQLITE_OPTIONS.get(key)
        if allowed is None:
            raise StoreError(f"{url}: unknown SQLite URL option {key!r} (known: mode=ro)")
        if value not in allowed:
            raise StoreError(f"{url}: {key}={value!r}; expected one of {', '.join(allowed)}")
        read_only = value == "ro"
    return StoreURL("sqlite", path, read_only)
