"""A pure-Python client of linerate's SPN inference service (``linerate spn serve``).

It needs only the standard library (``socket``, ``struct``); numpy arrays are accepted as
input when numpy is installed, and the file runs on its own (no native ``linerate`` package),
so it can be copied to any machine that reaches the service::

    >>> from linerate import spn_client                                   # doctest: +SKIP
    >>> spn_client.query(("10.77.0.2", 5005), [[1, 2, 3], [4, None, 6]])  # doctest: +SKIP
    [-7.01..., -4.93...]

or, as a command: ``python3 spn_client.py --server 10.77.0.2:5005 [--tcp] --input x.csv``.

The records (little-endian; the service's own documentation is
``apps::spn_service::record`` in the Rust sources):

Request: a 16-byte header, then ``count`` vectors of ``vector_len`` bytes (one 8-bit value
per input), then, if flag bit 1 is set, ``count`` missing-masks of ``ceil(vector_len / 8)``
bytes (bit ``v % 8`` of byte ``v // 8`` set: input ``v`` is missing, marginalised out)::

    offset 0  magic b"SPNQ"    offset 4  version (1)       offset 5  flags
    offset 6  count (u16)      offset 8  vector_len (u16)  offset 10 reserved (u16, 0)
    offset 12 request id (u32, echoed)
    flags: bit 0 = answer log-likelihoods (else likelihoods), bit 1 = masks follow

Response: magic b"SPNR", version, flags (bit 0 echoed, bit 7 = error), ``count`` (u16 at 6),
``status`` (u16 at 8; 0 = ok), reserved, the request id (u32 at 12); then ``count`` f64
values, one per vector, in order (none for an error). Over UDP each request is one datagram
(its answer must fit one too: at most 182 vectors at the service's default MTU); over TCP
the records go back to back on one connection and the answers come back in order.
"""

from __future__ import annotations

import argparse
import json
import math
import socket
import struct
import sys
import time
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

#: One input vector: 8-bit values, None or NaN for a missing one.
Row = List[Any]
#: A service address: (host, port), or (host, port, flowinfo, scope_id) for IPv6 as in ``socket``.
Addr = Union[Tuple[str, int], Tuple[str, int, int, int]]

REQUEST_MAGIC = b"SPNQ"
RESPONSE_MAGIC = b"SPNR"
VERSION = 1
HEADER = struct.Struct("<4sBBHHHI")
FLAG_LOG = 1
FLAG_MASK = 2
FLAG_ERROR = 0x80
#: Largest UDP payload (an Ethernet MTU of 1500 less the IPv4 and UDP headers).
MAX_DATAGRAM = 1472
#: The same over IPv6, whose header is 20 bytes longer (so no request needs fragments).
MAX_DATAGRAM6 = MAX_DATAGRAM - 20
#: Vectors per request over TCP.
TCP_VECTORS = 1024
#: UDP requests outstanding at once.
UDP_WINDOW = 16

#: What the service's error status codes mean.
STATUS = {
    1: "unsupported record version",
    2: "unknown flag bits",
    3: "vector length differs from the model's inputs",
    4: "no vectors",
    5: "too many vectors for one response",
    6: "record length does not match its header",
    7: "internal evaluation error",
}


class SpnError(Exception):
    """The service answered with an error record, or could not be reached."""


def _rows(vectors: Any) -> list[Row]:
    """The vectors as lists of values (numpy arrays included); a single vector is not allowed."""
    if hasattr(vectors, "tolist"):
        vectors = vectors.tolist()
    rows = [list(r.tolist() if hasattr(r, "tolist") else r) for r in vectors]
    if not rows:
        raise ValueError("no input vectors")
    width = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != width:
            raise ValueError(f"vector {i} has {len(r)} values, vector 0 has {width}")
    return rows


def _is_missing(v: object) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def encode_request(req_id: int, rows: Sequence[Row], log: bool = True) -> bytes:
    """One request record for ``rows`` (each value 0..255, or None / NaN for missing)."""
    count, vlen = len(rows), len(rows[0]) if rows else 0
    if not 1 <= count <= 0xFFFF or not 1 <= vlen <= 0xFFFF:
        raise ValueError(f"{count} vectors of {vlen} values (1..65535 of each)")
    masked = any(_is_missing(v) for r in rows for v in r)
    body = bytearray()
    masks = bytearray()
    mlen = (vlen + 7) // 8
    for i, r in enumerate(rows):
        m = bytearray(mlen)
        for j, v in enumerate(r):
            if _is_missing(v):
                m[j // 8] |= 1 << (j % 8)
                body.append(0)
                continue
            if float(v) != int(v) or not 0 <= int(v) <= 255:
                raise ValueError(f"vector {i}: {v!r} is not an 8-bit value (the service carries 8-bit inputs)")
            body.append(int(v))
        masks += m
    flags = (FLAG_LOG if log else 0) | (FLAG_MASK if masked else 0)
    head = HEADER.pack(REQUEST_MAGIC, VERSION, flags, count, vlen, 0, req_id & 0xFFFFFFFF)
    return head + bytes(body) + (bytes(masks) if masked else b"")


def decode_response(rec: bytes) -> tuple[int, int, list[float]]:
    """(request id, status, values) of a response record; raises ValueError if it is not one."""
    if len(rec) < HEADER.size:
        raise ValueError(f"{len(rec)} bytes is shorter than a response header")
    magic, version, _flags, count, status, _res, req_id = HEADER.unpack_from(rec)
    if magic != RESPONSE_MAGIC or version != VERSION:
        raise ValueError("not a response record")
    if len(rec) < HEADER.size + 8 * count:
        raise ValueError(f"response announces {count} values but has {len(rec)} bytes")
    return req_id, status, list(struct.unpack_from(f"<{count}d", rec, HEADER.size))


def _check(rec: bytes, req_id: int, want: int) -> list[float]:
    got_id, status, values = decode_response(rec)
    if status != 0:
        raise SpnError(f"request {got_id}: the service answered with error {status} ({STATUS.get(status, 'unknown status')})")
    if got_id != req_id or len(values) != want:
        raise SpnError(f"request {req_id}: got the answer to {got_id} with {len(values)} values for {want} vectors")
    return values


def _chunks(rows: list[Row], per: int) -> list[list[Row]]:
    return [rows[i:i + per] for i in range(0, len(rows), per)]


def _udp_per_request(rows: list[Row], max_datagram: int) -> int:
    vlen = len(rows[0])
    per_vector = vlen + ((vlen + 7) // 8 if any(_is_missing(v) for r in rows for v in r) else 0)
    room = max_datagram - HEADER.size
    return min(room // 8, room // per_vector)


def query(addr: Union[Addr, str], vectors: Any, transport: str = "udp", log: bool = True, timeout: float = 1.0,
          retries: int = 5, per_request: int | None = None, stats: dict[str, Any] | None = None) -> list[float]:
    """Evaluate ``vectors`` on the service at ``addr`` ((host, port), an IPv6 4-tuple as in
    ``socket``, "host:port" or "[v6addr]:port").

    ``vectors``: a sequence of equal-length sequences (or a 2-D numpy array) of 8-bit values,
    None or NaN marking a missing value. Returns one log-likelihood per vector (likelihood if
    ``log`` is False), in order. ``transport`` is "udp" (requests resent after ``timeout``
    seconds, up to ``retries`` times) or "tcp". Raises SpnError if the service answers with an
    error record or does not answer, ValueError for bad input.

    ``stats``: a dict to fill with the exchange's figures: ``vectors``, ``requests``,
    ``seconds``, ``vectors_per_s``, ``latency_p50_s``, ``latency_p99_s``, ``latency_max_s``
    (per request, from its first send to its answer) and ``resent`` (UDP).
    """
    if isinstance(addr, str):
        addr = _parse_addr(addr)
    rows = _rows(vectors)
    if transport not in ("udp", "tcp"):
        raise ValueError(f"transport {transport!r} is neither 'udp' nor 'tcp'")
    family = _family(addr)
    max_datagram = MAX_DATAGRAM6 if family == socket.AF_INET6 else MAX_DATAGRAM
    per = per_request or (TCP_VECTORS if transport == "tcp" else _udp_per_request(rows, max_datagram))
    if per < 1:
        raise ValueError(f"one vector of {len(rows[0])} values does not fit a datagram: use transport='tcp'")
    chunks = _chunks(rows, per)
    records = [encode_request(i, c, log) for i, c in enumerate(chunks)]
    lat: list[float] = []
    resent = [0]
    start = time.monotonic()
    if transport == "tcp":
        answers = _tcp_exchange(addr, records, chunks, timeout, lat)
    else:
        answers = _udp_exchange(addr, family, records, chunks, timeout, retries, lat, resent)
    secs = time.monotonic() - start
    values = [v for a in answers for v in a]
    if stats is not None:
        stats.update(_figures(lat, len(values), len(records), secs, resent[0]))
    return values


def _parse_addr(text: str) -> Addr:
    """``"host:port"`` or ``"[v6addr]:port"`` as a socket address tuple."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"{text!r} is not host:port or [v6addr]:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return (host, int(port))


def _show(addr: Addr) -> str:
    """``addr`` as the user would write it: host:port, or [v6addr]:port."""
    return f"[{addr[0]}]:{addr[1]}" if ":" in addr[0] else f"{addr[0]}:{addr[1]}"


def _family(addr: Addr) -> int:
    """The address family ``addr`` resolves to (IPv4 first, as ``linerate spn query``)."""
    try:
        infos = socket.getaddrinfo(addr[0], addr[1], type=socket.SOCK_DGRAM)
    except socket.gaierror as e:
        raise SpnError(f"cannot resolve {addr[0]}: {e}") from None
    families = [i[0] for i in infos]
    return socket.AF_INET if socket.AF_INET in families else socket.AF_INET6


def _figures(lat: list[float], vectors: int, requests: int, secs: float, resent: int) -> dict[str, Any]:
    """Rate and latency percentiles of an exchange (nearest-rank percentiles)."""
    s = sorted(lat)

    def pct(p: float) -> float:
        return s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))] if s else 0.0

    return {
        "vectors": vectors, "requests": requests, "seconds": secs,
        "vectors_per_s": vectors / secs if secs > 0 else 0.0,
        "latency_p50_s": pct(50), "latency_p99_s": pct(99), "latency_max_s": s[-1] if s else 0.0,
        "resent": resent,
    }


def _refused(addr: Addr) -> SpnError:
    return SpnError(f"{_show(addr)} refused the request (no UDP service on that port)")


def _send(s: socket.socket, rec: bytes, addr: Addr) -> None:
    try:
        s.send(rec)
    except ConnectionRefusedError:
        raise _refused(addr) from None


def _udp_exchange(addr: Addr, family: int, records: list[bytes], chunks: list[list[Row]], timeout: float,
                  retries: int, lat: list[float], resent: list[int]) -> list[list[float]]:
    answers: list[Optional[list[float]]] = [None] * len(records)
    sent: list[Tuple[float, int]] = [(0.0, 0)] * len(records)  # (time last sent, tries)
    first = [0.0] * len(records)
    done = nxt = 0
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.connect(addr)
        s.settimeout(0.02)
        while done < len(records):
            now = time.monotonic()
            for i in range(nxt):
                if answers[i] is None and now - sent[i][0] >= timeout:
                    if sent[i][1] > retries:
                        raise SpnError(f"no answer from {_show(addr)} (UDP) to request {i} after {sent[i][1]} tries")
                    _send(s, records[i], addr)
                    sent[i] = (now, sent[i][1] + 1)
                    resent[0] += 1
            while nxt < len(records) and nxt < done + UDP_WINDOW:
                _send(s, records[nxt], addr)
                sent[nxt] = (now, 1)
                first[nxt] = time.monotonic()
                nxt += 1
            try:
                rec = s.recv(65536)
            except socket.timeout:
                continue
            except ConnectionRefusedError:
                raise _refused(addr) from None
            if len(rec) < HEADER.size or rec[:4] != RESPONSE_MAGIC:
                continue
            i = struct.unpack_from("<I", rec, 12)[0]
            if i >= len(records) or answers[i] is not None:
                continue  # a duplicate, or a late answer to a resent request
            answers[i] = _check(rec, i, len(chunks[i]))
            lat.append(time.monotonic() - first[i])
            done += 1
    return [a for a in answers if a is not None]


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        part = s.recv(n - len(buf))
        if not part:
            raise SpnError("the service closed the connection before answering everything")
        buf += part
    return bytes(buf)


def _tcp_exchange(addr: Addr, records: list[bytes], chunks: list[list[Row]], timeout: float,
                  lat: list[float]) -> list[list[float]]:
    import threading

    answers: list[list[float]] = []
    try:
        conn = socket.create_connection((addr[0], addr[1]), timeout=timeout)
    except OSError as e:
        raise SpnError(f"cannot connect to {_show(addr)}: {e}") from None
    with conn as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        failure: list[OSError] = []
        sent_at: list[float] = []  # when each request was handed to the socket

        def send_all() -> None:
            try:
                for r in records:
                    s.sendall(r)
                    sent_at.append(time.monotonic())
            except OSError as e:
                failure.append(e)

        sender = threading.Thread(target=send_all, daemon=True)
        sender.start()
        try:
            for i, c in enumerate(chunks):
                head = _recv_exact(s, HEADER.size)
                if head[:4] != RESPONSE_MAGIC:
                    raise SpnError(f"the service sent something other than a response record (request {i})")
                count = struct.unpack_from("<H", head, 6)[0]
                answers.append(_check(head + _recv_exact(s, 8 * count), i, len(c)))
                if i < len(sent_at):
                    lat.append(time.monotonic() - sent_at[i])
        except socket.timeout:
            raise SpnError(f"{_show(addr)} sent nothing for {timeout} s") from None
        sender.join(timeout)
        if failure:
            raise SpnError(f"sending to {_show(addr)}: {failure[0]}")
    return answers


def read_csv(lines: Iterable[str]) -> list[list[Optional[float]]]:
    """Input vectors from CSV lines (commas or spaces; empty, "nan" or "?" = missing; blank
    lines and '#' comments skipped), as ``linerate spn eval`` reads them."""
    rows: list[list[Optional[float]]] = []
    for n, line in enumerate(lines, 1):
        t = line.strip()
        if not t or t.startswith("#"):
            continue
        fields = t.split(",") if "," in t else t.split()
        row: list[Optional[float]] = []
        for f in fields:
            f = f.strip()
            if f in ("", "?") or f.lower() == "nan":
                row.append(None)
                continue
            try:
                row.append(float(f))
            except ValueError:
                raise ValueError(f"line {n}: {f!r} is not a number") from None
        rows.append(row)
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    """The command: query a service with the vectors of a CSV file, print one value per line."""
    p = argparse.ArgumentParser(description="Query a linerate SPN service (linerate spn serve).")
    p.add_argument("--server", required=True, help="ADDR:PORT or [V6ADDR]:PORT of the service")
    p.add_argument("--tcp", action="store_true", help="use TCP (default: UDP)")
    p.add_argument("--input", default="-", help="input vectors: CSV ('-': standard input) or .npy (needs numpy)")
    p.add_argument("--prob", action="store_true", help="likelihoods instead of log-likelihoods")
    p.add_argument("--timeout", type=float, default=1.0, help="seconds to wait for an answer")
    p.add_argument("--json", action="store_true", help="print the values as a JSON list")
    p.add_argument("--stats", action="store_true", help="print vectors/s and latency percentiles on stderr")
    a = p.parse_args(argv)
    try:
        if a.input == "-":
            rows = read_csv(sys.stdin)
        elif a.input.endswith(".npy"):
            try:
                import numpy as np
            except ImportError:
                raise ValueError("reading a .npy file needs numpy (or give CSV)") from None
            rows = np.load(a.input, allow_pickle=False)
            rows = rows.reshape(1, -1) if rows.ndim == 1 else rows
        else:
            with open(a.input) as f:
                rows = read_csv(f)
        figures: dict[str, Any] = {}
        values = query(a.server, rows, transport="tcp" if a.tcp else "udp", log=not a.prob, timeout=a.timeout,
                       stats=figures)
    except (SpnError, ValueError, OSError) as e:
        print(f"spn_client: {e}", file=sys.stderr)
        return 1
    if a.stats:
        g = figures
        print(f"{g['vectors']} vectors in {g['requests']} requests, {g['seconds']:.3f} s: "
              f"{g['vectors_per_s']:.0f} vectors/s; latency p50 {g['latency_p50_s'] * 1e6:.1f} us, "
              f"p99 {g['latency_p99_s'] * 1e6:.1f} us; {g['resent']} resent", file=sys.stderr)
    if a.json:
        print(json.dumps([None if math.isinf(v) or math.isnan(v) else v for v in values]))
    else:
        for v in values:
            print(repr(v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
