"""RDMA from Python: numpy arrays registered as regions, written into from another host,
notifications and completions polled, on the in-process testbed (virtual time)."""

from typing import Callable
import numpy as np
import pytest
import linerate as lr


def run_until(net: lr.Testbed, cond: Callable[[], bool], ms: int = 2000) -> bool:
    for _ in range(ms * 100):
        if cond():
            return True
        net.step()
    return cond()


def test_numpy_write_lands_once_and_both_sides_are_told() -> None:
    net = lr.Testbed()
    a = net.host("10.0.0.1/24", loss=0.02, reorder=0.02, seed=5)
    b = net.host("10.0.0.2/24")
    ra, rb = a.rdma(), b.rdma()
    key = rb.register(np.zeros(20000, dtype=np.float32))
    src = np.arange(5000, dtype=np.float32) * 0.5
    notes, done = [], []

    def settled() -> bool:
        while (n := rb.poll_notification()) is not None:
            notes.append(n)
        while (c := ra.poll_completion()) is not None:
            done.append(c)
        return len(done) == 2 and len(notes) == 2

    w1 = ra.write(rb.address, key, 400, src, registered=True)
    w2 = ra.write(rb.address, key, 40000, src[:1000], registered=False)
    assert run_until(net, settled)
    got = np.frombuffer(rb.region(key), dtype=np.float32)
    assert (got[100:5100] == src).all()
    assert (got[10000:11000] == src[:1000]).all()
    assert (got[:100] == 0).all() and (got[5100:10000] == 0).all() and (got[11000:] == 0).all()
    assert sorted(c["write_id"] for c in done) == sorted([w1, w2])
    assert all(c["status"] == "ok" and c["kind"] == "send" for c in done)
    assert sorted(n["kind"] for n in notes) == ["recv_notified", "recv_registered"]
    assert {n["write_id"] for n in notes} == {w1, w2}
    net.run(ms=20)
    assert rb.poll_notification() is None, "no op completes twice"
    c = rb.counters()
    assert c["rx_completed_registered"] == 1 and c["rx_completed_notified"] == 1


def test_bad_key_and_range_are_refused_and_memory_untouched() -> None:
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    ra, rb = a.rdma(), b.rdma()
    key = rb.register(b"\x07" * 1000)
    ra.write(rb.address, key + 0x10000, 0, b"x" * 10)
    ra.write(rb.address, key, 995, b"y" * 10)
    done = []

    def finished() -> bool:
        while (c := ra.poll_completion()) is not None:
            done.append(c)
        return len(done) == 2

    assert run_until(net, finished)
    assert sorted(c["status"] for c in done) == ["nacked:out_of_bounds", "nacked:unknown_key"]
    assert rb.region(key) == b"\x07" * 1000
    assert rb.poll_notification() is None
    assert rb.deregister(key) == b"\x07" * 1000


def test_wait_runs_virtual_time_and_read_into_fills_a_numpy_array() -> None:
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24", loss=0.05, seed=9), net.host("10.0.0.2/24")
    ra, rb = a.rdma(), b.rdma()
    mine = np.zeros((4, 256), dtype=np.float64)
    key = rb.register(mine)
    assert rb.wait_notification(0.005) is None, "nothing was written"
    t0 = net.now_ns
    assert rb.wait_notification(0.005) is None and net.now_ns - t0 >= 5_000_000
    rows = np.arange(512, dtype=np.float64).reshape(2, 256)
    w = ra.write(rb.address, key, 8 * 256, rows)
    n = rb.wait_notification(2)
    assert n is not None and n["write_id"] == w and n["offset"] == 2048 and n["len"] == rows.nbytes
    c = ra.wait_completion(2)
    assert c is not None and c["write_id"] == w and c["status"] == "ok"
    # register() took the array in place: the write landed in the caller's array itself.
    assert (mine[1:3] == rows).all() and not mine[0].any() and not mine[3].any()
    out = np.empty_like(mine)
    rb.read_into(key, out)
    assert (out[1:3] == rows).all() and not out[0].any() and not out[3].any()
    part = np.empty(256, dtype=np.float64)
    rb.read_into(key, part, offset=2 * 2048)
    assert (part == rows[1]).all()
    with pytest.raises(ValueError, match="contiguous"):
        rb.read_into(key, out[:, ::2])
    with pytest.raises(ValueError, match="do not fit"):
        rb.read_into(key, part, offset=8 * 1024 - 8)
