"""LLDP and CDP neighbour advertisements; see :mod:`collectors.pcap` for the facts.

Both protocols are soft state: an advertisement is valid for its TTL (LLDP) or holdtime (CDP),
so a neighbour that stops advertising expires by capture time, like an OSPF dead interval.
"""

from __future__ import annotations

from typing import Any

from scapy.contrib.cdp import CDPMsgDeviceID, CDPMsgPortID, CDPv2_HDR
from scapy.contrib.lldp import (
    LLDPDU,
    LLDPDUChassisID,
    LLDPDUPortID,
    LLDPDUSystemName,
    LLDPDUTimeToLive,
)

from collectors.pcap import Malformed, Observation, SoftTable
from netrules.eventlog.schema import EventKind
from netrules.facts import Fact

__all__ = ["L2Tracker"]


def _text(value: Any) -> str:
    """TLV values are bytes or already-rendered strings (MACs, addresses); make them names."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value).strip("\x00 ")


class L2Tracker:
    """Neighbour advertisements of both protocols, held until their TTL runs out."""

    def __init__(self, observer: str) -> None:
        self.observer = observer
        self.table = SoftTable()

    def parse(self, pkt: Any) -> tuple[str, str, str, int] | None:
        if pkt.haslayer(LLDPDU):
            chassis = pkt.getlayer(LLDPDUChassisID)
            port = pkt.getlayer(LLDPDUPortID)
            ttl = pkt.getlayer(LLDPDUTimeToLive)
            if chassis is None or port is None or ttl is None:
                raise Malformed("LLDPDU without chassis ID, port ID and TTL")
            name = pkt.getlayer(LLDPDUSystemName)
            device = _text(name.system_name) if name is not None else ""
            return "lldp", device or _text(chassis.id), _text(port.id), int(ttl.ttl)
        cdp = pkt.getlayer(CDPv2_HDR)
        if cdp is not None:
            device = port_id = None
            for msg in cdp.msg:
                if isinstance(msg, CDPMsgDeviceID):
                    device = _text(msg.val)
                elif isinstance(msg, CDPMsgPortID):
                    port_id = _text(msg.iface)
            if not device or port_id is None:
                raise Malformed("CDP packet without device ID and port ID")
            return "cdp", device, port_id, int(cdp.ttl)
        return None

    def expire(self, now: float) -> list[Observation]:
        return [Observation(deadline, "-", EventKind.NEIGHBOUR_EXPIRED, fact,
                            {"protocol": proto, "reason": "ttl"})
                for deadline, fact, proto in self.table.expire(now)]

    def apply(self, item: tuple[str, str, str, int], time: float) -> list[Observation]:
        proto, device, port, ttl = item
        fact = Fact("neighbour", (device, self.observer, port))
        if ttl == 0:  # LLDP shutdown PDU: the advertiser withdraws itself now
            if not self.table.release(fact, proto):
                return []  # the other protocol still advertises it
            return [Observation(time, "-", EventKind.NEIGHBOUR_EXPIRED, fact,
                                {"protocol": proto, "reason": "shutdown"})]
        self.table.hold(fact, proto, time + ttl)
        return [Observation(time, "+", EventKind.NEIGHBOUR_SEEN, fact,
                            {"protocol": proto, "ttl": ttl})]
