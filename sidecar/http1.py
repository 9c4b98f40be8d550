"""A lean asyncio HTTP/1.1 client for the engine calls: keep-alive pool, streamed bodies.

Why not httpx: on loopback its per-request machinery (httpx, httpcore, h11, anyio) cost about
1.3 ms per proxied request, more than the sidecar's whole added-latency budget (1 ms at p50).
This client does only what the sidecar needs, against one origin: requests with a complete
body; responses framed by Content-Length, chunked transfer-encoding or connection close;
interim 1xx responses skipped; a timeout on connecting and on every read; idle keep-alive
connections reused (newest first) and one retry when a reused connection turns out closed
before any byte of the response arrived (the server never got the request).

The wire format is parsed by the pure functions below; `Client` and `Response` do the I/O.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import cast
from urllib.parse import unquote, urlsplit

from sidecar import recvbuf

log = logging.getLogger(__name__)

_HIGH_WATER = 131072  # bytes received but unread before reading pauses (as StreamReader)
_MAX_LINE = 65536  # longest status, header or chunk-size line accepted
_MAX_HEADERS = 100
# Largest response head accepted (status line and headers together): past it, the response
# is refused at once as a protocol error, never waited on until the read timeout.
MAX_HEAD = 65536
# Idle connections older than this are closed, not reused: below uvicorn's default 5 s
# keep-alive (vLLM, SGLang and trtllm-serve serve with uvicorn), so a connection the engine
# is about to close is rarely picked.
KEEPALIVE_EXPIRY = 4.0


# -- errors ---------------------------------------------------------------------------------


class HTTPError(Exception):
    """Any failure talking to the server."""


class ConnectError(HTTPError):
    """No connection could be opened (refused, unknown host, TLS failure, connect timeout)."""


class ReadTimeout(HTTPError):
    """The server sent nothing for the read timeout."""


class RemoteClosed(HTTPError):
    """The connection broke (closed, reset) before the response was complete."""


class ProtocolError(HTTPError):
    """The server's bytes are not a valid HTTP/1.1 response."""


# -- pure wire-format logic -------------------------------------------------------------------


@dataclass(frozen=True)
class Origin:
    """Where requests go: scheme, host, port and a base path prefixed to every request path."""

    scheme: str
    host: str
    port: int
    base_path: str = ""
    authorization: str | None = None  # `user:password@` in the URL: HTTP basic auth

    @classmethod
    def from_url(cls, url: str) -> Origin:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL with a host: {url!r}")
        default = 443 if parts.scheme == "https" else 80
        auth = None
        if parts.username is not None:
            user_pass = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            auth = "Basic " + base64.b64encode(user_pass.encode()).decode("ascii")
        return cls(
            parts.scheme, parts.hostname, parts.port or default, parts.path.rstrip("/"), auth
        )

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host  # IPv6 literal
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


def encode_request(
    method: str,
    target: str,
    host: str,
    body: bytes | None,
    headers: Iterable[tuple[str, str]] = (),
) -> bytes:
    """The request's bytes, head and body together (one write, one segment on loopback)."""
    lines = [f"{method} {target} HTTP/1.1", f"host: {host}", "user-agent: sidecar-forge"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    if body is not None:
        lines.append(f"content-length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + body if body else head


def parse_status_line(line: bytes) -> tuple[int, str, bool]:
    """`HTTP/1.x NNN reason` -> (status, reason, is HTTP/1.0)."""
    version, _, rest = line.rstrip(b"\r\n").partition(b" ")
    code, _, reason = rest.partition(b" ")
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit():
        raise ProtocolError(f"not an HTTP/1.1 status line: {line[:80]!r}")
    return int(code), reason.decode("latin-1"), version == b"HTTP/1.0"


def parse_header_line(line: bytes) -> tuple[str, str]:
    """`Name: value` -> (lowercased name, value without surrounding blanks)."""
    name, colon, value = line.rstrip(b"\r\n").partition(b":")
    if not colon or not name or name != name.strip() or b" " in name:
        raise ProtocolError(f"malformed header line: {line[:80]!r}")
    return name.decode("latin-1").lower(), value.strip(b" \t").decode("latin-1")


@dataclass(frozen=True)
class Head:
    """A response's status line and headers (names lowercased, in order)."""

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    http10: bool = False

    def get(self, name: str) -> str | None:
        """The first value of header `name` (lowercase), or None."""
        for key, value in self.headers:
            if key == name:
                return value
        return None

    def tokens(self, name: str) -> list[str]:
        """The comma-separated lowercased tokens of all `name` headers."""
        return [
            token.strip().lower()
            for key, value in self.headers
            if key == name
            for token in value.split(",")
            if token.strip()
        ]


def body_framing(method: str, head: Head) -> tuple[str, int]:
    """How the body is delimited: ("none" | "chunked" | "length" | "close", length)."""
    if method == "HEAD" or head.status in (204, 304) or 100 <= head.status < 200:
        return "none", 0
    encodings = head.tokens("transfer-encoding")
    if encodings:
        if encodings[-1] == "chunked":
            return "chunked", 0
        return "close", 0  # RFC 9112 6.3: not chunked last -> read until close
    lengths = {value.strip() for key, value in head.headers if key == "content-length"}
    if lengths:
        value = lengths.pop()
        if lengths or not value.isdigit():
            raise ProtocolError(f"bad content-length: {head.get('content-length')!r}")
        return "length", int(value)
    return "close", 0


def keeps_alive(head: Head, framing: str) -> bool:
    """Whether the connection can carry another request once this body is read."""
    if framing == "close":
        return False
    connection = head.tokens("connection")
    if "close" in connection:
        return False
    return not head.http10 or "keep-alive" in connection


def parse_chunk_size(line: bytes) -> int:
    """A chunk-size line (`1a;ext=1`) -> its size."""
    size = line.split(b";", 1)[0].strip()
    try:
        if not size or size.startswith((b"-", b"+", b"0x", b"0X")):
            raise ValueError
        return int(size, 16)
    except ValueError:
        raise ProtocolError(f"bad chunk size line: {line[:80]!r}") from None


class ChunkedDecoder:
    """Chunked transfer-coding, sans-I/O: `feed` raw bytes, get the payload they complete.

    Everything one network read brought is decoded at once, so a stream relays per read,
    not per chunk. `done` once the last chunk and the trailers are in; `extra` holds bytes
    the server sent after that (the connection is then not reused).
    """

    def __init__(self) -> None:
        self._pending = b""  # an incomplete framing line
        self._remaining = 0  # payload bytes left in the current chunk
        self._state = "size"  # size | data | data_end | trailer
        self.done = False
        self.extra = b""

    def feed(self, data: bytes) -> bytes:
        buf = self._pending + data if self._pending else data
        out: list[bytes] = []
        pos, end = 0, len(buf)
        while pos < end:
            if self._state == "data":
                take = min(self._remaining, end - pos)
                out.append(buf[pos : pos + take])
                pos += take
                self._remaining -= take
                if self._remaining == 0:
                    self._state = "data_end"
                continue
            newline = buf.find(b"\n", pos)
            if newline < 0:
                if end - pos > _MAX_LINE:
                    raise ProtocolError(f"chunk framing line longer than {_MAX_LINE} bytes")
                break
            line, pos = buf[pos : newline + 1], newline + 1
            if self._state == "size":
                self._remaining = parse_chunk_size(line)
                self._state = "data" if self._remaining else "trailer"
            elif line not in (b"\r\n", b"\n"):
                if self._state == "data_end":
                    raise ProtocolError("chunk data longer than its size")
                # a trailer field: not used
            elif self._state == "data_end":
                self._state = "size"
            else:  # the blank line after the trailers: the body is complete
                self.done = True
                self.extra = buf[pos:]
                pos = end
        self._pending = buf[pos:] if not self.done else b""
        return out[0] if len(out) == 1 else b"".join(out)


# -- connections and the pool -------------------------------------------------------------------


class Connection(asyncio.BufferedProtocol):
    """One TCP (or TLS) connection to the origin, as the protocol of its transport: bytes
    received and not yet consumed, EOF, and one reader waiting for more.

    It receives into `sidecar.recvbuf` and keeps what arrived in `buffer`, so a response
    head and body that arrived together are parsed without waiting again; a timer runs
    only while a reader actually waits.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.error: BaseException | None = None  # what broke the connection, if anything
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    # asyncio protocol callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport; not necessarily an `asyncio.Transport` subclass (uvloop's).
        self.transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        return recvbuf.view()

    def buffer_updated(self, nbytes: int) -> None:
        self.buffer += recvbuf.view()[:nbytes]
        if len(self.buffer) > _HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True  # a reader that lags (a slow client downstream)
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # used by the client

    def send(self, data: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            self.eof = True  # nothing will arrive: the reader sees a closed connection
        else:
            self.transport.write(data)

    async def wait(self, timeout: float) -> None:
        """Until more bytes or EOF arrive; `TimeoutError` after `timeout` seconds."""
        waiter = self._waiter = self._loop.create_future()
        timer = self._loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def take(self, size: int) -> bytes:
        """Up to `size` buffered bytes, consumed."""
        if size >= len(self.buffer):
            data = bytes(self.buffer)
            self.buffer.clear()
        else:
            data = bytes(self.buffer[:size])
            del self.buffer[:size]
        if self._paused and len(self.buffer) <= _HIGH_WATER // 2 and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return data

    def usable(self, now: float) -> bool:
        """Idle connection still worth reusing: open on both sides, nothing unread, not
        expired."""
        return (
            not self.eof
            and not self.buffer
            and self.transport is not None
            and not self.transport.is_closing()
            and now - self.idle_since < KEEPALIVE_EXPIRY
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class Response:
    """A response whose head has arrived; read its body with `read()` or `aiter_bytes()`.

    Always `aclose()` it: a completely read keep-alive response returns its connection to the
    pool; anything else (an unread body, a cancelled read) closes the connection, which is how
    a server learns that the client gave up.
    """

    def __init__(
        self,
        client: Client,
        conn: Connection,
        head: Head,
        framing: str,
        length: int,
        timeout: float,
    ) -> None:
        self.status = head.status
        self.reason = head.reason
        self.head = head
        self._client = client
        self._conn: Connection | None = conn
        self._framing = framing
        self._remaining = length  # "length": body bytes left
        self._chunks = ChunkedDecoder() if framing == "chunked" else None
        self._timeout = timeout
        self._keep_alive = keeps_alive(head, framing)
        self._done = framing == "none" or (framing == "length" and length == 0)
        if self._done:
            self._finish()

    async def read(self) -> bytes:
        """The whole (remaining) body."""
        parts = []
        while not self._done:
            parts.append(await self._next())
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """Body bytes as they arrive (chunked framing removed)."""
        while not self._done:
            data = await self._next()
            if data:
                yield data

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        """Release the connection: back to the pool if the body was read, else closed."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _finish(self) -> None:
        self._done = True
        conn, self._conn = self._conn, None
        if conn is not None:
            if self._keep_alive:
                self._client.release(conn)
            else:
                conn.close()

    async def _next(self) -> bytes:
        """The next piece of body; marks the response done at its end."""
        conn = self._conn
        if conn is None:
            raise RemoteClosed("response already closed")
        if not conn.buffer and not conn.eof:
            try:
                await conn.wait(self._timeout)
            except TimeoutError:
                raise ReadTimeout(f"nothing received for {self._timeout:g}s") from None
        if conn.error is not None and not conn.buffer:
            raise RemoteClosed(f"connection broke: {conn.error!r}")
        # What the connection has, not more than the body's length.
        data = conn.take(self._remaining if self._framing == "length" else len(conn.buffer))
        if self._chunks is not None:
            if not data:
                raise RemoteClosed("closed inside a chunked body")
            payload = self._chunks.feed(data)
            if self._chunks.done:
                self._keep_alive = self._keep_alive and not self._chunks.extra
                self._finish()
            return payload
        if self._framing == "length":
            if not data:
                raise RemoteClosed(f"closed with {self._remaining} body bytes missing")
            self._remaining -= len(data)
            if self._remaining == 0:
                self._finish()
        elif not data:  # "close": the end of the body
            self._finish()
        return data


class Client:
    """Requests to one origin over pooled keep-alive connections."""

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float,
        read_timeout: float,
        max_idle: int = 256,
        ssl_context: ssl.SSLContext | None = None,
        authorization: str | None = None,
    ) -> None:
        """`authorization`: the `Authorization` header sent with every request (a bearer
        token), instead of the basic auth of a `user:password@` URL."""
        self.origin = Origin.from_url(url)
        self.authorization = authorization or self.origin.authorization
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_idle = max_idle
        self._idle: list[Connection] = []
        self._ssl = ssl_context
        if self.origin.scheme == "https" and ssl_context is None:
            self._ssl = _default_ssl_context()

    async def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: Iterable[tuple[str, str]] = (),
        *,
        timeout: float | None = None,
        meanwhile: Callable[[], object] | None = None,
    ) -> Response:
        """Send a request; returns once the response head arrived (the body is left to read).

        `timeout` overrides both the connect and the read timeout for this request.
        `meanwhile` is called once, right after the request is written: work that overlaps
        the server's instead of following it.
        """
        read_timeout = self.read_timeout if timeout is None else timeout
        if self.authorization is not None:
            headers = [("authorization", self.authorization), *headers]
        data = encode_request(
            method, self.origin.base_path + path, self.origin.host_header, body, headers
        )
        conn, reused = self._checkout(), True
        if conn is None:
            conn, reused = await self._connect(timeout), False
        try:
            try:
                head = await self._exchange(conn, data, read_timeout, meanwhile)
            except _NothingReceived as exc:
                conn.close()
                if not reused:
                    raise RemoteClosed(str(exc)) from None
                # A pooled connection the server closed as we reused it: the server never got
                # the request, so one retry on a new connection is safe.
                log.info("server dropped a pooled connection; retrying once")
                conn = await self._connect(timeout)
                try:
                    head = await self._exchange(conn, data, read_timeout)
                except _NothingReceived as again:
                    raise RemoteClosed(str(again)) from None
        except BaseException:
            conn.close()
            raise
        framing, length = body_framing(method, head)
        return Response(self, conn, head, framing, length, read_timeout)

    def release(self, conn: Connection) -> None:
        """Take back a connection whose response was read completely."""
        conn.idle_since = time.monotonic()
        if len(self._idle) < self.max_idle and conn.usable(conn.idle_since):
            self._idle.append(conn)
        else:
            conn.close()

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _checkout(self) -> Connection | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()  # newest first: the least likely to have expired
            if conn.usable(now):
                return conn
            conn.close()
        return None

    async def _connect(self, timeout: float | None) -> Connection:
        limit = self.connect_timeout if timeout is None else timeout
        origin = self.origin
        try:
            async with asyncio.timeout(limit):
                loop = asyncio.get_running_loop()
                _, conn = await loop.create_connection(
                    lambda: Connection(loop),
                    origin.host,
                    origin.port,
                    ssl=self._ssl,
                    server_hostname=origin.host if self._ssl else None,
                )
        except TimeoutError:
            raise ConnectError(
                f"connecting to {origin.host}:{origin.port} timed out after {limit:g}s"
            ) from None
        except OSError as exc:  # refused, unreachable, unknown host, TLS handshake failure
            raise ConnectError(f"cannot connect to {origin.host}:{origin.port}: {exc}") from None
        return conn

    async def _exchange(
        self,
        conn: Connection,
        data: bytes,
        timeout: float,
        meanwhile: Callable[[], object] | None = None,
    ) -> Head:
        """Write the request, call `meanwhile`, read the final response head."""
        conn.send(data)
        if meanwhile is not None:
            meanwhile()
        received = False
        while True:
            try:
                lines = await _head_lines(conn, timeout)
            except _NothingReceived:
                if received:  # closed after an interim response
                    raise RemoteClosed("connection closed inside the response head") from None
                raise
            received = True
            status, reason, http10 = parse_status_line(lines[0])
            if len(lines) - 1 > _MAX_HEADERS:
                raise ProtocolError(f"more than {_MAX_HEADERS} header lines")
            headers = tuple(parse_header_line(line) for line in lines[1:])
            if not 100 <= status < 200 or status == 101:
                return Head(status, reason, headers, http10)


async def _head_lines(conn: Connection, timeout: float) -> list[bytes]:
    """The next response head's lines (status line first), consumed from the connection."""
    start = 0
    while True:
        end = _HEAD_END.search(conn.buffer, start)
        if end is not None:
            if end.end() > MAX_HEAD:
                raise ProtocolError(f"response head larger than {MAX_HEAD} bytes")
            head = conn.take(end.end())
            return head.split(b"\n")[:-2]  # without the blank line
        if len(conn.buffer) > MAX_HEAD:
            raise ProtocolError(f"response head larger than {MAX_HEAD} bytes")
        if conn.eof:
            why = f"connection broke: {conn.error!r}" if conn.error else "connection closed"
            if not conn.buffer:
                raise _NothingReceived(f"{why} before the response")
            raise RemoteClosed(f"{why} inside the response head")
        start = max(0, len(conn.buffer) - 2)  # the blank line may complete across reads
        try:
            await conn.wait(timeout)
        except TimeoutError:
            raise ReadTimeout(f"no response for {timeout:g}s") from None


_HEAD_END = re.compile(rb"\n\r?\n")


class _NothingReceived(Exception):
    """The connection failed before any byte of the response: the request can be retried."""


def _default_ssl_context() -> ssl.SSLContext:
    """Certificate verification with certifi's CA bundle when present (as httpx did), else
    the system's: slim images often have no system bundle."""
    return ssl_context(None)


def ssl_context(ca_bundle: str | None) -> ssl.SSLContext:
    """Verification against `ca_bundle` (a PEM file) when given, else `_default_ssl_context`'s
    choice."""
    if ca_bundle is not None:
        return ssl.create_default_context(cafile=ca_bundle)
    try:
        import certifi
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())
