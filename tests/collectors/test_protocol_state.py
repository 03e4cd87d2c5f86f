"""OSPF DoNotAge and Network-LSAs, BGP AS numbers, NOTIFICATION reasons and hold time, BFD
detection time, and timers run without packets; each on a capture built with scapy."""

from __future__ import annotations

from pathlib import Path

from scapy.contrib.bgp import (
    BGPCapFourBytesASN,
    BGPHeader,
    BGPKeepAlive,
    BGPNLRI_IPv4,
    BGPNotification,
    BGPOpen,
    BGPOptParam,
    BGPUpdate,
)
from scapy.contrib.ospf import OSPF_Hdr, OSPF_Link, OSPF_LSUpd, OSPF_Network_LSA, OSPF_Router_LSA
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from collectors.pcap import PacketDecoder, replay
from netrules.eventlog.schema import EventKind

from .test_pcap import MAC1, MAC2, bfd, bgp, hello, triples, write

K = EventKind


def lsupd(*lsas):
    return (Ether(src=MAC1, dst=MAC2) / IP(src="10.0.0.1", dst="224.0.0.5", proto=89)
            / OSPF_Hdr(src="1.1.1.1", type=4) / OSPF_LSUpd(lsalist=list(lsas)))


def rlsa(adv: str, seq: int, links: list[tuple[int, str, str, int]], age: int = 1):
    return OSPF_Router_LSA(id=adv, adrouter=adv, seq=seq, age=age, linklist=[
        OSPF_Link(type=t, id=i, data=d, metric=m) for t, i, d, m in links])


def nlsa(dr_addr: str, dr: str, seq: int, routers: list[str], age: int = 1):
    return OSPF_Network_LSA(id=dr_addr, adrouter=dr, seq=seq, age=age, mask="255.255.255.0",
                            routerlist=routers)


def test_do_not_age_router_lsas_keep_their_links(tmp_path: Path) -> None:
    """RFC 4136: age 32769 is DoNotAge + age 1; only MaxAge (with or without the bit) flushes."""
    p2p = [(1, "2.2.2.2", "10.0.0.1", 5)]
    cap = write(tmp_path / "dna.pcap", [
        (1.0, lsupd(rlsa("1.1.1.1", 0x80000001, p2p, age=0x8000 | 1))),
        (2.0, lsupd(rlsa("3.3.3.3", 0x80000001, [(4, "4.4.4.4", "0.0.0.9", 7)], age=0xFFFF
                         & (0x8000 | 3599)))),
        (3.0, lsupd(rlsa("1.1.1.1", 0x80000002, p2p, age=0x8000 | 3600))),  # DoNotAge+MaxAge
        (4.0, lsupd(rlsa("3.3.3.3", 0x80000002, [(4, "4.4.4.4", "0.0.0.9", 7)], age=3600))),
    ])
    assert triples(replay(cap)) == [
        ("+", K.LINK_UP, 'link(@"1.1.1.1","2.2.2.2",5)'),
        ("+", K.LINK_UP, 'link(@"3.3.3.3","4.4.4.4",7)'),  # a virtual link, DoNotAge
        ("-", K.LINK_DOWN, 'link(@"1.1.1.1","2.2.2.2",5)'),
        ("-", K.LINK_DOWN, 'link(@"3.3.3.3","4.4.4.4",7)'),
    ]


def test_network_lsa_links_every_pair_on_the_transit_network(tmp_path: Path) -> None:
    lan, dr = "10.9.0.1", "1.1.1.1"  # the DR's interface address names the network
    cap = write(tmp_path / "net.pcap", [
        (1.0, lsupd(rlsa("2.2.2.2", 0x80000001, [(2, lan, "10.9.0.2", 4)]))),
        (2.0, lsupd(nlsa(lan, dr, 0x80000001, ["1.1.1.1", "2.2.2.2", "3.3.3.3"]))),
        (3.0, lsupd(nlsa(lan, dr, 0x80000002, ["1.1.1.1", "2.2.2.2"]))),  # 3.3.3.3 left
        (4.0, lsupd(nlsa(lan, dr, 0x80000001, ["1.1.1.1"]))),  # older: ignored
    ])
    r = replay(cap)
    got = triples(r)
    assert got[0] == ("+", K.LINK_UP, 'link(@"2.2.2.2","10.9.0.1",4)')  # transit, as before
    pairs = {(a, b) for a in ("1.1.1.1", "2.2.2.2", "3.3.3.3")
             for b in ("1.1.1.1", "2.2.2.2", "3.3.3.3") if a != b}
    up = {tuple(f.split('"')[1::2]) for op, _, f in got[1:7]}
    assert up == pairs and all(op == "+" for op, _, _ in got[1:7])
    # a router's cost to the network comes from its own Router-LSA (1 until one is seen)
    assert ("+", K.LINK_UP, 'link(@"2.2.2.2","3.3.3.3",4)') in got
    assert ("+", K.LINK_UP, 'link(@"3.3.3.3","1.1.1.1",1)') in got
    assert sorted(got[7:]) == sorted([
        ("-", K.LINK_DOWN, 'link(@"1.1.1.1","3.3.3.3",1)'),
        ("-", K.LINK_DOWN, 'link(@"2.2.2.2","3.3.3.3",4)'),
        ("-", K.LINK_DOWN, 'link(@"3.3.3.3","1.1.1.1",1)'),
        ("-", K.LINK_DOWN, 'link(@"3.3.3.3","2.2.2.2",1)'),
    ])
    assert r.report.ignored["stale_lsa"] == 1


def _opens(a: str, b: str, hold: int = 90):
    return [
        (1.0, bgp(a, b, BGPHeader(type=1) / BGPOpen(my_as=65001, hold_time=hold,
                                                      bgp_id="1.1.1.1"))),
        (1.1, bgp(b, a, BGPHeader(type=1) / BGPOpen(
            my_as=23456, hold_time=hold, bgp_id="2.2.2.2",
            opt_params=[BGPOptParam(param_value=BGPCapFourBytesASN(asn=4200000002))]))),
        (1.2, bgp(a, b, BGPKeepAlive())),  # Established
        (1.3, bgp(b, a, BGPKeepAlive())),
    ]


def test_bgp_events_carry_local_and_peer_as(tmp_path: Path) -> None:
    a, b = "10.0.0.1", "10.0.0.2"
    cap = write(tmp_path / "as.pcap", [
        *_opens(a, b),
        (2.0, bgp(a, b, BGPHeader(type=2) / BGPUpdate(nlri=[BGPNLRI_IPv4(prefix="10.1.0.0/16")]))),
        (3.0, bgp(a, b, flags="FA")),
    ])
    events = list(replay(cap))
    detail = {(e.op, str(e.fact)): e.detail for e in events}
    assert detail[("+", 'session(@"10.0.0.1","10.0.0.2")')]["local_as"] == 65001
    assert detail[("+", 'session(@"10.0.0.1","10.0.0.2")')]["peer_as"] == 4200000002
    assert detail[("+", 'session(@"10.0.0.2","10.0.0.1")')]["local_as"] == 4200000002
    route = detail[("+", 'route(@"10.0.0.1","10.1.0.0/16")')]
    assert (route["local_as"], route["peer_as"]) == (65001, 4200000002)
    down = detail[("-", 'session(@"10.0.0.2","10.0.0.1")')]
    assert (down["local_as"], down["peer_as"]) == (4200000002, 65001)


def test_cease_notification_ends_the_session_with_its_reason(tmp_path: Path) -> None:
    a, b = "10.0.0.1", "10.0.0.2"
    cap = write(tmp_path / "cease.pcap", [
        *_opens(a, b),
        (2.0, bgp(a, b, BGPHeader(type=2) / BGPUpdate(nlri=[BGPNLRI_IPv4(prefix="10.1.0.0/16")]))),
        (3.0, bgp(b, a, BGPHeader(type=3) / BGPNotification(
            error_code=6, error_subcode=2, data=b"\x0dmaintenance 1"))),
        (4.0, bgp(a, b, BGPKeepAlive())),  # back up
        (5.0, bgp(a, b, BGPHeader(type=3) / BGPNotification(error_code=4, error_subcode=0),
                  flags="FPA")),  # another reason, with the FIN in the same segment
    ])
    events = list(replay(cap))
    downs = [(str(e.fact), e.detail) for e in events if e.kind == K.SESSION_DOWN]
    assert [f for f, _ in downs] == ['session(@"10.0.0.2","10.0.0.1")',
                                     'session(@"10.0.0.1","10.0.0.2")',
                                     'session(@"10.0.0.1","10.0.0.2")']
    first = downs[0][1]
    assert first["reason"] == "Cease: Administrative Shutdown"
    assert first["communication"] == "maintenance 1" and first["sent_by"] == b
    assert downs[2][1]["reason"] == "Hold Timer Expired"
    assert ("-", K.ROUTE_WITHDRAWN, 'route(@"10.0.0.1","10.1.0.0/16")') in triples(events)


def test_bgp_hold_time_expires_a_silent_session(tmp_path: Path) -> None:
    a, b = "10.0.0.1", "10.0.0.2"
    cap = write(tmp_path / "hold.pcap", [
        *_opens(a, b, hold=9),
        (2.0, bgp(a, b, BGPKeepAlive())),
        (2.5, bgp(b, a, BGPKeepAlive())),
        (5.0, bgp(b, a, BGPKeepAlive())),  # b keeps talking; a falls silent after 2.0
        (30.0, bfd("192.0.2.1", "192.0.2.2", 1)),  # any later packet moves capture time
    ])
    downs = [(e.time, str(e.fact), e.detail["reason"]) for e in replay(cap)
             if e.kind == K.SESSION_DOWN]
    assert downs == [(11.0, 'session(@"10.0.0.1","10.0.0.2")', "hold time expired"),
                     (11.0, 'session(@"10.0.0.2","10.0.0.1")', "hold time expired")]


def test_bfd_detection_time_expires_a_silent_session(tmp_path: Path) -> None:
    s, d = "192.0.2.1", "192.0.2.2"
    pkt = bfd(s, d, 3)
    pkt["BFD"].detect_mult, pkt["BFD"].min_tx_interval = 3, 300_000  # 0.3 s
    back = bfd(d, s, 3)
    back["BFD"].min_rx_interval = 500_000  # d wants no more than one packet per 0.5 s
    cap = write(tmp_path / "bfd.pcap", [(1.0, back), (1.1, pkt), (10.0, bfd(d, s, 1))])
    events = [e for e in replay(cap) if str(e.fact) == f'bfd(@"{s}","{d}")']
    assert [(e.op, e.time, e.detail.get("reason")) for e in events] == [
        ("+", 1.1, None), ("-", 1.1 + 3 * 0.5, "detection time expired")]


def test_timers_fire_without_packets_and_ids_stay_unique() -> None:
    """What a live capture does while the line is silent: tick() with the wall clock."""
    decoder = PacketDecoder("eth0")
    first, _ = decoder.step(1, 100.0, hello("1.1.1.1", "10.0.0.1", ["2.2.2.2"], dead=4))
    assert [(e.id, e.op) for e in first] == [("eth0:1:0", "+")]
    assert decoder.tick(1, 103.9) == []
    expired = decoder.tick(1, 104.2)
    assert [(e.id, e.op, e.kind, e.time) for e in expired] == [
        ("eth0:1:1", "-", K.NEIGHBOUR_EXPIRED, 104.0)]
