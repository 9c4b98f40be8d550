"""A lean asyncio HTTP/1.1 client for the engine calls: keep-alive pool, streamed bodies.

Why not httpx: on loopback its per-request machinery (httpx, httpcore, h11, anyio) cost about
1.3 ms per proxied request, more than the whole added latency of the sidecar today.
This client does only what the sidecar needs, against one origin: requests with a complete
body; responses framed by Content-Length, chunked transfer-encoding or connection close;
interim 1xx responses skipped; a timeout on connecting and on every read; idle keep-alive
connections reused (newest first) and one retry when a reused connection turns out closed
before any byte of the response arrived (the server never got the request).

Responses are parsed by httptools' response parser (llhttp, the C parser uvicorn serves
with): status line, headers, Content-Length, chunked coding and trailers, interim responses;
this module adds the limits (a 64 KiB head, 100 header lines), the close-delimited body's end
and the pool. `Client` and `Response` do the I/O.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import cast
from urllib.parse import unquote, urlsplit

import httptools

from sidecar import recvbuf
from sidecar.deadline import Deadline

log = logging.getLogger(__name__)

_HIGH_WATER = 131072  # bytes received but unread before reading pauses (as StreamReader)
_MAX_HEADERS = 100
# Largest response head accepted (status line and headers together): past it, the response
# is refused at once as a protocol error, never waited on until the read timeout.
MAX_HEAD = 65536
# Idle connections older than this are closed, not reused: below uvicorn's default 5 s
# keep-alive (vLLM, SGLang and trtllm-serve serve with uvicorn), so a connection the engine
# is about to close is rarely picked.
KEEPALIVE_EXPIRY = 4.0
_MAX_CACHED_HEADS = 64  # request head starts a client keeps (a handful of paths in use)


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


def request_head_start(
    method: str, target: str, host: str, headers: Iterable[tuple[str, str]] = ()
) -> bytes:
    """A request head without its body's length and the blank line that ends it: the same
    for every request a client sends to one path, so the client keeps it."""
    lines = [f"{method} {target} HTTP/1.1", f"host: {host}", "user-agent: sidecar-forge"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


def finish_request(start: bytes, body: bytes | None) -> bytes:
    """The request's bytes from its head's start (`request_head_start`): the body's length,
    the head's end and the body, together (one write, one segment on loopback)."""
    if body is None:
        return start + b"\r\n"
    return b"%bcontent-length: %d\r\n\r\n%b" % (start, len(body), body)


class Head:
    """A response's status line and headers (names lowercased, in order). The engine
    client hands the header bytes as received (`raw`); they are decoded on first use, which
    a successful engine answer rarely needs. A plain slotted class: one is made per
    engine response."""

    __slots__ = ("_headers", "_raw", "reason", "status")

    def __init__(
        self,
        status: int,
        reason: str,
        headers: tuple[tuple[str, str], ...] = (),
        raw: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        self.status = status
        self.reason = reason
        self._headers: tuple[tuple[str, str], ...] | None = headers if raw is None else None
        self._raw = raw

    @property
    def headers(self) -> tuple[tuple[str, str], ...]:
        headers = self._headers
        if headers is None:
            assert self._raw is not None
            headers = self._headers = tuple(
                (name.decode("latin-1").lower(), value.strip(b" \t").decode("latin-1"))
                for name, value in self._raw
            )
        return headers

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


def close_delimited(head: Head) -> bool:
    """Whether the body runs until the connection closes (RFC 9112 6.3): no Content-Length
    and no chunked coding last, on a status that has a body. httptools reads such a body
    until EOF without telling when it ends; the connection does."""
    if head.status in (204, 304) or 100 <= head.status < 200:
        return False
    encodings = head.tokens("transfer-encoding")
    if encodings:
        return encodings[-1] != "chunked"
    return head.get("content-length") is None


# -- connections and the pool -------------------------------------------------------------------


class Connection(asyncio.BufferedProtocol):
    """One TCP (or TLS) connection to the origin, as the protocol of its transport. Bytes are
    parsed as they arrive by httptools' response parser (llhttp: status line, headers,
    Content-Length, chunked and close-delimited framing); a reader waits for the head, then
    for body pieces. A read deadline is set only while a reader waits (one `Deadline` timer
    per connection).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._view = recvbuf.view()  # this thread's receive buffer (the loop's)
        self.transport: asyncio.Transport | None = None
        self.eof = False
        self.error: BaseException | None = None  # what broke the connection, if anything
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._read_deadline = Deadline(loop, self._timed_out)  # the waiting read's
        self._timeout = 0.0  # the waiting read's timeout
        self._whole = False  # the waiting read wants the whole response (see `wait`)
        self._paused = False
        self._parser: httptools.HttpResponseParser | None = None
        self._spare: httptools.HttpResponseParser | None = None  # see `expect_nothing`
        self._reusable = True  # no byte arrived that no response explains
        self._start_response()

    def _start_response(self, method: str = "GET") -> None:
        self._method = method
        self.received = False  # any byte of this response
        self.head: Head | None = None
        self.body: list[bytes] = []
        self.buffered = 0
        self.complete = False
        self.keep_alive = False
        self.protocol_error: ProtocolError | None = None
        self._head_bytes = 0  # bytes received while no head was complete
        self._status = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._parser = None
        self._spare = None

    def expect_nothing(self) -> None:
        """The response was read: bytes arriving now belong to no request (the rest of the
        per-response state is reset by the next `expect`)."""
        # The parser read a whole kept-alive response (a HEAD's connection is not kept):
        # it waits for the next one, so it parses that one too.
        self._spare = self._parser
        self._parser = None

    def expect(self, method: str) -> None:
        """A request was written: parse what follows as its response."""
        spare = self._spare
        self._start_response(method)
        if spare is not None and method != "HEAD":
            self._parser = spare
            return
        parser = self._parser = httptools.HttpResponseParser(self)
        # Bare LF line ends are accepted (RFC 9112 2.2 allows a recipient to).
        parser.set_dangerous_leniencies(lenient_optional_cr_before_lf=True)

    # asyncio protocol callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport; not necessarily an `asyncio.Transport` subclass (uvloop's).
        self.transport = cast(asyncio.Transport, transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        parser = self._parser
        if parser is None or self.complete or self.protocol_error is not None:
            self._reusable = False  # bytes no request asked for
            return
        self.received = True
        if self.head is None:
            self._head_bytes += nbytes
        try:
            parser.feed_data(self._view[:nbytes])
        except httptools.HttpParserError as exc:
            if not self.complete:
                self.protocol_error = ProtocolError(f"malformed response: {exc}")
            self._reusable = False
        except httptools.HttpParserUpgrade:
            self.protocol_error = ProtocolError("the server switched protocols")
        if self.head is None and self._head_bytes > MAX_HEAD and self.protocol_error is None:
            self.protocol_error = ProtocolError(f"response head larger than {MAX_HEAD} bytes")
        if self.buffered > _HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True  # a reader that lags (a slow client downstream)
            self.transport.pause_reading()
        elif (
            self._whole
            and not self.complete
            and self.protocol_error is None
            and self._waiter is not None
        ):
            # The reader wants the whole response: woken once, not per piece (an engine
            # on uvicorn writes a head and its body apart). Bytes arrived, so the read
            # timeout starts again.
            self._read_deadline.set(self._timeout)
            return
        self._wake()

    def eof_received(self) -> bool:
        self._ended()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.error = exc
        self._read_deadline.close()
        self._ended()

    def _ended(self) -> None:
        self.eof = True
        if self.head is not None and not self.complete and close_delimited(self.head):
            self.complete = True  # the close is the body's end
            self.keep_alive = False
        self._wake()

    # httptools parser callbacks

    def on_message_begin(self) -> None:
        if self.complete:
            # Bytes after the response's end in the same read (a second response, or only
            # its first bytes): they belong to no request, so the connection is not reused.
            self._reusable = False

    def on_status(self, status: bytes) -> None:
        self._status += status

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.head is None:  # trailers (after the body) are not used
            # Bounded: no more than MAX_HEAD bytes are read while no head is complete.
            self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        parser = self._parser
        assert parser is not None
        status = parser.get_status_code()
        headers = self._headers
        if len(headers) > _MAX_HEADERS:
            self.protocol_error = ProtocolError(f"more than {_MAX_HEADERS} header lines")
            return
        # The head's own size matters only when the reads that brought it were larger.
        if self._head_bytes > MAX_HEAD and _head_size(self._status, headers) > MAX_HEAD:
            self.protocol_error = ProtocolError(f"response head larger than {MAX_HEAD} bytes")
            return
        if 100 <= status < 200 and status != 101:  # interim: the final response follows
            self._status, self._headers = b"", []
            return
        self.head = Head(status, self._status.decode("latin-1"), (), headers)
        self.keep_alive = parser.should_keep_alive()
        if self._method == "HEAD":  # no body follows, whatever the headers say
            self.complete = True
            self.keep_alive = False

    def on_body(self, body: bytes) -> None:
        if self.head is not None and not self.complete:
            self.body.append(body)
            self.buffered += len(body)

    def on_message_complete(self) -> None:
        if self.head is not None:
            self.complete = True

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

    async def wait(self, timeout: float, whole: bool = False) -> None:
        """Until more bytes or EOF arrive (`whole`: until the response is complete, the
        connection ends, or `_HIGH_WATER` body bytes wait); `TimeoutError` after `timeout`
        seconds without a byte."""
        waiter = self._waiter = self._loop.create_future()
        self._whole, self._timeout = whole, timeout
        self._read_deadline.set(timeout)
        try:
            await waiter
        finally:
            self._waiter = None
            self._read_deadline.clear()

    def _timed_out(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(TimeoutError())

    def take_body(self) -> bytes:
        """The body bytes parsed so far, consumed."""
        body = self.body
        data = body[0] if len(body) == 1 else b"".join(body)
        self.body = []
        self.buffered = 0
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return data

    def usable(self, now: float) -> bool:
        """Idle connection still worth reusing: open on both sides, nothing unexplained
        received, the last request written out whole (a server may answer before reading a
        body: the next request would queue behind the rest of it), not expired."""
        return (
            not self.eof
            and self._reusable
            and self.transport is not None
            and not self.transport.is_closing()
            and not self.transport.get_write_buffer_size()
            and now - self.idle_since < KEEPALIVE_EXPIRY
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class Response:
    """A response whose head has arrived; read its body with `read()` or `aiter_bytes()`.

    Always `aclose()` it: a completely read keep-alive response returns its connection to the
    pool; anything else (an unread body, a cancelled read) closes the connection, which is how
    a server learns that the client gave up.
    """

    def __init__(self, client: Client, conn: Connection, head: Head, timeout: float) -> None:
        self.status = head.status
        self.reason = head.reason
        self.head = head
        self._client = client
        self._conn: Connection | None = conn
        self._timeout = timeout
        self._done = False
        self._ready = b""  # body bytes taken from the connection, not yet read
        if conn.complete:  # the whole response is in (a `whole` request's usual case)
            if conn.body:
                self._ready = conn.take_body()
            self._finish()

    async def read(self, limit: int | None = None) -> bytes:
        """The whole (remaining) body; `ProtocolError` once it is over `limit` bytes (the
        connection is then not reused: the caller closes the response)."""
        parts = [self._ready]
        size = len(self._ready)
        self._ready = b""
        while limit is None or size <= limit:
            if self._done:
                return parts[0] if len(parts) == 1 else b"".join(parts)
            part = await self._next()
            parts.append(part)
            size += len(part)
        raise ProtocolError(f"response body larger than {limit} bytes")

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """Body bytes as they arrive (framing removed)."""
        if self._ready:
            data, self._ready = self._ready, b""
            yield data
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
            if conn.keep_alive:
                conn.expect_nothing()
                self._client.release(conn)
            else:
                conn.close()

    async def _next(self) -> bytes:
        """The next piece of body; marks the response done at its end."""
        conn = self._conn
        if conn is None:
            raise RemoteClosed("response already closed")
        if not conn.body and not conn.complete and conn.protocol_error is None and not conn.eof:
            try:
                await conn.wait(self._timeout)
            except TimeoutError:
                raise ReadTimeout(f"nothing received for {self._timeout:g}s") from None
        if conn.body:
            data = conn.take_body()
        elif conn.protocol_error is not None:
            raise conn.protocol_error
        elif conn.complete:
            data = b""
        elif conn.eof:
            why = f"connection broke: {conn.error!r}" if conn.error else "connection closed"
            raise RemoteClosed(f"{why} inside the body")
        else:
            return b""
        if conn.complete and not conn.body:
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
        # Request heads' starts by (method, path, headers): built once, not per request.
        self._heads: dict[tuple[str, str, tuple[tuple[str, str], ...]], bytes] = {}
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
        whole: bool = False,
    ) -> Response:
        """Send a request; returns once the response head arrived (the body is left to read).

        `timeout` overrides both the connect and the read timeout for this request.
        `meanwhile` is called once, right after the request is written: work that overlaps
        the server's instead of following it. `whole`: return once the whole response
        arrived instead (or `_HIGH_WATER` bytes of its body): for a caller that reads the
        whole body anyway, one wake-up instead of one for the head and one for the body.
        """
        read_timeout = self.read_timeout if timeout is None else timeout
        headers = tuple(headers)
        key = (method, path, headers)
        start = self._heads.get(key)
        if start is None:
            if self.authorization is not None:
                headers = (("authorization", self.authorization), *headers)
            start = request_head_start(
                method, self.origin.base_path + path, self.origin.host_header, headers
            )
            if len(self._heads) < _MAX_CACHED_HEADS:
                self._heads[key] = start
        data = finish_request(start, body)
        conn, reused = self._checkout(), True
        if conn is None:
            conn, reused = await self._connect(timeout), False
        try:
            try:
                head = await self._exchange(conn, data, read_timeout, meanwhile, method, whole)
            except _NothingReceived as exc:
                conn.close()
                if not reused:
                    raise RemoteClosed(str(exc)) from None
                # A pooled connection the server closed as we reused it: the server never got
                # the request, so one retry on a new connection is safe.
                log.info("server dropped a pooled connection; retrying once")
                conn = await self._connect(timeout)
                try:
                    head = await self._exchange(conn, data, read_timeout, None, method, whole)
                except _NothingReceived as again:
                    raise RemoteClosed(str(again)) from None
        except BaseException:
            conn.close()
            raise
        return Response(self, conn, head, read_timeout)

    def release(self, conn: Connection) -> None:
        """Take back a connection whose response was read completely."""
        conn.idle_since = time.monotonic()
        # Not after an error answer: a server may answer one (a 413) before reading the
        # request's body, and never read it; the next request would wait behind it.
        head = conn.head
        if (
            len(self._idle) < self.max_idle
            and not conn.eof
            and conn._reusable
            and (head is None or head.status < 400)
        ):
            self._idle.append(conn)  # `_checkout` checks the rest when it is picked
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
        method: str = "GET",
        whole: bool = False,
    ) -> Head:
        """Write the request, call `meanwhile`, wait for the final response head (`whole`:
        see `request`)."""
        conn.send(data)
        # The response parser is made once the request is on its way (no byte of the answer
        # can be read before this task yields to the event loop).
        conn.expect(method)
        if meanwhile is not None:
            meanwhile()
        while conn.head is None or conn.protocol_error is not None:
            if conn.protocol_error is not None:
                raise conn.protocol_error
            if conn.eof:
                why = f"connection broke: {conn.error!r}" if conn.error else "connection closed"
                if not conn.received:
                    raise _NothingReceived(f"{why} before the response")
                raise RemoteClosed(f"{why} inside the response head")
            try:
                await conn.wait(timeout, whole)
            except TimeoutError:
                raise ReadTimeout(f"no response for {timeout:g}s") from None
        return conn.head


def _head_size(status: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """A response head's size as parsed: its status line and header lines."""
    return len(status) + 15 + sum(len(name) + len(value) + 4 for name, value in headers)


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
