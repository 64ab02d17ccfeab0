"""One rank of the Python collective test: started N times by test_collective.py with the
launcher variables set; checks every operation (blocking, non-blocking with wait() and
test(), with out= and in place), every element type (bfloat16 as uint16 bit patterns) and
every reduction against numpy, and prints OK."""

import os
import sys
import time

import numpy as np

import linerate as lr

OPS = ["sum", "prod", "max", "min"]


class DType:
    """An element type under test: numpy's dtype, or bfloat16 as uint16 bit patterns."""

    def __init__(self, name, np_dtype, bf16=False):
        self.name, self.np, self.bf16 = name, np_dtype, bf16
        self.integer = np.issubdtype(np_dtype, np.integer) and not bf16

    def wire(self, x):
        """Numeric values (exact in the type) as the array passed to linerate."""
        if self.bf16:
            return (np.asarray(x, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
        return np.asarray(x).astype(self.np)

    def numeric(self, a):
        """The array linerate returned, as numbers (bfloat16 widened to float32)."""
        if self.bf16:
            return (a.astype(np.uint32) << 16).view(np.float32)
        return a


DTYPES = [
    DType("float16", np.float16),
    DType("bfloat16", np.uint16, bf16=True),
    DType("float32", np.float32),
    DType("float64", np.float64),
    DType("int32", np.int32),
    DType("int64", np.int64),
]


def data(rank, t, op, n=12, salt=0):
    """Rank `rank`'s data, reproducible by every rank: the full range for integers (sums and
    products wrap like numpy's), small integers for floats so every reduction is exact."""
    rng = np.random.default_rng([rank, DTYPES.index(t), OPS.index(op), salt])
    if t.integer:
        info = np.iinfo(t.np)
        return t.wire(rng.integers(info.min, info.max, size=n, dtype=t.np, endpoint=True))
    if op == "prod":
        return t.wire(rng.choice(np.array([-2, -1, 1, 2], dtype=np.float32), size=n))
    return t.wire(rng.integers(-8, 9, size=n).astype(np.float32))


def reference(t, xs, op):
    """numpy's reduction over ranks, in the element type (as linerate returns it)."""
    stack = np.stack([t.numeric(x) for x in xs])
    with np.errstate(over="ignore"):
        red = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[op](stack, axis=0)
    return t.wire(red.astype(stack.dtype))


def same(got, want, what):
    assert got is not None and got.dtype == want.dtype and got.shape == want.shape, (what, got, want)
    assert np.array_equal(got, want), (what, got, want)


def test_until_done(req, what):
    """Completes `req` through test() alone, bounded in time."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, res = req.test()
        if done:
            return res
    raise AssertionError(f"{what}: test() never reported completion")


def check_reductions(comm, t, op):
    r, n, bf = comm.rank, comm.size, t.bf16
    xs = [data(k, t, op) for k in range(n)]
    want = reference(t, xs, op)
    same(comm.allreduce(xs[r], op=op, bf16=bf), want, ("allreduce", t.name, op))
    x = xs[r].copy()
    assert comm.allreduce(x, op=op, out=x, bf16=bf) is x
    same(x, want, ("allreduce in place", t.name, op))
    x = xs[r].copy()
    comm.allreduce_inplace(x, op=op, bf16=bf)
    same(x, want, ("allreduce_inplace", t.name, op))
    same(comm.iallreduce(xs[r].reshape(3, 4), op=op, bf16=bf).wait(), want.reshape(3, 4), ("iallreduce", t.name, op))
    same(test_until_done(comm.iallreduce(xs[r], op=op, bf16=bf), "iallreduce"), want, ("iallreduce test", t.name, op))
    for root in sorted({0, n - 1}):
        red = comm.reduce(xs[r], op=op, root=root, bf16=bf)
        same(red, want if r == root else want[:0], ("reduce", t.name, op, root))
    red = comm.ireduce(xs[r], op=op, root=n // 2, bf16=bf).wait()
    same(red, want if r == n // 2 else want[:0], ("ireduce", t.name, op))
    # Reduce-scatter: n parts of 2 rows of 3 along axis 0.
    ys = [data(k, t, op, n=6 * n, salt=1).reshape(2 * n, 3) for k in range(n)]
    full = reference(t, ys, op)
    part = full[2 * r : 2 * r + 2]
    same(comm.reduce_scatter(ys[r], op=op, bf16=bf), part, ("reduce_scatter", t.name, op))
    out = np.empty_like(part)
    assert comm.ireduce_scatter(ys[r], op=op, out=out, bf16=bf).wait() is out
    same(out, part, ("ireduce_scatter out=", t.name, op))


def check_movement(comm, t):
    r, n, bf = comm.rank, comm.size, t.bf16
    xs = [data(k, t, "sum") for k in range(n)]
    same(comm.bcast(xs[r], root=n - 1, bf16=bf), xs[n - 1], ("bcast", t.name))
    y = xs[r].copy()
    comm.bcast_inplace(y, root=0, bf16=bf)
    same(y, xs[0], ("bcast_inplace", t.name))
    same(comm.ibcast(xs[r], root=n // 2, bf16=bf).wait(), xs[n // 2], ("ibcast", t.name))
    # Scatter: the root's (2n, 3) array, two rows per rank; the others pass a (2, 3) buffer.
    big = [data(k, t, "sum", n=6 * n, salt=2).reshape(2 * n, 3) for k in range(n)]
    for root in sorted({0, n - 1}):
        send = big[root] if r == root else np.zeros((2, 3), dtype=big[0].dtype)
        same(comm.scatter(send, root=root, bf16=bf), big[root][2 * r : 2 * r + 2], ("scatter", t.name, root))
    send = big[0] if r == 0 else np.zeros((2, 3), dtype=big[0].dtype)
    same(comm.iscatter(send, root=0, bf16=bf).wait(), big[0][2 * r : 2 * r + 2], ("iscatter", t.name))
    # Gather and all-gather: (2, 3) per rank, concatenated along axis 0 in rank order.
    parts = [b[:2] for b in big]
    cat = np.concatenate(parts)
    for root in sorted({0, n - 1}):
        g = comm.gather(parts[r], root=root, bf16=bf)
        same(g, cat if r == root else cat.reshape(-1)[:0], ("gather", t.name, root))
    g = comm.igather(parts[r], root=n // 2, bf16=bf).wait()
    same(g, cat if r == n // 2 else cat.reshape(-1)[:0], ("igather", t.name))
    same(comm.allgather(parts[r], bf16=bf), cat, ("allgather", t.name))
    out = np.empty_like(cat)
    assert comm.iallgather(parts[r], out=out, bf16=bf).wait() is out
    same(out, cat, ("iallgather out=", t.name))
    # All-to-all: part j of rank i (two rows) ends at rank j as its part i.
    want = np.concatenate([big[i][2 * r : 2 * r + 2] for i in range(n)])
    same(comm.alltoall(big[r], bf16=bf), want, ("alltoall", t.name))
    z = big[r].copy()
    assert comm.ialltoall(z, out=z, bf16=bf).wait() is z
    same(z, want, ("ialltoall in place", t.name))
    if n > 1:
        nxt, prv = (r + 1) % n, (r - 1) % n
        comm.send(xs[r], nxt, tag=5, bf16=bf)
        buf = np.zeros_like(xs[r])
        assert comm.recv(buf, prv, tag=5, bf16=bf) is buf
        same(buf, xs[prv], ("send/recv", t.name))
        rq = comm.irecv(buf, prv, tag=6, bf16=bf)
        assert comm.isend(xs[r][::-1].copy(), nxt, tag=6, bf16=bf).wait() is None
        same(rq.wait(), xs[prv][::-1], ("isend/irecv", t.name))


def main():
    comm = lr.collective.init(timeout=60)
    r, n = comm.rank, comm.size
    for t in DTYPES:
        for op in OPS:
            check_reductions(comm, t, op)
        check_movement(comm, t)
        comm.barrier()
    assert comm.ibarrier().wait() is None
    c = comm.counters()
    assert c["ops_failed"] == 0 and c["ops_completed"] > 100, c
    comm.finalize()
    print(f"OK rank {r} of {n}")


def dataset(name):
    """The K-Means data sets of test_kmeans.py: (samples as float32, initial centres)."""
    if name == "digits":
        from sklearn.datasets import load_digits

        x, k = load_digits().data.astype(np.float32), 10
    else:
        x, k = lr.collective.covertype_like(581012, 3), 7
    return x, x[np.linspace(0, len(x) - 1, k).astype(int)].copy()


def kmeans_main(name, outdir):
    """Distributed K-Means on this rank's share; saves centres, labels and iterations."""
    comm = lr.collective.init(timeout=60)
    x, init = dataset(name)
    local = np.array_split(x, comm.size)[comm.rank]
    centres, labels, iters = comm.kmeans(np.ascontiguousarray(local), init, 300, 0.0)
    np.save(os.path.join(outdir, f"centres-{comm.rank}.npy"), centres)
    np.save(os.path.join(outdir, f"labels-{comm.rank}.npy"), labels)
    np.save(os.path.join(outdir, f"iters-{comm.rank}.npy"), np.array([iters]))
    comm.finalize()
    print(f"OK rank {comm.rank} of {comm.size}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "kmeans":
        sys.exit(kmeans_main(sys.argv[2], sys.argv[3]))
    sys.exit(main())
