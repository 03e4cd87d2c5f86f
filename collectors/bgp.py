"""BGP sessions and IPv4 routes from TCP port 179; see :mod:`collectors.pcap` for the facts.

There is no TCP reassembly: a segment is decoded when it starts on a BGP message boundary
(scapy's dissector splits several messages in one segment). A segment that does not is
reported as skipped rather than guessed at. MP-BGP (IPv6/VPN NLRI in MP_REACH) is not decoded.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from scapy.layers.inet import TCP
from scapy.packet import NoPayload, Padding, Raw

from collectors.pcap import Malformed, Observation, SoftTable
from netrules.eventlog.schema import EventKind
from netrules.facts import Fact

_log = logging.getLogger("scapy.runtime")
_level = _log.level
_log.setLevel(logging.ERROR)  # bgp.py logs its ASN-size setting at import; not our user's news
try:
    from scapy.contrib.bgp import BGPHeader, BGPKeepAlive, BGPNotification, BGPUpdate
finally:
    _log.setLevel(_level)

__all__ = ["BgpTracker"]

_FIN, _RST = 0x01, 0x04
_NAMES = {1: "open", 2: "update", 3: "notification", 4: "keepalive", 5: "route-refresh"}


def _endpoints(pkt: Any) -> tuple[str, str] | None:
    for name in ("IP", "IPv6"):
        if pkt.haslayer(name):
            ip = pkt[name]
            return str(ip.src), str(ip.dst)
    return None


class BgpTracker:
    """Session liveness per speaker and the routes each speaker announced over each session."""

    def __init__(self, ignored: Counter[str]) -> None:
        self.ignored = ignored
        self.routes = SoftTable()  # route(@A, P) held by the receivers A announced it to
        self.learnt: dict[tuple[str, str], set[str]] = {}  # (speaker, receiver) -> prefixes

    def parse(self, pkt: Any) -> tuple[str, str, bool, tuple[tuple[Any, ...], ...]] | None:
        tcp = pkt.getlayer(TCP)
        if tcp is None or 179 not in (tcp.sport, tcp.dport):
            return None
        ends = _endpoints(pkt)
        if ends is None:
            return None
        closing = bool(int(tcp.flags) & (_FIN | _RST))
        msgs: list[tuple[Any, ...]] = []
        layer = tcp.payload
        while not isinstance(layer, NoPayload | Padding):
            if isinstance(layer, Raw):
                raise Malformed("BGP segment not on a message boundary (no TCP reassembly)")
            if isinstance(layer, BGPHeader | BGPKeepAlive):
                msgs.append((_NAMES.get(int(layer.type), "unknown"),))
            elif isinstance(layer, BGPUpdate):
                if not msgs or msgs[-1][0] != "update":
                    raise Malformed("BGP UPDATE without header")
                withdrawn = tuple(str(r.prefix) for r in layer.withdrawn_routes)
                nlri = tuple(str(r.prefix) for r in layer.nlri)
                msgs[-1] = ("update", withdrawn, nlri)
            elif isinstance(layer, BGPNotification):
                msgs[-1] = ("notification", int(layer.error_code), int(layer.error_subcode))
            layer = layer.payload
        for m in msgs:
            if m[0] == "update" and len(m) == 1:
                raise Malformed("truncated BGP UPDATE")
        return ends[0], ends[1], closing, tuple(msgs)

    def expire(self, now: float) -> list[Observation]:
        return []

    def apply(self, item: tuple[str, str, bool, tuple[tuple[Any, ...], ...]],
              time: float) -> list[Observation]:
        src, dst, closing, msgs = item
        out: list[Observation] = []
        for msg in msgs:
            kind = msg[0]
            if kind in ("open", "keepalive", "update"):
                out.append(Observation(time, "+", EventKind.SESSION_UP,
                                       Fact("session", (src, dst)), {"message": kind}))
            if kind == "update":
                _, withdrawn, nlri = msg
                for prefix in withdrawn:
                    out.extend(self._withdraw(time, src, dst, prefix, "withdrawn"))
                for prefix in nlri:
                    fact = Fact("route", (src, prefix))
                    self.routes.hold(fact, dst)
                    self.learnt.setdefault((src, dst), set()).add(prefix)
                    out.append(Observation(time, "+", EventKind.ROUTE_ANNOUNCED, fact,
                                           {"to": dst}))
            elif kind == "notification":
                out.extend(self._down(time, src, dst, {"reason": "notification",
                                                       "error_code": msg[1],
                                                       "error_subcode": msg[2]}))
        if closing:
            out.extend(self._down(time, src, dst, {"reason": "tcp close"}))
        return out

    def _withdraw(self, time: float, speaker: str, receiver: str, prefix: str,
                  reason: str) -> list[Observation]:
        self.learnt.get((speaker, receiver), set()).discard(prefix)
        fact = Fact("route", (speaker, prefix))
        if not self.routes.release(fact, receiver):
            return []  # still announced over another session
        return [Observation(time, "-", EventKind.ROUTE_WITHDRAWN, fact,
                            {"to": receiver, "reason": reason})]

    def _down(self, time: float, a: str, b: str, detail: dict[str, Any]) -> list[Observation]:
        out = [Observation(time, "-", EventKind.SESSION_DOWN, Fact("session", (x, y)), detail)
               for x, y in ((a, b), (b, a))]
        for speaker, receiver in ((a, b), (b, a)):
            for prefix in sorted(self.learnt.pop((speaker, receiver), set())):
                out.extend(self._withdraw(time, speaker, receiver, prefix, "session down"))
        return out
