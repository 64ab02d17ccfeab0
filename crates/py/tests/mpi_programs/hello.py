"""Hello world: every rank says who it is."""
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
name = MPI.Get_processor_name()
t0 = MPI.Wtime()
comm.Barrier()
assert MPI.Wtime() >= t0
print(f"Hello from rank {rank} of {size} on {name}")
if rank == 0:
    print(f"{comm.size} ranks answered the roll call, version {MPI.Get_version()[0]}")
