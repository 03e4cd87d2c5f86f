"""The store's contract, run against every backend: SQLite always, PostgreSQL when the server
binaries are installed (Debian's ``postgresql`` package; the test starts a throwaway server on
a loopback port and drops it at the end of the session)."""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator

import pytest

from netrules.alerts.rules import Alert
from netrules.errors import StoreError
from netrules.eventlog.schema import Event, EventKind
from netrules.facts import Fact
from netrules.store import BatchRecord, Store, open_store
from netrules.store.base import BulkRows, TextRows, args_json, loc_text

# -- a throwaway PostgreSQL server ----------------------------------------------------------


def _pg_bindir() -> str | None:
    """Debian keeps initdb/pg_ctl in /usr/lib/postgresql/<major>/bin, outside PATH."""
    cands = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                   key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit() else 0,
                   reverse=True)
    for d in cands:
        if os.access(os.path.join(d, "initdb"), os.X_OK) and os.access(
                os.path.join(d, "pg_ctl"), os.X_OK):
            return d
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return os.path.dirname(os.path.realpath(initdb))
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """Base URL of a PostgreSQL server private to this test session."""
    bindir = _pg_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not found: apt-get install postgresql")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg not installed: pip install 'psycopg[binary]'")
    prefix: list[str] = []
    tmp = tempfile.mkdtemp(prefix="netrules-pg-")
    if os.geteuid() == 0:  # initdb refuses to run as root
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and no 'postgres' user to run initdb as")
        os.chown(tmp, pw.pw_uid, pw.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = os.path.join(tmp, "data"), _free_port()

    def run(*cmd: str) -> None:
        res = subprocess.run([*prefix, *cmd], capture_output=True, text=True, timeout=60)
        if res.returncode != 0:
            log = ""
            if os.path.exists(os.path.join(tmp, "log")):
                with open(os.path.join(tmp, "log")) as fh:
                    log = fh.read()
            pytest.fail(f"{' '.join(cmd)} failed:\n{res.stdout}\n{res.stderr}\n{log}")

    run(os.path.join(bindir, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
        "-E", "UTF8", "--locale=C", "--no-sync")
    opts = (f"-c listen_addresses=127.0.0.1 -p {port} -k {tmp} -F "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
    run(os.path.join(bindir, "pg_ctl"), "-D", data, "-l", os.path.join(tmp, "log"),
        "-w", "-t", "60", "-o", opts, "start")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run([*prefix, os.path.join(bindir, "pg_ctl"), "-D", data, "-m", "immediate",
                        "stop"], capture_output=True, timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)


_dbs = itertools.count()


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """A fresh, empty store URL per test: a new SQLite file, or a new PostgreSQL schema (much
    cheaper than a database) selected through the URL's search_path option."""
    return _fresh_url(request, tmp_path)


@pytest.fixture
def other_url(store_url: str, request: pytest.FixtureRequest, tmp_path) -> str:
    """A second fresh store of the same backend, for comparing two writes."""
    return _fresh_url(request, tmp_path / "other")


def _fresh_url(request: pytest.FixtureRequest, tmp_path) -> str:
    if request.node.callspec.params["store_url"] == "sqlite":
        tmp_path.mkdir(parents=True, exist_ok=True)
        return str(tmp_path / "store.db")
    import psycopg

    base = request.getfixturevalue("pg_server")
    name = f"netrules_t{os.getpid()}_{next(_dbs)}"
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")  # name is generated here, not user input
    return f"{base}/postgres?options=-csearch_path%3D{name}"


@pytest.fixture
def make_store(store_url: str) -> Iterator[Callable[..., Store]]:
    opened: list[Store] = []

    def make(read_only: bool = False) -> Store:
        s = open_store(store_url, read_only=read_only)
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()


@pytest.fixture
def store(make_store: Callable[..., Store]) -> Store:
    return make_store()


# -- helpers ---------------------------------------------------------------------------------


def ev(i: int, op: str, fact: Fact, t: float = 0.0) -> Event:
    kind = EventKind.LINK_UP if op == "+" else EventKind.LINK_DOWN
    return Event(f"sim:{i}", t or float(i), "sim", kind, op, fact)


def link(a: str, b: str, c: float = 1) -> Fact:
    return Fact("link", (a, b, c))


def path(a: str, b: str, p: tuple, c: int) -> Fact:
    return Fact("path", (a, b, p, c))


ODD_FACTS = [
    Fact("odd", ("a", 1, 2.5)),
    Fact("odd", ("b", float("inf"), -3)),
    Fact("odd", ("ünï", "x y", 0.1)),
    Fact("odd", ("c", ("p", ("q", 1)), "z"), loc=1),
    Fact("odd", (1, "num-first", 7), loc=None),
    Fact("odd", ("quote'\"", "back\\slash", "%s ? %%")),
]


# -- tests -----------------------------------------------------------------------------------


def test_views_round_trip(store: Store) -> None:
    links = [link("a", "b"), link("b", "c", 2), link("a", "c", 5)]
    assert store.write_batch(BatchRecord(0, 10.0, added={"link": links, "odd": ODD_FACTS}))
    assert store.read_view("link") == sorted(links, key=Fact.key)
    got = store.read_view("odd")
    assert got == sorted(ODD_FACTS, key=Fact.key)
    assert [f.loc for f in got] == [f.loc for f in sorted(ODD_FACTS, key=Fact.key)]
    assert store.relations() == {"link": 3, "odd": len(ODD_FACTS)}
    assert store.contains(link("a", "b")) and not store.contains(link("b", "a"))
    assert store.read_view("nothing") == []

    # per-position lookup for every value type, including lists and infinity
    assert store.read_view("link", where={0: "a"}) == [link("a", "b"), link("a", "c", 5)]
    assert store.read_view("link", where={0: "a", 2: 5}) == [link("a", "c", 5)]
    assert store.read_view("odd", where={1: float("inf")}) == [ODD_FACTS[1]]
    assert store.read_view("odd", where={1: ("p", ("q", 1))}) == [ODD_FACTS[3]]
    assert store.read_view("odd", where={2: 0.1}) == [ODD_FACTS[2]]
    assert store.read_view("odd", where={0: "ünï"}) == [ODD_FACTS[2]]
    assert store.read_view("odd", where={0: 1}) == [ODD_FACTS[4]]
    assert store.read_view("odd", where={0: "1"}) == []  # a string is not the number
    assert store.read_view("odd", where={9: "a"}) == []
    assert store.read_view("link", at="a") == [link("a", "b"), link("a", "c", 5)]
    assert store.read_view("odd", at="p") == []
    assert len(store.read_view("link", limit=2)) == 2

    removed = {"link": [link("a", "c", 5)]}
    assert store.write_batch(BatchRecord(1, 11.0, removed=removed,
                                         added={"link": [link("c", "d")]}))
    assert store.snapshot()["link"] == [["a", "b", 1], ["b", "c", 2], ["c", "d", 1]]
    assert ["b", float("inf"), -3] in store.snapshot()["odd"]
    assert store.snapshot()["odd"][0] == [1, "num-first", 7]  # numbers sort first


def test_bulk_rows_write_what_facts_write(make_store: Callable[..., Store],
                                          other_url: str) -> None:
    """A batch given as row sources (the columnar pipeline's form), locations bound per row
    or read out of the args by the backend, stores the same views and change log as the same
    batch given as facts; chunks of one relation are numbered on in the change log."""
    names = ["a", "ünï", 'q"uote', "back\\slash", "Cumaná"]
    paths = [Fact("path", (s, d, (s, "x", d), 3), 0) for s in names for d in names]
    links = [link(s, d) for s in names for d in names if s != d]
    odd = [Fact("odd", (1, "n"), 0), Fact("odd", (2, "m"), 0)]  # a location that is a number
    gone = [link("a", "ünï")]
    facts, bulky = make_store(), open_store(other_url)
    facts.write_batch(BatchRecord(0, 1.0, added={"link": links}))
    bulky.write_batch(BatchRecord(0, 1.0, added={"link": links}))
    assert facts.write_batch(BatchRecord(1, 2.0, added={"path": paths, "odd": odd},
                                  removed={"link": gone}))

    def rows(fs: list[Fact], locs: bool) -> TextRows:
        fs = sorted(fs, key=Fact.key)
        args = [args_json(f.args) for f in fs]
        return TextRows(args, [loc_text(f) for f in fs] if locs else None)

    class Chunked(TextRows):
        def chunks(self):  # type: ignore[override]
            for i in range(0, len(self.args), 7):
                yield self.args[i:i + 7], None

    p = rows(paths, False)
    assert bulky.write_batch(BatchRecord(1, 2.0, bulk=BulkRows(
        loc_pos={"path": 0, "odd": 0, "link": 0},
        added={"path": Chunked(p.args), "odd": rows(odd, True)},
        removed={"link": rows(gone, False)})))
    for s in (facts, bulky):
        assert s.relations() == {"link": len(links) - 1, "path": len(paths), "odd": 2}
    for rel in ("link", "path", "odd"):
        want = facts.read_view(rel)
        assert bulky.read_view(rel) == want
        assert [f.loc for f in bulky.read_view(rel)] == [f.loc for f in want]
        for n in names:
            assert bulky.read_view(rel, at=n) == facts.read_view(rel, at=n)
    assert bulky.read_view("odd", at="1") == facts.read_view("odd", at="1") == [odd[0]]
    assert bulky.changes() == facts.changes()
    assert bulky.batches()[-1].added == len(paths) + 2
    bulky.close()


def test_a_columnar_delta_writes_what_its_facts_write(make_store: Callable[..., Store],
                                                     other_url: str) -> None:
    """Best routes on a ring with a non-ASCII node, loaded then cut, by the columnar engine:
    the pipeline's row sources (texts rendered from ids, PostgreSQL's COPY, locations read
    out of the args) store the views and change log the delta's facts store."""
    from netrules import programs
    from netrules.engine.engine import Engine
    from netrules.pipeline.bulk import store_rows
    from netrules.plan import plan_program

    plan = plan_program(programs.load("best_routes"))
    eng = Engine(plan, "columnar")
    nodes = ["a", "b", "Cumaná", 'q"u', "e", "f"]
    links = [link(x, y, 1 + i % 3) for i, x in enumerate(nodes)
             for y in (nodes[(i + 1) % 6], nodes[i - 1])]
    bulky, facts = make_store(), open_store(other_url)
    keep = plan.visible | plan.base
    for bid, batch in enumerate([[("+", f) for f in links], [("-", links[0]), ("-", links[3])]]):
        delta = eng.apply(batch)
        added, removed = ({r: [Fact(r, row, plan.locspec.get(r, 0)) for row in rows]
                           for r, rows in side.items() if r in keep}
                          for side in (delta.added, delta.removed))
        assert bulky.write_batch(BatchRecord(bid, 1.0 + bid,
                                             bulk=store_rows(delta, plan, keep)))
        assert facts.write_batch(BatchRecord(bid, 1.0 + bid, added=added, removed=removed))
        for rel in ("bestPath", "bestCost", "link"):
            assert bulky.read_view(rel) == facts.read_view(rel)
            for n in nodes:
                assert bulky.read_view(rel, at=n) == facts.read_view(rel, at=n)
        assert sorted(bulky.changes()) == sorted(facts.changes())
    assert len(bulky.read_view("bestPath")) == 30  # every pair still routed, the long way
    facts.close()


def test_batch_rewrite_is_a_noop(store: Store) -> None:
    events = [ev(1, "+", link("a", "b")), ev(2, "+", link("b", "c"))]
    batch = BatchRecord(7, 1.0, events=events, added={"link": [link("a", "b"), link("b", "c")]},
                        stats={"rounds": 2, "spark_jobs": 1, "strategy": "delta"})
    assert store.write_batch(batch) is True
    assert store.write_batch(batch) is False
    replay = BatchRecord(7, 2.0, events=events, removed={"link": [link("a", "b")]})
    assert store.write_batch(replay) is False  # same id: nothing at all is applied
    assert len(store.changes()) == 2
    assert store.relations() == {"link": 2}
    assert store.last_batch_id() == 7
    assert store.applied_event_ids(["sim:1", "sim:2", "sim:3"]) == {"sim:1", "sim:2"}
    assert store.applied_event_ids([]) == set()
    (b,) = store.batches()
    assert (b.batch_id, b.n_events, b.first_event, b.last_event, b.added, b.removed) == (
        7, 2, "sim:1", "sim:2", 2, 0)
    assert b.stats["strategy"] == "delta"


def test_reopen_keeps_data_and_schema_is_idempotent(make_store: Callable[..., Store]) -> None:
    s1 = make_store()
    assert s1.last_batch_id() is None
    s1.write_batch(BatchRecord(0, 1.0, added={"link": [link("a", "b")]}))
    s1.set_program("pathvector", "path(@S,D) :- link(@S,D,C).")
    s1.close()
    with pytest.raises(StoreError):
        s1.relations()
    s2 = make_store()
    assert s2.relations() == {"link": 1}
    assert s2.meta()["schema_version"] == "1"
    assert s2.meta()["program_name"] == "pathvector"
    ro = make_store(read_only=True)
    assert ro.read_view("link") == [link("a", "b")]
    with pytest.raises(StoreError, match="read-only"):
        ro.write_batch(BatchRecord(1, 2.0))


def test_changes_and_batches(store: Store) -> None:
    for i in range(5):
        store.write_batch(BatchRecord(i, 100.0 + i, added={"link": [link("n", f"m{i}")]},
                                      removed={"link": [link("n", f"m{i - 1}")]} if i else {}))
    ch = store.changes()
    assert [(c.batch_id, c.seq, c.op) for c in ch[:3]] == [(0, 0, "+"), (1, 0, "-"), (1, 1, "+")]
    assert ch[1].fact == link("n", "m0") and ch[1].time == 101.0
    assert [c.batch_id for c in store.changes(since_batch=3)] == [4, 4]
    assert store.changes(relation="path") == []
    assert len(store.changes(limit=4)) == 4
    assert [b.batch_id for b in store.batches(limit=2)] == [3, 4]
    assert [(b.added, b.removed) for b in store.batches()] == [(1, 0)] + [(1, 1)] * 4


def test_derivations_round_trip(store: Store) -> None:
    head = path("a", "c", ("a", "b", "c"), 2)
    body1 = [link("a", "b"), path("b", "c", ("b", "c"), 1)]
    body2 = [link("a", "x"), Fact("path", ("x", "c", ("x", "c"), 1), loc=None)]
    store.write_batch(BatchRecord(0, 1.0, added={"path": [head]},
                                  derivations_added=[(head, "r2", body1), (head, "r2", body2)]))
    got = store.derivations(head)
    assert len(got) == 2
    assert sorted(got, key=lambda d: [f.key() for f in d[1]]) == [("r2", body1), ("r2", body2)]
    assert [f.loc for f in got[0][1] + got[1][1]].count(None) == 1
    # re-adding a kept support stores no duplicate
    store.write_batch(BatchRecord(1, 2.0, derivations_added=[(head, "r2", body1)]))
    assert len(store.derivations(head)) == 2
    # removal drops every support, then the batch's additions apply
    store.write_batch(BatchRecord(2, 3.0, derivations_removed=[head],
                                  derivations_added=[(head, "r1", [link("a", "c")])]))
    assert store.derivations(head) == [("r1", [link("a", "c")])]
    store.write_batch(BatchRecord(3, 4.0, derivations_removed=[head]))
    assert store.derivations(head) == []


def test_derivations_as_texts_are_the_derivations_as_facts(store: Store) -> None:
    """A batch's derivations rendered by the pipeline (``DerivationTexts``) land as the same
    rows as the Facts they stand for: the same support key (a kept support re-added in either
    form is not duplicated), removals before additions, a bad relation name refused."""
    from netrules.store import DerivationTexts
    from netrules.store.base import _body_json

    head = path("a", "c", ("a", "b", "c"), 2)
    body1 = [link("a", "b"), path("b", "c", ("b", "c"), 1)]
    body2 = [link("a", "x"), Fact("path", ("x", "c", ("x", "c"), 1), loc=None)]
    text = DerivationTexts(added=[("path", args_json(head.args), "r2", _body_json(body1))],
                           relations={"path", "link"})
    store.write_batch(BatchRecord(0, 1.0, added={"path": [head]}, derivation_texts=text,
                                  derivations_added=[(head, "r2", body2)]))
    got = sorted(store.derivations(head), key=lambda d: [f.key() for f in d[1]])
    assert got == [("r2", body1), ("r2", body2)]
    store.write_batch(BatchRecord(1, 2.0, derivations_added=[(head, "r2", body1)]))
    assert len(store.derivations(head)) == 2
    gone = DerivationTexts(removed=[("path", args_json(head.args))],
                           added=[("path", args_json(head.args), "r1",
                                   _body_json([link("a", "c")]))], relations={"path", "link"})
    store.write_batch(BatchRecord(2, 3.0, derivation_texts=gone))
    assert store.derivations(head) == [("r1", [link("a", "c")])]
    bad = DerivationTexts(removed=[("no such", "[]")], relations={"no such"})
    with pytest.raises(StoreError, match="invalid relation name"):
        store.write_batch(BatchRecord(3, 4.0, derivation_texts=bad))
    assert store.derivations(head) == [("r1", [link("a", "c")])]


def test_a_fact_removed_in_bulk_takes_its_derivations_along(store: Store) -> None:
    """A columnar batch names no derivation to drop for a fact that left its view: the
    store's write of the removal drops them (and only that fact's)."""
    head = path("a", "c", ("a", "b", "c"), 2)
    other = path("a", "b", ("a", "b"), 1)
    store.write_batch(BatchRecord(0, 1.0, added={"path": [head, other]},
                                  derivations_added=[(head, "r2", [link("a", "b")]),
                                                     (other, "r1", [link("a", "b")])]))
    assert store.write_batch(BatchRecord(1, 2.0, bulk=BulkRows(
        loc_pos={"path": 0}, removed={"path": TextRows([args_json(head.args)])})))
    assert store.read_view("path") == [other]
    assert store.derivations(head) == []
    assert store.derivations(other) == [("r1", [link("a", "b")])]


def _alert(key: str, batch: int, trig: tuple[Event, ...] = ()) -> Alert:
    return Alert(kind="route_lost", severity="major", message=f"lost {key}", dedup_key=key,
                 subject={"src": "a", "dst": key}, raised_batch=batch, raised_time=float(batch),
                 trigger_events=trig)


def test_alerts_raise_clear_newest_first(store: Store) -> None:
    down = ev(1, "-", link("b", "c"))
    store.write_batch(BatchRecord(0, 0.0, events=[down],
                                  alerts_raised=[_alert("k1", 0, (down,)), _alert("k2", 0)]))
    store.write_batch(BatchRecord(1, 1.0, alerts_raised=[_alert("k3", 1), _alert("k1", 1)]))
    keys = [a.dedup_key for a in store.alerts()]
    assert keys == ["k3", "k2", "k1"]  # k1 was already active: not raised twice
    assert store.alerts()[-1].trigger_events == (down,)
    assert store.alerts()[-1].subject == {"src": "a", "dst": "k1"}
    assert store.active_alert_keys() == {"k1", "k2", "k3"}

    store.write_batch(BatchRecord(2, 2.0, alerts_cleared=["k1", "nope"]))
    k1 = [a for a in store.alerts() if a.dedup_key == "k1"][0]
    assert (k1.state, k1.cleared_batch, k1.cleared_time) == ("cleared", 2, 2.0)
    assert [a.dedup_key for a in store.alerts(active_only=True)] == ["k3", "k2"]
    # raising again after a clear is a new alert
    store.write_batch(BatchRecord(3, 3.0, alerts_raised=[_alert("k1", 3)]))
    assert [(a.dedup_key, a.state) for a in store.alerts(limit=2)] == [
        ("k1", "active"), ("k3", "active")]
    assert len(store.alerts()) == 4


def test_topology_and_link_states(store: Store) -> None:
    store.set_topology({"a": {"x": 1}, "b": {}, "c": None},
                       [("a", "b", 1.0), ("b", "c", 2.0, "up", {"bw": "10G"})])
    store.write_batch(BatchRecord(0, 1.0, link_states=[("b", "c", None, "down"),
                                                       ("c", "d", 3.0, "up")]))
    nodes, links = store.topology()
    assert [n.name for n in nodes] == ["a", "b", "c"] and nodes[0].attrs == {"x": 1}
    assert [(lk.src, lk.dst, lk.cost, lk.state) for lk in links] == [
        ("a", "b", 1.0, "up"), ("b", "c", 2.0, "down"), ("c", "d", 3.0, "up")]
    assert links[1].attrs == {"bw": "10G"}
    with pytest.raises(StoreError):
        store.write_batch(BatchRecord(1, 1.0, link_states=[("a", "b", 1.0, "sideways")]))
    with pytest.raises(StoreError):
        store.set_topology([], [("a", "b", 1.0, "sideways")])


@pytest.mark.parametrize("bad", ["link; DROP TABLE views", "views'--", "1link", "", "a b",
                                 "link)", "ünï"])
def test_injection_looking_relation_names_rejected(store: Store, bad: str) -> None:
    store.write_batch(BatchRecord(0, 0.0, added={"link": [link("a", "b")]}))
    with pytest.raises(StoreError, match="invalid relation name"):
        store.write_batch(BatchRecord(1, 1.0, added={bad: [Fact(bad, ("a",))]}))
    with pytest.raises(StoreError):
        store.read_view(bad)
    with pytest.raises(StoreError):
        store.contains(Fact(bad, ("a",)))
    with pytest.raises(StoreError):
        store.changes(relation=bad)
    assert store.last_batch_id() == 0 and store.relations() == {"link": 1}


def test_injection_looking_values_stored_literally(store: Store) -> None:
    evil = ["'); DROP TABLE views; --", "\" OR 1=1 --", "$[0]", "?", "%s", "a\x00b"[:1]]
    facts = [Fact("link", (v, "x", 1)) for v in evil]
    store.write_batch(BatchRecord(0, 0.0, added={"link": facts}))
    assert store.read_view("link") == sorted(facts, key=Fact.key)
    for f in facts:
        assert store.read_view("link", where={0: f.args[0]}) == [f]
        assert store.read_view("link", at=f.args[0]) == [f]
    assert store.read_view("link", where={0: "' OR '1'='1"}) == []
    assert store.relations() == {"link": len(facts)}


def test_failed_batch_writes_nothing(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    real = store._executemany

    def flaky(sql: str, rows) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("disk on fire")
        real(sql, rows)

    monkeypatch.setattr(store, "_executemany", flaky)
    batch = BatchRecord(0, 0.0, events=[ev(1, "+", link("a", "b"))],
                        added={"link": [link("a", "b")]})
    with pytest.raises(RuntimeError):
        store.write_batch(batch)
    monkeypatch.undo()
    assert store.last_batch_id() is None and store.relations() == {} and store.changes() == []
    assert store.write_batch(batch) is True
    assert store.relations() == {"link": 1}


def test_mislabelled_fact_rejected(store: Store) -> None:
    with pytest.raises(StoreError):
        store.write_batch(BatchRecord(0, 0.0, added={"link": [Fact("path", ("a",))]}))
    assert store.last_batch_id() is None
