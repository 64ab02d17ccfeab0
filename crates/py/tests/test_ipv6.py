"""IPv6 addresses as Python's ``socket`` writes them, against Linux over a TAP: a host made by
``Host.on_tap`` also has fd77::2 (Linux fd77::1, as ``linerate tap``); TCP both ways and UDP
both ways with ``("fd77::1", port)`` pairs and ``(host, port, flowinfo, scope_id)`` 4-tuples,
Linux's own ``socket`` on the other side, the bytes checked; an IPv4 and an IPv6 connection
to one listener in the same run; bad addresses raise ``TypeError``/``ValueError``. Every
namespace is deleted afterwards."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from typing import Iterator, List

import pytest

import linerate as lr
from helpers import closing

HOST, LINUX = "10.77.27.2", "10.77.27.1"
HOST6, LINUX6 = "fd77::2", "fd77::1"

# The Linux side's programs (run in the namespace with this interpreter).
TCP_CLIENT = """
import socket, sys
data = bytes(range(256)) * 4000
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20)
s.sendall(data)
s.shutdown(socket.SHUT_WR)
got = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    got += chunk
print(len(got), got == data)
"""

TCP_SERVER = """
import hashlib, socket, sys
srv = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((sys.argv[1], int(sys.argv[2])))
srv.listen(1)
srv.settimeout(20)
print("ready", flush=True)
c, peer = srv.accept()
c.settimeout(20)
got = b""
while True:
    chunk = c.recv(65536)
    if not chunk:
        break
    got += chunk
c.sendall(hashlib.sha256(got).hexdigest().encode())
c.close()
print(peer[0], len(got), flush=True)
"""

UDP_CLIENT = """
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.settimeout(5)
s.bind((sys.argv[3], 0))
out = []
for n in (64, 1200, 4000):
    payload = bytes([n % 251]) * n
    for _ in range(5):
        s.sendto(payload, (sys.argv[1], int(sys.argv[2])))
        try:
            back, frm = s.recvfrom(65536)
        except socket.timeout:
            continue
        out.append((len(back), back == payload, frm[0]))
        break
print(out)
"""


def tap_host() -> lr.Host:
    """A dual-stack TAP host; fails with NOT RUN without root or tools."""
    if os.geteuid() != 0:
        pytest.fail("NOT RUN: needs root: the test creates a network namespace and a TAP device", pytrace=False)
    if shutil.which("ip") is None:
        pytest.fail("NOT RUN: `ip` is missing (make setup-system installs it)", pytrace=False)
    return lr.Host.on_tap(f"{HOST}/24", f"{LINUX}/24", prefix="lr27", cidr6=f"{HOST6}/64", linux_cidr6=f"{LINUX6}/64")


@pytest.fixture
def host() -> Iterator[lr.Host]:
    yield from closing(tap_host())


def in_ns(h: lr.Host, program: str, *args: str) -> List[str]:
    assert h.netns is not None
    return ["ip", "netns", "exec", h.netns, sys.executable, "-c", program, *args]


def echo_until_closed(conn: lr.TcpConn) -> int:
    """Echo what `conn` receives until the peer closes; the bytes echoed."""
    conn.settimeout(20)
    n = 0
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        conn.sendall(chunk)
        n += len(chunk)
    conn.close()
    return n


def test_one_listener_echoes_linux_clients_over_ipv4_and_ipv6(host: lr.Host) -> None:
    want = len(bytes(range(256)) * 4000)
    with host.tcp_listen(7600) as lst:
        lst.settimeout(20)
        for server, family in ((HOST6, 6), (HOST, 4)):
            client = subprocess.Popen(in_ns(host, TCP_CLIENT, server, "7600"), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
            conn, peer = lst.accept()
            if family == 6:
                assert peer == (LINUX6, peer[1], 0, 0), peer
                assert conn.getpeername() == peer
            else:
                assert peer == (LINUX, peer[1]), peer
            assert echo_until_closed(conn) == want
            out, err = client.communicate(timeout=30)
            assert client.returncode == 0, err
            assert out.split() == [str(want), "True"], out


def test_a_connection_to_a_linux_server_over_ipv6_carries_the_bytes(host: lr.Host) -> None:
    server = subprocess.Popen(in_ns(host, TCP_SERVER, "::", "7601"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == "ready"
        data = os.urandom(300_000)
        conn = host.tcp_connect((LINUX6, 7601, 0, 0))
        conn.settimeout(20)
        # tcp_connect returns at once (socket.connect would wait): a shutdown before the
        # handshake ends would close the connection in SYN-SENT (RFC 9293 3.10.4).
        deadline = time.monotonic() + 10
        while not conn.connected and time.monotonic() < deadline:
            time.sleep(0.01)
        assert conn.connected, "no connection to the Linux server"
        conn.sendall(data)
        conn.shutdown()
        reply = b""
        while True:
            chunk = conn.recv(4096)
            if not chunk:
                break
            reply += chunk
        conn.close()
        assert reply.decode() == hashlib.sha256(data).hexdigest()
        out, err = server.communicate(timeout=30)
        assert server.returncode == 0, err
        assert out.split() == [HOST6, str(len(data))], out
    finally:
        server.kill()
        server.wait()


def test_udp_datagrams_both_ways_with_ipv6_tuples(host: lr.Host) -> None:
    with host.udp_bind(7602) as u:
        u.settimeout(10)
        client = subprocess.Popen(in_ns(host, UDP_CLIENT, HOST6, "7602", LINUX6), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        for n in (64, 1200, 4000):
            data, frm = u.recvfrom(65536)
            assert len(data) == n and frm[0] == LINUX6 and len(frm) == 4, (len(data), frm)
            u.sendto(data, frm)  # the 4-tuple as received
        out, err = client.communicate(timeout=30)
        assert client.returncode == 0, err
        assert out.strip() == str([(64, True, HOST6), (1200, True, HOST6), (4000, True, HOST6)]), out
        # A pair names an IPv6 destination too.
        assert u.sendto(b"x" * 10, (LINUX6, 9)) == 10


def test_bad_addresses_raise_as_socket_does(host: lr.Host) -> None:
    with host.udp_bind(7603) as u:
        with pytest.raises(ValueError):
            u.sendto(b"x", (HOST, 9, 0, 0))  # a 4-tuple is IPv6's
        with pytest.raises(ValueError):
            u.sendto(b"x", ("fd77::zz", 9))
        with pytest.raises(ValueError):
            u.sendto(b"x", (LINUX6, 70000))
        with pytest.raises(ValueError):
            u.sendto(b"x", (LINUX6, 9, 1 << 20, 0))
        with pytest.raises(TypeError):
            u.sendto(b"x", (LINUX6,))  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            u.sendto(b"x", f"[{LINUX6}]:9")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        lr.Host.on_tap(prefix="lr27b", cidr6="fd78::2/64", linux_cidr6="fd77::1/64")
