"""No Rust panic reaches Python: every public function, constructor and method of linerate is
called with bad inputs (one bad argument at a time, the others plausible), and whatever it
raises must be an ordinary Python exception (never pyo3's PanicException)."""

from typing import Any, Callable, Iterator
import pytest
import inspect
import os

import numpy as np

import linerate as lr
import linerate.middlebox as mb
import linerate.rdma as rd
import linerate.spn as spn
from pathlib import Path

BAD = [None, -1, 2**70, float("nan"), float("inf"), -1e300, "", "\x00bad", "10.0.0.300/40",
       b"", b"\xff\xff\xff", bytearray(), [], [b""], [-1], (1,), ("x", -1), {"a": 1}, object()]

RULE = 'alert tcp any any -> any 7597 (msg:"t"; content:"qazwsx"; sid:9;)'
SKIP = {"close", "abort", "shutdown", "finalize"}


def good_values(tmp_path: Path) -> dict[str, Any]:
    net = lr.Testbed()
    host = net.host("10.0.0.1/24")
    net.host("10.0.0.2/24")
    model = spn.Model.generate(vars=4, seed=1)
    return {
        "cidr": "10.0.0.9/24", "addr": ("10.0.0.2", 9), "dst": "10.0.0.2", "port": 9, "data": b"xyz",
        "frame": bytes(60), "payload": b"x", "ethertype": 0x88B5, "ms": 0.1, "timeout_ms": 10.0,
        "timeout": 0.01, "count": 1, "seeds": [bytes(60)], "lengths": [3], "units": ["forward"], "u": 0,
        "program": "forward", "blacklist": mb.Blacklist.parse("10.0.0.0/8"), "rules": mb.IdsRules.parse(RULE),
        "host": host, "client": host, "model": model, "x": np.zeros((2, 4), dtype=np.uint8), "key": 1,
        "offset": 0, "out": np.zeros(4, dtype=np.uint8), "text": "10.0.0.0/8", "watch": 0,
        "callback": lambda *a: None, "on": True, "max": 16, "buffer": bytearray(8), "nbytes": 0, "n": 1,
        "max_steps": 10, "ns": 1, "ip": "10.0.0.1", "path": str(tmp_path / "missing.txt"),
        "data_arr": np.ones((4, 2), dtype=np.float32), "init": np.ones((2, 2), dtype=np.float32),
    }


def instances(tmp_path: Path) -> list[object]:
    """A fresh object of each public class that can be made without other processes."""
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    lst = b.tcp_listen(5001)
    conn = a.tcp_connect(("10.0.0.2", 5001))
    net.run(ms=1)
    model = spn.Model.generate(vars=4, seed=1)
    return [
        net, a, a.udp_bind(), a.raw_bind(0x88B5), lst, conn, a.rdma(),
        mb.Runtime(units=["forward"]), mb.Blacklist.parse("10.0.0.0/8"),
        mb.Firewall(mb.Blacklist.parse("10.0.0.0/8")), mb.IdsRules.parse(RULE),
        model, spn.Service(b, model, port=5005),
    ]


def calls(fn: Callable[..., object], good: dict[str, Any]) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    """Argument lists for `fn`: each parameter bad in turn, the others good or default."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"]
    except (TypeError, ValueError):
        for n in range(4):
            for bad in BAD:
                yield [bad] * n, {}
        return
    for i, p in enumerate(params):
        for bad in BAD:
            if p.default is not p.empty and p.default is bad:
                continue
            kwargs: dict[str, Any] = {}
            for j, q in enumerate(params):
                if j == i:
                    kwargs[q.name] = bad
                elif q.name in good:
                    kwargs[q.name] = good[q.name]
                elif q.default is not q.empty:
                    kwargs[q.name] = q.default
                else:
                    kwargs[q.name] = bad
            yield [], kwargs


def check(fn: Callable[..., object], label: str, good: dict[str, Any], panics: list[str]) -> None:
    for args, kwargs in calls(fn, good):
        try:
            fn(*args, **kwargs)
        except Exception as e:
            if type(e).__name__ == "PanicException":
                panics.append(f"{label}({kwargs or args}): {e}")
        except BaseException as e:  # PanicException derives from BaseException
            panics.append(f"{label}({kwargs or args}): {type(e).__name__}: {e}")


def test_bad_inputs_never_panic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # any file a path argument creates lands here
    for var in ("LINERATE_RANK", "LINERATE_SIZE", "LINERATE_FABRIC"):
        monkeypatch.delenv(var, raising=False)
    good = good_values(tmp_path)
    panics: list[str] = []
    checked = 0
    functions: list[Callable[..., object]] = [lr.counter_names, lr.rx_accounted, lr.collective.init, lr.collective.covertype_like]
    kmeans_good = dict(good, data=good["data_arr"])
    check(lr.collective.kmeans, "collective.kmeans", kmeans_good, panics)
    for fn in functions:
        check(fn, getattr(fn, "__name__", str(fn)), good, panics)
        checked += 1
    constructors: list[Callable[..., object]] = [lr.Testbed, mb.Runtime, mb.Firewall, mb.Ids, spn.Service]
    statics: list[Callable[..., object]] = [lr.Host.on_tap, lr.Host.on_shm, mb.Blacklist.load, mb.Blacklist.parse, mb.IdsRules.load,
               mb.IdsRules.parse, spn.Model.load, spn.Model.parse, spn.Model.generate, rd.ShmNode.create,
               rd.ShmNode.open]
    for fn in constructors + statics:
        check(fn, getattr(fn, "__qualname__", str(fn)), good, panics)
        checked += 1
    names = {type(o).__name__: [n for n in dir(o) if not n.startswith("_") and n not in SKIP]
             for o in instances(tmp_path)}
    for cls_name, methods in names.items():
        for m in methods:
            # A fresh set of objects per method, so one call's effects do not hide another's.
            obj = next(o for o in instances(tmp_path) if type(o).__name__ == cls_name)
            attr = getattr(type(obj), m)
            if not callable(attr) or isinstance(attr, property):
                continue
            check(getattr(obj, m), f"{cls_name}.{m}", good, panics)
            checked += 1
    assert checked > 80, checked
    assert panics == [], "\n".join(panics[:20])
    assert not [f for f in os.listdir(tmp_path) if f.startswith("linerate-")]
