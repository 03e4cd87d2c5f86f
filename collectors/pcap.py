"""Replay a pcap or pcapng capture as located-fact events, streaming, one packet at a time.

Why streaming: captures of routing traffic run to many gigabytes; the reader holds one packet
record at a time (scapy's raw readers, never ``rdpcap``) and protocol state that is bounded by the
network (neighbours, LSAs, routes), not by the file.

Facts (node names are strings: OSPF router IDs, BGP speaker addresses, LLDP system names or
chassis IDs, CDP device IDs):

* ``adjacency(@R, N)`` -- router R lists N in its OSPFv2 Hellos (R's view of the two-way state).
  NEIGHBOUR_SEEN on the first Hello that lists N; NEIGHBOUR_EXPIRED when a later Hello from the
  same interface no longer lists N, or when no Hello from R listed N within R's dead interval.
  Expiry is driven by capture time: in a replay it is checked when a later packet's timestamp
  passes the deadline (a live capture also checks the wall clock while the line is silent),
  and the event carries the deadline as its time. At the end of a capture nothing expires (the
  capture just stopped; silence was not observed).
* ``link(@R, N, Metric)`` -- one per link of R's newest Router-LSA (LINK_UP / LINK_DOWN). N is
  the neighbour router ID for point-to-point and virtual links, the designated router's
  interface address for transit links and ``"net/len"`` for stub links. Only an LSA with a
  higher sequence number than the last one seen from R counts; a MaxAge LSA flushes R's links
  (the DoNotAge bit, RFC 4136, is not part of the age: 32769 is age 1). A Network-LSA links
  every pair of routers attached to its transit network, both ways, at the first router's
  cost to that network (from its Router-LSA; 1 until that is seen).
* ``session(@A, B)`` -- speaker A sent KEEPALIVE or UPDATE to B (SESSION_UP: Established; an
  OPEN only gives A's AS and hold time). A NOTIFICATION (detail: its reason in words), a TCP
  FIN/RST between A and B, or A's silence for the hold time ends both directions
  (SESSION_DOWN). Session and route events carry ``local_as`` and ``peer_as`` from the OPENs.
* ``route(@A, Prefix)`` -- A announced the IPv4 prefix in an UPDATE (ROUTE_ANNOUNCED); withdrawn
  when A withdraws it, or when the session it was learnt over goes down, on every session A
  announced it over.
* ``neighbour(@D, Observer, Port)`` -- device D (LLDP system name, else chassis ID; CDP device
  ID) advertised itself out of its port Port where the capture was taken; Observer is the
  replay's ``source`` (name it after the capture point). Expires after the advertised TTL /
  holdtime by capture time; an LLDP TTL of 0 (shutdown) retracts at once.
* ``bfd(@S, D)`` -- BFD control packets from S to D: state Up asserts, Down/AdminDown retracts,
  Init is ignored; S's silence for its detection time retracts.

Every raw observation passes through one :class:`TransitionFilter`, so repeated Hellos and
KEEPALIVEs only count as ``dropped["duplicate_up"]``. Event ids are ``source:packet:k`` with
1-based packet numbers, stable across replays of the same file.
"""

from __future__ import annotations

import heapq
import itertools
import os
import time as _time
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from netrules.errors import CollectorError
from netrules.eventlog.schema import Event, EventKind, TransitionFilter
from netrules.facts import Fact

__all__ = ["Observation", "SoftTable", "Malformed", "PacketDecoder", "ReplayReport", "Replay",
           "replay"]


class Observation(NamedTuple):
    """One raw protocol observation before edge-triggering."""

    time: float
    op: str
    kind: EventKind
    fact: Fact
    detail: dict[str, Any]


class Malformed(ValueError):
    """A packet of a protocol we decode is too damaged to read; the reason goes in the report."""


class SoftTable:
    """Facts held by one or more holders, each with an optional deadline.

    A fact is present while any holder holds it; this keeps, say, a route learnt over two
    sessions alive until both drop it. Deadlines sit in a heap with lazy deletion so refreshing
    a held fact costs O(log n) and expiring costs nothing until a deadline passes.
    """

    def __init__(self) -> None:
        self._deadline: dict[tuple[Fact, Hashable], float] = {}
        self._holders: dict[Fact, set[Hashable]] = {}
        self._heap: list[tuple[float, int, Fact, Hashable]] = []
        self._seq = itertools.count()

    def hold(self, fact: Fact, holder: Hashable, deadline: float = float("inf")) -> None:
        self._deadline[(fact, holder)] = deadline
        self._holders.setdefault(fact, set()).add(holder)
        if deadline != float("inf"):
            heapq.heappush(self._heap, (deadline, next(self._seq), fact, holder))

    def holds(self, fact: Fact) -> bool:
        """True while anyone holds ``fact``."""
        return fact in self._holders

    def release(self, fact: Fact, holder: Hashable) -> bool:
        """Drop one holder; True when the fact is now held by nobody."""
        self._deadline.pop((fact, holder), None)
        holders = self._holders.get(fact)
        if holders is None:
            return True
        holders.discard(holder)
        if holders:
            return False
        del self._holders[fact]
        return True

    def expire(self, now: float) -> list[tuple[float, Fact, Hashable]]:
        """Release every hold whose deadline is strictly before ``now``; return the facts that
        lost their last holder, with their deadline, in deadline order."""
        out = []
        while self._heap and self._heap[0][0] < now:
            deadline, _, fact, holder = heapq.heappop(self._heap)
            if self._deadline.get((fact, holder)) != deadline:
                continue  # refreshed or released since this entry was pushed
            if self.release(fact, holder):
                out.append((deadline, fact, holder))
        return out


class PacketDecoder:
    """Per-packet decoding shared by replay and live capture: protocol state, clock, filter."""

    def __init__(self, source: str) -> None:
        # Imported here: the protocol modules import Observation/SoftTable from this module.
        from scapy.config import conf

        from collectors.bfd import BfdTracker
        from collectors.bgp import BgpTracker
        from collectors.l2 import L2Tracker
        from collectors.ospf import OspfTracker

        # scapy stops dissecting lists past 100 items (a guard against hostile input), but one
        # LS Update carries hundreds of LSAs and one UPDATE hundreds of withdrawn prefixes.
        conf.max_list_count = max(conf.max_list_count, 20000)
        self.source = source
        self.filter = TransitionFilter()
        self.ignored: Counter[str] = Counter()
        self.trackers = [OspfTracker(self.ignored), BgpTracker(self.ignored),
                         L2Tracker(source), BfdTracker()]
        self.clock = float("-inf")
        self._numbered = (0, 0)  # (packet number, events given ids under it so far)

    def parse(self, pkt: Any) -> tuple[list[tuple[Any, Any]], str | None]:
        """Read every protocol's item out of a dissected packet. Touches scapy and may meet
        damaged layers, so it changes no state: a bad packet is rejected whole."""
        try:
            items = [(t, t.parse(pkt)) for t in self.trackers]
        except Malformed as err:
            return [], str(err)
        except Exception as err:  # scapy field access on damaged layers
            return [], f"malformed packet: {type(err).__name__}: {err}"
        return [(t, item) for t, item in items if item is not None], None

    def apply(self, number: int, time: float | None,
              items: list[tuple[Any, Any]]) -> list[Event]:
        """Advance capture time (expiring soft state), then apply parsed items."""
        if time is not None and time > self.clock:
            self.clock = time
        now = self.clock if time is None else time
        obs: list[Observation] = []
        for tracker in self.trackers:
            obs.extend(tracker.expire(self.clock))
        for tracker, item in items:
            obs.extend(tracker.apply(item, now))
        return self._events(number, obs)

    def tick(self, number: int, now: float) -> list[Event]:
        """Run the timers (dead intervals, hold times, detection times) up to ``now`` with no
        packet: a live capture calls this while the line is silent, with the wall clock, so a
        neighbour that stopped talking is reported without waiting for some other packet.
        Events take ids after those of packet ``number``, the last one seen."""
        return self.apply(number, now, [])

    def step(self, number: int, time: float | None, pkt: Any) -> tuple[list[Event], str | None]:
        """Parse then apply one packet (None: a record that could not be dissected)."""
        items, reason = self.parse(pkt) if pkt is not None else ([], None)
        return self.apply(number, time, items), reason

    def _events(self, number: int, obs: list[Observation]) -> list[Event]:
        last, k = self._numbered
        k = k if number == last else 0  # ticks after packet N continue N's ids
        events = []
        for o in obs:
            if self.filter.accept(o.op, o.fact):
                events.append(Event(f"{self.source}:{number}:{k}", o.time,
                                    self.source, o.kind, o.op, o.fact, o.detail))
                k += 1
        self._numbered = (number, k)
        return events


@dataclass
class ReplayReport:
    """What a replay read, emitted and could not read. ``error`` is set when reading stopped
    before the end of the file (truncation, garbage); earlier events still stand."""

    path: str
    packets: int = 0
    events: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    ignored: Counter[str] = field(default_factory=Counter)
    error: str | None = None
    bytes_read: int = 0
    bytes_total: int = 0

    def summary(self) -> str:
        lines = [f"{self.path}: {self.packets} packets, {self.events} events, "
                 f"{len(self.skipped)} skipped"]
        lines += [f"  skipped packet {n}: {why}" for n, why in self.skipped]
        if self.dropped:
            lines.append("  dropped transitions: "
                         + ", ".join(f"{k}={v}" for k, v in sorted(self.dropped.items())))
        if self.ignored:
            lines.append("  ignored: "
                         + ", ".join(f"{k}={v}" for k, v in sorted(self.ignored.items())))
        if self.error:
            lines.append(f"  stopped reading: {self.error}")
        return "\n".join(lines)


# Replay speed is scapy dissection (about 1 ms a packet). Two exact shortcuts for Ethernet:
# * a raw-bytes pre-filter skips the data-plane traffic that is most of a real capture;
# * routing protocols repeat identical PDUs (Hellos, KEEPALIVEs, LLDP every few seconds), so the
#   parsed items are memoized by a key holding every byte the decoders read, minus only fields
#   that change between repeats and that no decoder reads (MACs, IP id/TTL/checksum, TCP
#   seq/ack/window/checksum, UDP checksum). Same key, same bytes read, same items.
# Anything the pre-filter is unsure about is dissected; anything it cannot key is not memoized.
_BFD_PORTS = {3784, 4784, 6784, 7784}
_L4 = {6: {179}, 17: _BFD_PORTS}
_MEMO_ENTRIES = 4096
_MEMO_MAX_KEY = 2048  # bounds the memo to ~8 MiB; big UPDATEs rarely repeat anyway


def _classify(data: bytes) -> tuple[bool, bytes | None]:
    """(worth dissecting?, memo key or None) for an Ethernet frame."""
    if len(data) < 14:
        return True, None
    etype, off = int.from_bytes(data[12:14], "big"), 14
    while etype in (0x8100, 0x88A8) and len(data) >= off + 4:
        etype, off = int.from_bytes(data[off + 2:off + 4], "big"), off + 4
    key: bytes | None
    if etype == 0x88CC or etype <= 1500:  # LLDP, or 802.3 length + LLC/SNAP (CDP)
        key = b"L" + data[off - 2:]
    elif etype == 0x0800 and len(data) >= off + 20:
        ihl = (data[off] & 0x0F) * 4
        if ihl < 20 or len(data) < off + ihl:
            return True, None
        ip, l4 = data[off:off + ihl], off + ihl
        ipkey = ip[0:4] + ip[6:8] + ip[9:10] + ip[12:]
        if ip[9] == 89:
            key = b"O" + ipkey + data[l4:]
        else:
            ports = _L4.get(ip[9])
            if ports is None:
                return False, None
            if len(data) < l4 + 4:
                return True, None
            if (int.from_bytes(data[l4:l4 + 2], "big") not in ports
                    and int.from_bytes(data[l4 + 2:l4 + 4], "big") not in ports):
                return False, None
            if ip[9] == 6:
                if len(data) < l4 + 20:
                    return True, None
                key = b"T" + ipkey + data[l4:l4 + 4] + data[l4 + 12:l4 + 14] + data[l4 + 18:]
            else:
                key = b"U" + ipkey + data[l4:l4 + 6] + data[l4 + 8:]
    elif etype == 0x86DD and len(data) >= off + 40:
        proto, l4 = data[off + 6], off + 40
        ports = _L4.get(proto)
        if ports is None:  # only extension headers might still hide TCP/UDP
            return proto in (0, 43, 44, 50, 51, 60), None
        if len(data) < l4 + 4:
            return True, None
        return (int.from_bytes(data[l4:l4 + 2], "big") in ports
                or int.from_bytes(data[l4 + 2:l4 + 4], "big") in ports), None
    else:
        return etype != 0x0806, None
    return True, key if len(key) <= _MEMO_MAX_KEY else None


def _open_reader(path: str) -> Any:
    from scapy.error import Scapy_Exception
    from scapy.utils import RawPcapReader

    if os.path.isdir(path):
        raise CollectorError(f"{path}: is a directory, not a capture file")
    try:
        return RawPcapReader(path)
    except OSError as err:
        raise CollectorError(f"{path}: cannot open capture: {err.strerror or err}") from err
    except Scapy_Exception as err:
        raise CollectorError(f"{path}: not a pcap or pcapng capture: {err}") from err
    except Exception as err:  # scapy's header parsing on garbage
        raise CollectorError(f"{path}: unreadable capture header: {err}") from err


class Replay:
    """An iterator of events over one capture, with the :class:`ReplayReport` in ``.report``.

    The file is opened (and its header checked) at construction so an unreadable file fails
    at once; packets are read lazily as the iterator is consumed.
    """

    def __init__(self, path: str | os.PathLike[str], *, source: str | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 progress_interval: float = 1.0) -> None:
        self.path = os.fspath(path)
        self.source = source or Path(self.path).stem
        self.report = ReplayReport(self.path)
        self._progress = progress
        self._interval = progress_interval
        self._reader = _open_reader(self.path)
        try:
            self.report.bytes_total = os.path.getsize(self.path)
        except OSError:
            self.report.bytes_total = 0
        self.decoder = PacketDecoder(self.source)
        self.report.dropped = self.decoder.filter.dropped
        self.report.ignored = self.decoder.ignored
        self._events = self._run()

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        return next(self._events)

    def close(self) -> None:
        self._events.close()
        self._reader.close()

    def __enter__(self) -> Replay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _raw_file(self) -> Any:
        f = self._reader.f
        return getattr(f, "fileobj", None) or f  # the compressed stream of a .pcap.gz

    def _tell(self) -> int:
        try:
            return int(self._raw_file().tell())
        except (OSError, ValueError):
            return self.report.bytes_read

    def _run(self) -> Iterator[Event]:
        from scapy.config import conf

        rep, reader = self.report, self._reader
        is_ng = hasattr(reader, "interfaces")
        gz = self._raw_file() is not reader.f
        classes: dict[int, Any] = {}
        memo: OrderedDict[bytes, tuple[list[tuple[Any, Any]], str | None]] = OrderedDict()
        last_progress = _time.monotonic()
        pos = self._tell()
        try:
            while True:
                number = rep.packets + 1
                try:
                    record = next(reader)
                except StopIteration:
                    break
                except Exception as err:  # a record scapy cannot frame: cannot resync either
                    rep.error = f"packet {number}: unreadable record: {type(err).__name__}: {err}"
                    break
                pos = self._tell()
                rep.packets = number
                data, meta = record
                try:
                    if is_ng:
                        linktype = meta.linktype
                        ts = (None if meta.tshigh is None
                              else ((meta.tshigh << 32) | meta.tslow) / meta.tsresol)
                        short = None
                    else:
                        linktype = reader.linktype
                        ts = meta.sec + meta.usec / (1e9 if reader.nano else 1e6)
                        want = min(meta.caplen, 65535)
                        short = (f"truncated record ({len(data)} of {meta.caplen} bytes)"
                                 if len(data) < want else None)
                except Exception as err:
                    linktype, ts, short = None, None, f"bad record metadata: {err}"
                items: list[tuple[Any, Any]] = []
                reason = short
                if reason is None:
                    cls = classes.get(linktype)
                    if cls is None:
                        cls = classes[linktype] = conf.l2types.get(linktype, conf.raw_layer)
                    relevant, key = _classify(data) if linktype == 1 else (True, None)
                    if cls is conf.raw_layer:
                        reason = f"unsupported link type {linktype}"
                    elif key is not None and key in memo:
                        memo.move_to_end(key)
                        items, reason = memo[key]
                    elif relevant:
                        try:
                            items, reason = self.decoder.parse(cls(data))
                        except Exception as err:
                            reason = f"undissectable: {type(err).__name__}: {err}"
                        if key is not None:
                            memo[key] = (items, reason)
                            if len(memo) > _MEMO_ENTRIES:
                                memo.popitem(last=False)
                events = self.decoder.apply(number, ts, items)
                if reason:
                    rep.skipped.append((number, reason))
                rep.events += len(events)
                yield from events
                if self._progress is not None:
                    now = _time.monotonic()
                    if now - last_progress >= self._interval:
                        last_progress = now
                        rep.bytes_read = pos
                        self._progress(pos, rep.bytes_total)
            rep.bytes_read = pos
            if rep.error is None and not gz and pos < rep.bytes_total:
                rep.error = (f"packet {rep.packets + 1}: {rep.bytes_total - pos} bytes at offset "
                             f"{pos} are not a complete capture record (truncated or corrupt)")
            if rep.error and rep.packets == 0:
                raise CollectorError(f"{self.path}: no packet could be read: {rep.error}")
            if self._progress is not None:
                self._progress(rep.bytes_read, rep.bytes_total)
        finally:
            reader.close()


def replay(path: str | os.PathLike[str], *, source: str | None = None,
           progress: Callable[[int, int], None] | None = None) -> Replay:
    """Stream the events of a pcap/pcapng capture. ``source`` names the capture point (default:
    the file's stem); ``progress(bytes_read, bytes_total)`` is called about once a second.
    Raises only :class:`CollectorError`, and only when nothing at all could be read."""
    return Replay(path, source=source, progress=progress)
