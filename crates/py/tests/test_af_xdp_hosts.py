"""Two linerate hosts on AF_XDP (`Host.on_link`), in two processes and two network namespaces
joined by a veth pair this test creates: TCP and UDP with the bytes checked by hash both ways.
The namespaces (and with them the veth and the XDP programs) are gone afterwards."""

import hashlib
import os
import subprocess
import sys
import time

import pytest

import linerate as lr
from helpers import linerate_bin

SERVER, CLIENT = "10.89.0.1", "10.89.0.2"

# The server process: a linerate host on AF_XDP in its namespace. TCP on 7000: read to the
# end, answer the digest and the bytes back, close. UDP on 7001: echo each datagram.
SERVER_SCRIPT = r"""
import hashlib, sys, time
import linerate as lr
h = lr.Host.on_link("af_xdp:lrpa", sys.argv[1] + "/24")
lst, udp = h.tcp_listen(7000), h.udp_bind(7001)
lst.setblocking(False)
print("ready", h.kind, flush=True)
conn, got, replied, deadline = None, bytearray(), False, time.monotonic() + 90
while time.monotonic() < deadline and not replied:
    h.run(ms=1)
    while (r := udp.recv_from()) is not None:
        udp.send_to(r[0], r[1])
    if conn is None:
        try:
            conn, _ = lst.accept()
            conn.setblocking(False)
        except BlockingIOError:
            continue
    try:
        while chunk := conn.recv(1 << 20):
            got += chunk
        digest = hashlib.sha256(got).hexdigest().encode()
        conn.send_all(digest + b"\n" + bytes(reversed(got)))
        conn.close()
        replied = True
    except BlockingIOError:
        pass
for _ in range(200):
    h.run(ms=5)
    while (r := udp.recv_from()) is not None:
        udp.send_to(r[0], r[1])
print("done", len(got), flush=True)
"""


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("NOT RUN: needs root: the test creates network namespaces, a veth pair and XDP programs")


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def two_namespaces_and_a_veth(ns_a: str, ns_b: str, if_a: str, if_b: str) -> None:
    """Namespaces ns_a and ns_b joined by a veth (if_a in ns_a, if_b in ns_b), both ends up."""
    ip("netns", "add", ns_a)
    ip("netns", "add", ns_b)
    ip("-n", ns_a, "link", "add", if_a, "type", "veth", "peer", "name", if_b, "netns", ns_b)
    ip("-n", ns_a, "link", "set", if_a, "up")
    ip("-n", ns_b, "link", "set", if_b, "up")


def test_two_python_hosts_on_af_xdp_move_tcp_and_udp_with_hashes() -> None:
    require_root()
    tag = f"{os.getpid()}"
    ns_a, ns_b = f"lr-pyxdp-a-{tag}", f"lr-pyxdp-b-{tag}"
    server = None
    try:
        two_namespaces_and_a_veth(ns_a, ns_b, "lrpa", "lrpb")
        server = subprocess.Popen(
            ["ip", "netns", "exec", ns_a, sys.executable, "-c", SERVER_SCRIPT, SERVER],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert server.stdout is not None and server.stderr is not None
        first = server.stdout.readline().split()
        assert first[:2] == ["ready", "link"], (first, server.stderr.read() if server.poll() is not None else "")
        h = lr.Host.on_link("af_xdp:lrpb", f"{CLIENT}/24", netns=ns_b)
        assert h.kind == "link" and "af_xdp:lrpb" in repr(h)
        data = os.urandom(8_000_000)
        # UDP: 200 datagrams of different sizes, each echoed unchanged.
        udp = h.udp_bind(0)
        sent = {i: os.urandom(100 + 7 * i) for i in range(200)}
        for i, d in sent.items():
            assert udp.send_to(i.to_bytes(2, "big") + d, (SERVER, 7001))
            h.run(ms=0.2)
        echoed: dict[int, bytes] = {}
        deadline = time.monotonic() + 20
        while len(echoed) < len(sent) and time.monotonic() < deadline:
            h.run(ms=1)
            while (r := udp.recv_from()) is not None:
                echoed[int.from_bytes(r[0][:2], "big")] = r[0][2:]
        assert echoed == sent, f"{len(echoed)} of {len(sent)} datagrams came back unchanged"
        # TCP: 8 MB to the server, its digest and the bytes reversed back.
        c = h.tcp_connect((SERVER, 7000))
        deadline = time.monotonic() + 60
        while not c.connected and time.monotonic() < deadline:
            h.run(ms=1)
        c.send_all(data)
        c.shutdown()
        back = bytearray()
        while time.monotonic() < deadline:
            h.run(ms=1)
            try:
                chunk = c.recv(1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                break
            back += chunk
        digest, _, body = bytes(back).partition(b"\n")
        assert digest.decode() == hashlib.sha256(data).hexdigest(), "the server saw other bytes"
        assert body == data[::-1], f"{len(body)} bytes came back, not the {len(data)} reversed"
        out, err = server.communicate(timeout=30)
        assert server.returncode == 0, err
        assert f"done {len(data)}" in out
        h.close()
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.wait()
        for ns in (ns_a, ns_b):
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


def test_host_rdma_on_an_af_xdp_host_receives_a_write_from_another_namespace_in_place() -> None:
    """Host.on_link("af_xdp:...").rdma(): `linerate rdma write --link af_xdp:...` in the other
    namespace writes 4 MiB into a numpy array registered in place; the bytes are checked."""
    require_root()
    binary = linerate_bin()
    if binary is None:
        pytest.fail("NOT RUN: no linerate binary (make build-release)")
    import json

    import numpy as np

    tag = f"{os.getpid()}"
    ns_a, ns_b = f"lr-pyxdr-a-{tag}", f"lr-pyxdr-b-{tag}"
    writer = None
    try:
        two_namespaces_and_a_veth(ns_a, ns_b, "lrra", "lrrb")
        with lr.Host.on_link("af_xdp:lrra", f"{SERVER}/24", netns=ns_a) as h:
            node = h.rdma()
            arr = np.zeros(4 << 20, dtype=np.uint8)
            key = node.register(arr)
            writer = subprocess.Popen(
                ["ip", "netns", "exec", ns_b, binary, "rdma", "write", "--link", "af_xdp:lrrb",
                 "--ip", f"{CLIENT}/24", "--to", SERVER, "--key", hex(key), "--size", "4MiB", "--seed", "3",
                 "--limit", "60s", "--json"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            landed = 0
            for _ in range(1200):
                n = node.wait_notification(timeout=0.1)
                if n is not None:
                    assert n["kind"] == "recv_registered" and n["status"] == "ok", n
                    landed += n["len"]
                if landed >= arr.size and writer.poll() is not None:
                    break
            out, err = writer.communicate(timeout=30)
            assert writer.returncode == 0, err
            assert landed == arr.size, f"{landed} of {arr.size} bytes notified"
            rows = [t for t in json.loads(out)["tables"] if t["title"] == "rdma write"][0]["rows"]
            fnv = 0xCBF29CE484222325
            for b in arr.tobytes():
                fnv = ((fnv ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
            assert rows[0]["data_fnv1a"] == f"{fnv:016x}", "the array holds what was written"
    finally:
        if writer is not None and writer.poll() is None:
            writer.kill()
            writer.wait()
        for ns in (ns_a, ns_b):
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)
