"""What several tests share: finding the `linerate` command they run beside the Python API,
and closing a live host whose namespace must be gone afterwards."""

from typing import Iterator, Optional
import os
import subprocess

import linerate as lr

#: The repository's root (this file is crates/py/tests/helpers.py).
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def linerate_bin() -> Optional[str]:
    """The `linerate` executable: $LINERATE_BIN, else the release or ci build of this
    checkout; None if there is none (the caller fails with `NOT RUN: ...`)."""
    for p in (os.environ.get("LINERATE_BIN"), f"{ROOT}/target/release/linerate", f"{ROOT}/target/ci/linerate"):
        if p and os.access(p, os.X_OK):
            return p
    return None


def closing(h: lr.Host) -> Iterator[lr.Host]:
    """Yield `h` (a pytest fixture's body), then close it and check its namespace is gone."""
    ns = h.netns
    try:
        yield h
    finally:
        h.close()
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
        assert ns is None or ns not in listed, f"namespace {ns} left behind"
