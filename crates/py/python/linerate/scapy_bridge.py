"""Test-bench bridge to scapy (as Rosebud's Python framework does): inject scapy packets into
a linerate host and get back what the host sends, as scapy packets.

The host must be a bench host: ``net.host("10.0.0.2/24", bench=True)``.
"""

import errno
from typing import Any, List

from scapy.layers.l2 import Ether

from ._linerate import Host, Testbed


def inject(host: Host, pkt: Any) -> None:
    """Put a scapy packet on the wire towards a bench host (it arrives at the next step)."""
    if not host.send_frame(bytes(pkt)):
        raise BlockingIOError(errno.EAGAIN, "the bench link is full")


def collect(host: Host) -> List[Any]:
    """Everything the host has sent since the last call, as scapy Ether packets."""
    return [Ether(f) for f in host.collect()]


def exchange(net: Testbed, host: Host, pkt: Any, ms: float = 1.0) -> List[Any]:
    """Inject ``pkt``, run the testbed for ``ms`` milliseconds, return what the host sent."""
    inject(host, pkt)
    net.run(ms=ms)
    return collect(host)
