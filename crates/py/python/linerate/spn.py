"""Sum-product networks: models, evaluation, and the SPN service on a testbed host."""

from ._linerate import spn as _native

Model = _native.Model
Service = _native.Service

__all__ = ["Model", "Service"]
