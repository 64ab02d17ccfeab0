"""Sockets of a live host behave like Python's: on a TAP host (polled by its own thread, no
``host.run()`` here) a ``selectors`` echo server serves Linux ``nc``, ``linerate.asyncio``
talks to a Linux ``nc`` listener and serves ``curl``, blocking calls honour ``settimeout``,
and bad arguments raise ``TypeError``/``ValueError``. Every namespace is deleted afterwards."""

from __future__ import annotations

import asyncio
import os
import selectors
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator, List

import pytest

import linerate as lr
from helpers import closing
import linerate.asyncio as lra

HOST, LINUX = "10.77.26.2", "10.77.26.1"


def live_host() -> lr.Host:
    """A TAP host in a namespace of this test; fails with NOT RUN without root or tools."""
    if os.geteuid() != 0:
        pytest.fail("NOT RUN: needs root: the test creates a network namespace and a TAP device", pytrace=False)
    for tool in ("nc", "curl", "ip"):
        if shutil.which(tool) is None:
            pytest.fail(f"NOT RUN: `{tool}` is missing (make setup-system installs it)", pytrace=False)
    return lr.Host.on_tap(f"{HOST}/24", f"{LINUX}/24", prefix="lr26")


@pytest.fixture
def host() -> Iterator[lr.Host]:
    yield from closing(live_host())


def in_ns(h: lr.Host, *cmd: str) -> List[str]:
    assert h.netns is not None
    return ["ip", "netns", "exec", h.netns, *cmd]


def test_a_selectors_echo_server_serves_linux_nc(host: lr.Host, tmp_path: Path) -> None:
    data = bytes(range(256)) * 200
    (tmp_path / "data").write_bytes(data)
    with host.tcp_listen(7000) as lst, open(tmp_path / "data", "rb") as stdin:
        lst.setblocking(False)
        sel = selectors.DefaultSelector()
        sel.register(lst, selectors.EVENT_READ)
        client = subprocess.Popen(in_ns(host, "nc", "-N", "-w", "10", HOST, "7000"),
                                  stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        peers = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and client.poll() is None:
            for key, _ in sel.select(timeout=0.2):
                if key.fileobj is lst:
                    conn, addr = lst.accept()
                    peers.append(addr)
                    conn.setblocking(False)
                    sel.register(conn, selectors.EVENT_READ)
                    continue
                c = key.fileobj
                assert isinstance(c, lr.TcpConn)
                try:
                    chunk = c.recv(65536)
                except BlockingIOError:
                    continue
                if chunk:
                    c.sendall(chunk)
                else:
                    sel.unregister(c)
                    c.close()
        out, err = client.communicate(timeout=15)
        sel.close()
    assert client.returncode == 0, err
    assert out == data
    assert [ip for ip, _ in peers] == [LINUX] and 0 < peers[0][1] < 65536


def test_asyncio_client_and_server_against_linux_nc_and_curl(host: lr.Host, tmp_path: Path) -> None:
    # The Linux side listens with nc: it prints what it got and answers with its stdin.
    (tmp_path / "answer").write_bytes(b"hello from linux\n")
    with open(tmp_path / "answer", "rb") as answer:
        listener = subprocess.Popen(in_ns(host, "nc", "-N", "-l", LINUX, "7100"),
                                    stdin=answer, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    async def client() -> bytes:
        for _ in range(100):  # until nc listens
            try:
                reader, writer = await lra.open_connection(host, (LINUX, 7100), timeout=5)
                break
            except ConnectionRefusedError:
                await asyncio.sleep(0.05)
        else:
            raise AssertionError("nc never listened")
        assert writer.get_extra_info("peername") == (LINUX, 7100)
        writer.write(b"hello from linerate\n")
        await writer.drain()
        writer.write_eof()
        got = await reader.read()
        writer.close()
        await writer.wait_closed()
        return got

    async def handle(reader: lra.StreamReader, writer: lra.StreamWriter) -> None:
        request = await reader.readuntil(b"\r\n\r\n")
        body = b"served by linerate: " + request.split(b" ")[1] + b"\n"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        await writer.drain()
        writer.close()

    async def serve_curl() -> "subprocess.CompletedProcess[bytes]":
        async with await lra.start_server(host, handle, 8080):
            proc = await asyncio.create_subprocess_exec(
                *in_ns(host, "curl", "-sS", "--max-time", "10", f"http://{HOST}:8080/path"),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(proc.communicate(), 20)
            return subprocess.CompletedProcess([], proc.returncode or 0, out, err)

    try:
        assert asyncio.run(asyncio.wait_for(client(), 30)) == b"hello from linux\n"
        out, err = listener.communicate(timeout=10)
        assert out == b"hello from linerate\n", err
        curl = asyncio.run(serve_curl())
        assert curl.returncode == 0 and curl.stdout == b"served by linerate: /path\n", curl.stderr
    finally:
        if listener.poll() is None:
            listener.kill()
            listener.wait()


def test_blocking_calls_time_out(host: lr.Host) -> None:
    with host.udp_bind(7200) as u, host.tcp_listen(7201) as lst:
        assert u.gettimeout() is None and u.getblocking()
        u.settimeout(0.2)
        t0 = time.monotonic()
        with pytest.raises(TimeoutError):
            u.recvfrom()
        assert 0.15 < time.monotonic() - t0 < 5
        lst.settimeout(0.1)
        with pytest.raises(TimeoutError):
            lst.accept()
        lst.setblocking(False)
        assert lst.gettimeout() == 0.0 and not lst.getblocking()
        with pytest.raises(BlockingIOError):
            lst.accept()
        # A TCP connection to Linux's discard-less port 9 is refused; one to our own listener's
        # Linux side is not possible, so connect to a Linux nc that sends nothing.
        nc = subprocess.Popen(in_ns(host, "nc", "-l", LINUX, "7202"), stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            conn = None
            for _ in range(100):
                c = host.tcp_connect((LINUX, 7202))
                deadline = time.monotonic() + 5
                try:
                    while not c.connected and time.monotonic() < deadline:
                        time.sleep(0.005)
                except ConnectionRefusedError:
                    time.sleep(0.05)
                    continue
                conn = c
                break
            assert conn is not None and conn.connected
            conn.settimeout(0.3)
            t0 = time.monotonic()
            with pytest.raises(TimeoutError) as e:
                conn.recv(100)
            assert 0.25 < time.monotonic() - t0 < 5 and e.value.errno is not None
            assert conn.getpeername() == (LINUX, 7202)
            conn.close()
        finally:
            nc.kill()
            nc.wait()
        with pytest.raises(ValueError):
            u.settimeout(-1)


def test_sockets_reject_bad_arguments() -> None:
    net = lr.Testbed()
    h = net.host("10.0.0.1/24")
    with pytest.raises(ValueError, match="port 70000"):
        h.udp_bind(70000)
    with pytest.raises(ValueError, match="port"):
        h.tcp_connect(("10.0.0.2", -1))
    with pytest.raises(ValueError, match="already has address"):
        net.host("10.0.0.1/24")
    with pytest.raises(ValueError, match="mtu"):
        lr.Testbed(mtu=100)
    u = h.udp_bind(5000)
    assert u.gettimeout() == 0.0, "testbed sockets do not block: the program drives virtual time"
    with pytest.raises(BlockingIOError):
        u.recvfrom()
    with pytest.raises(OSError, match="live host"):
        u.fileno()
    with pytest.raises(TypeError):
        u.sendto("not bytes", ("10.0.0.2", 5000))  # type: ignore[arg-type]


def test_timeouts_are_seconds_and_old_keywords_warn() -> None:
    net = lr.Testbed()
    a, _ = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    node = a.rdma(port=4791)
    t0 = net.now_ns
    assert node.wait_notification(0.002) is None
    assert 2_000_000 <= net.now_ns - t0 < 3_000_000, "2 ms of virtual time, given in seconds"
    with pytest.warns(DeprecationWarning, match="ms= .* deprecated"):
        assert node.wait_completion(ms=1) is None
    with pytest.warns(DeprecationWarning, match="timeout_ms"):
        assert a.ping("10.0.0.99", timeout_ms=1) == []
    with pytest.raises(TypeError, match="not 'list'"):
        node.register([1, 2, 3])
