"""asyncio streams over a live linerate host (``Host.on_tap``/``on_shm``/``on_link``, polled by
its own thread): ``open_connection`` and ``start_server`` as in :mod:`asyncio`, built on the
event loop's ``sock_recv``/``sock_sendall``/``sock_accept`` and the sockets' ``fileno()``.

>>> async def main(host: "linerate.Host") -> None:  # doctest: +SKIP
...     reader, writer = await linerate.asyncio.open_connection(host, ("10.77.0.1", 7))
...     writer.write(b"hello")
...     await writer.drain()
...     print(await reader.read(100))
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable, Optional, Set, Tuple, cast

from ._linerate import Host, TcpConn, TcpListener

__all__ = ["StreamReader", "StreamWriter", "Server", "open_connection", "start_server"]

_CHUNK = 65536


class StreamReader:
    """Reads a linerate TCP connection from a coroutine (the subset of
    :class:`asyncio.StreamReader` that streams of bytes need)."""

    def __init__(self, conn: TcpConn) -> None:
        self._conn = conn
        self._buf = bytearray()
        self._eof = False

    async def _fill(self) -> bool:
        """Receive more into the buffer; False at end of stream."""
        if self._eof:
            return False
        data = await asyncio.get_running_loop().sock_recv(self._conn, _CHUNK)  # type: ignore[arg-type]
        if not data:
            self._eof = True
            return False
        self._buf += data
        return True

    async def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (``-1``: everything until the end of the stream); b"" at the end."""
        if n < 0:
            while await self._fill():
                pass
        elif not self._buf:
            await self._fill()
        take = len(self._buf) if n < 0 else min(n, len(self._buf))
        out = bytes(self._buf[:take])
        del self._buf[:take]
        return out

    async def readexactly(self, n: int) -> bytes:
        """Exactly ``n`` bytes; :class:`asyncio.IncompleteReadError` if the stream ends first."""
        while len(self._buf) < n:
            if not await self._fill():
                partial = bytes(self._buf)
                self._buf.clear()
                raise asyncio.IncompleteReadError(partial, n)
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    async def readuntil(self, separator: bytes = b"\n") -> bytes:
        """Bytes up to and including ``separator``; :class:`asyncio.IncompleteReadError` if the
        stream ends first."""
        while (i := self._buf.find(separator)) < 0:
            if not await self._fill():
                partial = bytes(self._buf)
                self._buf.clear()
                raise asyncio.IncompleteReadError(partial, None)
        end = i + len(separator)
        out = bytes(self._buf[:end])
        del self._buf[:end]
        return out

    async def readline(self) -> bytes:
        """One line with its b"\\n" (at the end of the stream: what is left, maybe b"")."""
        try:
            return await self.readuntil(b"\n")
        except asyncio.IncompleteReadError as e:
            return e.partial

    def at_eof(self) -> bool:
        """True once the stream ended and the buffer is empty."""
        return self._eof and not self._buf


class StreamWriter:
    """Writes a linerate TCP connection from a coroutine (the subset of
    :class:`asyncio.StreamWriter` that streams of bytes need)."""

    def __init__(self, conn: TcpConn) -> None:
        self._conn = conn
        self._pending = bytearray()

    def write(self, data: bytes) -> None:
        """Queue ``data``; ``await drain()`` sends it."""
        self._pending += data

    async def drain(self) -> None:
        """Send what was written, waiting while the send buffer is full."""
        if self._pending:
            data, self._pending = bytes(self._pending), bytearray()
            await asyncio.get_running_loop().sock_sendall(self._conn, data)  # type: ignore[arg-type]

    def write_eof(self) -> None:
        """Close our direction (a FIN after the data); reading goes on."""
        self._conn.shutdown()

    def get_extra_info(self, name: str) -> Optional[Tuple[str, int]]:
        """``"peername"``: the remote ``(ip, port)``; anything else: None."""
        return self._conn.getpeername() if name == "peername" else None

    def close(self) -> None:
        """Close the connection (queued data and a FIN still go out)."""
        self._conn.close()

    async def wait_closed(self) -> None:
        """Nothing to wait for: ``close`` hands the FIN to the host at once."""


async def open_connection(
    host: Host, addr: Tuple[str, int], timeout: Optional[float] = 10.0
) -> Tuple[StreamReader, StreamWriter]:
    """Connect ``host`` to ``addr``; ConnectionRefusedError if refused, TimeoutError if not
    established within ``timeout`` seconds (None: no limit)."""
    conn = host.tcp_connect(addr)
    conn.setblocking(False)
    end = None if timeout is None else time.monotonic() + timeout
    while not conn.connected:
        if end is not None and time.monotonic() >= end:
            conn.abort()
            raise TimeoutError(f"connecting to {addr[0]}:{addr[1]} timed out")
        await asyncio.sleep(0.001)
    return StreamReader(conn), StreamWriter(conn)


class Server:
    """A listening port of a host whose connections run ``client_connected_cb``."""

    def __init__(self, listener: TcpListener, cb: Callable[[StreamReader, StreamWriter], Awaitable[None]]) -> None:
        self._listener = listener
        self._cb = cb
        self._clients: Set["asyncio.Task[None]"] = set()
        self._task = asyncio.get_running_loop().create_task(self._accept_loop())

    @property
    def port(self) -> int:
        """The port listened on."""
        return self._listener.port

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            conn, _ = await loop.sock_accept(self._listener)  # type: ignore[arg-type]
            task: "asyncio.Task[None]" = loop.create_task(self._serve(cast(TcpConn, conn)))
            self._clients.add(task)
            task.add_done_callback(self._clients.discard)

    async def _serve(self, conn: TcpConn) -> None:
        await self._cb(StreamReader(conn), StreamWriter(conn))

    def close(self) -> None:
        """Stop accepting and stop listening (connections already accepted go on)."""
        self._task.cancel()
        self._listener.close()

    async def wait_closed(self) -> None:
        """Wait for the accept loop to end after ``close``."""
        try:
            await self._task
        except asyncio.CancelledError:
            pass

    async def __aenter__(self) -> "Server":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
        await self.wait_closed()


async def start_server(
    host: Host,
    client_connected_cb: Callable[[StreamReader, StreamWriter], Awaitable[None]],
    port: int,
    backlog: int = 128,
) -> Server:
    """Listen on ``port`` of ``host``; each connection runs ``client_connected_cb(reader,
    writer)`` as a task."""
    listener = host.tcp_listen(port, backlog)
    listener.setblocking(False)
    return Server(listener, client_connected_cb)
