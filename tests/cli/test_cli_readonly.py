"""Store URLs read as SQLAlchemy reads them, and read commands on a store on read-only media."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from netrules.cli import main
from netrules.errors import StoreError
from netrules.store import open_store, parse_store_url

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize(("url", "backend", "target", "read_only"), [
    ("state/x.db", "sqlite", "state/x.db", False),
    ("/abs/x.db", "sqlite", "/abs/x.db", False),
    ("sqlite:///rel/x.db", "sqlite", "rel/x.db", False),
    ("sqlite:////tmp/x.db", "sqlite", "/tmp/x.db", False),
    ("sqlite:///x.db?mode=ro", "sqlite", "x.db", True),
    ("sqlite://", "sqlite", ":memory:", False),
    ("sqlite:///:memory:", "sqlite", ":memory:", False),
    ("postgresql://u@h/db", "postgres", "postgresql://u@h/db", False),
])
def test_store_urls_as_sqlalchemy_reads_them(url: str, backend: str, target: str,
                                            read_only: bool) -> None:
    parsed = parse_store_url(url)
    assert (parsed.backend, parsed.target, parsed.read_only) == (backend, target, read_only)


@pytest.mark.parametrize(("url", "names"), [
    ("sqlite://host/x.db", "no host"),
    ("sqlite:///x.db?mode=rx", "mode='rx'"),
    ("sqlite:///x.db?cache=shared", "unknown SQLite URL option 'cache'"),
    ("mysql://root@h/db", "unknown store URL scheme 'mysql'"),
])
def test_bad_store_urls_say_what_is_wrong(url: str, names: str) -> None:
    with pytest.raises(StoreError) as info:
        parse_store_url(url)
    assert url in str(info.value) and names in str(info.value)


def test_absolute_and_relative_sqlite_urls_open_the_same_file(tmp_path: Path,
                                                              monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path).startswith("/")
    with open_store(f"sqlite:///{tmp_path}/a.db") as s:  # four slashes: absolute
        s.set_meta("who", "absolute")
    assert (tmp_path / "a.db").is_file()
    with open_store("sqlite:///a.db", read_only=True) as s:
        assert s.meta()["who"] == "absolute"


@pytest.fixture(scope="module")
def written_store(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("written")
    store = d / "s.db"
    r = cli("run", "path_vector", "--simulate", "line:5", "--scenario",
            EXAMPLES / "line-failure.scenario", "--once", "--store", store,
            "--events-dir", d / "events", "--quiet")
    assert r.exit_code == 0, r.output
    assert not (d / "s.db-wal").exists()  # closed cleanly: what a read-only copy holds
    return store


@pytest.fixture
def read_only_copy(written_store: Path, tmp_path: Path) -> Iterator[Path]:
    """The store on media nothing can write: a read-only tmpfs for root (whom file modes do
    not stop), a chmod'ed directory and file for anyone else."""
    media = tmp_path / "media"
    media.mkdir()
    if os.geteuid() == 0:
        if shutil.which("mount") is None:
            pytest.skip("root without mount(8): cannot make read-only media")
        up = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(media)],
                            capture_output=True, text=True)
        if up.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {up.stderr.strip()}")
        try:
            shutil.copy(written_store, media / "s.db")
            subprocess.run(["mount", "-o", "remount,ro", str(media)], check=True)
            yield media / "s.db"
        finally:
            subprocess.run(["umount", str(media)], check=False)
        return
    shutil.copy(written_store, media / "s.db")
    (media / "s.db").chmod(0o444)
    media.chmod(0o555)
    try:
        yield media / "s.db"
    finally:
        media.chmod(0o755)


def test_read_commands_work_on_read_only_media(read_only_copy: Path) -> None:
    store = str(read_only_copy)
    with pytest.raises(OSError):  # really read-only: the WAL index cannot be created
        (read_only_copy.parent / "probe").write_text("x")
    for url in (store, f"sqlite:///{store}", f"sqlite:///{store}?mode=ro"):
        r = cli("query", "bestPath(@n0,X,P,C)", "--store", url, "--json")
        assert r.exit_code == 0, r.output
        assert sorted(row[1] for row in json.loads(r.output.splitlines()[0])) == [
            "n1", "n2", "n3", "n4"]
    for args in (("alerts",), ("routes", "n0"), ("why", "bestPath(@n0,n1,[n0,n1],1)"),
                 ("traceroute", "n0", "n4"), ("diff", "--before", "0", "--after", "1")):
        r = cli(*args, "--store", store)
        assert r.exit_code == 0, (args, r.output)
    assert sorted(p.name for p in read_only_copy.parent.iterdir()) == ["s.db"]


def test_writing_to_a_read_only_url_names_the_store(read_only_copy: Path) -> None:
    with open_store(f"sqlite:///{read_only_copy}?mode=ro") as s, \
            pytest.raises(StoreError, match="opened read-only"):
        s.set_meta("x", "y")
