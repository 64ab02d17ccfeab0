"""The hostile IPv6 cases of issue 27, one after another against a linerate host from the Linux
side of its link, each followed by a check that the host still answers `ping -6` and, with the
linerate binary and the host's process id, that its receive accounting identity (rx_frames =
rx_delivered + sum of rx_drop_*) holds exactly, read from `linerate stats --json`.

  hostile_cases6.py IFACE HOST_MAC HOST_IP6 [LINERATE_BIN HOST_PID]

Prints one line per case ("ok NAME" or "FAILED NAME: why") and exits 1 if any failed.
"""

import random
import subprocess
import sys

from scapy.all import (
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6ND_RA,
    ICMPv6NDOptPrefixInfo,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
    PadN,
    Ether,
    Raw,
    get_if_hwaddr,
)

sys.path.insert(0, __import__("os").path.dirname(__file__))
import hostile_runner  # noqa: E402
import hostile_frames  # noqa: E402  (the raw socket helper, shared with the other suites)

IFACE, HOST_MAC, HOST = sys.argv[1], sys.argv[2], sys.argv[3]
LINERATE, HOST_PID = (sys.argv[4], int(sys.argv[5])) if len(sys.argv) > 5 else (None, None)
LINUX = "fd77::1"
rng = random.Random(27)
raw = hostile_frames.raw_socket(IFACE)
MAC = get_if_hwaddr(IFACE)
ETH = Ether(src=MAC, dst=HOST_MAC)
ALL_NODES_MAC = "33:33:00:00:00:01"
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def send(pkts):
    for p in pkts if isinstance(pkts, list) else [pkts]:
        raw.send(bytes(p))


def solicited_node(addr):
    import ipaddress

    low = ipaddress.IPv6Address(addr).packed[13:]
    group = "ff02::1:ff%02x:%02x%02x" % (low[0], low[1], low[2])
    mac = "33:33:ff:%02x:%02x:%02x" % (low[0], low[1], low[2])
    return group, mac


def rand_mac():
    return "02:ee:%02x:%02x:%02x:%02x" % tuple(rng.getrandbits(8) for _ in range(4))


def serves():
    if subprocess.run(["ping", "-6", "-c", "1", "-W", "2", HOST], capture_output=True).returncode != 0:
        raise AssertionError("no ping -6 reply afterwards")


@case
def forged_neighbor_advertisements_for_other_hosts():
    # Unsolicited, overriding, for addresses the host never asked about: not learned.
    send([ETH / IPv6(src=LINUX, dst=HOST, hlim=255) / ICMPv6ND_NA(tgt=f"fd77::{i:x}", R=0, S=0, O=1)
          / ICMPv6NDOptDstLLAddr(lladdr=rand_mac()) for i in range(0x100, 0x300)])
    # For the Linux side, without the override flag: the known address stays.
    send(ETH / IPv6(src=LINUX, dst=HOST, hlim=255) / ICMPv6ND_NA(tgt=LINUX, R=0, S=0, O=0)
         / ICMPv6NDOptDstLLAddr(lladdr=rand_mac()))


@case
def advertisements_claiming_the_hosts_own_address():
    send([Ether(src=rand_mac(), dst=ALL_NODES_MAC) / IPv6(src="fe80::bad", dst="ff02::1", hlim=255)
          / ICMPv6ND_NA(tgt=HOST, R=0, S=0, O=1) / ICMPv6NDOptDstLLAddr(lladdr=rand_mac()) for _ in range(50)])


@case
def a_neighbor_solicitation_flood_from_five_thousand_sources():
    group, gmac = solicited_node(HOST)
    send([Ether(src=MAC, dst=gmac) / IPv6(src=f"fd77::1:{i:x}", dst=group, hlim=255) / ICMPv6ND_NS(tgt=HOST)
          / ICMPv6NDOptSrcLLAddr(lladdr=rand_mac()) for i in range(5000)])


@case
def a_router_advertisement_flood_with_prefixes():
    send([Ether(src=rand_mac(), dst=ALL_NODES_MAC) / IPv6(src=f"fe80::{i + 1:x}", dst="ff02::1", hlim=255)
          / ICMPv6ND_RA(routerlifetime=1800) / ICMPv6NDOptSrcLLAddr(lladdr=rand_mac())
          / ICMPv6NDOptPrefixInfo(prefix=f"2001:db8:{i:x}::", prefixlen=64, L=1, A=1)
          for i in range(1000)])


@case
def neighbor_discovery_that_crossed_a_router_or_lies():
    group, gmac = solicited_node(HOST)
    send([
        Ether(src=MAC, dst=gmac) / IPv6(src=LINUX, dst=group, hlim=64) / ICMPv6ND_NS(tgt=HOST),
        Ether(src=MAC, dst=gmac) / IPv6(src="::", dst=group, hlim=255) / ICMPv6ND_NS(tgt=HOST)
        / ICMPv6NDOptSrcLLAddr(lladdr=MAC),
        ETH / IPv6(src=LINUX, dst=HOST, hlim=255) / ICMPv6ND_NS(tgt="ff02::1"),
        ETH / IPv6(src=LINUX, dst=HOST, hlim=255) / ICMPv6ND_NS(tgt=HOST) / Raw(b"\x01\x00" + b"\x00" * 6),
    ])


@case
def extension_header_chains_that_never_end():
    chain = IPv6ExtHdrDestOpt()
    for _ in range(60):
        chain = chain / IPv6ExtHdrDestOpt()
    send([ETH / IPv6(src=LINUX, dst=HOST) / chain / ICMPv6EchoRequest() for _ in range(100)])


@case
def routing_header_type_0():
    send([ETH / IPv6(src=LINUX, dst=HOST) / IPv6ExtHdrRouting(type=0, segleft=1, addresses=["fd77::9"])
          / ICMPv6EchoRequest() for _ in range(100)])


@case
def a_hop_by_hop_flood_with_padding_and_unknown_options():
    pad = IPv6ExtHdrHopByHop(options=[PadN(optdata=b"\x00" * 4)] * 8)
    unknown = IPv6ExtHdrHopByHop(options=[PadN(otype=0x9e, optdata=b"\xff" * 4)])
    send([ETH / IPv6(src=LINUX, dst=HOST) / (pad if i % 2 else unknown) / ICMPv6EchoRequest()
          for i in range(3000)])


@case
def overlapping_ipv6_fragments_with_different_bytes():
    for ident in range(1, 50):
        a = IPv6ExtHdrFragment(id=ident, offset=0, m=1, nh=58) / Raw(bytes(ICMPv6EchoRequest(data=b"A" * 64)))
        b = IPv6ExtHdrFragment(id=ident, offset=1, m=0, nh=58) / Raw(b"B" * 64)
        send([ETH / IPv6(src=LINUX, dst=HOST) / a, ETH / IPv6(src=LINUX, dst=HOST) / b])


@case
def tiny_and_never_completed_ipv6_fragments():
    send([ETH / IPv6(src=LINUX, dst=HOST) / IPv6ExtHdrFragment(id=5000 + i, offset=i % 50, m=1, nh=17) / Raw(b"x" * 8)
          for i in range(1000)])
    send([ETH / IPv6(src=LINUX, dst=HOST) / IPv6ExtHdrFragment(id=9000 + i, offset=0, m=1, nh=17) / Raw(b"y" * 3)
          for i in range(100)])


hostile_runner.run(CASES, serves, LINERATE, HOST_PID, "hostile IPv6 cases")
