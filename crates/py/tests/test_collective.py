"""linerate.collective from Python: N processes on one shared-memory fabric, every
operation and dtype against numpy (see collective_rank.py)."""

from typing import Sequence
import os
import subprocess
import sys

import pytest

RANK_SCRIPT = os.path.join(os.path.dirname(__file__), "collective_rank.py")


def launch(n: int, tag: str, args: Sequence[str] = ()) -> list[tuple[int, str, str]]:
    env = dict(os.environ)
    for k in ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"):
        env.pop(k, None)
    fabric = f"py-coll-{tag}-{os.getpid()}"
    procs: list[subprocess.Popen[str]] = []
    for r in range(n):
        e = dict(env, LINERATE_RANK=str(r), LINERATE_WORLD_SIZE=str(n), LINERATE_FABRIC=fabric)
        procs.append(subprocess.Popen([sys.executable, RANK_SCRIPT, *args], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs: list[tuple[int, str, str]] = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        outs.append((p.returncode, out, err))
    return outs


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_every_operation_and_dtype_against_numpy(n: int) -> None:
    for r, (code, out, err) in enumerate(launch(n, f"n{n}")):
        assert code == 0, f"rank {r}: {out}\n{err}"
        assert f"OK rank {r} of {n}" in out


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_every_operation_and_dtype_through_the_mpi_api_against_numpy(n: int) -> None:
    for r, (code, out, err) in enumerate(launch(n, f"mpi{n}", ["mpi"])):
        assert code == 0, f"rank {r}: {out}\n{err}"
        assert f"OK rank {r} of {n}" in out


def test_init_without_launcher_says_what_is_missing() -> None:
    import linerate as lr

    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith(("LINERATE_", "OMPI_COMM_WORLD", "PMI_", "SLURM_"))}
    try:
        with pytest.raises(ValueError, match="LINERATE_RANK"):
            lr.collective.init()
    finally:
        os.environ.update(saved)


def test_init_refuses_an_unknown_transport_in_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    import linerate as lr

    monkeypatch.setenv("LINERATE_RANK", "0")
    monkeypatch.setenv("LINERATE_WORLD_SIZE", "1")
    with pytest.raises(ValueError, match="one of auto, shm, tcp"):
        lr.collective.init(fabric=f"py-transport-{os.getpid()}", transport="rdma")
    monkeypatch.setenv("LINERATE_TRANSPORT", "infiniband")
    with pytest.raises(ValueError, match="one of auto, shm, tcp"):
        lr.collective.init(fabric=f"py-transport-{os.getpid()}")
