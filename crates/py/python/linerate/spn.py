"""Sum-product networks: models, evaluation, and the SPN service on a testbed host."""

# numpy is imported here so that a missing numpy is a clear ImportError, not a failure
# inside the native module.
import numpy as _numpy  # noqa: F401

from ._linerate import spn as _native

Model = _native.Model
Service = _native.Service

__all__ = ["Model", "Service"]
