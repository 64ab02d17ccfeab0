"""The hostile cases of issue 25, one after another against a linerate host from the Linux side
of its link, each followed by a check that the host still serves: a ping, and a TCP echo
round trip on a fresh connection; the blind attacks also check that the live connection they
aim at still echoes.

  hostile_cases.py IFACE HOST_MAC HOST_IP [LINERATE_BIN HOST_PID]

With the linerate binary and the host's process id, the host's receive accounting identity
(rx_frames = rx_delivered + sum of rx_drop_*) is also read from `linerate stats --json` after
each case and must hold exactly. Prints one line per case ("ok NAME" or "FAILED NAME: why")
and exits 1 if any failed.
"""

import random
import resource
import socket
import struct
import subprocess
import sys
import time

from scapy.all import ICMP, IP, TCP, UDP, Ether, Raw, fragment, get_if_hwaddr

sys.path.insert(0, __import__("os").path.dirname(__file__))
import hostile_runner  # noqa: E402
import hostile_frames  # noqa: E402  (the mutation generator, shared with the AF_XDP test)

IFACE, HOST_MAC, HOST = sys.argv[1], sys.argv[2], sys.argv[3]
LINERATE, HOST_PID = (sys.argv[4], int(sys.argv[5])) if len(sys.argv) > 5 else (None, None)
ECHO, HTTP = 7, 80
rng = random.Random(25)
raw = hostile_frames.raw_socket(IFACE)
MAC = get_if_hwaddr(IFACE)
ETH = Ether(src=MAC, dst=HOST_MAC)
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def send(pkts):
    for p in pkts if isinstance(pkts, list) else [pkts]:
        raw.send(bytes(p) if not isinstance(p, (bytes, bytearray)) else p)


def echo_round_trip(sock, payload):
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("the echo closed the connection")
        got += chunk
    if got != payload:
        raise AssertionError("the echo changed the bytes")


def serves():
    if subprocess.run(["ping", "-c", "1", "-W", "2", HOST], capture_output=True).returncode != 0:
        raise AssertionError("no ping reply afterwards")
    with socket.create_connection((HOST, ECHO), timeout=5) as s:
        s.settimeout(5)
        echo_round_trip(s, bytes(rng.getrandbits(8) for _ in range(3000)))


class Live:
    """A live TCP connection to the echo (a kernel socket), the target of blind attacks."""

    def __enter__(self):
        self.s = socket.create_connection((HOST, ECHO), timeout=5)
        self.s.settimeout(5)
        echo_round_trip(self.s, b"hello")
        self.src, self.sport = self.s.getsockname()
        return self

    def tcp(self, **kw):
        return ETH / IP(src=self.src, dst=HOST) / TCP(sport=self.sport, dport=ECHO, **kw)

    def __exit__(self, *exc):
        if exc[0] is None:
            echo_round_trip(self.s, b"still here" * 100)
        self.s.close()


def rand32():
    return rng.getrandbits(32)


def blind_attack(name, flags, count, ack=True, payload=b"", sack=False):
    """Register a case sending `count` segments with `flags` and random numbers (a random ACK
    number too if `ack`; three random SACK blocks if `sack`) at a live connection."""

    def run():
        with Live() as c:
            segments = []
            for _ in range(count):
                kw = {"flags": flags, "seq": rand32()}
                if ack:
                    kw["ack"] = rand32()
                if sack:
                    kw["options"] = [("SAck", tuple(rand32() for _ in range(6)))]
                segments.append(c.tcp(**kw) / Raw(payload) if payload else c.tcp(**kw))
            send(segments)

    run.__name__ = name
    case(run)


blind_attack("blind_rsts_with_random_sequence_numbers", "R", 200, ack=False)
blind_attack("blind_rst_acks_with_random_numbers", "RA", 200)
blind_attack("syn_injected_into_a_live_connection", "S", 20, ack=False)
blind_attack("acks_of_data_never_sent", "A", 50)
blind_attack("data_with_random_sequence_numbers", "PA", 50, payload=b"x" * 100)
blind_attack("fins_with_random_sequence_numbers", "FA", 50)
blind_attack("bogus_sack_blocks", "A", 50, sack=True)


@case
def icmp_port_unreachable_quoting_the_live_connection():
    with Live() as c:
        quoted = IP(src=HOST, dst=c.src) / TCP(sport=ECHO, dport=c.sport, seq=rand32())
        send([ETH / IP(src=c.src, dst=HOST) / ICMP(type=3, code=3) / bytes(quoted)[:28] for _ in range(20)])


@case
def icmp_fragmentation_needed_with_mtu_68_quoting_the_live_connection():
    with Live() as c:
        quoted = IP(src=HOST, dst=c.src) / TCP(sport=ECHO, dport=c.sport, seq=rand32())
        send(ETH / IP(src=c.src, dst=HOST) / ICMP(type=3, code=4, nexthopmtu=68) / bytes(quoted)[:28])


@case
def icmp_fragmentation_needed_with_mtu_0_and_65535():
    with Live() as c:
        quoted = IP(src=HOST, dst=c.src) / TCP(sport=ECHO, dport=c.sport, seq=rand32())
        for mtu in (0, 1, 65535):
            send(ETH / IP(src=c.src, dst=HOST) / ICMP(type=3, code=4, nexthopmtu=mtu) / bytes(quoted)[:28])


@case
def icmp_redirects_and_source_quench():
    with Live() as c:
        quoted = bytes(IP(src=HOST, dst=c.src) / TCP(sport=ECHO, dport=c.sport))[:28]
        send([ETH / IP(src=c.src, dst=HOST) / ICMP(type=5, code=1, gw="10.77.0.99") / quoted,
              ETH / IP(src=c.src, dst=HOST) / ICMP(type=4, code=0) / quoted])


@case
def icmp_errors_quoting_nothing_or_garbage():
    send([ETH / IP(dst=HOST) / ICMP(type=3, code=3),
          ETH / IP(dst=HOST) / ICMP(type=3, code=4) / b"\x45",
          ETH / IP(dst=HOST) / ICMP(type=11, code=0) / bytes(rng.getrandbits(8) for _ in range(40))])


def syn_with_options(raw_options):
    tcp = bytearray(bytes(TCP(sport=rng.randint(1024, 65535), dport=HTTP, flags="S", seq=rand32())))
    opts = bytes(raw_options) + b"\0" * (-len(raw_options) % 4)
    tcp[12] = ((20 + len(opts)) // 4) << 4
    pkt = IP(src=HOST_SRC, dst=HOST, proto=6) / Raw(bytes(tcp) + opts)
    pkt = IP(bytes(pkt))
    seg = bytearray(bytes(pkt)[20:])
    seg[16:18] = b"\0\0"
    pseudo = socket.inet_aton(HOST_SRC) + socket.inet_aton(HOST) + struct.pack("!BBH", 0, 6, len(seg))
    struct.pack_into("!H", seg, 16, hostile_frames.csum(pseudo + bytes(seg)))
    return ETH / IP(src=HOST_SRC, dst=HOST, proto=6) / Raw(bytes(seg))


HOST_SRC = HOST.rsplit(".", 1)[0] + ".1"


@case
def syn_with_an_option_of_length_0():
    send(syn_with_options([2, 0, 5, 0xB4]))


@case
def syn_with_an_option_of_length_1():
    send(syn_with_options([3, 1, 7, 1]))


@case
def syn_with_an_option_running_past_the_header():
    send(syn_with_options([2, 40, 5, 0xB4]))


@case
def syn_with_a_short_mss_option_and_a_window_scale_of_30():
    send([syn_with_options([2, 3, 5, 1]), syn_with_options([3, 3, 30, 1])])


@case
def syn_with_a_timestamp_option_of_the_wrong_length():
    send(syn_with_options([8, 6, 1, 2, 3, 4]))


@case
def flag_combinations_no_stack_sends():
    pkts = []
    for flags in ("SF", "SR", "", "FPU", "F", "SFRPAUEC"):
        pkts.append(ETH / IP(src=HOST_SRC, dst=HOST) / TCP(sport=rng.randint(1024, 65535), dport=HTTP, flags=flags,
                                                          seq=rand32()))
    send(pkts)


@case
def data_offsets_below_5_and_past_the_packet():
    for off in (0, 3, 15):
        f = bytearray(bytes(ETH / IP(src=HOST_SRC, dst=HOST) / TCP(sport=4321, dport=HTTP, flags="S")))
        f[14 + 20 + 12] = off << 4
        hostile_frames.fix_ip_tcp(f)  # checksums right: the offset is what is wrong
        send(bytes(f))


@case
def urgent_data_on_a_live_connection():
    with Live() as c:
        c.s.send(b"u", socket.MSG_OOB)
        time.sleep(0.2)
        # The echo may return the urgent byte inline; drain it so the exit check starts clean.
        c.s.settimeout(1)
        try:
            c.s.recv(16)
        except socket.timeout:
            pass
        c.s.settimeout(5)


@case
def overlapping_fragments_with_different_bytes():
    whole = bytes(IP(src=HOST_SRC, dst=HOST, id=4242, proto=17) / UDP(sport=5000, dport=ECHO) / (b"A" * 64))
    l4 = whole[20:]
    a = IP(src=HOST_SRC, dst=HOST, id=4242, proto=17, flags="MF", frag=0) / Raw(l4[:48])
    b = IP(src=HOST_SRC, dst=HOST, id=4242, proto=17, frag=3) / Raw(b"B" * 48)  # overlaps bytes 24..48
    send([ETH / a, ETH / b])


@case
def a_fragment_past_65535_bytes():
    send(ETH / IP(src=HOST_SRC, dst=HOST, id=777, proto=17, frag=8190) / Raw(b"z" * 64))


@case
def a_thousand_fragments_never_completed():
    send([ETH / IP(src=HOST_SRC, dst=HOST, id=10000 + i, proto=17, flags="MF") / Raw(b"q" * 64) for i in range(1000)])


@case
def tiny_eight_byte_fragments_of_a_ping():
    send([ETH / f for f in fragment(IP(src=HOST_SRC, dst=HOST) / ICMP(id=9, seq=9) / (b"t" * 200), fragsize=8)])


@case
def duplicate_fragments():
    frags = fragment(IP(src=HOST_SRC, dst=HOST, id=999) / ICMP(id=10, seq=1) / (b"d" * 3000), fragsize=1000)
    send([ETH / f for f in frags + frags])


@case
def udp_lengths_longer_than_the_packet_and_below_8():
    for length in (9000, 7, 0):
        u = bytearray(bytes(UDP(sport=5001, dport=ECHO) / b"len"))
        struct.pack_into("!H", u, 4, length)
        send(ETH / IP(src=HOST_SRC, dst=HOST, proto=17) / Raw(bytes(u)))


@case
def udp_to_closed_ports_in_a_burst():
    send([ETH / IP(src=HOST_SRC, dst=HOST) / UDP(sport=5002, dport=40000 + i) / b"?" for i in range(500)])


@case
def ip_headers_that_lie():
    base = bytearray(bytes(IP(src=HOST_SRC, dst=HOST) / ICMP()))
    for ihl, total in ((15, len(base)), (5, 10), (5, 4000), (4, len(base))):
        f = bytearray(base)
        f[0] = 0x40 | ihl
        struct.pack_into("!H", f, 2, total)
        f[10:12] = b"\0\0"
        struct.pack_into("!H", f, 10, hostile_frames.csum(bytes(f[:20])))
        send(ETH / Raw(bytes(f)))


@case
def ttl_zero_broadcast_and_multicast_destinations():
    send([ETH / IP(src=HOST_SRC, dst=HOST, ttl=0) / ICMP(),
          Ether(src=MAC, dst="ff:ff:ff:ff:ff:ff") / IP(src=HOST_SRC, dst="255.255.255.255") / ICMP(),
          Ether(src=MAC, dst="01:00:5e:00:00:01") / IP(src=HOST_SRC, dst="224.0.0.1") / ICMP()])


@case
def frames_of_other_kinds():
    send([Ether(src=MAC, dst=HOST_MAC, type=0x8100) / Raw(b"\x00\x05\x08\x00" + bytes(IP(dst=HOST) / ICMP())),
          Ether(src=MAC, dst=HOST_MAC, type=0x86DD) / bytes(40),
          Ether(src=MAC, dst=HOST_MAC, type=0x1234) / bytes(50),
          bytes(Ether(src=MAC, dst=HOST_MAC, type=0x0800))[:14] + b"\x45"])


@case
def two_thousand_slowloris_connections():
    resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))
    held = []
    try:
        for i in range(2000):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect((HOST, HTTP))
            except BlockingIOError:
                pass
            held.append(s)
        time.sleep(1.0)
        for s in held:
            try:
                s.send(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never finished
            except OSError:
                pass
        serves()  # new clients are served while they hang
    finally:
        for s in held:
            s.close()


@case
def ten_thousand_mutated_segments():
    hostile_frames.mutate(IFACE, HOST_MAC, HOST, 10000)


hostile_runner.run(CASES, serves, LINERATE, HOST_PID, "hostile cases")
