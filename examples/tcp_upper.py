"""An application on the linerate stack from Python: a line-oriented TCP service that answers
every line in upper case, a client that sends it three lines, and a ping, on two hosts of an
in-process testbed (virtual time, so every run is the same).

Run it with the package installed (``make py-develop``): ``.venv/bin/python examples/tcp_upper.py``.
"""

import sys

import linerate as lr

REQUEST = b"hello\nlinerate speaks tcp\nbye\n"


def main() -> int:
    net = lr.Testbed()
    client = net.host("10.0.0.1/24")
    server = net.host("10.0.0.2/24")
    listener = server.tcp_listen(7000)
    conn = client.tcp_connect(("10.0.0.2", 7000))

    session, line, pending, closed = None, b"", b"", False
    sent, reply = 0, b""
    for _ in range(100_000):  # at most 5 s of virtual time
        net.run(ms=0.05)
        # The service: accept, answer complete lines, close once the client closed.
        # accept, recv and send raise BlockingIOError when they would block, like a
        # non-blocking socket's.
        if session is None:
            try:
                session, _ = listener.accept()
            except BlockingIOError:
                pass
        if session is not None and not closed:
            try:
                data = session.recv()
            except BlockingIOError:
                data = None
            if data:
                line += data
                *lines, line = line.split(b"\n")
                pending += b"".join(l.upper() + b"\n" for l in lines)
            if pending:
                try:
                    pending = pending[session.send(pending):]
                except BlockingIOError:
                    pass  # the send buffer is full: the rest goes at a later round
            if data == b"" and not pending:  # b"": the client closed its side
                session.close()
                closed = True
        # The client: send once connected, half-close, read until the service closes.
        if not conn.connected:
            continue
        if sent < len(REQUEST):
            try:
                sent += conn.send(REQUEST[sent:])
            except BlockingIOError:
                pass
            if sent == len(REQUEST):
                conn.shutdown()
        try:
            data = conn.recv()
        except BlockingIOError:
            continue
        if data == b"":
            conn.close()
            break
        reply += data
    sys.stdout.write(reply.decode())
    if reply != REQUEST.upper():
        print(f"the reply was {len(reply)} bytes, expected {len(REQUEST)}", file=sys.stderr)
        return 1
    print(f"{len(REQUEST)} bytes each way over linerate TCP in {net.now_ns / 1e6:.3f} ms of virtual time")
    rtts = client.ping("10.0.0.2", count=3)
    if len(rtts) != 3:
        print(f"ping: {len(rtts)} of 3 replies", file=sys.stderr)
        return 1
    print(f"ping 10.0.0.2: 3 replies, round trip {min(rtts):.1f} .. {max(rtts):.1f} us of virtual time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
