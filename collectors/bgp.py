"""BGP sessions and IPv4 routes from TCP port 179; see :mod:`collectors.pcap` for the facts.

There is no TCP reassembly: a segment is decoded when it starts on a BGP message boundary
(scapy's dissector splits several messages in one segment). A segment that does not is
reported as skipped rather than guessed at. MP-BGP (IPv6/VPN NLRI in MP_REACH) is not decoded.

Each speaker's AS and hold time come from its OPEN (the four-octet AS capability when present),
so session and route events name the local and peer AS once the OPENs were captured. A session
whose speaker sends nothing for the negotiated hold time goes down as its peer's hold timer
would take it down; without an OPEN in the capture the hold time is unknown and never expires.
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
    from scapy.contrib.bgp import (
        BGPCapFourBytesASN,
        BGPHeader,
        BGPKeepAlive,
        BGPNotification,
        BGPOpen,
        BGPUpdate,
    )
finally:
    _log.setLevel(_level)

__all__ = ["BgpTracker"]

_FIN, _RST = 0x01, 0x04
_NAMES = {1: "open", 2: "update", 3: "notification", 4: "keepalive", 5: "route-refresh"}
_AS_TRANS = 23456  # RFC 6793: the two-octet stand-in for a four-octet AS

# RFC 4271 section 4.5 error codes; Cease subcodes from RFC 4486, 8538 and 9384
_ERRORS = {1: "Message Header Error", 2: "OPEN Message Error", 3: "UPDATE Message Error",
           4: "Hold Timer Expired", 5: "Finite State Machine Error", 6: "Cease",
           7: "ROUTE-REFRESH Message Error"}
_CEASE = {1: "Maximum Number of Prefixes Reached", 2: "Administrative Shutdown",
          3: "Peer De-configured", 4: "Administrative Reset", 5: "Connection Rejected",
          6: "Other Configuration Change", 7: "Connection Collision Resolution",
          8: "Out of Resources", 9: "Hard Reset", 10: "BFD Down"}


def notification_reason(code: int, subcode: int, data: bytes = b"") -> dict[str, Any]:
    """The NOTIFICATION's reason in words, with the RFC 8203 shutdown communication if any."""
    name = _ERRORS.get(code, f"error {code}")
    if code == 6 and subcode in _CEASE:
        name += f": {_CEASE[subcode]}"
    elif subcode:
        name += f" (subcode {subcode})"
    detail: dict[str, Any] = {"reason": name, "error_code": code, "error_subcode": subcode}
    if code == 6 and subcode in (2, 4) and data and 0 < data[0] <= len(data) - 1:
        detail["communication"] = data[1:1 + data[0]].decode("utf-8", "replace")
    return detail


def _open_fields(layer: Any) -> tuple[int, int]:
    """(AS, hold time) of an OPEN; the four-octet AS capability wins over AS_TRANS."""
    asn = int(layer.my_as)
    for param in layer.opt_params or []:
        cap = getattr(param, "param_value", None)
        if isinstance(cap, BGPCapFourBytesASN):
            asn = int(cap.asn)
    return asn, int(layer.hold_time)


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
        self.asn: dict[str, int] = {}  # speaker -> AS, from its OPEN
        self.hold_time: dict[str, int] = {}  # speaker -> hold time its OPEN proposed
        self.alive = SoftTable()  # session(@A, B) until A's silence exceeds the hold time

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
            elif isinstance(layer, BGPOpen):
                if not msgs or msgs[-1][0] != "open":
                    raise Malformed("BGP OPEN without header")
                msgs[-1] = ("open", *_open_fields(layer))
            elif isinstance(layer, BGPUpdate):
                if not msgs or msgs[-1][0] != "update":
                    raise Malformed("BGP UPDATE without header")
                withdrawn = tuple(str(r.prefix) for r in layer.withdrawn_routes)
                nlri = tuple(str(r.prefix) for r in layer.nlri)
                msgs[-1] = ("update", withdrawn, nlri)
            elif isinstance(layer, BGPNotification):
                if not msgs or msgs[-1][0] != "notification":
                    raise Malformed("BGP NOTIFICATION without header")
                msgs[-1] = ("notification", int(layer.error_code), int(layer.error_subcode),
                            bytes(layer.data or b""))
            layer = layer.payload
        for m in msgs:
            if m[0] == "update" and len(m) == 1:
                raise Malformed("truncated BGP UPDATE")
        return ends[0], ends[1], closing, tuple(msgs)

    def expire(self, now: float) -> list[Observation]:
        out = []
        for deadline, fact, _ in self.alive.expire(now):
            a, b = (str(x) for x in fact.args)
            out.extend(self._down(deadline, a, b, {"reason": "hold time expired",
                                                   "silent": a}))
        return out

    def _as_detail(self, local: str, peer: str) -> dict[str, Any]:
        return {k: self.asn[ip] for k, ip in (("local_as", local), ("peer_as", peer))
                if ip in self.asn}

    def _hold(self, a: str, b: str) -> int | None:
        """The session's hold time: the smaller of the two OPENs' (RFC 4271 4.2), 0 for none."""
        known = [self.hold_time[x] for x in (a, b) if x in self.hold_time]
        return min(known) if known else None

    def apply(self, item: tuple[str, str, bool, tuple[tuple[Any, ...], ...]],
              time: float) -> list[Observation]:
        src, dst, closing, msgs = item
        out: list[Observation] = []
        for msg in msgs:
            kind = msg[0]
            if kind == "open" and len(msg) == 3:
                self.asn[src], self.hold_time[src] = msg[1], msg[2]
            # An OPEN only proposes the session; a KEEPALIVE or UPDATE means it is Established
            # (RFC 4271 8.2.2), by which time both OPENs, and so both AS numbers, were seen.
            if kind in ("keepalive", "update"):
                out.append(Observation(time, "+", EventKind.SESSION_UP,
                                       Fact("session", (src, dst)),
                                       {"message": kind, **self._as_detail(src, dst)}))
                hold = self._hold(src, dst)
                if hold:  # 0: the speakers agreed to send no KEEPALIVEs
                    self.alive.hold(Fact("session", (src, dst)), "hold", time + hold)
            if kind == "update":
                _, withdrawn, nlri = msg
                for prefix in withdrawn:
                    out.extend(self._withdraw(time, src, dst, prefix, "withdrawn"))
                for prefix in nlri:
                    fact = Fact("route", (src, prefix))
                    self.routes.hold(fact, dst)
                    self.learnt.setdefault((src, dst), set()).add(prefix)
                    out.append(Observation(time, "+", EventKind.ROUTE_ANNOUNCED, fact,
                                           {"to": dst, **self._as_detail(src, dst)}))
            elif kind == "notification":
                _, code, subcode, data = msg
                out.extend(self._down(time, src, dst, {**notification_reason(code, subcode,
                                                                             data),
                                                       "sent_by": src}))
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
                            {"to": receiver, "reason": reason,
                             **self._as_detail(speaker, receiver)})]

    def _down(self, time: float, a: str, b: str, detail: dict[str, Any]) -> list[Observation]:
        out = []
        for x, y in ((a, b), (b, a)):
            self.alive.release(Fact("session", (x, y)), "hold")
            out.append(Observation(time, "-", EventKind.SESSION_DOWN, Fact("session", (x, y)),
                                   {**detail, **self._as_detail(x, y)}))
        for speaker, receiver in ((a, b), (b, a)):
            for prefix in sorted(self.learnt.pop((speaker, receiver), set())):
                out.extend(self._withdraw(time, speaker, receiver, prefix, "session down"))
        return out
