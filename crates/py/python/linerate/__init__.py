"""linerate from Python: linerate hosts on an in-process testbed (virtual time), on a TAP
device in a network namespace, or on a shared-memory link, with sockets shaped like Python's
(on a live host: blocking by default, polled by a thread of the host, with a ``fileno()`` for
``selectors`` and asyncio; see ``linerate.asyncio``).

>>> import linerate as lr
>>> net = lr.Testbed()
>>> a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
>>> len(a.ping("10.0.0.2", count=3))
3
"""

from ._linerate import Host, RawSocket, TcpConn, TcpListener, Testbed, UdpSocket, __version__, counter_names
from . import asyncio, collective, middlebox, rdma, spn
from . import spn_client  # pure Python: the SPN service client (works without the native module too)

__all__ = [
    "__version__", "Testbed", "Host", "UdpSocket", "RawSocket", "TcpListener", "TcpConn", "counter_names", "rx_accounted", "asyncio", "middlebox", "spn", "collective", "rdma",
]


def rx_accounted(counters: "dict[str, int]") -> bool:
    """True if every received frame is either delivered or counted under one drop reason:
    ``rx_frames == rx_delivered + sum(rx_drop_*)`` (transmit-side ``tx_drop_*`` and the
    per-datagram ``ipv4_reasm_*`` outcomes are outside the sum)."""
    rx_drops = sum(v for name, v in counters.items() if name.startswith("rx_drop_"))
    return counters["rx_delivered"] + rx_drops == counters["rx_frames"]
