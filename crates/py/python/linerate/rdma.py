"""Reliable connectionless RDMA writes: nodes of testbed hosts (``Host.rdma()``) and nodes on
live links, each on its own polling thread (``Node.create``/``Node.open`` on shared memory,
``Node.on_af_packet``, ``Node.on_tap``; ``ShmNode`` is the same class).

Every setting of the Rust ``rdma::RdmaConfig`` is a key of the ``config`` dict the
constructors take, under the field's name (``SETTINGS`` lists them, ``default_config()``
gives the defaults, ``node.config()`` reads them back). ``register(array)`` registers a
writable C-contiguous numpy array in place: remote writes land in the array itself; the node
holds the array until ``deregister(key)`` gives it back.
"""

from ._linerate import rdma as _native

RdmaNode = _native.RdmaNode
ShmNode = _native.ShmNode
Node = _native.ShmNode
default_config = _native.default_config
SETTINGS = list(_native.SETTINGS)

__all__ = ["RdmaNode", "ShmNode", "Node", "default_config", "SETTINGS"]
