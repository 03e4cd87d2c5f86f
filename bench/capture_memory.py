"""Does replay stream? Write a big synthetic capture of real OSPF/BGP packets, replay it in a
child process and report the child's peak RSS and the replay throughput.

Not run by the tests (it takes minutes). Usage::

    python bench/capture_memory.py --size-mb 1024 [--dir /tmp] [--keep]

The capture simulates rounds of 10 s: OSPF Hellos of a 40-router chain, one router's new
Router-LSA, BGP KEEPALIVEs and an UPDATE that alternately announces and withdraws 200
prefixes. Protocol state therefore stays bounded, so a peak RSS that grows with the file size
would mean the reader is buffering packets.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAC1, MAC2 = "02:00:00:00:00:01", "02:00:00:00:00:02"  # explicit: scapy would ARP otherwise
ROUTERS = 40


def _templates() -> tuple[list[bytes], list[bytes]]:
    """Raw frames that do not change between rounds (Hellos, BGP messages)."""
    from scapy.contrib.bgp import BGPHeader, BGPKeepAlive, BGPNLRI_IPv4, BGPUpdate
    from scapy.contrib.ospf import OSPF_Hdr, OSPF_Hello
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether

    def rid(i: int) -> str:
        return f"10.255.{i // 250}.{i % 250 + 1}"

    hellos = []
    for i in range(ROUTERS):
        nbrs = [rid(j) for j in (i - 1, i + 1) if 0 <= j < ROUTERS]
        hellos.append(bytes(Ether(src=MAC1, dst=MAC2)
                            / IP(src=f"10.0.{i}.1", dst="224.0.0.5", proto=89)
                            / OSPF_Hdr(src=rid(i)) / OSPF_Hello(neighbors=nbrs)))

    def seg(src: str, dst: str, msg: object) -> bytes:
        sport, dport = (179, 50000) if src < dst else (50000, 179)
        return bytes(Ether(src=MAC1, dst=MAC2) / IP(src=src, dst=dst)
                     / TCP(sport=sport, dport=dport, flags="PA") / msg)

    prefixes = [BGPNLRI_IPv4(prefix=f"100.{i // 256}.{i % 256}.0/24") for i in range(200)]
    bgp = [
        seg("192.0.2.1", "192.0.2.2", BGPKeepAlive()),
        seg("192.0.2.2", "192.0.2.1", BGPKeepAlive()),
        seg("192.0.2.1", "192.0.2.2", BGPHeader(type=2) / BGPUpdate(nlri=prefixes)),
        seg("192.0.2.1", "192.0.2.2", BGPHeader(type=2) / BGPUpdate(withdrawn_routes=prefixes)),
    ]
    return hellos, bgp


def _router_lsa(round_no: int) -> bytes:
    from scapy.contrib.ospf import OSPF_Hdr, OSPF_Link, OSPF_LSUpd, OSPF_Router_LSA
    from scapy.layers.inet import IP
    from scapy.layers.l2 import Ether

    adv = f"10.255.0.{round_no % ROUTERS + 1}"
    seq = 0x80000001 + round_no // ROUTERS
    links = [OSPF_Link(type=1, id=f"10.255.0.{(round_no + k) % ROUTERS + 1}", data="10.0.0.1",
                       metric=10 + (round_no // ROUTERS) % 3) for k in (1, 2)]
    return bytes(Ether(src=MAC1, dst=MAC2) / IP(src="10.0.0.1", dst="224.0.0.5", proto=89)
                 / OSPF_Hdr(src=adv, type=4)
                 / OSPF_LSUpd(lsalist=[OSPF_Router_LSA(id=adv, adrouter=adv, seq=seq,
                                                       linklist=links)]))


def write_capture(path: Path, size: int) -> int:
    """Stream frames into ``path`` with scapy's PcapWriter until it holds ``size`` bytes."""
    from scapy.utils import PcapWriter

    hellos, (ka1, ka2, announce, withdraw) = _templates()
    written, packets, round_no, t = 24, 0, 0, 1_700_000_000.0
    with PcapWriter(str(path), linktype=1, append=False, sync=False) as w:
        w.write_header(None)  # write_packet() alone never writes the file header
        while written < size:
            frames = [*hellos, ka1, ka2, announce if round_no % 2 == 0 else withdraw,
                      _router_lsa(round_no)]
            for k, frame in enumerate(frames):
                ts = t + k * 0.001
                w.write_packet(frame, sec=int(ts), usec=int((ts % 1) * 1e6))
                written += 16 + len(frame)
                packets += 1
            round_no += 1
            t += 10.0
    return packets


CHILD = """
import json, resource, sys, time
from collectors.pcap import replay
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
run = replay(sys.argv[1])
n = sum(1 for _ in run)
dt = time.perf_counter() - t0
rep = run.report
print(json.dumps({"events": n, "packets": rep.packets, "skipped": len(rep.skipped),
                  "seconds": dt, "rss_after_import_kb": base,
                  "dropped": dict(rep.dropped)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--keep", action="store_true", help="keep the capture file")
    args = ap.parse_args()

    path = Path(args.dir) / f"netrules-bench-{args.size_mb}mb.pcap"
    t0 = time.perf_counter()
    packets = write_capture(path, args.size_mb * 2**20)
    size = path.stat().st_size
    print(f"wrote {path} ({size / 2**20:.0f} MiB, {packets:,} packets) "
          f"in {time.perf_counter() - t0:.0f} s", flush=True)
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, str(path)], cwd=ROOT,
                              capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        if proc.returncode != 0:
            sys.exit(f"replay failed:\n{proc.stderr[-3000:]}")
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    print(f"replay: {res['packets']:,} packets, {res['events']:,} events, "
          f"{res['skipped']} skipped in {res['seconds']:.0f} s -> "
          f"{res['packets'] / res['seconds']:,.0f} packets/s, "
          f"{size / 2**20 / res['seconds']:.2f} MiB/s")
    print(f"peak RSS of the replay process: {peak / 1024:.0f} MiB "
          f"(after imports: {res['rss_after_import_kb'] / 1024:.0f} MiB; "
          f"capture {size / 2**20:.0f} MiB)")
    print(f"dropped transitions: {res['dropped']}")


if __name__ == "__main__":
    main()
