"""Reliable connectionless RDMA writes: nodes of testbed hosts and nodes on shared memory."""

from ._linerate import rdma as _native

RdmaNode = _native.RdmaNode
ShmNode = _native.ShmNode

__all__ = ["RdmaNode", "ShmNode"]
