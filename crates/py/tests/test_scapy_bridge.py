"""The scapy test-bench bridge: scapy packets in, scapy packets out."""

import linerate as lr
from linerate import scapy_bridge as sb
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import ARP, Ether

PEER_MAC = "02:aa:00:00:00:01"


def bench():
    net = lr.Testbed()
    host = net.host("10.0.0.2/24", bench=True)
    net.run(ms=0.1)
    boot = sb.collect(host)
    return net, host, boot


def test_gratuitous_arp_at_start_up():
    _, host, boot = bench()
    assert len(boot) == 1 and boot[0].haslayer(ARP)
    assert boot[0][ARP].psrc == boot[0][ARP].pdst == "10.0.0.2"
    assert boot[0].dst == "ff:ff:ff:ff:ff:ff"


def test_arp_then_ping_through_scapy():
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


def test_udp_to_closed_port_answers_port_unreachable():
    net, host, _ = bench()
    sb.exchange(net, host, Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=PEER_MAC, psrc="10.0.0.1", pdst="10.0.0.2"))
    pkt = Ether(src=PEER_MAC, dst=host.mac) / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1234, dport=5555) / b"hi"
    (err,) = sb.exchange(net, host, pkt)
    assert err[ICMP].type == 3 and err[ICMP].code == 3
    assert host.counters()["drop_udp_no_socket"] == 1
