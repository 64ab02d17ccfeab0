"""RDMA from Python beyond the defaults: every setting of the Rust configuration by name
(round trip through a node), raw Ethernet, numpy arrays registered in place (the array is
the region), the refusals (unknown setting, a write larger than the region, a deregistered
array), and two processes in two network namespaces over a veth writing 64 MiB into each
other's arrays in registered segments (needs root; fails with NOT RUN otherwise)."""

from typing import Any, Optional
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import linerate as lr
from helpers import linerate_bin

HERE = os.path.dirname(__file__)


def changed(name: str, value: Any) -> Any:
    """A valid non-default value for setting `name` (the whole set stays consistent)."""
    special: dict[str, Any] = {
        "transport": "udp:4791",
        "packet_payload": 1000,
        "first_write_id": 77,
        "reg_entries": 128,
        "mask_width": 512,
        "notify_capacity": 4096,
        "segment_threshold": 512 * 1024,
        "segment_size": 128 * 1024,
        "register_threshold": 100 * 1024,
        "max_in_flight": 2048,
        "window": 32,
        "rto": 0.002,
        "max_rto": 0.05,
    }
    if name in special:
        return special[name]
    return value + 0.25 if isinstance(value, float) else value + 3


def test_every_setting_round_trips_through_a_node() -> None:
    defaults = lr.rdma.default_config()
    assert list(defaults) == lr.rdma.SETTINGS
    assert defaults["segment_size"] == defaults["register_threshold"] == 256 * 1024
    cfg = {k: changed(k, v) for k, v in defaults.items()}
    assert all(cfg[k] != defaults[k] for k in cfg)
    net = lr.Testbed()
    node = net.host("10.0.0.1/24").rdma(config=cfg)
    got = node.config()
    assert list(got) == list(cfg)
    for k, v in cfg.items():
        # Durations travel as seconds and are kept in nanoseconds.
        assert got[k] == (pytest.approx(v, abs=1e-9) if isinstance(v, float) else v), k
    assert node.address == ("10.0.0.1", 4791)


def test_bad_settings_are_one_value_error_each() -> None:
    h = lr.Testbed().host("10.0.0.1/24")
    with pytest.raises(ValueError, match='unknown setting "segment_sise"'):
        h.rdma(config={"segment_sise": 1})
    with pytest.raises(ValueError, match="window"):
        h.rdma(config={"window": "many"})
    with pytest.raises(ValueError, match="bool"):
        h.rdma(config={"window": True})
    with pytest.raises(ValueError, match="notify_capacity"):
        h.rdma(config={"reg_entries": 1024, "notify_capacity": 100})
    h.rdma(config={"window": 8})  # the refusals left nothing bound


def test_raw_ethernet_transport_and_arrays_registered_in_place() -> None:
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    ra, rb = a.rdma(config={"transport": "eth"}), b.rdma(config={"transport": "eth:0x88b5"})
    mac = rb.address
    assert isinstance(mac, str) and mac.count(":") == 5
    arr = np.zeros(1000, dtype=np.float32)
    key = rb.register(arr)
    with pytest.raises(ValueError):
        arr.resize(2000)  # numpy refuses: the node holds a view of it
    ra.write(mac, key, 40, np.arange(10, dtype=np.float32))
    note = rb.wait_notification(0.1)
    assert note is not None and note["status"] == "ok", note
    # The write landed in the caller's array itself: no copy back.
    assert np.array_equal(arr[10:20], np.arange(10, dtype=np.float32))
    assert arr[:10].sum() == 0 and arr[20:].sum() == 0
    # A write larger than the region: refused whole, counted, nothing out of bounds.
    ra.write(mac, key, 0, np.ones(1001, dtype=np.float32))
    c = ra.wait_completion(0.2)
    while c is not None and c["status"] == "ok":
        c = ra.wait_completion(0.2)
    assert c is not None and c["status"] == "nacked:out_of_bounds", c
    assert np.array_equal(arr[10:20], np.arange(10, dtype=np.float32)) and arr[20:].sum() == 0
    assert rb.counters()["nack_out_of_bounds"] >= 1
    # Deregistered: the array comes back (the same object), later writes are refused.
    assert rb.deregister(key) is arr
    arr.resize(10, refcheck=False)  # the caller's again
    ra.write(mac, key, 0, np.ones(4, dtype=np.float32))
    c = ra.wait_completion(0.2)
    assert c is not None and c["status"] == "nacked:deregistered", c
    assert rb.counters()["nack_deregistered"] >= 1
    with pytest.raises(ValueError, match="no region"):
        rb.region(key)
    # Read-only data is copied, as is anything with copy=True.
    ro = np.arange(8, dtype=np.uint8)
    ro.flags.writeable = False
    k2 = rb.register(ro)
    k3 = rb.register(np.zeros(8, dtype=np.uint8), copy=True)
    ra.write(mac, k3, 0, b"\x01" * 8)
    rb.wait_notification(0.1)
    assert rb.region(k2) == bytes(range(8)) and rb.region(k3) == b"\x01" * 8
    assert isinstance(rb.deregister(k3), bytes)


def test_host_rdma_on_a_live_host_writes_into_a_threaded_nodes_array() -> None:
    """Host.rdma() on a live host (shared memory, polled with the host) writing into the
    in-place array of a Node on the other end (its own polling thread)."""
    name = f"py24-live-{os.getpid()}"
    with lr.Host.on_shm(name, "10.0.0.1/24", create=True) as h, \
            lr.rdma.Node.open(name, "10.0.0.2/24", config={"segment_size": 64 * 1024}) as peer:
        node = h.rdma(config={"segment_size": 64 * 1024, "segment_threshold": 64 * 1024,
                              "register_threshold": 64 * 1024})
        assert node.config()["segment_size"] == 64 * 1024
        arr = np.zeros(1 << 20, dtype=np.uint8)
        key = peer.register(arr)
        data = np.random.default_rng(5).integers(0, 256, 1 << 20, dtype=np.uint8)
        node.write(peer.address, key, 0, data)
        c = node.wait_completion(20)
        assert c is not None and c["status"] == "ok", c
        kinds: list[str] = []
        while len(kinds) < 16:
            n = peer.wait_notification(timeout=5.0)
            assert n is not None, f"{len(kinds)} notifications"
            kinds.append(n["kind"])
        assert kinds == ["recv_registered"] * 16
        assert np.array_equal(arr, data), "the array is the region"
        assert peer.deregister(key) is arr


def _root_problem() -> Optional[str]:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if subprocess.run(["sh", "-c", "command -v ip"], capture_output=True).returncode != 0:
        return "the tool `ip` is not installed"
    return None


def test_host_rdma_on_a_tap_host_receives_a_linux_side_write_in_place() -> None:
    """Host.rdma() on a TAP host: `linerate rdma write` in the TAP's namespace (AF_PACKET on
    the Linux side of the TAP) writes 1 MiB into an array registered in place."""
    why = _root_problem() or (None if linerate_bin() else "no linerate binary (make build-release)")
    if why:
        pytest.fail(f"NOT RUN: {why} (run `make test` as root)")
    exe = linerate_bin()
    assert exe is not None
    with lr.Host.on_tap("10.77.0.2/24", "10.77.0.1/24", prefix="lr-py24tap") as h:
        node = h.rdma()
        arr = np.zeros(1 << 20, dtype=np.uint8)
        key = node.register(arr)
        assert h.netns is not None
        w = subprocess.Popen(
            ["ip", "netns", "exec", h.netns, exe, "rdma", "write", "--af-packet", "lrtap0",
             "--ip", "10.77.0.3/24", "--to", "10.77.0.2", "--key", hex(key), "--size", "1MiB", "--seed", "9",
             "--limit", "60s", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            landed = 0
            for _ in range(600):
                n = node.wait_notification(0.1)
                if n is not None:
                    assert n["kind"] == "recv_registered" and n["status"] == "ok", n
                    landed += n["len"]
                if landed >= 1 << 20 and w.poll() is not None:
                    break
            out, err = w.communicate(timeout=30)
        finally:
            if w.poll() is None:
                w.kill()
        assert w.returncode == 0, err
        assert landed == 1 << 20
        rows = [t for t in json.loads(out)["tables"] if t["title"] == "rdma write"][0]["rows"]
        fnv = 0xCBF29CE484222325
        for b in arr.tobytes():
            fnv = ((fnv ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        assert rows[0]["data_fnv1a"] == f"{fnv:016x}", "the array holds what was written"


def test_two_processes_in_two_namespaces_write_64_mib_into_each_others_arrays() -> None:
    why = _root_problem()
    if why:
        pytest.fail(f"NOT RUN: {why} (run `make test` as root)")
    pid = os.getpid()
    ns = [f"lr-py24-{pid}-a", f"lr-py24-{pid}-b"]
    def ip(*a: str) -> None:
        subprocess.run(["ip", *a], check=True, capture_output=True)

    procs: list[subprocess.Popen[str]] = []
    try:
        for n in ns:
            ip("netns", "add", n)
        ip("-n", ns[0], "link", "add", "p24a", "type", "veth", "peer", "name", "p24b", "netns", ns[1])
        ip("-n", ns[0], "link", "set", "p24a", "up")
        ip("-n", ns[1], "link", "set", "p24b", "up")
        sides = [("p24a", "10.66.25.1/24", "10.66.25.2", 1), ("p24b", "10.66.25.2/24", "10.66.25.1", 2)]
        for n, (ifname, cidr, peer, seed) in zip(ns, sides):
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", n, sys.executable, os.path.join(HERE, "rdma_veth_peer.py"),
                 ifname, cidr, peer, str(seed)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            ))
        reports = []
        for p in procs:
            assert p.stdout is not None and p.stderr is not None
            line = p.stdout.readline()
            if not line:
                pytest.fail("a side ended without a report: " + p.stderr.read())
            reports.append(json.loads(line))
        for p in procs:
            _, err = p.communicate(timeout=30)
            assert p.returncode == 0, err
        for me, other in [(0, 1), (1, 0)]:
            r, w = reports[me], reports[other]
            assert w["write_ok"], w
            assert r["array_sha"] == w["data_sha"], "the array holds what the peer wrote"
            segments = (64 << 20) // r["segment_size"]
            assert (r["notifications"], r["registered"], r["twice"]) == (segments, segments, 0), r
            assert r["landed"] == 64 << 20
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for n in ns:
            subprocess.run(["ip", "netns", "del", n], capture_output=True)
