"""OSPFv2 Hellos (adjacencies), Router- and Network-LSAs (links); see :mod:`collectors.pcap`.

Parsing reads scapy's ``scapy.contrib.ospf`` layers into plain tuples; applying them is pure
Python, so a damaged packet is rejected whole before it can touch the state.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from scapy.contrib.ospf import (
    OSPF_Hdr,
    OSPF_Hello,
    OSPF_LSUpd,
    OSPF_Network_LSA,
    OSPF_Router_LSA,
)

from collectors.pcap import Malformed, Observation, SoftTable
from netrules.eventlog.schema import EventKind
from netrules.facts import Fact

__all__ = ["OspfTracker"]

MAX_AGE = 3600  # RFC 2328 MaxAge: an LSA this old is being flushed from the domain
DO_NOT_AGE = 0x8000  # RFC 1793 / 4136: the top bit of LS age; the other 15 bits are the age


def _flushed(age: int) -> bool:
    """MaxAge, with or without DoNotAge (RFC 2328 12.1.1, RFC 4136): a DoNotAge LSA never ages
    out, so 32769 is age 1, not "older than MaxAge"."""
    return (age & ~DO_NOT_AGE) >= MAX_AGE


def _signed(seq: int) -> int:
    """LS sequence numbers are signed 32-bit (0x80000001 is the oldest); compare them so."""
    return seq - (1 << 32) if seq >= 1 << 31 else seq


def _masklen(mask: str) -> int:
    return sum(bin(int(octet)).count("1") for octet in mask.split("."))


def _link_neighbour(kind: int, link_id: str, data: str) -> str:
    if kind == 3:  # stub: network number and mask
        return f"{link_id}/{_masklen(data)}"
    return link_id  # p2p/virtual: neighbour router ID; transit: the DR's interface address


class OspfTracker:
    """Hello neighbour lists with dead-interval expiry, and the newest Router-LSA per router."""

    def __init__(self, ignored: Counter[str]) -> None:
        self.ignored = ignored
        self.adjacencies = SoftTable()
        self.listed: dict[tuple[str, str], set[str]] = {}  # (router, interface address) -> nbrs
        self.lsas: dict[str, tuple[int, set[Fact]]] = {}  # adv router -> (seq, links)
        # transit network (the DR's interface address) -> (seq, attached routers); and each
        # router's cost to the transit networks its Router-LSA lists
        self.networks: dict[str, tuple[int, tuple[str, ...]]] = {}
        self.transit_cost: dict[str, dict[str, int]] = {}
        self.net_links: dict[str, set[Fact]] = {}
        self.links = SoftTable()  # link facts, held by "router:R" and/or "network:N"

    def parse(self, pkt: Any) -> tuple[str, Any] | None:
        hdr = pkt.getlayer(OSPF_Hdr)
        if hdr is None:
            return None
        if hdr.version != 2:
            return None
        router = str(hdr.src)
        if hdr.type == 1:
            hello = hdr.getlayer(OSPF_Hello)
            if hello is None:
                raise Malformed("truncated OSPF Hello")
            iface = str(pkt["IP"].src) if pkt.haslayer("IP") else router
            return ("hello", (router, iface, tuple(str(n) for n in hello.neighbors),
                              int(hello.deadinterval)))
        if hdr.type == 4:
            upd = hdr.getlayer(OSPF_LSUpd)
            if upd is None:
                raise Malformed("truncated OSPF LS Update")
            lsas: list[tuple[Any, ...]] = []
            for lsa in upd.lsalist:
                if isinstance(lsa, OSPF_Router_LSA):
                    links = tuple((int(x.type), str(x.id), str(x.data), int(x.metric))
                                  for x in lsa.linklist)
                    lsas.append(("router", str(lsa.adrouter), _signed(int(lsa.seq)),
                                 int(lsa.age), links))
                elif isinstance(lsa, OSPF_Network_LSA):
                    lsas.append(("network", str(lsa.id), _signed(int(lsa.seq)), int(lsa.age),
                                 tuple(str(r) for r in lsa.routerlist)))
            return ("lsupd", tuple(lsas))
        return None

    def expire(self, now: float) -> list[Observation]:
        out = []
        for deadline, fact, iface in self.adjacencies.expire(now):
            router, nbr = fact.args
            self.listed.get((str(router), str(iface)), set()).discard(str(nbr))
            out.append(Observation(deadline, "-", EventKind.NEIGHBOUR_EXPIRED, fact,
                                   {"reason": "dead interval", "interface": iface}))
        return out

    def apply(self, item: tuple[str, Any], time: float) -> list[Observation]:
        what, body = item
        if what == "hello":
            return self._hello(time, *body)
        out: list[Observation] = []
        for kind, *lsa in body:
            if kind == "router":
                out.extend(self._router_lsa(time, *lsa))
            else:
                out.extend(self._network_lsa(time, *lsa))
        return out

    def _hello(self, time: float, router: str, iface: str, nbrs: tuple[str, ...],
               dead: int) -> list[Observation]:
        out = []
        now = set(nbrs)
        for gone in sorted(self.listed.get((router, iface), set()) - now):
            fact = Fact("adjacency", (router, gone))
            if self.adjacencies.release(fact, iface):
                out.append(Observation(time, "-", EventKind.NEIGHBOUR_EXPIRED, fact,
                                       {"reason": "dropped from hello", "interface": iface}))
        self.listed[(router, iface)] = now
        for nbr in nbrs:
            fact = Fact("adjacency", (router, nbr))
            self.adjacencies.hold(fact, iface, time + dead)
            out.append(Observation(time, "+", EventKind.NEIGHBOUR_SEEN, fact,
                                   {"interface": iface, "dead_interval": dead}))
        return out

    def _router_lsa(self, time: float, adv: str, seq: int, age: int,
                    links: tuple[tuple[int, str, str, int], ...]) -> list[Observation]:
        old_seq, old = self.lsas.get(adv, (None, set()))
        if old_seq is not None and seq <= old_seq:
            self.ignored["stale_lsa"] += 1
            return []
        new: dict[Fact, int] = {}
        costs: dict[str, int] = {}
        if not _flushed(age):
            for kind, link_id, data, metric in links:
                new[Fact("link", (adv, _link_neighbour(kind, link_id, data), metric))] = kind
                if kind == 2:  # transit: link_id is the DR's interface address
                    costs[link_id] = metric
        self.lsas[adv] = (seq, set(new))
        changed = set(costs) ^ set(self.transit_cost.get(adv, {})) | {
            n for n, c in costs.items() if self.transit_cost.get(adv, {}).get(n) != c}
        self.transit_cost[adv] = costs
        detail = {"lsa_seq": seq & 0xFFFFFFFF}
        out = self._swap(time, f"router:{adv}", old, new, detail)
        for net in sorted(changed & self.networks.keys()):
            out += self._network_links(time, net)
        return out

    def _network_lsa(self, time: float, net: str, seq: int, age: int,
                     attached: tuple[str, ...]) -> list[Observation]:
        """A transit network links every pair of its attached routers, both ways (the graph
        RFC 2328's SPF walks: router -> network at the router's cost, network -> router 0)."""
        old_seq, _ = self.networks.get(net, (None, ()))
        if old_seq is not None and seq <= old_seq:
            self.ignored["stale_lsa"] += 1
            return []
        self.networks[net] = (seq, () if _flushed(age) else attached)
        return self._network_links(time, net)

    def _network_links(self, time: float, net: str) -> list[Observation]:
        seq, attached = self.networks[net]
        new = {}
        for a in attached:
            for b in attached:
                if a != b:  # cost: a's to the network, from a's Router-LSA (1 until seen)
                    new[Fact("link", (a, b, self.transit_cost.get(a, {}).get(net, 1)))] = 2
        old = self.net_links.get(net, set())
        self.net_links[net] = set(new)
        return self._swap(time, f"network:{net}", old, new,
                          {"lsa_seq": seq & 0xFFFFFFFF, "network": net})

    def _swap(self, time: float, holder: str, old: set[Fact], new: dict[Fact, int],
              detail: dict[str, Any]) -> list[Observation]:
        """Replace ``holder``'s links: a link stays up while a Router-LSA or a Network-LSA
        still gives it (the two can name the same pair of routers)."""
        out = []
        for f in sorted(old - new.keys(), key=Fact.key):
            if self.links.release(f, holder):
                out.append(Observation(time, "-", EventKind.LINK_DOWN, f, detail))
        for f in sorted(new.keys() - old, key=Fact.key):
            if not self.links.holds(f):
                out.append(Observation(time, "+", EventKind.LINK_UP, f,
                                       {**detail, "link_type": new[f]}))
            self.links.hold(f, holder)
        return out
