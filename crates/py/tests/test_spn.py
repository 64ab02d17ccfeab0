"""linerate.spn from Python: load, generate and evaluate SPNs on numpy batches (agreeing with
the committed SPFlow references), and serve one on a testbed host and query it over UDP."""

import numpy.typing as npt
import json
import math
import time
from pathlib import Path

import numpy as np
import pytest

import linerate as lr

DATA = Path(__file__).resolve().parents[2] / "spn" / "tests" / "data"


def reference(name: str) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    ref = json.loads((DATA / f"{name}.ref.json").read_text())
    x = np.array([[math.nan if v is None else v for v in row] for row in ref["inputs"]], dtype=np.float64)
    return x, np.array(ref["log_likelihood"])


def max_rel(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> float:
    return float(np.max(np.abs(a - b) / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1.0)))


@pytest.mark.parametrize("name", ["nips10", "mixed8", "digits"])
def test_agrees_with_spflow_references(name: str) -> None:
    m = lr.spn.Model.load(DATA / f"{name}.json")
    x, want = reference(name)
    assert np.isnan(x).any()
    got = m.log_likelihood(x)
    assert got.dtype == np.float64 and got.shape == want.shape
    assert max_rel(got, want) <= 1e-9


def test_uint8_with_mask_equals_float_with_nan() -> None:
    m = lr.spn.Model.load(DATA / "digits.json")
    x, want = reference("digits")
    mask = np.isnan(x)
    u8 = np.where(mask, 0, x).astype(np.uint8)
    got = m.log_likelihood(u8, mask=mask)
    assert max_rel(got, want) <= 1e-9
    assert np.array_equal(m.log_likelihood(u8, mask=mask, threads=2), got)
    assert np.allclose(m.likelihood(u8, mask=mask), np.exp(got), rtol=1e-12, atol=0)


def test_generate_and_round_trip(tmp_path: Path) -> None:
    m = lr.spn.Model.generate(vars=12, seed=3)
    assert m.num_vars == 12 and m.stats()["nodes"] > 3000
    p = tmp_path / "m.json"
    m.save(p)
    again = lr.spn.Model.load(p)
    x = np.random.default_rng(1).integers(0, 8, size=(100, 12), dtype=np.uint8)
    assert np.array_equal(m.log_likelihood(x), again.log_likelihood(x))
    assert np.array_equal(lr.spn.Model.parse(m.to_json()).log_likelihood(x), m.log_likelihood(x))
    # Every input missing: the distribution integrates to one.
    assert np.allclose(m.likelihood(np.full((3, 12), np.nan)), 1.0, rtol=1e-12)


def test_generate_learnspn_shape() -> None:
    # The deep LearnSPN-like shape `linerate spn generate --shape learnspn` makes: the same
    # model seed for seed (the benchmark's 7,224, 8,105 and 10,506 nodes), most nodes leaves,
    # and unlike NIPS a size that grows slowly past 10 inputs.
    for vars, nodes in [(10, 7224), (40, 8105), (80, 10506)]:
        m = lr.spn.Model.generate(vars=vars, seed=1, shape="learnspn")
        st = m.stats()
        assert m.num_vars == vars and st["nodes"] == nodes and st["depth"] >= 12, (vars, st)
        assert st["leaves"] > 0.6 * nodes
        if vars > 10:
            assert st["nodes"] < lr.spn.Model.generate(vars=vars, seed=1).stats()["nodes"] / 2
        again = lr.spn.Model.generate(vars=vars, seed=1, shape="learnspn")
        x = np.random.default_rng(vars).integers(0, 8, size=(300, vars), dtype=np.uint8)
        ll = m.log_likelihood(x)
        assert np.all(np.isfinite(ll)) and np.all(ll < 0)
        assert np.array_equal(again.log_likelihood(x), ll)
        assert np.array_equal(m.log_likelihood(x, threads=2), ll)
    # Every input missing: it still integrates to one.
    assert np.allclose(m.likelihood(np.full((3, 80), np.nan)), 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match="shape"):
        lr.spn.Model.generate(vars=4, shape="deep")


def test_errors_are_clear() -> None:
    with pytest.raises(ValueError, match=r"node 1: weights sum to 1.5"):
        lr.spn.Model.parse('{"format":"linerate-spn","version":1,"num_vars":1,"nodes":['
                           '{"type":"bernoulli","var":0,"p":0.5},{"type":"sum","children":[0],"weights":[1.5]}]}')
    with pytest.raises(OSError):
        lr.spn.Model.load("/nonexistent/model.json")
    m = lr.spn.Model.generate(vars=4, nodes=40)
    with pytest.raises(ValueError, match=r"shape \(n, 4\)"):
        m.log_likelihood(np.zeros((2, 5), dtype=np.uint8))
    with pytest.raises(ValueError, match="mask"):
        m.log_likelihood(np.zeros((2, 4)), mask=np.zeros((2, 4), dtype=bool))


def test_service_on_a_testbed_answers_in_order() -> None:
    m = lr.spn.Model.load(DATA / "nips10.json")
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    svc = lr.spn.Service(b, m, port=5005)
    rng = np.random.default_rng(7)
    x = rng.integers(0, 10, size=(1000, 10), dtype=np.uint8)
    mask = rng.random((1000, 10)) < 0.1
    got = svc.query(a, x, mask=mask, vectors_per_request=37)
    assert np.array_equal(got, m.log_likelihood(x, mask=mask))
    probs = svc.query(a, x[:5], log=False)
    assert np.allclose(probs, m.likelihood(x[:5]), rtol=1e-15)
    c = svc.counters()
    assert c["requests"] == math.ceil(1000 / 37) + 1 and c["responses"] == c["requests"] and c["error_records"] == 0


def test_service_with_workers_and_malformed_requests() -> None:
    m = lr.spn.Model.generate(vars=6, nodes=200)
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    svc = lr.spn.Service(b, m, port=6000, workers=2)
    sock = a.udp_bind()
    good = b"SPNQ" + bytes([1, 1]) + (1).to_bytes(2, "little") + (6).to_bytes(2, "little") + bytes(2) + (42).to_bytes(4, "little") + bytes(6)
    wrong_len = good[:8] + (5).to_bytes(2, "little") + good[10:]
    for rec in [b"junk", b"XXXX" + bytes(20), wrong_len, good]:
        assert sock.send_to(rec, ("10.0.0.2", 6000))
    answers = []
    # Worker threads run on real time: bound the wait by the wall clock, not by steps.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        net.step()
        svc.serve()
        while (r := sock.recv_from()) is not None:
            answers.append(r[0])
        if len(answers) == 2:
            break
    assert len(answers) == 2
    assert answers[0][:4] == b"SPNR" and answers[0][5] & 0x80 and int.from_bytes(answers[0][8:10], "little") == 3
    assert answers[1][5] == 1 and int.from_bytes(answers[1][12:16], "little") == 42
    ll = np.frombuffer(answers[1][16:24], dtype="<f8")
    assert ll[0] == m.log_likelihood(np.zeros((1, 6), dtype=np.uint8))[0]
    c = svc.counters()
    assert (c["dropped_short"], c["dropped_bad_magic"], c["error_records"], c["requests"]) == (1, 1, 1, 1)
