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


class SidecarHTTPProtocol(HttpToolsProtocol, asyncio.BufferedProtocol):
    """`uvicorn.run(..., http=SidecarHTTPProtocol)`: httptools with one write per whole
    response (see the module docstring), receiving into `sidecar.recvbuf`."""

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


def server_options(log_level: int = logging.INFO) -> dict[str, Any]:
    """The uvicorn settings every sidecar is served with (the CLI's and the tests')."""
    return {
        "http": SidecarHTTPProtocol,
        # Keep idle client connections longer than common load-balancer idle timeouts (60 s),
        # so a balancer never reuses a connection the sidecar is closing.
        "timeout_keep_alive": 65,
        # X-Forwarded-* would only change the client address in the access log: nothing the
        # sidecar answers depends on it, and uvicorn's middleware for it cost ~0.05 ms/request.
        "proxy_headers": False,
        # Access lines are INFO records: above that level uvicorn would still build each one.
        "access_log": log_level <= logging.INFO,
    }
