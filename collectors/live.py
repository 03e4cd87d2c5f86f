"""Live capture from an interface, decoded exactly as a replayed capture is.

Why the same decoder: a live feed and a replay of its recording must give the same events, so
both drive one :class:`collectors.pcap.PacketDecoder`; only the packet source differs. Event
times are the kernel's capture timestamps, ids ``source:packet:k`` as in a replay.

Two things differ from a replay. Scapy's layers are loaded before the socket opens: the socket
picks its link-layer class when it opens, and without the layers every frame is ``Raw``. And
while the line is silent the loop wakes every ``tick`` seconds and runs the protocol timers on
the wall clock, so a neighbour whose Hellos stop is reported within its dead interval.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time as _time
from collections.abc import Iterator
from typing import Any

from collectors.pcap import PacketDecoder
from netrules.errors import CollectorError
from netrules.eventlog.schema import Event

__all__ = ["capture"]


def _load_layers() -> None:
    """Import every layer the decoders read (Ethernet, IP, the routing protocols)."""
    import scapy.layers.inet  # noqa: F401
    import scapy.layers.inet6  # noqa: F401
    import scapy.layers.l2  # noqa: F401

    import collectors.bfd  # noqa: F401  (each imports its scapy.contrib layer)
    import collectors.bgp  # noqa: F401
    import collectors.l2  # noqa: F401
    import collectors.ospf  # noqa: F401


def _open(iface: str) -> Any:
    """Check the interface exists, then open the listening socket in this thread, so a missing
    interface or missing privileges surface here rather than inside the sniffer thread."""
    from scapy.arch import get_if_list  # importing scapy.arch also populates conf.ifaces
    from scapy.config import conf

    conf.ifaces.reload()  # an interface made (or remade) since scapy loaded has a new index
    names = get_if_list()
    if iface not in names:
        raise CollectorError(f"interface {iface!r} does not exist "
                             f"(available: {', '.join(sorted(names)) or 'none'})")
    try:
        return conf.L2listen(iface=iface)
    except PermissionError as err:
        raise CollectorError(f"capturing on {iface!r} needs root or CAP_NET_RAW: {err}") from err
    except OSError as err:
        raise CollectorError(f"cannot capture on {iface!r}: {err}") from err


def capture(iface: str, *, count: int | None = None, timeout: float | None = None,
            source: str | None = None, stop: threading.Event | None = None,
            tick: float = 0.1) -> Iterator[Event]:
    """Events from ``iface`` until ``count`` packets were seen, ``timeout`` seconds passed
    or ``stop`` is set (unlimited when None). Raises CollectorError at once for a missing
    interface or lacking privileges; closing the iterator stops the capture."""
    _load_layers()
    sock = _open(iface)
    return _events(sock, iface, count, timeout, source or iface, stop, tick)


def _events(sock: Any, iface: str, count: int | None, timeout: float | None, source: str,
            stop: threading.Event | None, tick: float) -> Iterator[Event]:
    from scapy.sendrecv import AsyncSniffer

    packets: queue.Queue[Any] = queue.Queue()
    sniffer = AsyncSniffer(opened_socket=sock, prn=packets.put, store=False, count=count or 0)
    decoder = PacketDecoder(source)
    deadline = None if timeout is None else _time.monotonic() + timeout
    number = 0
    sniffer.start()
    try:
        while stop is None or not stop.is_set():
            try:
                pkt = packets.get(timeout=tick)
            except queue.Empty:
                if sniffer.thread is not None and not sniffer.thread.is_alive():
                    if packets.empty():
                        break
                    continue
                yield from decoder.tick(number, _time.time())  # silence: run the timers
                if deadline is not None and _time.monotonic() >= deadline:
                    break
                continue
            number += 1
            events, _ = decoder.step(number, float(pkt.time), pkt)
            yield from events
            if deadline is not None and _time.monotonic() >= deadline:
                break
        if sniffer.exception is not None:
            raise CollectorError(f"capture on {iface!r} failed: {sniffer.exception}")
    finally:
        if sniffer.running:
            with contextlib.suppress(Exception):  # already finishing; nothing left to stop
                sniffer.stop()
        sock.close()
