"""The sidecar's HTTP/1.1 front: an asyncio protocol over httptools' request parser serving
the sidecar's ASGI app, one instance per client connection.

uvicorn runs the server around it (sockets, lifespan, signals, graceful shutdown, the `date`
header, logging): `uvicorn.run(app, http=LeanProtocol)`. This module is the per-connection
HTTP layer:

- keep-alive (HTTP/1.1 unless `connection: close`; HTTP/1.0 closes), pipelined requests
  answered in order (reading pauses while one waits), chunked request bodies,
  `Expect: 100-continue` (answered when the app first reads the body), HEAD;
- a response head goes out together with the first body bytes in one write, so a whole
  response is one `send`: a head with a Content-Length is held until the body (or the app's
  next `receive()`, or its end), a stream's head until its first event or the event loop's
  next turn, whichever comes first;
- client disconnects reach the app as `http.disconnect`; sends to a gone client are dropped;
- backpressure both ways: reading pauses past 64 KiB of unread request body, `send` waits
  while the transport's write buffer is full;
- a malformed request is a 400, a request head over `max_head_bytes` a 431, both JSON
  errors naming the problem, then close;
- an incomplete head (from its first byte) or body (from the head's end) past its timeout
  is a 408 and the connection is closed; an idle connection closes after the keep-alive
  timeout; an exception in the app is a 500 (or a close once the response started);
- graceful shutdown: idle connections close, busy ones close after their response;
- access lines in uvicorn's format (`uvicorn.access`), at info.

Which part of a request the connection awaits is a `sidecar.connstate.ReadState`, how far a
request's response is a `ResponseState`; both move only along that module's transition table.

It relies on uvicorn's documented `http=<protocol class>` hook and on what uvicorn's server
hands a protocol (`ServerState.connections`, `.tasks`, `.default_headers`,
`.total_requests`, `shutdown()`); `tests/sidecar/test_front.py` guards them.
Upgrades are not served (the sidecar has no WebSocket or h2c route): an `Upgrade` header is
ignored, as RFC 9110 lets a server do, so the request (with its body) is served as plain
HTTP/1.1 and the connection goes on; a CONNECT request is answered and the connection
closed. Chunked trailer fields are read and dropped (never request headers), and the
framing read between body bytes (trailers, chunk lines) is bounded like a head.
"""

from __future__ import annotations

import asyncio
import http
import json
import logging
import re
import urllib.parse
from collections import deque
from collections.abc import Awaitable
from typing import Any

import httptools

from sidecar import recvbuf
from sidecar.asgi import BlockCanceller, dumps, header_value, read_body, too_large
from sidecar.config import DEFAULT_BODY_TIMEOUT, DEFAULT_HEAD_TIMEOUT
from sidecar.connstate import (
    BODY,
    COMPLETE,
    DONE,
    HEAD,
    IDLE,
    PENDING,
    STARTED,
    UPGRADING,
    ConnStateError,
    ReadState,
    ResponseState,
    advance,
)
from sidecar.deadline import Deadline

MAX_HEAD_BYTES = 65536  # a request head's request line and headers together
_HIGH_WATER = 65536  # unread request body bytes before reading pauses (uvicorn's limit)
_COALESCE_LIMIT = 65536  # a held head is joined to body bytes up to this size (one copy)

_error_log = logging.getLogger("uvicorn.error")
_access_log = logging.getLogger("uvicorn.access")

_BAD_NAME = re.compile(b'[\x00-\x1f\x7f()<>@,;:\\[\\]={} \t\\\\"]')
_BAD_VALUE = re.compile(b"[\x00-\x08\x0a-\x1f\x7f]")


def _status_line(status: int) -> bytes:
    try:
        phrase = http.HTTPStatus(status).phrase.encode()
    except ValueError:
        phrase = b""
    return b"HTTP/1.1 %d %s\r\n" % (status, phrase)


_STATUS_LINES = {status: _status_line(status) for status in range(100, 600)}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
# Headers noted as they are parsed.
_FRAMING = frozenset((b"content-length", b"transfer-encoding", b"expect", b"upgrade"))
_JSON_HEAD = b"content-type: application/json\r\ncontent-length: %d\r\n"
_500 = (
    b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 21\r\nconnection: close\r\n\r\nInternal Server Error"
)


def closing_error(status: int, message: str, code: str) -> bytes:
    """A whole JSON error response (OpenAI's envelope) that closes the connection."""
    body = json.dumps(
        {"error": {"message": message, "type": "invalid_request_error", "param": None,
                   "code": code}},
        separators=(",", ":"),
    ).encode()  # fmt: skip
    return (
        _STATUS_LINES[status]
        + b"content-type: application/json\r\nconnection: close\r\ncontent-length: %d\r\n\r\n"
        % len(body)
        + body
    )


def too_large_response(what: str, limit: int) -> bytes:
    """The 431 refusing a head (or what is bounded like one) over `limit` bytes."""
    message = f"{what} {limit} bytes"
    _error_log.warning("Refused: %s.", message)
    return closing_error(431, message, "request_header_fields_too_large")


def timeout_response(stage: ReadState, limit: float) -> bytes:
    """The 408 for a request head or body not received within `limit` seconds."""
    message = f"request {stage.value} not received within {limit:g}s"
    return closing_error(408, message, "request_timeout")


# Response header names seen, checked and lowercased once (an app sends a few names).
_NAMES: dict[bytes, bytes] = {}
_MAX_NAMES = 256


def _checked_name(name: bytes) -> bytes:
    """`name` lowercased; a RuntimeError if it is not a valid header name (RFC 9110 token)."""
    if _BAD_NAME.search(name):
        raise RuntimeError("Invalid HTTP header name.")
    lowered = name.lower()
    if len(_NAMES) < _MAX_NAMES:
        _NAMES[bytes(name)] = lowered
    return lowered


class _HeadTooLarge(Exception):
    pass


class Cycle:
    """One request and its response: the ASGI `receive` and `send` of one app call, and
    an `Exchange` (`sidecar.exchange`) for a route the app serves directly."""

    __slots__ = (
        "_parts", "_scope", "body", "body_size", "chunked", "close_delimited", "conn",
        "delivered_end", "disconnected", "expect_continue", "flush_handle", "head_only",
        "headers", "held", "keep_alive", "method", "more_body", "others", "path", "remaining",
        "response", "task", "waiter", "watcher",
    )  # fmt: skip

    def __init__(
        self,
        conn: LeanProtocol,
        method: str,
        path: str,
        headers: list[tuple[bytes, bytes]],
        parts: tuple[str, bytes, bytes],
        keep_alive: bool,
        expect: bool,
    ) -> None:
        """`path` as the scope has it (after the root path); `parts`: the HTTP version, the
        raw path and the query string, for the scope."""
        self.conn = conn
        self.method = method
        self.path = path
        self.headers = headers
        self._parts = parts
        self._scope: dict[str, Any] | None = None
        self.keep_alive = keep_alive
        self.expect_continue = expect
        self.body: list[bytes] = []
        self.body_size = 0
        self.more_body = True
        self.delivered_end = False
        self.waiter: asyncio.Future[None] | None = None
        self.others: list[asyncio.Future[None]] | None = None  # more receive()s at once
        self.disconnected = False
        self.response: ResponseState = PENDING
        self.chunked = False
        self.close_delimited = False  # an HTTP/1.0 response without a length: the close ends it
        self.remaining = 0  # Content-Length bytes still to send
        self.head_only = method == "HEAD"
        self.held: bytes | None = None  # the response head, until the next write
        self.flush_handle: asyncio.Handle | None = None
        self.task: asyncio.Task[None] | None = None
        self.watcher: ConnectionWatch | None = None  # the `watch()` block running, if any

    @property
    def scope(self) -> dict[str, Any]:
        """The request's ASGI scope, made on first use: a route served as an `Exchange`
        does not need one."""
        scope = self._scope
        if scope is None:
            conn = self.conn
            version, raw_path, query = self._parts
            root = conn.root_path
            scope = self._scope = {
                "type": "http",
                "asgi": {"version": conn.asgi_version, "spec_version": "2.3"},
                "http_version": version,
                "server": conn.server,
                "client": conn.client,
                "scheme": conn.scheme,
                "root_path": root,
                "headers": self.headers,
                "state": conn.app_state.copy(),
                "method": self.method,
                "path": self.path,
                "raw_path": root.encode("ascii") + raw_path if root else raw_path,
                "query_string": query,
            }
        return scope

    def gone(self) -> None:
        """The client left (or timed out) before the response was complete."""
        self.disconnected = True
        watcher = self.watcher
        if watcher is not None:
            watcher.client_left()

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)
        if self.others is not None:
            others, self.others = self.others, None
            for other in others:
                if not other.done():
                    other.set_result(None)

    async def run(self, call: Awaitable[None]) -> None:
        """Run the app's call; answer 500 if it failed before responding (as uvicorn does)."""
        try:
            await call
        except BaseException as exc:
            _error_log.error("Exception in ASGI application\n", exc_info=exc)
            if self.response is PENDING and not self.disconnected:
                self._abort(_500)
            else:
                self._abort()
        else:
            if self.response is PENDING and not self.disconnected:
                _error_log.error("ASGI callable returned without starting response.")
                self._abort(_500)
            elif self.response is not COMPLETE and not self.disconnected:
                _error_log.error("ASGI callable returned without completing response.")
                self._abort()
        finally:
            self.flush()  # a head still held (a response the app never finished)
            self.conn.tasks.discard(self.task)
            self.task = None  # no reference cycle through the task

    def _abort(self, data: bytes = b"") -> None:
        """Write what is held (and `data`), then close the connection."""
        transport = self.conn.transport
        self.flush()
        if data and not transport.is_closing():
            transport.write(data)
        transport.close()

    # -- ASGI --------------------------------------------------------------------------

    async def receive(self) -> dict[str, Any]:
        if self.held is not None:  # the app waits for the client: its head goes out now
            self.flush()
        if self.expect_continue:
            self.expect_continue = False
            if self.more_body and not self.conn.transport.is_closing():
                self.conn.transport.write(_CONTINUE)
        while True:
            if self.disconnected or self.response is COMPLETE:
                return {"type": "http.disconnect"}
            if self.body or (not self.more_body and not self.delivered_end):
                body = self.body
                data = body[0] if len(body) == 1 else b"".join(body)
                self.body = []
                self.body_size = 0
                more = self.more_body
                self.delivered_end = not more
                return {"type": "http.request", "body": data, "more_body": more}
            conn = self.conn
            if conn.read_paused and not conn.pipeline:
                conn.resume_reading()
            waiter = conn.loop.create_future()
            if self.waiter is None or self.waiter.done():
                self.waiter = waiter
            else:  # another receive() already waits (a disconnect watcher, say)
                if self.others is None:
                    self.others = []
                self.others.append(waiter)
            await waiter

    async def send(self, message: dict[str, Any]) -> None:
        conn = self.conn
        if conn.write_paused and not self.disconnected:
            await conn.drain()
        if self.disconnected:
            return
        kind = message["type"]
        response = self.response
        if response is PENDING:
            if kind != "http.response.start":
                raise RuntimeError(f"Expected ASGI message 'http.response.start', got {kind!r}.")
            self._start(message["status"], message.get("headers", ()))
        elif response is STARTED:
            if kind != "http.response.body":
                raise RuntimeError(f"Expected ASGI message 'http.response.body', got {kind!r}.")
            self._body(message.get("body", b""), message.get("more_body", False))
        else:
            raise RuntimeError(f"Unexpected ASGI message {kind!r} after the response completed.")

    # -- Exchange (a route the app serves directly: see `LeanProtocol.direct_route`) -------

    def header(self, name: bytes) -> bytes | None:
        return header_value(self.headers, name)

    async def read_body(self, limit: int) -> bytes:
        if self.more_body or self.delivered_end or self.disconnected or self.expect_continue:
            return await read_body(self.scope, self.receive, limit)  # the general way
        body = self.body  # the whole body is here (the usual case): taken as it is
        data = body[0] if len(body) == 1 else b"".join(body)
        if len(data) > limit:
            raise too_large(limit)
        self.body = []
        self.body_size = 0
        self.delivered_end = True
        return data

    async def respond_json(
        self, status: int, payload: Any, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        body = dumps(payload)
        if self.conn.write_paused and not self.disconnected:
            await self.conn.drain()
        if self.disconnected:
            return
        if self.response is not PENDING:
            raise RuntimeError("Unexpected response after the response started.")
        # The content headers are the front's own (nothing to check); the app's are checked.
        self._start(status, headers or (), _JSON_HEAD % len(body), len(body))
        self._body(body, False)

    def watch(self, armed: bool = True) -> ConnectionWatch:
        return ConnectionWatch(self)

    # -- the response --------------------------------------------------------------------

    def _start(
        self, status: int, headers: Any, own: bytes = b"", length: int | None = None
    ) -> None:
        """Build the response head (held until the body); `own`: header lines the front
        wrote itself, with the body's `length`."""
        self.response = advance(self.response, STARTED)
        if self.expect_continue and self.more_body:
            # Answered without reading the body the client waits to send (a 413): whether
            # it sends it anyway is unknown, so the connection ends with this response.
            self.keep_alive = False
        self.expect_continue = False
        conn = self.conn
        if conn.access_log:
            self._log_access(status)
        content = [_STATUS_LINES[status], conn.default_head(), own]
        close = False
        for name, value in headers:
            lowered = _NAMES.get(name)
            if lowered is None:
                lowered = _checked_name(name)
            if _BAD_VALUE.search(value):
                raise RuntimeError("Invalid HTTP header value.")
            name = lowered
            if name == b"content-length":
                if length is None and not self.chunked:
                    length = int(value)
            elif name == b"transfer-encoding":
                if value.lower() == b"chunked" and length is None:
                    self.chunked = True
            elif name == b"connection" and b"close" in [
                token.strip().lower() for token in value.split(b",")
            ]:
                close = True
                self.keep_alive = False
            content += (name, b": ", value, b"\r\n")
        if not self.keep_alive and not close:
            content.append(b"connection: close\r\n")
        if length is not None:
            self.remaining = length
        elif not self.chunked and not self.head_only and status not in (204, 304):
            if self._parts[0] == "1.0":  # no chunked coding in HTTP/1.0 (RFC 9112 7)
                self.close_delimited = True
                self.keep_alive = False  # already so for 1.0: the close is the body's end
            else:
                self.chunked = True
                content.append(b"transfer-encoding: chunked\r\n")
        content.append(b"\r\n")
        self.held = b"".join(content)
        if length is None or self.head_only:
            # A stream's head: sent with the first event if it is ready in this turn of the
            # event loop, else alone then (a client sees the stream begin).
            self.flush_handle = conn.loop.call_soon(self.flush)
        # A head with a Content-Length waits for the body's first bytes (or the app's end,
        # or its next receive()): a whole response then leaves in one write, and no extra
        # turn of the event loop is spent on a flush that is rarely needed.

    def _log_access(self, status: int) -> None:
        """The access line, in uvicorn's format: `client - "METHOD target HTTP/v" status`."""
        client = self.conn.client
        version, _, query = self._parts
        target = urllib.parse.quote(self.path)
        if query:
            target += "?" + query.decode("latin-1")
        address = f"{client[0]}:{client[1]}" if client else ""
        _access_log.info('%s - "%s %s HTTP/%s" %d', address, self.method, target, version, status)

    def flush(self) -> None:
        """Write the held head now."""
        held = self._take_held()
        if held is not None and not self.disconnected:
            self.conn.transport.write(held)

    def _take_held(self) -> bytes | None:
        """The held head (None if none), no longer held and its flush cancelled."""
        held = self.held
        if held is not None:
            self.held = None
            if self.flush_handle is not None:
                self.flush_handle.cancel()
                self.flush_handle = None
        return held

    def _body(self, body: bytes, more: bool) -> None:
        if self.head_only:
            data = b""
        elif self.chunked:
            data = b"%x\r\n%b\r\n" % (len(body), body) if body else b""
            if not more:
                data += b"0\r\n\r\n"
        elif self.close_delimited:
            data = body
        else:
            if len(body) > self.remaining:
                raise RuntimeError("Response content longer than Content-Length")
            self.remaining -= len(body)
            data = body
        transport = self.conn.transport
        held = self._take_held()
        if held is not None:
            if len(data) <= _COALESCE_LIMIT:
                data = held + data
            else:
                transport.write(held)
        if data:
            transport.write(data)
        if not more:
            if self.remaining and not self.head_only:
                raise RuntimeError("Response content shorter than Content-Length")
            self.response = advance(self.response, COMPLETE)
            self.wake()  # a pending receive() now reports the disconnect (uvicorn's way)
            if not self.keep_alive:
                transport.close()
            self.conn.response_done()


class ConnectionWatch(BlockCanceller):
    """`Cycle.watch()`: the block is cancelled as soon as the client leaves (the connection
    tells it at once: no watcher task, no timer). As `sidecar.asgi.DisconnectWatch`: the
    block's own cleanup runs, its `CancelledError` is swallowed and `gone` is True;
    cancellations from elsewhere pass through."""

    def __init__(self, cycle: Cycle) -> None:
        self.cycle = cycle

    def arm(self) -> None:
        pass  # watching from the start costs nothing

    def __enter__(self) -> ConnectionWatch:
        self._task = asyncio.current_task()
        self.cycle.watcher = self
        if self.cycle.disconnected:
            self._cancel_block()  # gone already: the block's first wait is cancelled
        return self

    def client_left(self) -> None:
        self._cancel_block()

    def _leave(self) -> None:
        self.cycle.watcher = None


class LeanProtocol(asyncio.BufferedProtocol):
    """One client connection (see the module docstring); uvicorn's server makes one per
    accepted connection: `LeanProtocol(config, server_state, app_state)`."""

    head_timeout = DEFAULT_HEAD_TIMEOUT
    body_timeout = DEFAULT_BODY_TIMEOUT
    max_head_bytes = MAX_HEAD_BYTES

    @classmethod
    def with_timeouts(cls, head: float, body: float) -> type[LeanProtocol]:
        """This protocol with other timeouts (uvicorn takes a class)."""
        return type(cls.__name__, (cls,), {"head_timeout": head, "body_timeout": body})

    def __init__(
        self,
        config: Any,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        if not config.loaded:
            config.load()
        self.app = config.loaded_app
        # An app may serve some routes as an `Exchange` (`sidecar.app.SidecarApp`).
        self.direct_route = getattr(self.app, "direct_route", None)
        self.loop = _loop or asyncio.get_event_loop()
        self.state = server_state
        self.tasks: set[asyncio.Task[None]] = server_state.tasks
        self.app_state = app_state
        self.root_path: str = config.root_path
        self.asgi_version: str = config.asgi_version
        self.keep_alive_timeout = float(config.timeout_keep_alive)
        self.access_log = _access_log.hasHandlers()
        self.parser = _request_parser(self)
        self._view = recvbuf.view()  # this thread's receive buffer (the loop's)
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.server: tuple[str, int] | None = None
        self.client: tuple[str, int] | None = None
        self.scheme = "http"
        self.read_paused = False
        self.write_paused = False
        self._drain: asyncio.Future[None] | None = None
        self._default_headers: list[tuple[bytes, bytes]] | None = None
        self._default_head = b""
        self.cycle: Cycle | None = None  # the request being parsed (the newest)
        self.active: Cycle | None = None  # the request being answered
        self._deferred: Cycle | None = None  # the active request, started at its body's end
        self.pipeline: deque[Cycle | bytes] = deque()  # requests (or a last error) waiting
        # per request head
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.expect = False
        self._upgrade_asked = False  # the head has an `upgrade` header
        self._body_seen = False  # a feed gave body bytes
        self._framing = 0  # bytes fed since the last body bytes, while a body is awaited
        self._small_body = True  # the head read so far allows reading the body first
        self._head_bytes = 0
        self._unreported = 0  # bytes of the head httptools holds, not yet given as callbacks
        self.read = IDLE  # which part of a request is awaited (`sidecar.connstate`)
        # timers: the keep-alive one, and one for the request stage awaited (one `Deadline`
        # per connection: a request whose head and body arrive apart costs no new timer)
        self._idle = Deadline(self.loop, self._idle_expired)
        self._stage_deadline: Deadline | None = None
        self._timed: ReadState | None = None  # the stage being timed (HEAD or BODY)

    # -- asyncio protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.state.connections.add(self)
        self.transport = transport  # type: ignore[assignment]
        self.server = _address(transport.get_extra_info("sockname"))
        self.client = _address(transport.get_extra_info("peername"))
        if transport.get_extra_info("sslcontext") is not None:
            self.scheme = "https"
        self._go_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        self.state.connections.discard(self)
        self._close_timer()
        self._idle.close()
        active = self.active
        if active is not None and active.response is not COMPLETE:
            active.gone()
            self._wake_or_start(active)
        self.pipeline.clear()
        self.cycle = self.active = self._deferred = None  # no reference cycles left
        self.write_paused = False
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def eof_received(self) -> None:
        pass  # close (as uvicorn: a half-closed client is a gone client)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        # httptools copies what it keeps: the shared buffer is free again after the feed.
        self.data_received(self._view[:nbytes])

    def data_received(self, data: bytes | memoryview) -> None:
        if self.read is DONE:
            return
        self._idle.clear()
        while True:  # more than once only after upgrade requests (a loop: never recursion)
            if self.read is HEAD:
                self._unreported += len(data)
            elif self.read is BODY:
                self._body_seen = False
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserUpgrade as exc:
                rest = self._upgrade(data[exc.args[0] :])
                if rest is None:
                    return
                data = rest  # also when empty: the body's timer is set below
                continue
            except httptools.HttpParserError as exc:
                if isinstance(exc.__context__, ConnStateError):
                    raise exc.__context__ from None  # the front's bug: never a client's 400
                if isinstance(exc.__context__, _HeadTooLarge):
                    self._fail(self._too_large())
                else:
                    _error_log.warning("Invalid HTTP request received.")
                    message = f"malformed HTTP request: {exc}"
                    self._fail(closing_error(400, message, "bad_request"))
                return
            break
        read = self.read
        if read is HEAD:
            if self._head_bytes + self._unreported > self.max_head_bytes:
                self._fail(self._too_large())
                return
            if self._timed is not HEAD:
                self._arm(HEAD, self.head_timeout)
        elif read is BODY:
            # Bytes read since the last body bytes are chunk lines and trailer fields, which
            # escape the head's limit: bounded by it.
            self._framing = 0 if self._body_seen else self._framing + len(data)
            if self._framing > self.max_head_bytes:
                self._fail(self._too_large(_FRAMING_TOO_LARGE))
                return
            if self._timed is not BODY:
                self._arm(BODY, self.body_timeout)

    def default_head(self) -> bytes:
        """The server's default header lines (the `date` header), joined once per change:
        uvicorn's server replaces its list every second."""
        headers = self.state.default_headers
        if headers is not self._default_headers:
            self._default_head = b"".join(b"%b: %b\r\n" % (n, v) for n, v in headers)
            self._default_headers = headers
        return self._default_head

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    async def drain(self) -> None:
        if self._drain is None or self._drain.done():
            self._drain = self.loop.create_future()
        await self._drain

    def pause_reading(self) -> None:
        if not self.read_paused:
            self.read_paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.read_paused:
            self.read_paused = False
            self.transport.resume_reading()

    # -- httptools callbacks ---------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.url = b""
        self.headers = []
        self.expect = False
        self._upgrade_asked = False
        self._small_body = True
        self._head_bytes = self._unreported = 0
        self.read = advance(self.read, HEAD)

    def on_url(self, url: bytes) -> None:
        self.url += url
        self._head_bytes += len(url)
        self._unreported = 0

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.read is BODY:  # a chunked body's trailer field: read, not used
            return
        name = name.lower()
        if name in _FRAMING:
            if name == b"content-length":
                # Whether the body can be read whole before the app starts: declared by
                # Content-Length, at most `_HIGH_WATER` bytes (no body counts).
                self._small_body = (
                    self._small_body and value.isdigit() and int(value) <= _HIGH_WATER
                )
            elif name == b"transfer-encoding":
                self._small_body = False
            elif name == b"upgrade":
                self._upgrade_asked = True
            elif value.lower() == b"100-continue":  # expect
                self.expect = True
        self.headers.append((name, value))
        self._head_bytes += len(name) + len(value) + 4
        self._unreported = 0

    def on_headers_complete(self) -> None:
        if self._head_bytes > self.max_head_bytes:
            raise _HeadTooLarge
        parser = self.parser
        version = parser.get_http_version()
        url = self.url
        if url[:1] == b"/" and b"#" not in url:  # origin form, the usual case
            raw_path, _, query = url.partition(b"?")
        else:
            parsed = httptools.parse_url(url)
            raw_path, query = parsed.path, parsed.query or b""
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        root = self.root_path
        cycle = self.cycle = Cycle(
            self,
            parser.get_method().decode("ascii"),
            root + path if root else path,
            self.headers,
            (version, raw_path, query),
            version != "1.0" and parser.should_keep_alive(),
            self.expect,
        )
        self._framing = 0
        if self._upgrade_asked and parser.should_upgrade():
            # httptools ends this request at its head and hands the rest over as another
            # protocol's bytes: `_upgrade` serves them as its body instead.
            self.read = advance(self.read, UPGRADING)
        else:
            self.read = advance(self.read, BODY)
        if self.active is None:
            if self.expect or not self._small_body:
                self._run(cycle)
            else:
                # A small body is waited for before the app starts: a client that writes
                # the head and then the body (most do) costs no extra wake-up of the app.
                self.active = self._deferred = cycle
        else:  # pipelined: answered after the ones before it
            self.pipeline.append(cycle)
            self.pause_reading()

    def on_body(self, body: bytes) -> None:
        self._body_seen = True
        cycle = self.cycle
        if cycle is None or cycle.response is COMPLETE or cycle.disconnected:
            return
        cycle.body.append(body)
        cycle.body_size += len(body)
        if cycle.body_size > _HIGH_WATER:
            self.pause_reading()
        if cycle.waiter is not None or cycle.others is not None:  # the app waits for it
            cycle.wake()

    def on_message_complete(self) -> None:
        if self.read is UPGRADING:  # not the end: the body follows (see `_upgrade`)
            return
        self.read = advance(self.read, IDLE)
        if self._timed is not None:
            self._disarm()
        cycle = self.cycle
        if cycle is not None:
            cycle.more_body = False
            self._wake_or_start(cycle)
        if self.active is None and not self.pipeline:  # answered before its body's end
            self._go_idle()

    # -- requests ----------------------------------------------------------------------

    def _run(self, cycle: Cycle) -> None:
        self.active = cycle
        direct = self.direct_route
        handler = direct(cycle.method, cycle.path) if direct is not None else None
        if handler is None:
            call = self.app(cycle.scope, cycle.receive, cycle.send)
        else:
            call = handler(cycle)
        task = cycle.task = self.loop.create_task(cycle.run(call))
        self.tasks.add(task)

    def _wake_or_start(self, cycle: Cycle) -> None:
        """Tell the request's app of new body bytes, its end or the client's leaving; a
        request waiting for its small body to start the app starts now (a client gone
        mid-body is then seen, and counted, by the app as with a started one)."""
        if cycle is self._deferred:
            self._deferred = None
            self._run(cycle)
        else:
            cycle.wake()

    def response_done(self) -> None:
        """The active request was answered: start the next one, or wait for one."""
        self.state.total_requests += 1
        self.active = None
        if self.transport.is_closing():
            return
        if self.pipeline:
            following = self.pipeline.popleft()
            if isinstance(following, bytes):  # the error answering a malformed request
                self.transport.write(following)
                self.transport.close()
                return
            if not self.pipeline:
                self.resume_reading()
            self._run(following)
        else:
            self.resume_reading()
            if self.read is IDLE:
                self._go_idle()

    def _fail(self, response: bytes) -> None:
        """Answer a bad request (after the requests before it) and close."""
        cycle = self.cycle
        broken_body = self.read in (BODY, UPGRADING) and cycle is not None and cycle.more_body
        self.read = advance(self.read, DONE)
        self._disarm()
        self.pause_reading()
        if broken_body and cycle is not None:
            # The request's body can never end (bad chunk framing): it is the bad request.
            if cycle is self.active:
                # Its app waits (or would wait) for the body: answered now, as uvicorn
                # does, and the app sees the client gone.
                if cycle.response is PENDING:
                    self.transport.write(response)
                cycle.gone()
                self._wake_or_start(cycle)
                self.transport.close()
                return
            self.pipeline.remove(cycle)  # waiting its turn: the error answers it instead
        if self.active is None:
            self.transport.write(response)
            self.transport.close()
        else:
            self.pipeline.append(response)

    def _too_large(self, what: str = "request head (request line and headers) exceeds") -> bytes:
        return too_large_response(what, self.max_head_bytes)

    def _upgrade(self, rest: bytes | memoryview) -> bytes | None:
        """httptools took the request as an upgrade (`Connection: upgrade` with `Upgrade`,
        a WebSocket or h2c request: curl's `--http2` sends one) and stopped at its head.
        The upgrade is ignored (RFC 9110 7.8): a new parser reads the request's body, if its
        head declared one, and the requests after it. A CONNECT request's bytes after its
        head are a tunnel's: it is answered, then the connection closes. Returns the bytes
        to parse next (None: nothing more is parsed)."""
        cycle = self.cycle
        if cycle is None or cycle.method == "CONNECT":
            _error_log.warning("Unsupported upgrade request.")
            self.read = advance(self.read, DONE)
            self._disarm()
            if cycle is not None and cycle.response is not COMPLETE:
                cycle.keep_alive = False
                cycle.more_body = False
                self._wake_or_start(cycle)
            return None
        length = header_value(cycle.headers, b"content-length")
        coding = header_value(cycle.headers, b"transfer-encoding")
        chunked = coding is not None
        if coding is not None and coding.rsplit(b",", 1)[-1].strip().lower() != b"chunked":
            # A body framed by no length (as httptools refuses it without the upgrade).
            message = "malformed HTTP request: Transfer-Encoding does not end in chunked"
            self._fail(closing_error(400, message, "bad_request"))
            return None
        self.read = advance(self.read, BODY)
        if chunked or (length is not None and length.strip() not in (b"", b"0")):
            # The new parser is given the body's framing in a head of its own; that head's
            # callbacks are not this request's (`_BodyFirst`).
            framing = (
                b"transfer-encoding: chunked"
                if chunked
                else b"content-length: %b" % (length or b"")
            )
            body_first = _BodyFirst(self)
            self.parser = _request_parser(body_first)
            self.parser.feed_data(b"POST / HTTP/1.1\r\n" + framing + b"\r\n\r\n")
            body_first.ours = False
        else:
            self.parser = _request_parser(self)
            self.on_message_complete()  # no body: the request is whole
        return bytes(rest)

    def shutdown(self) -> None:
        """uvicorn's graceful shutdown: close when idle, else after the last request."""
        newest = self.pipeline[-1] if self.pipeline else self.active
        if newest is None:
            self.transport.close()
        elif isinstance(newest, Cycle):
            newest.keep_alive = False

    # -- timeouts ------------------------------------------------------------------------

    def _go_idle(self) -> None:
        """Close the connection if nothing arrives within the keep-alive timeout."""
        self._idle.set(self.keep_alive_timeout)

    def _idle_expired(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()

    def _arm(self, stage: ReadState, seconds: float) -> None:
        self._timed = stage
        deadline = self._stage_deadline
        if deadline is None:
            deadline = self._stage_deadline = Deadline(self.loop, self._expired)
        deadline.set(seconds)

    def _disarm(self) -> None:
        self._timed = None
        if self._stage_deadline is not None:
            self._stage_deadline.clear()

    def _close_timer(self) -> None:
        """The connection ended: the timer goes now (it holds the protocol)."""
        self._timed = None
        if self._stage_deadline is not None:
            self._stage_deadline.close()

    def _expired(self) -> None:
        stage, self._timed = self._timed, None
        transport = self.transport
        if stage is None or transport.is_closing():
            return
        limit = self.head_timeout if stage is HEAD else self.body_timeout
        if self.read_paused or (stage is HEAD and self.active is not None):
            # The server is not reading (a pipelined request waits its turn) or still
            # answers the previous request: not the client's delay. Look again later.
            self._arm(stage, limit)
            return
        cycle = self.cycle if stage is BODY else None
        if cycle is None or cycle.response is PENDING:
            transport.write(timeout_response(stage, limit))
        if cycle is not None and cycle.response is not COMPLETE:
            cycle.gone()
            self._wake_or_start(cycle)
        transport.close()


class _BodyFirst:
    """The callbacks of a parser that reads an upgrade request's body (see
    `LeanProtocol._upgrade`): the head it is fed first is its own, after that every callback
    is the connection's."""

    def __init__(self, conn: LeanProtocol) -> None:
        self.conn = conn
        self.ours = True  # the parser is on the head made for it

    def on_message_begin(self) -> None:
        if not self.ours:
            self.conn.on_message_begin()

    def on_url(self, url: bytes) -> None:
        if not self.ours:
            self.conn.on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.ours:
            self.conn.on_header(name, value)

    def on_headers_complete(self) -> None:
        if not self.ours:
            self.conn.on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self.conn.on_body(body)

    def on_message_complete(self) -> None:
        self.conn.on_message_complete()


def _request_parser(callbacks: object) -> httptools.HttpRequestParser:
    parser = httptools.HttpRequestParser(callbacks)
    # Serve the first of pipelined requests sent after a `connection: close` one.
    parser.set_dangerous_leniencies(lenient_data_after_close=True)
    return parser


_FRAMING_TOO_LARGE = "chunk framing and trailer fields exceed"


def _address(info: Any) -> tuple[str, int] | None:
    if isinstance(info, (tuple, list)) and len(info) >= 2:
        return str(info[0]), int(info[1])
    return None
