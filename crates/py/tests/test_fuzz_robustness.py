"""Robustness: over a million random and mutated frames into a host, which keeps answering
pings, with every received frame accounted for (delivered, or dropped under one reason)."""

import random

import linerate as lr
from linerate import scapy_bridge as sb
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import fuzz

HOST_MAC = "02:00:0a:00:00:02"
PEER_MAC = "02:aa:00:00:00:01"


def scapy_fuzzed(n: int) -> list[bytes]:
    """n frames from scapy's fuzz(): random field values in otherwise well-formed layers."""
    random.seed(1234)
    base = Ether(src=PEER_MAC, dst=HOST_MAC)
    templates = [
        lambda: base / fuzz(IP(dst="10.0.0.2")),
        lambda: base / IP(src="10.0.0.1", dst="10.0.0.2") / fuzz(ICMP()),
        lambda: base / IP(src="10.0.0.1", dst="10.0.0.2") / fuzz(UDP()),
        lambda: base / fuzz(IP(src="10.0.0.1", dst="10.0.0.2") / UDP(dport=7)),
        lambda: base / IP(src="10.0.0.1", dst="10.0.0.2") / fuzz(TCP()),
        lambda: base / fuzz(ARP(pdst="10.0.0.2")),
        lambda: Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") / fuzz(ARP()),
        lambda: base / fuzz(Dot1Q()) / IP(dst="10.0.0.2") / ICMP(),
        lambda: fuzz(Ether(dst=HOST_MAC)),
    ]
    return [bytes(templates[i % len(templates)]()) for i in range(n)]


def valid_frames(host: lr.Host) -> list[bytes]:
    arp = Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=PEER_MAC, psrc="10.0.0.1", pdst="10.0.0.2")
    ping = Ether(src=PEER_MAC, dst=host.mac) / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP() / (b"p" * 56)
    udp = Ether(src=PEER_MAC, dst=host.mac) / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=5, dport=7) / b"data"
    return [bytes(arp), bytes(ping), bytes(udp)]


def still_answers_ping(net: lr.Testbed, host: lr.Host) -> bool:
    sb.collect(host)
    ping = Ether(src=PEER_MAC, dst=host.mac) / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(id=77, seq=1)
    arp = Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=PEER_MAC, psrc="10.0.0.1", pdst="10.0.0.2")
    sb.exchange(net, host, arp)
    replies = sb.exchange(net, host, ping)
    return any(r.haslayer(ICMP) and r[ICMP].type == 0 and r[ICMP].id == 77 for r in replies)


def test_a_million_random_and_mutated_frames() -> None:
    net = lr.Testbed()
    host = net.host("10.0.0.2/24", bench=True)
    host.udp_bind(7)
    net.run(ms=0.1)
    fuzzed = scapy_fuzzed(20_000)
    blob = b"".join(fuzzed)
    host.inject_many(blob, [len(f) for f in fuzzed])
    assert still_answers_ping(net, host)
    seeds = fuzzed[:2000] + valid_frames(host) * 500
    host.inject_mutations(seeds, 1_000_000, seed=99)
    assert still_answers_ping(net, host)
    c = host.counters()
    assert c["rx_frames"] >= 1_020_000
    assert lr.rx_accounted(c), {k: v for k, v in c.items() if v}
    reasons = {k: v for k, v in c.items() if k.startswith("rx_drop_") and v}
    print("drop reasons:", reasons)
    assert len(reasons) >= 10, reasons
