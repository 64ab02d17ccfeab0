"""What several tests share: finding the `linerate` command they run beside the Python API."""

from typing import Optional
import os

#: The repository's root (this file is crates/py/tests/helpers.py).
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def linerate_bin() -> Optional[str]:
    """The `linerate` executable: $LINERATE_BIN, else the release or ci build of this
    checkout; None if there is none (the caller fails with `NOT RUN: ...`)."""
    for p in (os.environ.get("LINERATE_BIN"), f"{ROOT}/target/release/linerate", f"{ROOT}/target/ci/linerate"):
        if p and os.access(p, os.X_OK):
            return p
    return None
