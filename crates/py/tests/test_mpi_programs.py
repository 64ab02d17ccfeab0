"""Five programs written for mpi4py (mpi_programs/) run unchanged but for their import line
on linerate.collective.MPI, under mpirun and under `linerate collective launch`, and print
what the same program prints under real mpi4py over OpenMPI."""

from typing import Callable, NoReturn
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PROGRAMS = sorted(p.stem for p in (HERE / "mpi_programs").glob("*.py"))
REPO = HERE.parents[2]
IMPORT = "from mpi4py import MPI"
#: The `reference` fixture: a program's sorted output lines under mpi4py, by name and rank count.
Reference = Callable[[str, int], list[str]]
TIMEOUT = 240


def not_run(reason: str) -> NoReturn:
    pytest.fail(f"NOT RUN: {reason}", pytrace=False)


def mpirun() -> list[str]:
    exe = shutil.which("mpirun")
    if exe is None:
        not_run("mpirun is not installed (make setup-system installs openmpi-bin)")
    return [exe, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "--tag-output"]


def linerate_cli() -> str:
    for profile in ("release", "ci", "debug"):
        exe = REPO / "target" / profile / "linerate"
        if exe.exists():
            return str(exe)
    not_run("no linerate binary in target/ (make build-release builds it)")


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("LINERATE_", "OMPI_", "PMI_", "PMIX_", "SLURM_")):
            del env[k]
    return env


def linerate_version(name: str, tmp_path: Path) -> Path:
    """The program with its import line changed to linerate's, and nothing else."""
    src = (HERE / "mpi_programs" / f"{name}.py").read_text()
    assert src.count(IMPORT) == 1, f"{name}.py imports MPI once, as mpi4py users write it"
    out = tmp_path / f"{name}_linerate.py"
    out.write_text(src.replace(IMPORT, "from linerate.collective import MPI"))
    return out


TAG = re.compile(r"\[\d+,\d+\]<stdout>:")


def run(cmd: list[str]) -> list[str]:
    r = subprocess.run(cmd, env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, f"{cmd}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    out = r.stdout
    if "--tag-output" in cmd:
        # OpenMPI forwards a rank's text and its newline as they were written (Python under
        # mpirun writes them apart), so a line may be cut by another rank's: every rank line
        # starts with a tag, which splits them again.
        out = TAG.sub("\n", out)
    # Ranks print concurrently: compare the lines, in order of their text.
    return sorted(line for line in out.splitlines() if line)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """Each program's output under real mpi4py, per rank count."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        not_run("mpi4py is not installed (requirements-dev.txt pins it)")
    cache: dict[tuple[str, int], list[str]] = {}

    def get(name: str, n: int) -> list[str]:
        if (name, n) not in cache:
            cache[(name, n)] = run([*mpirun(), "-np", str(n), sys.executable, str(HERE / "mpi_programs" / f"{name}.py")])
        return cache[(name, n)]

    return get


def test_there_are_five_programs() -> None:
    assert PROGRAMS == ["cpi", "exchange", "hello", "jacobi", "ring"]


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("name", PROGRAMS)
def test_program_under_mpirun_prints_what_mpi4py_prints(name: str, n: int, reference: Reference, tmp_path: Path) -> None:
    want = reference(name, n)
    got = run([*mpirun(), "-np", str(n), sys.executable, str(linerate_version(name, tmp_path))])
    assert got == want
    assert len(want) >= 1


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("name", PROGRAMS)
def test_program_under_collective_launch_prints_what_mpi4py_prints(name: str, n: int, reference: Reference, tmp_path: Path) -> None:
    want = reference(name, n)
    got = run([linerate_cli(), "collective", "launch", "-n", str(n), sys.executable, str(linerate_version(name, tmp_path))])
    assert got == want


def test_a_program_alone_is_a_world_of_one(tmp_path: Path) -> None:
    """As under mpi4py, a program started without a launcher is rank 0 of 1."""
    r = subprocess.run([sys.executable, str(linerate_version("hello", tmp_path))], env=clean_env(),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert "Hello from rank 0 of 1" in r.stdout
