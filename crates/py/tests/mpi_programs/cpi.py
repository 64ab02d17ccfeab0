"""Compute pi by the midpoint rule on 4/(1+x^2), the intervals dealt round-robin."""
import math

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

for n in (100, 10_000, 1_000_000):
    count = np.array(n if rank == 0 else 0, dtype="i")
    comm.Bcast([count, MPI.INT], root=0)
    h = 1.0 / int(count)
    x = h * (np.arange(rank, int(count), size, dtype="d") + 0.5)
    mine = np.array(h * np.sum(4.0 / (1.0 + x * x)), dtype="d")
    pi = np.array(0.0, dtype="d")
    comm.Reduce([mine, MPI.DOUBLE], [pi, MPI.DOUBLE], op=MPI.SUM, root=0)
    also = comm.allreduce(float(mine), op=MPI.SUM)
    if rank == 0:
        print(f"n={n}: pi is about {float(pi):.10f}, error below {10 ** math.ceil(math.log10(abs(float(pi) - math.pi))):.0e}, shape {pi.shape}")
        print(f"n={n}: the object all-reduce agrees: {abs(also - float(pi)) < 1e-12}")
