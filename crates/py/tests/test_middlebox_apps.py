"""The firewall and the IDS as unit programs of linerate.middlebox, on the repository's real
data: the Emerging Threats drop list and the Snort 3 community ruleset (data/)."""

from typing import Any, cast
import ipaddress
from pathlib import Path

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

import linerate.middlebox as mb

DATA = Path(__file__).resolve().parents[3] / "data"
BLACKLIST = DATA / "firewall" / "drop-prefixes.txt"
RULES = DATA / "ids" / "snort3-community.rules"


def listed_prefixes() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    lines = (line.split("#")[0].strip() for line in BLACKLIST.read_text().splitlines())
    return [ipaddress.ip_network(line) for line in lines if line]


def udp_from(src: str) -> bytes:
    return bytes(Ether() / IP(src=src, dst="192.0.2.1") / UDP(sport=1000, dport=53) / Raw(b"q"))


def test_the_firewall_drops_blacklisted_sources_from_the_drop_list() -> None:
    prefixes = listed_prefixes()
    bl = mb.Blacklist.load(BLACKLIST)
    assert len(bl) == len(prefixes) == 1050
    inside = [str(p.network_address + p.num_addresses // 2) for p in prefixes[::50]]
    outside = ["192.0.2.7", "198.51.100.9", "203.0.113.200"]
    assert all(ip in bl for ip in inside) and not any(ip in bl for ip in outside)
    fw = mb.Firewall(bl)
    assert fw.verdict(udp_from(inside[0])) == "blacklisted"
    assert fw.verdict(bytearray(udp_from(outside[0]))) == "pass"
    assert fw.verdict(memoryview(b"\x00" * 5)) != "pass"
    rt = mb.Runtime(units=[mb.Firewall(bl), mb.Firewall(bl)], policy="hash")
    for ip in inside + outside:
        rt.send(0, udp_from(ip))
    rt.send(0, bytes(Ether() / ARP()))
    assert rt.run()
    out = [Ether(f)[IP].src for f in rt.recv(1) if IP in Ether(f)]
    assert sorted(out) == sorted(outside)
    stats = rt.stats()
    assert sum(v for k, v in stats.items() if k.endswith("drop.blacklisted")) == len(inside)
    assert len(rt.recv(1)) == 0
    # ARP passes unless non-IPv4 is dropped.
    strict = mb.Runtime(units=[mb.Firewall(bl, drop_non_ipv4=True)])
    strict.send(0, bytes(Ether() / ARP()))
    strict.run()
    assert strict.recv(1) == []


def segment(dport: int, payload: bytes, sport: int = 40000) -> bytes:
    return bytes(Ether() / IP(src="198.51.100.1", dst="10.1.0.5")
                 / TCP(sport=sport, dport=dport, flags="PA", seq=1000, ack=1) / Raw(payload))


def test_the_ids_alerts_with_community_rule_sids() -> None:
    rules = mb.IdsRules.load(RULES)
    assert rules.total >= 4000 and rules.loaded > 3000 and rules.loaded + rules.skipped <= rules.total
    rt = mb.Runtime(units=[mb.Ids(rules), mb.Ids(rules)], policy="hash", slot_size=9472)
    # sid 108: "qazwsx.hsq" to port 7597 (QAZ worm login); the other segment is clean.
    rt.send(0, segment(7597, b"USER qazwsx.hsq\r\n"))
    rt.send(0, segment(7597, b"an ordinary line\r\n", sport=40001))
    rt.run()
    alerts = rt.host()
    assert [tags for _, tags, _ in alerts] == [[108]]
    assert b"qazwsx.hsq" in alerts[0][2]
    forwarded = rt.recv(1)
    assert len(forwarded) == 1 and b"ordinary" in forwarded[0]


def test_bad_rules_and_blacklists_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="<text>:1:"):
        mb.Blacklist.parse("not a prefix\n")
    with pytest.raises(FileNotFoundError):
        mb.Blacklist.load(DATA / "no-such-file.txt")
    with pytest.raises(ValueError):
        mb.IdsRules.parse('alert tcp any any -> any any (msg:"x"; content:; sid:1;)', strict=True)
    with pytest.raises(ValueError, match="not an IPv4"):
        mb.Blacklist.parse("10.0.0.0/8").contains("ten")
    with pytest.raises(ValueError, match="unit program"):
        mb.Runtime(units=[cast(Any, object())])  # ill-typed on purpose: the runtime's own check
