"""One side of test_rdma_live's veth test, run in a network namespace: an RDMA node on the
veth end through AF_PACKET, a numpy array registered in place, 64 MiB written into the
peer's array while the peer writes 64 MiB into ours. Prints one JSON line of what it saw,
then waits for standard input to close before closing the node (so the peer's last ACKs
are not lost)."""

import hashlib
import json
import sys
import time

import numpy as np

import linerate as lr

SIZE = 64 << 20
LIMIT = 120.0


def main() -> None:
    ifname, cidr, peer_ip, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    node = lr.rdma.Node.on_af_packet(ifname, cidr)
    arr = np.zeros(SIZE, dtype=np.uint8)
    key = node.register(arr)
    data = np.random.default_rng(seed).integers(0, 256, SIZE, dtype=np.uint8)
    own = node.address
    assert isinstance(own, tuple), own
    dst = (peer_ip, own[1])
    end = time.monotonic() + LIMIT
    tries, write_ok = 0, False
    ops: dict[int, int] = {}
    registered, landed = 0, 0
    while time.monotonic() < end and not write_ok:
        # The peer may not be up yet: a write nobody answers times out; try again.
        tries += 1
        node.write(dst, 0x10001, 0, data)
        while time.monotonic() < end:
            c = node.wait_completion(timeout=0.05)
            n = node.poll_notification()
            while n is not None:
                ops[n["op_id"]] = ops.get(n["op_id"], 0) + 1
                registered += n["kind"] == "recv_registered"
                landed += n["len"]
                n = node.poll_notification()
            if c is not None:
                write_ok = c["status"] == "ok"
                break
    while time.monotonic() < end and landed < SIZE:
        n = node.wait_notification(timeout=0.1)
        if n is not None:
            ops[n["op_id"]] = ops.get(n["op_id"], 0) + 1
            registered += n["kind"] == "recv_registered"
            landed += n["len"]
    report = {
        "key": key,
        "write_ok": write_ok,
        "tries": tries,
        "data_sha": hashlib.sha256(data.tobytes()).hexdigest(),
        # The array itself: remote writes landed in it, nothing was copied back.
        "array_sha": hashlib.sha256(arr.tobytes()).hexdigest(),
        "notifications": sum(ops.values()),
        "registered": registered,
        "twice": sum(1 for v in ops.values() if v > 1),
        "landed": landed,
        "segment_size": node.config()["segment_size"],
    }
    print(json.dumps(report), flush=True)
    sys.stdin.read()
    back = node.deregister(key)
    node.close()
    assert back is arr


if __name__ == "__main__":
    main()
