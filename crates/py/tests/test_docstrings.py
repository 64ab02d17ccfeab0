"""Every public module, class, function, method and property of linerate has a docstring (what
`help()` and `inspect` show)."""

from typing import Iterator
import inspect

import linerate as lr
from linerate import scapy_bridge

MODULES = [lr, lr.middlebox, lr.spn, lr.rdma, lr.collective, scapy_bridge]


def public_items() -> Iterator[tuple[str, object]]:
    seen: set[int] = set()
    for mod in MODULES:
        yield mod.__name__, mod
        for name in getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]:
            obj = getattr(mod, name)
            if inspect.ismodule(obj) or getattr(obj, "__module__", "").split(".")[0] != "linerate":
                continue
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            yield f"{mod.__name__}.{name}", obj
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if not attr.startswith("_"):
                        yield f"{mod.__name__}.{name}.{attr}", member


def test_every_public_item_has_a_docstring() -> None:
    items = list(public_items())
    assert len(items) > 150, len(items)
    missing = [name for name, obj in items if not (getattr(obj, "__doc__", None) or "").strip()]
    assert missing == []
