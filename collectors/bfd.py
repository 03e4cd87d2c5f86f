"""BFD control packets (RFC 5880, UDP 3784/4784/...) as ``bfd(@S, D)`` facts.

The state field is the sender's view of the session, so it maps directly onto an assertion or
retraction; Init is a transition in progress and says nothing either way. A session whose
sender falls silent goes down after its detection time (RFC 5880 section 6.8.4: the sender's
Detect Mult times the larger of its Desired Min TX and the receiver's Required Min RX), as the
receiver would declare it down.
"""

from __future__ import annotations

from typing import Any

from scapy.contrib.bfd import BFD

from collectors.pcap import Observation, SoftTable
from netrules.eventlog.schema import EventKind
from netrules.facts import Fact

__all__ = ["BfdTracker"]

_STATE = {0: "AdminDown", 1: "Down", 2: "Init", 3: "Up"}


class BfdTracker:
    """The TransitionFilter edge-triggers the periodic control packets; a soft table holds
    each Up session until its detection time passes without a packet."""

    def __init__(self) -> None:
        self.alive = SoftTable()
        self.min_rx: dict[tuple[str, str], int] = {}  # (sender, receiver) -> Required Min RX

    def parse(self, pkt: Any) -> tuple[str, str, int, int, int, int, int] | None:
        bfd = pkt.getlayer(BFD)
        if bfd is None:
            return None
        for name in ("IP", "IPv6"):
            if pkt.haslayer(name):
                return (str(pkt[name].src), str(pkt[name].dst), int(bfd.sta), int(bfd.diag),
                        int(bfd.detect_mult), int(bfd.min_tx_interval),
                        int(bfd.min_rx_interval))
        return None

    def expire(self, now: float) -> list[Observation]:
        return [Observation(deadline, "-", EventKind.BFD_DOWN, fact,
                            {"reason": "detection time expired"})
                for deadline, fact, _ in self.alive.expire(now)]

    def apply(self, item: tuple[str, str, int, int, int, int, int],
              time: float) -> list[Observation]:
        src, dst, state, diag, mult, min_tx, min_rx = item
        self.min_rx[(src, dst)] = min_rx
        if state == 2:
            return []
        up = state == 3
        fact = Fact("bfd", (src, dst))
        if up:
            # intervals are in microseconds; the peer's Required Min RX once it has spoken
            interval = max(min_tx, self.min_rx.get((dst, src), 0))
            if mult and interval:
                self.alive.hold(fact, "detect", time + mult * interval / 1e6)
        else:
            self.alive.release(fact, "detect")
        return [Observation(time, "+" if up else "-",
                            EventKind.BFD_UP if up else EventKind.BFD_DOWN,
                            fact, {"state": _STATE[state], "diag": diag})]
