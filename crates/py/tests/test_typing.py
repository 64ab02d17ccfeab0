"""mypy --strict accepts a typed program using linerate (the stubs are found and complete
enough), rejects one that misuses the API (the stubs are really used), and the program runs."""

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def mypy(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(path)],
                          cwd=HERE, capture_output=True, text=True, timeout=600)


def test_mypy_strict_passes_on_a_typed_program() -> None:
    r = mypy(HERE / "typed_program.py")
    assert r.returncode == 0, r.stdout + r.stderr
    run = subprocess.run([sys.executable, str(HERE / "typed_program.py")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


#: The package's pure-Python modules (the others are typed by their .pyi stubs).
PURE_PYTHON = ["asyncio.py", "spn_client.py", "scapy_bridge.py", "_mpi.py"]


def test_mypy_strict_passes_on_the_examples_and_every_test() -> None:
    """The Python examples, every test file (and the programs they start) and the package's
    pure-Python modules type-check strictly against the stubs."""
    root = HERE.parent.parent.parent
    examples = sorted(str(p) for p in (root / "examples").glob("*.py"))
    tests = sorted(str(p) for p in HERE.glob("*.py"))
    assert examples, "no Python examples found"
    assert len(tests) > 25 and str(HERE / "test_socket_like.py") in tests, tests
    paths = examples + tests + [str(HERE.parent / "python" / "linerate" / m) for m in PURE_PYTHON]
    # Silenced errors must name their code (`# type: ignore[import-untyped]`), never all of them.
    # (The patterns are split so that this file does not match itself.)
    bare, per_file = re.compile(r"type:\s*" + r"ignore(?!\[)"), "ignore_" + "errors"
    blanket = [f"{p}:{i}" for p in paths for i, line in enumerate(Path(p).read_text().splitlines(), 1)
               if bare.search(line) or per_file in line]
    assert blanket == [], blanket
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", *paths],
                       cwd=HERE, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_catches_misuse_through_the_stubs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import linerate as lr\n"
        "h: lr.Host = lr.Testbed().host('10.0.0.1/24')\n"
        "h.udp_bind('seven')\n"
        "n: str = h.tcp_listen(80).port\n"
        "lr.middlebox.Firewall('not a blacklist')\n"
    )
    r = mypy(bad)
    assert r.returncode == 1, r.stdout
    for line in (3, 4, 5):
        assert f"bad.py:{line}: error" in r.stdout, r.stdout


def test_stubs_match_the_runtime(tmp_path: Path) -> None:
    """mypy's stubtest: every public name, signature and class of the stubs is what the
    installed package really has (nothing missing, nothing made up)."""
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "linerate"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
