"""Hosts beyond virtual time: a Python linerate host on a TAP device in a namespace the test
creates, talking to Linux in that namespace (Python's own sockets, ping), and two hosts in two
processes on one shared-memory link. Every namespace and link is gone afterwards."""

from typing import Optional
import hashlib
import os
import subprocess
import sys
import time

import pytest

import linerate as lr

HOST, LINUX = "10.77.0.2", "10.77.0.1"

# The Linux peer, run with `ip netns exec`: TCP to the linerate echo (half-close, read to the
# end, print the digest), then UDP to the linerate UDP echo.
LINUX_CLIENT = r"""
import hashlib, socket, sys
host, data = sys.argv[1], bytes(range(256)) * 400
with socket.create_connection((host, 7000), timeout=10) as s:
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    got = bytearray()
    while chunk := s.recv(65536):
        got += chunk
print("tcp", hashlib.sha256(got).hexdigest())
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
    u.settimeout(5)
    u.sendto(b"ping over udp", (host, 7001))
    print("udp", u.recvfrom(2048)[0].decode())
"""


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("NOT RUN: needs root: the test creates a network namespace and a TAP device")


def namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout


def serve_echo(h: lr.Host, lst: lr.TcpListener, udp: lr.UdpSocket, client: subprocess.Popen[str],
               limit_s: float = 30.0) -> None:
    """Echo TCP (as received) and UDP (in upper case) on `h` until `client` exits or
    `limit_s` passes."""
    conn: Optional[lr.TcpConn] = None
    deadline = time.monotonic() + limit_s
    lst.setblocking(False)
    while time.monotonic() < deadline and client.poll() is None:
        h.run(ms=2)
        if conn is None:
            try:
                conn, _ = lst.accept()
                conn.setblocking(False)
            except BlockingIOError:
                pass
        elif conn.state != "Closed":
            try:
                data = conn.recv()
            except BlockingIOError:
                data = None
            if data:
                conn.send_all(data)
            elif data == b"":
                conn.close()
        r = udp.recv_from()
        if r is not None:
            udp.send_to(r[0].upper(), r[1])
    h.run(ms=20)


def test_linux_talks_to_a_python_host_on_a_tap() -> None:
    require_root()
    h = lr.Host.on_tap(f"{HOST}/24", f"{LINUX}/24", prefix="lr-py")
    ns = h.netns
    assert ns is not None, "a TAP host lives in a namespace"
    client: Optional[subprocess.Popen[str]] = None
    try:
        assert ns.startswith(f"lr-py-{os.getpid()}-") and h.kind == "tap" and h.linux_ip == LINUX
        assert f"{HOST} on TAP in namespace {ns}" in repr(h)
        with h.tcp_listen(7000) as lst, h.udp_bind(7001) as udp:
            client = subprocess.Popen(
                ["ip", "netns", "exec", ns, sys.executable, "-c", LINUX_CLIENT, HOST],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            serve_echo(h, lst, udp, client)
            out, err = client.communicate(timeout=15)
        assert client.returncode == 0, err
        want = hashlib.sha256(bytes(range(256)) * 400).hexdigest()
        assert out.split("\n")[:2] == [f"tcp {want}", "udp PING OVER UDP"]
        # From linerate to Linux: ping answers, a closed port refuses (Linux sends RST).
        assert len(h.ping(LINUX, count=3, timeout=1)) == 3
        c = h.tcp_connect((LINUX, 9))
        for _ in range(500):
            h.run(ms=2)
            try:
                assert not c.connected
            except ConnectionRefusedError:
                break
        else:
            raise AssertionError("the connection to a closed Linux port was not refused")
        assert LINUX in h.arp_table()
    finally:
        if client is not None and client.poll() is None:
            client.kill()
            client.wait()
        h.close()
        h.close()
        if ns in namespaces():
            subprocess.run(["ip", "netns", "del", ns], check=False)
            raise AssertionError(f"closing the host left namespace {ns} behind")
    assert h.kind == "tap" and repr(h) == "<linerate.Host closed>"
    with pytest.raises(OSError, match="closed"):
        h.udp_bind()


def test_bad_tap_arguments_are_value_errors() -> None:
    with pytest.raises(ValueError, match="prefix"):
        lr.Host.on_tap(prefix="bad prefix!")
    with pytest.raises(ValueError, match="not an IPv4"):
        lr.Host.on_tap(linux_cidr="nowhere/24")
    with pytest.raises(ValueError, match="mtu"):
        lr.Host.on_tap(mtu=20)


# Side B of the shared-memory link, in its own process: a TCP service answering each chunk in
# upper case, closing after the client closed.
SHM_PEER = r"""
import sys, time
import linerate as lr
name = sys.argv[1]
with lr.Host.on_shm(name, "10.88.0.2/24", create=False, timeout=10) as b, b.tcp_listen(7000) as lst:
    lst.setblocking(False)
    conn, deadline, done = None, time.monotonic() + 30, None
    while time.monotonic() < deadline and (done is None or time.monotonic() < done):
        b.run(ms=2)
        if conn is None:
            try:
                conn, _ = lst.accept()
                conn.setblocking(False)
            except BlockingIOError:
                pass
        elif done is None:
            try:
                data = conn.recv()
            except BlockingIOError:
                data = None
            if data:
                conn.send_all(data.upper())
            elif data == b"":
                conn.close()
                done = time.monotonic() + 1.0
print("served" if done else "timed out")
"""


def test_two_processes_talk_over_a_shared_memory_link() -> None:
    name = f"lr-py-{os.getpid()}-shm"
    path = f"/dev/shm/linerate-{name}"
    peer = None
    with lr.Host.on_shm(name, "10.88.0.1/24", create=True) as a:
        try:
            assert a.kind == "shm" and os.path.exists(path) and a.netns is None
            assert repr(a) == f"<linerate.Host 10.88.0.1 on shared memory {path}>"
            peer = subprocess.Popen([sys.executable, "-c", SHM_PEER, name],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            rtts = []
            for _ in range(100):
                rtts = a.ping("10.88.0.2", count=1, timeout=0.1)
                if rtts or peer.poll() is not None:
                    break
            assert rtts, "no ping reply over the shared-memory link"
            data = b"over shared memory " * 3000
            got = bytearray()
            with a.tcp_connect(("10.88.0.2", 7000)) as c:
                deadline = time.monotonic() + 20
                while not c.connected and time.monotonic() < deadline:
                    a.run(ms=1)
                c.send_all(data)
                c.shutdown()
                while time.monotonic() < deadline:
                    a.run(ms=1)
                    try:
                        chunk = c.recv()
                    except BlockingIOError:
                        continue
                    if chunk == b"":
                        break
                    got += chunk
            assert bytes(got) == data.upper()
            out, err = peer.communicate(timeout=20)
            assert peer.returncode == 0 and out.strip() == "served", err
        finally:
            if peer is not None and peer.poll() is None:
                peer.kill()
                peer.wait()
    assert not os.path.exists(path), "closing the creating host left the link behind"
    assert a.kind == "shm"
    with pytest.raises(OSError, match="closed"):
        a.ping("10.88.0.2")
