"""The Python API over an in-process testbed: hosts, UDP, ping, raw Ethernet, counters."""

import linerate as lr
import pytest


@pytest.fixture
def net() -> lr.Testbed:
    return lr.Testbed()


def test_udp_round_trip_with_sender_address(net: lr.Testbed) -> None:
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    srv = b.udp_bind(7)
    cli = a.udp_bind(0)
    assert cli.send_to(b"hello", ("10.0.0.2", 7))
    net.run(ms=1)
    got = srv.recv_from()
    assert got is not None
    data, (ip, port) = got
    assert data == b"hello" and ip == "10.0.0.1" and port == cli.port
    assert srv.recv_from() is None
    c = b.counters()
    assert c["udp_rx_datagrams"] == 1 and lr.rx_accounted(c)


def test_ping_replies_and_arp_table(net: lr.Testbed) -> None:
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    rtts = a.ping("10.0.0.2", count=5)
    assert len(rtts) == 5 and all(r > 0 for r in rtts)
    assert a.arp_table()["10.0.0.2"] == b.mac
    assert b.counters()["icmp_echo_replied"] == 5


def test_ping_to_nobody_times_out_and_counts_unresolved(net: lr.Testbed) -> None:
    a = net.host("10.0.0.1/24")
    assert a.ping("10.0.0.99", count=1, timeout=3) == []
    assert a.counters()["tx_drop_arp_unresolved"] == 1


def test_closed_port_reports_icmp_error(net: lr.Testbed) -> None:
    a, _ = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    s = a.udp_bind()
    s.send_to(b"?", ("10.0.0.2", 4444))
    net.run(ms=1)
    assert s.icmp_errors == 1


def test_raw_ethernet(net: lr.Testbed) -> None:
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    ra, rb = a.raw_bind(0x88B5), b.raw_bind(0x88B5)
    ra.send(b.mac, b"raw payload")
    net.run(ms=1)
    raw = rb.recv()
    assert raw is not None
    payload, src = raw
    assert payload.startswith(b"raw payload") and src == a.mac


def test_impaired_link_loses_about_what_was_asked(net: lr.Testbed) -> None:
    a = net.host("10.0.0.1/24", loss=0.1, seed=3)
    b = net.host("10.0.0.2/24")
    net.run(ms=1)
    srv, cli = b.udp_bind(9), a.udp_bind()
    got = 0
    for i in range(2000):
        cli.send_to(i.to_bytes(4, "big"), ("10.0.0.2", 9))
        net.run(ms=0.02)
        while srv.recv_from() is not None:
            got += 1
    net.run(ms=2)
    while srv.recv_from() is not None:
        got += 1
    assert 1700 < got < 1900
    assert a.counters()["tx_frames"] >= 2000


def test_bad_input_gives_clear_errors(net: lr.Testbed) -> None:
    with pytest.raises(ValueError, match="not a valid IPv4"):
        net.host("10.0.0.300/24")
    a = net.host("10.0.0.1/24")
    with pytest.raises(OSError, match="already in use"):
        a.udp_bind(5)
        a.udp_bind(5)
    with pytest.raises(ValueError, match="not an IPv4 address"):
        a.ping("nowhere")
    with pytest.raises(ValueError, match="probability"):
        net.host("10.0.0.3/24", loss=2.0)
    with pytest.raises(OSError, match="exceeds"):
        a.udp_bind().send_to(b"x" * 65508, ("10.0.0.2", 9))
