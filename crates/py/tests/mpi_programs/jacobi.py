"""Jacobi relaxation of a 2-D Laplace problem, rows split across ranks, halo rows exchanged
with Sendrecv (PROC_NULL past the edges), the residual all-reduced."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
NX, NY, STEPS = 48, 40, 60

rows = np.array_split(np.arange(NY), size)[rank]
up = rank - 1 if rank > 0 else MPI.PROC_NULL
down = rank + 1 if rank < size - 1 else MPI.PROC_NULL

# Local rows plus a ghost row above and below; the top boundary of the plate is hot.
u = np.zeros((len(rows) + 2, NX), dtype=np.float64)
if rank == 0:
    u[0, :] = 100.0
u[:, 0] = 25.0
u[:, -1] = 50.0

for step in range(STEPS):
    comm.Sendrecv(u[1], dest=up, sendtag=1, recvbuf=u[-1], source=down, recvtag=1)
    comm.Sendrecv(u[-2], dest=down, sendtag=2, recvbuf=u[0], source=up, recvtag=2)
    if rank == 0:
        u[0, :] = 100.0
    new = u.copy()
    new[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    local = np.array([np.sum((new[1:-1] - u[1:-1]) ** 2)])
    total = np.zeros(1)
    comm.Allreduce(local, total, op=MPI.SUM)
    u = new
    if step % 20 == 19 and rank == 0:
        print(f"step {step + 1}: residual {np.sqrt(total[0]):.8e}")

# The whole plate at rank 0, gathered with counts per rank.
counts = np.array(comm.allgather(u[1:-1].size))
plate = np.empty(NY * NX) if rank == 0 else None
comm.Gatherv(np.ascontiguousarray(u[1:-1]), [plate, counts, MPI.DOUBLE] if rank == 0 else None, root=0)
hottest = comm.reduce(float(u[1:-1, 1:-1].max()), op=MPI.MAX, root=0)
if rank == 0:
    plate = plate.reshape(NY, NX)
    print(f"plate mean {plate.mean():.8f}, hottest interior cell {hottest:.8f}")
    print(f"centre column: {' '.join(f'{v:.4f}' for v in plate[::8, NX // 2])}")
