"""Collectives (allreduce, bcast, ...) between processes over shared memory or, for ranks on
different machines, over a real interface (``init(link="af_xdp:veth0", ip=..., root=...)`` or
``LINERATE_LINK`` / ``LINERATE_IP`` / ``LINERATE_ROOT_ADDR``), and k-means.

``from linerate.collective import MPI`` gives mpi4py's API (``linerate._mpi``): programs
written for mpi4py run after changing their import line alone. It is imported on first
access, so the pythonic API above never joins an MPI world by itself."""

# numpy is imported here so that a missing numpy is a clear ImportError, not a failure
# inside the native module.
import numpy as _numpy  # noqa: F401

from ._linerate import collective as _native

Communicator = _native.Communicator
Request = _native.Request
init = _native.init
kmeans = _native.kmeans
covertype_like = _native.covertype_like

__all__ = ["Communicator", "Request", "init", "kmeans", "covertype_like", "MPI"]


def __getattr__(name: str) -> object:
    # `MPI` on first access (PEP 562): importing linerate.collective joins no world.
    if name == "MPI":
        from . import _mpi

        return _mpi
    raise AttributeError(f"module 'linerate.collective' has no attribute {name!r}")
