"""What the hostile suites share: run the cases one after another, each followed by a check
that the host still serves and, with the linerate binary and the host's process id, that its
receive accounting identity (rx_frames = rx_delivered + sum of rx_drop_*) holds exactly, read
from `linerate stats --json`. Prints one line per case ("ok NAME" or "FAILED NAME: why") and
exits 1 if any failed."""

import json
import subprocess
import sys
import time


def host_counters(linerate, pid):
    """The host's counters as `linerate stats --json` reads them (published every 0.25 s)."""
    out = subprocess.run([linerate, "stats", "--json", "--all"], capture_output=True, text=True, timeout=10)
    if out.returncode != 0:
        raise AssertionError(f"linerate stats failed: {out.stderr.strip()}")
    rows = [r for t in json.loads(out.stdout)["tables"] for r in t["rows"] if int(r["pid"]) == pid]
    if not rows:
        raise AssertionError(f"linerate stats lists no instance of pid {pid}")
    return {r["counter"]: int(r["value"]) for r in rows}


def accounting_holds(linerate, pid, after):
    """Check the receive accounting identity exactly, from a snapshot published after `after`
    frames were counted (so that it includes the case just run)."""
    deadline = time.monotonic() + 5
    while True:
        c = host_counters(linerate, pid)
        if c.get("rx_frames", 0) > after or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    drops = sum(v for k, v in c.items() if k.startswith("rx_drop_"))
    off = c.get("rx_frames", 0) - c.get("rx_delivered", 0) - drops
    if off != 0 or c.get("rx_unaccounted", 0) != 0:
        raise AssertionError(
            f"receive accounting off by {off}: rx_frames {c.get('rx_frames')} = rx_delivered "
            f"{c.get('rx_delivered')} + rx_drop_* {drops} does not hold"
        )
    return c["rx_frames"]


def run(cases, serves, linerate, pid, what="hostile cases"):
    """Run every case, then `serves()` and (with `linerate`) the accounting check; exit."""
    failed = 0
    frames = 0
    for fn in cases:
        try:
            fn()
            time.sleep(0.05)
            serves()
            if linerate:
                frames = accounting_holds(linerate, pid, frames)
            print("ok", fn.__name__, flush=True)
        except Exception as e:  # noqa: BLE001  (every failure is reported by name)
            failed += 1
            print("FAILED", fn.__name__ + ":", repr(e), flush=True)
    if linerate and not failed:
        print(f"receive accounting held after each of {len(cases)} cases", flush=True)
    print(f"{len(cases) - failed} of {len(cases)} {what} passed", flush=True)
    sys.exit(1 if failed else 0)
