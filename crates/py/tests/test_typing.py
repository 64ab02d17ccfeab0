"""mypy --strict accepts a typed program using linerate (the stubs are found and complete
enough), rejects one that misuses the API (the stubs are really used), and the program runs."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def mypy(path):
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(path)],
                          cwd=HERE, capture_output=True, text=True, timeout=600)


def test_mypy_strict_passes_on_a_typed_program():
    r = mypy(HERE / "typed_program.py")
    assert r.returncode == 0, r.stdout + r.stderr
    run = subprocess.run([sys.executable, str(HERE / "typed_program.py")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_mypy_strict_passes_on_the_examples_and_the_socket_tests():
    """The Python examples, linerate.asyncio and the socket-like tests type-check strictly."""
    root = HERE.parent.parent.parent
    paths = sorted(str(p) for p in (root / "examples").glob("*.py"))
    assert paths, "no Python examples found"
    paths += [str(HERE / "test_socket_like.py"), str(HERE.parent / "python" / "linerate" / "asyncio.py")]
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", *paths],
                       cwd=HERE, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_catches_misuse_through_the_stubs(tmp_path):
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


def test_stubs_match_the_runtime(tmp_path):
    """mypy's stubtest: every public name, signature and class of the stubs is what the
    installed package really has (nothing missing, nothing made up)."""
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "linerate"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
