"""Collectives (allreduce, bcast, ...) between processes over shared memory, and k-means."""

# numpy is imported here so that a missing numpy is a clear ImportError, not a failure
# inside the native module.
import numpy as _numpy  # noqa: F401

from ._linerate import collective as _native

Communicator = _native.Communicator
Request = _native.Request
init = _native.init
kmeans = _native.kmeans
covertype_like = _native.covertype_like

__all__ = ["Communicator", "Request", "init", "kmeans", "covertype_like"]
