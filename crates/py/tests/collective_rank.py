"""One rank of the Python collective test: started N times by test_collective.py with the
launcher variables set; checks every operation (blocking, non-blocking with wait() and
test(), with out= and in place), every element type (bfloat16 as uint16 bit patterns) and
every reduction against numpy, and prints OK."""

import os
import sys
import time
from typing import Any, List, Optional, Tuple

import numpy as np
import numpy.typing as npt

import linerate as lr
from linerate.collective import Communicator, Request

Array = npt.NDArray[Any]

OPS = ["sum", "prod", "max", "min", "band", "bor", "bxor", "land", "lor", "lxor"]
BITWISE = {"band", "bor", "bxor"}
UFUNC = {
    "sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
    "band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor,
    "land": np.logical_and, "lor": np.logical_or, "lxor": np.logical_xor,
}


class DType:
    """An element type under test: numpy's dtype, or bfloat16 as uint16 bit patterns."""

    def __init__(self, name: str, np_dtype: Any, bf16: bool = False) -> None:
        self.name, self.np, self.bf16 = name, np_dtype, bf16
        self.integer: bool = np.issubdtype(np_dtype, np.integer) and not bf16
        self.boolean: bool = np_dtype is np.bool_

    def ops(self) -> List[str]:
        """The operators linerate reduces this type with: bitwise ones on integers and bool."""
        if self.integer or self.boolean:
            return OPS
        return [op for op in OPS if op not in BITWISE and not (self.bf16 and op.startswith("l"))]

    def wire(self, x: Any) -> Array:
        """Numeric values (exact in the type) as the array passed to linerate."""
        if self.bf16:
            return (np.asarray(x, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
        return np.asarray(x).astype(self.np)

    def numeric(self, a: Array) -> Array:
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
    DType("uint8", np.uint8),
    DType("int8", np.int8),
    DType("uint16", np.uint16),
    DType("int16", np.int16),
    DType("uint32", np.uint32),
    DType("uint64", np.uint64),
    DType("bool", np.bool_),
]


def data(rank: int, t: DType, op: str, n: int = 12, salt: int = 0) -> Array:
    """Rank `rank`'s data, reproducible by every rank: the full range for integers (sums and
    products wrap like numpy's), small integers for floats so every reduction is exact."""
    rng = np.random.default_rng([rank, DTYPES.index(t), OPS.index(op), salt])
    if t.boolean:
        return rng.integers(0, 2, size=n).astype(np.bool_)
    if t.integer:
        info = np.iinfo(t.np)
        return t.wire(rng.integers(info.min, info.max, size=n, dtype=t.np, endpoint=True))
    if op == "prod":
        return t.wire(rng.choice(np.array([-2, -1, 1, 2], dtype=np.float32), size=n))
    return t.wire(rng.integers(-8, 9, size=n).astype(np.float32))


def reference(t: DType, xs: List[Array], op: str) -> Array:
    """numpy's reduction over ranks, in the element type (as linerate returns it)."""
    stack = np.stack([t.numeric(x) for x in xs])
    with np.errstate(over="ignore"):
        red = UFUNC[op].reduce(stack, axis=0, dtype=None if op[0] == "l" else stack.dtype)
    return t.wire(red.astype(stack.dtype))


def same(got: Optional[Array], want: Array, what: object) -> None:
    assert got is not None and got.dtype == want.dtype and got.shape == want.shape, (what, got, want)
    assert np.array_equal(got, want), (what, got, want)


def test_until_done(req: Request, what: str) -> Optional[Array]:
    """Completes `req` through test() alone, bounded in time."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, res = req.test()
        if done:
            return res
    raise AssertionError(f"{what}: test() never reported completion")


def check_reductions(comm: Communicator, t: DType, op: str) -> None:
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


def check_movement(comm: Communicator, t: DType) -> None:
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


def main() -> None:
    comm = lr.collective.init(timeout=60)
    r, n = comm.rank, comm.size
    for t in DTYPES:
        for op in t.ops():
            check_reductions(comm, t, op)
        check_movement(comm, t)
        comm.barrier()
    assert comm.ibarrier().wait() is None
    check_large(comm)
    c = comm.counters()
    assert c["ops_failed"] == 0 and c["ops_completed"] > 100, c
    comm.finalize()
    print(f"OK rank {r} of {n}")


LARGE = 64 << 20


def check_large(comm: Communicator) -> None:
    """64 MiB messages: the ring all-reduce, the chained broadcast, send/recv of the largest
    size, each against numpy."""
    r, n = comm.rank, comm.size
    elems = LARGE // 4
    base = np.arange(elems, dtype=np.int64) % 1000
    x = (base * (r + 1) % 997).astype(np.float32)
    want = np.sum([(base * (k + 1)) % 997 for k in range(n)], axis=0).astype(np.float32)
    got = comm.allreduce(x, op="sum", out=x)
    assert np.array_equal(got, want), "64 MiB allreduce"
    b = np.full(LARGE, r, dtype=np.uint8)
    comm.bcast_inplace(b, root=n - 1)
    assert b[0] == n - 1 and b[-1] == n - 1 and np.count_nonzero(b != n - 1) == 0, "64 MiB bcast"
    if n > 1:
        buf = np.empty(LARGE, dtype=np.uint8)
        comm.send(np.full(LARGE, r, dtype=np.uint8), (r + 1) % n, tag=77)
        comm.recv(buf, (r - 1) % n, tag=77)
        assert np.count_nonzero(buf != (r - 1) % n) == 0, "64 MiB send/recv"
        check_borrowed_isend(comm)


def check_borrowed_isend(comm: Communicator) -> None:
    """isend of a contiguous array sends straight from it (the request keeps the array): rank
    0 copies nothing for a waited one (nobody sends to it meanwhile), and one whose request
    is dropped before it is written still delivers the data as it was when sent."""
    r = comm.rank
    elems = 1 << 20
    if r == 0:
        src = np.arange(elems, dtype=np.float64)
        staged = comm.counters()["staged_bytes"]
        req = comm.isend(src, 1, tag=78)
        assert req.wait() is None
        assert comm.counters()["staged_bytes"] == staged, "a borrowed isend copied its array"
        dropped = np.arange(elems, dtype=np.float64) * 3
        req = comm.isend(dropped, 1, tag=79)
        del req
        dropped[:] = -1.0
    elif r == 1:
        got = np.empty(elems, dtype=np.float64)
        comm.recv(got, 0, tag=78)
        assert np.array_equal(got, np.arange(elems, dtype=np.float64)), "borrowed isend"
        comm.recv(got, 0, tag=79)
        assert np.array_equal(got, np.arange(elems, dtype=np.float64) * 3), "isend whose request was dropped"
    comm.barrier()


MPI_TYPES: List[Any] = [np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int8, np.uint8, np.int16,
             np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.bool_]


def mpi_main() -> None:
    """The same checks through linerate.collective.MPI (mpi4py's API): every buffer
    operation, dtype (complex too) and operator against numpy, and 64 MiB messages."""
    from linerate.collective import MPI

    comm = MPI.COMM_WORLD
    r, n = comm.Get_rank(), comm.Get_size()
    ops = {"SUM": "sum", "PROD": "prod", "MAX": "max", "MIN": "min", "LAND": "land", "LOR": "lor",
           "LXOR": "lxor", "BAND": "band", "BOR": "bor", "BXOR": "bxor"}
    for dt in MPI_TYPES:
        kind = np.dtype(dt).kind
        for name, op in ops.items():
            if kind in "fc" and op in BITWISE or kind == "c" and op in ("max", "min"):
                continue
            rng = [np.random.default_rng([k, MPI_TYPES.index(dt), list(ops).index(name)]) for k in range(n)]
            if kind == "b":
                xs = [g.integers(0, 2, 12).astype(dt) for g in rng]
            elif kind in "iu":
                info = np.iinfo(dt)
                xs = [g.integers(info.min, info.max, 12, dtype=dt, endpoint=True) for g in rng]
            elif op == "prod":
                xs = [g.choice(np.array([-2, -1, 1, 2]), 12).astype(dt) for g in rng]
            else:
                xs = [(g.integers(-8, 9, 12) + (1j * g.integers(-8, 9, 12) if kind == "c" else 0)).astype(dt) for g in rng]
            with np.errstate(over="ignore"):
                want = UFUNC[op].reduce(np.stack(xs), axis=0, dtype=None if op[0] == "l" else dt).astype(dt)
            mop = getattr(MPI, name)
            out = np.empty_like(xs[r])
            comm.Allreduce(xs[r], out, op=mop)
            assert np.array_equal(out, want), (dt, name, "Allreduce", out, want)
            out = xs[r].copy()
            comm.Allreduce(MPI.IN_PLACE, out, op=mop)
            assert np.array_equal(out, want), (dt, name, "Allreduce IN_PLACE")
            root = n - 1
            red = np.empty_like(xs[r])
            comm.Reduce(xs[r], red if r == root else None, op=mop, root=root)
            assert r != root or np.array_equal(red, want), (dt, name, "Reduce")
            ys = [np.tile(x, n) for x in xs]
            part = np.empty(12, dtype=dt)
            comm.Reduce_scatter_block(ys[r], part, op=mop)
            assert np.array_equal(part, want), (dt, name, "Reduce_scatter_block")
        # Movement of every dtype.
        x = np.arange(3 * n).astype(dt) if kind != "b" else (np.arange(3 * n) % 2).astype(dt)
        y = x.copy() if r == 0 else np.zeros_like(x)
        comm.Bcast(y, root=0)
        assert np.array_equal(y, x), (dt, "Bcast")
        part = np.empty(3, dtype=dt)
        comm.Scatter(x if r == 0 else None, part, root=0)
        assert np.array_equal(part, x[3 * r : 3 * r + 3]), (dt, "Scatter")
        every = np.empty(3 * n, dtype=dt)
        comm.Allgather(part, every)
        assert np.array_equal(every, x), (dt, "Allgather")
        g = np.empty(3 * n, dtype=dt) if r == n - 1 else None
        comm.Gather(part, g, root=n - 1)
        assert g is None or np.array_equal(g, x), (dt, "Gather")
        a2a = np.empty(3 * n, dtype=dt)
        comm.Alltoall(np.repeat(part[:1], 3 * n), a2a)
        assert np.array_equal(a2a, np.repeat(x[::3], 3)), (dt, "Alltoall")
        if n > 1:
            got = np.empty(3, dtype=dt)
            comm.Sendrecv(part, dest=(r + 1) % n, recvbuf=got, source=(r - 1) % n)
            assert np.array_equal(got, x[3 * ((r - 1) % n) : 3 * ((r - 1) % n) + 3]), (dt, "Sendrecv")
    # MAXLOC/MINLOC on (value, index) pairs, buffers and objects.
    v = np.array([(float((r * 5) % 3), r)], dtype=MPI.DOUBLE_INT.dtype)
    best = np.empty_like(v)
    comm.Allreduce([v, MPI.DOUBLE_INT], [best, MPI.DOUBLE_INT], op=MPI.MAXLOC)
    vals = [float((k * 5) % 3) for k in range(n)]
    assert best["val"][0] == max(vals) and best["loc"][0] == vals.index(max(vals)), best
    assert comm.allreduce((vals[r], r), op=MPI.MINLOC) == (min(vals), vals.index(min(vals)))
    # 64 MiB through the MPI API.
    elems = LARGE // 8
    x = np.full(elems, r + 1, dtype=np.float64)
    out = np.empty_like(x)
    comm.Allreduce(x, out, op=MPI.SUM)
    assert np.count_nonzero(out != n * (n + 1) / 2) == 0, "64 MiB Allreduce"
    b = np.full(LARGE, r, dtype=np.uint8)
    comm.Bcast(b, root=0)
    assert np.count_nonzero(b) == 0, "64 MiB Bcast"
    MPI.Finalize()
    print(f"OK rank {r} of {n}")


def dataset(name: str) -> Tuple[Array, Array]:
    """The K-Means data sets of test_kmeans.py: (samples as float32, initial centres)."""
    if name == "digits":
        from sklearn.datasets import load_digits  # type: ignore[import-untyped]

        x, k = load_digits().data.astype(np.float32), 10
    else:
        x, k = lr.collective.covertype_like(581012, 3), 7
    return x, x[np.linspace(0, len(x) - 1, k).astype(int)].copy()


def kmeans_main(name: str, outdir: str) -> None:
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
    if sys.argv[1:] == ["mpi"]:
        mpi_main()
        sys.exit(0)
    if len(sys.argv) == 4 and sys.argv[1] == "kmeans":
        kmeans_main(sys.argv[2], sys.argv[3])
        sys.exit(0)
    main()
