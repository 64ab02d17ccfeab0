"""TCP from Python on an in-process testbed."""

from typing import Optional
import hashlib

import linerate as lr


def establish(net: lr.Testbed, a: lr.Host, b: lr.Host, port: int = 5001) -> tuple[lr.TcpConn, lr.TcpConn]:
    lst = b.tcp_listen(port)
    c = a.tcp_connect(("10.0.0.2", port))
    s: Optional[lr.TcpConn] = None
    for _ in range(1000):
        net.run(ms=0.05)
        if s is None:
            try:
                s, _ = lst.accept()
            except BlockingIOError:
                pass
        if s is not None and c.connected:
            return c, s
    raise AssertionError("no connection")


def test_transfer_with_loss_keeps_the_hash() -> None:
    net = lr.Testbed()
    a = net.host("10.0.0.1/24", loss=0.02, seed=5)
    b = net.host("10.0.0.2/24")
    c, s = establish(net, a, b)
    data = bytes(range(256)) * 4000
    c.send_all(data)
    c.shutdown()
    got = bytearray()
    for _ in range(200_000):
        net.run(ms=0.05)
        try:
            chunk = s.recv()
        except BlockingIOError:
            continue
        if chunk == b"":
            break
        got += chunk
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest()
    st = c.stats()
    assert st["retransmits"] > 0 and st["sack"] and st["timestamps"]
    # Loss recovery is visible per connection: RACK found the losses; nothing was a duplicate.
    assert st["rack_lost"] > 0 and st["recoveries_undone"] == 0
    for key in ("tlp_probes", "dsacks_received", "dsacks_sent", "spurious_rtos", "tx_buffer", "rx_buffer"):
        assert isinstance(st[key], int) and st[key] >= 0, key
    assert a.counters()["tcp_rack_lost"] >= st["rack_lost"]


def test_refused_connection_raises() -> None:
    net = lr.Testbed()
    a, _ = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    c = a.tcp_connect(("10.0.0.2", 9))
    net.run(ms=2)
    try:
        c.connected
    except ConnectionRefusedError as e:
        assert "refused" in str(e)
    else:
        raise AssertionError("expected refused")
