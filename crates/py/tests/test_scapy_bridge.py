"""The scapy test-bench bridge: scapy packets in, scapy packets out."""

from typing import Any, Callable, cast
import linerate as lr
from linerate import scapy_bridge as sb
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import ARP, Ether

PEER_MAC = "02:aa:00:00:00:01"


def bench() -> tuple[lr.Testbed, lr.Host, list[Any]]:
    net = lr.Testbed()
    host = net.host("10.0.0.2/24", bench=True)
    net.run(ms=0.1)
    boot = sb.collect(host)
    return net, host, boot


def test_gratuitous_arp_at_start_up() -> None:
    _, host, boot = bench()
    assert len(boot) == 1 and boot[0].haslayer(ARP)
    assert boot[0][ARP].psrc == boot[0][ARP].pdst == "10.0.0.2"
    assert boot[0].dst == "ff:ff:ff:ff:ff:ff"


def test_arp_then_ping_through_scapy() -> None:
    net, host, _ = bench()
    req = Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=PEER_MAC, psrc="10.0.0.1", pdst="10.0.0.2")
    (reply,) = sb.exchange(net, host, req)
    assert reply[ARP].op == 2 and reply[ARP].hwsrc == host.mac and reply.dst == PEER_MAC
    ping = Ether(src=PEER_MAC, dst=host.mac) / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(id=9, seq=4) / (b"x" * 32)
    (echo,) = sb.exchange(net, host, ping)
    assert echo[ICMP].type == 0 and echo[ICMP].id == 9 and echo[ICMP].seq == 4
    assert bytes(echo[ICMP].payload) == b"x" * 32
    # scapy recomputes checksums on rebuild: they must equal what linerate sent.
    assert IP(bytes(echo[IP])).chksum == echo[IP].chksum
    rebuilt = echo[ICMP].copy()
    rebuilt.chksum = None
    assert ICMP(bytes(rebuilt)).chksum == echo[ICMP].chksum


def test_udp_to_closed_port_answers_port_unreachable() -> None:
    net, host, _ = bench()
    sb.exchange(net, host, Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=PEER_MAC, psrc="10.0.0.1", pdst="10.0.0.2"))
    pkt = Ether(src=PEER_MAC, dst=host.mac) / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1234, dport=5555) / b"hi"
    (err,) = sb.exchange(net, host, pkt)
    assert err[ICMP].type == 3 and err[ICMP].code == 3
    assert host.counters()["rx_drop_udp_no_socket"] == 1


def resolved_bench() -> tuple[lr.Testbed, lr.Host]:
    net, host, _ = bench()
    sb.exchange(net, host, Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=PEER_MAC, psrc="10.0.0.1", pdst="10.0.0.2"))
    return net, host


def accounted(c: dict[str, int]) -> bool:
    drops = sum(v for k, v in c.items() if k.startswith("rx_drop_"))
    return bool(c["rx_frames"] == c["rx_delivered"] + drops)


def test_off_link_and_martian_sources_are_counted_and_the_host_keeps_answering() -> None:
    net, host = resolved_bench()
    for src in ["192.168.99.1", "0.0.0.0", "127.0.0.1", "224.0.0.1", "10.0.0.2"]:
        assert sb.exchange(net, host, Ether(src=PEER_MAC, dst=host.mac) / IP(src=src, dst="10.0.0.2") / ICMP()) == []
    c = host.counters()
    assert c["rx_drop_ipv4_no_route"] == 1 and c["rx_drop_ipv4_martian_src"] == 4
    (echo,) = sb.exchange(net, host, Ether(src=PEER_MAC, dst=host.mac) / IP(src="10.0.0.1", dst="10.0.0.2") / ICMP(seq=1))
    assert echo[ICMP].type == 0
    assert accounted(host.counters())


def test_a_fragmented_echo_request_is_reassembled_and_answered_in_fragments() -> None:
    from scapy.layers import inet

    # scapy's functions carry no annotations: give the two used here their types.
    fragment = cast(Callable[..., list[Any]], inet.fragment)
    defragment = cast(Callable[[list[Any]], list[Any]], inet.defragment)

    net, host = resolved_bench()
    ping = IP(src="10.0.0.1", dst="10.0.0.2", id=77) / ICMP(id=3, seq=9) / (bytes(range(256)) * 16)
    frags = [Ether(src=PEER_MAC, dst=host.mac) / f for f in fragment(ping, fragsize=1400)]
    assert len(frags) == 3
    for f in reversed(frags):
        sb.inject(host, f)
    net.run(ms=1.0)
    replies = sb.collect(host)
    assert len(replies) == 3 and all(r[IP].flags.MF or r[IP].frag for r in replies)
    (whole,) = defragment([r[IP] for r in replies])
    assert whole[ICMP].type == 0 and whole[ICMP].seq == 9
    assert bytes(whole[ICMP].payload) == bytes(range(256)) * 16
    assert host.counters()["ipv4_reassembled"] == 1
    assert accounted(host.counters())
