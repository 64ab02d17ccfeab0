"""One rank of the Python collective test: started N times by test_collective.py with the
launcher variables set; checks every operation against numpy and prints OK."""

import os
import sys

import numpy as np

import linerate as lr

DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64]


def data(rank, dtype, op, n=11):
    """Rank `rank`'s data, reproducible by every rank; exact in every dtype for `op`."""
    rng = np.random.default_rng(1000 * rank + DTYPES.index(dtype) * 10 + ["sum", "prod", "max", "min"].index(op))
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    if op == "prod":
        return rng.choice(np.array([-2, -1, 1, 2], dtype=dtype), size=n)
    return rng.integers(-8, 9, size=n).astype(dtype)


def reference(xs, op):
    stack = np.stack(xs)
    with np.errstate(over="ignore"):
        return {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[op](stack, axis=0).astype(stack.dtype)


def main():
    comm = lr.collective.init(timeout=60)
    r, n = comm.rank, comm.size
    for dtype in DTYPES:
        for op in ["sum", "prod", "max", "min"]:
            xs = [data(k, dtype, op) for k in range(n)]
            want = reference(xs, op)
            got = comm.allreduce(xs[r], op=op)
            assert got.dtype == dtype and np.array_equal(got, want), (dtype, op, got, want)
            x = xs[r].copy()
            comm.allreduce_inplace(x, op=op)
            assert np.array_equal(x, want), ("in-place", dtype, op)
            req = comm.iallreduce(xs[r].reshape(1, -1), op=op)
            got = req.wait()
            assert got.shape == (1, len(want)) and np.array_equal(got[0], want), ("non-blocking", dtype, op)
            red = comm.reduce(xs[r], op=op, root=n - 1)
            assert np.array_equal(red, want) if r == n - 1 else red.size == 0, ("reduce", dtype, op)
        xs = [data(k, dtype, "sum") for k in range(n)]
        assert np.array_equal(comm.bcast(xs[r], root=n - 1), xs[n - 1]), ("bcast", dtype)
        y = xs[r].copy()
        comm.bcast_inplace(y, root=0)
        assert np.array_equal(y, xs[0]), ("bcast in place", dtype)
        assert np.array_equal(comm.allgather(xs[r][:3]), np.concatenate([x[:3] for x in xs])), ("allgather", dtype)
    comm.barrier()
    comm.finalize()
    print(f"OK rank {r} of {n}")


def dataset(name):
    """The K-Means data sets of test_kmeans.py: (samples as float32, initial centres)."""
    if name == "digits":
        from sklearn.datasets import load_digits

        x, k = load_digits().data.astype(np.float32), 10
    else:
        x, k = lr.collective.covertype_like(20000, 3), 7
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
