"""BFD control packets (RFC 5880, UDP 3784/4784/...) as ``bfd(@S, D)`` facts.

The state field is the sender's view of the session, so it maps directly onto an assertion or
retraction; Init is a transition in progress and says nothing either way. Detection-time expiry
(silence) is not modelled: a BFD session that dies without a Down packet stays up in the log.
"""

from __future__ import annotations

from typing import Any

from scapy.contrib.bfd import BFD

from collectors.pcap import Observation
from netrules.eventlog.schema import EventKind
from netrules.facts import Fact

__all__ = ["BfdTracker"]

_STATE = {0: "AdminDown", 1: "Down", 2: "Init", 3: "Up"}


class BfdTracker:
    """Stateless: the TransitionFilter alone edge-triggers the periodic control packets."""

    def parse(self, pkt: Any) -> tuple[str, str, int, int] | None:
        bfd = pkt.getlayer(BFD)
        if bfd is None:
            return None
        for name in ("IP", "IPv6"):
            if pkt.haslayer(name):
                return str(pkt[name].src), str(pkt[name].dst), int(bfd.sta), int(bfd.diag)
        return None

    def expire(self, now: float) -> list[Observation]:
        return []

    def apply(self, item: tuple[str, str, int, int], time: float) -> list[Observation]:
        src, dst, state, diag = item
        if state == 2:
            return []
        up = state == 3
        return [Observation(time, "+" if up else "-",
                            EventKind.BFD_UP if up else EventKind.BFD_DOWN,
                            Fact("bfd", (src, dst)), {"state": _STATE[state], "diag": diag})]
