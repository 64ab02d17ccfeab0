"""Hostile frames for the interop tests, sent from a raw AF_PACKET socket on IFACE to a
linerate host at HOST_IP / HOST_MAC.

  syn-flood IFACE HOST_MAC HOST_IP COUNT RATE GO_FILE
      COUNT SYNs to port 80 from spoofed sources of the host's /24 (seeded), at RATE per
      second; GO_FILE is written once the frames are built, just before the first is sent.
  mutate IFACE HOST_MAC HOST_IP COUNT
      COUNT frames made from valid ICMP, UDP, TCP and fragment templates addressed to the
      host, each damaged (bytes flipped, cut short, garbage appended, lengths and offsets
      rewritten), seeded; prints how many were sent.

Frames are built with scapy once, then changed as bytes with checksums recomputed where the
damage is not meant to be in the checksum (scapy building thousands of packets one by one
is too slow for two cores).
"""

import random
import socket
import struct
import sys
import time

from scapy.all import ICMP, IP, TCP, UDP, Ether, Raw, fragment, get_if_hwaddr


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def fix_ip_tcp(f):
    """Recompute the IPv4 header and TCP checksums of a 14+20+TCP frame in place."""
    f[24:26] = b"\0\0"
    struct.pack_into("!H", f, 24, csum(bytes(f[14:34])))
    f[50:52] = b"\0\0"
    tcp = bytes(f[34:])
    pseudo = bytes(f[26:34]) + struct.pack("!BBH", 0, 6, len(tcp))
    struct.pack_into("!H", f, 50, csum(pseudo + tcp))


def raw_socket(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    return s


def syn_flood(iface, host_mac, host_ip, count, rate, go_file):
    random.seed(7)
    mac = get_if_hwaddr(iface)
    tmpl = Ether(src=mac, dst=host_mac) / IP(dst=host_ip) / TCP(dport=80, flags="S", options=[("MSS", 1460)])
    base = bytearray(bytes(tmpl))
    net = [int(x) for x in host_ip.split(".")[:3]]
    frames = []
    for _ in range(count):
        f = bytearray(base)
        f[26:30] = bytes(net + [random.randint(100, 250)])
        struct.pack_into("!H", f, 34, random.randint(1024, 65535))
        struct.pack_into("!I", f, 38, random.getrandbits(32))
        fix_ip_tcp(f)
        frames.append(bytes(f))
    s = raw_socket(iface)
    open(go_file, "w").write("go")
    t0 = time.monotonic()
    for i in range(0, len(frames), 50):
        for f in frames[i:i + 50]:
            s.send(f)
        ahead = t0 + (i + 50) / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    print("flood: %d SYNs in %.1f s" % (len(frames), time.monotonic() - t0))


def templates(mac, host_mac, host_ip, src_ip):
    eth = Ether(src=mac, dst=host_mac)
    ip = IP(src=src_ip, dst=host_ip)
    out = [
        eth / ip / ICMP(id=7, seq=1) / Raw(b"x" * 56),
        eth / ip / UDP(sport=4000, dport=7) / Raw(b"hello hostile world"),
        eth / ip / TCP(sport=4001, dport=80, flags="S", options=[("MSS", 1460), ("WScale", 7), ("SAckOK", b"")]),
        eth / ip / TCP(sport=4002, dport=80, flags="PA", seq=1000, ack=2000) / Raw(b"GET / HTTP/1.0\r\n\r\n"),
        eth / ip / TCP(sport=4003, dport=9, flags="A", options=[("Timestamp", (1, 2)), ("SAck", (5, 9))]),
    ]
    out += [eth / f for f in fragment(ip / UDP(sport=4004, dport=7) / Raw(b"f" * 3000), fragsize=1000)]
    return [bytearray(bytes(t)) for t in out]


def damage(f, rng):
    """One random kind of damage to frame f (a bytearray), returned as bytes."""
    kind = rng.randrange(8)
    if kind == 0:  # flip a few bytes anywhere after the Ethernet header
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(14, len(f))
            f[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # cut short
        f = f[:rng.randrange(14, len(f))]
    elif kind == 2:  # garbage appended (IP total length now disagrees)
        f += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64)))
    elif kind == 3:  # IHL and total length rewritten
        f[14] = 0x40 | rng.randrange(16)
        struct.pack_into("!H", f, 16, rng.randrange(65536))
    elif kind == 4:  # fragment offset and flags rewritten
        struct.pack_into("!H", f, 20, rng.randrange(65536))
    elif kind == 5 and f[23] == 6:  # TCP data offset and flags rewritten, checksums right
        f[46] = rng.randrange(256)
        f[47] = rng.randrange(256)
        if f[14] == 0x45:
            fix_ip_tcp(f)
    elif kind == 6:  # options area filled with garbage, checksums right when TCP
        for i in range(34 + 20 if f[23] == 6 else 34, min(len(f), 74)):
            f[i] = rng.randrange(256)
        if f[23] == 6 and f[14] == 0x45:
            fix_ip_tcp(f)
    else:  # a header-only frame
        f = f[:rng.choice([14, 15, 33, 34, 35, 53])]
    return bytes(f)


def mutate(iface, host_mac, host_ip, count):
    rng = random.Random(11)
    mac = get_if_hwaddr(iface)
    src_ip = host_ip.rsplit(".", 1)[0] + ".1"
    base = templates(mac, host_mac, host_ip, src_ip)
    frames = [damage(bytearray(rng.choice(base)), rng) for _ in range(count)]
    s = raw_socket(iface)
    sent = 0
    for i, f in enumerate(frames):
        try:
            s.send(f)
            sent += 1
        except OSError:
            pass  # a frame the interface refuses (shorter than its minimum)
        if i % 200 == 199:
            time.sleep(0.002)
    print("mutate: %d of %d damaged frames sent" % (sent, len(frames)))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "syn-flood":
        syn_flood(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]), sys.argv[7])
    elif cmd == "mutate":
        mutate(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        sys.exit("usage: hostile_frames.py syn-flood|mutate ...")
