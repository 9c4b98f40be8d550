"""uvicorn's httptools protocol, sending a response's head together with its first body bytes.

uvicorn writes the status line and headers in one `transport.write` and each body part in
another, so a whole (non-streamed) response left as two TCP segments: two `send` syscalls
(each tens of microseconds on loopback, waking the client) where one does. Here the head is
held back until the next write of the same response, which then carries both; if none
follows before the event loop's next turn (a stream whose first event is still awaited, a
HEAD response), the head goes out alone then. Body parts are written at once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from sidecar import recvbuf
from sidecar.config import DEFAULT_BODY_TIMEOUT, DEFAULT_HEAD_TIMEOUT
from sidecar.front import LeanProtocol


class _HeadWithBody:
    """The transport as one request/response cycle sees it (uvicorn's cycle uses `write`,
    `close` and `is_closing`; everything else is passed through).

    uvicorn writes a response head whole, in one write starting with the status line; such a
    write is held. Holding any write until the next one or the loop's next turn keeps the
    bytes in order and sends them before the loop waits, so a body that happens to start
    like a status line is only held, never lost or reordered. It keeps no reference to the
    cycle: a reference cycle would leave both to the garbage collector.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self._flush_handle: asyncio.Handle | None = None

    def write(self, data: bytes) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            self._cancel_flush()
            self._transport.write(held + data)
        elif data.startswith(b"HTTP/1.1 "):
            self._held = data
            self._flush_handle = self._loop.call_soon(self.flush)
        else:
            self._transport.write(data)

    def flush(self) -> None:
        """Send a held head now."""
        self._cancel_flush()
        if self._held is not None:
            held, self._held = self._held, None
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def _cancel_flush(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


_TIMEOUT_408 = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)


class TimeoutsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol closing incomplete requests.

    uvicorn times out only idle kept-alive connections: a client that sends half a request
    head (or a head and half a body) holds its connection forever. Here a request's head must
    be complete within `head_timeout` seconds of its first byte, and its body within
    `body_timeout` seconds of the head's end; otherwise the client gets a 408 (when no
    response has started) and the connection is closed. A new connection that sends nothing
    is closed after uvicorn's keep-alive timeout, like an idle kept-alive one. No timer runs
    for a request that arrives whole in one read (the usual case).
    """

    head_timeout = DEFAULT_HEAD_TIMEOUT
    body_timeout = DEFAULT_BODY_TIMEOUT

    @classmethod
    def with_timeouts(cls, head: float, body: float) -> type[TimeoutsProtocol]:
        """This protocol with other timeouts (uvicorn takes a class)."""
        return type(cls.__name__, (cls,), {"head_timeout": head, "body_timeout": body})

    _stage = "idle"  # idle | head | body: which part of a request is still awaited
    _timer: asyncio.TimerHandle | None = None
    _timer_stage = ""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm("idle", float(self.timeout_keep_alive))

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._timer_stage == "idle":
            self._disarm()
        super().data_received(data)
        stage = self._stage
        if stage != "idle" and self._timer_stage != stage:
            self._arm(stage, self.head_timeout if stage == "head" else self.body_timeout)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._stage = "head"

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._stage = "body"

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._stage = "idle"
        if self._timer_stage in ("head", "body"):
            self._disarm()

    def _arm(self, stage: str, seconds: float) -> None:
        self._disarm()
        self._timer_stage = stage
        self._timer = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_stage = ""

    def _expired(self) -> None:
        stage, self._timer, self._timer_stage = self._timer_stage, None, ""
        transport = self.transport
        if transport.is_closing():
            return
        if stage != "idle" and self.flow.read_paused:
            # The server stopped reading (a pipelined request waits its turn): not the
            # client's delay. Look again later.
            self._arm(stage, self.head_timeout if stage == "head" else self.body_timeout)
            return
        if stage != "idle":
            cycle = self.cycle
            if stage == "head" or cycle is None or not cycle.response_started:
                limit = self.head_timeout if stage == "head" else self.body_timeout
                message = (
                    b'{"error":{"message":"request %s not received within %gs",'
                    b'"type":"invalid_request_error","param":null,"code":"request_timeout"}}'
                    % (stage.encode(), limit)
                )
                transport.write(_TIMEOUT_408 % (len(message), message))
        transport.close()


class SidecarHTTPProtocol(TimeoutsProtocol, asyncio.BufferedProtocol):
    """`uvicorn.run(..., http=SidecarHTTPProtocol)`: `TimeoutsProtocol` with one write per
    whole response (see the module docstring), receiving into `sidecar.recvbuf`. These two
    rely on uvicorn internals (`cycle.transport`, `data_received`); `bench_sidecar.py`
    measures them against `TimeoutsProtocol` alone, and `tests/sidecar/test_server.py`
    guards the internals and the tested uvicorn range (`UVICORN_TESTED`)."""

    def get_buffer(self, sizehint: int) -> memoryview:
        return recvbuf.view()

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(recvbuf.take(nbytes))

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        # Wrap each new cycle's transport once (an upgrade creates no cycle: `self.cycle` is
        # then the previous one, already wrapped).
        if cycle is not None and cycle.transport is self.transport:
            cycle.transport = _HeadWithBody(self.transport, self.loop)  # type: ignore[assignment]


# The uvicorn releases whose internals `SidecarHTTPProtocol` was tested against (pinned in
# pyproject.toml); outside them `server_options` falls back to `TimeoutsProtocol`.
UVICORN_TESTED = ((0, 30), (0, 55))
# The protocol served; `benchmarks/bench_sidecar.py` swaps in `TimeoutsProtocol` to measure
# `SidecarHTTPProtocol`'s own gain.
PROTOCOL: type[TimeoutsProtocol] = SidecarHTTPProtocol


def _uvicorn_tested() -> bool:
    from uvicorn import __version__

    parts = tuple(int(p) for p in __version__.split(".")[:2] if p.isdigit())
    low, high = UVICORN_TESTED
    return len(parts) == 2 and low <= parts < high


# `--http`: the HTTP/1.1 front serving each connection (docs/sidecar.md, "HTTP front").
FRONTS = ("lean", "uvicorn")
DEFAULT_FRONT = "lean"


def server_options(
    log_level: int = logging.INFO,
    head_timeout: float = DEFAULT_HEAD_TIMEOUT,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    front: str = DEFAULT_FRONT,
) -> dict[str, Any]:
    """The uvicorn settings every sidecar is served with (the CLI's and the tests'); `front`
    picks the per-connection protocol: `sidecar.front.LeanProtocol` or uvicorn's own
    (`TimeoutsProtocol`)."""
    protocol: type[TimeoutsProtocol] | type[LeanProtocol]
    if front == "lean":
        protocol = LeanProtocol
    elif front == "uvicorn":
        protocol = PROTOCOL if _uvicorn_tested() else TimeoutsProtocol
    else:
        raise ValueError(f"unknown HTTP front {front!r}: one of {', '.join(FRONTS)}")
    if (head_timeout, body_timeout) != (DEFAULT_HEAD_TIMEOUT, DEFAULT_BODY_TIMEOUT):
        protocol = protocol.with_timeouts(head_timeout, body_timeout)
    return {
        "http": protocol,
        # Keep idle client connections longer than common load-balancer idle timeouts (60 s),
        # so a balancer never reuses a connection the sidecar is closing.
        "timeout_keep_alive": 65,
        # X-Forwarded-* would only change the client address in the access log: nothing the
        # sidecar answers depends on it, and uvicorn's middleware for it cost ~0.05 ms/request.
        "proxy_headers": False,
        # No `server: uvicorn` header: it names the implementation to every client and costs
        # a header's validation and bytes on each response (the `date` header stays).
        "server_header": False,
        # Access lines are INFO records: above that level uvicorn would still build each one.
        "access_log": log_level <= logging.INFO,
    }
