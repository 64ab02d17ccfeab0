"""RX bypass and activity watchers from Python."""

import pytest

import linerate as lr
from test_tcp import establish


def test_bypass_hands_every_byte_to_the_handler_in_order() -> None:
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24", loss=0.01, reorder=0.01, seed=3), net.host("10.0.0.2/24")
    c, s = establish(net, a, b)
    got = bytearray()
    slots: set[int] = set()

    def handler(slot: int, data: bytes) -> None:
        slots.add(slot)
        got.extend(data)

    b.set_rx_handler(handler)
    c.send(b"buffered first; ")
    net.run(ms=1)
    s.set_rx_bypass(True)
    data = bytes(range(256)) * 2000
    c.send_all(data)
    for _ in range(100_000):
        net.run(ms=0.05)
        with pytest.raises(BlockingIOError):
            s.recv()  # bypassed data never waits in the receive buffer
        if len(got) >= 16 + len(data):
            break
    assert bytes(got) == b"buffered first; " + data
    assert slots == {s.slot}


def test_a_handler_exception_is_raised_by_run() -> None:
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    c, s = establish(net, a, b)

    def handler(slot: int, data: bytes) -> None:
        raise ValueError("handler refused")

    b.set_rx_handler(handler)
    s.set_rx_bypass(True)
    c.send(b"x")
    with pytest.raises(ValueError, match="handler refused"):
        for _ in range(100):
            net.run(ms=0.05)


def test_bypass_without_a_handler_is_refused() -> None:
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    c, s = establish(net, a, b)
    with pytest.raises(ValueError, match="handler"):
        s.set_rx_bypass(True)


def test_activity_lists_only_connections_with_segments() -> None:
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    c1, s1 = establish(net, a, b, port=5001)
    c2, s2 = establish(net, a, b, port=5002)
    w = b.tcp_watch()
    assert b.take_activity(w) == []
    c2.send(b"hello")
    net.run(ms=1)
    assert b.take_activity(w) == [s2.slot]
    assert b.take_activity(w) == []
    with pytest.raises(ValueError):
        b.take_activity(999)
