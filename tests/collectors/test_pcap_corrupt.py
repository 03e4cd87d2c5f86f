"""Damaged captures: keep what was read, report what was not, raise only CollectorError."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from scapy.contrib.bfd import BFD
from scapy.contrib.ospf import OSPF_Hdr, OSPF_Hello
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import PcapNgWriter, wrpcap

from collectors.pcap import replay
from netrules.errors import CollectorError

# Explicit MACs: left out, scapy would ARP for the IP destination while building.
MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"


def packets() -> list:
    """Six packets, each producing one event: five BFD sessions up, then an adjacency."""
    out = []
    for i in range(5):
        p = (Ether(src=MAC1, dst=MAC2) / IP(src=f"10.0.0.{i}", dst="10.0.1.1")
             / UDP(sport=49152, dport=3784) / BFD(sta=3))
        p.time = float(i)
        out.append(p)
    h = (Ether(src=MAC1, dst=MAC2) / IP(src="10.0.0.9", dst="224.0.0.5", proto=89)
         / OSPF_Hdr(src="9.9.9.9") / OSPF_Hello(neighbors=["8.8.8.8", "7.7.7.7"]))
    h.time = 5.0
    out.append(h)
    return out


def write(path: Path) -> Path:
    if path.suffix == ".pcapng":
        with PcapNgWriter(str(path)) as w:
            for p in packets():
                w.write(p)
    else:
        wrpcap(str(path), packets())
    return path


def test_pcap_cut_mid_packet_keeps_earlier_events(tmp_path: Path) -> None:
    cap = write(tmp_path / "c.pcap")
    data = cap.read_bytes()
    cap.write_bytes(data[:-20])  # the last record loses its tail
    r = replay(cap)
    events = list(r)
    assert [e.fact.relation for e in events] == ["bfd"] * 5
    assert r.report.packets == 6
    assert len(r.report.skipped) == 1
    number, reason = r.report.skipped[0]
    assert number == 6 and "truncated record" in reason


def test_pcap_cut_inside_record_header_reports_error(tmp_path: Path) -> None:
    cap = write(tmp_path / "h.pcap")
    sizes = [16 + len(p) for p in packets()]
    cap.write_bytes(cap.read_bytes()[:24 + sum(sizes[:3]) + 7])  # 7 bytes of header 4
    r = replay(cap)
    assert len(list(r)) == 3
    assert r.report.packets == 3
    assert r.report.error is not None and r.report.error.startswith("packet 4:")


def test_pcapng_cut_mid_block_keeps_earlier_events(tmp_path: Path) -> None:
    cap = write(tmp_path / "c.pcapng")
    cap.write_bytes(cap.read_bytes()[:-30])
    r = replay(cap)
    assert len(list(r)) == 5
    assert r.report.packets == 5
    assert r.report.error is not None and "packet 6" in r.report.error


def test_garbage_after_packets_is_reported_not_raised(tmp_path: Path) -> None:
    cap = write(tmp_path / "g.pcapng")
    cap.write_bytes(cap.read_bytes() + b"\xde\xad\xbe\xef" * 40)
    r = replay(cap)
    assert len(list(r)) == 7  # 5 BFD + 2 adjacencies
    assert r.report.error is not None


def test_truncated_ospf_hello_is_skipped_with_its_number(tmp_path: Path) -> None:
    cap = tmp_path / "t.pcap"
    pkts = packets()
    hello = pkts[-1]
    short = Ether(bytes(hello)[:14 + 20 + 24 + 6])  # header intact, Hello body cut
    short.time = 5.0
    wrpcap(str(cap), pkts[:-1] + [short])
    r = replay(cap)
    assert len(list(r)) == 5
    assert r.report.skipped == [(6, "truncated OSPF Hello")]


@pytest.mark.parametrize("content", [
    b"",
    b"\x00\x01\x02\x03garbage that is no capture" * 4,
    b"\xd4\xc3\xb2\xa1\x02\x00\x04",  # pcap magic, header cut short
    b"\x0a\x0d\x0d\x0a\x1c\x00",  # pcapng magic, section header cut short
])
def test_unreadable_file_raises_collector_error_naming_it(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "unreadable.pcap"
    bad.write_bytes(content)
    with pytest.raises(CollectorError, match="unreadable.pcap"):
        list(replay(bad))


def test_wrong_magic_and_missing_file(tmp_path: Path) -> None:
    cap = write(tmp_path / "m.pcap")
    data = bytearray(cap.read_bytes())
    data[0:4] = b"\x12\x34\x56\x78"
    cap.write_bytes(bytes(data))
    with pytest.raises(CollectorError, match="m.pcap"):
        replay(cap)
    with pytest.raises(CollectorError, match="nope.pcap"):
        replay(tmp_path / "nope.pcap")
    with pytest.raises(CollectorError, match="is a directory"):
        replay(tmp_path)


def test_header_then_only_garbage_raises(tmp_path: Path) -> None:
    cap = write(tmp_path / "o.pcapng")
    data = cap.read_bytes()
    shb_len = int.from_bytes(data[4:8], "little")
    cap.write_bytes(data[:shb_len] + b"\xff" * 9)  # no interface, no packet: nothing readable
    with pytest.raises(CollectorError, match="no packet could be read"):
        list(replay(cap))


def _mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        op = rng.random()
        if op < 0.5 and buf:
            for _ in range(rng.randint(1, 8)):
                buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        elif op < 0.75:
            del buf[rng.randrange(len(buf) + 1):]
        else:
            at = rng.randrange(len(buf) + 1)
            buf[at:at] = rng.randbytes(rng.randint(1, 32))
    return bytes(buf)


def test_500_mutated_captures_raise_only_collector_error(tmp_path: Path) -> None:
    rng = random.Random(20240605)
    originals = [write(tmp_path / "f.pcap").read_bytes(), write(tmp_path / "f.pcapng").read_bytes()]
    raised = 0
    target = tmp_path / "mutant.cap"
    for i in range(500):
        target.write_bytes(_mutate(rng, originals[i % 2]))
        try:
            run = replay(target)
            list(run)
        except CollectorError:
            raised += 1
    assert raised < 200, f"{raised} of 500 mutants were rejected outright"  # 140 at this seed
