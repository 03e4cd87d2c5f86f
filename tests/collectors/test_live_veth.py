"""Live capture from a fresh process over a veth pair this test creates: real packets sent with
scapy on one end, ``netrules capture --iface`` on the other.

A fresh process matters: scapy's layers must be loaded before the socket opens, and the test
process has loaded them long before (which is how an in-process test once hid that defect).
Needs root (CAP_NET_ADMIN for the veth, CAP_NET_RAW to capture); skipped otherwise.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from scapy.sendrecv import sendp

from netrules.eventlog import EventLog
from netrules.eventlog.schema import Event, EventKind

from .test_pcap import bfd, hello

ROOT = Path(__file__).resolve().parents[2]
DEAD = 2  # the Hellos' dead interval, seconds

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and ip(8) to create a veth pair")


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True)


@pytest.fixture
def veth() -> Iterator[tuple[str, str]]:
    """(capture end, sending end) of a new veth pair, up, with IPv6 off so that nothing but
    the test's own packets crosses it."""
    tag = f"{os.getpid() % 100000}"
    here, there = f"nr{tag}c", f"nr{tag}s"
    made = _ip("link", "add", here, "type", "veth", "peer", "name", there)
    if made.returncode != 0:
        pytest.skip(f"cannot create a veth pair here: {made.stderr.strip()}")
    try:
        for name in (here, there):
            knob = Path(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6")
            if knob.exists():
                knob.write_text("1")
            assert _ip("link", "set", name, "up").returncode == 0
        yield here, there
    finally:
        _ip("link", "del", here)


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    out: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return out


def _next_event(lines: queue.Queue[str], patience: float) -> Event | None:
    try:
        return Event.from_line(lines.get(timeout=patience))
    except queue.Empty:
        return None


def test_capture_in_a_fresh_process_decodes_and_expires_a_silent_neighbour(
        veth: tuple[str, str]) -> None:
    here, there = veth
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "netrules.cli", "capture", "--iface", here,
                             "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = _lines(proc)
        # Hello until the capture shows it is listening (its start-up takes a few seconds).
        first = None
        for _ in range(60):
            sendp(hello("1.1.1.1", "10.0.0.1", ["2.2.2.2"], dead=DEAD), iface=there,
                  verbose=False)
            first = _next_event(lines, 0.5)
            if first is not None or proc.poll() is not None:
                break
        assert first is not None, proc.stderr.read() if proc.poll() is not None else "no event"
        assert (first.op, first.kind, str(first.fact)) == (
            "+", EventKind.NEIGHBOUR_SEEN, 'adjacency(@"1.1.1.1","2.2.2.2")')

        sendp(bfd("192.0.2.1", "192.0.2.2", 3), iface=there, verbose=False)  # UDP decodes too
        up = _next_event(lines, 10)
        assert up is not None and up.kind == EventKind.BFD_UP

        # One last Hello, then silence: nothing else crosses the veth.
        sendp(hello("1.1.1.1", "10.0.0.1", ["2.2.2.2"], dead=DEAD), iface=there, verbose=False)
        last_hello = time.monotonic()
        gone = _next_event(lines, DEAD + 10)
        reported = time.monotonic()
        assert gone is not None, "the silent neighbour was never reported down"
        assert (gone.op, gone.kind, str(gone.fact)) == (
            "-", EventKind.NEIGHBOUR_EXPIRED, 'adjacency(@"1.1.1.1","2.2.2.2")')
        assert gone.detail["reason"] == "dead interval"
        assert reported - last_hello <= DEAD + 1  # issue 23: within the dead interval + 1 s
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_follow_interface_writes_each_event_as_it_is_decoded(veth: tuple[str, str],
                                                             tmp_path: Path) -> None:
    from netrules.pipeline.sources import follow_interface

    here, there = veth
    log = EventLog(tmp_path / "events")
    stop = threading.Event()
    pump = follow_interface(here, log, stop)
    try:
        # One BFD packet at a time; each must reach the log with no later packet to push it.
        for state, kind in ((3, EventKind.BFD_UP), (1, EventKind.BFD_DOWN)):
            want = len(list(log.read())) + 1
            for _ in range(20):  # the capture socket is open once follow_interface returns
                sendp(bfd("192.0.2.1", "192.0.2.2", state), iface=there, verbose=False)
                waited = time.monotonic()
                while len(list(log.read())) < want and time.monotonic() - waited < 2:
                    time.sleep(0.05)
                if len(list(log.read())) >= want:
                    break
            events = list(log.read())
            assert len(events) == want and events[-1].kind == kind
    finally:
        stop.set()
        pump.join(timeout=10)
    assert not pump.is_alive()
