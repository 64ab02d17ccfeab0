"""The middlebox runtime stepped from Python, with the firewall and the IDS as unit programs."""

from ._linerate import middlebox as _native

Runtime = _native.Runtime
Ctx = _native.Ctx
Packet = _native.Packet
Blacklist = _native.Blacklist
Firewall = _native.Firewall
IdsRules = _native.IdsRules
Ids = _native.Ids

__all__ = ["Runtime", "Ctx", "Packet", "Blacklist", "Firewall", "IdsRules", "Ids"]
