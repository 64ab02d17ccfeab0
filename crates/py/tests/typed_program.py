"""A small typed program against linerate's stubs; test_typing.py runs mypy --strict on it."""

from typing import List, Optional, Tuple

import numpy as np
import numpy.typing as npt

import linerate as lr
import linerate.middlebox as mb
from linerate.spn import Model


def echo_once(net: lr.Testbed, a: lr.Host, b: lr.Host) -> Optional[Tuple[bytes, Tuple[str, int]]]:
    with b.udp_bind(7) as srv, a.udp_bind() as cli:
        sent: bool = cli.send_to(bytearray(b"hi"), (b.ip, 7))
        assert sent
        net.run(ms=1.0)
        return srv.recv_from()


def tcp_bytes(c: lr.TcpConn) -> int:
    buf = bytearray(64)
    try:
        return c.recv_into(memoryview(buf))
    except BlockingIOError:
        return 0


def firewall_verdicts(path: str, frames: List[bytes]) -> List[str]:
    fw = mb.Firewall(mb.Blacklist.load(path))
    rt = mb.Runtime(units=[fw, "forward"], policy="hash")
    rt.send(0, frames[0])
    rt.run()
    return [fw.verdict(f) for f in frames]


def likelihoods() -> npt.NDArray[np.float64]:
    m: Model = Model.generate(vars=4, seed=2)
    return m.log_likelihood(np.zeros((3, m.num_vars), dtype=np.uint8))


def mpi_world_of_one() -> float:
    """mpi4py's API, typed: a program started alone is rank 0 of a world of one."""
    from linerate.collective import MPI

    comm: MPI.Comm = MPI.COMM_WORLD
    x = np.arange(4, dtype=np.float64)
    y = np.empty_like(x)
    comm.Allreduce([x, MPI.DOUBLE], [y, MPI.DOUBLE], op=MPI.SUM)
    st = MPI.Status()
    comm.send({"n": comm.Get_size()}, dest=comm.Get_rank(), tag=3)
    got: dict[str, int] = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
    assert st.Get_source() == 0 and st.Get_tag() == 3 and got == {"n": 1}
    return float(y.sum()) + MPI.Wtime() * 0


def main() -> None:
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    version: str = lr.__version__
    print(version, echo_once(net, a, b), a.ping(b.ip, count=1), likelihoods().shape, mpi_world_of_one())
    host: lr.Host
    for host in (a, b):
        counters: dict[str, int] = host.counters()
        print(lr.rx_accounted(counters))


if __name__ == "__main__":
    main()
