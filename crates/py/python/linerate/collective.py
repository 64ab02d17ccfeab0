"""Collectives (allreduce, bcast, ...) between processes over shared memory, and k-means."""

from ._linerate import collective as _native

Communicator = _native.Communicator
Request = _native.Request
init = _native.init
kmeans = _native.kmeans
covertype_like = _native.covertype_like

__all__ = ["Communicator", "Request", "init", "kmeans", "covertype_like"]
