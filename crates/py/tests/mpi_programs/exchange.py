"""Point-to-point and collective exchanges of Python objects and numpy buffers, the way an
mpi4py user writes them."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size


def say(what, value):
    print(f"[{rank}] {what}: {value}")


# Objects, point to point.
if rank == 0:
    comm.send({"a": 7, "b": 3.14, "c": [1, "two"]}, dest=1 % size, tag=11)
if rank == 1 % size:
    say("dict", comm.recv(source=0, tag=11))
req = comm.isend(("hello", rank), dest=right, tag=3)
say("isend/irecv", comm.irecv(source=left, tag=3).wait())
req.wait()
say("sendrecv", comm.sendrecv([rank] * 3, dest=right, sendtag=5, source=left, recvtag=5))

# Objects, collectives.
say("bcast", comm.bcast({"key": "value", "n": size} if rank == 0 else None, root=0))
say("scatter", comm.scatter([(i + 1) ** 2 for i in range(size)] if rank == size - 1 else None, root=size - 1))
say("gather", comm.gather(rank ** 2, root=0))
say("allgather", comm.allgather(chr(ord("a") + rank)))
say("alltoall", comm.alltoall([f"{rank}->{j}" for j in range(size)]))
say("reduce", comm.reduce(rank + 1, op=MPI.PROD, root=0))
say("allreduce", comm.allreduce(rank + 1, op=MPI.SUM))
say("maxloc", comm.allreduce((float((rank * 7) % 3), rank), op=MPI.MAXLOC))
say("minloc", comm.allreduce((float((rank * 7) % 3), rank), op=MPI.MINLOC))

# Buffers, point to point.
data = np.arange(10, dtype=np.float64) * (rank + 1)
buf = np.empty(10, dtype=np.float64)
comm.Sendrecv([data, MPI.DOUBLE], dest=right, recvbuf=[buf, MPI.DOUBLE], source=left)
say("Sendrecv", buf.tolist())
raw = bytearray(b"rank %d says hi" % rank)
sreq = comm.Isend([raw, MPI.BYTE], dest=right, tag=9)
inbox = bytearray(len(raw))
rreq = comm.Irecv([inbox, MPI.BYTE], source=left, tag=9)
MPI.Request.Waitall([sreq, rreq])
say("Isend/Irecv bytes", inbox.decode())
u8 = np.full(5, 200 + rank, dtype=np.uint8)
comm.Send(u8, dest=right, tag=1)
comm.Recv(u8, source=left, tag=1)
say("uint8", u8.tolist())

# Buffers, collectives.
v = np.array([1.5, 2.5, 3.5]) if rank == 0 else np.zeros(3)
comm.Bcast([v, MPI.DOUBLE], root=0)
say("Bcast", v.tolist())
send = np.arange(size * 2, dtype="i") * 10 if rank == 0 else None
part = np.empty(2, dtype="i")
comm.Scatter(send, part, root=0)
say("Scatter", part.tolist())
whole = np.empty(size * 2, dtype="i") if rank == 0 else None
comm.Gather(part + 1, whole, root=0)
say("Gather", None if whole is None else whole.tolist())
every = np.empty(size * 2, dtype="i")
comm.Allgather([part, MPI.INT], [every, MPI.INT])
say("Allgather", every.tolist())
out = np.empty(size, dtype=np.int64)
comm.Alltoall(np.arange(size, dtype=np.int64) + 100 * rank, out)
say("Alltoall", out.tolist())
for name, op in [("SUM", MPI.SUM), ("PROD", MPI.PROD), ("MAX", MPI.MAX), ("MIN", MPI.MIN)]:
    x = np.array([rank + 1, 2 - rank, 3 * rank - 1], dtype=np.int32)
    y = np.empty_like(x)
    comm.Allreduce(x, y, op=op)
    say(f"Allreduce {name}", y.tolist())
for name, op in [("LAND", MPI.LAND), ("LOR", MPI.LOR), ("BAND", MPI.BAND), ("BOR", MPI.BOR)]:
    x = np.array([rank % 2, 1, 0, 0b1100 | rank], dtype=np.int32)
    y = np.empty_like(x)
    comm.Allreduce([x, MPI.INT], [y, MPI.INT], op=op)
    say(f"Allreduce {name}", y.tolist())
flags = np.array([True, rank == 0, rank >= 0])
anyf = np.empty_like(flags)
comm.Allreduce([flags, MPI.C_BOOL], [anyf, MPI.C_BOOL], op=MPI.LOR)
say("Allreduce bool LOR", anyf.tolist())
z = np.array([1 + 1j * rank, 2 - 1j], dtype=np.complex128)
zs = np.empty_like(z)
comm.Allreduce(z, zs, op=MPI.SUM)
say("Allreduce complex", zs.tolist())
u32 = np.array([2**32 - 1 - rank, rank], dtype=np.uint32)
comm.Allreduce(MPI.IN_PLACE, u32, op=MPI.MAX)
say("Allreduce uint32 IN_PLACE", u32.tolist())
scalar = np.array(float(rank))
total = np.array(0.0)
comm.Allreduce(scalar, total)
say("0-d Allreduce", (total.shape, float(total)))
red = np.zeros(2) if rank == 0 else None
comm.Reduce(np.array([rank, -rank], dtype=np.float64), red, op=MPI.MIN, root=0)
say("Reduce", None if red is None else red.tolist())
rs = np.empty(2, dtype=np.int64)
comm.Reduce_scatter_block(np.arange(2 * size, dtype=np.int64) * (rank + 1), rs, op=MPI.SUM)
say("Reduce_scatter_block", rs.tolist())
counts = [i + 1 for i in range(size)]
displs = [sum(counts[:i]) for i in range(size)]
mine = np.full(rank + 1, rank, dtype=np.float32)
allv = np.empty(sum(counts), dtype=np.float32)
comm.Allgatherv(mine, [allv, counts, displs, MPI.FLOAT])
say("Allgatherv", allv.tolist())
got = np.empty(rank + 1, dtype=np.float32)
comm.Scatterv([allv * 2, counts, displs, MPI.FLOAT] if rank == 0 else None, got, root=0)
say("Scatterv", got.tolist())
back = np.empty(sum(counts), dtype=np.float32) if rank == 0 else None
comm.Gatherv(got, [back, (counts, displs), MPI.FLOAT] if rank == 0 else None, root=0)
say("Gatherv", None if back is None else back.tolist())
sc = [1] * size
a2av = np.empty(size, dtype="i")
comm.Alltoallv([np.arange(size, dtype="i") + 10 * rank, sc, list(range(size)), MPI.INT], [a2av, sc, list(range(size)), MPI.INT])
say("Alltoallv", a2av.tolist())

# Communicators made from the world.
dup = comm.Dup()
say("Dup allreduce", dup.allreduce(rank, op=MPI.SUM))
half = comm.Split(color=rank % 2, key=-rank)
hx = np.array([rank], dtype="i")
hs = np.empty(1, dtype="i")
half.Allreduce(hx, hs, op=MPI.SUM)
say("Split", (half.Get_rank(), half.Get_size(), int(hs[0]), half.bcast(rank, root=0)))
hb = np.array([rank * 1.0]) if half.Get_rank() == 0 else np.zeros(1)
half.Bcast(hb, root=0)
say("Split Bcast", hb.tolist())
half.Barrier()
comm.Barrier()
if rank == 0:
    print("done")
