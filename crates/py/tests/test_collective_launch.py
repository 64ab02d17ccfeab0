"""`linerate collective launch` runs ranks the way mpirun does: whole lines (with
--tag-output, a rank prefix), every rank stopped within 2 s when one dies (naming it, with
its exit status), no /dev/shm file left; `linerate collective cleanup` removes the files of
killed jobs and keeps those in use."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def cli() -> str:
    for profile in ("release", "ci", "debug"):
        exe = REPO / "target" / profile / "linerate"
        if exe.exists():
            return str(exe)
    pytest.fail("NOT RUN: no linerate binary in target/ (make build-release builds it)", pytrace=False)


def env() -> dict[str, str]:
    e = dict(os.environ)
    for k in list(e):
        if k.startswith(("LINERATE_", "OMPI_", "PMI_", "PMIX_", "SLURM_")):
            del e[k]
    return e


def shm_files(fabric: str) -> list[str]:
    return sorted(f for f in os.listdir("/dev/shm") if f.startswith(f"linerate-{fabric}-"))


def test_lines_stay_whole_and_are_tagged(tmp_path: Path) -> None:
    prog = tmp_path / "chatty.py"
    # Each line is written in three pieces with flushes in between: without whole-line
    # forwarding, the ranks' pieces interleave.
    prog.write_text(textwrap.dedent("""
        import os, sys
        r = os.environ["LINERATE_RANK"]
        for i in range(300):
            sys.stdout.write(f"rank {r} "); sys.stdout.flush()
            sys.stdout.write("x" * 200); sys.stdout.flush()
            sys.stdout.write(f" line {i}\\n"); sys.stdout.flush()
        sys.stderr.write(f"rank {r} done\\n")
    """))
    r = subprocess.run([cli(), "collective", "launch", "-n", "3", "--tag-output", sys.executable, str(prog)],
                       env=env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 900
    for line in lines:
        tag, rest = line.split(":", 1)
        rank = tag[1]
        assert tag == f"[{rank}]<stdout>" and rest.startswith(f"rank {rank} {'x' * 200} line "), line
    assert sorted(r.stderr.splitlines()) == [f"[{k}]<stderr>:rank {k} done" for k in range(3)]


def test_a_killed_rank_stops_the_job_within_two_seconds_and_leaves_no_shm_file(tmp_path: Path) -> None:
    fabric = f"t28-kill-{os.getpid()}"
    prog = tmp_path / "busy.py"
    # Every rank all-reduces in a loop; the test kills rank 1 mid-run.
    prog.write_text(textwrap.dedent("""
        import os, sys
        import numpy as np
        from linerate.collective import MPI
        comm = MPI.COMM_WORLD
        x = np.ones(1 << 16)
        y = np.empty_like(x)
        comm.Allreduce(x, y)
        print(f"ready {comm.Get_rank()} {os.getpid()}", flush=True)
        for _ in range(1_000_000):
            comm.Allreduce(x, y)
    """))
    p = subprocess.Popen([cli(), "collective", "launch", "-n", "3", "--fabric", fabric, sys.executable, str(prog)],
                         env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pids: dict[int, int] = {}
        assert p.stdout is not None and p.stderr is not None
        deadline = time.monotonic() + 60
        while len(pids) < 3 and time.monotonic() < deadline:
            line = p.stdout.readline()
            if line.startswith("ready"):
                _, rank, pid = line.split()
                pids[int(rank)] = int(pid)
        assert len(pids) == 3, f"ranks did not start: {pids}"
        assert shm_files(fabric), "the fabric's files exist while the job runs"
        time.sleep(0.3)
        os.kill(pids[1], signal.SIGKILL)
        killed = time.monotonic()
        code = p.wait(timeout=10)
        took = time.monotonic() - killed
        err = p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert took < 2.0, f"the job took {took:.2f} s to stop"
    assert code == 128 + signal.SIGKILL, (code, err)
    assert "rank 1 was killed by signal 9" in err, err
    for k in (0, 2):
        assert f"rank {k} stopped because rank 1 was killed by signal 9" in err, err
    for k in (0, 2):
        with pytest.raises(ProcessLookupError):
            os.kill(pids[k], 0)
    assert shm_files(fabric) == []


def test_a_failing_rank_passes_its_exit_status_on(tmp_path: Path) -> None:
    prog = tmp_path / "fail.py"
    prog.write_text("import os, sys, time\nif os.environ['LINERATE_RANK'] == '2':\n    sys.exit(7)\ntime.sleep(30)\n")
    t = time.monotonic()
    r = subprocess.run([cli(), "collective", "launch", "-n", "3", sys.executable, str(prog)],
                       env=env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 7, r.stderr
    assert time.monotonic() - t < 10
    assert "rank 2 exited with status 7; stopping ranks [0, 1]" in r.stderr


def test_cleanup_removes_files_of_killed_jobs_and_keeps_those_in_use() -> None:
    fabric = f"t28-clean-{os.getpid()}"
    stale, held = f"/dev/shm/linerate-{fabric}-0-1", f"/dev/shm/linerate-{fabric}-bell-0"
    for f in (stale, held):
        with open(f, "wb") as fh:
            fh.write(b"\0" * 64)
        os.utime(f, (time.time() - 60, time.time() - 60))
    keep = open(held, "rb")  # a live process holds this one open
    try:
        r = subprocess.run([cli(), "collective", "cleanup", "--fabric", fabric], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        assert f"removed {stale}" in r.stdout
        assert shm_files(fabric) == [os.path.basename(held)]
    finally:
        keep.close()
        for f in (stale, held):
            if os.path.exists(f):
                os.remove(f)
