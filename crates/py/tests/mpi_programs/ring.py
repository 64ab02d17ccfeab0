"""A token goes round the ring, received from ANY_SOURCE with a Status; then workers report
to rank 0, which takes their messages in any order and sizes them with Probe."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
status = MPI.Status()

# Round 1: a numpy token, two laps, each rank adding its rank.
token = np.zeros(3, dtype=np.int64)
for lap in range(2):
    if rank == 0:
        token[0] = lap + 1
        comm.Send([token, MPI.LONG], dest=right, tag=10 + lap)
    comm.Recv([token, MPI.LONG], source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
    print(f"rank {rank} lap {lap}: token {token.tolist()} from {status.Get_source()} tag {status.Get_tag()} "
          f"count {status.Get_count(MPI.LONG)}")
    if rank != 0:
        token[1] += rank
        token[2] += 1
        comm.Send([token, MPI.LONG], dest=right, tag=10 + lap)

comm.Barrier()

# Round 2: objects around the ring with isend/irecv, both directions at once.
reqs = [comm.irecv(source=left, tag=11), comm.irecv(source=right, tag=12)]
comm.isend({"from": rank, "dir": "right"}, dest=right, tag=11)
comm.isend({"from": rank, "dir": "left"}, dest=left, tag=12)
got = MPI.Request.waitall(reqs)
print(f"rank {rank} heard {sorted((g['from'], g['dir']) for g in got)}")

# Round 3: workers report a variable-size result; rank 0 probes for size and sender.
if rank == 0:
    reports = {}
    for _ in range(size - 1):
        comm.Probe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
        n = status.Get_count(MPI.INT)
        buf = np.empty(n, dtype="i")
        comm.Recv([buf, MPI.INT], source=status.Get_source(), tag=status.Get_tag(), status=status)
        assert status.Get_tag() == 100 + status.Get_source()
        reports[status.Get_source()] = buf.tolist()
    for src in sorted(reports):
        print(f"report from {src}: {reports[src]}")
    print(f"nothing left: {not comm.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)}")
else:
    comm.Send(np.arange(rank * 2, dtype="i") * rank, dest=0, tag=100 + rank)
comm.Barrier()
