"""Replay of real protocol packets written by scapy to pcap and pcapng: exact event sequences."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from scapy.contrib.bfd import BFD
from scapy.contrib.bgp import (
    BGPHeader,
    BGPKeepAlive,
    BGPNLRI_IPv4,
    BGPNotification,
    BGPOpen,
    BGPUpdate,
)
from scapy.contrib.cdp import CDPMsgDeviceID, CDPMsgPortID, CDPv2_HDR
from scapy.contrib.lldp import (
    LLDPDUChassisID,
    LLDPDUEndOfLLDPDU,
    LLDPDUPortID,
    LLDPDUSystemName,
    LLDPDUTimeToLive,
)
from scapy.contrib.ospf import OSPF_Hdr, OSPF_Hello, OSPF_Link, OSPF_LSUpd, OSPF_Router_LSA
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import LLC, SNAP, Dot3, Ether
from scapy.utils import PcapNgWriter, wrpcap

from collectors.commands import replay_cmd
from collectors.pcap import replay
from netrules.eventlog.schema import Event, EventKind
from netrules.facts import Fact

K = EventKind

# Explicit MACs: left out, scapy would ARP for the IP destination while building.
MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"


def hello(router: str, ip: str, nbrs: list[str], dead: int = 40):
    return (Ether(src=MAC1, dst=MAC2) / IP(src=ip, dst="224.0.0.5", proto=89) / OSPF_Hdr(src=router)
            / OSPF_Hello(neighbors=nbrs, hellointerval=10, deadinterval=dead))


def router_lsa(adv: str, seq: int, links: list[tuple[int, str, str, int]]):
    lsa = OSPF_Router_LSA(id=adv, adrouter=adv, seq=seq, linklist=[
        OSPF_Link(type=t, id=i, data=d, metric=m) for t, i, d, m in links])
    return (Ether(src=MAC1, dst=MAC2) / IP(src="10.0.0.1", dst="224.0.0.5", proto=89)
            / OSPF_Hdr(src=adv, type=4) / OSPF_LSUpd(lsalist=[lsa]))


def bgp(src: str, dst: str, *msgs, flags: str = "PA"):
    sport, dport = (179, 50000) if src < dst else (50000, 179)
    pkt = (Ether(src=MAC1, dst=MAC2) / IP(src=src, dst=dst)
           / TCP(sport=sport, dport=dport, flags=flags))
    for m in msgs:
        pkt = pkt / m
    return pkt


def lldp(system: str, port: str, ttl: int):
    return (Ether(dst="01:80:c2:00:00:0e", type=0x88CC)
            / LLDPDUChassisID(subtype=4, id="00:11:22:33:44:55")
            / LLDPDUPortID(subtype=5, id=port) / LLDPDUTimeToLive(ttl=ttl)
            / LLDPDUSystemName(system_name=system) / LLDPDUEndOfLLDPDU())


def cdp(device: str, port: str, holdtime: int):
    return (Dot3(dst="01:00:0c:cc:cc:cc") / LLC() / SNAP()
            / CDPv2_HDR(ttl=holdtime, msg=[CDPMsgDeviceID(val=device), CDPMsgPortID(iface=port)]))


def bfd(src: str, dst: str, state: int):
    return (Ether(src=MAC1, dst=MAC2) / IP(src=src, dst=dst) / UDP(sport=49152, dport=3784)
            / BFD(sta=state))


def write(path: Path, timed: list[tuple[float, object]]) -> Path:
    pkts = []
    for t, p in timed:
        p.time = t
        pkts.append(p)
    if path.suffix == ".pcapng":
        with PcapNgWriter(str(path)) as w:
            for p in pkts:
                w.write(p)
    else:
        wrpcap(str(path), pkts)
    return path


def triples(events) -> list[tuple[str, EventKind, str]]:
    return [(e.op, e.kind, str(e.fact)) for e in events]


@pytest.fixture(params=["pcap", "pcapng"])
def fmt(request) -> str:
    return request.param


def test_ospf_adjacency_forms_then_dies_by_dead_interval(tmp_path: Path, fmt: str) -> None:
    cap = write(tmp_path / f"cap.{fmt}", [
        (100.0, hello("1.1.1.1", "10.0.0.1", [])),
        (101.0, hello("2.2.2.2", "10.0.0.2", ["1.1.1.1"])),
        (110.0, hello("1.1.1.1", "10.0.0.1", ["2.2.2.2"])),
        (111.0, hello("2.2.2.2", "10.0.0.2", ["1.1.1.1"])),  # refresh: duplicate, dropped
        (120.0, hello("1.1.1.1", "10.0.0.1", ["2.2.2.2"])),
        # r2 falls silent at 111: its adjacency dies at 151, r1's view (refreshed at 160) later
        (160.0, hello("1.1.1.1", "10.0.0.1", ["2.2.2.2"])),
        (170.0, hello("1.1.1.1", "10.0.0.1", [])),
        (500.0, hello("3.3.3.3", "10.0.0.3", ["4.4.4.4"])),  # never expires: capture ends
    ])
    r = replay(cap)
    events = list(r)
    assert triples(events) == [
        ("+", K.NEIGHBOUR_SEEN, "adjacency(@\"2.2.2.2\",\"1.1.1.1\")"),
        ("+", K.NEIGHBOUR_SEEN, "adjacency(@\"1.1.1.1\",\"2.2.2.2\")"),
        ("-", K.NEIGHBOUR_EXPIRED, "adjacency(@\"2.2.2.2\",\"1.1.1.1\")"),
        ("-", K.NEIGHBOUR_EXPIRED, "adjacency(@\"1.1.1.1\",\"2.2.2.2\")"),
        ("+", K.NEIGHBOUR_SEEN, "adjacency(@\"3.3.3.3\",\"4.4.4.4\")"),
    ]
    assert [e.id for e in events] == ["cap:2:0", "cap:3:0", "cap:6:0", "cap:7:0", "cap:8:0"]
    assert events[2].time == pytest.approx(151.0)  # the deadline, not the packet that saw it
    assert events[2].detail["reason"] == "dead interval"
    assert events[3].time == pytest.approx(170.0)
    assert events[3].detail["reason"] == "dropped from hello"
    assert events[0].fact == Fact("adjacency", ("2.2.2.2", "1.1.1.1"))
    assert r.report.packets == 8 and r.report.events == 5 and r.report.skipped == []
    assert r.report.dropped["duplicate_up"] == 3


def test_router_lsa_update_removes_link_and_changes_metric(tmp_path: Path, fmt: str) -> None:
    p2p, stub = 1, 3
    cap = write(tmp_path / f"lsa.{fmt}", [
        (1.0, router_lsa("1.1.1.1", 0x80000001, [(p2p, "2.2.2.2", "10.0.0.1", 10),
                                                 (p2p, "3.3.3.3", "10.0.1.1", 20),
                                                 (stub, "192.168.1.0", "255.255.255.0", 1)])),
        (2.0, router_lsa("1.1.1.1", 0x80000001, [])),  # same sequence: ignored
        (3.0, router_lsa("1.1.1.1", 0x80000002, [(p2p, "2.2.2.2", "10.0.0.1", 10),
                                                 (stub, "192.168.1.0", "255.255.255.0", 5)])),
        (4.0, router_lsa("1.1.1.1", 0x7FFFFFFF - 5, [])),  # 0x7fff... > 0x8000... is NEWER
    ])
    r = replay(cap, source="r1")
    assert triples(r) == [
        ("+", K.LINK_UP, 'link(@"1.1.1.1","192.168.1.0/24",1)'),
        ("+", K.LINK_UP, 'link(@"1.1.1.1","2.2.2.2",10)'),
        ("+", K.LINK_UP, 'link(@"1.1.1.1","3.3.3.3",20)'),
        ("-", K.LINK_DOWN, 'link(@"1.1.1.1","192.168.1.0/24",1)'),
        ("-", K.LINK_DOWN, 'link(@"1.1.1.1","3.3.3.3",20)'),
        ("+", K.LINK_UP, 'link(@"1.1.1.1","192.168.1.0/24",5)'),
        ("-", K.LINK_DOWN, 'link(@"1.1.1.1","192.168.1.0/24",5)'),
        ("-", K.LINK_DOWN, 'link(@"1.1.1.1","2.2.2.2",10)'),
    ]
    assert r.report.ignored["stale_lsa"] == 1


def test_bgp_session_update_withdraw_notification(tmp_path: Path, fmt: str) -> None:
    a, b = "10.0.0.1", "10.0.0.2"
    cap = write(tmp_path / f"bgp.{fmt}", [
        (1.0, bgp(a, b, flags="S")),
        (1.1, bgp(a, b, BGPHeader(type=1) / BGPOpen(my_as=65001, bgp_id="1.1.1.1"))),
        (1.2, bgp(b, a, BGPHeader(type=1) / BGPOpen(my_as=65002, bgp_id="2.2.2.2"))),
        (1.3, bgp(a, b, BGPKeepAlive())),
        (1.4, bgp(b, a, BGPKeepAlive())),
        (2.0, bgp(a, b, BGPHeader(type=2) / BGPUpdate(
            nlri=[BGPNLRI_IPv4(prefix="10.1.0.0/16"), BGPNLRI_IPv4(prefix="10.2.0.0/16")]))),
        (3.0, bgp(b, a, BGPHeader(type=2) / BGPUpdate(nlri=[BGPNLRI_IPv4(prefix="172.16.0.0/12")]),
                  BGPKeepAlive())),  # two messages in one segment
        (4.0, bgp(a, b, BGPHeader(type=2) / BGPUpdate(
            withdrawn_routes=[BGPNLRI_IPv4(prefix="10.1.0.0/16")]))),
        (5.0, bgp(b, a, BGPHeader(type=3) / BGPNotification(error_code=6, error_subcode=2))),
        (5.1, bgp(b, a, flags="FA")),
    ])
    r = replay(cap)
    assert triples(r) == [
        ("+", K.SESSION_UP, 'session(@"10.0.0.1","10.0.0.2")'),
        ("+", K.SESSION_UP, 'session(@"10.0.0.2","10.0.0.1")'),
        ("+", K.ROUTE_ANNOUNCED, 'route(@"10.0.0.1","10.1.0.0/16")'),
        ("+", K.ROUTE_ANNOUNCED, 'route(@"10.0.0.1","10.2.0.0/16")'),
        ("+", K.ROUTE_ANNOUNCED, 'route(@"10.0.0.2","172.16.0.0/12")'),
        ("-", K.ROUTE_WITHDRAWN, 'route(@"10.0.0.1","10.1.0.0/16")'),
        ("-", K.SESSION_DOWN, 'session(@"10.0.0.2","10.0.0.1")'),
        ("-", K.SESSION_DOWN, 'session(@"10.0.0.1","10.0.0.2")'),
        ("-", K.ROUTE_WITHDRAWN, 'route(@"10.0.0.2","172.16.0.0/12")'),
        ("-", K.ROUTE_WITHDRAWN, 'route(@"10.0.0.1","10.2.0.0/16")'),
    ]
    assert r.report.skipped == []
    assert r.report.dropped["down_while_down"] == 2  # the FIN after the NOTIFICATION


def test_lldp_and_cdp_neighbours_expire_by_ttl(tmp_path: Path, fmt: str) -> None:
    cap = write(tmp_path / f"l2.{fmt}", [
        (0.0, lldp("sw1", "eth0", 120)),
        (0.5, cdp("rtrA", "Gi0/1", 180)),
        (30.0, lldp("sw1", "eth0", 120)),  # refresh: sw1 now valid until 150
        (100.0, lldp("sw2", "eth1", 20)),
        (121.0, lldp("sw2", "eth1", 0)),  # already expired at 120: down-while-down
        (151.0, lldp("sw3", "eth9", 0)),  # shutdown of a never-seen neighbour
        (200.0, bfd("10.0.0.9", "10.0.0.8", 1)),  # any later packet advances capture time
    ])
    r = replay(cap, source="tap1")
    assert triples(r) == [
        ("+", K.NEIGHBOUR_SEEN, 'neighbour(@sw1,tap1,eth0)'),
        ("+", K.NEIGHBOUR_SEEN, 'neighbour(@rtrA,tap1,"Gi0/1")'),
        ("+", K.NEIGHBOUR_SEEN, 'neighbour(@sw2,tap1,eth1)'),
        ("-", K.NEIGHBOUR_EXPIRED, 'neighbour(@sw2,tap1,eth1)'),
        ("-", K.NEIGHBOUR_EXPIRED, 'neighbour(@sw1,tap1,eth0)'),
        ("-", K.NEIGHBOUR_EXPIRED, 'neighbour(@rtrA,tap1,"Gi0/1")'),
    ]
    events = list(replay(cap, source="tap1"))
    assert [e.time for e in events[3:]] == pytest.approx([120.0, 150.0, 180.5])
    assert events[1].detail == {"protocol": "cdp", "ttl": 180}


def test_bfd_goes_down(tmp_path: Path, fmt: str) -> None:
    s, d = "192.0.2.1", "192.0.2.2"
    cap = write(tmp_path / f"bfd.{fmt}", [
        (0.0, bfd(s, d, 1)),  # Down while down
        (0.1, bfd(s, d, 2)),  # Init: nothing
        (0.2, bfd(s, d, 3)),
        (0.3, bfd(s, d, 3)),
        (0.4, bfd(d, s, 3)),
        (5.0, bfd(s, d, 1)),
        (5.1, bfd(d, s, 0)),
    ])
    r = replay(cap)
    assert triples(r) == [
        ("+", K.BFD_UP, 'bfd(@"192.0.2.1","192.0.2.2")'),
        ("+", K.BFD_UP, 'bfd(@"192.0.2.2","192.0.2.1")'),
        ("-", K.BFD_DOWN, 'bfd(@"192.0.2.1","192.0.2.2")'),
        ("-", K.BFD_DOWN, 'bfd(@"192.0.2.2","192.0.2.1")'),
    ]
    assert dict(r.report.dropped) == {"down_while_down": 1, "duplicate_up": 1}


def test_pcap_and_pcapng_give_identical_events(tmp_path: Path) -> None:
    timed = [(1.5, hello("1.1.1.1", "10.0.0.1", ["2.2.2.2"])), (2.25, bfd("1.0.0.1", "1.0.0.2", 3))]
    a = list(replay(write(tmp_path / "x.pcap", timed)))
    b = list(replay(write(tmp_path / "x.pcapng", timed)))
    assert a == b and [e.time for e in a] == [1.5, 2.25]


def test_cli_replay_json_lines(tmp_path: Path) -> None:
    cap = write(tmp_path / "cli.pcapng", [
        (1.0, hello("1.1.1.1", "10.0.0.1", ["2.2.2.2"])),
        (2.0, bfd("10.0.0.1", "10.0.0.2", 3)),
    ])
    result = CliRunner().invoke(replay_cmd, [str(cap), "--json", "--source", "s1"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    events = [Event.from_line(line) for line in lines]
    assert [(e.id, e.op, str(e.fact)) for e in events] == [
        ("s1:1:0", "+", 'adjacency(@"1.1.1.1","2.2.2.2")'),
        ("s1:2:0", "+", 'bfd(@"10.0.0.1","10.0.0.2")'),
    ]
    assert "2 packets, 2 events, 0 skipped" in result.stderr
    # stderr is the report alone: no progress line (stray "0 / 0 MiB (100%)") around it
    assert result.stderr.splitlines() == [f"{cap}: 2 packets, 2 events, 0 skipped"]

    readable = CliRunner().invoke(replay_cmd, [str(cap)])
    assert readable.exit_code == 0
    assert 'bfd(@"10.0.0.1","10.0.0.2")' in readable.stdout


def test_cli_replay_unreadable_file_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"this is not a capture at all")
    result = CliRunner().invoke(replay_cmd, [str(bad)])
    assert result.exit_code == 1
    assert "bad.pcap" in result.output
