"""Ranks on real interfaces: three network namespaces, each joined by a veth to a Linux bridge
in a fourth, one rank per namespace on its veth end, joined through rank 0's address alone.
An all-reduce, a broadcast and an all-gather are checked exactly against numpy, under the
real `mpirun -np 3` and under `linerate collective launch -n 3` on AF_XDP, and once on
AF_PACKET with `init(link=, ip=, root=)`; bad values get their one sentence. The namespaces
(and with them the veths, the bridge and the XDP programs) are deleted afterwards, also on
failure."""

from typing import Iterator, NoReturn, Optional
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
TIMEOUT = 180
N = 3
SUBNET = "10.9.22"

# One rank: joins from the launcher's variables (or, with `kwargs KIND`, from init's
# keyword arguments), runs the operations and compares them with numpy.
PROGRAM = textwrap.dedent("""
    import os, sys
    import numpy as np
    import linerate as lr
    if sys.argv[1:2] == ["kwargs"]:
        r = int(os.environ["LINERATE_RANK"])
        comm = lr.collective.init(link=f"{sys.argv[2]}:c{r}", ip=f"%(subnet)s.{r + 1}/24", root="%(subnet)s.1")
    else:
        comm = lr.collective.init()
    r, n = comm.rank, comm.size

    def data(k, length):
        return np.random.default_rng(1000 + k).integers(-1_000_000, 1_000_000, size=length, dtype=np.int64)

    big = comm.allreduce(data(r, 50_000))
    assert np.array_equal(big, sum(data(k, 50_000) for k in range(n))), "all-reduce (ring)"
    small = comm.allreduce(data(r, 10).astype(np.float32), op="max")
    assert np.array_equal(small, np.max([data(k, 10).astype(np.float32) for k in range(n)], axis=0)), "all-reduce max"
    b = comm.bcast(data(r, 20_000), root=1)
    assert np.array_equal(b, data(1, 20_000)), "broadcast"
    g = comm.allgather(data(r, 1000).reshape(10, 100))
    assert np.array_equal(g, np.concatenate([data(k, 1000).reshape(10, 100) for k in range(n)])), "all-gather"
    print(f"rank {r} of {n} exact on {comm.medium}", flush=True)
    comm.finalize()
""") % {"subnet": SUBNET}


def not_run(reason: str) -> NoReturn:
    pytest.fail(f"NOT RUN: {reason}", pytrace=False)


def require_root() -> None:
    if os.geteuid() != 0:
        not_run("needs root: the test creates network namespaces, veths, a bridge and XDP programs")
    if shutil.which("ip") is None:
        not_run("the `ip` command (iproute2) is missing")


def cli() -> str:
    for profile in ("release", "ci", "debug"):
        exe = REPO / "target" / profile / "linerate"
        if exe.exists():
            return str(exe)
    not_run("no linerate binary in target/ (make build-release builds it)")


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("LINERATE_", "OMPI_", "PMI_", "PMIX_", "SLURM_", "MASTER_")):
            del env[k]
    return env


def ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    assert r.returncode == 0, f"ip {' '.join(args)}: {r.stderr}"


@pytest.fixture
def bridged() -> Iterator[str]:
    """Namespaces `<prefix>-r0..r2` with veth `c<k>` whose peer `p<k>` is a port of bridge
    br0 in `<prefix>-br`; each veth end also has the kernel address SUBNET.(101+k).
    Yields the prefix; deletes everything afterwards."""
    require_root()
    prefix = f"lr-i22c-{os.getpid()}"
    names = [f"{prefix}-br"] + [f"{prefix}-r{k}" for k in range(N)]
    try:
        for ns in names:
            ip("netns", "add", ns)
            ip("-n", ns, "link", "set", "lo", "up")
        br = names[0]
        ip("-n", br, "link", "add", "br0", "type", "bridge")
        ip("-n", br, "link", "set", "br0", "up")
        for k in range(N):
            ns = f"{prefix}-r{k}"
            ip("-n", br, "link", "add", f"p{k}", "type", "veth", "peer", "name", f"c{k}", "netns", ns)
            ip("-n", br, "link", "set", f"p{k}", "master", "br0")
            ip("-n", br, "link", "set", f"p{k}", "up")
            ip("-n", ns, "addr", "add", f"{SUBNET}.{101 + k}/24", "dev", f"c{k}")
            ip("-n", ns, "link", "set", f"c{k}", "up")
        assert_bridge_forwards(prefix)
        yield prefix
        # The XDP programs passed the kernel's own traffic all along.
        assert_bridge_forwards(prefix)
    finally:
        for ns in names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def assert_bridge_forwards(prefix: str) -> None:
    """Namespace 0's kernel pings the kernel address of every other namespace through br0."""
    for k in range(1, N):
        r = subprocess.run(["ip", "netns", "exec", f"{prefix}-r0", "ping", "-c", "1", "-W", "3", f"{SUBNET}.{101 + k}"],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"the bridge does not forward to {SUBNET}.{101 + k}: {r.stdout}"


def program(tmp_path: Path) -> str:
    p = tmp_path / "rank_on_link.py"
    p.write_text(PROGRAM)
    return str(p)


def assert_exact(r: subprocess.CompletedProcess[str], kind: str) -> None:
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    # OpenMPI may cut a rank's line with another's; its tags split them again.
    out = re.sub(r"\[\d+,\d+\]<stdout>:", "\n", r.stdout)
    lines = sorted(line for line in out.splitlines() if "exact on" in line)
    assert [line.split(" exact on ")[0] for line in lines] == [f"rank {k} of {N}" for k in range(N)], r.stdout
    assert all(f"on {kind}:c" in line for line in lines), lines


def test_three_ranks_on_af_xdp_under_mpirun(bridged: str, tmp_path: Path) -> None:
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        not_run("mpirun is not installed (make setup-system installs openmpi-bin)")
    # Each rank enters its own namespace and names its link and address there, as a rank on
    # its own machine would have them in its environment; rank 0's address comes from MASTER_ADDR.
    per_rank = (f'k=$OMPI_COMM_WORLD_RANK; exec ip netns exec {bridged}-r$k env LINERATE_LINK=af_xdp:c$k '
                f'LINERATE_IP={SUBNET}.$((k + 1))/24 "$0" "$1"')
    env = clean_env()
    env["MASTER_ADDR"] = f"{SUBNET}.1"
    r = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--tag-output",
                        "-np", str(N),
                        "sh", "-c", per_rank, sys.executable, program(tmp_path)],
                       env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert_exact(r, "af_xdp")


def test_three_ranks_on_af_xdp_under_collective_launch(bridged: str, tmp_path: Path) -> None:
    r = subprocess.run([cli(), "collective", "launch", "-n", str(N), "--link", "af_xdp:c{rank}",
                        "--ip", f"{SUBNET}.1/24", "--netns", bridged + "-r{rank}", sys.executable, program(tmp_path)],
                       env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert_exact(r, "af_xdp")


def test_three_ranks_on_af_packet_with_init_keywords(bridged: str, tmp_path: Path) -> None:
    per_rank = f'exec ip netns exec {bridged}-r$LINERATE_RANK "$0" "$1" kwargs af_packet'
    r = subprocess.run([cli(), "collective", "launch", "-n", str(N), "sh", "-c", per_rank, sys.executable,
                        program(tmp_path)], env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert_exact(r, "af_packet")


@pytest.mark.parametrize("name", ["cpi", "jacobi"])
def test_an_mpi4py_program_runs_unchanged_on_af_xdp(bridged: str, tmp_path: Path, name: str) -> None:
    """A program written for mpi4py (its import line changed) prints on AF_XDP ranks what it
    prints on the shared-memory fabric: the launcher's variables alone move it."""
    src = (Path(__file__).resolve().parent / "mpi_programs" / f"{name}.py").read_text()
    prog = tmp_path / f"{name}_linerate.py"
    prog.write_text(src.replace("from mpi4py import MPI", "from linerate.collective import MPI"))
    on_link = subprocess.run([cli(), "collective", "launch", "-n", str(N), "--link", "af_xdp:c{rank}",
                              "--ip", f"{SUBNET}.1/24", "--netns", bridged + "-r{rank}", sys.executable, str(prog)],
                             env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert on_link.returncode == 0, on_link.stderr
    on_shm = subprocess.run([cli(), "collective", "launch", "-n", str(N), sys.executable, str(prog)],
                            env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert on_shm.returncode == 0, on_shm.stderr
    assert sorted(on_link.stdout.splitlines()) == sorted(on_shm.stdout.splitlines())
    assert on_link.stdout.strip()


def kmeans_checksum(out: str) -> str:
    sums = {line.split()[-1] for line in out.splitlines() if line.startswith("centres checksum")}
    assert len(sums) == 1, out
    return sums.pop()


def test_kmeans_ranks_on_af_xdp_end_where_threads_on_the_fabric_end(bridged: str) -> None:
    """`linerate kmeans` as one rank per process on AF_XDP (the launcher's variables select
    it) gives the centres, bit for bit, of three ranks as threads on the fabric."""
    args = ["kmeans", "--samples", "30000", "--iters", "5"]
    r = subprocess.run([cli(), "collective", "launch", "-n", str(N), "--link", "af_xdp:c{rank}",
                        "--ip", f"{SUBNET}.1/24", "--netns", bridged + "-r{rank}", cli(), *args],
                       env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}"
    assert sorted(line.split(": ")[0] for line in r.stdout.splitlines() if line.startswith("kmeans rank")) == [
        f"kmeans rank {k} of {N} on af_xdp:c{k}" for k in range(N)], r.stdout
    threads = subprocess.run([cli(), *args, "--ranks", str(N)], env=clean_env(), capture_output=True, text=True,
                             timeout=TIMEOUT)
    assert threads.returncode == 0, threads.stderr
    assert kmeans_checksum(r.stdout) == kmeans_checksum(threads.stdout)


def init_error(code: str, netns: Optional[str] = None, rank: int = 1) -> str:
    """Runs `code` (which calls init) as rank `rank` of 2; returns its last stderr line."""
    env = clean_env()
    env.update(LINERATE_RANK=str(rank), LINERATE_WORLD_SIZE="2")
    cmd = [sys.executable, "-c", "import linerate as lr\n" + code]
    if netns is not None:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0, r.stdout
    return r.stderr.strip().splitlines()[-1]


def test_bad_link_values_get_one_sentence_each() -> None:
    e = init_error('lr.collective.init(link="veth0", ip="10.9.0.2/24", root="10.9.0.1")')
    assert e.startswith("ValueError:") and "is not KIND:NAME" in e, e
    e = init_error('lr.collective.init(link="af_xdp:veth0", root="10.9.0.1")')
    assert e.startswith("ValueError:") and "has no address" in e and "LINERATE_IP" in e, e
    e = init_error('lr.collective.init(link="af_xdp:veth0", ip="10.9.0.2/24")')
    assert e.startswith("ValueError:") and "rank 0's address" in e, e
    e = init_error('lr.collective.init(link="af_xdp:veth0", ip="10.9.0.2/24", root="10.9.0.1", gateway="x")')
    assert e.startswith("ValueError:") and 'gateway "x"' in e, e
    e = init_error('lr.collective.init(link="af_packet:lr-none-i22c", ip="10.9.0.2/24", root="10.9.0.1")')
    assert e.startswith("ValueError: rank 1 cannot open af_packet:lr-none-i22c:"), e


def test_a_root_that_does_not_answer_is_named(bridged: str) -> None:
    e = init_error(f'lr.collective.init(link="af_packet:c1", ip="{SUBNET}.2/24", root="{SUBNET}.1", timeout=1.5)',
                   netns=f"{bridged}-r1")
    assert e.startswith(f"TimeoutError: rank 1: the root {SUBNET}.1:7470 did not answer within 1.5s"), e
