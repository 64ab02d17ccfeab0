"""The pure-Python SPN client's records (linerate/spn_client.py) against the Rust service on an
in-process testbed: requests it encodes are answered, answers it decodes equal the model's own
evaluation, and it builds error-free requests only from 8-bit values. (Its socket exchanges
with `linerate spn serve` over a TAP and AF_PACKET are tested in crates/cli/tests/spn_query.rs.)"""

from types import ModuleType
import importlib.util
import math
import time
from pathlib import Path

import numpy as np
import pytest

import linerate as lr

CLIENT = Path(__file__).resolve().parents[1] / "python" / "linerate" / "spn_client.py"


def client_from_file() -> ModuleType:
    """The module loaded from its file, as a machine without the native package would."""
    spec = importlib.util.spec_from_file_location("spn_client_standalone", CLIENT)
    assert spec is not None and spec.loader is not None, CLIENT
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def exchange(net: lr.Testbed, svc: lr.spn.Service, sock: lr.UdpSocket, records: list[bytes], want: int) -> list[bytes]:
    """Send `records` to the service and collect `want` answers (bounded by the wall clock)."""
    for rec in records:
        assert sock.send_to(rec, ("10.0.0.2", 5005))
    answers: list[bytes] = []
    deadline = time.monotonic() + 10
    while len(answers) < want and time.monotonic() < deadline:
        net.step()
        svc.serve()
        while (r := sock.recv_from()) is not None:
            answers.append(r[0])
    assert len(answers) == want, f"{len(answers)} of {want} answers"
    return answers


def test_package_exports_the_same_client() -> None:
    c = client_from_file()
    assert lr.spn_client.encode_request(3, [[1, None, 3]]) == c.encode_request(3, [[1, None, 3]])


def test_records_round_trip_through_the_rust_service() -> None:
    c = client_from_file()
    m = lr.spn.Model.generate(vars=9, nodes=300)
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    svc = lr.spn.Service(b, m, port=5005)
    sock = a.udp_bind()
    rng = np.random.default_rng(11)
    x = rng.integers(0, 8, size=(300, 9), dtype=np.uint8)
    mask = rng.random((300, 9)) < 0.15
    rows = [[None if mask[i, j] else int(x[i, j]) for j in range(9)] for i in range(300)]
    per = c._udp_per_request(rows, c.MAX_DATAGRAM)
    chunks = c._chunks(rows, per)
    answers = exchange(net, svc, sock, [c.encode_request(i, ch) for i, ch in enumerate(chunks)], len(chunks))
    got = {}
    for rec in answers:
        rid, status, values = c.decode_response(rec)
        assert status == 0
        got[rid] = values
    flat = [v for i in range(len(chunks)) for v in got[i]]
    assert flat == list(m.log_likelihood(x, mask=mask))
    # A numpy array with NaN for missing values encodes the same request.
    xf = np.where(mask, np.nan, x.astype(np.float64))
    assert c.encode_request(0, c._rows(xf[:per])) == c.encode_request(0, chunks[0])
    # Likelihoods instead of log-likelihoods.
    (rec,) = exchange(net, svc, sock, [c.encode_request(99, rows[:4], log=False)], 1)
    rid, status, probs = c.decode_response(rec)
    assert (rid, status) == (99, 0)
    assert np.allclose(probs, [math.exp(v) for v in flat[:4]], rtol=1e-12)


def test_error_records_and_bad_input() -> None:
    c = client_from_file()
    m = lr.spn.Model.generate(vars=6, nodes=200)
    net = lr.Testbed()
    a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
    svc = lr.spn.Service(b, m, port=5005)
    sock = a.udp_bind()
    (rec,) = exchange(net, svc, sock, [c.encode_request(5, [[1] * 7])], 1)
    with pytest.raises(c.SpnError, match=r"error 3 \(vector length differs"):
        c._check(rec, 5, 1)
    with pytest.raises(ValueError, match="not an 8-bit value"):
        c.encode_request(0, [[1, 256, 3]])
    with pytest.raises(ValueError, match="vector 1 has 2 values"):
        c._rows([[1, 2, 3], [1, 2]])
    with pytest.raises(ValueError, match="not a response record"):
        c.decode_response(b"SPNQ" + bytes(12))
    assert svc.counters()["error_records"] == 1
