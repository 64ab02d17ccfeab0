"""Packaging: the wheel declares numpy, carries py.typed, the stubs, licence and readme; the
version comes from the crate; every class names its public module."""

import inspect
import os
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import linerate as lr

CRATE = Path(__file__).resolve().parents[1]
ROOT = CRATE.parents[1]
MODULES = {
    "linerate": lr,
    "linerate.middlebox": lr.middlebox,
    "linerate.spn": lr.spn,
    "linerate.rdma": lr.rdma,
    "linerate.collective": lr.collective,
}


def test_version_is_the_crate_version() -> None:
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())
    assert lr.__version__ == workspace["workspace"]["package"]["version"]


def test_every_class_names_its_public_module() -> None:
    for name, mod in MODULES.items():
        classes = [obj for _, obj in inspect.getmembers(mod, inspect.isclass)]
        assert classes, name
        for cls in classes:
            if cls is lr.rdma.RdmaNode:
                assert cls.__module__ == "linerate.rdma"
                continue
            assert cls.__module__ == name, (cls, cls.__module__)
            assert getattr(sys.modules[cls.__module__], cls.__name__) is cls


def test_the_wheel_has_metadata_stubs_and_numpy(tmp_path: Path) -> None:
    env = dict(os.environ, VIRTUAL_ENV=sys.prefix)
    maturin = Path(sys.executable).with_name("maturin")
    r = subprocess.run([str(maturin), "build", "--release", "-q", "-o", str(tmp_path)],
                       cwd=CRATE, env=env, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr
    (wheel,) = tmp_path.glob("linerate-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(z.read(meta_name).decode())
    for f in ["py.typed", "_linerate.pyi", "middlebox.pyi", "spn.pyi", "rdma.pyi", "collective.pyi"]:
        assert f"linerate/{f}" in names, f
    assert any(n.startswith("linerate/_linerate") and n.endswith(".so") for n in names)
    requires = meta.get_all("Requires-Dist") or []
    assert any(req.startswith("numpy") for req in requires), requires
    assert meta["Version"] == lr.__version__
    assert meta["License-Expression"] == "MIT OR Apache-2.0"
    assert "Host.on_tap" in meta.get_payload() and meta["Description-Content-Type"].startswith("text/markdown")


def test_numpy_is_pinned_for_development_and_ranged_for_users() -> None:
    pins = (ROOT / "requirements-dev.txt").read_text().split()
    assert any(p.startswith("numpy==") for p in pins) and any(p.startswith("mypy==") for p in pins)
    project = tomllib.loads((CRATE / "pyproject.toml").read_text())["project"]
    (numpy_req,) = [d for d in project["dependencies"] if d.startswith("numpy")]
    assert ">=" in numpy_req and "==" not in numpy_req
