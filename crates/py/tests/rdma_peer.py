"""One side of test_rdma_processes.py: an RDMA node on a shared-memory link, driven by
lines on stdin/stdout.

    python rdma_peer.py create|open LINK ME PEER

prints `KEY k` (its region key), reads `PEER k` (the other side's), writes WRITES into the
peer's region, waits for its own completions and for the peer's writes to land, prints
`HASH h` (sha256 of its region) and `DONE`, then closes when it reads `BYE`.
"""

from typing import Any
import numpy.typing as npt
import hashlib
import sys
import time

import numpy as np

import linerate as lr

REGION = 1 << 20
# (offset, elements of float32, registered): small, registered, unregistered, segmented.
WRITES = [(0, 50, None), (1000, 2250, True), (20_000, 10_000, False), (100_000, 175_000, None)]
TIMEOUT = 60.0


def payload(side: int, i: int, n: int) -> npt.NDArray[np.float32]:
    """The float32 data side `side` writes in its `i`-th write; reproducible by anyone."""
    return np.random.default_rng(100 * side + i).standard_normal(n).astype(np.float32)


def expected_region(writer: int) -> npt.NDArray[np.uint8]:
    """The bytes a region holds after side `writer` made all its writes into it."""
    region = np.zeros(REGION, dtype=np.uint8)
    for i, (off, n, _) in enumerate(WRITES):
        region[off : off + 4 * n] = payload(writer, i, n).view(np.uint8)
    return region


def segments(nbytes: int) -> int:
    """Receive notifications a write of `nbytes` produces with the default configuration."""
    cfg = lr.rdma.default_config()
    seg = cfg["segment_size"]
    return -(-nbytes // seg) if nbytes > cfg["segment_threshold"] else 1


def line(prefix: str) -> list[str]:
    got = sys.stdin.readline().split()
    assert got and got[0] == prefix, f"expected {prefix}, got {got}"
    return got[1:]


def main(mode: str, link: str, me: int, peer: int) -> None:
    cidr = f"10.0.0.{me}/24"
    node = lr.rdma.ShmNode.create(link, cidr) if mode == "create" else lr.rdma.ShmNode.open(link, cidr, timeout=20)
    key = node.register(np.zeros(REGION // 4, dtype=np.float32))
    print(f"KEY {key}", flush=True)
    (peer_key,) = map(int, line("PEER"))
    own = node.address
    assert isinstance(own, tuple), own
    dst = (f"10.0.0.{peer}", own[1])
    ids = [node.write(dst, peer_key, off, payload(me, i, n), registered=reg) for i, (off, n, reg) in enumerate(WRITES)]
    done: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    want_notes = sum(segments(4 * n) for _, n, _ in WRITES)
    deadline = time.monotonic() + TIMEOUT
    while len(done) < len(WRITES) or len(notes) < want_notes:
        assert time.monotonic() < deadline, f"side {me}: {len(done)} writes done, {len(notes)} of {want_notes} landed"
        c = node.wait_completion(timeout=0.05)
        if c is not None:
            done.append(c)
        n = node.wait_notification(timeout=0.05)
        if n is not None:
            notes.append(n)
        if c is None and n is None and node.error is not None:
            raise SystemExit(f"side {me}: the node stopped: {node.error}")
    assert sorted(c["write_id"] for c in done) == sorted(ids), done
    assert all(c["status"] == "ok" for c in done), done
    assert len({n["op_id"] for n in notes}) == want_notes, notes
    assert {n["kind"] for n in notes} <= {"recv_registered", "recv_notified"}, notes
    out = np.empty(REGION, dtype=np.uint8)
    node.read_into(key, out)
    assert out.tobytes() == node.region(key)
    assert np.array_equal(out, expected_region(peer)), f"side {me}: region differs"
    print(f"HASH {hashlib.sha256(out.tobytes()).hexdigest()}", flush=True)
    print("DONE", flush=True)
    line("BYE")
    node.close()


if __name__ == "__main__":
    mode, link, me, peer = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    main(mode, link, me, peer)
