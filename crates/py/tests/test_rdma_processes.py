"""RDMA between two Python processes over a shared-memory link (lr.rdma.ShmNode): each
registers a numpy array, writes into the other's (small, registered, unregistered and
segmented writes), waits for its completions and notifications, and reports the sha256 of
its region, which this test checks against numpy's own copy, both directions."""

import hashlib
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import linerate as lr

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
import rdma_peer  # noqa: E402

LIMIT = 120


class Peer:
    """A child process running rdma_peer.py, spoken to line by line."""

    def __init__(self, mode: str, link: str, me: int, peer: int) -> None:
        self.me = me
        self.p = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "rdma_peer.py"), mode, link, str(me), str(peer)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.lines: list[list[str]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for ln in self.p.stdout:
            self.lines.append(ln.split())

    def expect(self, word: str, deadline: float) -> list[str]:
        """The arguments of the first line starting with `word`, waiting until `deadline`."""
        while time.monotonic() < deadline:
            for ln in self.lines:
                if ln and ln[0] == word:
                    return ln[1:]
            if self.p.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.01)
        self.p.kill()
        assert self.p.stderr is not None
        raise AssertionError(f"side {self.me}: no {word} line; got {self.lines}; stderr:\n{self.p.stderr.read()}")

    def send(self, text: str) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()

    def finish(self) -> tuple[int, str]:
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        assert self.p.stderr is not None
        return self.p.returncode, self.p.stderr.read()


def test_two_processes_write_numpy_arrays_into_each_other() -> None:
    link = f"py-rdma-{os.getpid()}"
    a = Peer("create", link, 1, 2)
    b = Peer("open", link, 2, 1)
    try:
        deadline = time.monotonic() + LIMIT
        ka, kb = a.expect("KEY", deadline), b.expect("KEY", deadline)
        a.send(f"PEER {kb[0]}")
        b.send(f"PEER {ka[0]}")
        ha, hb = a.expect("HASH", deadline), b.expect("HASH", deadline)
        a.expect("DONE", deadline)
        b.expect("DONE", deadline)
        # Each region holds exactly what the other side wrote, and nothing else.
        assert ha[0] == hashlib.sha256(rdma_peer.expected_region(2).tobytes()).hexdigest()
        assert hb[0] == hashlib.sha256(rdma_peer.expected_region(1).tobytes()).hexdigest()
        assert ha[0] != hb[0]
        b.send("BYE")
        a.send("BYE")
    finally:
        rb, eb = b.finish()
        ra, ea = a.finish()
    assert rb == 0, eb
    assert ra == 0, ea
    assert not os.path.exists(f"/dev/shm/linerate-{link}")


def test_wait_times_out_without_holding_the_gil_and_close_ends_the_peer() -> None:
    link = f"py-rdma-wait-{os.getpid()}"
    a = lr.rdma.ShmNode.create(link, "10.0.0.1/24")
    b = lr.rdma.ShmNode.open(link, "10.0.0.2/24", timeout=5)
    ticks = [0]
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            ticks[0] += 1

    t = threading.Thread(target=count)
    t.start()
    try:
        before = ticks[0]
        t0 = time.monotonic()
        assert a.wait_notification(timeout=0.3) is None
        waited = time.monotonic() - t0
        during = ticks[0] - before
    finally:
        stop.set()
        t.join()
    assert waited >= 0.3
    assert during > 1000, "another Python thread ran while wait() blocked (the GIL was released)"
    # A write, then the notification through a blocking wait.
    key = b.register(np.zeros(64, dtype=np.int64))
    a.write(b.address, key, 8, np.arange(3, dtype=np.int64))
    n = b.wait_notification(timeout=10)
    assert n is not None and n["len"] == 24 and n["offset"] == 8 and n["status"] == "ok"
    c = a.wait_completion(timeout=10)
    assert c is not None and c["kind"] == "send" and c["status"] == "ok"
    out = np.empty(4, dtype=np.int64)
    b.read_into(key, out)
    assert out.tolist() == [0, 0, 1, 2]
    with pytest.raises(ValueError, match="do not fit"):
        b.read_into(key, np.empty(65, dtype=np.int64))
    # A write to a key that does not exist is refused by the receiver.
    a.write(b.address, key + 0x10000, 0, b"x")
    c = a.wait_completion(timeout=10)
    assert c is not None and c["status"] == "nacked:unknown_key"
    # (More than one if a loaded machine delayed the NACK past the sender's timeout.)
    assert b.counters()["nack_unknown_key"] >= 1
    assert b.counters()["rx_bytes_placed"] == 24, "the refused write placed nothing"
    a.close()
    deadline = time.monotonic() + 10
    while b.error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert b.error is not None and "closed" in b.error
    with pytest.raises(RuntimeError):
        b.write(a.address, key, 0, b"x")
    b.close()
    with pytest.raises(RuntimeError, match="closed"):
        b.region(key)
