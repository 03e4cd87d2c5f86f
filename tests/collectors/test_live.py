"""Live capture: clear errors without privileges, and loopback end to end when we have them."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest
from scapy.compat import raw
from scapy.contrib.bfd import BFD

from collectors.live import capture
from netrules.errors import CollectorError
from netrules.eventlog.schema import EventKind


def test_missing_interface_is_a_collector_error_naming_it() -> None:
    with pytest.raises(CollectorError, match="no-such-if0"):
        capture("no-such-if0", count=1, timeout=1)


@pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0, reason="needs root to drop")
def test_lacking_privileges_is_a_collector_error() -> None:
    """Fork, drop to nobody, try to capture on lo: the child reports what it caught."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        try:
            os.close(rd)
            os.setgid(65534)
            os.setuid(65534)
            try:
                capture("lo", count=1, timeout=1)
                msg = "OPENED"
            except CollectorError as err:
                msg = f"ERR {err}"
            except BaseException as err:
                msg = f"OTHER {type(err).__name__}: {err}"
            os.write(wr, msg.encode())
        finally:
            os._exit(0)
    os.close(wr)
    with os.fdopen(rd, "rb") as f:
        msg = f.read().decode()
    os.waitpid(pid, 0)
    if msg == "OPENED":
        pytest.skip("unprivileged users may capture here")
    assert msg.startswith("ERR ") and "'lo'" in msg and "CAP_NET_RAW" in msg, msg


def test_loopback_bfd_up_end_to_end() -> None:
    try:
        events = capture("lo", timeout=5)
    except CollectorError as err:
        pytest.skip(str(err))

    def send() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for _ in range(20):
                s.sendto(raw(BFD(sta=3)), ("127.0.0.1", 3784))
                time.sleep(0.05)

    threading.Thread(target=send, daemon=True).start()
    first = next(events)
    events.close()
    assert first.kind == EventKind.BFD_UP
    assert first.fact.args == ("127.0.0.1", "127.0.0.1")
    assert first.id == "lo:" + first.id.split(":", 1)[1]
