"""The repository's Python example (examples/tcp_upper.py) runs to its expected transcript."""

import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[3] / "examples" / "tcp_upper.py"


def test_tcp_upper_example_runs() -> None:
    out = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("HELLO\nLINERATE SPEAKS TCP\nBYE\n"), out.stdout
    assert "ping 10.0.0.2: 3 replies" in out.stdout, out.stdout
