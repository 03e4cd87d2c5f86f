"""The store's interface, its record types, and the SQL both backends share.

The store sits between the engine (the only writer) and the dashboard/CLI (readers in other
processes). It never imports Spark: readers must be able to open it on a machine, or in a
process, that has no JVM.

All SQL lives here, written once with ``?`` placeholders; a backend only supplies a connection,
transactions, streaming and the one dialect-specific expression (per-argument JSON lookup).
Nothing a user typed is ever spliced into SQL text: relation names are validated against
``[A-Za-z_][A-Za-z0-9_]*`` (they are stored as *values*, never used as identifiers, so the
check is belt and braces) and every value is a bound parameter.

Facts are stored as ``(relation, args)`` where ``args`` is the canonical JSON
``json.dumps([value_to_json(a) ...], separators=(",", ":"))``; that string is the fact's
identity (primary key with the relation). ``loc`` holds the location value as text for
"facts at node X" queries and ``loc_pos`` the ``@`` position, so facts read back print as they
were written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple, Protocol

from netrules.errors import StoreError
from netrules.eventlog.schema import Event
from netrules.facts import Fact, Value, value_from_json, value_to_json
from netrules.store.records import Alert
from netrules.store.schema import SCHEMA_VERSION, ddl

__all__ = [
    "BatchRecord",
    "BatchSummary",
    "BulkRows",
    "DerivationTexts",
    "RowSource",
    "TextRows",
    "Change",
    "TopoLink",
    "TopoNode",
    "Store",
    "check_relation",
    "args_json",
    "fact_from_json_args",
    "loc_text",
]

_RELATION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LINK_STATES = ("up", "down")


def check_relation(name: Any) -> str:
    """Return ``name`` if it is a valid relation name, else raise StoreError."""
    if not isinstance(name, str) or not _RELATION.match(name):
        raise StoreError(f"invalid relation name {name!r}: must match [A-Za-z_][A-Za-z0-9_]*")
    return name


_ENCODER = json.JSONEncoder(separators=(",", ":"))  # json.dumps builds one a call


def _dumps(obj: Any) -> str:
    return _ENCODER.encode(obj)


def args_json(args: Sequence[Value]) -> str:
    """The canonical JSON text of a fact's arguments (its identity in the store). A tuple is
    a JSON array to ``json.dumps`` already, so the C encoder takes a path list as it is
    (``value_to_json`` first made each one a list, which cost more than the encoding)."""
    return _dumps(tuple(args))


def fact_from_json_args(relation: str, args: str, loc_pos: int | None) -> Fact:
    """Rebuild a Fact from its stored columns."""
    return Fact(relation, tuple(value_from_json(a) for a in json.loads(args)), loc_pos)


def loc_text(fact: Fact) -> str | None:
    """The location value as text: a node name as is, any other value as canonical JSON."""
    if fact.loc is None or not 0 <= fact.loc < len(fact.args):
        return None
    v = fact.args[fact.loc]
    return v if isinstance(v, str) else _dumps(value_to_json(v))


def _body_json(body: Sequence[Fact]) -> str:
    # [relation, args, loc]: the spec's [relation, args] pair plus the @ position so a `why`
    # tree prints body facts exactly as the engine saw them; readers may ignore the third item.
    return _dumps([[f.relation, f.args, f.loc] for f in body])


def _support_key(rule: str, body_text: str) -> str:
    """A derivation's identity among its head's: the rule and the body, hashed."""
    return hashlib.sha1(f"{rule}\n{body_text}".encode()).hexdigest()


def _body_from_json(text: str) -> list[Fact]:
    out = []
    for item in json.loads(text):
        loc = item[2] if len(item) > 2 else 0
        out.append(Fact(item[0], tuple(value_from_json(a) for a in item[1]), loc))
    return out


def _sql_checkable(v: Value) -> bool:
    """Can the SQL JSON lookup compare ``v`` exactly? Lists and non-finite floats are instead
    matched in Python only (their JSON text forms differ between engines)."""
    if isinstance(v, bool | tuple):
        return False
    if isinstance(v, float):
        return math.isfinite(v)
    return isinstance(v, str | int)


class Change(NamedTuple):
    """One row of the change log: a fact added ('+') or removed ('-') by a batch."""

    batch_id: int
    seq: int
    time: float
    op: str
    fact: Fact


class BatchSummary(NamedTuple):
    """One applied batch, for timelines and `status` output."""

    batch_id: int
    time: float
    n_events: int
    first_event: str | None
    last_event: str | None
    added: int
    removed: int
    stats: dict[str, Any]


class TopoNode(NamedTuple):
    name: str
    attrs: dict[str, Any]


class TopoLink(NamedTuple):
    src: str
    dst: str
    cost: float | None
    state: str
    attrs: dict[str, Any]


class RowSource(Protocol):
    """A relation's changed rows in the store's form, produced while they are written: the
    canonical args JSON of each row (in the order the change log gets them) and, for
    additions, the location text. The columnar pipeline renders them from id columns a chunk
    at a time (``pipeline/bulk_rows.py``), so a load's millions of rows never exist at once
    as Python objects."""

    def __len__(self) -> int: ...

    def chunks(self) -> Iterator[tuple[Sequence[str], Sequence[str | None] | None]]:
        """Rows a chunk at a time. Location texts None (additions only): each row's location
        is the JSON string at its relation's ``@`` position (holding no NUL, where SQLite's
        JSON functions end a string), and its args are strict JSON;
        the backend reads it out of the args (one statement, no text bound per row)."""
        ...


class TextRows:
    """A :class:`RowSource` over rows already rendered (args texts, location texts)."""

    def __init__(self, args: Sequence[str], locs: Sequence[str | None] | None = None) -> None:
        self.args = args
        self.locs = locs if locs is not None else [None] * len(args)

    def __len__(self) -> int:
        return len(self.args)

    def chunks(self) -> Iterator[tuple[Sequence[str], Sequence[str | None] | None]]:
        if self.args:
            yield self.args, self.locs


@dataclass
class BulkRows:
    """A batch's view changes already in the store's form, for deltas too large to carry as
    Fact objects: per relation, a :class:`RowSource` of the rows added and of those removed,
    and the relation's ``@`` position."""

    loc_pos: dict[str, int | None] = field(default_factory=dict)
    added: dict[str, RowSource] = field(default_factory=dict)
    removed: dict[str, RowSource] = field(default_factory=dict)

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        return ({r: len(a) for r, a in self.added.items() if len(a)},
                {r: len(v) for r, v in self.removed.items() if len(v)})


@dataclass
class DerivationTexts:
    """A batch's derivations already in the store's form, rendered from id columns: a link
    event on a backbone rewrites thousands (the facts whose kept support changed, up to the
    pipeline's limit), and a Fact and a JSON encoding each cost 0.3-0.5 s of such a batch.
    ``removed``: (relation, args text) whose derivations go; ``added``: (relation, args text,
    rule, body text), the body as ``_body_json`` writes it; ``relations``: every relation
    named in them, heads and bodies."""

    removed: list[tuple[str, str]] = field(default_factory=list)
    added: list[tuple[str, str, str, str]] = field(default_factory=list)
    relations: set[str] = field(default_factory=set)


@dataclass
class BatchRecord:
    """Everything one engine batch changes, written by :meth:`Store.write_batch` atomically.

    ``added``/``removed`` are net view changes keyed by relation. ``derivations_removed``
    drops every kept support of each fact and is applied before ``derivations_added``, so the
    engine can replace a fact's supports in one batch. ``link_states`` are
    ``(src, dst, cost, state)`` with ``cost=None`` meaning "keep the stored cost".
    """

    batch_id: int
    time: float
    events: list[Event] = field(default_factory=list)
    added: dict[str, list[Fact]] = field(default_factory=dict)
    removed: dict[str, list[Fact]] = field(default_factory=dict)
    derivations_added: list[tuple[Fact, str, list[Fact]]] = field(default_factory=list)
    derivations_removed: list[Fact] = field(default_factory=list)
    link_states: list[tuple[str, str, float | None, str]] = field(default_factory=list)
    alerts_raised: list[Alert] = field(default_factory=list)
    alerts_cleared: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    bulk: BulkRows | None = None
    derivation_texts: DerivationTexts | None = None  # applied with the two lists above
    #: the engine's base-fact ledger after the batch as JSON text (``BaseLedger.
    #: snapshot_json``): the store keeps one copy, replaced in the batch's transaction
    #: (``Store.ledger``), for a restart
    ledger: str | None = None

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """Facts added and removed per relation (from ``bulk`` when the batch carries it)."""
        if self.bulk is not None:
            return self.bulk.counts()
        return ({r: len(v) for r, v in self.added.items() if v},
                {r: len(v) for r, v in self.removed.items() if v})

    def validate(self) -> None:
        """Reject anything the store would refuse, before a transaction is opened."""
        for facts in (self.added, self.removed):
            for rel, fs in facts.items():
                check_relation(rel)
                for f in fs:
                    if f.relation != rel:
                        raise StoreError(f"batch {self.batch_id}: fact {f} filed under {rel!r}")
        for head, rule, body in self.derivations_added:
            check_relation(head.relation)
            for b in body:
                check_relation(b.relation)
            if not isinstance(rule, str):
                raise StoreError(f"batch {self.batch_id}: rule label must be text, not {rule!r}")
        for f in self.derivations_removed:
            check_relation(f.relation)
        if self.ledger is not None and not isinstance(self.ledger, str):
            raise StoreError(f"batch {self.batch_id}: the ledger must be JSON text")
        if self.derivation_texts is not None:
            for rel in self.derivation_texts.relations:
                check_relation(rel)
            if not all(isinstance(r, str) for _, _, r, _ in self.derivation_texts.added):
                raise StoreError(f"batch {self.batch_id}: rule labels must be text")
        for link in self.link_states:
            if len(link) != 4 or link[3] not in _LINK_STATES:
                raise StoreError(f"batch {self.batch_id}: bad link state {link!r}")


#: The meta key of the base-fact ledger the last batch left.
_LEDGER_KEY = "ledger"
_DELETE_VIEW = "DELETE FROM views WHERE relation = ? AND args = ?"
_DELETE_DERIVATIONS = "DELETE FROM derivations WHERE relation = ? AND args = ?"
_ON_VIEW_CONFLICT = (" ON CONFLICT (relation, args) DO UPDATE SET loc = excluded.loc, "
                     "loc_pos = excluded.loc_pos, batch_id = excluded.batch_id")
_INSERT_VIEW = ("INSERT INTO views (relation, args, loc, loc_pos, batch_id) "
                "VALUES (?, ?, ?, ?, ?)" + _ON_VIEW_CONFLICT)
_CHANGE_COLUMNS = ("batch_id", "seq", "time", "relation", "args", "loc_pos", "op")


def _facts_sorted(facts: Mapping[str, Iterable[Fact]]) -> list[Fact]:
    return [f for rel in sorted(facts) for f in sorted(facts[rel], key=Fact.key)]


class Store(ABC):
    """A netrules store; open one with :func:`netrules.store.open_store`.

    Thread-safe through one lock per store object; use one object per process (or thread
    pool). Every database error surfaces as :class:`StoreError` naming the store.
    """

    dialect: str = ""
    _db_errors: tuple[type[BaseException], ...] = ()

    def __init__(self, display: str, read_only: bool = False) -> None:
        self.display = display
        self.read_only = read_only
        self._lock = threading.RLock()
        self._closed = False

    # -- backend primitives -------------------------------------------------------------
    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement; return a cursor (fetchone/fetchall/rowcount)."""

    @abstractmethod
    def _executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement for each parameter row."""

    @abstractmethod
    def _transaction(self) -> contextlib.AbstractContextManager[None]:
        """A write transaction: commit on success, roll back on any exception."""

    @abstractmethod
    def _stream(self, sql: str, params: Sequence[Any], chunk: int) -> Iterator[list[tuple]]:
        """Rows of a query in chunks, without holding the whole result in memory."""

    @abstractmethod
    def _arg_match(self, position: int, value: Value) -> tuple[str, list[Any]]:
        """SQL condition (and its parameters) true when argument ``position`` may equal
        ``value``. May over-approximate (rows are re-checked in Python), never under."""

    @abstractmethod
    def _arg_text(self, position: int) -> tuple[str, list[Any]]:
        """SQL expression (and its parameters) of the string at argument ``position`` of a
        row's strict-JSON ``args``, unescaped: the location text of a view row."""

    @abstractmethod
    def _close(self) -> None: ...

    def _schema_lock(self) -> None:
        """Serialize concurrent schema creation (PostgreSQL); SQLite's write lock suffices."""
        return None

    # -- plumbing -----------------------------------------------------------------------
    @contextlib.contextmanager
    def _op(self, what: str) -> Iterator[None]:
        """Hold the lock and turn driver errors into StoreError naming the store."""
        if self._closed:
            raise StoreError(f"{self.display}: store is closed")
        with self._lock:
            try:
                yield
            except StoreError:
                raise
            except self._db_errors as err:
                raise StoreError(f"{self.display}: {what} failed: {err}") from err

    def _writable(self) -> None:
        if self.read_only:
            raise StoreError(f"{self.display}: store was opened read-only")

    def _init_schema(self) -> None:
        """Create every table if missing and check the schema version (idempotent)."""
        with self._op("creating the schema"):
            if not self.read_only:
                with self._transaction():
                    self._schema_lock()
                    for stmt in ddl(self.dialect):
                        self._execute(stmt)
                    self._execute(
                        "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                        "ON CONFLICT (key) DO NOTHING", (str(SCHEMA_VERSION),))
            row = self._execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            raise StoreError(f"{self.display}: not a netrules store (no schema version)")
        if row[0] != str(SCHEMA_VERSION):
            raise StoreError(
                f"{self.display}: store schema version {row[0]}, this netrules knows "
                f"{SCHEMA_VERSION}")

    def close(self) -> None:
        """Close the connection; further calls raise StoreError. Safe to call twice."""
        if not self._closed:
            with self._lock:
                self._closed = True
                self._close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.display}>"

    # -- meta and topology --------------------------------------------------------------
    def set_meta(self, key: str, value: str) -> None:
        """Set one metadata value (e.g. program name/text, collector settings)."""
        self._writable()
        with self._op("writing meta"), self._transaction():
            self._put_meta(key, str(value))

    def _put_meta(self, key: str, value: str) -> None:
        self._execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) "
                      "DO UPDATE SET value = excluded.value", (key, value))

    def meta(self) -> dict[str, str]:
        """The metadata values, but the pipeline's own state (``ledger``: too large to hand
        every reader of the program's name)."""
        with self._op("reading meta"):
            return dict(self._execute("SELECT key, value FROM meta WHERE key <> ? ORDER BY key",
                                      (_LEDGER_KEY,)).fetchall())

    def ledger(self) -> dict[str, Any] | None:
        """The base-fact ledger the last written batch left (``BatchRecord.ledger``), or None
        (no batch yet, or a store written before the ledger was kept apart: a restart then
        reads it from the last batch's statistics, where it used to ride)."""
        with self._op("reading the ledger"):
            row = self._execute("SELECT value FROM meta WHERE key = ?",
                                (_LEDGER_KEY,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_program(self, name: str, text: str) -> None:
        """Record which NDlog program the views were computed by (shown by the dashboard)."""
        self._writable()
        with self._op("writing the program"), self._transaction():
            for key, value in (("program_name", name), ("program_text", text)):
                self._execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) "
                              "DO UPDATE SET value = excluded.value", (key, value))

    def set_topology(self, nodes: Iterable[Any], links: Iterable[Sequence[Any]]) -> None:
        """Replace the stored topology.

        ``nodes``: names, ``(name, attrs)`` pairs, or a mapping name -> attrs. ``links``:
        tuples ``(src, dst[, cost[, state[, attrs]]])``; state defaults to 'up'.
        """
        self._writable()
        node_rows = []
        items = nodes.items() if isinstance(nodes, Mapping) else nodes
        for n in items:
            name, attrs = (n, {}) if isinstance(n, str) else (n[0], n[1] or {})
            node_rows.append((str(name), _dumps(attrs)))
        link_rows = []
        for link in links:
            src, dst, *rest = link
            cost = rest[0] if rest else None
            state = rest[1] if len(rest) > 1 else "up"
            attrs = rest[2] if len(rest) > 2 else {}
            if state not in _LINK_STATES:
                raise StoreError(f"link {src}-{dst}: state must be 'up' or 'down', not {state!r}")
            link_rows.append((str(src), str(dst), cost, state, _dumps(attrs or {})))
        with self._op("writing the topology"), self._transaction():
            self._execute("DELETE FROM topology_links")
            self._execute("DELETE FROM topology_nodes")
            self._executemany("INSERT INTO topology_nodes (name, attrs) VALUES (?, ?) "
                              "ON CONFLICT (name) DO UPDATE SET attrs = excluded.attrs",
                              node_rows)
            self._executemany(
                "INSERT INTO topology_links (src, dst, cost, state, attrs) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (src, dst) DO UPDATE SET cost = excluded.cost, "
                "state = excluded.state, attrs = excluded.attrs", link_rows)

    def topology(self) -> tuple[list[TopoNode], list[TopoLink]]:
        """Nodes sorted by name and links sorted by (src, dst), with current link states."""
        with self._op("reading the topology"):
            nodes = [TopoNode(n, json.loads(a)) for n, a in self._execute(
                "SELECT name, attrs FROM topology_nodes ORDER BY name").fetchall()]
            links = [TopoLink(s, d, c, st, json.loads(a)) for s, d, c, st, a in self._execute(
                "SELECT src, dst, cost, state, attrs FROM topology_links ORDER BY src, dst"
            ).fetchall()]
        return nodes, links

    # -- the write path -----------------------------------------------------------------
    def write_batch(self, batch: BatchRecord) -> bool:
        """Apply one engine batch in a single transaction; False if it was already written.

        The batch row is inserted first with ``ON CONFLICT DO NOTHING``: if it already exists
        nothing else is touched, so an engine restarted after a crash can replay its last
        batch and the change log gains no duplicate rows (exactly-once across restarts).
        """
        self._writable()
        batch.validate()
        bid = int(batch.batch_id)
        plus, minus = batch.counts()
        n_added, n_removed = sum(plus.values()), sum(minus.values())
        events = batch.events
        with self._op(f"writing batch {bid}"), self._transaction():
            cur = self._execute(
                "INSERT INTO batches (batch_id, time, n_events, first_event, last_event, added,"
                " removed, stats) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (batch_id) DO NOTHING",
                (bid, float(batch.time), len(events), events[0].id if events else None,
                 events[-1].id if events else None, n_added, n_removed,
                 json.dumps(batch.stats, default=str, separators=(",", ":"))))
            if cur.rowcount == 0:
                return False
            if batch.ledger is not None:  # one copy, replaced: not one a batch
                self._put_meta(_LEDGER_KEY, batch.ledger)
            t = float(batch.time)
            if batch.bulk is not None:
                self._write_bulk(batch.bulk, bid, t)
            else:
                gone = [(f.relation, args_json(f.args), f.loc)
                        for f in _facts_sorted(batch.removed)]
                came = [(f.relation, args_json(f.args), f.loc, loc_text(f))
                        for f in _facts_sorted(batch.added)]
                self._executemany(_DELETE_VIEW, [(rel, args) for rel, args, _ in gone])
                self._executemany(_INSERT_VIEW,
                                  [(rel, args, loc, pos, bid) for rel, args, pos, loc in came])
                log = ([(bid, seq, t, rel, args, pos, "-")
                        for seq, (rel, args, pos) in enumerate(gone)]
                       + [(bid, len(gone) + seq, t, rel, args, pos, "+")
                          for seq, (rel, args, pos, _) in enumerate(came)])
                self._insert_changes(log)
            texts = batch.derivation_texts or DerivationTexts()
            self._executemany(_DELETE_DERIVATIONS,
                              [*((f.relation, args_json(f.args))
                                 for f in batch.derivations_removed), *texts.removed])
            drows = [(head.relation, args_json(head.args), rule, _body_json(body))
                     for head, rule, body in batch.derivations_added]
            self._executemany(
                "INSERT INTO derivations (relation, args, support_key, rule, body) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (relation, args, support_key) DO NOTHING",
                [(rel, args, _support_key(rule, body), rule, body)
                 for rel, args, rule, body in [*drows, *texts.added]])
            self._executemany(
                "INSERT INTO topology_links (src, dst, cost, state) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (src, dst) DO UPDATE SET "
                "cost = COALESCE(excluded.cost, topology_links.cost), state = excluded.state",
                [(str(s), str(d), c, st) for s, d, c, st in batch.link_states])
            self._executemany(
                "INSERT INTO events_applied (event_id, batch_id) VALUES (?, ?) "
                "ON CONFLICT (event_id) DO NOTHING", [(e.id, bid) for e in events])
            self._executemany(
                "UPDATE alerts SET state = 'cleared', cleared_batch = ?, cleared_time = ? "
                "WHERE dedup_key = ? AND state = 'active'",
                [(bid, float(batch.time), k) for k in batch.alerts_cleared])
            self._executemany(
                "INSERT INTO alerts (dedup_key, kind, severity, message, subject, raised_batch, "
                "raised_time, trigger_event, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active') "
                "ON CONFLICT (dedup_key) WHERE state = 'active' DO NOTHING",
                [(a.dedup_key, a.kind, a.severity, a.message,
                  json.dumps(a.subject, default=str, separators=(",", ":")),
                  bid, float(a.raised_time),
                  _dumps([e.to_json() for e in a.trigger_events]))
                 for a in batch.alerts_raised])
        return True

    def _write_bulk(self, bulk: BulkRows, bid: int, t: float) -> None:
        """A columnar batch's view changes, streamed chunk by chunk as the pipeline renders
        them: removals first, then additions, each relation in name order, numbered in the
        change log in that order (what the per-fact path writes for the same rows)."""
        seq = 0
        for op, side in (("-", bulk.removed), ("+", bulk.added)):
            for rel in sorted(side):
                check_relation(rel)
                pos = bulk.loc_pos.get(rel)
                for args, locs in side[rel].chunks():
                    self._write_rows(op, rel, pos, args, locs, bid, t, seq)
                    seq += len(args)

    def _write_rows(self, op: str, rel: str, pos: int | None, args: Sequence[str],
                    locs: Sequence[str | None] | None, bid: int, t: float, seq: int) -> None:
        """One chunk of a relation's changed rows (``args`` texts, ``locs`` their locations,
        None: read them out of ``args`` at ``pos``), logged from ``seq`` on and applied to
        the view."""
        n = len(args)
        self._insert_changes(zip(repeat(bid), range(seq, seq + n), repeat(t),
                                 repeat(rel), args, repeat(pos), repeat(op)))
        if op == "-":  # a fact that leaves its view takes its derivations along
            self._executemany(_DELETE_VIEW, zip(repeat(rel), args))
            self._executemany(_DELETE_DERIVATIONS, zip(repeat(rel), args))
        elif locs is not None:
            self._executemany(_INSERT_VIEW, zip(repeat(rel), args, locs,
                                                repeat(pos), repeat(bid)))
        else:  # the rows just logged, their locations read out of their args
            loc_sql, loc_params = self._loc_of_args(rel, pos)
            self._execute(
                "INSERT INTO views (relation, args, loc, loc_pos, batch_id) SELECT "
                f"relation, args, {loc_sql}, loc_pos, batch_id FROM changes WHERE "
                "batch_id = ? AND seq >= ? AND seq < ? ORDER BY seq"
                + _ON_VIEW_CONFLICT, [*loc_params, bid, seq, seq + n])

    def _loc_of_args(self, rel: str, pos: int | None) -> tuple[str, list[Any]]:
        if pos is None:
            raise StoreError(f"{rel}: rows without locations need a @ position")
        return self._arg_text(pos)

    def _insert_changes(self, rows: Iterable[Sequence[Any]]) -> None:
        """Append change-log rows (``_CHANGE_COLUMNS``); PostgreSQL copies them in."""
        self._executemany(
            "INSERT INTO changes (batch_id, seq, time, relation, args, loc_pos, op) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

    # -- the read path ------------------------------------------------------------------
    def last_batch_id(self) -> int | None:
        with self._op("reading batches"):
            row = self._execute("SELECT MAX(batch_id) FROM batches").fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def applied_event_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` some written batch already applied (for exactly-once replay)."""
        wanted = list(dict.fromkeys(str(i) for i in ids))
        out: set[str] = set()
        with self._op("reading applied events"):
            for i in range(0, len(wanted), 500):
                part = wanted[i:i + 500]
                marks = ", ".join("?" * len(part))
                rows = self._execute(
                    f"SELECT event_id FROM events_applied WHERE event_id IN ({marks})", part)
                out.update(r[0] for r in rows.fetchall())
        return out

    def _view_query(self, relation: str, where: Mapping[int, Value] | None,
                    at: str | None) -> tuple[str, list[Any]]:
        check_relation(relation)
        conds = ["relation = ?"]
        params: list[Any] = [relation]
        for pos, value in sorted((where or {}).items()):
            if not isinstance(pos, int) or isinstance(pos, bool) or pos < 0:
                raise StoreError(f"where: argument position must be an int >= 0, not {pos!r}")
            if _sql_checkable(value):
                sql, p = self._arg_match(pos, value)
                conds.append(sql)
                params.extend(p)
        if at is None:
            selects = [("views", sql, p) for sql, p in self._leading_args(where or {})]
            if not selects:
                return (f"SELECT args, loc_pos FROM views WHERE {' AND '.join(conds)} "
                        "ORDER BY args", params)
        else:
            selects = [(source, f"loc = ? AND {sql}", [at, *p])
                       for source, sql, p in self._at_match(at)]
        # one SELECT per disjoint set of rows (a key range, the location index), each exact
        parts, ps = [], []
        for source, sql, p in selects:
            parts.append(f"SELECT args, loc_pos FROM {source} WHERE {' AND '.join(conds)} "
                         f"AND {sql}")
            ps += [*params, *p]
        return " UNION ALL ".join(parts) + " ORDER BY args", ps

    def _leading_args(self, where: Mapping[int, Value]) -> list[tuple[str, list[Any]]]:
        """Conditions on ``args`` (one per disjoint set of rows a SELECT reads) that the
        leading arguments bound in ``where`` imply, for a backend whose ``args`` order is
        its text's bytes; here none (PostgreSQL compares text by its collation)."""
        return []

    def _at_match(self, at: str) -> list[tuple[str, str, list[Any]]]:
        """(table, condition besides ``loc = at``, its parameters) under which a view row is
        at node ``at``, one per disjoint set of rows a SELECT reads: here one, the location
        index's."""
        return [("views", "TRUE", [])]

    def iter_view(self, relation: str, where: Mapping[int, Value] | None = None,
                  at: str | None = None, chunk_rows: int = 10_000) -> Iterator[list[Fact]]:
        """Facts of one view in chunks, in storage order (canonical args text), unsorted by
        Fact.key: the streaming form for exports and large scans."""
        sql, params = self._view_query(relation, where, at)
        checks = list((where or {}).items())
        with self._op(f"reading view {relation}"):
            for rows in self._stream(sql, params, chunk_rows):
                facts = [fact_from_json_args(relation, a, lp) for a, lp in rows]
                if checks:
                    facts = [f for f in facts
                             if all(p < len(f.args) and f.args[p] == v for p, v in checks)]
                if facts:
                    yield facts

    def read_view(self, relation: str, where: Mapping[int, Value] | None = None,
                  limit: int | None = None, at: str | None = None) -> list[Fact]:
        """Facts of ``relation`` whose argument at each position in ``where`` equals the value
        (and located at node ``at`` if given), sorted by Fact.key.

        With ``limit`` the first ``limit`` matches in storage order are taken, then sorted:
        exact key order would need the whole view in memory, which a dashboard preview of a
        14-million-fact view cannot afford.
        """
        out: list[Fact] = []
        for facts in self.iter_view(relation, where, at,
                                    chunk_rows=min(limit or 10_000, 10_000)):
            out.extend(facts)
            if limit is not None and len(out) >= limit:
                del out[limit:]
                break
        return sorted(out, key=Fact.key)

    def relations(self) -> dict[str, int]:
        """Fact count of every non-empty view."""
        with self._op("counting views"):
            rows = self._execute(
                "SELECT relation, COUNT(*) FROM views GROUP BY relation ORDER BY relation"
            ).fetchall()
        return {r: int(n) for r, n in rows}

    def contains(self, fact: Fact) -> bool:
        check_relation(fact.relation)
        with self._op("reading views"):
            row = self._execute("SELECT 1 FROM views WHERE relation = ? AND args = ?",
                                (fact.relation, args_json(fact.args))).fetchone()
        return row is not None

    def snapshot(self) -> dict[str, list[list]]:
        """Every view as sorted JSON argument lists: compare two stores fact for fact."""
        return {rel: [[value_to_json(a) for a in f.args] for f in self.read_view(rel)]
                for rel in self.relations()}

    def changes(self, since_batch: int = -1, relation: str | None = None,
                limit: int | None = None) -> list[Change]:
        """Change-log rows of batches after ``since_batch``, in (batch, seq) order."""
        conds, params = ["batch_id > ?"], [int(since_batch)]
        if relation is not None:
            conds.append("relation = ?")
            params.append(check_relation(relation))
        sql = ("SELECT batch_id, seq, time, op, relation, args, loc_pos FROM changes WHERE "
               + " AND ".join(conds) + " ORDER BY batch_id, seq")
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        with self._op("reading the change log"):
            rows = self._execute(sql, params).fetchall()
        return [Change(int(b), int(s), float(t), op, fact_from_json_args(rel, a, lp))
                for b, s, t, op, rel, a, lp in rows]

    def changes_matching(self, relation: str, where: Mapping[int, Value],
                         limit: int | None = None) -> list[Change]:
        """Change-log rows of ``relation`` whose arguments match ``where``, newest first: the
        history of one pair (why-not asks when its route went, and a link when it went down)."""
        conds, params = ["relation = ?"], [check_relation(relation)]
        for pos, value in sorted(where.items()):
            if _sql_checkable(value):
                sql, p = self._arg_match(int(pos), value)
                conds.append(sql)
                params.extend(p)
        sql = ("SELECT batch_id, seq, time, op, relation, args, loc_pos FROM changes WHERE "
               + " AND ".join(conds) + " ORDER BY batch_id DESC, seq DESC")
        with self._op("reading the change log"):
            rows = self._execute(sql, params).fetchall()
        out = []
        for b, s, t, op, rel, a, lp in rows:
            f = fact_from_json_args(rel, a, lp)
            if all(p < len(f.args) and f.args[p] == v for p, v in where.items()):
                out.append(Change(int(b), int(s), float(t), op, f))
                if limit is not None and len(out) >= limit:
                    break
        return out

    def batches(self, limit: int | None = None) -> list[BatchSummary]:
        """The last ``limit`` batches (all if None) in ascending batch order, for timelines."""
        sql = ("SELECT batch_id, time, n_events, first_event, last_event, added, removed, stats"
               " FROM batches ORDER BY batch_id DESC")
        params: list[Any] = []
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        with self._op("reading batches"):
            rows = self._execute(sql, params).fetchall()
        return [BatchSummary(int(b), float(t), int(n), fe, le, int(a), int(r), json.loads(s))
                for b, t, n, fe, le, a, r, s in reversed(rows)]

    def derivations(self, fact: Fact) -> list[tuple[str, list[Fact]]]:
        """Every kept support of ``fact``: (rule label, body facts), in a stable order."""
        check_relation(fact.relation)
        with self._op("reading derivations"):
            rows = self._execute(
                "SELECT rule, body FROM derivations WHERE relation = ? AND args = ? "
                "ORDER BY rule, body", (fact.relation, args_json(fact.args))).fetchall()
        return [(rule, _body_from_json(body)) for rule, body in rows]

    def alerts(self, active_only: bool = False, limit: int | None = None) -> list[Alert]:
        """Alerts newest first (by raising batch, then insertion order)."""
        sql = ("SELECT id, dedup_key, kind, severity, message, subject, raised_batch, "
               "raised_time, trigger_event, cleared_batch, cleared_time, state FROM alerts")
        params: list[Any] = []
        if active_only:
            sql += " WHERE state = 'active'"
        sql += " ORDER BY raised_batch DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        with self._op("reading alerts"):
            rows = self._execute(sql, params).fetchall()
        return [Alert(kind=kind, severity=sev, message=msg, dedup_key=key,
                      subject=json.loads(subj), raised_batch=int(rb), raised_time=float(rt),
                      trigger_events=tuple(Event.from_json(e) for e in json.loads(trig)),
                      id=int(i), state=state,
                      cleared_batch=None if cb is None else int(cb),
                      cleared_time=None if ct is None else float(ct))
                for i, key, kind, sev, msg, subj, rb, rt, trig, cb, ct, state in rows]

    def active_alert_keys(self) -> set[str]:
        """Dedup keys of active alerts: the ``active_keys`` input of AlertRules.evaluate."""
        with self._op("reading alerts"):
            rows = self._execute("SELECT dedup_key FROM alerts WHERE state = 'active'").fetchall()
        return {r[0] for r in rows}

    def export_parquet(self, relation: str, path: str, chunk_rows: int = 50_000) -> int:
        """Write one view to a Parquet file; returns the number of rows written."""
        from netrules.store.parquet import export_parquet

        return export_parquet(self, relation, path, chunk_rows=chunk_rows)
