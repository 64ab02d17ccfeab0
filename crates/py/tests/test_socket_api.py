"""Sockets behave like Python's non-blocking sockets: standard exceptions with errno, context
managers, idempotent close, bytes-like input, and a repr with addresses and state."""

from typing_extensions import Buffer
from typing import Any, cast
from typing import Optional
import array
import errno

import pytest

import linerate as lr


def pair() -> tuple[lr.Testbed, lr.Host, lr.Host]:
    net = lr.Testbed()
    return net, net.host("10.0.0.1/24"), net.host("10.0.0.2/24")


def establish(net: lr.Testbed, a: lr.Host, b: lr.Host, port: int = 5001) -> tuple[lr.TcpListener, lr.TcpConn, lr.TcpConn]:
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
            return lst, c, s
    raise AssertionError("no connection")


def test_refused_connection_is_connection_refused_error() -> None:
    net, a, _ = pair()
    c = a.tcp_connect(("10.0.0.2", 9))
    net.run(ms=2)
    with pytest.raises(ConnectionRefusedError) as e:
        c.connected
    assert e.value.errno == errno.ECONNREFUSED


def test_reset_is_connection_reset_error_on_the_peer() -> None:
    net, a, b = pair()
    _, c, s = establish(net, a, b)
    c.abort()
    net.run(ms=1)
    with pytest.raises(ConnectionResetError) as e:
        s.recv()
    assert e.value.errno == errno.ECONNRESET


def test_unanswered_syn_times_out_with_timeout_error() -> None:
    net = lr.Testbed()
    a = net.host("10.0.0.1/24")
    net.host("10.0.0.2/24", loss=1.0)
    c = a.tcp_connect(("10.0.0.2", 80))
    for _ in range(600):
        net.run(ms=1000)
        try:
            if c.connected:
                raise AssertionError("connected through a link that loses everything")
        except TimeoutError as e:
            assert e.errno == errno.ETIMEDOUT
            return
    raise AssertionError("the connection never timed out")


def test_would_block_and_broken_pipe_and_closed() -> None:
    net, a, b = pair()
    _, c, s = establish(net, a, b)
    buf = bytearray(16)
    with pytest.raises(BlockingIOError) as e:
        s.recv_into(buf)
    assert e.value.errno == errno.EAGAIN
    c.shutdown()
    with pytest.raises(BrokenPipeError) as pipe:
        c.send(b"after shutdown")
    assert pipe.value.errno == errno.EPIPE
    c.close()
    with pytest.raises(OSError) as closed:
        c.send(b"x")
    assert closed.value.errno == errno.EBADF


def test_accept_recv_and_send_raise_blocking_io_error_when_they_would_block() -> None:
    """accept, recv and send behave as a non-blocking socket's: BlockingIOError (EAGAIN)
    instead of None or 0 when nothing can be done yet."""
    net, a, b = pair()
    lst = b.tcp_listen(5002)
    with pytest.raises(BlockingIOError) as e:
        lst.accept()
    assert e.value.errno == errno.EAGAIN
    c = a.tcp_connect(("10.0.0.2", 5002))
    s = None
    for _ in range(1000):
        net.run(ms=0.05)
        try:
            s, _ = lst.accept()
            break
        except BlockingIOError:
            pass
    assert s is not None
    with pytest.raises(BlockingIOError) as e:
        s.recv()
    assert e.value.errno == errno.EAGAIN
    # Without running the network the send buffer fills: every accepted count is positive,
    # then send raises instead of returning 0.
    queued, chunk = 0, b"x" * 65536
    with pytest.raises(BlockingIOError) as e:
        for _ in range(10_000):
            n = c.send(chunk)
            assert n > 0
            queued += n
    assert e.value.errno == errno.EAGAIN and queued > 0
    assert c.send(b"") == 0, "an empty send is not a would-block"
    got = 0
    for _ in range(10_000):
        net.run(ms=0.05)
        try:
            got += len(s.recv())
        except BlockingIOError:
            pass
        if got == queued:
            break
    assert got == queued


def test_address_in_use_and_message_too_long_are_os_errors() -> None:
    net, a, _ = pair()
    a.udp_bind(7)
    with pytest.raises(OSError) as e:
        a.udp_bind(7)
    assert e.value.errno == errno.EADDRINUSE
    with pytest.raises(OSError) as e:
        a.udp_bind().send_to(b"x" * 65508, ("10.0.0.2", 9))
    assert e.value.errno == errno.EMSGSIZE
    with pytest.raises(ValueError):
        a.udp_bind().send_to(b"x", ("not an ip", 9))
    u = a.udp_bind()
    with pytest.raises(BlockingIOError):
        u.recv_from_into(bytearray(8))


def test_context_managers_close_and_close_is_idempotent() -> None:
    net, a, b = pair()
    with b.udp_bind(7) as srv, a.udp_bind() as cli:
        assert cli.send_to(b"hi", ("10.0.0.2", 7))
        net.run(ms=1)
        got = srv.recv_from()
        assert got is not None and got[0] == b"hi"
    with pytest.raises(OSError) as e:
        srv.recv_from()
    assert e.value.errno == errno.EBADF
    srv.close()  # a second close does nothing
    b.udp_bind(7).close()  # the port was released by the with block
    with b.tcp_listen(80) as lst:
        pass
    lst.close()
    b.tcp_listen(80)  # released
    lst2, c, s = establish(net, a, b, port=81)
    with c:
        pass
    c.close()
    assert c.state == "Closed"
    net.run(ms=5)
    assert s.recv() == b""
    s.close()
    s.close()
    with a.raw_bind(0x88B5) as r:
        pass
    r.close()


def test_bytes_like_input_is_accepted() -> None:
    net, a, b = pair()
    srv, cli = b.udp_bind(7), a.udp_bind()
    payloads: list[Buffer] = [b"bytes", bytearray(b"bytearray"), memoryview(b"memoryview"), array.array("B", b"array")]
    for p in payloads:
        assert cli.send_to(p, ("10.0.0.2", 7))
    net.run(ms=1)
    got = []
    while (r := srv.recv_from()) is not None:
        got.append(r[0])
    assert got == [bytes(p) for p in payloads]
    # A wider array goes as its raw bytes, like socket.send does.
    assert cli.send_to(array.array("H", [1, 2]), ("10.0.0.2", 7))
    net.run(ms=1)
    out = bytearray(3)
    n, (ip, _) = srv.recv_from_into(out)
    assert (n, ip, bytes(out)) == (3, "10.0.0.1", bytes(array.array("H", [1, 2]))[:3])
    with pytest.raises(TypeError, match="bytes-like"):
        cli.send_to(cast(Any, "a str is not bytes"), ("10.0.0.2", 7))  # ill-typed on purpose
    with pytest.raises(TypeError, match="writable"):
        srv.recv_from_into(cast(Any, b"read-only"))  # ill-typed on purpose
    _, c, s = establish(net, a, b)
    assert c.send(memoryview(b"0123456789")[2:6]) == 4
    c.send_all(bytearray(b"!"))
    net.run(ms=1)
    view = memoryview(bytearray(10))
    assert s.recv_into(view[1:], 3) == 3
    assert bytes(view[:4]) == b"\x00234"
    assert s.recv() == b"5!"


def test_repr_shows_addresses_and_state() -> None:
    net, a, b = pair()
    lst, c, s = establish(net, a, b, port=5001)
    assert repr(a) == "<linerate.Host 10.0.0.1 on testbed>"
    assert repr(lst) == "<linerate.TcpListener 10.0.0.2 on testbed:5001 listening>"
    assert "10.0.0.1 on testbed" in repr(c) and "-> 10.0.0.2:5001 Established" in repr(c)
    assert c.peer == ("10.0.0.2", 5001)
    u = a.udp_bind(53)
    assert repr(u) == "<linerate.UdpSocket 10.0.0.1 on testbed:53 open>"
    u.close()
    assert repr(u).endswith(" closed>")
    lst.close()
    assert repr(lst).endswith(" closed>")
